/* decode/spec on real models: LOSSLESS (speculative output == plain greedy,
 * token for token) on tiny random-weight models of every architecture and
 * weight type (tests/support/tiny_model.h), with n-gram lookup, a draft model
 * (the target's twin: α = 1; and another seed: α low) and auto, over prompt
 * lengths 1, 2, 7, 24 and a context so short that K runs past its end; and,
 * when they are present, on the committed fixtures models/fixture-target.gguf
 * and models/fixture-draft.gguf. Also: a draft with another vocabulary is
 * refused (SD_ERR_VOCAB). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode/compose.h"
#include "decode/spec.h"
#include "model/model.h"
#include "numerics/quant.h"
#include "support/tiny_model.h"

static sd_model *load_tiny(const tiny_model_spec *sp, char *path, size_t cap) {
    sd_err err = {0};
    tiny_model_temp_path(path, cap, "spec");
    if (tiny_model_write(sp, path, &err) != SD_OK) fail_msg("tiny_model_write: %s", err.msg);
    sd_model *m = NULL;
    if (sd_model_load(path, &m, &err) != SD_OK) fail_msg("sd_model_load: %s", err.msg);
    return m;
}

static bool eog(void *user, int32_t t) { return sd_tokenizer_is_eog(user, t); }

typedef enum { SPEC_NGRAM, SPEC_DRAFT, SPEC_AUTO } spec_kind;

/* Plain greedy and speculative decoding of one prompt; returns tokens compared. */
static int check_one(sd_model *target, sd_model *draft, spec_kind kind, const int32_t *prompt,
                     int32_t n_prompt, int32_t n_ctx, int32_t n_predict, int32_t K,
                     int64_t *drafted, int64_t *accepted) {
    sd_err err = {0};
    sd_context *tc = NULL, *dc = NULL;
    assert_int_equal(sd_context_init(target, n_ctx, 16, 1, &tc, &err), SD_OK);
    sd_model_lm tl, dl = {0};
    assert_int_equal(sd_compose_lm(&tl, tc, target, SD_ROLLBACK_REPLAY, K + 1, SD_LM_TARGET, &err), SD_OK);
    sd_spec_params p = sd_spec_default_params();
    p.n_predict = n_predict;
    p.draft_max = K;
    p.n_batch = 16;
    p.gate_misses = 0; /* keep drafting: every round is a verify round */
    p.is_eog = eog;
    int32_t *want = malloc((size_t)n_predict * sizeof *want), *got = malloc((size_t)n_predict * sizeof *got);
    int32_t n_want = 0, n_got = 0;
    assert_int_equal(sd_spec_generate(&tl.lm, NULL, prompt, n_prompt, &p, NULL, target->tok, want, &n_want, NULL, &err), SD_OK);
    sd_drafter dr = {0};
    if (kind != SPEC_NGRAM) {
        assert_int_equal(sd_lm_check_same_vocab(target, draft, &err), SD_OK);
        assert_int_equal(sd_context_init(draft, n_ctx, 16, 1, &dc, &err), SD_OK);
        assert_int_equal(sd_compose_lm(&dl, dc, draft, SD_ROLLBACK_REPLAY, K + 1, SD_LM_DRAFT, &err), SD_OK);
    }
    const sd_drafter_inputs in = {.target = tc, .draft_lm = dc ? &dl.lm : NULL, .n_threads = 1, .n_batch = 16,
                                  .ngram_min = 1, .ngram_max = 3};
    const sd_drafter_kind dk = kind == SPEC_NGRAM ? SD_DRAFTER_NGRAM : kind == SPEC_DRAFT ? SD_DRAFTER_MODEL : SD_DRAFTER_AUTO;
    assert_int_equal(sd_compose_drafter(&dr, dk, &in, &err), SD_OK);
    sd_context_truncate(tc, 0);
    sd_spec_stats st;
    assert_int_equal(sd_spec_generate(&tl.lm, &dr, prompt, n_prompt, &p, NULL, target->tok, got, &n_got, &st, &err), SD_OK);
    assert_int_equal(n_got, n_want);
    for (int32_t i = 0; i < n_want; i++)
        if (got[i] != want[i]) fail_msg("token %d differs: spec %d, greedy %d (prompt %d tokens, K %d)", i, got[i], want[i], n_prompt, K);
    *drafted += st.drafted;
    *accepted += st.accepted;
    sd_drafter_free(&dr);
    sd_model_lm_free(&dl);
    sd_model_lm_free(&tl);
    sd_context_free(dc);
    sd_context_free(tc);
    free(want);
    free(got);
    return n_want;
}

