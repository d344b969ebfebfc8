/* The trained mixture-of-experts fixtures through the public API
 * (include/specdec.h): models/fixture-moe-target.gguf (qwen3moe, 16 experts,
 * 4 per token) and models/fixture-q35moe-target.gguf (qwen35moe: the hybrid
 * with routed + shared experts and an MTP block); models/README.md.
 *  - qwen35moe: LOSSLESS for n-gram, the hybrid draft fixture, auto and the
 *    MTP block under every rollback discipline, greedy and sampled, on every
 *    other bench prompt (one per class);
 * On the qwen3moe fixture:
 *  - LOSSLESS: on every bench prompt (bench/prompts/ *.txt), n-gram, the
 *    dense draft fixture (models/fixture-draft.gguf, same tokenizer) and
 *    auto (n-gram + draft) give plain greedy decoding's tokens exactly, and
 *    at temperature 0.7 with a fixed seed plain sampling's; drafts are
 *    accepted (verify windows of several tokens, so rows of one window share
 *    experts and do not), and the API's own check_lossless agrees;
 *  - coherent greedy text: on a Python prompt the continuation is printable,
 *    indented Python-shaped text (keywords, a newline followed by
 *    indentation), not one token repeated.
 * (Its logits against the float64 reference: test_reference_logits, which
 * converts every models/fixture-*.gguf.) Under the sanitizers (SD_ASAN): every
 * third prompt, greedy only. */
#define _POSIX_C_SOURCE 200809L /* glob */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_test_util.h"
#include "specdec.h"

#define TARGET "models/fixture-moe-target.gguf"
#define DRAFT "models/fixture-draft.gguf"
#define Q35_TARGET "models/fixture-q35moe-target.gguf"
#define Q35_DRAFT "models/fixture-q35-draft.gguf"
enum { N_PREDICT = 32, MAX_PROMPTS = 16 };

/* Every stride-th bench prompt's text (its "class:" line dropped), malloc'd;
 * under the sanitizers every 3·stride-th. */
static int read_prompts(char **texts, int stride) {
    glob_t g;
    assert_int_equal(glob("bench/prompts/*.txt", 0, NULL, &g), 0);
    int n = 0;
    for (size_t i = 0; i < g.gl_pathc && n < MAX_PROMPTS; i += (size_t)stride * (getenv("SD_ASAN") ? 3 : 1)) {
        texts[n++] = api_bench_prompt(g.gl_pathv[i], NULL, 0);
    }
    globfree(&g);
    return n;
}

/* Generates after text; the new tokens into out[N_PREDICT], their count returned. */
static int32_t run(specdec_context *c, const specdec_model *m, const char *text, const specdec_generate_params *gp,
                   specdec_token *out, specdec_stats *st) {
    return api_generate_after(c, m, text, gp, out, N_PREDICT, st);
}

static specdec_generate_params params(specdec_spec_mode spec, bool sampled, int seed) {
    specdec_generate_params gp = specdec_generate_default_params();
    gp.n_predict = N_PREDICT;
    gp.spec = spec;
    gp.draft_max = 6;
    gp.fixed_k = true;
    gp.gate = 0; /* every round drafts: windows of 7 rows */
    gp.stop_at_eog = false;
    gp.check_lossless = !sampled; /* the API's own check (greedy); sampled runs are compared below */
    if (sampled) gp.temperature = 0.7f, gp.top_k = 40, gp.top_p = 0.95f, gp.seed = 5 + (uint64_t)seed;
    return gp;
}

/* One drafter setup on a fixture: a spec mode and (hybrid targets) a rollback discipline. */
typedef struct setup {
    const char *name;
    specdec_spec_mode mode;
    specdec_rollback rb;
    bool must_accept; /* accepted > 0 over all prompts */
} setup;

/* Every setup on every prompt, greedy and sampled, against plain decoding in
 * its own context; every setup must have drafted, and accepted somewhere. */
