/* model/loader + context: hostile or unsupported files give one clear error
 * naming the file and the culprit; context overflow and bad token ids leave
 * the state unchanged; sizes (n_params, weight bytes) are what the shapes say. */
#define _POSIX_C_SOURCE 200809L /* setenv, glob */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "model_test_util.h"
#include "numerics/quant.h"

/* Writes spec, expects sd_model_load to fail with code and a message that
 * names the file and contains each of the given fragments. */
static void expect_load_error(const tiny_model_spec *sp, sd_status code, const char *frag1, const char *frag2) {
    char path[256];
    sd_err err = {0};
    tiny_model_temp_path(path, sizeof path, "bad");
    assert_int_equal(tiny_model_write(sp, path, &err), SD_OK);
    sd_model *m = (sd_model *)1;
    sd_status st = sd_model_load(path, &m, &err);
    remove(path);
    assert_null(m);
    if (st != code) fail_msg("expected %s, got %s: %s", sd_status_name(code), sd_status_name(st), err.msg);
    assert_int_equal(err.code, code);
    assert_non_null(strstr(err.msg, path));
    if (frag1 && !strstr(err.msg, frag1)) fail_msg("'%s' not in: %s", frag1, err.msg);
    if (frag2 && !strstr(err.msg, frag2)) fail_msg("'%s' not in: %s", frag2, err.msg);
    assert_null(strchr(err.msg, '\n'));
}

static void test_unknown_arch(void **state) {
    (void)state;
    tiny_model_spec sp = tiny_model_default("mamba9", GGML_TYPE_F32);
    expect_load_error(&sp, SD_ERR_UNSUPPORTED, "unknown architecture 'mamba9'", NULL);
}

static void test_missing_tensor(void **state) {
    (void)state;
    tiny_model_spec sp = tiny_model_default("llama", GGML_TYPE_Q8_0);
    sp.omit = "blk.1.ffn_up.weight";
    expect_load_error(&sp, SD_ERR_FORMAT, "missing tensor blk.1.ffn_up.weight", NULL);
    sp = tiny_model_default("qwen2", GGML_TYPE_F16);
    sp.omit = "blk.0.attn_k.bias"; /* required on qwen2 */
    expect_load_error(&sp, SD_ERR_FORMAT, "missing tensor blk.0.attn_k.bias", NULL);
    sp = tiny_model_default("qwen3", GGML_TYPE_F32);
    sp.omit = "blk.1.attn_q_norm.weight";
    expect_load_error(&sp, SD_ERR_FORMAT, "missing tensor blk.1.attn_q_norm.weight", NULL);
    sp = tiny_model_default("qwen3", GGML_TYPE_F32);
    sp.omit = "output_norm.weight";
    expect_load_error(&sp, SD_ERR_FORMAT, "missing tensor output_norm.weight", NULL);
}

static void test_wrong_shape(void **state) {
    (void)state;
    tiny_model_spec sp = tiny_model_default("qwen2", GGML_TYPE_Q4_0);
    sp.alter = "blk.0.attn_k.weight";
    sp.alter_extra_rows = 1;
    expect_load_error(&sp, SD_ERR_FORMAT, "tensor blk.0.attn_k.weight has shape", "expected [256, 128]");
    sp = tiny_model_default("qwen3", GGML_TYPE_F32);
    sp.alter = "blk.1.attn_k_norm.weight";
    sp.alter_extra_rows = 2;
    expect_load_error(&sp, SD_ERR_FORMAT, "tensor blk.1.attn_k_norm.weight has shape", NULL);
    sp = tiny_model_default("llama", GGML_TYPE_F32);
    sp.alter = "output.weight";
    sp.alter_extra_rows = 1;
    expect_load_error(&sp, SD_ERR_FORMAT, "tensor output.weight has shape", NULL);
}

static void test_unsupported_type(void **state) {
    (void)state;
    tiny_model_spec sp = tiny_model_default("llama", GGML_TYPE_F32);
    sp.alter = "blk.0.attn_q.weight";
    sp.alter_type = GGML_TYPE_F64;
    expect_load_error(&sp, SD_ERR_UNSUPPORTED, "blk.0.attn_q.weight", "f64");
    sp = tiny_model_default("qwen3", GGML_TYPE_F32);
    sp.alter = "blk.0.ffn_norm.weight";
    sp.alter_type = GGML_TYPE_I32;
    expect_load_error(&sp, SD_ERR_UNSUPPORTED, "blk.0.ffn_norm.weight", "i32");
    /* q3_k: the quant layer reads and writes it; while the matmul kernels
     * do not run it, the loader must say so by tensor and type name. */
    static uint8_t block[256];
    sd_matrix probe;
    sd_err err = {0};
    bool q3k_runs = sd_matrix_init(&probe, GGML_TYPE_Q3_K, 256, 1, block, &err) == SD_OK;
    if (q3k_runs) sd_matrix_free(&probe);
    if (sd_type_quantizable(GGML_TYPE_Q3_K) && !q3k_runs) {
        sp = tiny_model_default("qwen2", GGML_TYPE_Q3_K);
        expect_load_error(&sp, SD_ERR_UNSUPPORTED, "tensor token_embd.weight: type q3_K not supported", NULL);
    }
}

