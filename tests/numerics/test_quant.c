/* numerics/quant: the 32-element block types (Q4_0, Q4_1, Q5_0, Q5_1, Q8_0,
 * Q8_1), F16/BF16 rows and the type dispatch. Hand-built blocks dequantize to
 * values derived from the layout description; random rows round-trip within
 * per-element bounds derived from each quantizer's rounding rule (including
 * the fp16 rounding of the stored scale); edge cases stay finite and exact
 * where they should. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <float.h>
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
static float rng_uniform(void) { /* [0, 1) */
    return (float)(rng_u32() >> 8) * 0x1p-24f;
}
static float rng_gauss(void) {
    float u = rng_uniform() + 0x1p-25f, v = rng_uniform();
    return sqrtf(-2.f * logf(u)) * cosf(6.2831853f * v);
}

/* Row generators: the shapes real weights and activations take. */
enum { GEN_GAUSS, GEN_UNIFORM, GEN_OUTLIER, GEN_NEGATIVE, GEN_POSITIVE, GEN_N };
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

static float fp16_round(float f) {
    return sd_fp16_to_fp32(sd_fp32_to_fp16(f));
}

/* ---- dispatch ---- */

static void test_type_table(void **state) {
    (void)state;
    struct { uint32_t t, bs, ts; bool q; } want[] = {
        {GGML_TYPE_F32, 1, 4, true},     {GGML_TYPE_F16, 1, 2, true},
        {GGML_TYPE_BF16, 1, 2, true},    {GGML_TYPE_Q4_0, 32, 18, true},
        {GGML_TYPE_Q4_1, 32, 20, true},  {GGML_TYPE_Q5_0, 32, 22, true},
        {GGML_TYPE_Q5_1, 32, 24, true},  {GGML_TYPE_Q8_0, 32, 34, true},
        {GGML_TYPE_Q8_1, 32, 36, true},  {GGML_TYPE_Q2_K, 256, 84, true},
        {GGML_TYPE_Q3_K, 256, 110, true}, {GGML_TYPE_Q4_K, 256, 144, true},
        {GGML_TYPE_Q5_K, 256, 176, true}, {GGML_TYPE_Q6_K, 256, 210, true},
        {GGML_TYPE_Q8_K, 256, 292, true},
        /* read-only: the IQ1/IQ2/IQ3 grid types and MXFP4 */
        {GGML_TYPE_IQ1_S, 256, 50, false}, {GGML_TYPE_IQ1_M, 256, 56, false},
        {GGML_TYPE_IQ2_XXS, 256, 66, false}, {GGML_TYPE_IQ2_XS, 256, 74, false},
        {GGML_TYPE_IQ2_S, 256, 82, false}, {GGML_TYPE_IQ3_XXS, 256, 98, false},
        {GGML_TYPE_IQ3_S, 256, 110, false}, {GGML_TYPE_MXFP4, 32, 17, false},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        assert_true(sd_type_supported(want[i].t));
        assert_int_equal(sd_type_quantizable(want[i].t), want[i].q);
        assert_int_equal(sd_quant_block_size(want[i].t), want[i].bs);
        assert_int_equal(sd_quant_type_size(want[i].t), want[i].ts);
        /* the format layer's table agrees */
        const ggml_type_info *gi = ggml_type_get(want[i].t);
        assert_true(gi->known);
        assert_int_equal(gi->block_size, want[i].bs);
        assert_int_equal(gi->type_size, want[i].ts);
    }
    uint32_t unsupported[] = {GGML_TYPE_TQ1_0, GGML_TYPE_TQ2_0, GGML_TYPE_I8, GGML_TYPE_I32, GGML_TYPE_F64, 4, 5, 40, 1000};
    for (size_t i = 0; i < sizeof unsupported / sizeof unsupported[0]; i++) {
        assert_false(sd_type_supported(unsupported[i]));
        assert_false(sd_type_quantizable(unsupported[i]));
        assert_int_equal(sd_quant_block_size(unsupported[i]), 0);
    }
    /* unsupported type: dequantize zero-fills, quantize writes nothing */
    float out[4] = {1, 2, 3, 4};
    uint8_t raw[128];
    memset(raw, 0xAB, sizeof raw);
    sd_dequantize_row(GGML_TYPE_I32, raw, out, 4);
    for (int i = 0; i < 4; i++)
        assert_true(out[i] == 0.f);
    sd_quantize_row(GGML_TYPE_IQ2_XXS, out, raw, 256);
    assert_int_equal(raw[0], 0xAB);
}

