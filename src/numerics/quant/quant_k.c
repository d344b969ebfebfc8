/* K-quants (256-element super-blocks): dequantization of Q2_K, Q3_K, Q4_K,
 * Q5_K, Q6_K and Q8_K; reference quantizers for Q4_K, Q5_K, Q6_K and Q8_K.
 *
 * Algorithms follow llama.cpp ggml-quants.c (quantize_row_q{4,5,6,8}_K_ref,
 * dequantize_row_q*_K) step for step, in the same float operation order, so
 * with FMA contraction off the bytes match llama.cpp's reference quantizers:
 * - Q4_K / Q5_K: per 32-element sub-block, a weighted least-squares fit of
 *   (scale, min) searched over nstep candidate inverse scales
 *   (make_qkx2_quants: Q4_K rmin -1, rdelta 0.1, 20 steps; Q5_K -0.5, 0.1,
 *   15), weights av_x + |x|; then the 8 scales and 8 mins are quantized to 6
 *   bits against the block maxima and every element is re-rounded with the
 *   quantized scales.
 * - Q6_K: per 16-element sub-block a symmetric fit weighted by x^2, searched
 *   over 18 perturbed scales (make_qx_quants, rmse_type 1); scales to int8.
 * - Q8_K: plain symmetric rounding with d = max / -127 in float.
 * - Q2_K: make_qkx2_quants per 16 elements (nmax 3, weights |x|, minimising
 *   the absolute error), 4-bit scales and mins against the block maxima.
 * - Q3_K: make_q3_quants per 16 (coordinate descent, weights x^2), 6-bit
 *   signed scales; the third bit of each level goes to hmask.
 * These are the reference (not importance-matrix) quantizers. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#include "numerics/quant.h"
#include "numerics/quant/quant_internal.h"

#define GROUP_MAX_EPS 1e-15f

/* ---- dequantize ---- */

void sd_dequantize_row_q2_K(const block_q2_K *y, float *x, int64_t k) {
    for (int64_t i = 0; i < k / QK_K; i++) {
        const float d = sd_fp16_to_fp32(y[i].d);
        const float min = sd_fp16_to_fp32(y[i].dmin);
        const uint8_t *q = y[i].qs;
        int is = 0;
        for (int half = 0; half < 2; half++, q += 32) {
            for (int shift = 0; shift < 8; shift += 2) {
                for (int part = 0; part < 2; part++) { /* elements l and l + 16 of a 32-run */
                    uint8_t sc = y[i].scales[is++];
                    const float dl = d * (sc & 0xF);
                    const float ml = min * (sc >> 4);
                    for (int l = 0; l < 16; l++)
                        *x++ = dl * ((q[l + 16 * part] >> shift) & 3) - ml;
                }
            }
        }
    }
}

void sd_dequantize_row_q3_K(const block_q3_K *y, float *x, int64_t k) {
    for (int64_t i = 0; i < k / QK_K; i++) {
        const float d_all = sd_fp16_to_fp32(y[i].d);
        uint8_t scales[16];
        sd_q3_K_scales(y[i].scales, scales);
        const uint8_t *q = y[i].qs;
        const uint8_t *hm = y[i].hmask;
        uint8_t m = 1;
        int is = 0;
        for (int half = 0; half < 2; half++, q += 32) {
            for (int shift = 0; shift < 8; shift += 2, m <<= 1) {
                for (int part = 0; part < 2; part++) {
                    const float dl = d_all * (scales[is++] - 32);
                    for (int l = 16 * part; l < 16 * part + 16; l++) {
                        int v = ((q[l] >> shift) & 3) - ((hm[l] & m) ? 0 : 4);
                        *x++ = dl * v;
                    }
                }
            }
        }
    }
}

