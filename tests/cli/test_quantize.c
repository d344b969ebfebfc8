/* `specdec quantize` end to end: builds a small llama-shaped GGUF (the
 * llama-spm vocabulary plus random tensors of awkward shapes and input types),
 * runs the binary for every TYPE, and reads the result back: same tensor
 * names and shapes, the types the documented rules give (llama.cpp's mixes, K-quant
 * fallbacks, 1-D tensors F32), general.file_type, metadata intact, and values
 * equal to the library's own quantize -> dequantize of the originals (so the
 * command converts exactly as numerics/quant does) and close to them. A file
 * whose conversion fails midway must leave no output behind. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "format/gguf.h"
#include "numerics/quant.h"

#define VOCAB "tests/data/tokenizer/ggml-vocab-llama-spm.gguf"
#define N_LAYER 8

static char tmpdir[64];
static char in_path[128];

/* ---- the input model ---- */

typedef struct tensor_spec {
    char name[48];
    uint32_t type; /* as stored in the input */
    uint32_t n_dims;
    int64_t ne[2];
} tensor_spec;

static tensor_spec specs[64];
static int n_specs;

static void add_spec(const char *name, uint32_t type, int64_t ne0, int64_t ne1) {
    tensor_spec *s = &specs[n_specs++];
    snprintf(s->name, sizeof s->name, "%s", name);
    s->type = type;
    s->n_dims = ne1 ? 2 : 1;
    s->ne[0] = ne0;
    s->ne[1] = ne1 ? ne1 : 1;
}

static void build_specs(void) {
    n_specs = 0;
    add_spec("token_embd.weight", GGML_TYPE_F32, 256, 24);
    add_spec("output_norm.weight", GGML_TYPE_F32, 256, 0);
    add_spec("output.weight", GGML_TYPE_F32, 256, 24);
    for (int i = 0; i < N_LAYER; i++) {
        char name[48];
        snprintf(name, sizeof name, "blk.%d.attn_norm.weight", i);
        add_spec(name, GGML_TYPE_F32, 256, 0);
        snprintf(name, sizeof name, "blk.%d.attn_q.weight", i);
        add_spec(name, i == 1 ? GGML_TYPE_F16 : GGML_TYPE_F32, 256, 8);
        snprintf(name, sizeof name, "blk.%d.attn_v.weight", i);
        add_spec(name, GGML_TYPE_F32, 256, 4);
        snprintf(name, sizeof name, "blk.%d.ffn_down.weight", i);
        add_spec(name, i == 2 ? GGML_TYPE_Q8_0 : GGML_TYPE_F32, 512, 4);
    }
    add_spec("blk.0.attn_q.bias", GGML_TYPE_F16, 64, 0);   /* 1-D F16 -> F32 */
    add_spec("blk.0.odd.weight", GGML_TYPE_F32, 96, 3);    /* 96: K-quant fallback */
    add_spec("blk.0.odder.weight", GGML_TYPE_F32, 40, 2);  /* 40: f16 fallback */
}

static uint64_t rng_state;
static float rng_gauss(void) {
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    float u = ((float)(rng_state >> 40) + 0.5f) * 0x1p-24f;
    rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
    float v = (float)(rng_state >> 40) * 0x1p-24f;
    return sqrtf(-2.f * logf(u)) * cosf(6.2831853f * v);
}

static int64_t n_elems(const tensor_spec *s) {
    return s->ne[0] * s->ne[1];
}

/* The float values tensor i holds in the input (after its own storage type). */
static float *original_values(int i) {
    const tensor_spec *s = &specs[i];
    float *x = malloc((size_t)n_elems(s) * sizeof(float));
    assert_non_null(x);
    rng_state = 1000 + (uint64_t)i;
    for (int64_t j = 0; j < n_elems(s); j++)
        x[j] = rng_gauss() * 0.05f;
    return x;
}

