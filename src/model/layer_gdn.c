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
#include <string.h>

#include "model/layers.h"
#include "numerics/gdn.h"
#include "numerics/ops.h"

/* Channels per conv work item: whole AVX2 vectors. */
#define CONV_CHUNK 256

/* The first token t of this batch of S whose step (position len + t, step
 * p = len + t + 1) the forward captures as kind (model.h
 * sd_context_capture_from); S when none. */
static int capture_start(const sd_context *c, sd_capture_kind kind, int S) {
    return sd_recurrent_capture_start(&c->rec, kind, c->kv.len, S);
}

/* INPUTS capture: per captured token, the recurrence's inputs as the steps
 * below leave them (mix, conv output after SiLU and L2 norms, decay, beta). */
static void capture_inputs(sd_context *c, const sd_layer *L, int S) {
    const int64_t cd = c->m->hp.ssm_conv_dim, Hv = c->m->hp.ssm_n_v_heads;
    for (int t = capture_start(c, SD_CAPTURE_INPUTS, S); t < S; t++) {
        float *slot = sd_capture_slot(&c->rec, c->kv.len + t + 1, L->slot);
        memcpy(slot, c->sc.mix + t * cd, (size_t)cd * sizeof *slot);
        memcpy(slot + cd, c->sc.conv + t * cd, (size_t)cd * sizeof *slot);
        memcpy(slot + 2 * cd, c->sc.alpha + t * Hv, (size_t)Hv * sizeof *slot);
        memcpy(slot + 2 * cd + Hv, c->sc.beta + t * Hv, (size_t)Hv * sizeof *slot);
    }
}

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
    float *beta = c->sc.beta + t * Hv, *alpha = c->sc.alpha + t * Hv;
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
    float *st = sd_recurrent_ssm(&c->rec, 0, L->slot) + (int64_t)h * Sd * Sd;
    const float scale = 1.0f / sqrtf((float)Sd);
    const int t_cap = capture_start(c, SD_CAPTURE_STATE, S);
    /* Up to the first captured step in one call, then step by step with a copy
     * of the head's state after each: sd_gdn_tokens is bitwise a sequence of
     * single steps, however it is split. */
    for (int t0 = 0; t0 < S;) {
        const int T = t0 < t_cap ? t_cap - t0 : 1;
        sd_gdn_tokens(st, Sd, T, c->sc.conv + t0 * cd + (int64_t)kh * Sd, c->sc.conv + t0 * cd + (int64_t)(Hk + kh) * Sd,
                      c->sc.conv + t0 * cd + (int64_t)(2 * Hk + h) * Sd, cd, c->sc.alpha + t0 * Hv + h, c->sc.beta + t0 * Hv + h,
                      Hv, scale, c->sc.gdn_o + t0 * vd + (int64_t)h * Sd, vd);
        t0 += T;
        if (t0 > t_cap) {
            const int64_t off = c->rec.conv_floats + (int64_t)h * Sd * Sd;
            memcpy(sd_capture_slot(&c->rec, c->kv.len + t0, L->slot) + off, st, (size_t)Sd * (size_t)Sd * sizeof *st);
        }
    }
    for (int t = 0; t < S; t++) {
        float *o = c->sc.gdn_o + t * vd + (int64_t)h * Sd;
        sd_rmsnorm(o, o, L->ssm_norm, Sd, hp->rms_eps);
        sd_swiglu(o, c->sc.z + t * vd + (int64_t)h * Sd, o, Sd); /* o * silu(z) */
    }
}

void sd_gdn_project(sd_context *c, const sd_layer *L, int S) {
    const sd_matrix *proj[4] = {&L->ssm_qkv, &L->ssm_z, &L->ssm_beta, &L->ssm_alpha};
    float *proj_out[4] = {c->sc.mix, c->sc.z, c->sc.beta, c->sc.alpha};
    sd_matmul_multi(proj, 4, c->sc.xb, S, proj_out, c->n_threads);
}

void sd_gdn_recur(sd_context *c, const sd_layer *L, int S) {
    const sd_hparams *hp = &c->m->hp;
    const int Sd = hp->ssm_state, Hk = hp->ssm_n_k_heads, Hv = hp->ssm_n_v_heads, K = hp->ssm_conv_kernel;
    const int64_t cd = hp->ssm_conv_dim;
    float *win = sd_recurrent_conv(&c->rec, 0, L->slot);
    const int n_chunks = (int)((cd + CONV_CHUNK - 1) / CONV_CHUNK);
    const int t_cap = capture_start(c, SD_CAPTURE_STATE, S);
#pragma omp parallel num_threads(c->n_threads)
    {
        /* conv + SiLU: each chunk of channels through the tokens in order */
#pragma omp for schedule(static) nowait
        for (int ch = 0; ch < n_chunks; ch++) {
            const int64_t c0 = (int64_t)ch * CONV_CHUNK, n = cd - c0 < CONV_CHUNK ? cd - c0 : CONV_CHUNK;
            for (int t = 0; t < S; t++) {
                float *y = c->sc.conv + t * cd + c0;
                sd_conv_step(y, win + c0, L->conv_w + c0, c->sc.mix + t * cd + c0, K, cd, n);
                sd_silu(y, y, n);
                if (t >= t_cap) /* STATE capture: this chunk of the window after step t */
                    for (int r = 0; r < K - 1; r++)
                        memcpy(sd_capture_slot(&c->rec, c->kv.len + t + 1, L->slot) + r * cd + c0, win + r * cd + c0,
                               (size_t)n * sizeof *win);
            }
        }
#pragma omp for schedule(static)
        for (int t = 0; t < S; t++) gates(c, L, t);
        /* q and k heads to unit length */
#pragma omp for schedule(static)
        for (int it = 0; it < S * 2 * Hk; it++)
            l2norm(c->sc.conv + (it / (2 * Hk)) * cd + (int64_t)(it % (2 * Hk)) * Sd, Sd, hp->rms_eps);
#pragma omp for schedule(static)
        for (int h = 0; h < Hv; h++) head_tokens(c, L, h, S);
    }
    capture_inputs(c, L, S);
}

void sd_gdn_out(sd_context *c, const sd_layer *L, int S) {
    sd_matmul(&L->ssm_out, c->sc.gdn_o, S, c->sc.xb, c->n_threads);
}
