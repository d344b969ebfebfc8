/* The 32-element block types ("legacy quants" in llama.cpp): Q4_0, Q4_1,
 * Q5_0, Q5_1, Q8_0 and the activation format Q8_1. Dequantization and the
 * reference quantizers follow llama.cpp ggml-quants.c (quantize_row_*_ref,
 * dequantize_row_*) step for step, including the order of every float
 * operation, so blocks come out byte-identical to llama.cpp's reference
 * quantizers and dequantized floats bit-identical (the build uses
 * -ffp-contract=off; llama.cpp built with FMA contraction may differ in the
 * last bit of a scale). */
#include <float.h>
#include <math.h>
#include <string.h>

#include "numerics/quant.h"
#include "numerics/quant/quant_internal.h"

/* ---- dequantize ---- */

void sd_dequantize_row_q4_0(const block_q4_0 *y, float *x, int64_t k) {
    for (int64_t i = 0; i < k / QK4_0; i++, x += QK4_0) {
        const float d = sd_fp16_to_fp32(y[i].d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            x[j] = ((y[i].qs[j] & 0x0F) - 8) * d;
            x[j + QK4_0 / 2] = ((y[i].qs[j] >> 4) - 8) * d;
        }
    }
}

void sd_dequantize_row_q4_1(const block_q4_1 *y, float *x, int64_t k) {
    for (int64_t i = 0; i < k / QK4_1; i++, x += QK4_1) {
        const float d = sd_fp16_to_fp32(y[i].d);
        const float m = sd_fp16_to_fp32(y[i].m);
        for (int j = 0; j < QK4_1 / 2; j++) {
            x[j] = (y[i].qs[j] & 0x0F) * d + m;
            x[j + QK4_1 / 2] = (y[i].qs[j] >> 4) * d + m;
        }
    }
}

/* Bit 4 of element j of a Q5 block: bit j of the little-endian u32 qh. */
static uint32_t q5_high_bits(const uint8_t qh[4]) {
    return (uint32_t)qh[0] | ((uint32_t)qh[1] << 8) | ((uint32_t)qh[2] << 16) |
           ((uint32_t)qh[3] << 24);
}

void sd_dequantize_row_q5_0(const block_q5_0 *y, float *x, int64_t k) {
    for (int64_t i = 0; i < k / QK5_0; i++, x += QK5_0) {
        const float d = sd_fp16_to_fp32(y[i].d);
        const uint32_t qh = q5_high_bits(y[i].qh);
        for (int j = 0; j < QK5_0 / 2; j++) {
            int h0 = (int)((qh >> j) & 1) << 4;
            int h1 = (int)((qh >> (j + QK5_0 / 2)) & 1) << 4;
            x[j] = (((y[i].qs[j] & 0x0F) | h0) - 16) * d;
            x[j + QK5_0 / 2] = (((y[i].qs[j] >> 4) | h1) - 16) * d;
        }
    }
}

void sd_dequantize_row_q5_1(const block_q5_1 *y, float *x, int64_t k) {
    for (int64_t i = 0; i < k / QK5_1; i++, x += QK5_1) {
        const float d = sd_fp16_to_fp32(y[i].d);
        const float m = sd_fp16_to_fp32(y[i].m);
        const uint32_t qh = q5_high_bits(y[i].qh);
        for (int j = 0; j < QK5_1 / 2; j++) {
            int h0 = (int)((qh >> j) & 1) << 4;
            int h1 = (int)((qh >> (j + QK5_1 / 2)) & 1) << 4;
            x[j] = ((y[i].qs[j] & 0x0F) | h0) * d + m;
            x[j + QK5_1 / 2] = ((y[i].qs[j] >> 4) | h1) * d + m;
        }
    }
}

void sd_dequantize_row_q8_0(const block_q8_0 *y, float *x, int64_t k) {
    for (int64_t i = 0; i < k / QK8_0; i++, x += QK8_0) {
        const float d = sd_fp16_to_fp32(y[i].d);
        for (int j = 0; j < QK8_0; j++)
            x[j] = y[i].qs[j] * d;
    }
}

void sd_dequantize_row_q8_1(const block_q8_1 *y, float *x, int64_t k) {
    for (int64_t i = 0; i < k / QK8_1; i++, x += QK8_1) {
        const float d = sd_fp16_to_fp32(y[i].d);
        for (int j = 0; j < QK8_1; j++)
            x[j] = y[i].qs[j] * d;
    }
}

/* ---- quantize (reference, round-to-nearest) ---- */

/* The element of largest magnitude, sign kept (first one on ties). The
 * symmetric types map it to the most negative level (-8 for Q4_0, -16 for
 * Q5_0), which gains one level over mapping |max| to +7. */
static void min_max(const float *x, int n, float *min, float *max) {
    *min = FLT_MAX;
    *max = -FLT_MAX;
    for (int j = 0; j < n; j++) {
        if (x[j] < *min)
            *min = x[j];
        if (x[j] > *max)
            *max = x[j];
    }
}

