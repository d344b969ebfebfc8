/* numerics/ops: scalar and AVX2 builds agree bitwise; results match float64. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "numerics/cpu.h"
#include "numerics/ops.h"
#include "numerics/quant.h"

static uint64_t g_rng = 12345;
static float frand(void) {
    g_rng = g_rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)(g_rng >> 40) / (float)(1 << 24) * 4.0f - 2.0f;
}
static void fill(float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] = frand();
}

static const int64_t k_sizes[] = {0, 1, 3, 7, 8, 9, 15, 16, 17, 31, 64, 127, 128, 1000, 1024};
#define N_SIZES (sizeof k_sizes / sizeof k_sizes[0])


static void test_dot(void **state) {
    (void)state;
    float a[1024], b[1024];
    for (size_t k = 0; k < N_SIZES; k++) {
        int64_t n = k_sizes[k];
        fill(a, n);
        fill(b, n);
        float fast = sd_dot_f32(a, b, n);
        sd_cpu_force_scalar(true);
        float ref = sd_dot_f32(a, b, n);
        sd_cpu_force_scalar(false);
        assert_memory_equal(&fast, &ref, sizeof fast);
        double d = 0, mag = 0;
        for (int64_t i = 0; i < n; i++) {
            d += (double)a[i] * b[i];
            mag += fabs((double)a[i] * b[i]);
        }
        assert_true(fabs(ref - d) <= 1e-6 * mag + 1e-30);
        /* the documented order: 8 lanes, fixed tree */
        float acc[8] = {0};
        for (int64_t i = 0; i < n; i++) acc[i % 8] = fmaf(a[i], b[i], acc[i % 8]);
        if (n % 8) /* zero padding adds +0 to the lanes past the end */
            for (int64_t l = n % 8; l < 8; l++) acc[l] = fmaf(0.0f, 0.0f, acc[l]);
        float want = ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
        assert_memory_equal(&ref, &want, sizeof ref);
    }
}

static void test_axpy_add_rmsnorm(void **state) {
    (void)state;
    float x[1024], y[1024], w[1024], o1[1024], o2[1024];
    for (size_t k = 0; k < N_SIZES; k++) {
        int64_t n = k_sizes[k];
        fill(x, n);
        fill(y, n);
        fill(w, n);
        float a = frand();
        for (int pass = 0; pass < 2; pass++) {
            float *o = pass ? o2 : o1;
            sd_cpu_force_scalar(pass == 1);
            memcpy(o, y, (size_t)n * sizeof(float));
            sd_axpy_f32(o, a, x, n);
            for (int64_t i = 0; i < n; i++) assert_true(fabsf(o[i] - (y[i] + a * x[i])) <= 1e-5f);
        }
        sd_cpu_force_scalar(false);
        assert_memory_equal(o1, o2, (size_t)n * sizeof(float));
        for (int pass = 0; pass < 2; pass++) {
            float *o = pass ? o2 : o1;
            sd_cpu_force_scalar(pass == 1);
            memcpy(o, y, (size_t)n * sizeof(float));
            sd_add(o, x, n);
            for (int64_t i = 0; i < n; i++) assert_true(o[i] == y[i] + x[i]);
        }
        sd_cpu_force_scalar(false);
        if (n == 0) continue;
        for (int pass = 0; pass < 2; pass++) {
            float *o = pass ? o2 : o1;
            sd_cpu_force_scalar(pass == 1);
            sd_rmsnorm(o, x, w, n, 1e-6f);
            double ss = 0;
            for (int64_t i = 0; i < n; i++) ss += (double)x[i] * x[i];
            double sc = 1.0 / sqrt(ss / (double)n + 1e-6);
            for (int64_t i = 0; i < n; i++) assert_true(fabs(o[i] - x[i] * sc * w[i]) <= 1e-5 * (1 + fabs(x[i] * sc * w[i])));
        }
        sd_cpu_force_scalar(false);
        assert_memory_equal(o1, o2, (size_t)n * sizeof(float));
        memcpy(o1, x, (size_t)n * sizeof(float)); /* in place, no weight */
        sd_rmsnorm(o1, o1, NULL, n, 1e-6f);
        double ss = 0;
        for (int64_t i = 0; i < n; i++) ss += (double)o1[i] * o1[i];
        assert_true(fabs(ss / (double)n - 1.0) < 1e-3);
    }
}