static void lossless_on(const char *target, const char *arch, const char *draft, const setup *su, int n_su,
                        int stride) {
    static char *P[MAX_PROMPTS];
    const int n_p = read_prompts(P, stride);
    assert_true(n_p >= 2);
    specdec_model *tm = api_load(target), *dm = api_load(draft);
    assert_string_equal(specdec_model_arch(tm), arch);
    specdec_context *plain = api_context(tm, NULL, 0), *spec = api_context(tm, dm, 0);
    int64_t acc[8] = {0}, drafted[8] = {0};
    int runs = 0;
    /* under the sanitizers greedy only: the sampled half is the same code at other tokens */
    for (int sampled = 0; sampled < (getenv("SD_ASAN") ? 1 : 2); sampled++) {
        for (int i = 0; i < n_p; i++) {
            specdec_token want[N_PREDICT], got[N_PREDICT];
            specdec_stats st;
            specdec_generate_params gp = params(SPECDEC_SPEC_NONE, sampled, i);
            gp.check_lossless = false;
            const int32_t n_want = run(plain, tm, P[i], &gp, want, &st);
            assert_int_equal(n_want, N_PREDICT);
            for (int d = 0; d < n_su; d++) {
                gp = params(su[d].mode, sampled, i);
                gp.hybrid_rollback = su[d].rb;
                const int32_t n = run(spec, tm, P[i], &gp, got, &st);
                int32_t j = 0;
                while (j < n && got[j] == want[j]) j++;
                if (n != n_want || j != n)
                    fail_msg("%s %s %s prompt %d: token %d differs from plain decoding (%d vs %d)", target, su[d].name,
                             sampled ? "sampled" : "greedy", i, j, j < n ? got[j] : -1, j < n_want ? want[j] : -1);
                if (!sampled) {
                    assert_true(st.lossless_checked);
                    assert_true(st.lossless);
                }
                acc[d] += st.n_accepted, drafted[d] += st.n_drafted;
                runs++;
            }
        }
    }
    for (int d = 0; d < n_su; d++) {
        printf("%s %-16s α %lld/%lld\n", arch, su[d].name, (long long)acc[d], (long long)drafted[d]);
        assert_true(drafted[d] > 0);
        if (su[d].must_accept) assert_true(acc[d] > 0);
    }
    printf("%s: LOSSLESS %d/%d runs (%d prompts)\n", arch, runs, runs, n_p);
    for (int i = 0; i < n_p; i++) free(P[i]);
    specdec_context_free(spec);
    specdec_context_free(plain);
    specdec_model_free(dm);
    specdec_model_free(tm);
}

static void test_lossless(void **state) {
    (void)state;
    static const setup su[] = {{"ngram", SPECDEC_SPEC_NGRAM, SPECDEC_ROLLBACK_AUTO, true},
                               {"draft", SPECDEC_SPEC_DRAFT, SPECDEC_ROLLBACK_AUTO, true},
                               {"auto", SPECDEC_SPEC_AUTO, SPECDEC_ROLLBACK_AUTO, true}};
    lossless_on(TARGET, "qwen3moe", DRAFT, su, 3, 1);
}

/* The qwen35moe fixture (hybrid + experts + MTP block): n-gram, its hybrid
 * draft model, auto (n-gram + MTP), and the MTP block under every rollback
 * discipline. */
static void test_lossless_q35moe(void **state) {
    (void)state;
    static const setup su[] = {{"ngram", SPECDEC_SPEC_NGRAM, SPECDEC_ROLLBACK_AUTO, true},
                               {"draft", SPECDEC_SPEC_DRAFT, SPECDEC_ROLLBACK_AUTO, false},
                               {"auto", SPECDEC_SPEC_AUTO, SPECDEC_ROLLBACK_AUTO, true},
                               {"mtp replay", SPECDEC_SPEC_MTP, SPECDEC_ROLLBACK_REPLAY, true},
                               {"mtp checkpoint", SPECDEC_SPEC_MTP, SPECDEC_ROLLBACK_CHECKPOINT, true},
                               {"mtp redecode", SPECDEC_SPEC_MTP, SPECDEC_ROLLBACK_REDECODE, true},
                               {"mtp window", SPECDEC_SPEC_MTP, SPECDEC_ROLLBACK_WINDOW, true}};
    lossless_on(Q35_TARGET, "qwen35moe", Q35_DRAFT, su, 7, 2); /* every other prompt: one per class */
}

static bool contains(const char *s, const char *w) { return strstr(s, w) != NULL; }

static void test_coherent_greedy(void **state) {
    (void)state;
    specdec_model *tm = api_load(TARGET);
    specdec_context *c = api_context(tm, NULL, 0);
    const char *prompt = "import os\nimport sys\n\n\ndef main():\n";
    specdec_token out[N_PREDICT];
    specdec_stats st;
    specdec_generate_params gp = params(SPECDEC_SPEC_NONE, false, 0);
    gp.check_lossless = false;
    const int32_t n = run(c, tm, prompt, &gp, out, &st);
    assert_int_equal(n, N_PREDICT);
    char *text = NULL;
    size_t len = 0;
    specdec_error err = {0};
    if (specdec_detokenize(tm, out, (size_t)n, false, &text, &len, &err) != SPECDEC_OK) fail_msg("%s", err.message);
    printf("greedy: %s\n", text);
    for (size_t i = 0; i < len; i++) /* printable ASCII, newlines, tabs */
        if (!((text[i] >= 32 && text[i] < 127) || text[i] == '\n' || text[i] == '\t'))
            fail_msg("byte %zu of the greedy text is 0x%02x", i, (unsigned char)text[i]);
    assert_true(contains(text, "\n    ")); /* an indented line */
    const char *kw[] = {"return", "if ", "self", "for ", "import", "def ", "None", "print"};
    int hits = 0;
    for (size_t i = 0; i < sizeof kw / sizeof kw[0]; i++) hits += contains(text, kw[i]);
    assert_true(hits >= 2);
    int most = 0; /* no token makes up half the output */
    for (int i = 0; i < n; i++) {
        int same = 0;
        for (int j = 0; j < n; j++) same += out[j] == out[i];
        if (same > most) most = same;
    }
    assert_true(most < n / 2);
    specdec_free(text);
    specdec_context_free(c);
    specdec_model_free(tm);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lossless),
        cmocka_unit_test(test_lossless_q35moe),
        cmocka_unit_test(test_coherent_greedy),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
