/* numerics/gdn: the Gated DeltaNet kernels.
 * - sd_gdn_step follows the delta rule of the fact sheet (decay first, the
 *   prediction from the decayed state): against a float64 evaluation;
 * - sd_gdn_tokens over T tokens is bitwise T calls of sd_gdn_step;
 * - the AVX2 and scalar builds agree bitwise (sd_gdn_tokens, sd_conv_step, sd_silu);
 * - sd_conv_step is the causal depthwise convolution with its window. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "numerics/cpu.h"
#include "numerics/gdn.h"
#include "numerics/ops.h"

static uint64_t rng = 88172645463325252ull;
static float urand(void) { /* [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 4503599627370496.0 - 1.0);
}

static void fill(float *x, size_t n, float scale) {
    for (size_t i = 0; i < n; i++) x[i] = scale * urand();
}

/* Unit-length rows, as the layer gives the kernel. */
static void unit(float *x, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += (double)x[i] * x[i];
    for (int i = 0; i < n; i++) x[i] = (float)(x[i] / sqrt(s));
}

static void test_step_vs_float64(void **state) {
    (void)state;
    const int S = 48;
    float *st = malloc(S * S * sizeof *st), q[48], k[48], v[48], o[48];
    double *ref = malloc(S * S * sizeof *ref), u[48], d[48];
    fill(st, (size_t)S * S, 0.5f);
    for (int i = 0; i < S * S; i++) ref[i] = st[i];
    for (int tok = 0; tok < 5; tok++) {
        fill(q, S, 1), fill(k, S, 1), fill(v, S, 1);
        unit(q, S), unit(k, S);
        const float decay = 0.6f + 0.05f * tok, beta = 0.3f + 0.1f * tok, scale = 1.0f / sqrtf((float)S);
        sd_gdn_step(st, q, k, v, decay, beta, scale, o, S);
        for (int i = 0; i < S * S; i++) ref[i] *= decay;
        for (int j = 0; j < S; j++) {
            u[j] = 0;
            for (int i = 0; i < S; i++) u[j] += ref[i * S + j] * k[i];
            d[j] = (v[j] - u[j]) * beta;
        }
        for (int i = 0; i < S; i++)
            for (int j = 0; j < S; j++) ref[i * S + j] += (double)k[i] * d[j];
        for (int j = 0; j < S; j++) {
            double oj = 0;
            for (int i = 0; i < S; i++) oj += ref[i * S + j] * q[i];
            assert_true(fabs(oj * scale - o[j]) < 1e-5);
        }
    }
    for (int i = 0; i < S * S; i++) assert_true(fabs(ref[i] - st[i]) < 1e-5);
    free(st);
    free(ref);
}

/* T tokens at once == T single steps, and the scalar build == the AVX2 build. */
static void check_tokens(int S, int T) {
    const int ld = 3 * S + 5, ls = 3, ldo = S + 7;
    float *in = malloc((size_t)T * ld * sizeof *in), *gates = malloc((size_t)T * ls * 2 * sizeof *gates);
    float *st0 = malloc((size_t)S * S * sizeof *st0), *st[3], *o[3];
    fill(in, (size_t)T * ld, 1);
    for (int t = 0; t < T; t++) {
        unit(in + t * ld, S), unit(in + t * ld + S, S);
        gates[t * ls] = 0.5f + 0.5f * fabsf(urand());             /* decay */
        gates[T * ls + t * ls] = 0.5f + 0.5f * fabsf(urand());   /* beta */
    }
    fill(st0, (size_t)S * S, 0.5f);
    for (int r = 0; r < 3; r++) {
        st[r] = malloc((size_t)S * S * sizeof *st[r]);
        o[r] = calloc((size_t)T * ldo, sizeof *o[r]);
        memcpy(st[r], st0, (size_t)S * S * sizeof *st0);
    }
    const float scale = 1.0f / sqrtf((float)S);
    for (int r = 0; r < 2; r++) { /* 0: AVX2 (when present), 1: scalar */
        sd_cpu_force_scalar(r == 1);
        sd_gdn_tokens(st[r], S, T, in, in + S, in + 2 * S, ld, gates, gates + T * ls, ls, scale, o[r], ldo);
    }
    sd_cpu_force_scalar(false);
    for (int t = 0; t < T; t++)
        sd_gdn_step(st[2], in + t * ld, in + t * ld + S, in + t * ld + 2 * S, gates[t * ls], gates[T * ls + t * ls],
                    scale, o[2] + t * ldo, S);
    for (int r = 1; r < 3; r++) {
        assert_memory_equal(st[0], st[r], (size_t)S * S * sizeof(float));
        assert_memory_equal(o[0], o[r], (size_t)T * ldo * sizeof(float));
    }
    for (int r = 0; r < 3; r++) free(st[r]), free(o[r]);
    free(in), free(gates), free(st0);
}

