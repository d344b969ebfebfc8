/* model/forward: the logits of a position are bitwise the same however the
 * positions are batched (S single-token steps, one S-token forward, mixed
 * splits, internal n_batch splits), whatever the thread count, and after a
 * KV-cache rollback (truncate; a state snapshot for a recurrent model) and
 * re-forward (ARCHITECTURE.md §5). For every
 * architecture x every supported weight type, and the committed fixtures.
 * SD_TEST_EMULATED=1 (scripts/test_aarch64.sh, under qemu-user): Q8_0 and
 * Q4_K per architecture, and the fixtures (emulation is ~50x slower). */
#define _POSIX_C_SOURCE 200809L /* setenv, glob */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <glob.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_test_util.h"
#include "numerics/quant.h"

#define N_TOK 9

typedef struct invariance_case {
    const char *arch;
    uint32_t type;
    bool tied;
} invariance_case;

/* Runs tokens through a fresh context in the given splits (sizes summing to
 * N_TOK) with n_threads and n_batch; writes all logits. */
static void run_split(const sd_model *m, const int32_t *tokens, const int *splits, int n_splits,
                      int n_threads, int n_batch, float *logits) {
    sd_context *c = NULL;
    sd_err err = {0};
    assert_int_equal(sd_context_init(m, 32, n_batch, n_threads, &c, &err), SD_OK);
    int done = 0;
    for (int i = 0; i < n_splits; i++) {
        assert_int_equal(sd_forward(c, tokens + done, splits[i], logits + (size_t)done * m->hp.n_vocab, &err), SD_OK);
        done += splits[i];
        assert_int_equal(sd_context_len(c), done);
    }
    assert_int_equal(done, N_TOK);
    sd_context_free(c);
}

static void assert_rows_equal(const float *a, const float *b, int rows, int n_vocab, const char *what) {
    for (int r = 0; r < rows; r++)
        if (memcmp(a + (size_t)r * n_vocab, b + (size_t)r * n_vocab, (size_t)n_vocab * sizeof(float)) != 0)
            fail_msg("%s: logits of position %d differ bitwise", what, r);
}

/* The logits must be real numbers that depend on the position, so that
 * bitwise equality above is not equality of garbage or of constants. */
static void assert_logits_meaningful(const float *l, int rows, int n_vocab) {
    for (size_t i = 0; i < (size_t)rows * n_vocab; i++) assert_true(isfinite(l[i]));
    assert_true(memcmp(l, l + n_vocab, (size_t)n_vocab * sizeof(float)) != 0);
    float lo = l[0], hi = l[0];
    for (int i = 0; i < n_vocab; i++) lo = fminf(lo, l[i]), hi = fmaxf(hi, l[i]);
    assert_true(hi - lo > 0.1f);
}

/* sd_forward_head + sd_forward_more: the verify's two-pass output head gives
 * sd_forward's rows bitwise, after a prefix already in the cache; the second
 * pass is refused when nothing is pending (after it ran, after a truncate,
 * after another forward). */
static void check_two_pass_head(const sd_model *m, const int32_t *tokens, const float *ref, float *got) {
    const int V = m->hp.n_vocab, pre = 2, S = N_TOK - pre;
    sd_context *c = NULL;
    sd_err err = {0};
    for (int n_head = 0; n_head <= S; n_head++) {
        assert_int_equal(sd_context_init(m, 32, 16, 2, &c, &err), SD_OK);
        assert_int_equal(sd_forward_tail(c, tokens, pre, 0, NULL, &err), SD_OK);
        memset(got, 0, (size_t)S * V * sizeof *got);
        assert_int_equal(sd_forward_head(c, tokens + pre, S, n_head, got, &err), SD_OK);
        assert_rows_equal(ref + (size_t)pre * V, got, n_head, V, "sd_forward_head rows");
        if (n_head < S) {
            assert_int_equal(sd_forward_more(c, got + (size_t)n_head * V, &err), SD_OK);
            assert_rows_equal(ref + (size_t)(pre + n_head) * V, got + (size_t)n_head * V, S - n_head, V,
                              "sd_forward_more rows");
        }
        assert_int_equal(sd_forward_more(c, got, &err), SD_ERR_ARG); /* nothing left */
        assert_int_equal(sd_context_len(c), N_TOK);
        sd_context_free(c);
    }
    assert_int_equal(sd_context_init(m, 32, 4, 2, &c, &err), SD_OK);
    assert_int_equal(sd_forward_head(c, tokens, 5, 1, got, &err), SD_ERR_ARG); /* S > n_batch */
    assert_int_equal(sd_forward_head(c, tokens, 3, 4, got, &err), SD_ERR_ARG); /* n_head > S */
    assert_int_equal(sd_context_len(c), 0);
    assert_int_equal(sd_forward_head(c, tokens, 3, 1, got, &err), SD_OK);
    /* a recurrent model (qwen35) only truncates to 0 (model.h) */
    assert_int_equal(sd_context_truncate(c, sd_model_is_recurrent(m) ? 0 : 2), SD_OK);
    assert_int_equal(sd_forward_more(c, got, &err), SD_ERR_ARG); /* rolled back */
    assert_int_equal(sd_forward_head(c, tokens + 2, 1, 0, got, &err), SD_OK);
    assert_int_equal(sd_forward(c, tokens + 3, 1, got, &err), SD_OK);
    assert_int_equal(sd_forward_more(c, got, &err), SD_ERR_ARG); /* another forward came between */
    sd_context_free(c);
}

