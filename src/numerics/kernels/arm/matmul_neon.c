/* NEON matmul kernels (aarch64): the scalar reference's arithmetic
 * (matmul_ref.c, matmul_impl.h) on the GGUF block layout, without a repacked
 * copy. Per output row and weight block the block is decoded once (Q8_0 needs
 * no decoding) and dotted with the activation blocks of up to SD_SCHUNK rows;
 * integer dots are exact in any order, and the float work per (block, row) is
 * the reference's fmaf sequence, so the results are bitwise the scalar ones. */
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "numerics/kernels/matmul_impl.h"
#include "numerics/kernels/arm/matmul_neon.h"
#include "numerics/quant.h"

/* ---- activation quantization: quantize_block of matmul_ref.c, 4 floats at a time ---- */

static float quantize_block_neon(const float *x, int n, int8_t *q) {
    float32x4_t vmax = vdupq_n_f32(0.0f);
    for (int i = 0; i < n; i += 4) vmax = vmaxq_f32(vmax, vabsq_f32(vld1q_f32(x + i)));
    float d = vmaxvq_f32(vmax) / 127.0f;
    const float32x4_t id = vdupq_n_f32(d != 0.0f ? 1.0f / d : 0.0f);
    const float32x4_t lo = vdupq_n_f32(-127.0f), hi = vdupq_n_f32(127.0f);
    for (int i = 0; i < n; i += 16) {
        int32x4_t v[4];
        for (int j = 0; j < 4; j++) {
            float32x4_t r = vrndnq_f32(vmulq_f32(vld1q_f32(x + i + 4 * j), id));
            r = vbslq_f32(vcgeq_f32(r, lo), r, lo); /* NaN -> -127, as the scalar clamp */
            v[j] = vcvtq_s32_f32(vminq_f32(r, hi));
        }
        int16x8_t h0 = vcombine_s16(vmovn_s32(v[0]), vmovn_s32(v[1]));
        int16x8_t h1 = vcombine_s16(vmovn_s32(v[2]), vmovn_s32(v[3]));
        vst1q_s8(q + i, vcombine_s8(vmovn_s16(h0), vmovn_s16(h1)));
    }
    return d;
}

/* Block sums as sd_act_block_sums (exact integers). */
static void block_sums_neon(const int8_t *qb, int block, int16_t *sum) {
    if (block == SD_QK) {
        sum[0] = (int16_t)(vaddlvq_s8(vld1q_s8(qb)) + vaddlvq_s8(vld1q_s8(qb + 16)));
        return;
    }
    for (int j = 0; j < 16; j++) sum[j] = vaddlvq_s8(vld1q_s8(qb + 16 * j));
    for (int j = 0; j < 8; j++) sum[16 + j] = (int16_t)(sum[2 * j] + sum[2 * j + 1]);
}

void sd_act_quantize_row_neon(sd_act *a, int s, const float *x) {
    int8_t *q = a->q + (size_t)s * a->n_in;
    for (int64_t b = 0; b < a->nb; b++) {
        int8_t *qb = q + b * a->block;
        a->d[(size_t)s * a->nb + b] = quantize_block_neon(x + b * a->block, a->block, qb);
        block_sums_neon(qb, a->block, a->sum + ((size_t)s * a->nb + b) * a->nsum);
    }
}

/* ---- integer dots without SDOT ---- */

/* out[j] = sum of w[i] * x[i] over sub-block j (sub = 16 or 32 elements) of n.
 * Two int8 products fit an int16 lane (2 * 128 * 127 < 32768). */
void sd_neon_sub_dots_plain(const int8_t *w, const int8_t *x, int n, int sub, int32_t *out) {
    for (int j = 0; j < n / sub; j++, w += sub, x += sub) {
        int32x4_t acc = vdupq_n_s32(0);
        for (int i = 0; i < sub; i += 16) {
            int8x16_t a = vld1q_s8(w + i), b = vld1q_s8(x + i);
            int16x8_t p = vmull_s8(vget_low_s8(a), vget_low_s8(b));
            p = vmlal_s8(p, vget_high_s8(a), vget_high_s8(b));
            acc = vpadalq_s16(acc, p);
        }
        out[j] = vaddvq_s32(acc);
    }
}

/* ---- quantized rows ---- */

/* One decoded weight block against the activation block b of row s: the
 * integers of block_fma (matmul_ref.c) by vector dots, then its fmafs. */
static float block_fma_neon(const sd_wblock *wb, const sd_act *a, int s, int64_t b, float acc,
                            sd_neon_sub_dots_fn dots) {
    const int8_t *xq = a->q + (size_t)s * a->n_in + b * a->block;
    const int16_t *xs = a->sum + ((size_t)s * a->nb + b) * a->nsum;
    float dx = a->d[(size_t)s * a->nb + b];
    int32_t t[16];
    if (a->block == SD_QK) {
        dots(wb->q, xq, SD_QK, SD_QK, t);
        int32_t isum = t[0] - wb->off * xs[0];
        acc = fmaf((float)isum, wb->d * dx, acc);
        if (wb->has_min) acc = fmaf((float)xs[0], wb->m * dx, acc);
        return acc;
    }
    const int nsub = SD_QK_K / wb->sub;
    dots(wb->q, xq, SD_QK_K, wb->sub, t);
    int32_t sumi = 0;
    for (int j = 0; j < nsub; j++) sumi += wb->sc[j] * (t[j] - wb->off * (wb->sub == 16 ? xs[j] : xs[16 + j]));
    acc = fmaf((float)sumi, wb->d * dx, acc);
    if (wb->has_min) {
        int32_t summ = 0;
        for (int j = 0; j < nsub; j++) summ += wb->mn[j] * (wb->sub == 16 ? xs[j] : xs[16 + j]);
        acc = fmaf((float)summ, -(wb->m * dx), acc);
    }
    return acc;
}

