/* Element-wise and row-wise operations of a transformer forward. Each is
 * defined per row with a fixed reduction order, so it is batch-invariant. */
#ifndef SD_NUMERICS_OPS_H
#define SD_NUMERICS_OPS_H

#include <stdint.h>

/* out[n] = x[n] / sqrt(mean(x^2) + eps) * w[n]  (w may be NULL: no scale). out may alias x. */
void sd_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps);
/* In-place softmax over x[n]. */
void sd_softmax(float *x, int64_t n);
/* out[i] = silu(gate[i]) * up[i]. out may alias gate. */
void sd_swiglu(float *out, const float *gate, const float *up, int64_t n);
/* x[i] += y[i]. */
void sd_add(float *x, const float *y, int64_t n);

/* Rotary position embedding on one head vector x[head_dim] at position pos.
 * neox = false: pairs (2i, 2i+1) (llama, LLAMA_ROPE_TYPE_NORM);
 * neox = true: pairs (i, i + n_rot/2) (qwen2/qwen3, LLAMA_ROPE_TYPE_NEOX).
 * Rotates the first n_rot dims; theta_i = pos * freq_scale * base^(-2i/n_rot). */
void sd_rope(float *x, int n_rot, int64_t pos, float base, float freq_scale, int neox);

/* Dot product sum_i a[i]*b[i] in one fixed order, the same in the scalar and
 * AVX2 builds: 8 lane accumulators, lane l takes i = l mod 8 (acc = fmaf(a, b,
 * acc); the last partial chunk is padded with zeros), then the lanes are summed
 * as ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)). Used for attention scores over the
 * KV cache and for rmsnorm, so every position's result is batch-invariant. */
float sd_dot_f32(const float *a, const float *b, int64_t n);
/* y[i] = fmaf(a, x[i], y[i]) for i < n (attention: value rows into the output). */
void sd_axpy_f32(float *y, float a, const float *x, int64_t n);

/* argmax lives in decode/sampler.h (sd_argmax), next to its only users. */

#endif