static void test_softmax_swiglu(void **state) {
    (void)state;
    float x[1000], g[1000], u[1000], o[1000];
    fill(x, 1000);
    x[17] = 30.0f;
    float x0[1000];
    memcpy(x0, x, sizeof x);
    sd_softmax(x, 1000);
    double sum = 0, z = 0;
    for (int i = 0; i < 1000; i++) z += exp((double)x0[i] - 30.0);
    for (int i = 0; i < 1000; i++) {
        sum += x[i];
        assert_true(fabs(x[i] - exp((double)x0[i] - 30.0) / z) <= 1e-6);
    }
    assert_true(fabs(sum - 1.0) < 1e-5);
    fill(g, 1000);
    fill(u, 1000);
    sd_swiglu(o, g, u, 1000);
    for (int i = 0; i < 1000; i++) assert_true(fabs(o[i] - g[i] / (1 + exp(-(double)g[i])) * u[i]) <= 1e-6 * 4);
}

/* Inputs that reach every branch of sd_expf: zeros, tiny, the |x| >= 88
 * special cases around each threshold, infinities, nan. */
static const float k_exp_special[] = {0.0f, -0.0f, 0x1p-149f, -0x1p-149f, 1e-30f, -1e-30f, 87.99f, 88.0f, -88.0f,
                                      88.72f, 0x1.62e42ep6f, 0x1.62e430p6f, 89.0f, -103.0f, -0x1.9d1d9ep6f,
                                      -0x1.9d1da0p6f, -103.5f, -0x1.9fe368p6f, -0x1.9fe36ap6f, -104.0f, -1e30f,
                                      1e30f, INFINITY, -INFINITY, NAN};
#define N_EXP_SPECIAL (sizeof k_exp_special / sizeof k_exp_special[0])

static bool same_bits(float a, float b) { return memcmp(&a, &b, sizeof a) == 0; }

/* sd_expf is glibc's expf op for op (ops.h). Where libm is glibc >= 2.28 on
 * an FMA machine (its __expf_fma variant), equal bitwise on a spread of bit
 * patterns over every exponent (every float was checked once, off the suite);
 * elsewhere within glibc's bound (< 1 ulp) of exp in double. */
static void test_expf(void **state) {
    (void)state;
    bool exact = false;
#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 28))
    exact = sd_cpu_avx2();
#endif
    for (uint64_t u = 0; u < (1ull << 32); u += 65521) {
        uint32_t b = (uint32_t)u;
        float x;
        memcpy(&x, &b, sizeof x);
        float got = sd_expf(x), ref = expf(x);
        if (exact && !same_bits(got, ref)) fail_msg("sd_expf(%a) = %a, libm expf %a", x, got, ref);
        if (!exact && isfinite(ref) && ref > 0x1p-126f)
            assert_true(fabs((double)got - exp((double)x)) <= 0x1p-23 * fabs((double)ref));
    }
    for (size_t k = 0; k < N_EXP_SPECIAL; k++) {
        float x = k_exp_special[k], got = sd_expf(x);
        if (exact && !same_bits(got, expf(x))) fail_msg("sd_expf(%a) = %a, libm expf %a", x, got, expf(x));
        assert_true(isnan(x) ? isnan(got) : (got == expf(x) || fabs((double)got - exp((double)x)) <= 0x1p-23 * exp((double)x)));
    }
}

