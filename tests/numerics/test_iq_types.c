/* The IQ1/IQ2/IQ3 grid types and MXFP4 against llama.cpp and float64.
 * tests/data/quant/iq_reference.txt (made by tools/iqref/iqref.c from
 * llama.cpp's own ggml library) holds blocks that use every grid index (for
 * MXFP4 every exponent), random blocks, an all-zero block and extreme
 * scales, each with a hash of llama.cpp's dequantization:
 *  - sd_dequantize_row gives the same bits on every block (so our grids,
 *    signs and layouts are llama.cpp's);
 *  - the matmul over those blocks, on every kernel path this machine runs,
 *    is bitwise the scalar path's, the same for S rows at once as one by
 *    one, and within the 8-bit activation rounding of a float64 dot product
 *    of the dequantized weights. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/ggml_type.h"
#include "numerics/cpu.h"
#include "numerics/matmul.h"
#include "numerics/quant.h"

#define MAX_BLOCKS 300
#define S_ROWS 5

typedef struct ref_set {
    uint32_t type;
    int n, bytes, block;
    uint8_t *blocks;       /* n * bytes */
    uint64_t hash[MAX_BLOCKS];
} ref_set;

static const char *const k_names[] = {"iq1_s", "iq1_m", "iq2_xxs", "iq2_xs", "iq2_s", "iq3_xxs", "iq3_s", "mxfp4"};
#define N_NAMES (sizeof k_names / sizeof k_names[0])
static ref_set g_sets[N_NAMES];

static uint64_t fnv(const float *y, int n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &y[i], 4);
        for (int k = 0; k < 4; k++) {
            h ^= (u >> 8 * k) & 0xFF;
            h *= 0x100000001b3ull;
        }
    }
    return h;
}

static int setup(void **state) {
    (void)state;
    FILE *f = fopen("tests/data/quant/iq_reference.txt", "r");
    assert_non_null(f);
    static char line[1024];
    for (size_t i = 0; i < N_NAMES; i++) {
        g_sets[i].type = (uint32_t)ggml_type_from_name(k_names[i]);
        g_sets[i].bytes = (int)ggml_type_get(g_sets[i].type)->type_size;
        g_sets[i].block = (int)ggml_type_get(g_sets[i].type)->block_size;
        g_sets[i].blocks = malloc((size_t)MAX_BLOCKS * (size_t)g_sets[i].bytes);
        assert_non_null(g_sets[i].blocks);
    }
    while (fgets(line, sizeof line, f)) {
        if (line[0] == '#') continue;
        char name[16], hex[512];
        unsigned long long h;
        assert_int_equal(sscanf(line, "%15s %511s %llx", name, hex, &h), 3);
        ref_set *r = NULL;
        for (size_t i = 0; i < N_NAMES; i++)
            if (!strcmp(name, k_names[i])) r = &g_sets[i];
        assert_non_null(r);
        assert_true(r->n < MAX_BLOCKS);
        assert_int_equal(strlen(hex), 2 * (size_t)r->bytes);
        uint8_t *b = r->blocks + (size_t)r->n * (size_t)r->bytes;
        for (int k = 0; k < r->bytes; k++) {
            unsigned v;
            assert_int_equal(sscanf(hex + 2 * k, "%2x", &v), 1);
            b[k] = (uint8_t)v;
        }
        r->hash[r->n++] = h;
    }
    fclose(f);
    for (size_t i = 0; i < N_NAMES; i++) assert_true(g_sets[i].n >= 16);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    for (size_t i = 0; i < N_NAMES; i++) free(g_sets[i].blocks);
    return 0;
}

