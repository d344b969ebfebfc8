/* numerics/quant_k: K-quant super-blocks. Blocks packed here from the layout
 * description in quant_blocks.h (a second, independent reading of
 * ggml-common.h) dequantize to the expected values; quantize -> dequantize
 * round trips stay within measured RMSE bounds; scaling the input by a power
 * of two scales the result exactly; edge cases behave. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "numerics/quant.h"

static uint64_t rng_state;
static uint32_t rng_u32(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}
static float rng_uniform(void) {
    return (float)(rng_u32() >> 8) * 0x1p-24f;
}
static float rng_gauss(void) {
    float u = rng_uniform() + 0x1p-25f, v = rng_uniform();
    return sqrtf(-2.f * logf(u)) * cosf(6.2831853f * v);
}

enum { GEN_GAUSS, GEN_UNIFORM, GEN_OUTLIER, GEN_NEGATIVE, GEN_POSITIVE, GEN_N };
static const char *GEN_NAME[GEN_N] = {"gauss", "uniform", "outlier", "negative", "positive"};
static void fill_row(float *x, int n, int gen, float scale) {
    for (int i = 0; i < n; i++) {
        float v = gen == GEN_UNIFORM ? 2 * rng_uniform() - 1 : rng_gauss();
        if (gen == GEN_OUTLIER && rng_u32() % 97 == 0)
            v *= 10;
        if (gen == GEN_NEGATIVE)
            v = -fabsf(v) - 0.25f;
        if (gen == GEN_POSITIVE)
            v = fabsf(v) + 3.0f;
        x[i] = v * scale;
    }
}

/* ---- packers written from the layout description ---- */

/* 6-bit scale/min packing of Q4_K / Q5_K: sub-blocks 0..3 in the low 6 bits
 * of bytes j / j+4; 4..7 split into byte j+4 (low nibbles) and the top two
 * bits of bytes j-4 / j. */
static void pack_k4_scales(const uint8_t sc[8], const uint8_t m[8], uint8_t out[12]) {
    memset(out, 0, 12);
    for (int j = 0; j < 4; j++) {
        out[j] = (uint8_t)(sc[j] | ((sc[j + 4] >> 4) << 6));
        out[j + 4] = (uint8_t)(m[j] | ((m[j + 4] >> 4) << 6));
        out[j + 8] = (uint8_t)((sc[j + 4] & 15) | ((m[j + 4] & 15) << 4));
    }
}

static void test_scale_min_k4_all(void **state) {
    (void)state;
    rng_state = 3;
    for (int trial = 0; trial < 2000; trial++) {
        uint8_t sc[8], m[8], packed[12];
        for (int j = 0; j < 8; j++) {
            sc[j] = (uint8_t)(rng_u32() % 64);
            m[j] = (uint8_t)(rng_u32() % 64);
        }
        pack_k4_scales(sc, m, packed);
        for (int j = 0; j < 8; j++) {
            uint8_t a, b;
            sd_get_scale_min_k4(j, packed, &a, &b);
            assert_int_equal(a, sc[j]);
            assert_int_equal(b, m[j]);
        }
    }
}

/* Element e of a Q4_K/Q5_K block sits in 32-byte chunk e / 64, byte e % 32,
 * high nibble when (e % 64) >= 32; its fifth bit (Q5_K) is bit
 * 2 * (e / 64) + (e % 64) / 32 of qh[e % 32]. */