static void test_missing_file(void **state) {
    (void)state;
    sd_model *m = NULL;
    sd_err err = {0};
    assert_int_equal(sd_model_load("/nonexistent/dir/model.gguf", &m, &err), SD_ERR_IO);
    assert_null(m);
    assert_non_null(strstr(err.msg, "/nonexistent/dir/model.gguf"));
}

/* A batch that would pass n_ctx is refused as a whole and changes nothing:
 * the next forward gives exactly the logits a fresh context gives. */
static void test_context_overflow(void **state) {
    (void)state;
    tiny_model_spec sp = tiny_model_default("qwen3", GGML_TYPE_Q8_0);
    char path[256];
    sd_model *m = tiny_load(&sp, path, sizeof path, "ctx");
    assert_non_null(m);
    const int V = m->hp.n_vocab;
    int32_t tok[8];
    test_tokens(tok, 8, V, 5);
    float *a = calloc((size_t)8 * V, sizeof *a), *b = calloc((size_t)8 * V, sizeof *b);
    assert_non_null(a);
    assert_non_null(b);
    sd_context *c = NULL, *fresh = NULL;
    sd_err err = {0};
    assert_int_equal(sd_context_init(m, 8, 8, 2, &c, &err), SD_OK);
    assert_int_equal(sd_context_n_ctx(c), 8);
    assert_int_equal(sd_forward(c, tok, 5, a, &err), SD_OK);
    assert_int_equal(sd_forward(c, tok + 5, 4, b, &err), SD_ERR_CONTEXT);
    assert_int_equal(err.code, SD_ERR_CONTEXT);
    assert_int_equal(sd_context_len(c), 5);
    assert_int_equal(sd_forward(c, tok + 5, 3, a + 5 * (size_t)V, &err), SD_OK);
    assert_int_equal(sd_context_len(c), 8);
    assert_int_equal(sd_forward(c, tok, 1, b, &err), SD_ERR_CONTEXT);
    assert_int_equal(sd_context_init(m, 8, 8, 1, &fresh, &err), SD_OK);
    assert_int_equal(sd_forward(fresh, tok, 8, b, &err), SD_OK);
    assert_memory_equal(a, b, (size_t)8 * V * sizeof *a);
    sd_context_free(fresh);
    sd_context_free(c);
    free(a);
    free(b);
    sd_model_free(m);
    remove(path);
}

static void test_token_out_of_range(void **state) {
    (void)state;
    tiny_model_spec sp = tiny_model_default("llama", GGML_TYPE_F16);
    char path[256];
    sd_model *m = tiny_load(&sp, path, sizeof path, "tok");
    assert_non_null(m);
    const int V = m->hp.n_vocab;
    float *l = calloc((size_t)3 * V, sizeof *l);
    assert_non_null(l);
    sd_context *c = NULL;
    sd_err err = {0};
    assert_int_equal(sd_context_init(m, 16, 4, 1, &c, &err), SD_OK);
    int32_t ok[1] = {V - 1}, bad_hi[3] = {1, V, 2}, bad_lo[2] = {3, -1};
    assert_int_equal(sd_forward(c, ok, 1, l, &err), SD_OK);
    assert_int_equal(sd_forward(c, bad_hi, 3, l, &err), SD_ERR_ARG);
    assert_non_null(strstr(err.msg, "out of range"));
    assert_int_equal(sd_context_len(c), 1);
    assert_int_equal(sd_forward(c, bad_lo, 2, l, &err), SD_ERR_ARG);
    assert_int_equal(sd_context_len(c), 1);
    assert_int_equal(sd_forward(c, ok, 0, l, &err), SD_OK); /* empty batch: nothing happens */
    assert_int_equal(sd_context_len(c), 1);
    sd_context_free(c);
    free(l);
    sd_model_free(m);
    remove(path);
}

/* Linear RoPE scaling ({arch}.rope.scaling.factor) acts through positions
 * only: position 0 (no rotation) is bitwise unchanged, later positions move.
 * (tools/reference/torch_ref.py does not model rope scaling, so this is the
 * check we have besides the hparams one below.) */
