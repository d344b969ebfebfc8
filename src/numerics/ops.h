/* Element-wise and row-wise operations of a transformer forward. Each is
 * defined per row with a fixed reduction order, so it is batch-invariant. */
#ifndef SD_NUMERICS_OPS_H
#define SD_NUMERICS_OPS_H

#include <stdint.h>

/* out[n] = x[n] / sqrt(mean(x^2) + eps) * w[n]  (w may be NULL: no scale). out may alias x. */
void sd_rmsnorm(float *out, const float *x, const float *w, int64_t n, float eps);
/* exp(x) as glibc 2.28+ expf computes it on x86-64 with FMA (__expf_fma:
 * sysdeps/ieee754/flt-32/e_expf.c with its fused multiply-adds), op for op,
 * without errno; bitwise equal to that libm expf for every float (checked
 * exhaustively on glibc 2.36), and the same on every machine whatever its libm. */
float sd_expf(float x);
/* In-place softmax over x[n]: max = first largest x, e_i = sd_expf(x_i - max),
 * sum = e_0 + e_1 + ... left to right, x_i = e_i * (1 / sum). */
void sd_softmax(float *x, int64_t n);
/* nq rows at once (attention: the queries of a work item): for each j < nq,
 * x[j][t] *= scale for t < n[j], then sd_softmax(x[j], n[j]), bitwise. The
 * left-to-right sums of several rows run interleaved, the exponentials 8 at a
 * time. x[j] borrowed, rows must not overlap. */
void sd_softmax_mq(float *const *x, const int64_t *n, int nq, float scale);
/* out[i] = gate[i] / (1 + sd_expf(-gate[i])) * up[i] (silu(gate) * up). out may alias gate. */
void sd_swiglu(float *out, const float *gate, const float *up, int64_t n);
/* out[i] = x[i] / (1 + sd_expf(-x[i])) (SiLU). out may alias x. */
void sd_silu(float *out, const float *x, int64_t n);
/* x[i] += y[i]. */
void sd_add(float *x, const float *y, int64_t n);

/* Rotary position embedding on one head vector x[head_dim] at position pos.
 * neox = false: pairs (2i, 2i+1) (llama, LLAMA_ROPE_TYPE_NORM);
 * neox = true: pairs (i, i + n_rot/2) (qwen2/qwen3, LLAMA_ROPE_TYPE_NEOX).
 * Rotates the first n_rot dims; theta_i = pos * freq_scale * base^(-2i/n_rot). */
void sd_rope(float *x, int n_rot, int64_t pos, float base, float freq_scale, int neox);
/* sd_rope in two steps, so that the heads of one position share the sines.
 * sd_rope_cossin: for the rotation pairs i in [i0, i1) (i1 <= n_rot / 2),
 * cs[2(i-i0)], cs[2(i-i0)+1] = cos, sin of theta_i at pos, theta_i divided
 * by ff[i] when ff is given (Llama 3.1 rope_freqs, as llama.cpp
 * ggml_rope_ext with freq_factors; NULL = none). sd_rope_apply rotates those
 * pairs of x with them. Over [0, n_rot/2) with ff = NULL: bitwise sd_rope. */
void sd_rope_cossin(float *cs, int i0, int i1, int n_rot, int64_t pos, float base, float freq_scale, const float *ff);
void sd_rope_apply(float *x, const float *cs, int i0, int i1, int n_rot, int neox);

/* Dot product sum_i a[i]*b[i] in one fixed order, the same in the scalar and
 * AVX2 builds: 8 lane accumulators, lane l takes i = l mod 8 (acc = fmaf(a, b,
 * acc); the last partial chunk is padded with zeros), then the lanes are summed
 * as ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)). Used for attention scores over the
 * KV cache and for rmsnorm, so every position's result is batch-invariant. */
float sd_dot_f32(const float *a, const float *b, int64_t n);
/* y[i] = fmaf(a, x[i], y[i]) for i < n (attention: value rows into the output). */
void sd_axpy_f32(float *y, float a, const float *x, int64_t n);

/* Attention over consecutive KV cache rows b[r * ld ..] (r < rows):
 * sd_dot_f32_rows: out[r] = sd_dot_f32(a, b + r * ld, n), bitwise, several
 * rows at a time. sd_axpy_f32_rows: sd_axpy_f32(y, w[r], x + r * ld, n) for
 * r = 0, 1, ... in order, bitwise, with y held in registers across the rows. */
void sd_dot_f32_rows(float *out, const float *a, const float *b, int64_t ld, int64_t rows, int64_t n);
void sd_axpy_f32_rows(float *y, const float *w, const float *x, int64_t ld, int64_t rows, int64_t n);

/* Multi-query attention: nq queries (a GQA group x the positions of a verify
 * window) against the same consecutive KV cache rows b[r * ld ..] (r < rows,
 * n floats each). Each key / value row is loaded once for several queries held
 * in registers, instead of once per query. Query j has its own vectors (arrays
 * of nq pointers, borrowed), so any layout of queries and scores works.
 * Bitwise contract, in the scalar and the AVX2 build alike:
 * sd_dot_f32_rows_mq: out[j][r] = sd_dot_f32(q[j], b + r * ld, n) for j < nq, r < rows;
 * sd_axpy_f32_rows_mq: for each j < nq, sd_axpy_f32_rows(y[j], w[j], x, ld, rows, n),
 * i.e. every y[j][i] gets fmaf(w[j][r], x[r * ld + i], .) for r = 0, 1, ... in order.
 * out[j] needs rows floats, y[j] n floats, w[j] rows floats; the outputs of
 * different j must not overlap. nq <= 0 or rows <= 0: nothing happens. */
void sd_dot_f32_rows_mq(float *const *out, const float *const *q, int nq, const float *b, int64_t ld, int64_t rows,
                        int64_t n);
void sd_axpy_f32_rows_mq(float *const *y, const float *const *w, int nq, const float *x, int64_t ld, int64_t rows,
                         int64_t n);

/* The same two kernels over an f16 KV cache: rows of IEEE binary16 (uint16_t
 * bits, b[r * ld ..], n halves each). Each half is widened to float exactly
 * (sd_fp16_to_fp32; F16C VCVTPH2PS in the AVX2 build) and that float enters
 * the fma, so the contract is the f32 one on the widened rows:
 * sd_dot_f16_rows_mq: out[j][r] = sd_dot_f32(q[j], widen(b + r * ld), n);
 * sd_axpy_f16_rows_mq: y[j][i] gets fmaf(w[j][r], widen(x[r * ld + i]), .) for
 * r = 0, 1, ... in order. Same shapes, ownership and nq / rows rules as above. */
void sd_dot_f16_rows_mq(float *const *out, const float *const *q, int nq, const uint16_t *b, int64_t ld,
                        int64_t rows, int64_t n);
void sd_axpy_f16_rows_mq(float *const *y, const float *const *w, int nq, const uint16_t *x, int64_t ld,
                         int64_t rows, int64_t n);

/* out[i] = sd_fp32_to_fp16(x[i]) for i < n (round to nearest even, overflow to
 * inf, subnormals kept, NaN quieted; numerics/quant.h), bitwise the F16C
 * VCVTPS2PH with imm 0 that the AVX2 build runs. The KV cache write. */
void sd_fp32_to_fp16_row(uint16_t *out, const float *x, int64_t n);
/* out[i] = sd_fp16_to_fp32(h[i]) for i < n (exact). */
void sd_fp16_to_fp32_row(float *out, const uint16_t *h, int64_t n);

/* argmax lives in decode/sampler.h (sd_argmax), next to its only users. */

#endif