void sd_dequantize_row_q4_K(const block_q4_K *y, float *x, int64_t k) {
    for (int64_t i = 0; i < k / QK_K; i++) {
        const float d = sd_fp16_to_fp32(y[i].d);
        const float min = sd_fp16_to_fp32(y[i].dmin);
        const uint8_t *q = y[i].qs;
        for (int is = 0; is < 8; is += 2, q += 32) {
            uint8_t sc, m;
            sd_get_scale_min_k4(is, y[i].scales, &sc, &m);
            const float d1 = d * sc, m1 = min * m;
            sd_get_scale_min_k4(is + 1, y[i].scales, &sc, &m);
            const float d2 = d * sc, m2 = min * m;
            for (int l = 0; l < 32; l++)
                *x++ = d1 * (q[l] & 0xF) - m1;
            for (int l = 0; l < 32; l++)
                *x++ = d2 * (q[l] >> 4) - m2;
        }
    }
}

void sd_dequantize_row_q5_K(const block_q5_K *y, float *x, int64_t k) {
    for (int64_t i = 0; i < k / QK_K; i++) {
        const float d = sd_fp16_to_fp32(y[i].d);
        const float min = sd_fp16_to_fp32(y[i].dmin);
        const uint8_t *ql = y[i].qs;
        const uint8_t *qh = y[i].qh;
        uint8_t u1 = 1, u2 = 2;
        for (int is = 0; is < 8; is += 2, ql += 32, u1 <<= 2, u2 <<= 2) {
            uint8_t sc, m;
            sd_get_scale_min_k4(is, y[i].scales, &sc, &m);
            const float d1 = d * sc, m1 = min * m;
            sd_get_scale_min_k4(is + 1, y[i].scales, &sc, &m);
            const float d2 = d * sc, m2 = min * m;
            for (int l = 0; l < 32; l++)
                *x++ = d1 * ((ql[l] & 0xF) + (qh[l] & u1 ? 16 : 0)) - m1;
            for (int l = 0; l < 32; l++)
                *x++ = d2 * ((ql[l] >> 4) + (qh[l] & u2 ? 16 : 0)) - m2;
        }
    }
}

void sd_dequantize_row_q6_K(const block_q6_K *y, float *x, int64_t k) {
    for (int64_t i = 0; i < k / QK_K; i++) {
        const float d = sd_fp16_to_fp32(y[i].d);
        const uint8_t *ql = y[i].ql;
        const uint8_t *qh = y[i].qh;
        const int8_t *sc = y[i].scales;
        for (int half = 0; half < 2; half++, x += 128, ql += 64, qh += 32, sc += 8) {
            for (int l = 0; l < 32; l++) {
                int is = l / 16;
                int q1 = ((ql[l] & 0xF) | (((qh[l] >> 0) & 3) << 4)) - 32;
                int q2 = ((ql[l + 32] & 0xF) | (((qh[l] >> 2) & 3) << 4)) - 32;
                int q3 = ((ql[l] >> 4) | (((qh[l] >> 4) & 3) << 4)) - 32;
                int q4 = ((ql[l + 32] >> 4) | (((qh[l] >> 6) & 3) << 4)) - 32;
                x[l] = d * sc[is + 0] * q1;
                x[l + 32] = d * sc[is + 2] * q2;
                x[l + 64] = d * sc[is + 4] * q3;
                x[l + 96] = d * sc[is + 6] * q4;
            }
        }
    }
}

void sd_dequantize_row_q8_K(const block_q8_K *y, float *x, int64_t k) {
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        for (int j = 0; j < QK_K; j++)
            x[j] = y[i].d * y[i].qs[j];
    }
}

/* ---- scale search ---- */

/* Asymmetric fit x ~ scale * L + min (min <= 0, L in 0..nmax) minimising the
 * weighted squared error: starts from the min/max grid, then tries nstep + 1
 * inverse scales (rmin + rdelta*is + nmax) / (max - min), solving the 2x2
 * least-squares system for (scale, min) at each and keeping the best.
 * Returns scale; *the_min = -min (>= 0). L[n] gets the levels. use_mad
 * minimises the weighted absolute error instead (Q2_K).
 * Source: llama.cpp make_qkx2_quants. */