static void test_linear_rope_scaling(void **state) {
    (void)state;
    tiny_model_spec sp = tiny_model_default("llama", GGML_TYPE_F32);
    char pa[256], pb[256];
    sd_model *a = tiny_load(&sp, pa, sizeof pa, "rope1");
    sp.rope_scale = 2.0f;
    sd_model *b = tiny_load(&sp, pb, sizeof pb, "rope2");
    assert_non_null(a);
    assert_non_null(b);
    assert_true(a->hp.rope_freq_scale == 1.0f && b->hp.rope_freq_scale == 0.5f);
    const int V = a->hp.n_vocab;
    int32_t tok[4];
    test_tokens(tok, 4, V, 8);
    float *la = malloc((size_t)4 * V * sizeof *la), *lb = malloc((size_t)4 * V * sizeof *lb);
    assert_non_null(la);
    assert_non_null(lb);
    sd_context *ca = NULL, *cb = NULL;
    sd_err err = {0};
    assert_int_equal(sd_context_init(a, 8, 4, 1, &ca, &err), SD_OK);
    assert_int_equal(sd_context_init(b, 8, 4, 1, &cb, &err), SD_OK);
    assert_int_equal(sd_forward(ca, tok, 4, la, &err), SD_OK);
    assert_int_equal(sd_forward(cb, tok, 4, lb, &err), SD_OK);
    assert_memory_equal(la, lb, (size_t)V * sizeof *la);
    for (int s = 1; s < 4; s++)
        assert_memory_not_equal(la + (size_t)s * V, lb + (size_t)s * V, (size_t)V * sizeof *la);
    sd_context_free(ca);
    sd_context_free(cb);
    free(la);
    free(lb);
    sd_model_free(a);
    sd_model_free(b);
    remove(pa);
    remove(pb);
}

/* hparams and sizes come out of the file as written. */
static void test_hparams_and_sizes(void **state) {
    (void)state;
    tiny_model_spec sp = tiny_model_default("qwen3", GGML_TYPE_Q4_K);
    sp.tied = true;
    sp.rope_scale = 4.0f;
    char path[256];
    sd_model *m = tiny_load(&sp, path, sizeof path, "hp");
    assert_non_null(m);
    const sd_hparams *hp = &m->hp;
    assert_int_equal(hp->arch, SD_ARCH_QWEN3);
    assert_string_equal(hp->arch_name, "qwen3");
    assert_int_equal(hp->n_vocab, sp.n_vocab);
    assert_int_equal(hp->n_embd, sp.n_embd);
    assert_int_equal(hp->n_head, sp.n_head);
    assert_int_equal(hp->n_head_kv, sp.n_head_kv);
    assert_int_equal(hp->head_dim, sp.head_dim);
    assert_int_equal(hp->n_ff, sp.n_ff);
    assert_true(hp->rope_neox && hp->qk_norm && !hp->qkv_bias && hp->tied_output);
    assert_true(hp->rope_freq_scale == 0.25f);
    assert_true(hp->rope_base == sp.rope_base && hp->rms_eps == sp.rms_eps);
    const uint64_t E = (uint64_t)sp.n_embd, F = (uint64_t)sp.n_ff, Q = (uint64_t)sp.n_head * sp.head_dim,
                   K = (uint64_t)sp.n_head_kv * sp.head_dim, V = (uint64_t)sp.n_vocab, D = (uint64_t)sp.head_dim;
    const uint64_t per_layer_mat = E * Q + 2 * E * K + Q * E + 3 * E * F;
    const uint64_t n_layer = (uint64_t)sp.n_layer;
    assert_true(sd_model_n_params(m) == V * E + E + n_layer * (per_layer_mat + 2 * E + 2 * D));
    /* q4_k: 144 bytes per 256 weights */
    assert_true(sd_model_weight_bytes(m) == (n_layer * per_layer_mat + V * E) / 256 * 144);
    sd_model_free(m);
    remove(path);

    sp = tiny_model_default("llama", GGML_TYPE_F32);
    m = tiny_load(&sp, path, sizeof path, "hp2");
    assert_non_null(m);
    assert_true(!m->hp.rope_neox && !m->hp.qk_norm && !m->hp.qkv_bias && !m->hp.tied_output);
    assert_true(m->hp.rope_freq_scale == 1.0f);
    assert_true(sd_model_weight_bytes(m) == 4 * (n_layer * (E * 4 * D * 2 + 2 * E * K + 3 * E * F) + V * E));
    sd_model_free(m);
    remove(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_unknown_arch),     cmocka_unit_test(test_missing_tensor),
        cmocka_unit_test(test_wrong_shape),      cmocka_unit_test(test_unsupported_type),
        cmocka_unit_test(test_missing_file),     cmocka_unit_test(test_context_overflow),
        cmocka_unit_test(test_token_out_of_range), cmocka_unit_test(test_hparams_and_sizes),
        cmocka_unit_test(test_linear_rope_scaling),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
