/* LOSSLESS with a quantized KV cache (specdec_context_params.cache_type_k /
 * _v): for K/V q8_0/q8_0 and q4_0/q4_0 (and the mixed q8_0/q4_0 on the dense
 * fixture), on the dense, qwen35 hybrid, qwen3moe and qwen35moe fixtures,
 * every drafter that fits the fixture (n-gram, draft model, auto, suffix, the
 * EAGLE-3 head, MTP under every hybrid rollback discipline, token trees on
 * the dense target) generates exactly the tokens of plain decoding in a
 * separate context with the same cache types, greedy and at temperature 0.7
 * with a seed. Drafts must be accepted somewhere per fixture, so verify
 * windows longer than one token ran over the quantized rows. A state saved
 * from a q8_0 context does not restore into an f16 one (nothing changed),
 * and specdec_state_match reports 0 for it. Prompts: three bench prompts
 * (one under the sanitizers or an emulator). */
#define _POSIX_C_SOURCE 200809L
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

enum { N_PREDICT = 24, N_PROMPTS = 3 };

static const char *const PROMPTS[N_PROMPTS] = {"bench/prompts/code-py.txt", "bench/prompts/repeat-list.txt",
                                               "bench/prompts/free-story.txt"};

static specdec_context *kv_context(const specdec_model *m, const specdec_model *draft, specdec_cache_type k,
                                   specdec_cache_type v) {
    specdec_context_params cp = specdec_context_default_params();
    cp.n_threads = 2;
    cp.n_ctx = 512;
    cp.draft = draft;
    cp.cache_type_k = k;
    cp.cache_type_v = v;
    specdec_context *c = NULL;
    specdec_error err = {0};
    if (specdec_context_init(m, &cp, &c, &err) != SPECDEC_OK) fail_msg("context: %s", err.message);
    return c;
}

static specdec_generate_params params(specdec_spec_mode spec, bool sampled, int seed) {
    specdec_generate_params gp = specdec_generate_default_params();
    gp.n_predict = N_PREDICT;
    gp.spec = spec;
    gp.draft_max = 4;
    gp.fixed_k = true;
    gp.gate = 0;
    gp.stop_at_eog = false;
    if (sampled) gp.temperature = 0.7f, gp.top_k = 40, gp.top_p = 0.95f, gp.seed = 7 + (uint64_t)seed;
    return gp;
}

/* A drafter on a fixture: which draft the context holds (0 none, 1 the
 * fixture's draft model, 2 the EAGLE-3 head), the mode, rollback, tree. */
typedef struct setup {
    specdec_spec_mode spec;
    int draft;
    specdec_rollback rb;
    int32_t tree_nodes;
} setup;

typedef struct fixture {
    const char *label, *target, *draft;
    bool head; /* the EAGLE-3 head fits it */
    setup setups[10];
    int n_setups;
} fixture;

#define S(spec, d, rb, tree) {SPECDEC_SPEC_##spec, d, SPECDEC_ROLLBACK_##rb, tree}
static const fixture FIXTURES[] = {
    {"dense", "models/fixture-target.gguf", "models/fixture-draft.gguf", true,
     {S(NGRAM, 0, AUTO, 0), S(DRAFT, 1, AUTO, 0), S(AUTO, 1, AUTO, 0), S(SUFFIX, 0, AUTO, 0), S(EAGLE3, 2, AUTO, 0),
      S(DRAFT, 1, AUTO, 6), S(EAGLE3, 2, AUTO, 6)},
     7},
    {"qwen35", "models/fixture-q35-target.gguf", "models/fixture-q35-draft.gguf", true,
     {S(NGRAM, 0, AUTO, 0), S(DRAFT, 1, AUTO, 0), S(AUTO, 0, AUTO, 0), S(MTP, 0, REPLAY, 0), S(MTP, 0, CHECKPOINT, 0),
      S(MTP, 0, REDECODE, 0), S(MTP, 0, WINDOW, 0), S(EAGLE3, 2, REPLAY, 0), S(EAGLE3, 2, WINDOW, 0)},
     9},
    {"qwen3moe", "models/fixture-moe-target.gguf", "models/fixture-draft.gguf", false,
     {S(NGRAM, 0, AUTO, 0), S(DRAFT, 1, AUTO, 0), S(AUTO, 1, AUTO, 0), S(SUFFIX, 0, AUTO, 0)},
     4},
    {"qwen35moe", "models/fixture-q35moe-target.gguf", "models/fixture-q35-draft.gguf", false,
     {S(NGRAM, 0, AUTO, 0), S(DRAFT, 1, AUTO, 0), S(MTP, 0, REPLAY, 0), S(MTP, 0, CHECKPOINT, 0),
      S(MTP, 0, WINDOW, 0)},
     5},
};
#undef S