static float make_qkx2_quants(int n, int nmax, const float *x, const float *weights,
                              uint8_t *L, float *the_min, uint8_t *Laux, float rmin,
                              float rdelta, int nstep, bool use_mad) {
    float min = x[0], max = x[0];
    float sum_w = weights[0];
    float sum_x = sum_w * x[0];
    for (int i = 1; i < n; i++) {
        if (x[i] < min)
            min = x[i];
        if (x[i] > max)
            max = x[i];
        float w = weights[i];
        sum_w += w;
        sum_x += w * x[i];
    }
    if (min > 0)
        min = 0;
    if (max == min) {
        memset(L, 0, (size_t)n);
        *the_min = -min;
        return 0.f;
    }
    float iscale = nmax / (max - min);
    float scale = 1 / iscale;
    float best_error = 0;
    for (int i = 0; i < n; i++) {
        int l = sd_nearest_int(iscale * (x[i] - min));
        L[i] = (uint8_t)(l < 0 ? 0 : l > nmax ? nmax : l);
        float diff = scale * L[i] + min - x[i];
        best_error += weights[i] * (use_mad ? fabsf(diff) : diff * diff);
    }
    for (int is = 0; is <= nstep; is++) {
        iscale = (rmin + rdelta * is + nmax) / (max - min);
        float sum_l = 0, sum_l2 = 0, sum_xl = 0;
        for (int i = 0; i < n; i++) {
            int l = sd_nearest_int(iscale * (x[i] - min));
            l = l < 0 ? 0 : l > nmax ? nmax : l;
            Laux[i] = (uint8_t)l;
            float w = weights[i];
            sum_l += w * l;
            sum_l2 += w * l * l;
            sum_xl += w * l * x[i];
        }
        float D = sum_w * sum_l2 - sum_l * sum_l;
        if (D > 0) {
            float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
            float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
            if (this_min > 0) {
                this_min = 0;
                this_scale = sum_xl / sum_l2;
            }
            float cur_error = 0;
            for (int i = 0; i < n; i++) {
                float diff = this_scale * Laux[i] + this_min - x[i];
                cur_error += weights[i] * (use_mad ? fabsf(diff) : diff * diff);
            }
            if (cur_error < best_error) {
                memcpy(L, Laux, (size_t)n);
                best_error = cur_error;
                scale = this_scale;
                min = this_min;
            }
        }
    }
    *the_min = -min;
    return scale;
}

/* A symmetric level clamped to -nmax..nmax-1. */
static int clamp_level(int l, int nmax) { return l < -nmax ? -nmax : l > nmax - 1 ? nmax - 1 : l; }

/* Symmetric fit x ~ scale * (L - nmax), L - nmax in -nmax..nmax-1, weights
 * x^2: the largest-magnitude element maps to -nmax, then 18 perturbed
 * inverse scales -(nmax + 0.1*is)/max are tried and the one maximising
 * (sum w x l)^2 / sum w l^2 wins. Returns the scale (sign follows max).
 * Source: llama.cpp make_qx_quants with rmse_type 1 and no importance weights. */