/* Encodes tensor i in its input type; returns the buffer and its size. */
static void *encode_input(int i, uint64_t *nbytes) {
    const tensor_spec *s = &specs[i];
    float *x = original_values(i);
    uint64_t row;
    assert_true(ggml_row_bytes(s->type, (uint64_t)s->ne[0], &row));
    *nbytes = row * (uint64_t)s->ne[1];
    uint8_t *buf = malloc(*nbytes);
    assert_non_null(buf);
    for (int64_t r = 0; r < s->ne[1]; r++)
        sd_quantize_row(s->type, x + r * s->ne[0], buf + r * row, s->ne[0]);
    free(x);
    return buf;
}

static void write_input_model(void) {
    gguf_ctx *vocab;
    sd_err err = {0};
    assert_int_equal(gguf_open(VOCAB, &vocab, &err), SD_OK);
    gguf_writer *w = gguf_writer_init();
    assert_non_null(w);
    for (int64_t k = 0; k < gguf_n_kv(vocab); k++)
        if (strcmp(gguf_kv_key(vocab, k), "llama.block_count"))
            assert_int_equal(gguf_writer_copy_kv(w, vocab, k), SD_OK);
    assert_int_equal(gguf_writer_set_u32(w, "llama.block_count", N_LAYER), SD_OK);
    build_specs();
    void *bufs[64];
    for (int i = 0; i < n_specs; i++) {
        uint64_t nbytes;
        bufs[i] = encode_input(i, &nbytes);
        assert_int_equal(gguf_writer_add_tensor(w, specs[i].name, specs[i].type, specs[i].n_dims,
                                                specs[i].ne, bufs[i], nbytes),
                         SD_OK);
    }
    assert_int_equal(gguf_writer_write(w, in_path, &err), SD_OK);
    for (int i = 0; i < n_specs; i++)
        free(bufs[i]);
    gguf_writer_free(w);
    gguf_close(vocab);
}

/* ---- expectations, from the rules documented in numerics/quantize/quantize_mix.c and specdec_quantize_file ---- */

typedef struct plan {
    const char *name;
    uint32_t type, ftype;
    float max_rel_rmse; /* RMSE / RMS of the dequantized weights vs the input */
} plan;

static const plan PLANS[] = {
    {"f32", GGML_TYPE_F32, 0, 0.f},        {"f16", GGML_TYPE_F16, 1, 0.001f},
    {"bf16", GGML_TYPE_BF16, 32, 0.005f},  {"q8_0", GGML_TYPE_Q8_0, 7, 0.01f},
    {"q4_0", GGML_TYPE_Q4_0, 2, 0.12f},    {"q4_1", GGML_TYPE_Q4_1, 3, 0.12f},
    {"q5_0", GGML_TYPE_Q5_0, 8, 0.06f},    {"q5_1", GGML_TYPE_Q5_1, 9, 0.06f},
    {"q4_k", GGML_TYPE_Q4_K, 14, 0.12f},   {"q5_k", GGML_TYPE_Q5_K, 16, 0.06f},
    {"q6_k", GGML_TYPE_Q6_K, 18, 0.03f},   {"q4_k_m", GGML_TYPE_Q4_K, 15, 0.12f},
    {"q3_k", GGML_TYPE_Q3_K, 11, 0.2f},    {"q2_k", GGML_TYPE_Q2_K, 10, 0.3f},
    {"q3_k_s", GGML_TYPE_Q3_K, 11, 0.2f},  {"q3_k_m", GGML_TYPE_Q3_K, 12, 0.15f},
    {"q3_k_l", GGML_TYPE_Q3_K, 13, 0.15f}, {"iq4_nl", GGML_TYPE_IQ4_NL, 25, 0.1f},
    {"iq4_xs", GGML_TYPE_IQ4_XS, 30, 0.1f},
};

