/* sd-genmodel --grow (tools/grow/grow.c): a grown model computes the small
 * model's function. On the 64 tokens of bench/prompts/code-py.txt's start,
 * every logit of the grown model is within 1e-3 of the small model's (it is
 * exact in real arithmetic; what remains is f32 rounding of sums over wider
 * rows) and the argmax is the same at every position:
 *   - the target fixture grown to the "tiny" shape in f32 vs the fixture
 *     converted to f32 (the same dequantized weights);
 *   - the same in q8_0 vs the committed q8_0 fixture; there the grown file
 *     also holds the fixture's q8_0 blocks bit for bit (re-quantizing a
 *     dequantized q8_0 block that stays aligned gives it back);
 *   - the draft fixture (untied head, GQA group 3, Q/K rows scaled by a c
 *     that is not a power of two) grown to "tiny" in f32.
 * Needs build/sd-genmodel and the specdec binary (SD_BUILD_DIR, SD_SPECDEC_BIN
 * from ctest). */
#define _POSIX_C_SOURCE 200809L /* setenv */
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
#include "grow_test_util.h"
#include "model_test_util.h"
#include "support/fixture_load.h"

#define N_TOK 64
#define MAX_ABS 1e-3

/* [N_TOK][n_vocab] logits of the prompt's first N_TOK tokens. */
static float *logits_of(const sd_model *m, const int32_t *tokens) {
    float *out = malloc((size_t)N_TOK * m->hp.n_vocab * sizeof *out);
    assert_non_null(out);
    sd_context *c = NULL;
    sd_err err = {0};
    assert_int_equal(sd_context_init(m, N_TOK, N_TOK, 2, &c, &err), SD_OK);
    assert_int_equal(sd_forward(c, tokens, N_TOK, out, &err), SD_OK);
    sd_context_free(c);
    return out;
}

/* Loads both files, compares the logits of the prompt. */
static void compare(const char *small_path, const char *grown_path, const char *label) {
    sd_model *s = load(small_path), *g = load(grown_path);
    assert_int_equal(s->hp.n_vocab, g->hp.n_vocab);
    assert_true(g->hp.n_embd > s->hp.n_embd && g->hp.n_layer > s->hp.n_layer);
    int32_t tokens[N_TOK];
    grow_prompt_tokens(s, tokens, N_TOK);
    float *ls = logits_of(s, tokens), *lg = logits_of(g, tokens);
    int V = s->hp.n_vocab;
    double worst = 0;
    for (int p = 0; p < N_TOK; p++) {
        const float *a = ls + (size_t)p * V, *b = lg + (size_t)p * V;
        for (int v = 0; v < V; v++) worst = fmax(worst, fabs((double)a[v] - b[v]));
        assert_int_equal(test_argmax(a, V), test_argmax(b, V));
    }
    printf("%-34s max |logit diff| %.3e over %d positions x %d logits\n", label, worst, N_TOK, V);
    assert_true(worst < MAX_ABS);
    free(ls), free(lg);
    sd_model_free(s), sd_model_free(g);
}

static void test_target_f32(void **state) {
    (void)state;
    char small[256], grown[256];
    grow_to_f32("models/fixture-target.gguf", "small-f32", small, sizeof small);
    grow_file("models/fixture-target.gguf", "tiny", "f32", "grown", grown, sizeof grown);
    compare(small, grown, "target -> tiny, f32");
    remove(small), remove(grown);
}

static void test_draft_f32(void **state) {
    (void)state;
    char small[256], grown[256];
    grow_to_f32("models/fixture-draft.gguf", "small-f32", small, sizeof small);
    grow_file("models/fixture-draft.gguf", "tiny", "f32", "grown", grown, sizeof grown);
    compare(small, grown, "draft -> tiny, f32");
    remove(small), remove(grown);
}

/* Grown row r of a q8_0 matrix starts with small row r's blocks. */
static void check_same_blocks(const gguf_ctx *s, const gguf_ctx *g, const char *name) {
    const gguf_tensor_info *a = gguf_find_tensor(s, name), *b = gguf_find_tensor(g, name);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(a->type, GGML_TYPE_Q8_0);
    assert_int_equal(b->type, GGML_TYPE_Q8_0);
    uint64_t ra, rb;
    assert_true(ggml_row_bytes(a->type, (uint64_t)a->ne[0], &ra) && ggml_row_bytes(b->type, (uint64_t)b->ne[0], &rb));
    for (int64_t r = 0; r < a->ne[1]; r++)
        if (memcmp((const uint8_t *)a->data + r * ra, (const uint8_t *)b->data + r * rb, ra))
            fail_msg("%s row %lld: grown q8_0 blocks differ from the small file's", name, (long long)r);
}

/* The draft at 4x width and head_dim: every scale is a power of 4 or 1, so
 * the norms round alike and the q8_0 blocks are the same. */
static void test_draft_q8_0(void **state) {
    (void)state;
    char grown[256];
    grow_file("models/fixture-draft.gguf", "tiny", "q8_0", "grown", grown, sizeof grown);
    gguf_ctx *s = NULL, *g = NULL;
    sd_err err = {0};
    assert_int_equal(gguf_open("models/fixture-draft.gguf", &s, &err), SD_OK);
    assert_int_equal(gguf_open(grown, &g, &err), SD_OK);
    /* rows and columns in place: embedding, FFN, untied head */
    check_same_blocks(s, g, "token_embd.weight");
    check_same_blocks(s, g, "blk.0.ffn_gate.weight");
    check_same_blocks(s, g, "blk.1.ffn_down.weight");
    check_same_blocks(s, g, "output.weight");
    gguf_close(s), gguf_close(g);
    compare("models/fixture-draft.gguf", grown, "draft -> tiny, q8_0 vs q8_0");
    remove(grown);
}

int main(int argc, char **argv) {
    (void)argc;
    test_passive_omp(argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_target_f32),
        cmocka_unit_test(test_draft_f32),
        cmocka_unit_test(test_draft_q8_0),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