/* Q8_0: the file's int8 values need no decoding. */
static void q8_0_rows(const uint8_t *row, const sd_act *a, int s0, int ns, float *acc, sd_neon_sub_dots_fn dots) {
    for (int64_t b = 0; b < a->nb; b++) {
        const uint8_t *blk = row + (size_t)b * 34;
        const float dw = sd_fp16_to_fp32((uint16_t)(blk[0] | blk[1] << 8));
        const int8_t *wq = (const int8_t *)(blk + 2);
        for (int s = 0; s < ns; s++) {
            size_t sb = (size_t)(s0 + s) * (size_t)a->nb + (size_t)b;
            int32_t isum;
            dots(wq, a->q + (size_t)(s0 + s) * a->n_in + b * SD_QK, SD_QK, SD_QK, &isum);
            acc[s] = fmaf((float)isum, dw * a->d[sb], acc[s]);
        }
    }
}

void sd_matmul_neon_quant_with(const sd_matrix *m, const sd_act *a, float *y, int64_t o0, int64_t o1,
                               sd_neon_sub_dots_fn dots) {
    const sd_wtype *wt = sd_wtype_get(m->type);
    const size_t row_bytes = (size_t)a->nb * (size_t)wt->block_bytes;
    sd_wblock wb;
    for (int64_t o = o0; o < o1; o++) {
        const uint8_t *row = (const uint8_t *)m->data + (size_t)o * row_bytes;
        for (int s0 = 0; s0 < a->S; s0 += SD_SCHUNK) {
            int ns = a->S - s0 < SD_SCHUNK ? a->S - s0 : SD_SCHUNK;
            float acc[SD_SCHUNK] = {0};
            if (m->type == GGML_TYPE_Q8_0) {
                q8_0_rows(row, a, s0, ns, acc, dots);
            } else {
                for (int64_t b = 0; b < a->nb; b++) {
                    sd_qtype_decode(wt, row + (size_t)b * wt->block_bytes, &wb);
                    for (int s = 0; s < ns; s++) acc[s] = block_fma_neon(&wb, a, s0 + s, b, acc[s], dots);
                }
            }
            for (int s = 0; s < ns; s++) y[(size_t)(s0 + s) * m->n_out + o] = acc[s];
        }
    }
}

/* ---- float weights: dot_w of matmul_ref.c, lanes 0-3 and 4-7 in two vectors ---- */

/* 8 weights from i on, widened exactly (F16 by the FCVT instruction, BF16 by a shift). */
static void load_w8(uint32_t type, const uint8_t *row, int64_t i, float32x4_t *w0, float32x4_t *w1) {
    if (type == GGML_TYPE_F32) {
        *w0 = vld1q_f32((const float *)row + i);
        *w1 = vld1q_f32((const float *)row + i + 4);
    } else if (type == GGML_TYPE_F16) {
        float16x8_t h = vreinterpretq_f16_u16(vld1q_u16((const uint16_t *)row + i));
        *w0 = vcvt_f32_f16(vget_low_f16(h));
        *w1 = vcvt_high_f32_f16(h);
    } else {
        uint16x8_t h = vld1q_u16((const uint16_t *)row + i);
        *w0 = vreinterpretq_f32_u32(vshll_n_u16(vget_low_u16(h), 16));
        *w1 = vreinterpretq_f32_u32(vshll_high_n_u16(h, 16));
    }
}

static float dot_w_neon(uint32_t type, const uint8_t *row, const float *x, int64_t n) {
    float32x4_t a0 = vdupq_n_f32(0.0f), a1 = a0, w0, w1;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        load_w8(type, row, i, &w0, &w1);
        a0 = vfmaq_f32(a0, w0, vld1q_f32(x + i));
        a1 = vfmaq_f32(a1, w1, vld1q_f32(x + i + 4));
    }
    if (i < n) { /* zero padding, as the reference's fmaf(0, 0, acc) */
        uint8_t wt[8 * 4] = {0};
        float xt[8] = {0};
        size_t es = type == GGML_TYPE_F32 ? 4 : 2;
        memcpy(wt, row + (size_t)i * es, (size_t)(n - i) * es);
        memcpy(xt, x + i, (size_t)(n - i) * sizeof(float));
        load_w8(type, wt, 0, &w0, &w1);
        a0 = vfmaq_f32(a0, w0, vld1q_f32(xt));
        a1 = vfmaq_f32(a1, w1, vld1q_f32(xt + 4));
    }
    /* ((a0 + a4) + (a2 + a6)) + ((a1 + a5) + (a3 + a7)) */
    float32x4_t t = vaddq_f32(a0, a1);
    float32x2_t u = vadd_f32(vget_low_f32(t), vget_high_f32(t));
    return vget_lane_f32(u, 0) + vget_lane_f32(u, 1);
}

void sd_matmul_neon_quant(const sd_matrix *m, const sd_act *a, float *y, int64_t o0, int64_t o1) {
    sd_matmul_neon_quant_with(m, a, y, o0, o1, sd_neon_sub_dots_plain);
}

void sd_matmul_neon_float(const sd_matrix *m, const float *x, int S, float *y, int64_t o0, int64_t o1) {
    size_t es = m->type == GGML_TYPE_F32 ? 4 : 2;
    for (int64_t o = o0; o < o1; o++) {
        const uint8_t *row = (const uint8_t *)m->data + (size_t)o * (size_t)m->n_in * es;
        for (int s = 0; s < S; s++)
            y[(size_t)s * m->n_out + o] = dot_w_neon(m->type, row, x + (size_t)s * m->n_in, m->n_in);
    }
}
