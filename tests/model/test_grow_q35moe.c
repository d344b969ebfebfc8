/* sd-genmodel --grow into a qwen35moe shape (tools/grow/grow_moe.c): the
 * dense-FFN hybrid fixture grown to "qwen35moe-tiny" (8 experts of 256, top-2,
 * a shared expert of 512; the fixture's 768 FFN units split 256 routed + 512
 * shared; 2 identity layers) computes the fixture's function. On the 64 tokens
 * of bench/prompts/code-py.txt's start, in f32:
 *   - the trunk logits and the MTP block's logits (pairs of the token and the
 *     trunk's hidden) are within MAX_ABS of the fixture's converted to f32, with
 *     the same argmax at every position;
 *   - the router really routes: in every MoE layer the 64 tokens ran more
 *     distinct experts than one token's k (so the match does not come from all
 *     tokens taking the same experts) but the output is the same.
 * And in q8_0: every expert of a grown ffn_up_exps holds the fixture's q8_0
 * blocks of ffn_up's first 256 rows (the construction copies one quantized
 * expert; the scales are powers of two) in its first n_embd columns, and
 * zeros in the rest. What remains of the f32 difference is
 * rounding (the renormalised weights sum to 1 within k ulp, the split dot
 * products, grow_q35.c's one inexact eps).
 * Needs build/sd-genmodel and the specdec binary (SD_BUILD_DIR, SD_SPECDEC_BIN). */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/ggml_type.h"
#include "numerics/quant.h"
#include "grow_test_util.h"
#include "model_test_util.h"
#include "support/fixture_load.h"

#define N_TOK 64
#define MAX_ABS 2e-3
#define FIXTURE "models/fixture-q35-target.gguf"

static double worst_diff(const float *a, const float *b, int rows, int V) {
    double worst = 0;
    for (int p = 0; p < rows; p++) {
        const float *x = a + (size_t)p * V, *y = b + (size_t)p * V;
        for (int v = 0; v < V; v++) worst = fmax(worst, fabs((double)x[v] - y[v]));
        assert_int_equal(test_argmax(x, V), test_argmax(y, V));
    }
    return worst;
}

static void test_f32(void **state) {
    (void)state;
    char small_path[256], grown_path[256];
    grow_to_f32(FIXTURE, "small-q35moe-f32", small_path, sizeof small_path);
    grow_file(FIXTURE, "qwen35moe-tiny", "f32", "grown-q35moe", grown_path, sizeof grown_path);
    sd_model *s = load(small_path), *g = load(grown_path);
    assert_int_equal(g->hp.n_expert, 8);
    assert_int_equal(g->hp.n_expert_used, 2);
    assert_int_equal(s->hp.n_vocab, g->hp.n_vocab);
    assert_int_equal(s->hp.n_nextn, g->hp.n_nextn);
    int32_t tokens[N_TOK], u_small, u_grown;
    grow_prompt_tokens(s, tokens, N_TOK);
    float *hs = NULL, *hg = NULL;
    float *ls = grow_trunk(s, tokens, N_TOK, &hs, &u_small), *lg = grow_trunk(g, tokens, N_TOK, &hg, &u_grown);
    const int V = s->hp.n_vocab;
    double w = worst_diff(ls, lg, N_TOK, V);
    printf("q35 target -> qwen35moe-tiny, f32: trunk max |logit diff| %.3e over %d positions x %d logits; "
           "fewest distinct experts of a layer %d (k = 2, E = 8)\n", w, N_TOK, V, u_grown);
    assert_true(w < MAX_ABS);
    assert_true(u_grown > 2 && u_grown != INT32_MAX);
    float *ms = grow_mtp_logits(s, tokens, hs, N_TOK), *mg = grow_mtp_logits(g, tokens, hg, N_TOK);
    double wm = worst_diff(ms, mg, N_TOK - 1, V);
    printf("q35 target -> qwen35moe-tiny, f32: MTP   max |logit diff| %.3e over %d positions\n", wm, N_TOK - 1);
    assert_true(wm < MAX_ABS);
    free(ls), free(lg), free(hs), free(hg), free(ms), free(mg);
    sd_model_free(s), sd_model_free(g);
    remove(small_path), remove(grown_path);
}

static void test_q8_0_blocks(void **state) {
    (void)state;
    char grown_path[256];
    grow_file(FIXTURE, "qwen35moe-tiny", "q8_0", "grown-q35moe", grown_path, sizeof grown_path);
    gguf_ctx *s = NULL, *g = NULL;
    sd_err err = {0};
    assert_int_equal(gguf_open(FIXTURE, &s, &err), SD_OK);
    assert_int_equal(gguf_open(grown_path, &g, &err), SD_OK);
    const gguf_tensor_info *a = gguf_find_tensor(s, "blk.1.ffn_up.weight"), *b = gguf_find_tensor(g, "blk.1.ffn_up_exps.weight");
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(a->type, GGML_TYPE_Q8_0); /* block for block only against q8_0 blocks */
    assert_int_equal(b->type, GGML_TYPE_Q8_0);
    assert_int_equal(b->n_dims, 3);
    const int64_t d = a->ne[0], D = b->ne[0], F = b->ne[1], E = b->ne[2];
    assert_int_equal(F, 256);
    assert_int_equal(E, 8);
    assert_true(D > d); /* the grown rows have columns [d, D) to hold zeros */
    uint64_t ra, rb;
    assert_true(ggml_row_bytes(a->type, (uint64_t)d, &ra) && ggml_row_bytes(b->type, (uint64_t)D, &rb));
    float *tail = malloc((size_t)(D - d) * sizeof *tail);
    assert_non_null(tail);
    for (int64_t e = 0; e < E; e++)
        for (int64_t r = 0; r < F; r++) {
            const uint8_t *row = (const uint8_t *)b->data + (e * F + r) * rb;
            if (memcmp((const uint8_t *)a->data + r * ra, row, ra))
                fail_msg("expert %lld row %lld: grown q8_0 blocks differ from the fixture's", (long long)e, (long long)r);
            sd_dequantize_row(GGML_TYPE_Q8_0, row + ra, tail, D - d); /* ra: whole blocks (d % 32 == 0) */
            for (int64_t c = 0; c < D - d; c++)
                if (tail[c] != 0.0f)
                    fail_msg("expert %lld row %lld column %lld: %g, not the zero of columns [d, D)", (long long)e,
                             (long long)r, (long long)(d + c), (double)tail[c]);
        }
    free(tail);
    gguf_close(s), gguf_close(g);
    remove(grown_path);
}

int main(int argc, char **argv) {
    (void)argc;
    test_passive_omp(argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_f32),
        cmocka_unit_test(test_q8_0_blocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