static void test_tokens_bitwise(void **state) {
    (void)state;
    const int sizes[] = {8, 24, 64, 128, 40, 7};
    for (size_t i = 0; i < sizeof sizes / sizeof *sizes; i++)
        for (int T = 1; T <= 5; T += 2) check_tokens(sizes[i], T);
}

static void test_conv(void **state) {
    (void)state;
    const int n = 37, ld = 40, T = 6;
    for (int K = 1; K <= 5; K++) {
        float w[5 * 40], win0[4 * 40], win[2][4 * 40], x[6][40], y[2][6][40];
        fill(w, sizeof w / sizeof *w, 1), fill(win0, sizeof win0 / sizeof *win0, 1), fill(&x[0][0], 6 * 40, 1);
        for (int r = 0; r < 2; r++) {
            memcpy(win[r], win0, sizeof win0);
            sd_cpu_force_scalar(r == 1);
            for (int t = 0; t < T; t++) sd_conv_step(y[r][t], win[r], w, x[t], K, ld, n);
        }
        sd_cpu_force_scalar(false);
        for (int t = 0; t < T; t++) assert_memory_equal(y[0][t], y[1][t], n * sizeof(float));
        assert_memory_equal(win[0], win[1], sizeof win0);
        /* y(t) = sum_j w[j] u(t - K + 1 + j), u = the old window then the inputs */
        for (int t = 0; t < T; t++)
            for (int c = 0; c < n; c++) {
                double s = 0;
                for (int j = 0; j < K; j++) {
                    int p = t - K + 1 + j; /* < 0: from the starting window (K - 1 rows) */
                    s += (double)w[j * ld + c] * (p < 0 ? win0[(K - 1 + p) * ld + c] : x[p][c]);
                }
                assert_true(fabs(s - y[0][t][c]) < 1e-5);
            }
        for (int r = 0; K > 1 && r < K - 1; r++) /* the window holds the last K - 1 inputs */
            assert_memory_equal(&win[0][r * ld], x[T - (K - 1) + r], n * sizeof(float));
    }
}

static void test_silu(void **state) {
    (void)state;
    float x[67], y[2][67];
    fill(x, 67, 30);
    x[3] = -INFINITY, x[4] = INFINITY, x[5] = 0;
    for (int r = 0; r < 2; r++) {
        sd_cpu_force_scalar(r == 1);
        sd_silu(y[r], x, 67);
    }
    sd_cpu_force_scalar(false);
    assert_memory_equal(y[0], y[1], sizeof y[0]);
    for (int i = 0; i < 67; i++)
        if (isfinite(x[i])) assert_true(fabs(y[0][i] - x[i] / (1 + exp(-(double)x[i]))) < 1e-5 * (1 + fabs(x[i])));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step_vs_float64),
        cmocka_unit_test(test_tokens_bitwise),
        cmocka_unit_test(test_conv),
        cmocka_unit_test(test_silu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
