/* Files with the IQ1/IQ2/IQ3 grid types and MXFP4 (docs/MODELS.md, tensor
 * types): one such tensor in an otherwise Q8_0 file loads and runs (the
 * published per-tensor mixes); an MoE file with its experts in the type runs,
 * batch-invariant; hostile copies (a truncated block, a row length that is
 * not whole blocks) give one clear error and no crash. A grid index out of
 * range cannot be written: each type's index fields are exactly as wide as
 * its grid (IQ2_XXS 8 bits for 256 entries ... IQ1_S 11 bits for 2048), and
 * every MXFP4 exponent byte is a scale (test_iq_types covers all 256). */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model_test_util.h"

static const uint32_t k_types[] = {GGML_TYPE_IQ1_S,  GGML_TYPE_IQ1_M,   GGML_TYPE_IQ2_XXS, GGML_TYPE_IQ2_XS,
                                   GGML_TYPE_IQ2_S,  GGML_TYPE_IQ3_XXS, GGML_TYPE_IQ3_S,   GGML_TYPE_MXFP4};
#define N_TYPES (sizeof k_types / sizeof k_types[0])
#define N_TOK 4

/* Logits of N_TOK tokens in one forward (batch) and one by one (single). */
static void forward_both(const sd_model *m, float *batch, float *single) {
    int32_t tokens[N_TOK];
    test_tokens(tokens, N_TOK, m->hp.n_vocab, 7);
    sd_context *c = NULL;
    sd_err err = {0};
    assert_int_equal(sd_context_init(m, 16, N_TOK, 2, &c, &err), SD_OK);
    assert_int_equal(sd_forward(c, tokens, N_TOK, batch, &err), SD_OK);
    sd_context_free(c);
    assert_int_equal(sd_context_init(m, 16, N_TOK, 1, &c, &err), SD_OK);
    for (int i = 0; i < N_TOK; i++)
        assert_int_equal(sd_forward(c, tokens + i, 1, single + (size_t)i * m->hp.n_vocab, &err), SD_OK);
    sd_context_free(c);
}

static void run_model(const tiny_model_spec *sp, const char *tag) {
    char path[256];
    sd_model *m = tiny_load(sp, path, sizeof path, tag);
    if (!m) fail_msg("%s: %s does not load", tag, ggml_type_get(sp->alter_type >= 0 ? (uint32_t)sp->alter_type : sp->type)->name);
    size_t n = (size_t)N_TOK * (size_t)m->hp.n_vocab;
    float *a = malloc(n * sizeof(float)), *b = malloc(n * sizeof(float));
    assert_true(a && b);
    forward_both(m, a, b);
    for (size_t i = 0; i < n; i++) assert_true(isfinite(a[i]));
    if (memcmp(a, b, n * sizeof(float)) != 0) fail_msg("%s: batch and single-token logits differ", tag);
    free(a);
    free(b);
    sd_model_free(m);
    remove(path);
}

/* One FFN matrix of a Q8_0 dense file in each type. */
static void test_mixed_dense(void **state) {
    (void)state;
    for (size_t i = 0; i < N_TYPES; i++) {
        tiny_model_spec sp = tiny_model_default("qwen3", GGML_TYPE_Q8_0);
        sp.alter = "blk.1.ffn_up.weight";
        sp.alter_type = (int)k_types[i];
        run_model(&sp, "iqmix");
    }
}

/* Every 2-D weight, experts included, in each type (expert rows of 256). */
static void test_moe(void **state) {
    (void)state;
    for (size_t i = 0; i < N_TYPES; i++) {
        tiny_model_spec sp = tiny_model_default("qwen3moe", k_types[i]);
        sp.n_ff_exp = 256;
        sp.n_expert = 4;
        sp.n_expert_used = 2;
        run_model(&sp, "iqmoe");
    }
}

static void *slurp(const char *path, size_t *size) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    void *p = malloc(*size);
    assert_non_null(p);
    assert_int_equal(fread(p, 1, *size, f), *size);
    fclose(f);
    return p;
}

static void spill(const char *path, const void *p, size_t size) {
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(p, 1, size, f), size);
    fclose(f);
}

static void expect_load_fails(const char *path, const char *frag, const char *what) {
    sd_model *m = (sd_model *)1;
    sd_err err = {0};
    sd_status st = sd_model_load(path, &m, &err);
    assert_null(m);
    if (st == SD_OK || !err.msg[0] || strchr(err.msg, '\n') || (frag && !strstr(err.msg, frag)))
        fail_msg("%s: got %s '%s'", what, sd_status_name(st), err.msg);
    printf("%s: %s\n", what, err.msg);
}

/* The tensor info of name in a GGUF image: the u64 ne[0] after the name and
 * its u32 n_dims (GGUF v3: u64 length, name bytes, u32 n_dims, u64 ne[]). */
static uint8_t *ne0_of(uint8_t *img, size_t size, const char *name) {
    size_t len = strlen(name);
    for (size_t i = 8; i + len + 12 <= size; i++)
        if (!memcmp(img + i, name, len) && img[i - 8] == len && !img[i - 7]) return img + i + len + 4;
    return NULL;
}

static void test_hostile(void **state) {
    (void)state;
    for (size_t i = 0; i < N_TYPES; i++) {
        tiny_model_spec sp = tiny_model_default("qwen3", k_types[i]);
        char path[256], bad[300];
        sd_err err = {0};
        tiny_model_temp_path(path, sizeof path, "iqbad");
        assert_int_equal(tiny_model_write(&sp, path, &err), SD_OK);
        snprintf(bad, sizeof bad, "%s.bad", path);
        size_t size;
        uint8_t *img = slurp(path, &size);
        /* a truncated last block (tensor data runs past the end of the file) */
        spill(bad, img, size - 7);
        expect_load_fails(bad, NULL, "truncated");
        /* a row length that is not whole blocks: token_embd ne[0] 256 -> 200 */
        uint8_t *ne0 = ne0_of(img, size, "token_embd.weight");
        assert_non_null(ne0);
        assert_int_equal(ne0[0] | ne0[1] << 8, 256);
        ne0[0] = 200;
        ne0[1] = 0;
        spill(bad, img, size);
        expect_load_fails(bad, "token_embd.weight", "row length 200");
        /* whole blocks but not the model's shape: 512 */
        ne0[0] = 0;
        ne0[1] = 2;
        spill(bad, img, size);
        expect_load_fails(bad, NULL, "row length 512");
        free(img);
        remove(bad);
        remove(path);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mixed_dense),
        cmocka_unit_test(test_moe),
        cmocka_unit_test(test_hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
