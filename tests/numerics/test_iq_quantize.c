/* The weighted quantizers (numerics/quantize/iq_quantize.c) and the
 * importance-matrix reader (numerics/quantize/imatrix.c).
 *  - Round trip through our own dequantizer: rows of Gaussian values with a
 *    log-normal spread of sub-block magnitudes and log-normal column weights
 *    (an importance matrix's spread), quantized into each type and read back
 *    with sd_dequantize_row. The weighted relative error
 *    E = sum w (x - q)^2 / sum w x^2 must stay under 3 * 2^(-2R), R the
 *    type's bits per weight (3 for MXFP4, see there): 2^(-2R) is the rate-distortion bound of a
 *    unit Gaussian at R bits, and a fixed-rate quantizer with a per-block
 *    scale is within a small factor of it (ggml's own files measure 1.2-2x
 *    on such data; the factor 3 leaves room for the heavier tails).
 *  - The weights must help: the rows quantized under the weights have a
 *    lower weighted error than the same rows quantized with unit weights.
 *  - All-zero rows give zeros; tiny and huge magnitudes stay finite and an
 *    isolated spike keeps its sign and most of its size.
 *  - A legacy .dat file is read back as value / ncall; truncated files, bad
 *    counts, NaN and negative values, a name running past the end are each
 *    one SD_ERR_FORMAT naming the problem. */
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
#include <unistd.h>

#include "format/ggml_type.h"
#include "numerics/quant.h"
#include "numerics/quantize/imatrix.h"
#include "numerics/quantize/iq_quantize.h"

#define QT_SEED 0x9E3779B97F4A7C15ull
#include "quant_test_rows.h"


typedef struct tcase {
    const char *name;
    double bits; /* per weight */
} tcase;

static const tcase k_types[] = {
    {"iq1_s", 1.5625},   {"iq1_m", 1.75},     {"iq2_xxs", 2.0625}, {"iq2_xs", 2.3125}, {"iq2_s", 2.5625}, {"iq3_xxs", 3.0625},
    {"iq3_s", 3.4375},   {"mxfp4", 4.25},    {"iq4_nl", 4.5},   {"iq4_xs", 4.25},
};

enum { N = 1024, ROWS = 8 };

/* Weighted relative error of x quantized into t under w_q, measured with w. */
static double rel_err(uint32_t t, const float *x, const float *w_q, const float *w) {
    uint64_t rb;
    assert_true(ggml_row_bytes(t, N, &rb));
    uint8_t *q = malloc(rb);
    float *y = malloc(N * sizeof(float));
    assert_non_null(q);
    assert_non_null(y);
    assert_true(sd_quantize_row_weighted(t, x, q, N, w_q));
    sd_dequantize_row(t, q, y, N);
    const double e = weighted_rel_err(x, y, w, N);
    free(q);
    free(y);
    return e;
}

static void test_error_bounds(void **state) {
    (void)state;
    float *x = malloc(N * sizeof(float)), *w = malloc(N * sizeof(float)), *ones = malloc(N * sizeof(float));
    assert_non_null(x);
    assert_non_null(w);
    assert_non_null(ones);
    for (int j = 0; j < N; j++) ones[j] = 1;
    for (size_t k = 0; k < sizeof k_types / sizeof k_types[0]; k++) {
        const int t = ggml_type_from_name(k_types[k].name);
        assert_true(t >= 0);
        double e_w = 0, e_unit = 0;
        for (int r = 0; r < ROWS; r++) {
            for (int j = 0; j < N; j++) {
                if (j % 32 == 0) x[j] = 0; /* placeholder, set below */
                w[j] = (float)exp(1.5 * grand());
            }
            for (int b = 0; b < N / 32; b++) {
                const float s = (float)exp(0.5 * grand());
                for (int j = 0; j < 32; j++) x[32 * b + j] = s * grand();
            }
            e_w += rel_err((uint32_t)t, x, w, w);
            e_unit += rel_err((uint32_t)t, x, NULL, w);
        }
        e_w /= ROWS;
        e_unit /= ROWS;
        /* MXFP4's scale is a power of two, so a block's largest value lands
         * anywhere in the top octave of its 8 magnitudes: about 1.25 of its
         * 4.25 bits buy no resolution, and the bound takes R = 3. */
        const double r_eff = t == GGML_TYPE_MXFP4 ? 3.0 : k_types[k].bits;
        const double bound = 3 * pow(2, -2 * r_eff);
        printf("%-8s E weighted %.5f, unit-weight search %.5f, bound %.5f\n", k_types[k].name, e_w, e_unit, bound);
        assert_true(e_w <= bound);
        assert_true(e_w < e_unit);
    }
    free(x);
    free(w);
    free(ones);
}

