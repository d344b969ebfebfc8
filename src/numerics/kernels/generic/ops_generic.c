/* The generic row of the kernel table (kernels.h): portable C, the
 * reference every other row reproduces bit for bit. Row ops and attention
 * pieces (ops.h): every reduction runs in one fixed order per row
 * (ARCHITECTURE.md §5), the order the SIMD builds use; exp-based ops (softmax,
 * swiglu) use sd_expf, glibc's expf reproduced op for op, so that the AVX2
 * build can run it 8 lanes at a time with the same results. */
#include <math.h>
#include <stddef.h>
#include <string.h>

#include "numerics/kernels/ops_kernels.h"
#include "numerics/ops.h"
#include "numerics/quant.h"

/* Element i of a KV row of floats or of f16 halves, as a float (exact). */
static inline float kv_at(const void *b, int64_t i, int f16) {
    return f16 ? sd_fp16_to_fp32(((const uint16_t *)b)[i]) : ((const float *)b)[i];
}

/* 8 lane accumulators and the AVX2 build's reduction tree; b widened element
 * by element when f16 (the same fmas in the same order). */
static inline float dot_scalar_kv(const float *a, const void *b, int64_t n, int f16) {
    float acc[8] = {0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        for (int l = 0; l < 8; l++) acc[l] = fmaf(a[i + l], kv_at(b, i + l, f16), acc[l]);
    if (i < n) /* zero padding, as the AVX2 build loads the tail */
        for (int l = 0; l < 8; l++)
            acc[l] = i + l < n ? fmaf(a[i + l], kv_at(b, i + l, f16), acc[l]) : fmaf(0.0f, 0.0f, acc[l]);
    return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

float sd_dot_f32_generic(const float *a, const float *b, int64_t n) { return dot_scalar_kv(a, b, n, 0); }

void sd_axpy_f32_generic(float *y, float a, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) y[i] = fmaf(a, x[i], y[i]);
}

void sd_dot_f32_rows_generic(float *out, const float *a, const float *b, int64_t ld, int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++) out[r] = dot_scalar_kv(a, b + r * ld, n, 0);
}

void sd_axpy_f32_rows_generic(float *y, const float *w, const float *x, int64_t ld, int64_t rows, int64_t n) {
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < n; i++) y[i] = fmaf(w[r], x[r * ld + i], y[i]);
}

void sd_dot_f32_rows_mq_generic(float *const *out, const float *const *q, int nq, const float *b, int64_t ld,
                                int64_t rows, int64_t n) {
    for (int j = 0; j < nq; j++)
        for (int64_t r = 0; r < rows; r++) out[j][r] = dot_scalar_kv(q[j], b + r * ld, n, 0);
}

void sd_axpy_f32_rows_mq_generic(float *const *y, const float *const *w, int nq, const float *x, int64_t ld,
                                 int64_t rows, int64_t n) {
    for (int j = 0; j < nq; j++)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t i = 0; i < n; i++) y[j][i] = fmaf(w[j][r], x[r * ld + i], y[j][i]);
}

void sd_dot_f16_rows_mq_generic(float *const *out, const float *const *q, int nq, const uint16_t *b, int64_t ld,
                                int64_t rows, int64_t n) {
    for (int j = 0; j < nq; j++)
        for (int64_t r = 0; r < rows; r++) out[j][r] = dot_scalar_kv(q[j], b + r * ld, n, 1);
}

void sd_axpy_f16_rows_mq_generic(float *const *y, const float *const *w, int nq, const uint16_t *x, int64_t ld,
                                 int64_t rows, int64_t n) {
    for (int j = 0; j < nq; j++)
        for (int64_t r = 0; r < rows; r++)
            for (int64_t i = 0; i < n; i++) y[j][i] = fmaf(w[j][r], kv_at(x, r * ld + i, 1), y[j][i]);
}

void sd_fp32_to_fp16_row_generic(uint16_t *out, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = sd_fp32_to_fp16(x[i]);
}

void sd_fp16_to_fp32_row_generic(float *out, const uint16_t *h, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = sd_fp16_to_fp32(h[i]);
}

void sd_add_generic(float *x, const float *y, int64_t n) {
    for (int64_t i = 0; i < n; i++) x[i] += y[i];
}

void sd_scale_mul_generic(float *out, const float *x, float scale, const float *w, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float v = x[i] * scale;
        out[i] = w ? v * w[i] : v;
    }
}

