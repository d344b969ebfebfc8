/* The per-token kernels of a Gated DeltaNet layer (qwen35; llama.cpp
 * ggml-cpu/ops.cpp ggml_compute_forward_ssm_conv_f32 and
 * ggml_compute_forward_gated_delta_net): the causal depthwise convolution
 * step and the delta-rule state update. One token at a time, whatever the
 * batch, so a position's result never depends on how tokens were batched;
 * every output element is computed by the same operations in the scalar and
 * the AVX2 build (vectors run across independent channels / value indices,
 * never across a reduction), so both builds give the same bits. */
#ifndef SD_NUMERICS_GDN_H
#define SD_NUMERICS_GDN_H

#include <stdint.h>

/* One step of a causal depthwise convolution of kernel size K >= 1 over
 * channels [0, n): window rows win[r * ld ..] (r < K - 1) hold the previous
 * K - 1 inputs, oldest first; kernel rows w[j * ld ..] (j < K) the weights,
 * w[K-1] for the newest input x[n]. y[c] = w[0][c] * u_0 + ... + w[K-1][c] * x[c]
 * (u_r = win[r][c]), evaluated as a product then fmaf's in order j = 0, 1, ...
 * Then the window shifts by one: win[r] = win[r + 1], win[K-2] = x. y[n] must
 * not alias win or x. ld >= n (channels of one row are contiguous; callers
 * pass pointers offset to their channel range). */
void sd_conv_step(float *y, float *win, const float *w, const float *x, int K, int64_t ld, int64_t n);

/* One token of the gated delta rule for one head with an S x S state
 * st[i * S + j] (i key index, j value index), f32, in place:
 *   st    <- decay * st                 (decay = exp(g), g <= 0)
 *   u[j]   = sum_i st[i][j] k[i]        (the prediction, from the decayed state)
 *   d[j]   = (v[j] - u[j]) * beta
 *   st    <- st + k d^T                 (st[i][j] = fmaf(k[i], d[j], st[i][j]))
 *   o[j]   = scale * sum_i st[i][j] q[i]
 * Sums run over i = 0, 1, ... as fmaf chains starting from 0. S <= SD_GDN_MAX_STATE. */
#define SD_GDN_MAX_STATE 512
void sd_gdn_step(float *st, const float *q, const float *k, const float *v, float decay, float beta, float scale,
                 float *o, int S);

/* T tokens of the same head in order, bitwise T calls of sd_gdn_step: token
 * t reads q + t * ld, k + t * ld, v + t * ld (S floats each), decay[t * ls],
 * beta[t * ls], and writes o + t * ldo. Column j of the state depends only on
 * column j, so the AVX2 build runs all T tokens over one block of columns
 * while it sits in L1, then the next block (the same operations per element). */
void sd_gdn_tokens(float *st, int S, int T, const float *q, const float *k, const float *v, int64_t ld,
                   const float *decay, const float *beta, int64_t ls, float scale, float *o, int64_t ldo);

#endif