static void test_dequantize_is_llamacpp(void **state) {
    (void)state;
    float y[256];
    for (size_t i = 0; i < N_NAMES; i++) {
        const ref_set *r = &g_sets[i];
        assert_true(sd_type_supported(r->type));
        for (int n = 0; n < r->n; n++) {
            sd_dequantize_row(r->type, r->blocks + (size_t)n * (size_t)r->bytes, y, r->block);
            if (fnv(y, r->block) != r->hash[n])
                fail_msg("%s block %d: dequantization differs from llama.cpp's (y[0] = %.9g)", k_names[i], n, y[0]);
        }
    }
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static float frand(void) { /* splitmix64 -> [-2, 2), an outlier now and then */
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z ^= z >> 31;
    float v = -2.0f + 4.0f * (float)(z >> 40) / (float)(1 << 24);
    return z % 11 == 0 ? v * 30.0f : v;
}

/* The blocks of one type as a matrix: n_in = 2 blocks per row, so every row
 * has a neighbour block and the float accumulation over blocks is exercised. */
static void matmul_set(const ref_set *r) {
    const int per_row = 2;
    const int64_t n_in = (int64_t)per_row * r->block, n_out = r->n / per_row;
    float *x = malloc((size_t)S_ROWS * (size_t)n_in * sizeof(float));
    float *y0 = malloc((size_t)S_ROWS * (size_t)n_out * sizeof(float));
    float *y1 = malloc((size_t)S_ROWS * (size_t)n_out * sizeof(float));
    float *w = malloc((size_t)n_in * sizeof(float));
    assert_true(x && y0 && y1 && w);
    for (int64_t i = 0; i < S_ROWS * n_in; i++) x[i] = frand();
    sd_err err = {0};
    sd_matrix m;
    assert_int_equal(sd_cpu_force_isa(SD_ISA_SCALAR, &err), SD_OK);
    assert_int_equal(sd_matrix_init(&m, r->type, n_in, n_out, r->blocks, &err), SD_OK);
    sd_matmul(&m, x, S_ROWS, y0, 2);
    for (int s = 0; s < S_ROWS; s++) { /* batch invariance: row by row */
        sd_matmul(&m, x + s * n_in, 1, y1 + s * n_out, 1);
        if (memcmp(y1 + s * n_out, y0 + s * n_out, (size_t)n_out * sizeof(float)))
            fail_msg("%s: row %d alone differs from the batch", ggml_type_get(r->type)->name, s);
    }
    for (int64_t o = 0; o < n_out; o++) { /* float64 reference */
        sd_matrix_get_row(&m, o, w);
        for (int s = 0; s < S_ROWS; s++) {
            const float *xs = x + s * n_in;
            double ref = 0, mag = 0, bound = 0;
            for (int64_t b = 0; b < n_in; b += 32) { /* activation blocks are 32 or 256: bound per 32 is looser */
                double amax = 0, sw = 0;
                int64_t ab = r->block == 256 ? b / 256 * 256 : b, ae = ab + (r->block == 256 ? 256 : 32);
                for (int64_t i = ab; i < ae; i++) amax = fmax(amax, fabs(xs[i]));
                for (int64_t i = b; i < b + 32; i++) {
                    ref += (double)w[i] * xs[i];
                    mag += fabs((double)w[i] * xs[i]);
                    sw += fabs(w[i]);
                }
                bound += sw * amax / 254.0 * 1.001;
            }
            bound += 1e-5 * mag + 1e-30;
            double got = y0[s * n_out + o];
            /* MXFP4 at exponent 254: weights and partial sums pass FLT_MAX (as in llama.cpp) */
            if (!isfinite(bound) || (fabs(ref) + bound > FLT_MAX && isinf(got))) continue;
            if (!(fabs(got - ref) <= bound))
                fail_msg("%s row %lld s %d: got %.9g want %.9g (bound %.3g)", ggml_type_get(r->type)->name,
                         (long long)o, s, got, ref, bound);
        }
    }
    sd_matrix_free(&m);
    for (int isa = SD_ISA_SCALAR + 1; isa < SD_ISA_COUNT; isa++) { /* every path: the scalar bits */
        if (!sd_cpu_isa_available((sd_isa)isa)) continue;
        assert_int_equal(sd_cpu_force_isa((sd_isa)isa, &err), SD_OK);
        assert_int_equal(sd_matrix_init(&m, r->type, n_in, n_out, r->blocks, &err), SD_OK);
        for (int nt = 1; nt <= 2; nt++) {
            sd_matmul(&m, x, S_ROWS, y1, nt);
            if (memcmp(y0, y1, (size_t)S_ROWS * (size_t)n_out * sizeof(float)))
                fail_msg("%s: %s path differs from scalar", ggml_type_get(r->type)->name, sd_isa_name((sd_isa)isa));
        }
        sd_matrix_free(&m);
    }
    sd_cpu_force_scalar(false);
    free(x);
    free(y0);
    free(y1);
    free(w);
}

static void test_matmul_every_block(void **state) {
    (void)state;
    for (size_t i = 0; i < N_NAMES; i++) matmul_set(&g_sets[i]);
}

/* A zero block gives exact zeros, whatever the activations. */
static void test_zero_blocks(void **state) {
    (void)state;
    for (size_t i = 0; i < N_NAMES; i++) {
        const ref_set *r = &g_sets[i];
        int64_t n_in = 256 * 2;
        uint8_t *z = calloc((size_t)(n_in / r->block) * (size_t)r->bytes * 3, 1);
        float x[512], y[3];
        assert_non_null(z);
        for (int k = 0; k < 512; k++) x[k] = frand();
        sd_matrix m;
        sd_err err = {0};
        assert_int_equal(sd_matrix_init(&m, r->type, n_in, 3, z, &err), SD_OK);
        sd_matmul(&m, x, 1, y, 1);
        for (int k = 0; k < 3; k++) assert_true(y[k] == 0.0f);
        sd_matrix_free(&m);
        free(z);
    }
}

/* Rows must be whole blocks: 256 for the IQ types, 32 for MXFP4. */
static void test_row_length(void **state) {
    (void)state;
    static uint8_t buf[4096];
    for (size_t i = 0; i < N_NAMES; i++) {
        sd_matrix m;
        sd_err err = {0};
        int blk = g_sets[i].block;
        assert_int_equal(sd_matrix_init(&m, g_sets[i].type, blk / 2 * 3, 1, buf, &err), SD_ERR_FORMAT);
        assert_non_null(strstr(err.msg, "block"));
        uint64_t bytes;
        assert_false(ggml_row_bytes(g_sets[i].type, (uint64_t)blk + 32, &bytes) && blk == 256);
    }
}

/* Every block type read in place (no repacked copy, as --no-repack and the
 * types without a tile run): each path gives the scalar path's bits, random
 * bytes and all (Q8_0's -128, NaN scales; a NaN may differ in sign only). */
static void test_unpacked_every_type(void **state) {
    (void)state;
    static const uint32_t types[] = {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0,  GGML_TYPE_Q4_1,   GGML_TYPE_Q5_0,
                                     GGML_TYPE_Q5_1, GGML_TYPE_Q2_K,  GGML_TYPE_Q3_K,   GGML_TYPE_Q4_K,
                                     GGML_TYPE_Q5_K, GGML_TYPE_Q6_K,  GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS,
                                     GGML_TYPE_IQ1_S, GGML_TYPE_IQ1_M, GGML_TYPE_IQ2_XXS, GGML_TYPE_IQ2_XS,
                                     GGML_TYPE_IQ2_S, GGML_TYPE_IQ3_XXS, GGML_TYPE_IQ3_S, GGML_TYPE_MXFP4};
    const int64_t n_in = 512, n_out = 11;
    const sd_matrix_opts opts = {.no_pack = true};
    float x[S_ROWS * 512], y0[S_ROWS * 11], y1[S_ROWS * 11];
    for (int i = 0; i < S_ROWS * 512; i++) x[i] = frand();
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        const ggml_type_info *ti = ggml_type_get(types[k]);
        size_t bytes = (size_t)(n_in / ti->block_size) * ti->type_size * (size_t)n_out;
        uint8_t *w = malloc(bytes);
        assert_non_null(w);
        for (size_t i = 0; i < bytes; i++) w[i] = (uint8_t)(frand() * 1000.0f + 5000.0f);
        sd_err err = {0};
        sd_matrix m;
        assert_int_equal(sd_cpu_force_isa(SD_ISA_SCALAR, &err), SD_OK);
        assert_int_equal(sd_matrix_init_opts(&m, types[k], n_in, n_out, w, &opts, &err), SD_OK);
        sd_matmul(&m, x, S_ROWS, y0, 1);
        sd_matrix_free(&m);
        for (int isa = SD_ISA_SCALAR + 1; isa < SD_ISA_COUNT; isa++) {
            if (!sd_cpu_isa_available((sd_isa)isa)) continue;
            assert_int_equal(sd_cpu_force_isa((sd_isa)isa, &err), SD_OK);
            assert_int_equal(sd_matrix_init_opts(&m, types[k], n_in, n_out, w, &opts, &err), SD_OK);
            assert_null(m.packed);
            sd_matmul(&m, x, S_ROWS, y1, 2);
            for (int i = 0; i < S_ROWS * 11; i++)
                if (memcmp(&y0[i], &y1[i], 4) && !(isnan(y0[i]) && isnan(y1[i]))) /* NaN sign: libm vs FMA */
                    fail_msg("%s unpacked: %s differs from scalar at %d: %.9g vs %.9g", ti->name,
                             sd_isa_name((sd_isa)isa), i, y1[i], y0[i]);
            sd_matrix_free(&m);
        }
        sd_cpu_force_scalar(false);
        free(w);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dequantize_is_llamacpp),
        cmocka_unit_test(test_matmul_every_block),
        cmocka_unit_test(test_zero_blocks),
        cmocka_unit_test(test_row_length),
        cmocka_unit_test(test_unpacked_every_type),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