void sd_quantize_row_q4_0(const float *x, block_q4_0 *y, int64_t k) {
    for (int64_t i = 0; i < k / QK4_0; i++, x += QK4_0) {
        const float d = sd_signed_absmax(x, QK4_0) / -8;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = sd_fp32_to_fp16(d);
        for (int j = 0; j < QK4_0 / 2; j++) {
            int q0 = sd_trunc_clamp(x[j] * id + 8.5f, 15);
            int q1 = sd_trunc_clamp(x[j + QK4_0 / 2] * id + 8.5f, 15);
            y[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

void sd_quantize_row_q4_1(const float *x, block_q4_1 *y, int64_t k) {
    for (int64_t i = 0; i < k / QK4_1; i++, x += QK4_1) {
        float min, max;
        min_max(x, QK4_1, &min, &max);
        const float d = (max - min) / 15;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = sd_fp32_to_fp16(d);
        y[i].m = sd_fp32_to_fp16(min);
        for (int j = 0; j < QK4_1 / 2; j++) {
            int q0 = sd_trunc_clamp((x[j] - min) * id + 0.5f, 15);
            int q1 = sd_trunc_clamp((x[j + QK4_1 / 2] - min) * id + 0.5f, 15);
            y[i].qs[j] = (uint8_t)(q0 | (q1 << 4));
        }
    }
}

static void store_q5_high_bits(uint8_t qh[4], uint32_t bits) {
    for (int b = 0; b < 4; b++)
        qh[b] = (uint8_t)(bits >> (8 * b));
}

void sd_quantize_row_q5_0(const float *x, block_q5_0 *y, int64_t k) {
    for (int64_t i = 0; i < k / QK5_0; i++, x += QK5_0) {
        const float d = sd_signed_absmax(x, QK5_0) / -16;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = sd_fp32_to_fp16(d);
        uint32_t qh = 0;
        for (int j = 0; j < QK5_0 / 2; j++) {
            int q0 = sd_trunc_clamp(x[j] * id + 16.5f, 31);
            int q1 = sd_trunc_clamp(x[j + QK5_0 / 2] * id + 16.5f, 31);
            y[i].qs[j] = (uint8_t)((q0 & 0x0F) | ((q1 & 0x0F) << 4));
            qh |= (uint32_t)(q0 >> 4) << j;
            qh |= (uint32_t)(q1 >> 4) << (j + QK5_0 / 2);
        }
        store_q5_high_bits(y[i].qh, qh);
    }
}

void sd_quantize_row_q5_1(const float *x, block_q5_1 *y, int64_t k) {
    for (int64_t i = 0; i < k / QK5_1; i++, x += QK5_1) {
        float min, max;
        min_max(x, QK5_1, &min, &max);
        const float d = (max - min) / 31;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = sd_fp32_to_fp16(d);
        y[i].m = sd_fp32_to_fp16(min);
        uint32_t qh = 0;
        for (int j = 0; j < QK5_1 / 2; j++) {
            int q0 = sd_trunc_clamp((x[j] - min) * id + 0.5f, 31);
            int q1 = sd_trunc_clamp((x[j + QK5_1 / 2] - min) * id + 0.5f, 31);
            y[i].qs[j] = (uint8_t)((q0 & 0x0F) | ((q1 & 0x0F) << 4));
            qh |= (uint32_t)(q0 >> 4) << j;
            qh |= (uint32_t)(q1 >> 4) << (j + QK5_1 / 2);
        }
        store_q5_high_bits(y[i].qh, qh);
    }
}

/* roundf (half away from zero, as llama.cpp's Q8 quantizers use) into int8;
 * NaN gives 0 instead of an undefined conversion. */
static int8_t round_to_i8(float v) {
    if (!(v == v))
        return 0;
    float r = roundf(v);
    if (r > 127.f)
        return 127;
    if (r < -128.f)
        return -128;
    return (int8_t)r;
}

static float absmax(const float *x, int n) {
    float amax = 0.f;
    for (int j = 0; j < n; j++)
        amax = fmaxf(amax, fabsf(x[j]));
    return amax;
}

void sd_quantize_row_q8_0(const float *x, block_q8_0 *y, int64_t k) {
    for (int64_t i = 0; i < k / QK8_0; i++, x += QK8_0) {
        const float d = absmax(x, QK8_0) / 127;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = sd_fp32_to_fp16(d);
        for (int j = 0; j < QK8_0; j++)
            y[i].qs[j] = round_to_i8(x[j] * id);
    }
}

void sd_quantize_row_q8_1(const float *x, block_q8_1 *y, int64_t k) {
    for (int64_t i = 0; i < k / QK8_1; i++, x += QK8_1) {
        const float d = absmax(x, QK8_1) / 127;
        const float id = d ? 1.0f / d : 0.0f;
        y[i].d = sd_fp32_to_fp16(d);
        int sum = 0;
        for (int j = 0; j < QK8_1; j++) {
            y[i].qs[j] = round_to_i8(x[j] * id);
            sum += y[i].qs[j];
        }
        y[i].s = sd_fp32_to_fp16(sum * d);
    }
}
