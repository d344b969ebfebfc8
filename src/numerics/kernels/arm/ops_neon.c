/* NEON builds of the row ops (aarch64); each matches its scalar twin in ops.c
 * bit for bit: the 8 accumulator lanes of the scalar dot are lanes 0-3 and
 * 4-7 of two vectors, the same fused multiply-adds in the same order, the
 * same final tree. The exp-based ops and the f16 conversions run the scalar
 * code (ops.c). */
#include <arm_neon.h>
#include <math.h>
#include <string.h>

#include "numerics/kernels/ops_kernels.h"

/* ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)) of the lanes c0 = l0..l3, c1 = l4..l7. */
static inline float hsum_tree(float32x4_t c0, float32x4_t c1) {
    float32x4_t t = vaddq_f32(c0, c1);
    float32x2_t u = vadd_f32(vget_low_f32(t), vget_high_f32(t));
    return vget_lane_f32(u, 0) + vget_lane_f32(u, 1);
}

/* 8 elements from p + i (f16 halves widened exactly), the tail zero-padded. */
static inline void load8(const void *p, int64_t i, int64_t n, int f16, float32x4_t *v0, float32x4_t *v1) {
    if (i + 8 <= n) {
        if (f16) {
            float16x8_t h = vreinterpretq_f16_u16(vld1q_u16((const uint16_t *)p + i));
            *v0 = vcvt_f32_f16(vget_low_f16(h));
            *v1 = vcvt_high_f32_f16(h);
        } else {
            *v0 = vld1q_f32((const float *)p + i);
            *v1 = vld1q_f32((const float *)p + i + 4);
        }
        return;
    }
    if (f16) {
        uint16_t h[8] = {0};
        memcpy(h, (const uint16_t *)p + i, (size_t)(n - i) * sizeof h[0]);
        load8(h, 0, 8, 1, v0, v1);
    } else {
        float f[8] = {0};
        memcpy(f, (const float *)p + i, (size_t)(n - i) * sizeof f[0]);
        load8(f, 0, 8, 0, v0, v1);
    }
}

static inline float dot_kv(const float *a, const void *b, int64_t n, int f16) {
    float32x4_t c0 = vdupq_n_f32(0.0f), c1 = c0, a0, a1, b0, b1;
    for (int64_t i = 0; i < n; i += 8) {
        load8(a, i, n, 0, &a0, &a1);
        load8(b, i, n, f16, &b0, &b1);
        c0 = vfmaq_f32(c0, a0, b0);
        c1 = vfmaq_f32(c1, a1, b1);
    }
    return hsum_tree(c0, c1);
}

float sd_dot_f32_neon(const float *a, const float *b, int64_t n) { return dot_kv(a, b, n, 0); }

/* y[i] = fma(a, x[i], y[i]); elements are independent, so 4 at a time. */
void sd_axpy_f32_neon(float *y, float a, const float *x, int64_t n) {
    const float32x4_t va = vdupq_n_f32(a);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(y + i, vfmaq_f32(vld1q_f32(y + i), va, vld1q_f32(x + i)));
    for (; i < n; i++) y[i] = fmaf(a, x[i], y[i]);
}

void sd_dot_f32_rows_neon(float *out, const float *a, const float *b, int64_t ld, int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) out[r] = dot_kv(a, b + r * ld, n, 0);
}

void sd_axpy_f32_rows_neon(float *y, const float *w, const float *x, int64_t ld, int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) sd_axpy_f32_neon(y, w[r], x + r * ld, n);
}

void sd_dot_f32_rows_mq_neon(float *const *out, const float *const *q, int nq, const float *b, int64_t ld,
                             int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++)
        for (int j = 0; j < nq; j++) out[j][r] = dot_kv(q[j], b + r * ld, n, 0);
}

void sd_axpy_f32_rows_mq_neon(float *const *y, const float *const *w, int nq, const float *x, int64_t ld,
                              int64_t rows, int64_t n) {
    for (int j = 0; j < nq; j++) sd_axpy_f32_rows_neon(y[j], w[j], x, ld, rows, n);
}

void sd_dot_f16_rows_mq_neon(float *const *out, const float *const *q, int nq, const uint16_t *b, int64_t ld,
                             int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++)
        for (int j = 0; j < nq; j++) out[j][r] = dot_kv(q[j], b + r * ld, n, 1);
}

/* Row r's widened values 4 at a time into every query's y, rows in order. */
void sd_axpy_f16_rows_mq_neon(float *const *y, const float *const *w, int nq, const uint16_t *x, int64_t ld,
                              int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) {
        const uint16_t *xr = x + r * ld;
        int64_t i = 0;
        for (; i + 4 <= n; i += 4) {
            float32x4_t v = vcvt_f32_f16(vreinterpret_f16_u16(vld1_u16(xr + i)));
            for (int j = 0; j < nq; j++) vst1q_f32(y[j] + i, vfmaq_f32(vld1q_f32(y[j] + i), vdupq_n_f32(w[j][r]), v));
        }
        for (; i < n; i++) {
            float v = vgetq_lane_f32(vcvt_f32_f16(vreinterpret_f16_u16(vdup_n_u16(xr[i]))), 0);
            for (int j = 0; j < nq; j++) y[j][i] = fmaf(w[j][r], v, y[j][i]);
        }
    }
}

void sd_add_neon(float *x, const float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) vst1q_f32(x + i, vaddq_f32(vld1q_f32(x + i), vld1q_f32(y + i)));
    for (; i < n; i++) x[i] += y[i];
}

void sd_scale_mul_neon(float *out, const float *x, float scale, const float *w, int64_t n) {
    const float32x4_t vs = vdupq_n_f32(scale);
    int64_t i = 0;
    for (; i + 4 <= n; i += 4) {
        float32x4_t v = vmulq_f32(vld1q_f32(x + i), vs);
        vst1q_f32(out + i, w ? vmulq_f32(v, vld1q_f32(w + i)) : v);
    }
    for (; i < n; i++) {
        float v = x[i] * scale;
        out[i] = w ? v * w[i] : v;
    }
}
