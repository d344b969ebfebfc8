/* Suffix drafting through the public API (specdec_suffix_cache,
 * SPECDEC_SPEC_SUFFIX, auto with a memory): LOSSLESS on the dense and the
 * qwen35 hybrid fixtures — a sequence of agentic-style requests (repeats,
 * retries, small edits) sharing one memory, each answer token for token the
 * plain decoding of the same request in a fresh context, greedy and at
 * temperature 0.8 with a seed; the memory pays on a retry (more accepted
 * than without it); its token budget and byte bound hold over many
 * requests; bad arguments get a clear error. Under the sanitizers (SD_ASAN,
 * where a forward is slow) 16 tokens a request, the first 4 requests (the
 * retry is the 4th), memory on only, the hybrid greedy only, no trees. The
 * tree runs share the suffix runs' memory (it then holds each output twice). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_test_util.h"
#include "specdec.h"

enum { N_PREDICT = 32, N_REQ = 7 };

/* A retry of request 0 comes back at 3, an edit of 1 at 4, a repeat of 2 at 5. */
static const char *const REQUESTS[N_REQ] = {
    "def add(a, b):\n    return a + b\n\ndef sub(a, b):",
    "The quick brown fox jumps over the lazy dog. The quick brown",
    "call tool read_file path=src/main.c\ncall tool read_file path=",
    "def add(a, b):\n    return a + b\n\ndef sub(a, b):",
    "The quick brown fox jumped over the lazy dog. The quick brown",
    "call tool read_file path=src/main.c\ncall tool read_file path=",
    "int main(void) {\n    int x = 0;\n",
};

static int n_requests(void) { return getenv("SD_ASAN") ? 4 : N_REQ; }
static int n_predict(void) { return getenv("SD_ASAN") ? 16 : N_PREDICT; }

/* The generated tokens of one call into out[N_PREDICT]; the context starts empty. */
static int32_t run(specdec_context *c, const specdec_model *m, const char *text, const specdec_generate_params *gp,
                   specdec_token *out, specdec_stats *st) {
    return api_generate_after(c, m, text, gp, out, N_PREDICT, st);
}

static specdec_generate_params params(specdec_spec_mode spec, bool sampled, specdec_suffix_cache *mem) {
    specdec_generate_params gp = specdec_generate_default_params();
    gp.n_predict = n_predict();
    gp.spec = spec;
    gp.stop_at_eog = false;
    gp.suffix_cache = mem;
    gp.fixed_k = true; /* and the gate off: drafting that does not depend on timings */
    gp.gate = 0;
    if (sampled) gp.temperature = 0.8f, gp.seed = 7;
    return gp;
}

static specdec_suffix_cache *memory(int64_t tokens) {
    specdec_suffix_cache *m = NULL;
    specdec_error err = {0};
    if (specdec_suffix_cache_init(tokens, &m, &err) != SPECDEC_OK) fail_msg("suffix memory: %s", err.message);
    return m;
}

/* Every request of the sequence, suffix and auto each with its own memory,
 * against plain decoding; returns the accepted tokens of the retry (request
 * 3) under suffix drafting. */
static int64_t check_sequence(const char *path, bool sampled, bool with_memory, const char *auto_name) {
    specdec_model *tm = api_load(path);
    specdec_context *plain = api_context(tm, NULL, 256), *spec = api_context(tm, NULL, 256);
    specdec_suffix_cache *mem[2] = {with_memory ? memory(4096) : NULL, with_memory ? memory(4096) : NULL};
    /* suffix, auto, and on a dense target suffix drafting token trees (its candidates, verified in one forward) */
    const specdec_spec_mode modes[3] = {SPECDEC_SPEC_SUFFIX, SPECDEC_SPEC_AUTO, SPECDEC_SPEC_SUFFIX};
    const int n_modes = strstr(path, "q35") || getenv("SD_ASAN") ? 2 : 3;
    int64_t retry_accepted = 0, accepted = 0;
    for (int r = 0; r < n_requests(); r++) {
        specdec_token want[N_PREDICT], got[N_PREDICT];
        specdec_stats st;
        specdec_generate_params gp = params(SPECDEC_SPEC_NONE, sampled, NULL);
        const int32_t n_want = run(plain, tm, REQUESTS[r], &gp, want, &st);
        assert_int_equal(n_want, n_predict());
        for (int k = 0; k < n_modes; k++) {
            gp = params(modes[k], sampled, mem[k % 2]);
            if (k == 2) gp.tree_nodes = 8;
            const int32_t n = run(spec, tm, REQUESTS[r], &gp, got, &st);
            assert_string_equal(st.drafter, k == 1 ? auto_name : "suffix");
            int32_t j = 0;
            while (j < n && j < n_want && got[j] == want[j]) j++;
            if (n != n_want || j != n)
                fail_msg("%s, %s, request %d, %s: token %d differs from plain decoding", path, st.drafter, r,
                         sampled ? "temp 0.8" : "greedy", j);
            if (k == 0) accepted += st.n_accepted;
            if (k == 0 && r == 3) retry_accepted = st.n_accepted;
        }
    }
    printf("%s %s memory %s: LOSSLESS %d requests x {suffix, %s%s}, suffix accepted %lld (retry %lld)\n", path,
           sampled ? "temp 0.8" : "greedy", with_memory ? "on" : "off", n_requests(), auto_name,
           n_modes == 3 ? ", suffix trees" : "", (long long)accepted,
           (long long)retry_accepted);
    for (int k = 0; k < 2; k++) {
        specdec_suffix_cache_info info;
        specdec_suffix_cache_get_info(mem[k], &info);
        if (with_memory) assert_int_equal(info.n_added, n_requests() * (k == 0 && n_modes == 3 ? 2 : 1));
        specdec_suffix_cache_free(mem[k]);
    }
    specdec_context_free(spec);
    specdec_context_free(plain);
    specdec_model_free(tm);
    return retry_accepted;
}