static float make_qx_quants(int n, int nmax, const float *x, int8_t *L) {
    float max = sd_signed_absmax(x, n), amax = fabsf(max);
    if (amax < GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = sd_nearest_int(iscale * x[i]);
        l = clamp_level(l, nmax);
        L[i] = (int8_t)(l + nmax);
        float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    float scale = suml2 ? sumlx / suml2 : 0.0f;
    float best = scale * sumlx;
    for (int is = -9; is <= 9; is++) {
        if (is == 0)
            continue;
        iscale = -(nmax + 0.1f * is) / max;
        sumlx = suml2 = 0;
        for (int i = 0; i < n; i++) {
            int l = sd_nearest_int(iscale * x[i]);
            l = clamp_level(l, nmax);
            float w = x[i] * x[i];
            sumlx += w * x[i] * l;
            suml2 += w * l * l;
        }
        if (suml2 > 0 && sumlx * sumlx > best * suml2) {
            for (int i = 0; i < n; i++) {
                int l = sd_nearest_int(iscale * x[i]);
                l = clamp_level(l, nmax);
                L[i] = (int8_t)(l + nmax);
            }
            scale = sumlx / suml2;
            best = scale * sumlx;
        }
    }
    return scale;
}

/* Symmetric fit for Q3_K sub-blocks, levels L - nmax in -nmax..nmax-1:
 * start from the largest-magnitude element at -nmax, then up to 5 passes of
 * coordinate descent, moving one level at a time when that raises
 * (sum w x l)^2 / sum w l^2 (w = x^2). Returns the scale.
 * Source: llama.cpp make_q3_quants with do_rmse = true. */
static float make_q3_quants(int n, int nmax, const float *x, int8_t *L) {
    float max = sd_signed_absmax(x, n), amax = fabsf(max);
    if (amax < GROUP_MAX_EPS) {
        memset(L, 0, (size_t)n);
        return 0.f;
    }
    float iscale = -nmax / max;
    float sumlx = 0, suml2 = 0;
    for (int i = 0; i < n; i++) {
        int l = sd_nearest_int(iscale * x[i]);
        l = clamp_level(l, nmax);
        L[i] = (int8_t)l;
        float w = x[i] * x[i];
        sumlx += w * x[i] * l;
        suml2 += w * l * l;
    }
    for (int itry = 0; itry < 5; itry++) {
        int n_changed = 0;
        for (int i = 0; i < n; i++) {
            float w = x[i] * x[i];
            float slx = sumlx - w * x[i] * L[i];
            if (slx > 0) {
                float sl2 = suml2 - w * L[i] * L[i];
                int new_l = sd_nearest_int(x[i] * sl2 / slx);
                new_l = clamp_level(new_l, nmax);
                if (new_l != L[i]) {
                    slx += w * x[i] * new_l;
                    sl2 += w * new_l * new_l;
                    if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
                        L[i] = (int8_t)new_l;
                        sumlx = slx;
                        suml2 = sl2;
                        n_changed++;
                    }
                }
            }
        }
        if (!n_changed)
            break;
    }
    for (int i = 0; i < n; i++)
        L[i] = (int8_t)(L[i] + nmax);
    return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* ---- Q2_K / Q3_K ---- */

void sd_quantize_row_q2_K(const float *x, block_q2_K *y, int64_t k) {
    uint8_t L[QK_K], Laux[16];
    float weights[16], mins[QK_K / 16], scales[QK_K / 16];
    const float q4scale = 15.f;
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        float max_scale = 0, max_min = 0;
        for (int j = 0; j < QK_K / 16; j++) {
            for (int l = 0; l < 16; l++)
                weights[l] = fabsf(x[16 * j + l]);
            scales[j] = make_qkx2_quants(16, 3, x + 16 * j, weights, L + 16 * j, &mins[j], Laux,
                                         -0.5f, 0.1f, 15, true);
            if (scales[j] > max_scale)
                max_scale = scales[j];
            if (mins[j] > max_min)
                max_min = mins[j];
        }
        memset(y[i].scales, 0, sizeof y[i].scales);
        y[i].d = 0;
        y[i].dmin = 0;
        if (max_scale > 0) {
            float iscale = q4scale / max_scale;
            for (int j = 0; j < QK_K / 16; j++)
                y[i].scales[j] = (uint8_t)sd_nearest_int(iscale * scales[j]);
            y[i].d = sd_fp32_to_fp16(max_scale / q4scale);
        }
        if (max_min > 0) {
            float iscale = q4scale / max_min;
            for (int j = 0; j < QK_K / 16; j++)
                y[i].scales[j] |= (uint8_t)(sd_nearest_int(iscale * mins[j]) << 4);
            y[i].dmin = sd_fp32_to_fp16(max_min / q4scale);
        }
        for (int j = 0; j < QK_K / 16; j++) {
            const float d = sd_fp16_to_fp32(y[i].d) * (y[i].scales[j] & 0xF);
            if (!d)
                continue;
            const float dm = sd_fp16_to_fp32(y[i].dmin) * (y[i].scales[j] >> 4);
            for (int ii = 0; ii < 16; ii++) {
                int l = sd_nearest_int((x[16 * j + ii] + dm) / d);
                L[16 * j + ii] = (uint8_t)(l < 0 ? 0 : l > 3 ? 3 : l);
            }
        }
        sd_pack_2bit(L, y[i].qs);
    }
}