static void test_float_rows(void **state) {
    (void)state;
    float x[64], y[64];
    uint16_t h[64];
    rng_state = 1;
    fill_row(x, 64, GEN_OUTLIER, 3.f);
    x[5] = 70000.f;  /* past the half range: inf in f16, finite in bf16 */
    x[6] = 1e-30f;   /* underflows in f16, kept in bf16 (subnormal not flushed) */
    sd_quantize_row(GGML_TYPE_F32, x, y, 64);
    assert_memory_equal(x, y, sizeof x);
    sd_quantize_row(GGML_TYPE_F16, x, h, 64);
    sd_dequantize_row(GGML_TYPE_F16, h, y, 64);
    for (int i = 0; i < 64; i++)
        assert_true(y[i] == fp16_round(x[i]));
    assert_true(isinf(y[5]) && y[6] == 0.f);
    sd_quantize_row(GGML_TYPE_BF16, x, h, 64);
    sd_dequantize_row(GGML_TYPE_BF16, h, y, 64);
    for (int i = 0; i < 64; i++)
        assert_true(fabsf(y[i] - x[i]) <= fabsf(x[i]) * 0x1p-8f);
    assert_true(y[6] > 0.f);
}

/* ---- hand-built blocks ---- */

static void test_q4_0_q4_1_hand_built(void **state) {
    (void)state;
    block_q4_0 b0;
    b0.d = sd_fp32_to_fp16(0.5f);
    for (int j = 0; j < 16; j++) /* element j: q = j, element j + 16: q = 15 - j */
        b0.qs[j] = (uint8_t)(j | ((15 - j) << 4));
    float y[32];
    sd_dequantize_row(GGML_TYPE_Q4_0, &b0, y, 32);
    for (int j = 0; j < 16; j++) {
        assert_true(y[j] == (j - 8) * 0.5f);
        assert_true(y[j + 16] == (15 - j - 8) * 0.5f);
    }
    block_q4_1 b1;
    b1.d = sd_fp32_to_fp16(0.25f);
    b1.m = sd_fp32_to_fp16(-1.5f);
    for (int j = 0; j < 16; j++)
        b1.qs[j] = (uint8_t)((j % 4) | ((j / 2) << 4));
    sd_dequantize_row(GGML_TYPE_Q4_1, &b1, y, 32);
    for (int j = 0; j < 16; j++) {
        assert_true(y[j] == (j % 4) * 0.25f - 1.5f);
        assert_true(y[j + 16] == (j / 2) * 0.25f - 1.5f);
    }
}

static void test_q5_hand_built(void **state) {
    (void)state;
    /* element e has value v(e) in 0..31; bit 4 goes to bit e of qh */
    int v[32];
    for (int e = 0; e < 32; e++)
        v[e] = (e * 7 + 3) % 32;
    block_q5_0 b0;
    block_q5_1 b1;
    b0.d = sd_fp32_to_fp16(2.0f);
    b1.d = sd_fp32_to_fp16(0.125f);
    b1.m = sd_fp32_to_fp16(10.0f);
    uint32_t qh = 0;
    for (int j = 0; j < 16; j++) {
        uint8_t q = (uint8_t)((v[j] & 15) | ((v[j + 16] & 15) << 4));
        b0.qs[j] = b1.qs[j] = q;
    }
    for (int e = 0; e < 32; e++)
        qh |= (uint32_t)(v[e] >> 4) << e;
    for (int k = 0; k < 4; k++)
        b0.qh[k] = b1.qh[k] = (uint8_t)(qh >> (8 * k)); /* little-endian u32 */
    float y[32];
    sd_dequantize_row(GGML_TYPE_Q5_0, &b0, y, 32);
    for (int e = 0; e < 32; e++)
        assert_true(y[e] == (v[e] - 16) * 2.0f);
    sd_dequantize_row(GGML_TYPE_Q5_1, &b1, y, 32);
    for (int e = 0; e < 32; e++)
        assert_true(y[e] == v[e] * 0.125f + 10.0f);
}

static void test_q8_hand_built(void **state) {
    (void)state;
    block_q8_0 b0[2];
    block_q8_1 b1;
    b0[0].d = sd_fp32_to_fp16(0.0625f);
    b0[1].d = sd_fp32_to_fp16(-3.0f);
    b1.d = sd_fp32_to_fp16(4.0f);
    for (int j = 0; j < 32; j++) {
        b0[0].qs[j] = (int8_t)(j * 8 - 128);
        b0[1].qs[j] = (int8_t)(127 - j);
        b1.qs[j] = (int8_t)(j - 16);
    }
    float y[64];
    sd_dequantize_row(GGML_TYPE_Q8_0, b0, y, 64);
    for (int j = 0; j < 32; j++) {
        assert_true(y[j] == (j * 8 - 128) * 0.0625f);
        assert_true(y[32 + j] == (127 - j) * -3.0f);
    }
    sd_dequantize_row(GGML_TYPE_Q8_1, &b1, y, 32);
    for (int j = 0; j < 32; j++)
        assert_true(y[j] == (j - 16) * 4.0f);
}

