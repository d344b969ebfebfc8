/* Per-type row converters behind sd_dequantize_row / sd_quantize_row
 * (numerics/quant.c dispatches on the type id). Private to numerics/.
 * Every function converts k elements, k a multiple of the type's block size;
 * x is the f32 side, y the block side. Sources: llama.cpp ggml-quants.c
 * (quantize_row_*_ref, dequantize_row_*), read for the algorithm, not copied. */
#ifndef SD_NUMERICS_QUANT_INTERNAL_H
#define SD_NUMERICS_QUANT_INTERNAL_H

#include <math.h>
#include <stdint.h>

#include "numerics/quant/quant_blocks.h"

/* Round to nearest, ties to even, like llama.cpp's nearest_int (which adds
 * 1.5 * 2^23 and reads the mantissa). Inputs past +-2^22 are clamped there
 * and NaN gives 0, so hostile floats never reach an undefined conversion;
 * every caller clamps the result to a much smaller range anyway. */
static inline int sd_nearest_int(float v) {
    if (!(v == v))
        return 0;
    if (v > 4194303.f)
        v = 4194303.f;
    if (v < -4194303.f)
        v = -4194303.f;
    float t = v + 12582912.f;
    uint32_t u;
    __builtin_memcpy(&u, &t, sizeof u);
    return (int)(u & 0x007FFFFF) - 0x00400000;
}

/* (int)v truncated toward zero and clamped to 0..hi; NaN and negatives give 0.
 * The same as llama.cpp's MIN(hi, (int8_t)v) for the values its legacy
 * quantizers produce (v in [0, hi + 1.5)), without the undefined cast. */
/* The element of largest magnitude, with its sign (the first on ties): the
 * value llama.cpp's reference quantizers scale by. */
static inline float sd_signed_absmax(const float *x, int n) {
    float amax = 0.f, max = 0.f;
    for (int j = 0; j < n; j++) {
        if (amax < fabsf(x[j])) {
            amax = fabsf(x[j]);
            max = x[j];
        }
    }
    return max;
}

static inline int sd_trunc_clamp(float v, int hi) {
    if (!(v > 0.f))
        return 0;
    if (v >= (float)hi)
        return hi;
    return (int)v;
}

void sd_dequantize_row_q4_0(const block_q4_0 *y, float *x, int64_t k);
void sd_dequantize_row_q4_1(const block_q4_1 *y, float *x, int64_t k);
void sd_dequantize_row_q5_0(const block_q5_0 *y, float *x, int64_t k);
void sd_dequantize_row_q5_1(const block_q5_1 *y, float *x, int64_t k);
void sd_dequantize_row_q8_0(const block_q8_0 *y, float *x, int64_t k);
void sd_dequantize_row_q8_1(const block_q8_1 *y, float *x, int64_t k);
void sd_dequantize_row_q2_K(const block_q2_K *y, float *x, int64_t k);
void sd_dequantize_row_q3_K(const block_q3_K *y, float *x, int64_t k);
void sd_dequantize_row_q4_K(const block_q4_K *y, float *x, int64_t k);
void sd_dequantize_row_q5_K(const block_q5_K *y, float *x, int64_t k);
void sd_dequantize_row_q6_K(const block_q6_K *y, float *x, int64_t k);
void sd_dequantize_row_q8_K(const block_q8_K *y, float *x, int64_t k);
void sd_dequantize_row_iq4_nl(const block_iq4_nl *y, float *x, int64_t k);
void sd_dequantize_row_iq4_xs(const block_iq4_xs *y, float *x, int64_t k);

void sd_quantize_row_q4_0(const float *x, block_q4_0 *y, int64_t k);
void sd_quantize_row_q4_1(const float *x, block_q4_1 *y, int64_t k);
void sd_quantize_row_q5_0(const float *x, block_q5_0 *y, int64_t k);
void sd_quantize_row_q5_1(const float *x, block_q5_1 *y, int64_t k);
void sd_quantize_row_q8_0(const float *x, block_q8_0 *y, int64_t k);
void sd_quantize_row_q8_1(const float *x, block_q8_1 *y, int64_t k);
void sd_quantize_row_q2_K(const float *x, block_q2_K *y, int64_t k);
void sd_quantize_row_q3_K(const float *x, block_q3_K *y, int64_t k);
void sd_quantize_row_q4_K(const float *x, block_q4_K *y, int64_t k);
void sd_quantize_row_q5_K(const float *x, block_q5_K *y, int64_t k);
void sd_quantize_row_q6_K(const float *x, block_q6_K *y, int64_t k);
void sd_quantize_row_q8_K(const float *x, block_q8_K *y, int64_t k);
/* IQ4_NL / IQ4_XS: llama.cpp's quantize_iq4_nl / quantize_iq4_xs without an
 * importance matrix (what ggml_quantize_chunk runs), see quant_iq4.c. */
void sd_quantize_row_iq4_nl(const float *x, block_iq4_nl *y, int64_t k);
void sd_quantize_row_iq4_xs(const float *x, block_iq4_xs *y, int64_t k);

#endif