void sd_quantize_row_q3_K(const float *x, block_q3_K *y, int64_t k) {
    int8_t L[QK_K];
    float scales[QK_K / 16];
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        float max_scale = 0, amax = 0;
        for (int j = 0; j < QK_K / 16; j++) {
            scales[j] = make_q3_quants(16, 4, x + 16 * j, L + 16 * j);
            if (fabsf(scales[j]) > amax) {
                amax = fabsf(scales[j]);
                max_scale = scales[j];
            }
        }
        memset(y[i].scales, 0, sizeof y[i].scales);
        y[i].d = 0;
        if (max_scale) {
            float iscale = -32.f / max_scale;
            for (int j = 0; j < QK_K / 16; j++) {
                int l = sd_nearest_int(iscale * scales[j]);
                l = (l < -32 ? -32 : l > 31 ? 31 : l) + 32;
                if (j < 8)
                    y[i].scales[j] = (uint8_t)(l & 0xF);
                else
                    y[i].scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
                y[i].scales[j % 4 + 8] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
            }
            y[i].d = sd_fp32_to_fp16(1 / iscale);
        }
        uint8_t sc[16];
        sd_q3_K_scales(y[i].scales, sc);
        for (int j = 0; j < QK_K / 16; j++) {
            float d = sd_fp16_to_fp32(y[i].d) * (sc[j] - 32);
            if (!d)
                continue;
            for (int ii = 0; ii < 16; ii++) {
                int l = sd_nearest_int(x[16 * j + ii] / d);
                L[16 * j + ii] = (int8_t)((l < -4 ? -4 : l > 3 ? 3 : l) + 4);
            }
        }
        /* bit 2 of element e goes to bit e / 32 of hmask[e % 32] */
        memset(y[i].hmask, 0, sizeof y[i].hmask);
        uint8_t low[QK_K];
        for (int e = 0; e < QK_K; e++) {
            if (L[e] > 3)
                y[i].hmask[e % 32] |= (uint8_t)(1u << (e / 32));
            low[e] = (uint8_t)(L[e] & 3);
        }
        sd_pack_2bit(low, y[i].qs);
    }
}

/* ---- Q4_K / Q5_K shared steps ---- */

/* Fits the 8 sub-blocks of one super-block (levels 0..nmax) into L[256],
 * scales[8], mins[8]; returns the maxima through max_scale / max_min. */
static void fit_sub_blocks_k(const float *x, int nmax, float rmin, float rdelta, int nstep,
                             uint8_t *L, float *scales, float *mins, float *max_scale,
                             float *max_min) {
    float weights[32];
    uint8_t Laux[32];
    *max_scale = 0;
    *max_min = 0;
    for (int j = 0; j < QK_K / 32; j++) {
        const float *xb = x + 32 * j;
        float sum_x2 = 0;
        for (int l = 0; l < 32; l++)
            sum_x2 += xb[l] * xb[l];
        float av_x = sqrtf(sum_x2 / 32);
        for (int l = 0; l < 32; l++)
            weights[l] = av_x + fabsf(xb[l]);
        scales[j] = make_qkx2_quants(32, nmax, xb, weights, L + 32 * j, &mins[j], Laux, rmin,
                                     rdelta, nstep, false);
        if (scales[j] > *max_scale)
            *max_scale = scales[j];
        if (mins[j] > *max_min)
            *max_min = mins[j];
    }
}