static void test_q4_K_q5_K_hand_built(void **state) {
    (void)state;
    const uint8_t sc[8] = {1, 17, 33, 63, 5, 20, 47, 62};
    const uint8_t mn[8] = {63, 2, 16, 31, 48, 0, 9, 40};
    int q[256];
    for (int e = 0; e < 256; e++)
        q[e] = (e * 5 + 1 + e / 7) % 32;
    block_q4_K b4;
    block_q5_K b5;
    memset(&b4, 0, sizeof b4);
    memset(&b5, 0, sizeof b5);
    b4.d = b5.d = sd_fp32_to_fp16(0.5f);
    b4.dmin = b5.dmin = sd_fp32_to_fp16(0.25f);
    pack_k4_scales(sc, mn, b4.scales);
    pack_k4_scales(sc, mn, b5.scales);
    for (int e = 0; e < 256; e++) {
        int byte = 32 * (e / 64) + e % 32, high = (e % 64) >= 32;
        b4.qs[byte] |= (uint8_t)((q[e] & 15) << (4 * high));
        b5.qs[byte] |= (uint8_t)((q[e] & 15) << (4 * high));
        if (q[e] & 16)
            b5.qh[e % 32] |= (uint8_t)(1u << (2 * (e / 64) + high));
    }
    float y[256];
    sd_dequantize_row(GGML_TYPE_Q4_K, &b4, y, 256);
    for (int e = 0; e < 256; e++)
        assert_true(y[e] == 0.5f * sc[e / 32] * (q[e] & 15) - 0.25f * mn[e / 32]);
    sd_dequantize_row(GGML_TYPE_Q5_K, &b5, y, 256);
    for (int e = 0; e < 256; e++)
        assert_true(y[e] == 0.5f * sc[e / 32] * q[e] - 0.25f * mn[e / 32]);
}

/* Q6_K element e (r = e % 128 in half h = e / 128): low nibble in
 * ql[64h + r % 64] (high nibble when r >= 64), high 2 bits at bit
 * 2 * (r / 32) of qh[32h + r % 32]; scale int8 scales[e / 16]. */
static void test_q6_K_hand_built(void **state) {
    (void)state;
    block_q6_K b;
    memset(&b, 0, sizeof b);
    b.d = sd_fp32_to_fp16(0.125f);
    for (int j = 0; j < 16; j++)
        b.scales[j] = (int8_t)(j % 2 ? -128 + 17 * j : 127 - 9 * j);
    int q[256];
    for (int e = 0; e < 256; e++) {
        q[e] = (e * 11 + 5) % 64;
        int h = e / 128, r = e % 128;
        b.ql[64 * h + r % 64] |= (uint8_t)((q[e] & 15) << (r >= 64 ? 4 : 0));
        b.qh[32 * h + r % 32] |= (uint8_t)((q[e] >> 4) << (2 * (r / 32)));
    }
    float y[256];
    sd_dequantize_row(GGML_TYPE_Q6_K, &b, y, 256);
    for (int e = 0; e < 256; e++)
        assert_true(y[e] == 0.125f * b.scales[e / 16] * (q[e] - 32));
}

/* Q2_K element e (r = e % 128 in half h): 2 bits at bit 2 * (r / 32) of
 * qs[32h + r % 32]; scales[e / 16] = scale | min << 4. */
static void test_q2_K_hand_built(void **state) {
    (void)state;
    block_q2_K b;
    memset(&b, 0, sizeof b);
    b.d = sd_fp32_to_fp16(0.5f);
    b.dmin = sd_fp32_to_fp16(1.0f);
    for (int j = 0; j < 16; j++)
        b.scales[j] = (uint8_t)((15 - j) | ((j * 7 % 16) << 4));
    int q[256];
    for (int e = 0; e < 256; e++) {
        q[e] = (e * 3 + e / 5) % 4;
        int h = e / 128, r = e % 128;
        b.qs[32 * h + r % 32] |= (uint8_t)(q[e] << (2 * (r / 32)));
    }
    float y[256];
    sd_dequantize_row(GGML_TYPE_Q2_K, &b, y, 256);
    for (int e = 0; e < 256; e++) {
        int s = b.scales[e / 16] & 15, m = b.scales[e / 16] >> 4;
        assert_true(y[e] == 0.5f * s * q[e] - 1.0f * m);
    }
}

/* Q3_K: low 2 bits as Q2_K, bit 2 at bit e / 32 of hmask[e % 32], value
 * (q - 4); 6-bit scales s[j] (value s - 32): low 4 bits in byte j % 8 (high
 * nibble for j >= 8), top 2 bits at bit 2 * (j / 4) of byte 8 + j % 4. */