/* All the batchings above, on model m, against single steps on one thread. */
static void check_invariance(const sd_model *m, uint32_t seed) {
    const int V = m->hp.n_vocab;
    int32_t tokens[N_TOK];
    test_tokens(tokens, N_TOK, V, seed);
    size_t n = (size_t)N_TOK * V;
    float *ref = malloc(n * sizeof *ref), *got = malloc(n * sizeof *got);
    assert_non_null(ref);
    assert_non_null(got);

    /* Reference: one token at a time, one thread. */
    const int singles[N_TOK] = {1, 1, 1, 1, 1, 1, 1, 1, 1};
    run_split(m, tokens, singles, N_TOK, 1, 16, ref);
    assert_logits_meaningful(ref, N_TOK, V);

    const int whole[1] = {N_TOK}, mixed[3] = {3, 5, 1}, mixed2[4] = {1, 2, 4, 2};
    run_split(m, tokens, whole, 1, 1, 16, got);
    assert_rows_equal(ref, got, N_TOK, V, "one 9-token forward, 1 thread");
    run_split(m, tokens, whole, 1, 2, 16, got);
    assert_rows_equal(ref, got, N_TOK, V, "one 9-token forward, 2 threads");
    run_split(m, tokens, mixed, 3, 3, 16, got);
    assert_rows_equal(ref, got, N_TOK, V, "splits 3+5+1, 3 threads");
    run_split(m, tokens, mixed2, 4, 2, 4, got);
    assert_rows_equal(ref, got, N_TOK, V, "splits 1+2+4+2, n_batch 4, 2 threads");
    run_split(m, tokens, whole, 1, 2, 2, got);
    assert_rows_equal(ref, got, N_TOK, V, "one forward split internally by n_batch 2");

    /* Rollback: run 9 tokens, drop the last 5, overwrite those KV rows with
     * other tokens (as a rejected draft would), drop them again, then
     * re-forward the real ones. */
    sd_context *c = NULL;
    sd_err err = {0};
    assert_int_equal(sd_context_init(m, 32, 16, 2, &c, &err), SD_OK);
    /* A model with recurrent layers (qwen35) refuses to drop positions; it
     * rolls back to a snapshot taken at 4 instead (model.h). */
    const bool rec = sd_model_is_recurrent(m);
    size_t snap_n = sd_context_state_bytes(c);
    void *snap = malloc(snap_n);
    assert_non_null(snap);
    if (rec) {
        assert_int_equal(sd_forward(c, tokens, 4, got, &err), SD_OK);
        assert_int_equal(sd_context_state_save(c, snap, snap_n, &err), SD_OK);
        assert_int_equal(sd_forward(c, tokens + 4, N_TOK - 4, got, &err), SD_OK);
        assert_int_equal(sd_context_truncate(c, 4), SD_ERR_UNSUPPORTED);
        assert_int_equal(sd_context_state_restore(c, snap, snap_n, &err), SD_OK);
    } else {
        assert_int_equal(sd_forward(c, tokens, N_TOK, got, &err), SD_OK);
        assert_int_equal(sd_context_truncate(c, 4), SD_OK);
    }
    assert_int_equal(sd_context_len(c), 4);
    int32_t junk[5];
    test_tokens(junk, 5, V, 999);
    assert_int_equal(sd_forward(c, junk, 5, got, &err), SD_OK);
    if (rec) assert_int_equal(sd_context_state_restore(c, snap, snap_n, &err), SD_OK);
    else assert_int_equal(sd_context_truncate(c, 4), SD_OK);
    free(snap);
    memset(got, 0, n * sizeof *got);
    assert_int_equal(sd_forward(c, tokens + 4, N_TOK - 4, got + 4 * (size_t)V, &err), SD_OK);
    assert_rows_equal(ref + 4 * (size_t)V, got + 4 * (size_t)V, N_TOK - 4, V, "truncate to 4 then re-forward");
    assert_int_equal(sd_context_len(c), N_TOK);
    sd_context_free(c);

    /* sd_forward_tail: only the last rows' logits, the same bits, also when
     * n_batch splits the tail; n_tail = 0 still fills the KV cache. */
    const int tails[3][2] = {{16, 1}, {2, 3}, {4, 0}}; /* {n_batch, n_tail} */
    for (int t = 0; t < 3; t++) {
        int nb = tails[t][0], nt = tails[t][1];
        assert_int_equal(sd_context_init(m, 32, nb, 2, &c, &err), SD_OK);
        memset(got, 0, n * sizeof *got);
        assert_int_equal(sd_forward_tail(c, tokens, N_TOK, nt, got, &err), SD_OK);
        assert_rows_equal(ref + (size_t)(N_TOK - nt) * V, got, nt, V, "sd_forward_tail rows");
        assert_int_equal(sd_context_len(c), N_TOK);
        assert_int_equal(sd_forward_tail(c, tokens, 1, 2, got, &err), SD_ERR_ARG); /* n_tail > S */
        if (!rec) { /* (a recurrent model cannot drop the last position) */
            assert_int_equal(sd_context_truncate(c, N_TOK - 1), SD_OK);
            assert_int_equal(sd_forward(c, tokens + N_TOK - 1, 1, got, &err), SD_OK); /* the cache is intact */
            assert_rows_equal(ref + (size_t)(N_TOK - 1) * V, got, 1, V, "step after sd_forward_tail");
        }
        sd_context_free(c);
    }
    check_two_pass_head(m, tokens, ref, got);
    free(ref);
    free(got);
}