const uint64_t sd_expf_tab[32] = {
    0x3ff0000000000000, 0x3fefd9b0d3158574, 0x3fefb5586cf9890f, 0x3fef9301d0125b51, 0x3fef72b83c7d517b,
    0x3fef54873168b9aa, 0x3fef387a6e756238, 0x3fef1e9df51fdee1, 0x3fef06fe0a31b715, 0x3feef1a7373aa9cb,
    0x3feedea64c123422, 0x3feece086061892d, 0x3feebfdad5362a27, 0x3feeb42b569d4f82, 0x3feeab07dd485429,
    0x3feea47eb03a5585, 0x3feea09e667f3bcd, 0x3fee9f75e8ec5f74, 0x3feea11473eb0187, 0x3feea589994cce13,
    0x3feeace5422aa0db, 0x3feeb737b0cdc5e5, 0x3feec49182a3f090, 0x3feed503b23e255d, 0x3feee89f995ad3ad,
    0x3feeff76f2fb5e47, 0x3fef199bdd85529c, 0x3fef3720dcef9069, 0x3fef5818dcfba487, 0x3fef7c97337b9b5f,
    0x3fefa4afa2a490da, 0x3fefd0765b6e4540,
};

/* e_expf.c: k = round(x * 32/ln2) (by the shift trick), r = x * 32/ln2 - k,
 * exp(x) = 2^(k/32) * (C0 r^3 + C1 r^2 + C2 r + 1), all in double, rounded
 * once to float. fma() where __expf_fma has a fused multiply-add (its
 * disassembly), so the roundings are glibc's; |x| >= 88 takes glibc's
 * special cases (inf/nan, overflow, underflow to 0 or to the least subnormal). */
float sd_expf(float x) {
    uint32_t ux;
    memcpy(&ux, &x, sizeof ux);
    const uint32_t abstop = (ux >> 20) & 0x7ff;
    if (abstop >= 0x42b) { /* |x| >= 88 or nan */
        if (ux == 0xff800000u) return 0.0f;
        if (abstop >= 0x7f8) return x + x;
        if (x > SD_EXPF_OFLOW) return INFINITY;
        if (x < SD_EXPF_UFLOW) return 0.0f;
        if (x < SD_EXPF_MAY_UFLOW) return 0x1p-149f;
    }
    const double xd = x, kds = fma(SD_EXPF_INVLN2N, xd, SD_EXPF_SHIFT), kd = kds - SD_EXPF_SHIFT;
    const double r = fma(SD_EXPF_INVLN2N, xd, -kd);
    uint64_t ki, t;
    memcpy(&ki, &kds, sizeof ki);
    t = sd_expf_tab[ki % 32] + (ki << 47);
    double s;
    memcpy(&s, &t, sizeof s);
    const double z = fma(SD_EXPF_C0, r, SD_EXPF_C1), r2 = r * r, y = fma(SD_EXPF_C2, r, 1.0);
    return (float)(fma(z, r2, y) * s);
}

void sd_softmax_generic(float *x, int64_t n) {
    if (n <= 0) return;
    float max = x[0];
    for (int64_t i = 1; i < n; i++)
        if (x[i] > max) max = x[i];
    float sum = 0.0f;
    for (int64_t i = 0; i < n; i++) {
        x[i] = sd_expf(x[i] - max);
        sum += x[i];
    }
    float inv = 1.0f / sum;
    for (int64_t i = 0; i < n; i++) x[i] *= inv;
}

void sd_softmax_mq_generic(float *const *x, const int64_t *n, int nq, float scale) {
    for (int j = 0; j < nq; j++) {
        for (int64_t t = 0; t < n[j]; t++) x[j][t] *= scale;
        sd_softmax_generic(x[j], n[j]);
    }
}

/* silu(g) = g / (1 + exp(-g)) (llama.cpp ggml_silu_f32). */
void sd_swiglu_generic(float *out, const float *gate, const float *up, int64_t n) {
    for (int64_t i = 0; i < n; i++) {
        float g = gate[i];
        out[i] = g / (1.0f + sd_expf(-g)) * up[i];
    }
}

void sd_silu_generic(float *out, const float *x, int64_t n) {
    for (int64_t i = 0; i < n; i++) out[i] = x[i] / (1.0f + sd_expf(-x[i]));
}