static bool more_bits(int i, int n) { /* llama.cpp use_more_bits */
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

/* The mixes on this model (no head_count key: n_gqa 0; N_LAYER 8, so the
 * "first 1/16 of ffn_down" of Q3_K_M is empty and the first 1/8 is layer 0;
 * attn_v counts 0..7 in layer order). */
static uint32_t mix_type(const plan *p, const char *name, int layer, uint32_t t) {
    bool v = strstr(name, "attn_v.weight"), down = strstr(name, "ffn_down.weight");
    if (!strcmp(name, "output.weight")) /* token_embd keeps the base: output.weight exists */
        return strcmp(p->name, "q3_k") ? GGML_TYPE_Q6_K : t;
    if (!strcmp(p->name, "q4_k_m") && (v || down))
        return more_bits(layer, N_LAYER) ? GGML_TYPE_Q6_K : GGML_TYPE_Q4_K;
    if (!strcmp(p->name, "q2_k") && (v || down))
        return GGML_TYPE_Q3_K;
    if (!strcmp(p->name, "q3_k_m") && v)
        return layer < 2 ? GGML_TYPE_Q5_K : GGML_TYPE_Q4_K;
    if (!strcmp(p->name, "q3_k_m") && down)
        return GGML_TYPE_Q4_K;
    if (!strcmp(p->name, "q3_k_l") && (v || down))
        return GGML_TYPE_Q5_K;
    if ((!strcmp(p->name, "iq4_nl") || !strcmp(p->name, "iq4_xs")) && down && layer < N_LAYER / 8)
        return GGML_TYPE_Q5_K;
    return t;
}

static uint32_t expected_type(const plan *p, const tensor_spec *s) {
    if (s->n_dims == 1)
        return GGML_TYPE_F32;
    int layer = -1;
    sscanf(s->name, "blk.%d.", &layer);
    bool mix = strstr(p->name, "_k_") || !strcmp(p->name, "q2_k") || strstr(p->name, "iq4");
    uint32_t t = mix ? mix_type(p, s->name, layer, p->type) : p->type;
    uint32_t bs = ggml_type_get(t)->block_size;
    if (s->ne[0] % bs) {
        t = t == GGML_TYPE_Q4_K ? GGML_TYPE_Q5_0 : t == GGML_TYPE_Q5_K ? GGML_TYPE_Q5_1
          : t == GGML_TYPE_Q6_K ? GGML_TYPE_Q8_0 : t == GGML_TYPE_IQ4_XS ? GGML_TYPE_IQ4_NL
          : t == GGML_TYPE_Q2_K || t == GGML_TYPE_Q3_K ? GGML_TYPE_Q4_0 : t;
        if (s->ne[0] % ggml_type_get(t)->block_size)
            t = GGML_TYPE_F16;
    }
    return t;
}

/* ---- running the binary ---- */

static int run_quantize(const char *out, const char *type, const char *extra) {
    const char *bin = getenv("SD_SPECDEC_BIN");
    assert_non_null(bin);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s quantize %s %s %s %s >%s/stdout 2>%s/stderr", bin, extra, in_path,
             out, type, tmpdir, tmpdir);
    int rc = system(cmd);
    return WIFEXITED(rc) ? WEXITSTATUS(rc) : -1;
}

static bool file_exists(const char *path) {
    struct stat st;
    return stat(path, &st) == 0;
}

/* ---- checks on one output file ---- */

static void check_metadata(const gguf_ctx *out, const plan *p) {
    gguf_ctx *vocab;
    sd_err err = {0};
    assert_int_equal(gguf_open(VOCAB, &vocab, &err), SD_OK);
    uint32_t v;
    assert_true(gguf_get_u32(out, "general.file_type", &v));
    assert_int_equal(v, p->ftype);
    assert_true(gguf_get_u32(out, "general.quantization_version", &v));
    assert_int_equal(v, 2);
    assert_true(gguf_get_u32(out, "llama.block_count", &v));
    assert_int_equal(v, N_LAYER);
    uint64_t n_tok, n_out, len_a, len_b;
    assert_true(gguf_get_arr_str_n(vocab, "tokenizer.ggml.tokens", &n_tok));
    assert_true(gguf_get_arr_str_n(out, "tokenizer.ggml.tokens", &n_out));
    assert_int_equal(n_tok, n_out);
    for (uint64_t i = 0; i < n_tok; i += 997) {
        const char *a, *b;
        assert_true(gguf_get_arr_str(vocab, "tokenizer.ggml.tokens", i, &a, &len_a));
        assert_true(gguf_get_arr_str(out, "tokenizer.ggml.tokens", i, &b, &len_b));
        assert_int_equal(len_a, len_b);
        assert_memory_equal(a, b, len_a);
    }
    /* every input key is still there (file_type replaced, version added) */
    assert_int_equal(gguf_n_kv(out), gguf_n_kv(vocab) + 1);
    for (int64_t k = 0; k < gguf_n_kv(vocab); k++)
        assert_true(gguf_find_key(out, gguf_kv_key(vocab, k)) >= 0);
    gguf_close(vocab);
}