static void test_q3_K_hand_built(void **state) {
    (void)state;
    block_q3_K b;
    memset(&b, 0, sizeof b);
    b.d = sd_fp32_to_fp16(0.25f);
    uint8_t s[16];
    for (int j = 0; j < 16; j++) {
        s[j] = (uint8_t)((j * 13 + 7) % 64);
        b.scales[j % 8] |= (uint8_t)((s[j] & 15) << (j >= 8 ? 4 : 0));
        b.scales[8 + j % 4] |= (uint8_t)((s[j] >> 4) << (2 * (j / 4)));
    }
    int q[256];
    for (int e = 0; e < 256; e++) {
        q[e] = (e * 5 + e / 9) % 8;
        int h = e / 128, r = e % 128;
        b.qs[32 * h + r % 32] |= (uint8_t)((q[e] & 3) << (2 * (r / 32)));
        b.hmask[e % 32] |= (uint8_t)((q[e] >> 2) << (e / 32));
    }
    float y[256];
    sd_dequantize_row(GGML_TYPE_Q3_K, &b, y, 256);
    for (int e = 0; e < 256; e++)
        assert_true(y[e] == 0.25f * (s[e / 16] - 32) * (q[e] - 4));
}

static void test_q8_K(void **state) {
    (void)state;
    rng_state = 11;
    float x[512], y[512];
    block_q8_K b[2];
    fill_row(x, 512, GEN_OUTLIER, 2.5f);
    sd_quantize_row(GGML_TYPE_Q8_K, x, b, 512);
    sd_dequantize_row(GGML_TYPE_Q8_K, b, y, 512);
    for (int i = 0; i < 2; i++) {
        float amax = 0;
        int at = 0;
        for (int j = 0; j < 256; j++)
            if (fabsf(x[256 * i + j]) > amax) {
                amax = fabsf(x[256 * i + j]);
                at = j;
            }
        /* the largest element maps to -127 (d takes the opposite sign) */
        assert_int_equal(b[i].qs[at], -127);
        assert_true(fabsf(fabsf(b[i].d) - amax / 127) <= amax * 1e-6f);
        for (int g = 0; g < 16; g++) {
            int sum = 0;
            for (int l = 0; l < 16; l++)
                sum += b[i].qs[16 * g + l];
            assert_int_equal(b[i].bsums[g], sum);
        }
        for (int j = 0; j < 256; j++) {
            assert_true(b[i].qs[j] >= -127);
            assert_true(y[256 * i + j] == b[i].d * b[i].qs[j]);
            assert_true(fabsf(y[256 * i + j] - x[256 * i + j]) <= fabsf(b[i].d) * 0.5001f);
        }
    }
}

/* ---- round trips ---- */

typedef struct rt_case {
    uint32_t type;
    const char *name;
    float max_rel_rmse;   /* bound on RMSE / RMS, every generator */
    float max_err_blockmax; /* bound on max |err| / max |x| of its super-block */
} rt_case;

static double rel_rmse(uint32_t t, int gen, float scale, double *max_rel_err) {
    enum { N = 4096 };
    static float x[N], y[N];
    static uint8_t q[N * 2];
    fill_row(x, N, gen, scale);
    sd_quantize_row(t, x, q, N);
    sd_dequantize_row(t, q, y, N);
    double e2 = 0, x2 = 0;
    *max_rel_err = 0;
    for (int b = 0; b < N / 256; b++) {
        float amax = 0;
        for (int j = 0; j < 256; j++)
            amax = fmaxf(amax, fabsf(x[256 * b + j]));
        for (int j = 0; j < 256; j++) {
            double e = fabs((double)y[256 * b + j] - x[256 * b + j]);
            e2 += e * e;
            x2 += (double)x[256 * b + j] * x[256 * b + j];
            if (e / amax > *max_rel_err)
                *max_rel_err = e / amax;
        }
    }
    return sqrt(e2 / x2);
}

/* RMSE bounds are about 1.3x the worst RMSE of the generators below (the
 * test prints it; outliers dominate). Q8_K's per-element bound is the theoretical
 * d / 2 = max / 254 (its d is a float, not fp16). */