/* softmax, softmax_mq and swiglu: the AVX2 build (8-lane sd_expf, vector
 * max, interleaved sums) equals the scalar one bitwise, on random rows with
 * every special exponent input mixed in, and sd_softmax_mq equals scale-then-
 * sd_softmax row by row for nq = 1..9 ragged rows. */
static void test_softmax_mq_swiglu_bitwise(void **state) {
    (void)state;
    enum { NQ = 9, N = 203 };
    static float base[NQ * N], a[NQ * N], b[NQ * N], avx[NQ * N], g[N], u[N], o1[N], o2[N];
    fill(base, NQ * N);
    for (int i = 0; i < NQ * N; i++) base[i] *= i % 3 ? 40.0f : 1500.0f; /* some x - max below -88 and -104 */
    for (size_t k = 0; k < N_EXP_SPECIAL; k++) {
        if (isnan(k_exp_special[k]) || isinf(k_exp_special[k])) continue; /* rows stay finite (all-nan otherwise) */
        base[(k * 37) % (NQ * N)] = k_exp_special[k] * 0.5f;
    }
    float *rows_a[NQ], *rows_b[NQ];
    int64_t n[NQ];
    for (int nq = 1; nq <= NQ; nq++) {
        for (int j = 0; j < nq; j++) {
            rows_a[j] = a + j * N;
            rows_b[j] = b + j * N;
            n[j] = (int64_t)N - 7 * j - (nq % 3); /* ragged, odd and even lengths */
        }
        for (int scalar = 0; scalar < 2; scalar++) {
            sd_cpu_force_scalar(scalar);
            memcpy(a, base, sizeof a);
            memcpy(b, base, sizeof b);
            sd_softmax_mq(rows_a, n, nq, 0.0883883f);
            for (int j = 0; j < nq; j++) {
                for (int64_t t = 0; t < n[j]; t++) rows_b[j][t] *= 0.0883883f;
                sd_softmax(rows_b[j], n[j]);
            }
            assert_memory_equal(a, b, sizeof a);
            if (scalar == 0) memcpy(avx, a, sizeof a); /* the AVX2 result, for the scalar pass */
            else assert_memory_equal(avx, a, sizeof a);
        }
    }
    fill(g, N);
    fill(u, N);
    for (int i = 0; i < N; i++) g[i] *= 60.0f;
    for (size_t k = 0; k < N_EXP_SPECIAL; k++) {
        g[k * 7] = k_exp_special[k];
        g[k * 7 + 3] = -k_exp_special[k]; /* swiglu takes sd_expf(-g) */
    }
    for (int64_t n1 = 0; n1 <= N; n1 += 29) {
        sd_cpu_force_scalar(false);
        sd_swiglu(o1, g, u, n1);
        sd_cpu_force_scalar(true);
        sd_swiglu(o2, g, u, n1);
        assert_memory_equal(o1, o2, (size_t)n1 * sizeof(float));
    }
    sd_cpu_force_scalar(false);
}