/* Compares tensor i of the output with the library's own conversion of the
 * input values, bit for bit, and with the original values (RMSE). */
static void check_tensor(const gguf_tensor_info *t, int i, const plan *p, double *e2,
                         double *x2) {
    const tensor_spec *s = &specs[i];
    assert_string_equal(t->name, s->name);
    assert_int_equal(t->n_dims, s->n_dims);
    assert_int_equal(t->ne[0], s->ne[0]);
    assert_int_equal(t->ne[1], s->ne[1]);
    uint32_t want = expected_type(p, s);
    if (t->type != want)
        fail_msg("%s %s: type %s, expected %s", p->name, s->name, ggml_type_get(t->type)->name,
                 ggml_type_get(want)->name);
    /* the input values, as the input file stores them */
    float *x = original_values(i);
    int64_t n = s->ne[0];
    float *row = malloc((size_t)n * sizeof(float)), *ref = malloc((size_t)n * sizeof(float));
    uint8_t *tmp = malloc((size_t)n * 4 + 64), *q = malloc((size_t)n * 4 + 64);
    uint64_t rin, rout;
    assert_true(ggml_row_bytes(s->type, (uint64_t)n, &rin));
    assert_true(ggml_row_bytes(t->type, (uint64_t)n, &rout));
    for (int64_t r = 0; r < s->ne[1]; r++) {
        float *xr = x + r * n;
        sd_quantize_row(s->type, xr, tmp, n); /* input storage */
        sd_dequantize_row(s->type, tmp, xr, n);
        if (t->type == s->type) {
            memcpy(q, tmp, rin);
        } else {
            sd_quantize_row(t->type, xr, q, n);
        }
        sd_dequantize_row(t->type, q, ref, n);
        sd_dequantize_row(t->type, (const uint8_t *)t->data + r * rout, row, n);
        if (memcmp(row, ref, (size_t)n * sizeof(float)))
            fail_msg("%s %s row %lld: not the library's conversion", p->name, s->name,
                     (long long)r);
        for (int64_t j = 0; j < n; j++) {
            *e2 += (double)(row[j] - xr[j]) * (row[j] - xr[j]);
            *x2 += (double)xr[j] * xr[j];
        }
    }
    free(x);
    free(row);
    free(ref);
    free(tmp);
    free(q);
}

static void check_output(const char *path, const plan *p) {
    gguf_ctx *out;
    sd_err err = {0};
    if (gguf_open(path, &out, &err) != SD_OK)
        fail_msg("%s: %s", p->name, err.msg);
    check_metadata(out, p);
    assert_int_equal(gguf_n_tensors(out), n_specs);
    double e2 = 0, x2 = 0;
    for (int i = 0; i < n_specs; i++)
        check_tensor(gguf_tensor(out, i), i, p, &e2, &x2);
    double rel = sqrt(e2 / x2);
    print_message("%-7s RMSE/RMS over all tensors %.5f\n", p->name, rel);
    if (!(rel <= p->max_rel_rmse))
        fail_msg("%s: RMSE/RMS %.5f > %.5f", p->name, rel, (double)p->max_rel_rmse);
    gguf_close(out);
}

/* ---- tests ---- */

static int setup(void **state) {
    (void)state;
    snprintf(tmpdir, sizeof tmpdir, "/tmp/sd-quantize-XXXXXX");
    if (!mkdtemp(tmpdir))
        return -1;
    snprintf(in_path, sizeof in_path, "%s/in.gguf", tmpdir);
    write_input_model();
    return 0;
}

