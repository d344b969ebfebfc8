/* IQ4_NL and IQ4_XS: 4-bit indices into a fixed non-linear table of 16
 * levels (sd_kvalues_iq4nl), one fp16 scale per 32 elements (IQ4_NL) or a
 * fp16 super-scale with 6-bit sub-block scales per 256 (IQ4_XS).
 *
 * The quantizer is the one llama.cpp's file quantizer runs without an
 * importance matrix: ggml_quantize_chunk -> quantize_iq4_nl / quantize_iq4_xs
 * -> quantize_row_iq4_nl_impl with ntry = 7 and weights x^2 (ggml-quants.c),
 * step for step in the same float operation order. (quantize_row_iq4_nl_ref
 * runs ntry = -1 instead; it is not what llama-quantize writes.)
 * Per 32-element block: the largest-magnitude element maps to level 0
 * (-127), then the scale maximising (sum w x q)^2 / sum w q^2 over 15
 * perturbed inverse scales (itry - 127) / max; the levels are re-picked with
 * the final (for IQ4_XS: 6-bit quantized) scale. */
#include <math.h>
#include <string.h>

#include "numerics/quant.h"
#include "numerics/quant/quant_internal.h"

#define GROUP_MAX_EPS 1e-15f
#define IQ4_NTRY 7

const int8_t sd_kvalues_iq4nl[16] = {-127, -104, -83, -65, -49, -35, -22, -10,
                                     1,    13,   25,  38,  53,  69,  89,  113};

/* ---- dequantize ---- */

void sd_dequantize_row_iq4_nl(const block_iq4_nl *y, float *x, int64_t k) {
    for (int64_t i = 0; i < k / QK4_NL; i++, x += QK4_NL) {
        const float d = sd_fp16_to_fp32(y[i].d);
        for (int j = 0; j < QK4_NL / 2; j++) {
            x[j] = d * sd_kvalues_iq4nl[y[i].qs[j] & 0xF];
            x[j + QK4_NL / 2] = d * sd_kvalues_iq4nl[y[i].qs[j] >> 4];
        }
    }
}

void sd_dequantize_row_iq4_xs(const block_iq4_xs *y, float *x, int64_t k) {
    for (int64_t i = 0; i < k / QK_K; i++) {
        const float d = sd_fp16_to_fp32(y[i].d);
        const uint8_t *qs = y[i].qs;
        for (int ib = 0; ib < QK_K / 32; ib++, x += 32, qs += 16) {
            const float dl = d * (sd_iq4_xs_scale(&y[i], ib) - 32);
            for (int j = 0; j < 16; j++) {
                x[j] = dl * sd_kvalues_iq4nl[qs[j] & 0xF];
                x[j + 16] = dl * sd_kvalues_iq4nl[qs[j] >> 4];
            }
        }
    }
}

/* ---- quantize ---- */

/* Index of the table level nearest to v (the lower one on a tie; NaN gives
 * the top level). Source: llama.cpp best_index_int8. */
static int best_index(float v) {
    const int8_t *val = sd_kvalues_iq4nl;
    if (v <= val[0])
        return 0;
    if (v >= val[15])
        return 15;
    int ml = 0, mu = 15;
    while (mu - ml > 1) {
        int mav = (ml + mu) / 2;
        if (v < val[mav])
            mu = mav;
        else
            ml = mav;
    }
    return v - val[mu - 1] < val[mu] - v ? mu - 1 : mu;
}

/* The scale of one 32-element block xb (0 for an all-(near-)zero block, whose
 * L is then left as it was); L[32] gets the levels of the first pass. */
static float fit_block(const float *xb, uint8_t *L) {
    float weight[32], amax = 0, max = 0;
    for (int j = 0; j < 32; j++) {
        weight[j] = xb[j] * xb[j];
        float ax = fabsf(xb[j]);
        if (ax > amax) {
            amax = ax;
            max = xb[j];
        }
    }
    if (amax < GROUP_MAX_EPS)
        return 0.f;
    float d = -max / sd_kvalues_iq4nl[0];
    float id = 1 / d;
    float sumqx = 0, sumq2 = 0;
    for (int j = 0; j < 32; j++) {
        int l = best_index(id * xb[j]);
        L[j] = (uint8_t)l;
        float q = sd_kvalues_iq4nl[l], w = weight[j];
        sumqx += w * q * xb[j];
        sumq2 += w * q * q;
    }
    d = sumq2 > 0 ? sumqx / sumq2 : 0.f;
    float best = d * sumqx;
    for (int itry = -IQ4_NTRY; itry <= IQ4_NTRY; itry++) {
        id = (itry + sd_kvalues_iq4nl[0]) / max;
        sumqx = sumq2 = 0;
        for (int j = 0; j < 32; j++) {
            float q = sd_kvalues_iq4nl[best_index(id * xb[j])], w = weight[j];
            sumqx += w * q * xb[j];
            sumq2 += w * q * q;
        }
        if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
            d = sumqx / sumq2;
            best = d * sumqx;
        }
    }
    return d;
}

/* Packs 32 levels: byte j = L[j] | L[j + 16] << 4. */
static void pack_32(const uint8_t *L, uint8_t *qs) {
    for (int j = 0; j < 16; j++)
        qs[j] = (uint8_t)(L[j] | (L[j + 16] << 4));
}

void sd_quantize_row_iq4_nl(const float *x, block_iq4_nl *y, int64_t k) {
    uint8_t L[32];
    for (int64_t i = 0; i < k / QK4_NL; i++, x += QK4_NL) {
        float d = fit_block(x, L);
        y[i].d = sd_fp32_to_fp16(d);
        float id = d ? 1 / d : 0;
        for (int j = 0; j < 32; j++)
            L[j] = (uint8_t)best_index(id * x[j]);
        pack_32(L, y[i].qs);
    }
}

void sd_quantize_row_iq4_xs(const float *x, block_iq4_xs *y, int64_t k) {
    uint8_t L[32];
    float scales[QK_K / 32];
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        float max_scale = 0, amax_scale = 0;
        for (int ib = 0; ib < QK_K / 32; ib++) {
            scales[ib] = fit_block(x + 32 * ib, L);
            if (fabsf(scales[ib]) > amax_scale) {
                amax_scale = fabsf(scales[ib]);
                max_scale = scales[ib];
            }
        }
        /* sub-block scales to 6 bits against d = -max_scale / 32 (the float d,
         * not its fp16 rounding, as llama.cpp), then the levels again */
        float d = -max_scale / 32;
        y[i].d = sd_fp32_to_fp16(d);
        y[i].scales_h = 0;
        float id = d ? 1 / d : 0.f;
        for (int ib = 0; ib < QK_K / 32; ib++) {
            int l = sd_nearest_int(id * scales[ib]);
            l = l < -32 ? -32 : l > 31 ? 31 : l;
            float dl = d * l;
            float idl = dl ? 1 / dl : 0.f;
            for (int j = 0; j < 32; j++)
                L[j] = (uint8_t)best_index(idl * x[32 * ib + j]);
            pack_32(L, y[i].qs + 16 * ib);
            l += 32;
            if (ib % 2 == 0)
                y[i].scales_l[ib / 2] = (uint8_t)(l & 0xF);
            else
                y[i].scales_l[ib / 2] |= (uint8_t)((l & 0xF) << 4);
            y[i].scales_h |= (uint16_t)((l >> 4) << 2 * ib);
        }
    }
}