static void check_fixture(const fixture *fx, specdec_cache_type tk, specdec_cache_type tv, char **prompts, int n_p) {
    specdec_model *tm = api_load(fx->target), *dm = api_load(fx->draft);
    specdec_model *head = fx->head ? api_load("models/fixture-eagle3.gguf") : NULL;
    specdec_context *plain = kv_context(tm, NULL, tk, tv);
    specdec_context *ctx[3] = {plain, kv_context(tm, dm, tk, tv), head ? kv_context(tm, head, tk, tv) : NULL};
    specdec_token want[2][N_PROMPTS][N_PREDICT];
    for (int i = 0; i < n_p; i++)
        for (int s = 0; s < 2; s++) {
            specdec_generate_params gp = params(SPECDEC_SPEC_NONE, s, i);
            specdec_stats st;
            assert_int_equal(api_generate_after(plain, tm, prompts[i], &gp, want[s][i], N_PREDICT, &st), N_PREDICT);
        }
    long long accepted = 0;
    int runs = 0;
    for (int k = 0; k < fx->n_setups; k++) {
        const setup *u = &fx->setups[k];
        for (int i = 0; i < n_p; i++)
            for (int s = 0; s < 2; s++) {
                /* slow (one prompt): greedy or sampled per drafter, alternating */
                if (n_p == 1 && s != k % 2) continue;
                specdec_generate_params gp = params(u->spec, s, i);
                gp.hybrid_rollback = u->rb;
                gp.tree_nodes = u->tree_nodes;
                specdec_token got[N_PREDICT];
                specdec_stats st;
                const int32_t n = api_generate_after(ctx[u->draft], tm, prompts[i], &gp, got, N_PREDICT, &st);
                int32_t j = 0;
                while (j < n && got[j] == want[s][i][j]) j++;
                if (n != N_PREDICT || j != n)
                    fail_msg("%s K %s V %s, %s rollback %s tree %d, prompt %d %s: token %d differs from plain decoding",
                             fx->label, specdec_cache_type_name(tk), specdec_cache_type_name(tv), st.drafter,
                             specdec_rollback_name(u->rb), u->tree_nodes, i, s ? "temp 0.7" : "greedy", j);
                accepted += st.n_accepted;
                runs++;
            }
    }
    printf("%-10s K %-5s V %-5s LOSSLESS %d/%d runs, %lld drafts accepted\n", fx->label, specdec_cache_type_name(tk),
           specdec_cache_type_name(tv), runs, runs, accepted);
    assert_true(accepted > 0);
    for (int d = 0; d < 3; d++) specdec_context_free(ctx[d]);
    specdec_model_free(head);
    specdec_model_free(dm);
    specdec_model_free(tm);
}

static int load_prompts(char **p) {
    const int n = api_test_slow() ? 1 : N_PROMPTS;
    for (int i = 0; i < n; i++) p[i] = api_bench_prompt(PROMPTS[i], NULL, 0);
    return n;
}

static void run_types(specdec_cache_type tk, specdec_cache_type tv, int n_fixtures) {
    char *p[N_PROMPTS];
    const int n_p = load_prompts(p);
    for (int f = 0; f < n_fixtures; f++) check_fixture(&FIXTURES[f], tk, tv, p, n_p);
    for (int i = 0; i < n_p; i++) free(p[i]);
}

static void test_q8_0(void **state) {
    (void)state;
    run_types(SPECDEC_CACHE_Q8_0, SPECDEC_CACHE_Q8_0, 4);
}