static void test_rope(void **state) {
    (void)state;
    enum { HD = 128 };
    float x[HD], r[HD];
    for (int neox = 0; neox < 2; neox++)
        for (int64_t pos = 0; pos < 300; pos += 37) {
            fill(x, HD);
            memcpy(r, x, sizeof x);
            int n_rot = neox ? HD : 64; /* partial rotation: dims past n_rot are untouched */
            sd_rope(r, n_rot, pos, 10000.0f, 1.0f, neox);
            for (int i = 0; i < n_rot / 2; i++) {
                double th = (double)pos * pow(10000.0, -2.0 * i / n_rot);
                int a = neox ? i : 2 * i, b = neox ? i + n_rot / 2 : 2 * i + 1;
                double wa = x[a] * cos(th) - x[b] * sin(th), wb = x[a] * sin(th) + x[b] * cos(th);
                assert_true(fabs(r[a] - wa) < 2e-3 && fabs(r[b] - wb) < 2e-3);
            }
            for (int i = n_rot; i < HD; i++) assert_true(r[i] == x[i]);
            /* the two-step form (shared sines), in two pair ranges, is bitwise sd_rope */
            float r2[HD], cs[HD];
            memcpy(r2, x, sizeof x);
            int cut = n_rot / 2 - 5;
            sd_rope_cossin(cs, 0, cut, n_rot, pos, 10000.0f, 1.0f, NULL);
            sd_rope_apply(r2, cs, 0, cut, n_rot, neox);
            sd_rope_cossin(cs, cut, n_rot / 2, n_rot, pos, 10000.0f, 1.0f, NULL);
            sd_rope_apply(r2, cs, cut, n_rot / 2, n_rot, neox);
            assert_memory_equal(r2, r, sizeof r);
            /* rotation keeps the norm */
            double n0 = 0, n1 = 0;
            for (int i = 0; i < HD; i++) {
                n0 += (double)x[i] * x[i];
                n1 += (double)r[i] * r[i];
            }
            assert_true(fabs(n0 - n1) < 1e-4 * n0);
        }
}

/* The multi-row attention helpers equal row-by-row sd_dot_f32 / sd_axpy_f32
 * bitwise (several n incl. tails past 8 and 64, rows not multiple of 4),
 * in the build this CPU runs and in the scalar one. */
static void test_rows_helpers(void **state) {
    (void)state;
    enum { LD = 300, ROWS = 11 };
    static float a[LD], b[ROWS * LD], w[ROWS], y1[LD], y2[LD], d1[ROWS], d2[ROWS];
    fill(a, LD);
    fill(b, ROWS * LD);
    fill(w, ROWS);
    static const int64_t ns[] = {1, 8, 77, 128, 200, 291};
    for (int scalar = 0; scalar < 2; scalar++) {
        sd_cpu_force_scalar(scalar);
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
            for (int64_t rows = 0; rows <= ROWS; rows++) {
                int64_t n = ns[k];
                sd_dot_f32_rows(d2, a, b, LD, rows, n);
                for (int64_t r = 0; r < rows; r++) d1[r] = sd_dot_f32(a, b + r * LD, n);
                if (rows > 0) assert_memory_equal(d1, d2, (size_t)rows * sizeof(float));
                fill(y1, LD);
                memcpy(y2, y1, sizeof y1);
                for (int64_t r = 0; r < rows; r++) sd_axpy_f32(y1, w[r], b + r * LD, n);
                sd_axpy_f32_rows(y2, w, b, LD, rows, n);
                assert_memory_equal(y1, y2, sizeof y1);
            }
    }
    sd_cpu_force_scalar(false);
}

/* The multi-query kernels equal the single-query ones bitwise for nq = 1..8
 * (tile remainders of the query blocks), rows around the row tiles (odd
 * counts included), n with and without a partial last vector and past one
 * column block, in the build this CPU runs and in the scalar one. Queries sit
 * at their own odd stride so no kernel can assume a layout. */