static void test_round_trip_k(void **state) {
    (void)state;
    const rt_case cases[] = {
        {GGML_TYPE_Q2_K, "q2_K", 0.42f, 0.5f},
        {GGML_TYPE_Q3_K, "q3_K", 0.26f, 0.32f},
        {GGML_TYPE_Q4_K, "q4_K", 0.12f, 0.12f},
        {GGML_TYPE_Q5_K, "q5_K", 0.06f, 0.065f},
        /* Q6_K's d = max / 4096 is an fp16 subnormal for max < 0.25: at x0.02
         * the worst element error rises from 1.6% to 2.3% of the block max */
        {GGML_TYPE_Q6_K, "q6_K", 0.032f, 0.03f},
        {GGML_TYPE_Q8_K, "q8_K", 0.028f, 0.5f / 127 * 1.0001f},
    };
    /* 0.02 is a typical weight std. Much smaller data (max |x| ~ 1e-3) pushes
     * the fp16 super-scale d = max_scale / 63 into fp16 subnormals and the
     * error grows (Q5_K uniform at 1e-3: max err 8.6% of the block max), the
     * same in llama.cpp: the format's limit, not this code's. */
    const float scales[] = {1.f, 0.02f, 50.f};
    rng_state = 5;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        for (int gen = 0; gen < GEN_N; gen++) {
            for (size_t s = 0; s < sizeof scales / sizeof scales[0]; s++) {
                double max_rel;
                double r = rel_rmse(cases[c].type, gen, scales[s], &max_rel);
                print_message("%s %-8s x%-5g RMSE/RMS %.5f  max|err|/blockmax %.5f\n",
                              cases[c].name, GEN_NAME[gen], (double)scales[s], r, max_rel);
                if (!(r <= cases[c].max_rel_rmse && max_rel <= cases[c].max_err_blockmax))
                    fail_msg("%s %s scale %g: RMSE/RMS %.5f (bound %.5f), max err/blockmax "
                             "%.5f (bound %.5f)", cases[c].name, GEN_NAME[gen],
                             (double)scales[s], r, (double)cases[c].max_rel_rmse, max_rel,
                             (double)cases[c].max_err_blockmax);
            }
        }
    }
}

/* The least-squares search must beat a plain min/max grid: compare Q4_K
 * with Q4_1 (the same 4-bit levels with an unsearched fp16 scale and min per
 * 32 elements), despite Q4_K's scales being quantized to 6 bits. Not on
 * all-positive data: Q4_K's offset is -dmin * m with m >= 0, so it cannot
 * shift the grid up and loses to Q4_1 there (about twice Q4_1's RMSE). */
static void test_q4_K_search_beats_minmax(void **state) {
    (void)state;
    rng_state = 9;
    for (int gen = 0; gen < GEN_POSITIVE; gen++) {
        double m;
        uint64_t saved = rng_state;
        double rk = rel_rmse(GGML_TYPE_Q4_K, gen, 1.f, &m);
        rng_state = saved;
        double r1 = rel_rmse(GGML_TYPE_Q4_1, gen, 1.f, &m);
        print_message("%-8s q4_K %.5f  q4_1 %.5f\n", GEN_NAME[gen], rk, r1);
        assert_true(rk < r1);
    }
}

/* Every float operation of the quantizers commutes with scaling by a power
 * of two (while fp16 scales stay normal: Q6_K's d is ~1e-4 for unit data,
 * so k >= -1), so the dequantized row of 2^k x is
 * exactly 2^k times that of x. Catches order-dependent or magnitude-dependent
 * shortcuts. */