/* Quantizes the 8 scales and mins to 6 bits against their maxima and packs
 * them (the inverse of sd_get_scale_min_k4); sets d and dmin. */
static void pack_scales_k(const float *scales, const float *mins, float max_scale, float max_min,
                          uint8_t packed[K_SCALE_SIZE], uint16_t *d, uint16_t *dmin) {
    float inv_scale = max_scale > 0 ? 63.f / max_scale : 0.f;
    float inv_min = max_min > 0 ? 63.f / max_min : 0.f;
    memset(packed, 0, K_SCALE_SIZE);
    for (int j = 0; j < QK_K / 32; j++) {
        uint8_t ls = (uint8_t)sd_nearest_int(inv_scale * scales[j]);
        uint8_t lm = (uint8_t)sd_nearest_int(inv_min * mins[j]);
        ls = ls > 63 ? 63 : ls;
        lm = lm > 63 ? 63 : lm;
        sd_set_scale_min_k4(j, ls, lm, packed);
    }
    *d = sd_fp32_to_fp16(max_scale / 63.f);
    *dmin = sd_fp32_to_fp16(max_min / 63.f);
}

/* Re-rounds every element with the quantized scale and min of its sub-block
 * (L in 0..nmax). Sub-blocks whose quantized scale is 0 keep the fit's L. */
static void requantize_k(const float *x, int nmax, const uint8_t packed[K_SCALE_SIZE],
                         uint16_t d16, uint16_t dmin16, uint8_t *L) {
    for (int j = 0; j < QK_K / 32; j++) {
        uint8_t sc, m;
        sd_get_scale_min_k4(j, packed, &sc, &m);
        const float d = sd_fp16_to_fp32(d16) * sc;
        if (!d)
            continue;
        const float dm = sd_fp16_to_fp32(dmin16) * m;
        for (int ii = 0; ii < 32; ii++) {
            int l = sd_nearest_int((x[32 * j + ii] + dm) / d);
            L[32 * j + ii] = (uint8_t)(l < 0 ? 0 : l > nmax ? nmax : l);
        }
    }
}

void sd_quantize_row_q4_K(const float *x, block_q4_K *y, int64_t k) {
    uint8_t L[QK_K];
    float scales[QK_K / 32], mins[QK_K / 32];
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        float max_scale, max_min;
        fit_sub_blocks_k(x, 15, -1.f, 0.1f, 20, L, scales, mins, &max_scale, &max_min);
        pack_scales_k(scales, mins, max_scale, max_min, y[i].scales, &y[i].d, &y[i].dmin);
        requantize_k(x, 15, y[i].scales, y[i].d, y[i].dmin, L);
        uint8_t *q = y[i].qs;
        for (int j = 0; j < QK_K; j += 64, q += 32) {
            for (int l = 0; l < 32; l++)
                q[l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 4));
        }
    }
}

void sd_quantize_row_q5_K(const float *x, block_q5_K *y, int64_t k) {
    uint8_t L[QK_K];
    float scales[QK_K / 32], mins[QK_K / 32];
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        float max_scale, max_min;
        fit_sub_blocks_k(x, 31, -0.5f, 0.1f, 15, L, scales, mins, &max_scale, &max_min);
        pack_scales_k(scales, mins, max_scale, max_min, y[i].scales, &y[i].d, &y[i].dmin);
        requantize_k(x, 31, y[i].scales, y[i].d, y[i].dmin, L);
        uint8_t *qh = y[i].qh;
        uint8_t *ql = y[i].qs;
        memset(qh, 0, QK_K / 8);
        uint8_t m1 = 1, m2 = 2;
        for (int n = 0; n < QK_K; n += 64, ql += 32, m1 <<= 2, m2 <<= 2) {
            for (int j = 0; j < 32; j++) {
                int l1 = L[n + j], l2 = L[n + j + 32];
                if (l1 > 15) {
                    l1 -= 16;
                    qh[j] |= m1;
                }
                if (l2 > 15) {
                    l2 -= 16;
                    qh[j] |= m2;
                }
                ql[j] = (uint8_t)(l1 | (l2 << 4));
            }
        }
    }
}