static int teardown(void **state) {
    (void)state;
    char cmd[160];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

static void test_every_type(void **state) {
    (void)state;
    for (size_t k = 0; k < sizeof PLANS / sizeof PLANS[0]; k++) {
        char out[160];
        snprintf(out, sizeof out, "%s/out-%s.gguf", tmpdir, PLANS[k].name);
        int rc = run_quantize(out, PLANS[k].name, k % 2 ? "--threads 1" : "");
        if (rc != 0)
            fail_msg("quantize %s exited %d", PLANS[k].name, rc);
        check_output(out, &PLANS[k]);
    }
}

/* Same result with 1 and 2 threads, and re-quantizing a quantized model works
 * (input type Q8_0 everywhere). */
static void test_threads_and_requantize(void **state) {
    (void)state;
    char a[160], b[160], c[160];
    snprintf(a, sizeof a, "%s/t1.gguf", tmpdir);
    snprintf(b, sizeof b, "%s/t2.gguf", tmpdir);
    snprintf(c, sizeof c, "%s/t3.gguf", tmpdir);
    assert_int_equal(run_quantize(a, "q4_k_m", "--threads 1"), 0);
    assert_int_equal(run_quantize(b, "q4_k_m", "--threads 2"), 0);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "cmp -s %s %s", a, b);
    assert_int_equal(system(cmd), 0);
    /* q8_0 file -> q6_k: reads Q8_0 (and the F16 fallback tensor) as input */
    char q8[160];
    snprintf(q8, sizeof q8, "%s/q8.gguf", tmpdir);
    snprintf(cmd, sizeof cmd, "%s quantize %s %s q6_k >/dev/null && %s quantize %s %s q6_k >/dev/null",
             getenv("SD_SPECDEC_BIN"), in_path, q8, getenv("SD_SPECDEC_BIN"), q8, c);
    assert_int_equal(system(cmd), 0);
    gguf_ctx *out;
    sd_err err = {0};
    assert_int_equal(gguf_open(c, &out, &err), SD_OK);
    assert_int_equal(gguf_find_tensor(out, "blk.3.attn_q.weight")->type, GGML_TYPE_Q6_K);
    gguf_close(out);
}

/* A 2-D weight of a type that cannot be dequantized (TQ1_0) makes the
 * command fail after converting earlier tensors: exit 1, a one-line message,
 * and neither OUT nor OUT.tmp left behind. */
static void test_failure_leaves_nothing(void **state) {
    (void)state;
    char bad[160], out[160], tmp[170];
    snprintf(bad, sizeof bad, "%s/bad.gguf", tmpdir);
    snprintf(out, sizeof out, "%s/bad-out.gguf", tmpdir);
    snprintf(tmp, sizeof tmp, "%s.tmp", out);
    gguf_writer *w = gguf_writer_init();
    float f[256] = {0};
    int64_t ne[2] = {256, 1};
    assert_int_equal(gguf_writer_add_tensor(w, "a.weight", GGML_TYPE_F32, 2, ne, f, sizeof f), SD_OK);
    uint8_t tq[54] = {0}; /* block_tq1_0: 256 elements in 54 bytes */
    assert_int_equal(gguf_writer_add_tensor(w, "b.weight", GGML_TYPE_TQ1_0, 2, ne, tq, sizeof tq), SD_OK);
    sd_err err = {0};
    assert_int_equal(gguf_writer_write(w, bad, &err), SD_OK);
    gguf_writer_free(w);
    char cmd[600];
    snprintf(cmd, sizeof cmd, "%s quantize %s %s q8_0 >%s/stdout 2>%s/stderr",
             getenv("SD_SPECDEC_BIN"), bad, out, tmpdir, tmpdir);
    int rc = system(cmd);
    assert_true(WIFEXITED(rc) && WEXITSTATUS(rc) == 1);
    assert_false(file_exists(out));
    assert_false(file_exists(tmp));
    char errpath[128], line[512];
    snprintf(errpath, sizeof errpath, "%s/stderr", tmpdir);
    FILE *e = fopen(errpath, "r");
    assert_non_null(e);
    assert_non_null(fgets(line, sizeof line, e));
    assert_true(!strncmp(line, "specdec: ", 9) && strstr(line, "b.weight"));
    assert_null(fgets(line, sizeof line, e)); /* one line only */
    fclose(e);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_type),
        cmocka_unit_test(test_threads_and_requantize),
        cmocka_unit_test(test_failure_leaves_nothing),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