/* Prompts: lengths 1, 2, 7 and a repetitive 24 (n-gram hits). */
static void prompts(int32_t V, int32_t out[4][24], int32_t lens[4]) {
    static const int32_t L[4] = {1, 2, 7, 24};
    uint32_t s = 12345;
    for (int p = 0; p < 4; p++) {
        lens[p] = L[p];
        for (int i = 0; i < L[p]; i++) {
            s = s * 1664525u + 1013904223u;
            out[p][i] = p == 3 && i >= 6 ? out[p][i % 6] : (int32_t)((s >> 8) % (uint32_t)V);
        }
    }
}

typedef struct model_case {
    const char *arch;
    uint32_t type;
} model_case;

static void test_tiny_lossless(void **state) {
    const model_case *mc = *state;
    tiny_model_spec sp = tiny_model_default(mc->arch, mc->type);
    sp.seed = 3 + mc->type;
    char tpath[256], d2path[256];
    sd_model *target = load_tiny(&sp, tpath, sizeof tpath);
    sd_model *twin = target; /* the same weights as draft (own context): every draft accepted */
    sp.seed += 100;
    sd_model *other = load_tiny(&sp, d2path, sizeof d2path);
    int32_t pr[4][24], lens[4];
    prompts(target->hp.n_vocab, pr, lens);
    int compared = 0, runs = 0;
    int64_t drafted = 0, accepted = 0;
    static const int32_t KS[] = {1, 4, 8};
    /* Every prompt with every drafter; K and the context (roomy, or ending 5
     * tokens after the prompt so K runs past it) vary across the runs. */
    for (int p = 0; p < 4; p++)
        for (spec_kind kind = SPEC_NGRAM; kind <= SPEC_AUTO; kind++) {
            int r = p * 3 + (int)kind;
            int32_t n_ctx = r % 2 ? lens[p] + 5 : 64;
            sd_model *draft = p % 2 ? twin : other;
            compared += check_one(target, draft, kind, pr[p], lens[p], n_ctx, 16, KS[r % 3], &drafted, &accepted);
            runs++;
        }
    printf("%s %s: LOSSLESS %d/%d runs, %d tokens compared, α %lld/%lld\n", mc->arch,
           ggml_type_get(mc->type)->name, runs, runs, compared, (long long)accepted, (long long)drafted);
    assert_true(accepted > 0 && accepted < drafted);
    sd_model_free(target);
    sd_model_free(other);
    remove(tpath);
    remove(d2path);
}

static void test_vocab_mismatch(void **state) {
    (void)state;
    char a[256], b[256], c[256];
    tiny_model_spec sp = tiny_model_default("qwen3", GGML_TYPE_F32);
    sd_model *t = load_tiny(&sp, a, sizeof a);
    sp.n_vocab += 32;
    sd_model *bigger = load_tiny(&sp, b, sizeof b);
    tiny_model_spec sl = tiny_model_default("llama", GGML_TYPE_F32);
    sd_model *spm = load_tiny(&sl, c, sizeof c);
    sd_err err = {0};
    assert_int_equal(sd_lm_check_same_vocab(t, bigger, &err), SD_ERR_VOCAB);
    assert_non_null(strstr(err.msg, "vocabulary"));
    assert_int_equal(sd_lm_check_same_vocab(t, spm, &err), SD_ERR_VOCAB);
    assert_int_equal(sd_lm_check_same_vocab(t, t, &err), SD_OK);
    sd_model_free(t);
    sd_model_free(bigger);
    sd_model_free(spm);
    remove(a);
    remove(b);
    remove(c);
}

