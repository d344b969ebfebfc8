/* Transformer ops (ops.h): each runs the build of the kernel table's row in
 * use (kernels/kernels.h); all builds agree bit for bit (the generic row,
 * kernels/generic/ops_generic.c, is the reference). The rotary embedding has
 * one build, here. */
#include "numerics/ops.h"

#include <math.h>
#include <stddef.h>

#include "numerics/kernels/kernels.h"

float sd_dot_f32(const float *a, const float *b, int64_t n) { return sd_kernels_active()->dot_f32(a, b, n); }

void sd_axpy_f32(float *y, float a, const float *x, int64_t n) { sd_kernels_active()->axpy_f32(y, a, x, n); }

void sd_dot_f32_rows(float *out, const float *a, const float *b, int64_t ld, int64_t rows, int64_t n) {
    sd_kernels_active()->dot_f32_rows(out, a, b, ld, rows, n);
}

void sd_axpy_f32_rows(float *y, const float *w, const float *x, int64_t ld, int64_t rows, int64_t n) {
    sd_kernels_active()->axpy_f32_rows(y, w, x, ld, rows, n);
}

void sd_dot_f32_rows_mq(float *const *out, const float *const *q, int nq, const float *b, int64_t ld, int64_t rows,
                        int64_t n) {
    sd_kernels_active()->dot_f32_rows_mq(out, q, nq, b, ld, rows, n);
}

void sd_axpy_f32_rows_mq(float *const *y, const float *const *w, int nq, const float *x, int64_t ld, int64_t rows,
                         int64_t n) {
    sd_kernels_active()->axpy_f32_rows_mq(y, w, nq, x, ld, rows, n);
}

void sd_dot_f16_rows_mq(float *const *out, const float *const *q, int nq, const uint16_t *b, int64_t ld,
                        int64_t rows, int64_t n) {
    sd_kernels_active()->dot_f16_rows_mq(out, q, nq, b, ld, rows, n);
}

void sd_axpy_f16_rows_mq(float *const *y, const float *const *w, int nq, const uint16_t *x, int64_t ld,
                         int64_t rows, int64_t n) {
    sd_kernels_active()->axpy_f16_rows_mq(y, w, nq, x, ld, rows, n);
}

void sd_fp32_to_fp16_row(uint16_t *out, const float *x, int64_t n) { sd_kernels_active()->fp32_to_fp16_row(out, x, n); }

void sd_fp16_to_fp32_row(float *out, const uint16_t *h, int64_t n) { sd_kernels_active()->fp16_to_fp32_row(out, h, n); }

void sd_add(float *x, const float *y, int64_t n) { sd_kernels_active()->add(x, y, n); }

/* llama.cpp ggml_compute_forward_rms_norm: mean of squares, 1/sqrt(mean+eps),
 * then the weight multiply (a separate op there, fused here in the same order). */
void sd_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps) {
    const sd_kernels *k = sd_kernels_active();
    float ss = k->dot_f32(x, x, n);
    float scale = 1.0f / sqrtf(ss / (float)n + eps);
    k->scale_mul(out, x, scale, w, n);
}

void sd_softmax(float *x, int64_t n) { sd_kernels_active()->softmax(x, n); }

void sd_softmax_mq(float *const *x, const int64_t *n, int nq, float scale) {
    sd_kernels_active()->softmax_mq(x, n, nq, scale);
}

void sd_swiglu(float *out, const float *gate, const float *up, int64_t n) {
    sd_kernels_active()->swiglu(out, gate, up, n);
}

void sd_silu(float *out, const float *x, int64_t n) { sd_kernels_active()->silu(out, x, n); }

/* llama.cpp rope_yarn without extrapolation (ext_factor = 0, attn_factor = 1):
 * theta_i = pos * freq_scale * base^(-2i/n_rot). NORM rotates (2i, 2i+1),
 * NEOX rotates (i, i + n_rot/2). */
/* theta_i of sd_rope; ff (Llama 3.1 frequency factors) divides it when given. */
static float rope_theta(int i, int n_rot, int64_t pos, float base, float freq_scale, const float *ff) {
    float theta = (float)pos * freq_scale * powf(base, -2.0f * (float)i / (float)n_rot);
    if (ff) theta /= ff[i];
    return theta;
}

static void rope_rotate(float *x, int i, int half, int neox, float c, float s) {
    int a = neox ? i : 2 * i, b = neox ? i + half : 2 * i + 1;
    float x0 = x[a], x1 = x[b];
    x[a] = x0 * c - x1 * s;
    x[b] = x0 * s + x1 * c;
}

void sd_rope(float *x, int n_rot, int64_t pos, float base, float freq_scale, int neox) {
    int half = n_rot / 2;
    for (int i = 0; i < half; i++) {
        float theta = rope_theta(i, n_rot, pos, base, freq_scale, NULL);
        rope_rotate(x, i, half, neox, cosf(theta), sinf(theta));
    }
}

void sd_rope_cossin(float *cs, int i0, int i1, int n_rot, int64_t pos, float base, float freq_scale, const float *ff) {
    for (int i = i0; i < i1; i++) {
        float theta = rope_theta(i, n_rot, pos, base, freq_scale, ff);
        cs[2 * (i - i0)] = cosf(theta);
        cs[2 * (i - i0) + 1] = sinf(theta);
    }
}

void sd_rope_apply(float *x, const float *cs, int i0, int i1, int n_rot, int neox) {
    for (int i = i0; i < i1; i++) rope_rotate(x, i, n_rot / 2, neox, cs[2 * (i - i0)], cs[2 * (i - i0) + 1]);
}