static void test_invariance(void **state) {
    const invariance_case *tc = *state;
    tiny_model_spec sp = tiny_model_default(tc->arch, tc->type);
    sp.tied = tc->tied;
    sp.seed = 11 + tc->type;
    sp.n_ff = 256; /* smaller than the default: 45 models are quantized per run */
    sp.n_vocab = 300;
    char path[256];
    sd_model *m = tiny_load(&sp, path, sizeof path, ggml_type_get(tc->type)->name);
    assert_non_null(m);
    check_invariance(m, tc->type + 3);
    sd_model_free(m);
    remove(path);
}

/* The committed fixture models (real trained weights, real tokenizer). */
static void test_fixtures(void **state) {
    (void)state;
    glob_t g;
    if (glob("models/fixture-*.gguf", 0, NULL, &g) != 0) fail_msg("no models/fixture-*.gguf: run from the repository root");
    for (size_t i = 0; i < g.gl_pathc; i++) {
        sd_model *m = NULL;
        sd_err err = {0};
        if (sd_model_load(g.gl_pathv[i], &m, &err) != SD_OK) fail_msg("%s", err.msg);
        if (m->hp.arch == SD_ARCH_EAGLE3 || m->hp.arch == SD_ARCH_DFLASH) { /* drafts: test_spec_eagle3.c, test_spec_dflash.c */
            sd_model_free(m);
            continue;
        }
        printf("batch invariance on %s\n", g.gl_pathv[i]);
        check_invariance(m, 42 + (uint32_t)i);
        sd_model_free(m);
    }
    globfree(&g);
}

#define CASES(arch)                                                                                   \
    {arch, GGML_TYPE_F32, false}, {arch, GGML_TYPE_F16, true}, {arch, GGML_TYPE_BF16, false},        \
        {arch, GGML_TYPE_Q8_0, true}, {arch, GGML_TYPE_Q4_0, false}, {arch, GGML_TYPE_Q4_1, false},  \
        {arch, GGML_TYPE_Q5_0, false}, {arch, GGML_TYPE_Q5_1, true}, {arch, GGML_TYPE_Q4_K, false},  \
        {arch, GGML_TYPE_Q5_K, false}, {arch, GGML_TYPE_Q6_K, true}, {arch, GGML_TYPE_Q2_K, false},  \
        {arch, GGML_TYPE_Q3_K, true}, {arch, GGML_TYPE_IQ4_NL, false}, {arch, GGML_TYPE_IQ4_XS, true}

/* The read-only types (random blocks, tests/support/tiny_model.c), on one arch. */
#define CASES_IQ(arch)                                                                                \
    {arch, GGML_TYPE_IQ1_S, false}, {arch, GGML_TYPE_IQ1_M, true}, {arch, GGML_TYPE_IQ2_XXS, false},  \
        {arch, GGML_TYPE_IQ2_XS, true}, {arch, GGML_TYPE_IQ2_S, false}, {arch, GGML_TYPE_IQ3_XXS, true}, \
        {arch, GGML_TYPE_IQ3_S, false}, {arch, GGML_TYPE_MXFP4, true}

static invariance_case cases[] = {CASES("llama"), CASES("qwen2"), CASES("qwen3"), CASES_IQ("qwen3")};

int main(int argc, char **argv) {
    (void)argc;
    test_passive_omp(argv);
    enum { N = sizeof cases / sizeof cases[0] };
    struct CMUnitTest tests[N + 1];
    static char names[N][48];
    const bool emulated = getenv("SD_TEST_EMULATED") != NULL;
    int n = 0;
    for (int i = 0; i < N; i++) {
        if (emulated && cases[i].type != GGML_TYPE_Q8_0 && cases[i].type != GGML_TYPE_Q4_K) continue;
        snprintf(names[i], sizeof names[i], "%s_%s%s", cases[i].arch, ggml_type_get(cases[i].type)->name,
                 cases[i].tied ? "_tied" : "");
        tests[n++] = (struct CMUnitTest){names[i], test_invariance, NULL, NULL, &cases[i]};
    }
    tests[n++] = (struct CMUnitTest){"fixtures", test_fixtures, NULL, NULL, NULL};
    return _cmocka_run_group_tests("test_batch_invariance", tests, (size_t)n, NULL, NULL);
}