/* The committed fixtures: n-gram and the fixture draft, on text prompts. */
static void test_fixtures_lossless(void **state) {
    (void)state;
    const char *tp = "models/fixture-target.gguf", *dp = "models/fixture-draft.gguf";
    if (access(tp, R_OK) != 0 || access(dp, R_OK) != 0) fail_msg("%s or %s unreadable: run from the repository root", tp, dp);
    sd_model *target = NULL, *draft = NULL;
    sd_err err = {0};
    assert_int_equal(sd_model_load(tp, &target, &err), SD_OK);
    assert_int_equal(sd_model_load(dp, &draft, &err), SD_OK);
    static const char *texts[] = {
        "a",
        "int",
        "static int parse_args(int argc, char **argv) {\n    for (int i = 1; i < argc; i++) {\n",
        "The following copyright notice applies. The following copyright notice",
        "Usage: grep [OPTION]... PATTERNS [FILE]...\nSearch for PATTERNS in each FILE.\n",
    };
    int runs = 0, compared = 0;
    int64_t drafted = 0, accepted = 0;
    /* Under emulation (SD_TEST_EMULATED) the first two texts: ~95 s of qemu CPU for all five. */
    const size_t n_texts = getenv("SD_TEST_EMULATED") ? 2 : sizeof texts / sizeof *texts;
    for (size_t i = 0; i < n_texts; i++) {
        int32_t *ids = NULL;
        size_t n = 0;
        assert_int_equal(sd_tokenize(target->tok, texts[i], strlen(texts[i]), false, false, &ids, &n, &err), SD_OK);
        int32_t lens[2] = {(int32_t)n, n >= 2 ? 2 : 1};
        if (i == 0) lens[1] = 1; /* prompt of length 1 */
        for (int l = 0; l < 2; l++)
            for (int c = 0; c < 2; c++) {
                int32_t n_ctx = c ? lens[l] + 6 : 256;
                for (spec_kind k = SPEC_NGRAM; k <= SPEC_AUTO; k++) {
                    compared += check_one(target, draft, k, ids, lens[l], n_ctx, 48, 8, &drafted, &accepted);
                    runs++;
                }
            }
        free(ids);
    }
    printf("fixtures: LOSSLESS %d/%d runs, %d tokens compared, α %lld/%lld\n", runs, runs, compared,
           (long long)accepted, (long long)drafted);
    sd_model_free(target);
    sd_model_free(draft);
}

#define CASES(arch)                                                                          \
    {arch, GGML_TYPE_F32}, {arch, GGML_TYPE_F16}, {arch, GGML_TYPE_BF16}, {arch, GGML_TYPE_Q8_0}, \
        {arch, GGML_TYPE_Q4_0}, {arch, GGML_TYPE_Q4_1}, {arch, GGML_TYPE_Q5_0},                   \
        {arch, GGML_TYPE_Q5_1}, {arch, GGML_TYPE_Q4_K}, {arch, GGML_TYPE_Q5_K}, {arch, GGML_TYPE_Q6_K}

static model_case cases[] = {CASES("llama"), CASES("qwen2"), CASES("qwen3")};

/* Under ASan (SD_ASAN=1) or an emulator (SD_TEST_EMULATED=1,
 * scripts/test_aarch64.sh) the decode loop is the same code for every type:
 * one case per architecture (llama f32, qwen2 q8_0, qwen3 q4_K) keeps the
 * suite within minutes. */
static bool asan_subset(const model_case *c) {
    return (!strcmp(c->arch, "llama") && c->type == GGML_TYPE_F32) ||
           (!strcmp(c->arch, "qwen2") && c->type == GGML_TYPE_Q8_0) ||
           (!strcmp(c->arch, "qwen3") && c->type == GGML_TYPE_Q4_K);
}

int main(void) {
    enum { N = sizeof cases / sizeof cases[0] };
    struct CMUnitTest tests[N + 2];
    static char names[N][48];
    int n = 0;
    for (int i = 0; i < N; i++) {
        if ((getenv("SD_ASAN") || getenv("SD_TEST_EMULATED")) && !asan_subset(&cases[i])) continue;
        snprintf(names[i], sizeof names[i], "lossless_%s_%s", cases[i].arch, ggml_type_get(cases[i].type)->name);
        tests[n++] = (struct CMUnitTest){names[i], test_tiny_lossless, NULL, NULL, &cases[i]};
    }
    tests[n++] = (struct CMUnitTest){"vocab_mismatch", test_vocab_mismatch, NULL, NULL, NULL};
    tests[n++] = (struct CMUnitTest){"fixtures_lossless", test_fixtures_lossless, NULL, NULL, NULL};
    return _cmocka_run_group_tests("test_spec_models", tests, (size_t)n, NULL, NULL);
}