static void test_lossless_dense(void **state) {
    (void)state;
    for (int s = 0; s < 2; s++) {
        int64_t with = check_sequence("models/fixture-target.gguf", s, true, "auto (suffix + ngram)");
        if (getenv("SD_ASAN")) continue;
        int64_t without = check_sequence("models/fixture-target.gguf", s, false, "auto (ngram)");
        assert_true(with > without); /* the retry drafts from the first answer */
    }
}

static void test_lossless_hybrid(void **state) {
    (void)state;
    for (int s = 0; s < (getenv("SD_ASAN") ? 1 : 2); s++) {
        int64_t with = check_sequence("models/fixture-q35-target.gguf", s, true, "auto (suffix + ngram + mtp)");
        if (getenv("SD_ASAN")) continue;
        int64_t without = check_sequence("models/fixture-q35-target.gguf", s, false, "auto (ngram + mtp)");
        assert_true(with > without);
    }
}

/* Many requests through a memory of 3 outputs and a bit: never more tokens
 * than that, never more bytes than the bound, and the oldest outputs went. */
static void test_memory_bound(void **state) {
    (void)state;
    specdec_model *tm = api_load("models/fixture-target.gguf");
    specdec_context *c = api_context(tm, NULL, 256);
    const int64_t budget = 3 * n_predict() + 4;
    specdec_suffix_cache *mem = memory(budget);
    specdec_suffix_cache_info info;
    const int n = getenv("SD_ASAN") ? 8 : 3 * N_REQ;
    for (int r = 0; r < n; r++) {
        specdec_token got[N_PREDICT];
        specdec_stats st;
        specdec_generate_params gp = params(SPECDEC_SPEC_SUFFIX, r % 2, mem);
        gp.seed = (uint64_t)r;
        run(c, tm, REQUESTS[r % N_REQ], &gp, got, &st);
        specdec_suffix_cache_get_info(mem, &info);
        assert_true(info.n_tokens <= budget);
        assert_true(info.bytes <= info.bytes_max);
    }
    assert_int_equal(info.n_added, n);
    assert_int_equal(info.n_outputs, 3); /* n_predict tokens each */
    assert_int_equal(info.n_evicted, n - 3);
    assert_int_equal(info.max_tokens, budget);
    specdec_suffix_cache_free(mem);
    specdec_context_free(c);
    specdec_model_free(tm);
}

static void test_arguments(void **state) {
    (void)state;
    specdec_suffix_cache *m = (specdec_suffix_cache *)1;
    specdec_error err = {0};
    assert_int_equal(specdec_suffix_cache_init(0, &m, &err), SPECDEC_ERR_ARG);
    assert_null(m);
    assert_non_null(strstr(err.message, "tokens"));
    assert_int_equal(specdec_suffix_cache_init(INT64_MAX, &m, &err), SPECDEC_ERR_ARG);
    m = memory(10);
    assert_int_equal(specdec_suffix_cache_add(m, NULL, 3, &err), SPECDEC_ERR_ARG);
    const specdec_token t[] = {1, 2, 3};
    assert_int_equal(specdec_suffix_cache_add(m, t, 3, &err), SPECDEC_OK);
    specdec_suffix_cache_info info;
    specdec_suffix_cache_get_info(m, &info);
    assert_int_equal(info.n_tokens, 3);
    specdec_suffix_cache_free(m);
    specdec_suffix_cache_free(NULL);
    specdec_suffix_cache_get_info(NULL, &info);
    assert_int_equal(info.n_tokens, 0);
    specdec_spec_mode mode;
    assert_true(specdec_spec_mode_parse("suffix", &mode) && mode == SPECDEC_SPEC_SUFFIX);
    assert_string_equal(specdec_spec_mode_name(SPECDEC_SPEC_SUFFIX), "suffix");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_arguments),
        cmocka_unit_test(test_memory_bound),
        cmocka_unit_test(test_lossless_dense),
        cmocka_unit_test(test_lossless_hybrid),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
