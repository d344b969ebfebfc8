/* The importance-weighted k-quant and legacy quantizers
 * (numerics/quantize/kq_weighted.c).
 *  - Round trip through our own dequantizer: rows of Gaussian values with a
 *    log-normal spread of 32-value magnitudes and log-normal column weights
 *    (an importance matrix's spread), quantized into each type and read back
 *    with sd_dequantize_row. The weighted relative error
 *    E = sum w (x - q)^2 / sum w x^2 must stay under 3 * 2^(-2R), R the bits
 *    per weight the levels get (the scales' bits not counted): 2^(-2R) is the
 *    rate-distortion bound of a unit Gaussian at R bits, and a uniform
 *    quantizer with a per-block scale is within a small factor of it.
 *  - The weights must help: E of the rows quantized under the weights is
 *    lower than E of the same rows quantized by the same search with unit
 *    weights, and no higher than the reference quantizer's (sd_quantize_row).
 *  - All-zero rows give zeros; tiny and huge magnitudes stay finite and an
 *    isolated spike keeps its sign and most of its size; a type the search
 *    does not write is refused. */
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
#include "numerics/quantize/kq_weighted.h"

#define QT_SEED 0x2545F4914F6CDD1Dull
#include "quant_test_rows.h"


typedef struct tcase {
    const char *name;
    double bits; /* level bits per weight */
} tcase;

static const tcase k_types[] = {
    {"q2_K", 2}, {"q3_K", 3}, {"q4_K", 4}, {"q5_K", 5}, {"q6_K", 6},
    {"q4_0", 4}, {"q4_1", 4}, {"q5_0", 5}, {"q5_1", 5},
};

enum { N = 1024, ROWS = 6 };

/* Weighted relative error of x quantized into t (mode 0: weighted search
 * under w_q, 1: the reference quantizer), measured with w. */
static double rel_err(uint32_t t, const float *x, const float *w_q, const float *w, int mode) {
    uint64_t rb;
    assert_true(ggml_row_bytes(t, N, &rb));
    uint8_t *q = malloc(rb);
    float *y = malloc(N * sizeof(float));
    assert_non_null(q);
    assert_non_null(y);
    if (mode == 0)
        assert_true(sd_kquant_row_weighted(t, x, q, N, w_q));
    else
        sd_quantize_row(t, x, q, N);
    sd_dequantize_row(t, q, y, N);
    const double e = weighted_rel_err(x, y, w, N);
    free(q);
    free(y);
    return e;
}

static void test_error_bounds(void **state) {
    (void)state;
    float *x = malloc(N * sizeof(float)), *w = malloc(N * sizeof(float));
    assert_non_null(x);
    assert_non_null(w);
    for (size_t k = 0; k < sizeof k_types / sizeof k_types[0]; k++) {
        const int t = ggml_type_from_name(k_types[k].name);
        assert_true(t >= 0);
        assert_true(sd_kquant_weighted_has((uint32_t)t));
        double e_w = 0, e_unit = 0, e_ref = 0;
        for (int r = 0; r < ROWS; r++) {
            for (int j = 0; j < N; j++) w[j] = (float)exp(1.5 * grand());
            for (int b = 0; b < N / 32; b++) {
                const float s = (float)exp(0.5 * grand());
                for (int j = 0; j < 32; j++) x[32 * b + j] = s * grand();
            }
            const double ew = rel_err((uint32_t)t, x, w, w, 0);
            const double eref = rel_err((uint32_t)t, x, NULL, w, 1);
            assert_true(ew <= eref); /* per row: the reference block is a candidate */
            e_w += ew;
            e_ref += eref;
            e_unit += rel_err((uint32_t)t, x, NULL, w, 0);
        }
        e_w /= ROWS;
        e_unit /= ROWS;
        e_ref /= ROWS;
        const double bound = 3 * pow(2, -2 * k_types[k].bits);
        printf("%-5s E weighted %.6f, unit-weight search %.6f, reference %.6f, bound %.6f\n", k_types[k].name, e_w,
               e_unit, e_ref, bound);
        assert_true(e_w <= bound);
        assert_true(e_w < e_unit);
        assert_true(e_w < e_ref);
    }
    free(x);
    free(w);
}

static void test_extremes(void **state) {
    (void)state;
    float x[N], y[N], w[N];
    uint8_t q[N * 2];
    for (size_t k = 0; k < sizeof k_types / sizeof k_types[0]; k++) {
        const uint32_t t = (uint32_t)ggml_type_from_name(k_types[k].name);
        for (int j = 0; j < N; j++) w[j] = (float)exp(grand());
        memset(x, 0, sizeof x);
        assert_true(sd_kquant_row_weighted(t, x, q, N, w));
        sd_dequantize_row(t, q, y, N);
        for (int j = 0; j < N; j++) assert_true(y[j] == 0);
        const float mags[3] = {1e-3f, 1.0f, 3e4f}; /* within the fp16 scales' span */
        for (int m = 0; m < 3; m++) {
            for (int j = 0; j < N; j++) x[j] = mags[m] * (0.01f * grand());
            x[5] = mags[m]; /* one dominant value per block */
            x[300] = -mags[m];
            assert_true(sd_kquant_row_weighted(t, x, q, N, w));
            sd_dequantize_row(t, q, y, N);
            for (int j = 0; j < N; j++) assert_true(isfinite(y[j]));
            const float tol = k_types[k].bits < 3 ? 0.4f : 0.2f;
            if (!(fabsf(y[5] - x[5]) <= tol * mags[m]) || !(fabsf(y[300] - x[300]) <= tol * mags[m]))
                printf("%s magnitude %g: %g -> %g, %g -> %g\n", k_types[k].name, (double)mags[m], (double)x[5],
                       (double)y[5], (double)x[300], (double)y[300]);
            assert_true(fabsf(y[5] - x[5]) <= tol * mags[m] && y[5] > 0);
            assert_true(fabsf(y[300] - x[300]) <= tol * mags[m] && y[300] < 0);
        }
    }
    /* types the search does not write */
    assert_false(sd_kquant_weighted_has(GGML_TYPE_Q8_0));
    assert_false(sd_kquant_row_weighted(GGML_TYPE_Q8_0, x, q, N, w));
    assert_false(sd_kquant_row_weighted(GGML_TYPE_F32, x, q, N, w));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_bounds),
        cmocka_unit_test(test_extremes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
