/* IEEE binary16 and bfloat16 <-> binary32, bit-exact, in portable integer
 * arithmetic (no F16C needed). Rounding is to nearest, ties to even, the
 * same as the x86 VCVTPS2PH instruction with imm 0 that llama.cpp uses for
 * GGML_FP32_TO_FP16; NaNs stay NaN (quieted, payload top bits kept). */
#include <stdint.h>
#include <string.h>

#include "numerics/quant.h"

static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static float f32_from_bits(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

float sd_fp16_to_fp32(uint16_t h) {
    uint32_t sign = (uint32_t)(h & 0x8000) << 16;
    uint32_t exp = (h >> 10) & 0x1F;
    uint32_t mant = h & 0x3FF;
    if (exp == 0x1F) /* inf / NaN: payload moves to the top of the f32 mantissa;
                        a NaN comes out quiet, as VCVTPH2PS does */
        return f32_from_bits(sign | 0x7F800000u | (mant ? 0x400000u : 0) | (mant << 13));
    if (exp == 0) { /* zero or subnormal: mant * 2^-24, exact in f32 */
        float v = (float)mant * 0x1p-24f;
        return sign ? -v : v;
    }
    /* normal: rebias the exponent from 15 to 127 */
    return f32_from_bits(sign | ((exp + 112) << 23) | (mant << 13));
}

/* Rounds m >> shift to nearest, ties to even (shift >= 1). */
static uint32_t shift_round_even(uint32_t m, int shift) {
    uint32_t q = m >> shift;
    uint32_t rem = m & ((1u << shift) - 1);
    uint32_t half = 1u << (shift - 1);
    if (rem > half || (rem == half && (q & 1)))
        q++;
    return q;
}

uint16_t sd_fp32_to_fp16(float f) {
    uint32_t x = f32_bits(f);
    uint16_t sign = (uint16_t)((x >> 16) & 0x8000);
    uint32_t a = x & 0x7FFFFFFFu;
    if (a > 0x7F800000u) /* NaN: force the quiet bit, keep the top payload bits */
        return (uint16_t)(sign | 0x7E00 | ((a >> 13) & 0x3FF));
    if (a >= 0x477FF000u) /* >= 65520 (halfway past 65504, the largest half): inf */
        return (uint16_t)(sign | 0x7C00);
    if (a >= 0x38800000u) /* >= 2^-14: normal half; a carry into the exponent is right */
        return (uint16_t)(sign | shift_round_even(a - 0x38000000u, 13));
    if (a <= 0x33000000u) /* <= 2^-25 (halfway to the smallest subnormal): zero */
        return sign;
    /* subnormal half: value / 2^-24 = mant24 >> (126 - exp), exp in 102..112 */
    uint32_t exp = a >> 23;
    uint32_t mant = (a & 0x7FFFFFu) | 0x800000u;
    return (uint16_t)(sign | shift_round_even(mant, (int)(126 - exp)));
}

float sd_bf16_to_fp32(uint16_t h) {
    return f32_from_bits((uint32_t)h << 16);
}

/* Same as llama.cpp's ggml_compute_fp32_to_bf16: round to nearest even on
 * the upper 16 bits, subnormals kept (not flushed), NaNs quieted. */
uint16_t sd_fp32_to_bf16(float f) {
    uint32_t x = f32_bits(f);
    if ((x & 0x7FFFFFFFu) > 0x7F800000u)
        return (uint16_t)((x >> 16) | 0x40);
    return (uint16_t)((x + 0x7FFFu + ((x >> 16) & 1)) >> 16);
}