static void test_extremes(void **state) {
    (void)state;
    float x[N], y[N], w[N];
    uint8_t q[N * 2];
    for (size_t k = 0; k < sizeof k_types / sizeof k_types[0]; k++) {
        const uint32_t t = (uint32_t)ggml_type_from_name(k_types[k].name);
        for (int j = 0; j < N; j++) w[j] = 1;
        memset(x, 0, sizeof x);
        assert_true(sd_quantize_row_weighted(t, x, q, N, w));
        sd_dequantize_row(t, q, y, N);
        for (int j = 0; j < N; j++) assert_true(y[j] == 0);
        const float mags[3] = {1e-3f, 1.0f, 3e4f}; /* the fp16 block scales span them */
        for (int m = 0; m < 3; m++) {
            for (int j = 0; j < N; j++) x[j] = mags[m] * (0.01f * grand());
            x[5] = mags[m]; /* one dominant value per block */
            x[300] = -mags[m];
            assert_true(sd_quantize_row_weighted(t, x, q, N, w));
            sd_dequantize_row(t, q, y, N);
            for (int j = 0; j < N; j++) assert_true(isfinite(y[j]));
            /* an isolated spike: the 2-bit grids hold level 43 beside seven 8s
             * only at some positions, so the spike may take level 25 */
            const float tol = k_types[k].bits < 2 ? 0.75f : k_types[k].bits < 3 ? 0.6f : 0.35f;
            if (!(fabsf(y[5] - x[5]) <= tol * mags[m]) || !(fabsf(y[300] - x[300]) <= tol * mags[m]))
                printf("%s magnitude %g: %g -> %g, %g -> %g\n", k_types[k].name, (double)mags[m], (double)x[5],
                       (double)y[5], (double)x[300], (double)y[300]);
            assert_true(fabsf(y[5] - x[5]) <= tol * mags[m] && y[5] > 0);
            assert_true(fabsf(y[300] - x[300]) <= tol * mags[m] && y[300] < 0);
        }
    }
}

/* ---- importance-matrix files ---- */

static void put_i32(FILE *f, int32_t v) { fwrite(&v, 4, 1, f); }

static char g_path[64];

static sd_status load_bytes(const void *data, size_t n, sd_imatrix **im, sd_err *err) {
    snprintf(g_path, sizeof g_path, "/tmp/sd_imatrix_%d.dat", (int)getpid());
    FILE *f = fopen(g_path, "wb");
    assert_non_null(f);
    fwrite(data, 1, n, f);
    fclose(f);
    sd_status st = sd_imatrix_load(g_path, im, err);
    unlink(g_path);
    return st;
}

/* A legacy file of one entry: name, ncall, values. */
static size_t make_dat(uint8_t *buf, const char *name, int32_t ncall, int32_t nval, const float *v, int n_written) {
    FILE *f = fmemopen(buf, 4096, "wb");
    assert_non_null(f);
    put_i32(f, 1);
    put_i32(f, (int32_t)strlen(name));
    fwrite(name, 1, strlen(name), f);
    put_i32(f, ncall);
    put_i32(f, nval);
    fwrite(v, 4, (size_t)n_written, f);
    long n = ftell(f);
    fclose(f);
    return (size_t)n;
}

static void expect_format_error(const uint8_t *buf, size_t n, const char *what) {
    sd_imatrix *im = NULL;
    sd_err err = {0};
    assert_int_equal(load_bytes(buf, n, &im, &err), SD_ERR_FORMAT);
    assert_null(im);
    assert_null(strchr(err.msg, '\n'));
    if (!strstr(err.msg, what)) {
        printf("message '%s' does not say '%s'\n", err.msg, what);
        fail();
    }
}

static void test_imatrix_dat(void **state) {
    (void)state;
    uint8_t buf[4096];
    const float v[4] = {8, 4, 0, 2};
    size_t n = make_dat(buf, "blk.0.ffn_up.weight", 4, 4, v, 4);
    sd_imatrix *im = NULL;
    sd_err err = {0};
    assert_int_equal(load_bytes(buf, n, &im, &err), SD_OK);
    const sd_imatrix_entry *e = sd_imatrix_find(im, "blk.0.ffn_up.weight");
    assert_non_null(e);
    assert_int_equal(e->n, 4);
    assert_true(e->mean[0] == 2 && e->mean[1] == 1 && e->mean[2] == 0 && e->mean[3] == 0.5f);
    assert_null(sd_imatrix_find(im, "blk.0.ffn_down.weight"));
    sd_imatrix_free(im);

    expect_format_error(buf, n - 3, "truncated");             /* last value cut */
    expect_format_error(buf, 2, "truncated");                 /* no entry count */
    n = make_dat(buf, "a.weight", 1, -5, v, 4);
    expect_format_error(buf, n, "-5 values");
    n = make_dat(buf, "a.weight", 1, 1000, v, 4);
    expect_format_error(buf, n, "1000 values");
    const float bad[2] = {NAN, -1};
    n = make_dat(buf, "a.weight", 1, 1, bad, 1);
    expect_format_error(buf, n, "finite");
    n = make_dat(buf, "a.weight", 1, 1, bad + 1, 1);
    expect_format_error(buf, n, "finite");
    int32_t hdr[4] = {1, 100000, 0, 0};
    expect_format_error((const uint8_t *)hdr, sizeof hdr, "name length");
    hdr[0] = 0;
    expect_format_error((const uint8_t *)hdr, sizeof hdr, "entry count");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_error_bounds),
        cmocka_unit_test(test_extremes),
        cmocka_unit_test(test_imatrix_dat),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