static void test_rows_mq(void **state) {
    (void)state;
    enum { LD = 300, ROWS = 37, NQ = 8, QS = 301 };
    static float q[NQ * QS], b[ROWS * LD], w[NQ * ROWS], y1[NQ * LD], y2[NQ * LD], d1[NQ * ROWS], d2[NQ * ROWS];
    fill(q, NQ * QS);
    fill(b, ROWS * LD);
    fill(w, NQ * ROWS);
    float *out[NQ], *yp[NQ];
    const float *qp[NQ], *wp[NQ];
    for (int j = 0; j < NQ; j++) {
        qp[j] = q + j * QS;
        wp[j] = w + j * ROWS;
        out[j] = d2 + j * ROWS;
        yp[j] = y2 + j * LD;
    }
    static const int64_t ns[] = {1, 7, 8, 33, 77, 128, 129, 291};
    static const int64_t rowss[] = {0, 1, 2, 3, 4, 5, 7, 31, 32, 33, 37};
    for (int scalar = 0; scalar < 2; scalar++) {
        sd_cpu_force_scalar(scalar);
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
            for (size_t kr = 0; kr < sizeof rowss / sizeof rowss[0]; kr++)
                for (int nq = 1; nq <= NQ; nq++) {
                    const int64_t n = ns[k], rows = rowss[kr];
                    memset(d1, 0, sizeof d1);
                    memset(d2, 0, sizeof d2);
                    for (int j = 0; j < nq; j++)
                        for (int64_t r = 0; r < rows; r++) d1[j * ROWS + r] = sd_dot_f32(qp[j], b + r * LD, n);
                    sd_dot_f32_rows_mq(out, qp, nq, b, LD, rows, n);
                    assert_memory_equal(d1, d2, sizeof d1);
                    fill(y1, NQ * LD);
                    memcpy(y2, y1, sizeof y1);
                    for (int j = 0; j < nq; j++) sd_axpy_f32_rows(y1 + j * LD, wp[j], b, LD, rows, n);
                    sd_axpy_f32_rows_mq(yp, wp, nq, b, LD, rows, n);
                    assert_memory_equal(y1, y2, sizeof y1); /* also: nothing past n or nq written */
                }
    }
    sd_cpu_force_scalar(false);
}

/* The f16 KV kernels equal the f32 ones run on the widened rows, bitwise, in
 * both builds: halves include subnormals, the largest finite half and both
 * zeros, the shapes those of test_rows_mq. */
static void test_rows_mq_f16(void **state) {
    (void)state;
    enum { LD = 300, ROWS = 37, NQ = 8, QS = 301 };
    static float q[NQ * QS], b[ROWS * LD], w[NQ * ROWS], y1[NQ * LD], y2[NQ * LD], d1[NQ * ROWS], d2[NQ * ROWS];
    static uint16_t h[ROWS * LD];
    fill(q, NQ * QS);
    fill(w, NQ * ROWS);
    static const uint16_t special[] = {0x0000, 0x8000, 0x0001, 0x83FF, 0x03FF, 0x0400, 0x7BFF, 0xFBFF, 0x3C00};
    for (int i = 0; i < ROWS * LD; i++) {
        float f = frand();
        h[i] = i % 29 < 9 ? special[i % 29] : sd_fp32_to_fp16(i % 3 ? f : f * 1e-5f);
        b[i] = sd_fp16_to_fp32(h[i]);
    }
    float *out[NQ], *yp[NQ], *y1p[NQ], *out1[NQ];
    const float *qp[NQ], *wp[NQ];
    for (int j = 0; j < NQ; j++) {
        qp[j] = q + j * QS;
        wp[j] = w + j * ROWS;
        out[j] = d2 + j * ROWS;
        out1[j] = d1 + j * ROWS;
        yp[j] = y2 + j * LD;
        y1p[j] = y1 + j * LD;
    }
    static const int64_t ns[] = {1, 7, 8, 33, 128, 129, 291};
    static const int64_t rowss[] = {0, 1, 2, 3, 4, 5, 31, 32, 33, 37};
    for (int scalar = 0; scalar < 2; scalar++) {
        sd_cpu_force_scalar(scalar);
        for (size_t k = 0; k < sizeof ns / sizeof ns[0]; k++)
            for (size_t kr = 0; kr < sizeof rowss / sizeof rowss[0]; kr++)
                for (int nq = 1; nq <= NQ; nq++) {
                    const int64_t n = ns[k], rows = rowss[kr];
                    memset(d1, 0, sizeof d1);
                    memset(d2, 0, sizeof d2);
                    sd_dot_f32_rows_mq(out1, qp, nq, b, LD, rows, n);
                    sd_dot_f16_rows_mq(out, qp, nq, h, LD, rows, n);
                    assert_memory_equal(d1, d2, sizeof d1);
                    fill(y1, NQ * LD);
                    memcpy(y2, y1, sizeof y1);
                    sd_axpy_f32_rows_mq(y1p, wp, nq, b, LD, rows, n);
                    sd_axpy_f16_rows_mq(yp, wp, nq, h, LD, rows, n);
                    assert_memory_equal(y1, y2, sizeof y1);
                }
    }
    sd_cpu_force_scalar(false);
}