static void test_power_of_two_invariance(void **state) {
    (void)state;
    const uint32_t types[] = {GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1,
                              GGML_TYPE_Q8_0, GGML_TYPE_Q8_1, GGML_TYPE_Q2_K, GGML_TYPE_Q3_K,
                              GGML_TYPE_Q4_K, GGML_TYPE_Q5_K,
                              GGML_TYPE_Q6_K, GGML_TYPE_Q8_K};
    enum { N = 512 };
    static float x[N], xs[N], y[N], ys[N];
    static uint8_t q[N * 2];
    rng_state = 13;
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        for (int gen = 0; gen < GEN_N; gen++) {
            fill_row(x, N, gen, 1.f);
            sd_quantize_row(types[t], x, q, N);
            sd_dequantize_row(types[t], q, y, N);
            for (int k = -1; k <= 4; k += 5) {
                for (int i = 0; i < N; i++)
                    xs[i] = ldexpf(x[i], k);
                sd_quantize_row(types[t], xs, q, N);
                sd_dequantize_row(types[t], q, ys, N);
                for (int i = 0; i < N; i++)
                    if (ys[i] != ldexpf(y[i], k))
                        fail_msg("type %u gen %s k %d elem %d: %.9g vs %.9g", types[t],
                                 GEN_NAME[gen], k, i, (double)ys[i], (double)ldexpf(y[i], k));
            }
        }
    }
}

/* ---- edge cases ---- */

static void test_edge_cases_k(void **state) {
    (void)state;
    const uint32_t types[] = {GGML_TYPE_Q2_K, GGML_TYPE_Q3_K, GGML_TYPE_Q4_K,
                              GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, GGML_TYPE_Q8_K};
    static float x[512], y[512];
    static uint8_t q[1024];
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        uint32_t ty = types[t];
        memset(x, 0, sizeof x);
        sd_quantize_row(ty, x, q, 512);
        sd_dequantize_row(ty, q, y, 512);
        for (int j = 0; j < 512; j++)
            assert_true(y[j] == 0.f);
        /* constant blocks, positive and negative */
        for (int j = 0; j < 512; j++)
            x[j] = j < 256 ? 0.75f : -3.5f;
        sd_quantize_row(ty, x, q, 512);
        sd_dequantize_row(ty, q, y, 512);
        for (int j = 0; j < 512; j++)
            if (!(fabsf(y[j] - x[j]) <= fabsf(x[j]) * 0x1p-8f))
                fail_msg("type %u constant: elem %d %.9g vs %.9g", ty, j, (double)y[j],
                         (double)x[j]);
        /* a zero sub-block next to a large one, and a lone outlier */
        for (int j = 0; j < 512; j++)
            x[j] = j < 32 ? 0.f : (j % 7 - 3) * 0.01f;
        x[300] = 200.f;
        sd_quantize_row(ty, x, q, 512);
        sd_dequantize_row(ty, q, y, 512);
        for (int j = 0; j < 32; j++)
            assert_true(fabsf(y[j]) <= 0.05f);
        assert_true(fabsf(y[300] - 200.f) <= 200.f * 0.02f);
        /* tiny magnitudes: below fp16 range the scales flush to zero, so the
         * result is 0 or close to the input, never larger than it */
        for (int j = 0; j < 512; j++)
            x[j] = (j % 3 - 1) * 1e-9f;
        sd_quantize_row(ty, x, q, 512);
        sd_dequantize_row(ty, q, y, 512);
        for (int j = 0; j < 512; j++)
            assert_true(fabsf(y[j] - x[j]) <= 1e-9f * 1.01f);
        /* non-finite input: no undefined behaviour (sanitizer build) */
        x[5] = NAN;
        x[260] = -INFINITY;
        sd_quantize_row(ty, x, q, 512);
        sd_dequantize_row(ty, q, y, 512);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_scale_min_k4_all),
        cmocka_unit_test(test_q4_K_q5_K_hand_built),
        cmocka_unit_test(test_q6_K_hand_built),
        cmocka_unit_test(test_q2_K_hand_built),
        cmocka_unit_test(test_q3_K_hand_built),
        cmocka_unit_test(test_q8_K),
        cmocka_unit_test(test_round_trip_k),
        cmocka_unit_test(test_q4_K_search_beats_minmax),
        cmocka_unit_test(test_power_of_two_invariance),
        cmocka_unit_test(test_edge_cases_k),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