/* ---- round trips ---- */

/* Per-element error bounds of the reference quantizers. d is the f32 scale
 * the quantizer computed (recomputed here from the definition), dq the fp16
 * value stored; |levels| * |d - dq| covers the scale's rounding. A small
 * relative slack covers float rounding of x * (1/d). */
static float slack(float a) {
    return a * 1e-6f + FLT_MIN;
}

static void bounds_symmetric(const float *x, float *bound, int nlev_neg, int nlev_pos,
                             int code_offset) {
    /* Q4_0 (8, 7) and Q5_0 (16, 15): d = max / -nlev_neg; an element past
     * +nlev_pos levels (the opposite sign of the max) is clamped there. */
    float amax = 0, max = 0;
    for (int j = 0; j < 32; j++)
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    float d = max / -nlev_neg, dq = fp16_round(d), id = d ? 1.f / d : 0.f;
    for (int j = 0; j < 32; j++) {
        float t = x[j] * id; /* ideal level, before the offset */
        float e = fabsf(d) / 2;
        if (t + code_offset + 0.5f >= nlev_pos + code_offset + 1)
            e = fabsf(x[j] - nlev_pos * d);
        bound[j] = e + nlev_neg * fabsf(d - dq) + slack(amax);
    }
}

static void bounds_affine(const float *x, float *bound, int nmax) {
    float min = FLT_MAX, max = -FLT_MAX;
    for (int j = 0; j < 32; j++) {
        min = fminf(min, x[j]);
        max = fmaxf(max, x[j]);
    }
    float d = (max - min) / nmax;
    float e = d / 2 + nmax * fabsf(d - fp16_round(d)) + fabsf(min - fp16_round(min));
    for (int j = 0; j < 32; j++)
        bound[j] = e + slack(fmaxf(fabsf(min), fabsf(max)));
}

static void bounds_q8(const float *x, float *bound) {
    float amax = 0;
    for (int j = 0; j < 32; j++)
        amax = fmaxf(amax, fabsf(x[j]));
    float d = amax / 127;
    for (int j = 0; j < 32; j++)
        bound[j] = d / 2 + 127 * fabsf(d - fp16_round(d)) + slack(amax);
}

static void element_bounds(uint32_t t, const float *x, float *bound) {
    switch (t) {
    case GGML_TYPE_Q4_0: bounds_symmetric(x, bound, 8, 7, 8); break;
    case GGML_TYPE_Q5_0: bounds_symmetric(x, bound, 16, 15, 16); break;
    case GGML_TYPE_Q4_1: bounds_affine(x, bound, 15); break;
    case GGML_TYPE_Q5_1: bounds_affine(x, bound, 31); break;
    default: bounds_q8(x, bound); break;
    }
}

/* Quantizes rows of every generator and scale, checks every element against
 * its bound; returns the largest error relative to the block's d-based bound
 * and prints RMSE / RMS for the report. */
static void round_trip_type(uint32_t t) {
    enum { N = 1024 };
    static float x[N], y[N], bound[32];
    static uint8_t q[N * 2];
    /* fp16 scales and mins bound the usable range: 1e-6 underflows the scale
     * (the bound then grows with |d - fp16(d)|); 3e2 with outliers is near the
     * fp16 limit of the Q4_1/Q5_1 min. */
    const float scales[] = {1.f, 1e-2f, 1e-6f, 3e2f};
    double err2 = 0, x2 = 0, worst = 0;
    for (int gen = 0; gen < GEN_N; gen++) {
        for (size_t s = 0; s < sizeof scales / sizeof scales[0]; s++) {
            fill_row(x, N, gen, scales[s]);
            sd_quantize_row(t, x, q, N);
            sd_dequantize_row(t, q, y, N);
            for (int b = 0; b < N / 32; b++) {
                element_bounds(t, x + 32 * b, bound);
                for (int j = 0; j < 32; j++) {
                    float e = fabsf(y[32 * b + j] - x[32 * b + j]);
                    if (!(e <= bound[j]))
                        fail_msg("type %u gen %d scale %g elem %d: x %.9g y %.9g err %.9g > %.9g",
                                 t, gen, (double)scales[s],
                                 32 * b + j, (double)x[32 * b + j], (double)y[32 * b + j],
                                 (double)e, (double)bound[j]);
                    if (bound[j] > 0 && e / bound[j] > worst)
                        worst = e / bound[j];
                }
            }
            if (s == 0 && gen == GEN_GAUSS)
                for (int i = 0; i < N; i++) {
                    err2 += (double)(y[i] - x[i]) * (y[i] - x[i]);
                    x2 += (double)x[i] * x[i];
                }
        }
    }
    print_message("type %u: gaussian RMSE/RMS %.5f, worst err/bound %.3f\n", t,
                  sqrt(err2 / x2), worst);
}

