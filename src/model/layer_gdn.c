/* The Gated DeltaNet layer of qwen35 (llama.cpp src/models/qwen35.cpp
 * build_layer_attn_linear, delta-net-base.cpp; fact sheet
 * qwen35-mtp-eagle3.md §2.3). Per token t of the batch, from the normed input n:
 *   mix = attn_qkv · n  (conv_dim = q | k | v),  z = attn_gate · n,
 *   beta = sigmoid(ssm_beta · n),  g = softplus(ssm_alpha · n + dt_bias) * ssm_a
 *   y = silu(causal depthwise conv of mix over the window of the last K - 1 inputs)
 *   q, k = l2norm per head of y's q and k parts (H_k heads of S), v = y's v part (H_v heads)
 *   per V head h, with Q/K head h mod H_k (the GGUF's tiled V order):
 *     o_h = delta rule step (numerics/gdn.h) on the state of head h
 *     o_h = rmsnorm(o_h) * ssm_norm * silu(z_h)
 *   out = ssm_out · o
 * The projections are batched matmuls; the recurrence runs token by token in
 * position order, so each position's result is that of a lone token (batch
 * invariance), and the threads split channels (conv) and heads (delta rule),
 * never a reduction, so the thread count does not change a bit either. */
#include <math.h>
#include <omp.h>

#include "model/layers.h"
#include "numerics/gdn.h"
#include "numerics/ops.h"

/* Channels per conv work item: whole AVX2 vectors. */
#define CONV_CHUNK 256

/* x / sqrt(sum x^2 + eps), in place (ggml_l2_norm as qwen35 uses it: eps
 * inside the root; llama.cpp src/models/models.h). */
static void l2norm(float *x, int n, float eps) {
    const float r = 1.0f / sqrtf(sd_dot_f32(x, x, n) + eps);
    for (int i = 0; i < n; i++) x[i] *= r;
}

/* ggml's softplus (ggml-cpu/unary-ops.cpp): x above 20 passes through. */
static float softplus(float x) { return x > 20.0f ? x : logf(1.0f + sd_expf(x)); }

/* The gates of every (token, V head), in place: beta <- sigmoid(beta),
 * alpha <- exp(g) with g = softplus(alpha + dt_bias) * ssm_a (the decay). */
static void gates(sd_context *c, const sd_layer *L, int t) {
    const int Hv = c->m->hp.ssm_n_v_heads;
    float *beta = c->beta + t * Hv, *alpha = c->alpha + t * Hv;
    for (int h = 0; h < Hv; h++) {
        beta[h] = 1.0f / (1.0f + sd_expf(-beta[h]));
        alpha[h] = sd_expf(softplus(alpha[h] + L->dt_bias[h]) * L->ssm_a[h]);
    }
}

/* V head h over the batch's S tokens: the delta rule, then the gated norm. */
static void head_tokens(sd_context *c, const sd_layer *L, int h, int S) {
    const sd_hparams *hp = &c->m->hp;
    const int Sd = hp->ssm_state, Hk = hp->ssm_n_k_heads, Hv = hp->ssm_n_v_heads;
    const int64_t cd = hp->ssm_conv_dim, vd = (int64_t)Hv * Sd;
    const int kh = h % Hk; /* tiled: V head h reads Q/K head h mod H_k */
    float *st = sd_recurrent_ssm(&c->rec, L->slot) + (int64_t)h * Sd * Sd;
    sd_gdn_tokens(st, Sd, S, c->conv + (int64_t)kh * Sd, c->conv + (int64_t)(Hk + kh) * Sd,
                  c->conv + (int64_t)(2 * Hk + h) * Sd, cd, c->alpha + h, c->beta + h, Hv, 1.0f / sqrtf((float)Sd),
                  c->gdn_o + (int64_t)h * Sd, vd);
    for (int t = 0; t < S; t++) {
        float *o = c->gdn_o + t * vd + (int64_t)h * Sd;
        sd_rmsnorm(o, o, L->ssm_norm, Sd, hp->rms_eps);
        sd_swiglu(o, c->z + t * vd + (int64_t)h * Sd, o, Sd); /* o * silu(z) */
    }
}

void sd_gdn_project(sd_context *c, const sd_layer *L, int S) {
    const sd_matrix *proj[4] = {&L->ssm_qkv, &L->ssm_z, &L->ssm_beta, &L->ssm_alpha};
    float *proj_out[4] = {c->mix, c->z, c->beta, c->alpha};
    sd_matmul_multi(proj, 4, c->xb, S, proj_out, c->n_threads);
}

void sd_gdn_recur(sd_context *c, const sd_layer *L, int S) {
    const sd_hparams *hp = &c->m->hp;
    const int Sd = hp->ssm_state, Hk = hp->ssm_n_k_heads, Hv = hp->ssm_n_v_heads, K = hp->ssm_conv_kernel;
    const int64_t cd = hp->ssm_conv_dim;
    float *win = sd_recurrent_conv(&c->rec, L->slot);
    const int n_chunks = (int)((cd + CONV_CHUNK - 1) / CONV_CHUNK);
#pragma omp parallel num_threads(c->n_threads)
    {
        /* conv + SiLU: each chunk of channels through the tokens in order */
#pragma omp for schedule(static) nowait
        for (int ch = 0; ch < n_chunks; ch++) {
            const int64_t c0 = (int64_t)ch * CONV_CHUNK, n = cd - c0 < CONV_CHUNK ? cd - c0 : CONV_CHUNK;
            for (int t = 0; t < S; t++) {
                float *y = c->conv + t * cd + c0;
                sd_conv_step(y, win + c0, L->conv_w + c0, c->mix + t * cd + c0, K, cd, n);
                sd_silu(y, y, n);
            }
        }
#pragma omp for schedule(static)
        for (int t = 0; t < S; t++) gates(c, L, t);
        /* q and k heads to unit length */
#pragma omp for schedule(static)
        for (int it = 0; it < S * 2 * Hk; it++)
            l2norm(c->conv + (it / (2 * Hk)) * cd + (int64_t)(it % (2 * Hk)) * Sd, Sd, hp->rms_eps);
#pragma omp for schedule(static)
        for (int h = 0; h < Hv; h++) head_tokens(c, L, h, S);
    }
}

void sd_layer_gdn(sd_context *c, const sd_layer *L, int S) {
    sd_gdn_project(c, L, S);
    sd_gdn_recur(c, L, S);
    sd_matmul(&L->ssm_out, c->gdn_o, S, c->xb, c->n_threads);
}