/* The row converters equal the element converters bit for bit in both builds
 * (the AVX2 one is F16C): every half widened; narrowing over every half, the
 * midpoints between neighbours and one f32 ulp either side (ties to even,
 * subnormals, overflow to inf at 65520), infinities and NaNs, at lengths with
 * and without a partial last vector. Nothing past n is written. */
static void test_fp16_rows(void **state) {
    (void)state;
    enum { N = 65536, NS = 4 * 0x7C00 + 16 };
    static uint16_t all[N], h1[NS];
    static float f1[N + 8], src[NS];
    for (int i = 0; i < N; i++) all[i] = (uint16_t)i;
    int ns = 0;
    for (uint32_t m = 0; m < 0x7C00; m++) {
        float v = sd_fp16_to_fp32((uint16_t)m), next = sd_fp16_to_fp32((uint16_t)(m + 1));
        uint32_t u;
        memcpy(&u, &v, sizeof u);
        float lo, hi, mid = (float)(((double)v + (double)next) / 2);
        u -= m > 0;
        memcpy(&lo, &u, sizeof lo);
        u += 1 + (m > 0);
        memcpy(&hi, &u, sizeof hi);
        src[ns++] = m & 1 ? -mid : mid;
        src[ns++] = lo;
        src[ns++] = m & 2 ? -hi : hi;
        src[ns++] = isinf(next) ? 65520.0f : next;
    }
    const float specials[] = {INFINITY, -INFINITY, NAN, -NAN, 1e30f, -1e30f, 65519.99f, 0x1p-25f, 0x1.8p-24f, -0.0f};
    for (size_t i = 0; i < sizeof specials / sizeof specials[0]; i++) src[ns++] = specials[i];
    static const int64_t lens[] = {1, 7, 8, 13};
    for (int scalar = 0; scalar < 2; scalar++) {
        sd_cpu_force_scalar(scalar);
        for (size_t k = 0; k < 4; k++) {
            const int64_t n = ns - lens[k] + 1; /* a tail of 0..7 */
            memset(h1, 0xAB, sizeof h1);
            sd_fp32_to_fp16_row(h1, src, n);
            for (int64_t i = 0; i < n; i++) assert_int_equal(h1[i], sd_fp32_to_fp16(src[i]));
            assert_int_equal(h1[n], 0xABAB);
            const int64_t nh = N - lens[k] + 1;
            memset(f1, 0xAB, sizeof f1);
            sd_fp16_to_fp32_row(f1, all, nh);
            for (int64_t i = 0; i < nh; i++) {
                float e = sd_fp16_to_fp32(all[i]);
                assert_memory_equal(&f1[i], &e, sizeof e);
            }
            uint32_t pad;
            memcpy(&pad, &f1[nh], sizeof pad);
            assert_int_equal(pad, 0xABABABABu);
        }
    }
    sd_cpu_force_scalar(false);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dot),
        cmocka_unit_test(test_axpy_add_rmsnorm),
        cmocka_unit_test(test_softmax_swiglu),
        cmocka_unit_test(test_expf),
        cmocka_unit_test(test_softmax_mq_swiglu_bitwise),
        cmocka_unit_test(test_rope),
        cmocka_unit_test(test_rows_helpers),
        cmocka_unit_test(test_rows_mq),
        cmocka_unit_test(test_rows_mq_f16),
        cmocka_unit_test(test_fp16_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