static void test_round_trip_legacy(void **state) {
    (void)state;
    rng_state = 42;
    uint32_t types[] = {GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0,
                        GGML_TYPE_Q5_1, GGML_TYPE_Q8_0, GGML_TYPE_Q8_1};
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++)
        round_trip_type(types[i]);
}

/* Q8_1's s field is d * sum(q) of the stored quants, rounded to fp16. */
static void test_q8_1_sum(void **state) {
    (void)state;
    rng_state = 7;
    float x[128];
    block_q8_1 b[4];
    fill_row(x, 128, GEN_OUTLIER, 0.7f);
    sd_quantize_row(GGML_TYPE_Q8_1, x, b, 128);
    for (int i = 0; i < 4; i++) {
        int sum = 0;
        for (int j = 0; j < 32; j++)
            sum += b[i].qs[j];
        float s = sd_fp16_to_fp32(b[i].s), d = sd_fp16_to_fp32(b[i].d);
        /* s was rounded from sum * d32 with d32 within half an fp16 ulp of d */
        assert_true(fabsf(s - sum * d) <= fabsf(sum * d) * 0x1p-10f + 1e-6f);
    }
}

/* ---- edge cases ---- */

static void test_edge_cases(void **state) {
    (void)state;
    uint32_t types[] = {GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0,
                        GGML_TYPE_Q5_1, GGML_TYPE_Q8_0, GGML_TYPE_Q8_1};
    float x[64], y[64];
    uint8_t q[256];
    for (size_t i = 0; i < sizeof types / sizeof types[0]; i++) {
        uint32_t t = types[i];
        /* all zeros: exact zeros back, scale 0 */
        memset(x, 0, sizeof x);
        sd_quantize_row(t, x, q, 64);
        sd_dequantize_row(t, q, y, 64);
        for (int j = 0; j < 64; j++)
            assert_true(y[j] == 0.f);
        /* constant rows: back within fp16 precision of the constant */
        for (int j = 0; j < 64; j++)
            x[j] = j < 32 ? 0.3f : -1234.5f;
        sd_quantize_row(t, x, q, 64);
        sd_dequantize_row(t, q, y, 64);
        for (int j = 0; j < 64; j++)
            assert_true(fabsf(y[j] - x[j]) <= fabsf(x[j]) * 0x1p-9f);
        /* one huge element among tiny ones: the huge one survives */
        for (int j = 0; j < 64; j++)
            x[j] = 1e-6f * (j % 5);
        x[17] = -6e4f; /* Q4_1/Q5_1 store the min in fp16: |min| <= 65504 */
        sd_quantize_row(t, x, q, 64);
        sd_dequantize_row(t, q, y, 64);
        assert_true(fabsf(y[17] - x[17]) <= 6e4f * 0x1p-9f);
        /* non-finite input: defined output, finite garbage or inf/NaN, no UB
         * (the sanitizer build checks the conversions) */
        x[3] = NAN;
        x[40] = INFINITY;
        sd_quantize_row(t, x, q, 64);
        sd_dequantize_row(t, q, y, 64);
    }
}

/* A row length that is not a block multiple: the trailing partial block is
 * zero-filled on dequantize and never written on quantize. */
static void test_partial_block(void **state) {
    (void)state;
    float x[40], y[40];
    for (int j = 0; j < 40; j++)
        x[j] = (float)j;
    uint8_t q[sizeof(block_q8_0) + 8];
    memset(q, 0xCD, sizeof q);
    sd_quantize_row(GGML_TYPE_Q8_0, x, q, 40);
    assert_int_equal(q[sizeof(block_q8_0)], 0xCD);
    sd_dequantize_row(GGML_TYPE_Q8_0, q, y, 40);
    for (int j = 32; j < 40; j++)
        assert_true(y[j] == 0.f);
    assert_true(fabsf(y[31] - 31.f) < 0.2f);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_type_table),
        cmocka_unit_test(test_float_rows),
        cmocka_unit_test(test_q4_0_q4_1_hand_built),
        cmocka_unit_test(test_q5_hand_built),
        cmocka_unit_test(test_q8_hand_built),
        cmocka_unit_test(test_round_trip_legacy),
        cmocka_unit_test(test_q8_1_sum),
        cmocka_unit_test(test_edge_cases),
        cmocka_unit_test(test_partial_block),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