void sd_quantize_row_q6_K(const float *x, block_q6_K *y, int64_t k) {
    int8_t L[QK_K];
    float scales[QK_K / 16];
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        float max_scale = 0, max_abs_scale = 0;
        for (int ib = 0; ib < QK_K / 16; ib++) {
            scales[ib] = make_qx_quants(16, 32, x + 16 * ib, L + 16 * ib);
            if (fabsf(scales[ib]) > max_abs_scale) {
                max_abs_scale = fabsf(scales[ib]);
                max_scale = scales[ib];
            }
        }
        if (max_abs_scale < GROUP_MAX_EPS) { /* all (near) zero */
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        float iscale = -128.f / max_scale;
        y[i].d = sd_fp32_to_fp16(1 / iscale);
        for (int ib = 0; ib < QK_K / 16; ib++) {
            int s = sd_nearest_int(iscale * scales[ib]);
            y[i].scales[ib] = (int8_t)(s > 127 ? 127 : s);
        }
        for (int j = 0; j < QK_K / 16; j++) {
            float d = sd_fp16_to_fp32(y[i].d) * y[i].scales[j];
            if (!d)
                continue;
            for (int ii = 0; ii < 16; ii++) {
                int l = sd_nearest_int(x[16 * j + ii] / d);
                l = l < -32 ? -32 : l > 31 ? 31 : l;
                L[16 * j + ii] = (int8_t)(l + 32);
            }
        }
        uint8_t *ql = y[i].ql;
        uint8_t *qh = y[i].qh;
        for (int j = 0; j < QK_K; j += 128, ql += 64, qh += 32) {
            for (int l = 0; l < 32; l++) {
                const uint8_t q1 = L[j + l] & 0xF, q2 = L[j + l + 32] & 0xF;
                const uint8_t q3 = L[j + l + 64] & 0xF, q4 = L[j + l + 96] & 0xF;
                ql[l] = (uint8_t)(q1 | (q3 << 4));
                ql[l + 32] = (uint8_t)(q2 | (q4 << 4));
                qh[l] = (uint8_t)((L[j + l] >> 4) | ((L[j + l + 32] >> 4) << 2) |
                                  ((L[j + l + 64] >> 4) << 4) | ((L[j + l + 96] >> 4) << 6));
            }
        }
    }
}

void sd_quantize_row_q8_K(const float *x, block_q8_K *y, int64_t k) {
    for (int64_t i = 0; i < k / QK_K; i++, x += QK_K) {
        float max = 0, amax = 0;
        for (int j = 0; j < QK_K; j++) {
            if (fabsf(x[j]) > amax) {
                amax = fabsf(x[j]);
                max = x[j];
            }
        }
        if (!amax) {
            memset(&y[i], 0, sizeof y[i]);
            continue;
        }
        /* -127, not -128: llama.cpp keeps q in -127..127 so that sign tricks in
         * the SIMD dot products cannot overflow */
        const float iscale = -127.f / max;
        for (int j = 0; j < QK_K; j++) {
            int v = sd_nearest_int(iscale * x[j]);
            y[i].qs[j] = (int8_t)(v > 127 ? 127 : v < -128 ? -128 : v);
        }
        for (int j = 0; j < QK_K / 16; j++) {
            int sum = 0;
            for (int ii = 0; ii < 16; ii++)
                sum += y[i].qs[16 * j + ii];
            y[i].bsums[j] = (int16_t)sum;
        }
        y[i].d = 1 / iscale;
    }
}