static void test_q4_0(void **state) {
    (void)state;
    /* under the sanitizers: the dense fixture only (q8_0 above covers every fixture; the q4_0 row code is one) */
    run_types(SPECDEC_CACHE_Q4_0, SPECDEC_CACHE_Q4_0, getenv("SD_ASAN") ? 1 : 4);
}

static void test_mixed_dense(void **state) {
    (void)state;
    run_types(SPECDEC_CACHE_Q8_0, SPECDEC_CACHE_Q4_0, 1);
}

/* A state keeps its cache types: restoring a q8_0 state into an f16
 * context is refused with nothing changed, and match says 0. */
static void test_state_types(void **state) {
    (void)state;
    specdec_model *m = api_load("models/fixture-target.gguf");
    specdec_context *q = kv_context(m, NULL, SPECDEC_CACHE_Q8_0, SPECDEC_CACHE_Q8_0);
    specdec_context *f = kv_context(m, NULL, SPECDEC_CACHE_F16, SPECDEC_CACHE_F16);
    specdec_generate_params gp = params(SPECDEC_SPEC_NONE, false, 0);
    gp.n_predict = 4;
    specdec_token out[4];
    specdec_stats st;
    assert_int_equal(api_generate_after(q, m, "The quick brown fox", &gp, out, 4, &st), 4);
    assert_int_equal(api_generate_after(f, m, "A lazy dog", &gp, out, 4, &st), 4);
    specdec_state *s = NULL;
    specdec_error err = {0};
    assert_int_equal(specdec_state_save(q, &s, &err), SPECDEC_OK);
    size_t n_tok = 0, n_before = 0;
    const specdec_token *toks = specdec_state_tokens(s, &n_tok);
    assert_true(n_tok > 2);
    specdec_context_tokens(f, &n_before);
    assert_int_equal(specdec_state_match(f, s, toks, n_tok), 0);
    assert_int_equal(specdec_state_match(q, s, toks, n_tok), n_tok - 1);
    assert_int_equal(specdec_state_restore(f, s, n_tok, &err), SPECDEC_ERR_ARG);
    assert_non_null(strstr(err.message, "cache types"));
    size_t n_after = 0;
    specdec_context_tokens(f, &n_after);
    assert_int_equal(n_after, n_before); /* nothing changed */
    assert_int_equal(specdec_state_restore(q, s, n_tok, &err), SPECDEC_OK);
    specdec_state_free(s);
    specdec_context_free(q);
    specdec_context_free(f);
    specdec_model_free(m);
}

/* Cache types out of the enum and head sizes that are not whole blocks are refused at init. */
static void test_refused(void **state) {
    (void)state;
    specdec_model *m = api_load("models/fixture-target.gguf");
    specdec_context_params cp = specdec_context_default_params();
    cp.cache_type_v = (specdec_cache_type)99;
    specdec_context *c = NULL;
    specdec_error err = {0};
    assert_int_equal(specdec_context_init(m, &cp, &c, &err), SPECDEC_ERR_ARG);
    assert_null(c);
    assert_non_null(strstr(err.message, "cache_type_v"));
    assert_null(strchr(err.message, '\n'));
    specdec_cache_type t = SPECDEC_CACHE_F32;
    assert_false(specdec_cache_type_parse("q8_1", &t));
    assert_false(specdec_cache_type_parse("Q8_0", &t));
    assert_false(specdec_cache_type_parse(NULL, &t));
    assert_int_equal(t, SPECDEC_CACHE_F32);
    for (int i = 0; i <= SPECDEC_CACHE_Q5_1; i++) { /* names round-trip */
        assert_true(specdec_cache_type_parse(specdec_cache_type_name((specdec_cache_type)i), &t));
        assert_int_equal(t, i);
    }
    assert_null(specdec_cache_type_name((specdec_cache_type)99));
    specdec_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused),     cmocka_unit_test(test_state_types), cmocka_unit_test(test_q8_0),
        cmocka_unit_test(test_q4_0),        cmocka_unit_test(test_mixed_dense),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
