/* sd-genmodel --grow for qwen35 (Qwen3.5 / Qwen3.6 Gated DeltaNet hybrids):
 * a small trained qwen35 model (its GDN layers, gated attention and MTP block)
 * placed inside a real Qwen3.5 shape, computing the same function.
 *
 *   sd-genmodel --grow models/fixture-q35-target.gguf --shape qwen35-27b --type q4_k -o T.gguf
 *
 * Small sizes: width d, FFN f, attention heads n_h / n_kv (GQA group g) of
 * head_dim dh with n_r rotary dims, GDN Q/K heads H_k, V heads H_v of state
 * size s (conv_dim = (2 H_k + H_v) s). Grown: D, F, N_h / N_kv (G), Dh, R,
 * H_K, H_V, S. Ratios rho_h = Dh/dh, rho_r = R/n_r, rho_s = S/s (integers).
 * One key, attention.layer_norm_rms_epsilon, is the eps of every norm of a
 * qwen35 model: the block RMSNorms (over D), the attention q/k head norms
 * (over Dh), the GDN q/k L2 norm (over S) and the GDN output norm (over S).
 * The grown file has eps' = e * eps, and each site is made to see eps again:
 *
 * 1. Residual stream: x' = [a x, a x, ..., a x, 0] (k copies of the small
 *    stream scaled by a, the rest 0). Every writer of the stream (token_embd's
 *    columns, attn_output, ssm_out, ffn_down, the MTP eh_proj) writes its small
 *    rows into each copy, times a. Then mean_D(x'^2) = b^2 mean_d(x^2) with
 *    b^2 = a^2 k d / D, and RMSNorm(x') = (a / b) x / sqrt(mean_d(x^2) + e eps / b^2):
 *    with a^2 = e D / (k d), b^2 = e and the norm sees eps. Block norms
 *    (attn_norm, post_attention_norm, nextn.enorm, nextn.hnorm) put
 *    w * b / a on the first copy, 0 elsewhere; their readers (attn_q/k/v,
 *    attn_qkv, attn_gate, ssm_alpha/beta, ffn_gate/up, eh_proj) keep the small
 *    columns [0, d) of the first copy, zeros elsewhere.
 * 2. output_norm (and nextn.shared_head_norm) puts w * b on every copy: the
 *    normed hidden is h' = [a h, ..., a h, 0], the same form as the stream, so
 *    the MTP block's hnorm (item 1) reads the trunk's h and its chained h
 *    exactly. The lm head is written untied, output.weight = [W / a, 0]
 *    (reading the first copy), whether or not the small head is tied.
 * 3. Gated attention. attn_q holds [q | gate] per head. Q and K rows are scaled
 *    by c, c^2 = e rho_h: c q / sqrt(c^2 mean_dh(q^2) / rho_h + e eps)
 *    = sqrt(rho_h) q / sqrt(mean_dh(q^2) + eps), so the head norm sees eps and
 *    its output grows by sqrt(rho_h); attn_k_norm / sqrt(rho_h) undoes it for
 *    k, and q.k' / sqrt(Dh) = rho_h q.k / sqrt(rho_h dh) / sqrt(rho_h)
 *    = q.k / sqrt(dh). RoPE (NEOX; qwen35's IMROPE is NEOX for text
 *    positions) rotates pairs (i, i + R/2) at base^(-2i/R): small rotary dim
 *    j < n_r/2 goes to j rho_r, n_r/2 + j to R/2 + j rho_r (same angle, same
 *    freq_base), unrotated dims n_r + j to R + j. Gate and V dims keep their
 *    index inside the head (not rotated, not normed); attn_output reads the
 *    small head's dims. Small q head h (kv head h / g) is grown head
 *    (h / g) G + h % g; extra heads have zero rows and zero attn_output
 *    columns. A grown kv head cannot hold two small ones (its k norm would
 *    mix them), so N_kv >= n_kv: the 0.8B and 2B shapes (2 kv heads) take the
 *    target fixture's 4 (printed).
 * 4. Gated DeltaNet, per V head: mix = attn_qkv n, conv (depthwise, kernel K)
 *    and SiLU per channel, q and k L2-normed per head, the delta rule on a
 *    [S x S] state (rows indexed by k dims, columns by v dims), o = scale S^T q
 *    with scale = 1/sqrt(S), then RMSNorm(o) * ssm_norm * silu(z), ssm_out.
 *    - Heads: small V head h is grown V head h; V head h reads Q/K head
 *      h mod H_K, so grown Q/K head h mod H_K holds a copy of small Q/K head
 *      h mod H_k (needs H_k | H_K, H_V >= H_v). Channels (attn_qkv rows and
 *      ssm_conv1d rows) are copied: SiLU per channel keeps copies copies.
 *    - q, k: dims [0, s) of the head, zeros after: the L2 norm's sum is the
 *      small one. v: m_v copies (of the rho_s blocks of s dims), so the
 *      state's columns are m_v copies of the small state (column j depends only
 *      on v_j and k) and o' = [r o, ..., r o, 0] with r = sqrt(s / S) (the
 *      scale). RMSNorm(o') = sqrt(rho_s / m_v) o / sqrt(mean_s(o^2)
 *      + e eps rho_s^2 / m_v): e = m_v / rho_s^2 makes it see eps;
 *      ssm_norm' = ssm_norm * sqrt(m_v / rho_s) on every copy; attn_gate (z)
 *      rows are copied like v; ssm_out reads the first copy.
 *    - ssm_beta, ssm_alpha, ssm_dt.bias, ssm_a: per V head, moved with it.
 *    - The one inexact step: the L2 norm of q and k sees eps' = e eps instead
 *      of eps (x / sqrt(sum x^2 + eps) with sum x^2 of a 32-dim SiLU output; a
 *      relative change of (1 - e) eps / (2 sum x^2), below 1e-5 unless a head's
 *      q or k is almost zero). It cannot be removed: the L2 norm needs e >= 1
 *      (copies only lower it) while the output norm needs e <= 1/rho_s.
 * 5. FFN units [0, f): gate/up rows and down columns; extra units are zero.
 * 6. Choice of (m_v, k): e = m_v / rho_s^2, c^2 = e rho_h, a^2 = e D / (k d);
 *    the grower takes the (m_v in 1..rho_s, k in 1..D/d) with a and c powers
 *    of two if any (then a Q8_0 file holds the small file's blocks bit for bit
 *    up to exponent shifts), else a power of two and the least k. Target
 *    fixture (d 256, s 32, dh 32): m_v = 2, e = 1/8, c = 1; k = 2, a = 1/2
 *    (0.8B), k = 1, a = 1 (2B), k = 2, a = 1 (9B), k = 10, a = 1/2 (27B).
 * 7. Layers: small layer l is grown layer l (same kind); the layers past it
 *    follow the real pattern (every 4th full attention) and are exact
 *    identities (every matrix 0, norms 1). The MTP block is grown like an
 *    attention layer (+ eh_proj, enorm, hnorm) after the last layer. The layer
 *    count makes the weights read per decoded token (every trunk matrix + the
 *    lm head) equal the real model's (its 248320-row head): the small
 *    vocabulary's missing head rows are carried by extra identity layers.
 *
 * 8. qwen35moe shapes (qwen35-35b-a3b[-L4], qwen35moe-tiny): everything above,
 *    with each block's FFN (the MTP block's too) a mixture of experts that
 *    computes the small dense FFN exactly whichever experts the router picks
 *    (grow_moe.c has that construction and the router's). Per-token weights
 *    (item 7) count the router, k experts and the shared expert.
 *
 * Q4_K re-quantizes the values: a slightly different function (greedy text may
 * split at near-ties). */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/qwen3_keys.h"
#include "core/checked.h"
#include "core/status.h"
#include "format/ggml_type.h"
#include "format/gguf.h"
#include "grow/grow_io.h"
#include "grow/grow_moe.h"
#include "numerics/quant.h"

/* ---- shapes ---- */
typedef struct q35_shape {
    const char *name;
    int n_embd, n_ff, n_head, n_head_kv, head_dim, n_rot, ssm_k, ssm_v, ssm_state;
    int sections[4];
    int real_layers;    /* > 0: byte-match the real model (every 4th layer attention) */
    int fixed_layers;   /* or this many (test shape, reduced depth) */
    int n_expert, n_used, n_ff_exp, n_ff_shexp; /* qwen35moe (n_expert > 0): the FFN (grow_moe.c) */
} q35_shape;

#define Q35_REAL_VOCAB 248320 /* every Qwen3.5 / 3.6 model: token_embd and lm head rows */

/* Sources (bench/RESULTS.md "Grown hybrids" has the table):
 * 0.8B, 2B: Hugging Face Qwen/Qwen3.5-0.8B, -2B config.json (as tools/genmodel.c).
 * 9B: the Qwen/Qwen3.5-9B model card (32 layers = 8 x (3 GDN + 1 attention),
 *   hidden 4096, GDN 32 V / 16 QK heads of 128, attention 16 Q / 4 KV of 256,
 *   rotary 64, FFN 12288).
 * 27B: Qwen/Qwen3.5-27B (= Qwen3.6-27B) config.json as the fact sheet
 *   qwen35-mtp-eagle3.md §1.1 lists it, confirmed by the model card: 64 layers =
 *   16 x (3 GDN + 1 attention), hidden 5120, GDN 48 V / 16 QK heads of 128,
 *   attention 24 Q / 4 KV of 256, rotary 64, FFN 17408.
 * llama.cpp src/models/qwen35.cpp tags 24 layers as 0.8B (n_embd 1024) / 2B,
 * 32 as 4B (n_embd 2560) / 9B, 64 as 27B. All: mrope sections [11, 11, 10]. */
static const q35_shape Q35_SHAPES[] = {
    /* name          D     F      Nh Nkv Dh   R   HK  HV  S    sections        layers */
    {"qwen35-0.8b", 1024, 3584, 8, 2, 256, 64, 16, 16, 128, {11, 11, 10, 0}, 24, 0, 0, 0, 0, 0},
    {"qwen35-2b", 2048, 6144, 8, 2, 256, 64, 16, 16, 128, {11, 11, 10, 0}, 24, 0, 0, 0, 0, 0},
    {"qwen35-9b", 4096, 12288, 16, 4, 256, 64, 16, 32, 128, {11, 11, 10, 0}, 32, 0, 0, 0, 0, 0},
    {"qwen35-27b", 5120, 17408, 24, 4, 256, 64, 16, 48, 128, {11, 11, 10, 0}, 64, 0, 0, 0, 0, 0},
    /* test-sized, holds either fixture */
    {"qwen35-tiny", 512, 1024, 12, 4, 64, 32, 4, 8, 64, {6, 5, 5, 0}, 0, 6, 0, 0, 0, 0},
    /* qwen35moe: docs/MOE.md "Published shapes" (as tools/genmodel.c); -L4 the
     * same layers, 4 of them (the fixture's trunk), with the fixture's head;
     * experts: count, used, width, shared width */
    {"qwen35-35b-a3b", 2048, 512, 16, 2, 256, 64, 16, 32, 128, {11, 11, 10, 0}, 40, 0, 256, 8, 512, 512},
    {"qwen35-35b-a3b-L4", 2048, 512, 16, 2, 256, 64, 16, 32, 128, {11, 11, 10, 0}, 0, 4, 256, 8, 512, 512},
    {"qwen35moe-tiny", 512, 256, 12, 4, 64, 32, 4, 8, 64, {6, 5, 5, 0}, 0, 6, 8, 2, 256, 512},
};
#define N_Q35_SHAPES (sizeof Q35_SHAPES / sizeof Q35_SHAPES[0])

static const q35_shape *q35_shape_find(const char *name) {
    for (size_t i = 0; i < N_Q35_SHAPES; i++)
        if (!strcmp(Q35_SHAPES[i].name, name)) return &Q35_SHAPES[i];
    return NULL;
}

bool grow_q35_has_shape(const char *name) { return q35_shape_find(name) != NULL; }

/* The shape's MoE FFN as grow_moe.c takes it (f: the small FFN's units). */
static grow_moe moe_of(const q35_shape *t, int64_t d, int64_t f, int n_copy, double a) {
    return (grow_moe){d, t->n_embd, f, n_copy, a, t->n_expert, t->n_used, t->n_ff_exp, t->n_ff_shexp};
}

/* Matrix weights of one layer of the given kind (read once per decoded token). */
static double layer_params(const q35_shape *t, int n_head_kv, bool gdn) {
    double D = t->n_embd, vd = (double)t->ssm_v * t->ssm_state;
    grow_moe m = moe_of(t, 0, 0, 0, 0);
    double ffn = t->n_expert ? grow_moe_active_params(&m) : 3.0 * D * t->n_ff;
    if (gdn) return D * ((2.0 * t->ssm_k * t->ssm_state + vd) + vd + 2.0 * t->ssm_v) + vd * D + ffn;
    double q = (double)t->n_head * t->head_dim, kv = (double)n_head_kv * t->head_dim;
    return D * (2 * q + 2 * kv) + q * D + ffn;
}

/* ---- the small model ---- */
typedef struct q35_small {
    int n_layer, n_nextn, n_embd, n_ff, n_head, n_head_kv, head_dim, n_rot, ssm_k, ssm_v, ssm_state, conv_k;
    int64_t n_vocab;
    float eps;
    bool tied;
    bool gdn[64];
} q35_small;

static bool get_int(const gguf_ctx *g, const char *key, int *out) {
    uint32_t v;
    if (!gguf_get_u32(g, key, &v) || v == 0 || v > (1u << 24)) return false;
    *out = (int)v;
    return true;
}

static sd_status read_small(const gguf_ctx *g, const char *path, q35_small *s, sd_err *err) {
    const char *arch;
    uint64_t len;
    int n_all = 0, v_len = 0;
    uint32_t nextn = 0;
    if (!gguf_get_str(g, "general.architecture", &arch, &len) || len != 6 || memcmp(arch, "qwen35", 6))
        return sd_err_set(err, SD_ERR_UNSUPPORTED, "%s: a qwen35 --grow shape needs a qwen35 model", path);
    if (!get_int(g, "qwen35.block_count", &n_all) || !get_int(g, "qwen35.embedding_length", &s->n_embd) ||
        !get_int(g, "qwen35.feed_forward_length", &s->n_ff) || !get_int(g, "qwen35.attention.head_count", &s->n_head) ||
        !get_int(g, "qwen35.attention.head_count_kv", &s->n_head_kv) ||
        !get_int(g, "qwen35.attention.key_length", &s->head_dim) ||
        !get_int(g, "qwen35.attention.value_length", &v_len) || !get_int(g, "qwen35.rope.dimension_count", &s->n_rot) ||
        !get_int(g, "qwen35.ssm.state_size", &s->ssm_state) || !get_int(g, "qwen35.ssm.group_count", &s->ssm_k) ||
        !get_int(g, "qwen35.ssm.time_step_rank", &s->ssm_v) || !get_int(g, "qwen35.ssm.conv_kernel", &s->conv_k) ||
        !gguf_get_f32(g, "qwen35.attention.layer_norm_rms_epsilon", &s->eps) || !(s->eps > 0))
        return sd_err_set(err, SD_ERR_FORMAT, "%s: missing or bad qwen35 shape keys", path);
    if (gguf_find_key(g, "qwen35.nextn_predict_layers") >= 0 && !gguf_get_u32(g, "qwen35.nextn_predict_layers", &nextn))
        return sd_err_set(err, SD_ERR_FORMAT, "%s: bad qwen35.nextn_predict_layers", path);
    s->n_nextn = (int)nextn;
    s->n_layer = n_all - s->n_nextn;
    if (s->n_layer < 1 || s->n_layer > 64 || s->n_nextn > 1)
        return sd_err_set(err, SD_ERR_UNSUPPORTED, "%s: needs 1..64 trunk layers and at most one MTP block", path);
    if (v_len != s->head_dim || s->n_rot % 2 || s->n_rot > s->head_dim || s->n_head % s->n_head_kv ||
        s->ssm_v % s->ssm_k)
        return sd_err_set(err, SD_ERR_UNSUPPORTED, "%s: needs value_length = key_length, an even rope dimension "
                          "count <= it, head_count a multiple of head_count_kv, time_step_rank of group_count", path);
    const gguf_tensor_info *e = gguf_find_tensor(g, "token_embd.weight");
    if (!e || e->n_dims != 2 || e->ne[0] != s->n_embd)
        return sd_err_set(err, SD_ERR_FORMAT, "%s: missing or misshapen token_embd.weight", path);
    s->n_vocab = e->ne[1];
    s->tied = gguf_find_tensor(g, "output.weight") == NULL;
    char name[96];
    for (int il = 0; il < s->n_layer; il++) {
        snprintf(name, sizeof name, "blk.%d.attn_qkv.weight", il);
        s->gdn[il] = gguf_find_tensor(g, name) != NULL;
    }
    if (s->n_nextn) {
        const char *opt[] = {"nextn.embed_tokens.weight", "nextn.shared_head_head.weight"};
        for (int i = 0; i < 2; i++) {
            snprintf(name, sizeof name, "blk.%d.%s", s->n_layer, opt[i]);
            if (gguf_find_tensor(g, name))
                return sd_err_set(err, SD_ERR_UNSUPPORTED, "%s: an MTP block with its own %s is not handled", path, opt[i]);
        }
    }
    return SD_OK;
}

/* ---- placement: an axis maps each small index to up to `ncp` grown indices ---- */
typedef struct axis {
    int64_t n, N;  /* small and grown length */
    int ncp;       /* copies per small index */
    int64_t *to;   /* [n * ncp], -1: none */
    double *scale; /* [n]: factor of that small index */
} axis;

static sd_status axis_init(axis *a, int64_t n, int64_t N, int ncp, sd_err *err) {
    a->n = n, a->N = N, a->ncp = ncp;
    a->to = sd_malloc_array((size_t)(n * ncp), sizeof *a->to);
    a->scale = sd_malloc_array((size_t)n, sizeof *a->scale);
    if (!a->to || !a->scale) return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < n * ncp; i++) a->to[i] = -1;
    for (int64_t i = 0; i < n; i++) a->scale[i] = 1.0;
    return SD_OK;
}

static void axis_free(axis *a) { free(a->to), free(a->scale); }

typedef struct q35_plan {
    q35_small s;
    const q35_shape *t;
    int n_layer, n_head_kv; /* grown */
    bool gdn[256];
    int rho_h, rho_r, rho_s, m_v, k;
    double e, a, c;
    grow_moe moe; /* n_expert > 0: a qwen35moe shape */
    /* axes (see the header comment) */
    axis st_w, st_r, head, embd_cols, every, ff, attn_q, attn_k, attn_v, attn_o, qk_dims, qkv, z, vo, vheads, ssm_norm, eh;
} q35_plan;

static bool pow2(double x) {
    double l = log2(x);
    return fabs(l - round(l)) < 1e-12;
}

/* Item 6: (m_v, k) with a and c powers of two if any, else a a power of two,
 * else the least k. */
static void choose_copies(q35_plan *p) {
    int D = p->t->n_embd, d = p->s.n_embd, best = 99;
    for (int m_v = 1; m_v <= p->rho_s; m_v++)
        for (int k = 1; k * d <= D; k++) {
            double e = (double)m_v / ((double)p->rho_s * p->rho_s);
            double c = sqrt(e * p->rho_h), a = sqrt(e * D / ((double)k * d));
            int score = 2 * !pow2(a) + !pow2(c);
            if (score < best) best = score, p->m_v = m_v, p->k = k, p->e = e, p->a = a, p->c = c;
        }
}

static int64_t rope_dim(const q35_plan *p, int j) {
    int nr = p->s.n_rot, R = p->t->n_rot;
    if (j < nr / 2) return (int64_t)j * p->rho_r;
    if (j < nr) return R / 2 + (int64_t)(j - nr / 2) * p->rho_r;
    return R + (j - nr);
}

static sd_status plan_axes(q35_plan *p, sd_err *err) {
    const q35_small *s = &p->s;
    const q35_shape *t = p->t;
    const int64_t d = s->n_embd, D = t->n_embd, dh = s->head_dim, Dh = t->head_dim;
    const int g = s->n_head / s->n_head_kv, G = t->n_head / p->n_head_kv;
    const int64_t ss = s->ssm_state, S = t->ssm_state, hk = s->ssm_k, HK = t->ssm_k;
    const int64_t cds = (2 * hk + s->ssm_v) * ss, cd = (2 * HK + t->ssm_v) * S;
    sd_status st = SD_OK;
    st = st ? st : axis_init(&p->st_w, d, D, p->k, err);
    st = st ? st : axis_init(&p->st_r, d, D, 1, err);
    st = st ? st : axis_init(&p->head, d, D, 1, err);
    st = st ? st : axis_init(&p->embd_cols, d, D, p->k, err);
    st = st ? st : axis_init(&p->every, d, D, p->k, err);
    st = st ? st : axis_init(&p->ff, s->n_ff, t->n_ff, 1, err);
    st = st ? st : axis_init(&p->attn_q, 2 * s->n_head * dh, 2 * t->n_head * Dh, 1, err);
    st = st ? st : axis_init(&p->attn_k, s->n_head_kv * dh, p->n_head_kv * Dh, 1, err);
    st = st ? st : axis_init(&p->attn_v, s->n_head_kv * dh, p->n_head_kv * Dh, 1, err);
    st = st ? st : axis_init(&p->attn_o, s->n_head * dh, t->n_head * Dh, 1, err);
    st = st ? st : axis_init(&p->qk_dims, dh, Dh, 1, err);
    st = st ? st : axis_init(&p->qkv, cds, cd, (int)(HK > p->m_v ? HK : p->m_v), err);
    st = st ? st : axis_init(&p->z, s->ssm_v * ss, t->ssm_v * S, p->m_v, err);
    st = st ? st : axis_init(&p->vo, s->ssm_v * ss, t->ssm_v * S, 1, err);
    st = st ? st : axis_init(&p->vheads, s->ssm_v, t->ssm_v, 1, err);
    st = st ? st : axis_init(&p->ssm_norm, ss, S, p->m_v, err);
    st = st ? st : axis_init(&p->eh, 2 * d, 2 * D, 1, err);
    if (st) return st;
    for (int64_t i = 0; i < d; i++) {
        for (int b = 0; b < p->k; b++)
            p->st_w.to[i * p->k + b] = p->embd_cols.to[i * p->k + b] = p->every.to[i * p->k + b] = b * d + i;
        p->st_w.scale[i] = p->embd_cols.scale[i] = p->a;
        p->st_r.to[i] = p->head.to[i] = i;
        p->head.scale[i] = 1.0 / p->a;
        p->eh.to[i] = i, p->eh.to[d + i] = D + i;
    }
    for (int64_t i = 0; i < s->n_ff; i++) p->ff.to[i] = i;
    for (int j = 0; j < dh; j++) p->qk_dims.to[j] = rope_dim(p, j);
    for (int h = 0; h < s->n_head; h++) {
        const int64_t H = (int64_t)(h / g) * G + h % g;
        for (int j = 0; j < dh; j++) {
            p->attn_q.to[h * 2 * dh + j] = H * 2 * Dh + p->qk_dims.to[j];
            p->attn_q.scale[h * 2 * dh + j] = p->c;
            p->attn_q.to[h * 2 * dh + dh + j] = H * 2 * Dh + Dh + j; /* the gate */
            p->attn_o.to[h * dh + j] = H * Dh + j;
        }
    }
    for (int kh = 0; kh < s->n_head_kv; kh++)
        for (int j = 0; j < dh; j++) {
            p->attn_k.to[kh * dh + j] = kh * Dh + p->qk_dims.to[j];
            p->attn_k.scale[kh * dh + j] = p->c;
            p->attn_v.to[kh * dh + j] = kh * Dh + j;
        }
    /* GDN: grown Q/K head J = h mod H_K holds small head h mod H_k, for each small V head h */
    for (int h = 0; h < s->ssm_v; h++) {
        const int64_t J = h % HK, src = h % hk;
        for (int64_t j = 0; j < ss; j++) {
            int b = 0;
            while (b < p->qkv.ncp && p->qkv.to[(src * ss + j) * p->qkv.ncp + b] >= 0 &&
                   p->qkv.to[(src * ss + j) * p->qkv.ncp + b] != J * S + j)
                b++;
            p->qkv.to[(src * ss + j) * p->qkv.ncp + b] = J * S + j;                         /* q */
            p->qkv.to[((hk + src) * ss + j) * p->qkv.ncp + b] = (HK + J) * S + j;           /* k */
        }
        p->vheads.to[h] = h;
        for (int64_t j = 0; j < ss; j++) {
            for (int b = 0; b < p->m_v; b++) {
                p->qkv.to[((2 * hk + h) * ss + j) * p->qkv.ncp + b] = (2 * HK + h) * S + b * ss + j; /* v */
                p->z.to[(h * ss + j) * p->m_v + b] = h * S + b * ss + j;
            }
            p->vo.to[h * ss + j] = h * S + j;
        }
    }
    for (int64_t j = 0; j < ss; j++) {
        for (int b = 0; b < p->m_v; b++) p->ssm_norm.to[j * p->m_v + b] = b * ss + j;
        p->ssm_norm.scale[j] = sqrt((double)p->m_v / p->rho_s);
    }
    return SD_OK;
}

static void plan_free(q35_plan *p) {
    axis *all[] = {&p->st_w, &p->st_r, &p->head, &p->embd_cols, &p->every, &p->ff, &p->attn_q, &p->attn_k, &p->attn_v,
                   &p->attn_o, &p->qk_dims, &p->qkv, &p->z, &p->vo, &p->vheads, &p->ssm_norm, &p->eh};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) axis_free(all[i]);
}

/* Weights per decoded token of n layers (kinds gdn[]) with an lm head of n_vocab rows. */
static double per_token(const q35_shape *t, int n_head_kv, int n, const bool *gdn, int64_t n_vocab) {
    double w = (double)n_vocab * t->n_embd;
    for (int il = 0; il < n; il++) w += layer_params(t, n_head_kv, gdn[il]);
    return w;
}

static sd_status plan_init(q35_plan *p, const q35_small *s, const q35_shape *t, sd_err *err) {
    memset(p, 0, sizeof *p);
    p->s = *s, p->t = t;
    p->n_head_kv = t->n_head_kv > s->n_head_kv ? t->n_head_kv : s->n_head_kv;
    const int g = s->n_head / s->n_head_kv;
    if (t->n_embd < s->n_embd || (!t->n_expert && t->n_ff < s->n_ff) || t->head_dim % s->head_dim || t->n_rot % s->n_rot ||
        t->head_dim - t->n_rot < s->head_dim - s->n_rot || t->n_head % p->n_head_kv || t->n_head / p->n_head_kv < g ||
        t->ssm_state % s->ssm_state || t->ssm_k % s->ssm_k || t->ssm_v < s->ssm_v)
        return sd_err_set(err, SD_ERR_ARG,
                          "shape %s cannot hold the model: needs every size >= the model's, head_dim, rotary dims, "
                          "state size and GDN Q/K heads multiples of the model's, a GQA group >= %d", t->name, g);
    p->rho_h = t->head_dim / s->head_dim, p->rho_r = t->n_rot / s->n_rot, p->rho_s = t->ssm_state / s->ssm_state;
    choose_copies(p);
    p->moe = moe_of(t, s->n_embd, s->n_ff, p->k, p->a);
    if (t->n_expert && grow_moe_check(&p->moe, t->name, err)) return err->code;
    /* layers: the small ones, then the real pattern, as many as match the real bytes per token */
    bool real_gdn[256];
    for (int il = 0; il < 256; il++) {
        real_gdn[il] = (il + 1) % 4 != 0;
        p->gdn[il] = il < s->n_layer ? s->gdn[il] : real_gdn[il];
    }
    if (t->fixed_layers) {
        p->n_layer = t->fixed_layers > s->n_layer ? t->fixed_layers : s->n_layer;
    } else {
        const double want = per_token(t, t->n_head_kv, t->real_layers, real_gdn, Q35_REAL_VOCAB);
        int best = s->n_layer;
        for (int n = s->n_layer; n < 255; n++)
            if (fabs(per_token(t, p->n_head_kv, n, p->gdn, s->n_vocab) - want) <
                fabs(per_token(t, p->n_head_kv, best, p->gdn, s->n_vocab) - want))
                best = n;
        p->n_layer = best;
    }
    return plan_axes(p, err);
}

/* ---- writing ---- */
/* Grown matrix: small `sname` [n][m] (rows along `rows`, columns along `cols`)
 * times scale, written as `name` of type; the rest zero. */
static sd_status grow_mat(grower *g, const char *sname, const char *name, uint32_t type, const axis *cols,
                          const axis *rows, double scale, sd_err *err) {
    float *small = grow_small_f32(g, sname, cols->n, rows->n, err);
    if (!small) return err->code;
    float *big = sd_calloc((size_t)(cols->N * rows->N), sizeof *big);
    if (!big) {
        free(small);
        return sd_err_set(err, SD_ERR_NOMEM, "%s: out of memory", name);
    }
    for (int64_t r = 0; r < rows->n; r++)
        for (int br = 0; br < rows->ncp; br++) {
            const int64_t R = rows->to[r * rows->ncp + br];
            if (R < 0) continue;
            for (int64_t c = 0; c < cols->n; c++)
                for (int bc = 0; bc < cols->ncp; bc++) {
                    const int64_t C = cols->to[c * cols->ncp + bc];
                    if (C >= 0)
                        big[R * cols->N + C] =
                            (float)(small[r * cols->n + c] * scale * rows->scale[r] * cols->scale[c]);
                }
        }
    free(small);
    sd_status st = grow_add_tensor(g, name, type, 2, cols->N, rows->N, big, NULL, err);
    free(big);
    return st;
}

/* Grown f32 vector: small `sname` along `ax` times scale (NULL sname: none), the rest `fill`. */
static sd_status grow_vec(grower *g, const char *sname, const char *name, const axis *ax, double scale, float fill,
                          sd_err *err) {
    float *v = grow_keep(g, (size_t)ax->N * sizeof *v);
    if (!v) return sd_err_set(err, SD_ERR_NOMEM, "%s: out of memory", name);
    for (int64_t i = 0; i < ax->N; i++) v[i] = fill;
    if (sname) {
        float *small = grow_small_f32(g, sname, ax->n, 1, err);
        if (!small) return err->code;
        for (int64_t j = 0; j < ax->n; j++)
            for (int b = 0; b < ax->ncp; b++)
                if (ax->to[j * ax->ncp + b] >= 0) v[ax->to[j * ax->ncp + b]] = (float)(small[j] * scale * ax->scale[j]);
        free(small);
    }
    return grow_add_tensor(g, name, GGML_TYPE_F32, 1, ax->N, 1, NULL, v, err);
}

/* An f32 tensor [n_out][n_in] of one value (identity layers' conv weights, ssm_a, ...). */
static sd_status add_filled(grower *g, const char *name, int n_dims, int64_t n_in, int64_t n_out, float fill,
                            sd_err *err) {
    float *v = grow_keep(g, (size_t)(n_in * n_out) * sizeof *v);
    if (!v) return sd_err_set(err, SD_ERR_NOMEM, "%s: out of memory", name);
    for (int64_t i = 0; i < n_in * n_out; i++) v[i] = fill;
    return grow_add_tensor(g, name, GGML_TYPE_F32, n_dims, n_in, n_out, NULL, v, err);
}

typedef struct layer_io {
    grower *g;
    const q35_plan *p;
    int ils, il; /* small and grown block index */
    bool real;
    sd_err *err;
} layer_io;

static sd_status mat(layer_io *L, const char *suffix, const axis *cols, const axis *rows, double scale) {
    char sn[96], n[96];
    snprintf(sn, sizeof sn, "blk.%d.%s", L->ils, suffix);
    snprintf(n, sizeof n, "blk.%d.%s", L->il, suffix);
    if (!L->real) return grow_add_zero_matrix(L->g, n, cols->N, rows->N, L->err);
    return grow_mat(L->g, sn, n, L->g->type, cols, rows, scale, L->err);
}

/* fill_id: the identity layer's value; a real layer's unplaced entries are 0 */
static sd_status vec(layer_io *L, const char *suffix, const axis *ax, double scale, float fill_id) {
    char sn[96], n[96];
    snprintf(sn, sizeof sn, "blk.%d.%s", L->ils, suffix);
    snprintf(n, sizeof n, "blk.%d.%s", L->il, suffix);
    return grow_vec(L->g, L->real ? sn : NULL, n, ax, scale, L->real ? 0.0f : fill_id, L->err);
}

static sd_status grow_attention(layer_io *L) {
    const q35_plan *p = L->p;
    sd_status st = mat(L, "attn_q.weight", &p->st_r, &p->attn_q, 1.0);
    st = st ? st : mat(L, "attn_k.weight", &p->st_r, &p->attn_k, 1.0);
    st = st ? st : mat(L, "attn_v.weight", &p->st_r, &p->attn_v, 1.0);
    st = st ? st : mat(L, "attn_output.weight", &p->attn_o, &p->st_w, 1.0);
    st = st ? st : vec(L, "attn_q_norm.weight", &p->qk_dims, 1.0, 1.0f);
    st = st ? st : vec(L, "attn_k_norm.weight", &p->qk_dims, 1.0 / sqrt(p->rho_h), 1.0f);
    return st;
}

static sd_status grow_gdn(layer_io *L) {
    const q35_plan *p = L->p;
    char sn[96], n[96];
    sd_status st = mat(L, "attn_qkv.weight", &p->st_r, &p->qkv, 1.0);
    st = st ? st : mat(L, "attn_gate.weight", &p->st_r, &p->z, 1.0);
    /* conv weights: ne [K, conv_dim], one row per channel, moved with the channel */
    axis kern = {p->s.conv_k, p->s.conv_k, 1, NULL, NULL};
    int64_t kto[64];
    double ksc[64];
    for (int i = 0; i < p->s.conv_k && i < 64; i++) kto[i] = i, ksc[i] = 1.0;
    kern.to = kto, kern.scale = ksc;
    snprintf(sn, sizeof sn, "blk.%d.ssm_conv1d.weight", L->ils);
    snprintf(n, sizeof n, "blk.%d.ssm_conv1d.weight", L->il);
    if (!st)
        st = L->real ? grow_mat(L->g, sn, n, GGML_TYPE_F32, &kern, &p->qkv, 1.0, L->err)
                     : add_filled(L->g, n, 2, p->s.conv_k, p->qkv.N, 0.0f, L->err);
    st = st ? st : vec(L, "ssm_dt.bias", &p->vheads, 1.0, 0.0f);
    /* extra heads decay (ssm_a < 0) though their state stays 0 */
    snprintf(sn, sizeof sn, "blk.%d.ssm_a", L->ils);
    snprintf(n, sizeof n, "blk.%d.ssm_a", L->il);
    st = st ? st : grow_vec(L->g, L->real ? sn : NULL, n, &p->vheads, 1.0, -1.0f, L->err);
    st = st ? st : mat(L, "ssm_beta.weight", &p->st_r, &p->vheads, 1.0);
    st = st ? st : mat(L, "ssm_alpha.weight", &p->st_r, &p->vheads, 1.0);
    st = st ? st : vec(L, "ssm_norm.weight", &p->ssm_norm, 1.0, 1.0f);
    st = st ? st : mat(L, "ssm_out.weight", &p->vo, &p->st_w, 1.0);
    return st;
}

/* Block norm (item 1): w b / a on the first copy. */
static double block_norm_scale(const q35_plan *p) { return sqrt(p->e) / p->a; }

static sd_status grow_block(layer_io *L, bool gdn) {
    const q35_plan *p = L->p;
    sd_status st = vec(L, "attn_norm.weight", &p->st_r, block_norm_scale(p), 1.0f);
    st = st ? st : gdn ? grow_gdn(L) : grow_attention(L);
    st = st ? st : vec(L, "post_attention_norm.weight", &p->st_r, block_norm_scale(p), 1.0f);
    if (p->moe.n_expert) /* identity layers route with the last small layer's gate */
        return st ? st : grow_moe_ffn(L->g, &p->moe, L->real ? L->ils : p->s.n_layer - 1, L->il, L->real, L->err);
    st = st ? st : mat(L, "ffn_gate.weight", &p->st_r, &p->ff, 1.0);
    st = st ? st : mat(L, "ffn_up.weight", &p->st_r, &p->ff, 1.0);
    st = st ? st : mat(L, "ffn_down.weight", &p->ff, &p->st_w, 1.0);
    return st;
}

/* The MTP block (item 2): an attention block + eh_proj (writes the stream),
 * enorm and hnorm (block norms of stream-like inputs). */
static sd_status grow_mtp(grower *g, const q35_plan *p, sd_err *err) {
    layer_io L = {g, p, p->s.n_layer, p->n_layer, true, err};
    sd_status st = grow_block(&L, false);
    st = st ? st : mat(&L, "nextn.eh_proj.weight", &p->eh, &p->st_w, 1.0);
    st = st ? st : vec(&L, "nextn.enorm.weight", &p->st_r, block_norm_scale(p), 1.0f);
    st = st ? st : vec(&L, "nextn.hnorm.weight", &p->st_r, block_norm_scale(p), 1.0f);
    char sn[96];
    snprintf(sn, sizeof sn, "blk.%d.nextn.shared_head_norm.weight", p->s.n_layer);
    if (!st && gguf_find_tensor(g->small, sn)) { /* like output_norm (item 2) */
        char n[96];
        snprintf(n, sizeof n, "blk.%d.nextn.shared_head_norm.weight", p->n_layer);
        st = grow_vec(g, sn, n, &p->every, sqrt(p->e), 0.0f, err);
    }
    return st;
}

/* The shape keys grow_metadata writes for the grown shape (the rest is copied). */
static const char *const q35_shape_keys[] = {
    "qwen35.block_count", "qwen35.embedding_length",
    "qwen35.feed_forward_length", "qwen35.attention.head_count", "qwen35.attention.head_count_kv",
    "qwen35.attention.key_length", "qwen35.attention.value_length", "qwen35.rope.dimension_count",
    "qwen35.rope.dimension_sections", "qwen35.attention.layer_norm_rms_epsilon", "qwen35.ssm.state_size",
    "qwen35.ssm.inner_size", "qwen35.ssm.time_step_rank", "qwen35.ssm.group_count",
    "qwen35.attention.recurrent_layers", "qwen35.full_attention_interval"};

/* qwen35moe: general.architecture, then the small file's other qwen35.* keys
 * (context length, rope base, conv kernel, nextn layers) under the new arch;
 * they are scalars. excl gets every key it wrote, for grow_copy_metadata. */
static sd_status moe_arch_keys(grower *g, const char **excl, size_t *n_excl, sd_err *err) {
    sd_status st = gguf_writer_set_str(g->w, "general.architecture", "qwen35moe", 9);
    excl[(*n_excl)++] = "general.architecture";
    for (int64_t i = 0; !st && i < gguf_n_kv(g->small); i++) {
        const char *key = gguf_kv_key(g->small, i);
        bool shape = false;
        for (size_t j = 0; j < sizeof q35_shape_keys / sizeof *q35_shape_keys; j++) shape |= !strcmp(key, q35_shape_keys[j]);
        if (strncmp(key, "qwen35.", 7)) continue;
        excl[(*n_excl)++] = key;
        if (shape) continue;
        gguf_value v;
        char k[128];
        const int nk = snprintf(k, sizeof k, "qwen35moe.%s", key + 7);
        if (nk < 0 || (size_t)nk >= sizeof k) /* a cut name would write a different key */
            return sd_err_set(err, SD_ERR_UNSUPPORTED, "%s: key %s is too long to rename (qwen35moe.* over %zu bytes)",
                              g->small_path, key, sizeof k - 1);
        if (gguf_kv_type(g->small, i) == GGUF_TYPE_STRING || gguf_kv_type(g->small, i) == GGUF_TYPE_ARRAY ||
            !gguf_kv_value(g->small, i, 0, &v))
            return sd_err_set(err, SD_ERR_UNSUPPORTED, "%s: key %s is not a scalar: cannot rename it", g->small_path, key);
        union { uint8_t u8; int8_t i8; uint16_t u16; int16_t i16; uint32_t u32; int32_t i32; uint64_t u64;
                int64_t i64; float f32; double f64; bool b; } raw; /* the value in its own type */
        switch (v.type) {
        case GGUF_TYPE_UINT8: raw.u8 = (uint8_t)v.v.u; break;
        case GGUF_TYPE_INT8: raw.i8 = (int8_t)v.v.i; break;
        case GGUF_TYPE_UINT16: raw.u16 = (uint16_t)v.v.u; break;
        case GGUF_TYPE_INT16: raw.i16 = (int16_t)v.v.i; break;
        case GGUF_TYPE_UINT32: raw.u32 = (uint32_t)v.v.u; break;
        case GGUF_TYPE_INT32: raw.i32 = (int32_t)v.v.i; break;
        case GGUF_TYPE_UINT64: raw.u64 = v.v.u; break;
        case GGUF_TYPE_INT64: raw.i64 = v.v.i; break;
        case GGUF_TYPE_FLOAT32: raw.f32 = (float)v.v.f; break;
        case GGUF_TYPE_FLOAT64: raw.f64 = v.v.f; break;
        case GGUF_TYPE_BOOL: raw.b = v.v.b; break;
        default: return sd_err_set(err, SD_ERR_UNSUPPORTED, "%s: key %s has an unknown type", g->small_path, key);
        }
        st = gguf_writer_set_val(g->w, k, v.type, &raw);
    }
    return st ? sd_err_set(err, st, "cannot write metadata") : SD_OK;
}

static sd_status grow_metadata(grower *g, const q35_plan *p, sd_err *err) {
    const q35_shape *t = p->t;
    gguf_writer *w = g->w;
    const char *arch = t->n_expert ? "qwen35moe" : "qwen35";
    const size_t n_shape = sizeof q35_shape_keys / sizeof *q35_shape_keys;
    const char **excl = sd_malloc_array((size_t)gguf_n_kv(g->small) + n_shape + 1, sizeof *excl);
    if (!excl) return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    size_t n_excl = 0;
    for (size_t j = 0; j < n_shape; j++) excl[n_excl++] = q35_shape_keys[j];
    sd_status st = t->n_expert ? moe_arch_keys(g, excl, &n_excl, err) : SD_OK;
    if (st) {
        free(excl);
        return st;
    }
    st = grow_copy_metadata(g, excl, n_excl, t->name, err);
    free(excl);
    const int n_all = p->n_layer + p->s.n_nextn;
    const tool_qwen3_shape sh = {n_all, t->n_embd, t->n_ff, t->n_head, p->n_head_kv, t->head_dim,
                                 (float)(p->s.eps * p->e), arch};
    char k[96];
#define KEY(s) (snprintf(k, sizeof k, "%s.%s", arch, s), k)
    st = st ? st : tool_write_qwen3_shape(w, &sh);
    st = st ? st : gguf_writer_set_u32(w, KEY("rope.dimension_count"), (uint32_t)t->n_rot);
    st = st ? st : gguf_writer_set_arr_data(w, KEY("rope.dimension_sections"), GGUF_TYPE_INT32, t->sections, 4);
    st = st ? st : gguf_writer_set_u32(w, KEY("ssm.state_size"), (uint32_t)t->ssm_state);
    st = st ? st : gguf_writer_set_u32(w, KEY("ssm.inner_size"), (uint32_t)(t->ssm_state * t->ssm_v));
    st = st ? st : gguf_writer_set_u32(w, KEY("ssm.time_step_rank"), (uint32_t)t->ssm_v);
    st = st ? st : gguf_writer_set_u32(w, KEY("ssm.group_count"), (uint32_t)t->ssm_k);
    bool rec[256];
    for (int il = 0; il < n_all; il++) rec[il] = il < p->n_layer && p->gdn[il];
    st = st ? st : gguf_writer_set_arr_data(w, KEY("attention.recurrent_layers"), GGUF_TYPE_BOOL, rec, (uint64_t)n_all);
    st = st ? st : gguf_writer_set_u32(w, KEY("full_attention_interval"), 4);
#undef KEY
    if (!st && t->n_expert) st = grow_moe_keys(w, &p->moe, arch);
    return st ? sd_err_set(err, st, "cannot write metadata") : SD_OK;
}

/* Bytes of a [n_out][n_in] matrix of type. */
static double mat_bytes(uint32_t type, int64_t n_in, int64_t n_out) {
    uint64_t rb = 0;
    ggml_row_bytes(type, (uint64_t)n_in, &rb);
    return (double)rb * (double)n_out;
}

static void print_plan(const char *small_path, const q35_plan *p, uint32_t type) {
    const q35_small *s = &p->s;
    const q35_shape *t = p->t;
    fprintf(stderr,
            "sd-genmodel: growing %s (%d layers + %d MTP, %d wide, n_ff %d, attention %d/%d x %d rot %d, "
            "GDN %d/%d x %d, vocab %lld) to %s: %d layers + %d MTP, %d wide, n_ff %d, attention %d/%d x %d rot %d, "
            "GDN %d/%d x %d\n",
            small_path, s->n_layer, s->n_nextn, s->n_embd, s->n_ff, s->n_head, s->n_head_kv, s->head_dim, s->n_rot,
            s->ssm_k, s->ssm_v, s->ssm_state, (long long)s->n_vocab, t->name, p->n_layer, s->n_nextn, t->n_embd,
            t->n_ff, t->n_head, p->n_head_kv, t->head_dim, t->n_rot, t->ssm_k, t->ssm_v, t->ssm_state);
    fprintf(stderr, "sd-genmodel: stream copies k = %d x a = %.6g, v copies m_v = %d, eps x %.6g, Q/K rows x %.6g%s\n",
            p->k, p->a, p->m_v, p->e, p->c,
            pow2(p->a) && pow2(p->c) ? "" : " (not all powers of two: some Q8_0 blocks re-round)");
    if (t->n_expert)
        fprintf(stderr, "sd-genmodel: qwen35moe FFN: %d experts of %d, top-%d, shared expert of %d: the small FFN's "
                "%d units are %lld in every routed expert + %lld in the shared one (grow_moe.c)\n", t->n_expert,
                t->n_ff_exp, t->n_used, t->n_ff_shexp, s->n_ff, (long long)(s->n_ff < t->n_ff_exp ? s->n_ff : t->n_ff_exp),
                (long long)(s->n_ff < t->n_ff_exp ? 0 : s->n_ff - t->n_ff_exp));
    if (p->n_head_kv != t->n_head_kv)
        fprintf(stderr, "sd-genmodel: %d kv heads instead of the real %d: the model's %d k norms need a grown head each\n",
                p->n_head_kv, t->n_head_kv, s->n_head_kv);
    if (t->real_layers) {
        bool real_gdn[256];
        for (int il = 0; il < 256; il++) real_gdn[il] = (il + 1) % 4 != 0;
        double want = per_token(t, t->n_head_kv, t->real_layers, real_gdn, Q35_REAL_VOCAB);
        double have = per_token(t, p->n_head_kv, p->n_layer, p->gdn, s->n_vocab);
        const double bpw = mat_bytes(type, 256, 1) / 256; /* bytes per weight of type */
        fprintf(stderr, "sd-genmodel: weights per token %.1f M (%.3f GB as %s) vs the real model's %.1f M (%.3f GB; "
                "%+.2f %%; %d layers, vocab %d): %d extra identity layers carry the smaller head\n",
                have / 1e6, have * bpw / 1e9, ggml_type_get(type)->name, want / 1e6, want * bpw / 1e9,
                100.0 * (have - want) / want, t->real_layers, Q35_REAL_VOCAB, p->n_layer - t->real_layers);
    } else if (t->n_expert) { /* a reduced depth: its layers are real, its head is the small one */
        const double have = per_token(t, p->n_head_kv, p->n_layer, p->gdn, s->n_vocab);
        const double bpw = mat_bytes(type, 256, 1) / 256;
        fprintf(stderr, "sd-genmodel: weights per token %.1f M (%.3f GB as %s); the real %d-row head would add %.1f M\n",
                have / 1e6, have * bpw / 1e9, ggml_type_get(type)->name, Q35_REAL_VOCAB,
                (double)(Q35_REAL_VOCAB - s->n_vocab) * t->n_embd / 1e6);
    }
}

/* The tensor bytes the file will hold (what grow() writes, vectors included). */
static double file_bytes(const q35_plan *p, uint32_t type) {
    const q35_shape *t = p->t;
    const int64_t D = t->n_embd, F = t->n_ff, NQ = (int64_t)t->n_head * t->head_dim;
    const int64_t NKV = (int64_t)p->n_head_kv * t->head_dim, vd = (int64_t)t->ssm_v * t->ssm_state;
    const int64_t cd = 2 * (int64_t)t->ssm_k * t->ssm_state + vd, V = p->s.n_vocab;
    const double ffn = (t->n_expert ? grow_moe_bytes(&p->moe, type) : 2 * mat_bytes(type, D, F) + mat_bytes(type, F, D)) + 8.0 * D;
    const double gdn = mat_bytes(type, D, cd) + mat_bytes(type, D, vd) + 2 * mat_bytes(type, D, t->ssm_v) +
                       mat_bytes(type, vd, D) + 4.0 * (p->s.conv_k * cd + 2 * t->ssm_v + t->ssm_state);
    const double att = mat_bytes(type, D, 2 * NQ) + 2 * mat_bytes(type, D, NKV) + mat_bytes(type, NQ, D) +
                       8.0 * t->head_dim;
    double b = 2 * mat_bytes(type, D, V) + 4.0 * D;
    for (int il = 0; il < p->n_layer; il++) b += ffn + (p->gdn[il] ? gdn : att);
    if (p->s.n_nextn) b += ffn + att + mat_bytes(type, 2 * D, D) + 12.0 * D;
    return b;
}

static sd_status grow_q35(const char *small_path, const q35_shape *t, uint32_t type, const char *out, bool dry_run,
                          sd_err *err) {
    gguf_ctx *small = NULL;
    sd_status st = gguf_open(small_path, &small, err);
    if (st) return st;
    q35_small s;
    q35_plan *p = sd_calloc(1, sizeof *p);
    grower g = {.small = small, .small_path = small_path, .type = type};
    if (!p) st = sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    if (!st) st = read_small(small, small_path, &s, err);
    if (!st) st = plan_init(p, &s, t, err);
    if (!st && !(g.w = gguf_writer_init())) st = sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    if (!st) {
        print_plan(small_path, p, type);
        fprintf(stderr, "sd-genmodel: the file will take %.2f GB (%s)\n", file_bytes(p, type) / 1e9,
                ggml_type_get(type)->name);
        if (dry_run) {
            plan_free(p), free(p), gguf_writer_free(g.w), gguf_close(small);
            return SD_OK;
        }
    }
    if (!st) st = grow_metadata(&g, p, err);
    /* token_embd: [n_embd, n_vocab]; its columns are the stream (item 1) */
    axis vocab = {0};
    if (!st) st = axis_init(&vocab, s.n_vocab, s.n_vocab, 1, err);
    for (int64_t i = 0; !st && i < s.n_vocab; i++) vocab.to[i] = i;
    if (!st) st = grow_mat(&g, "token_embd.weight", "token_embd.weight", type, &p->embd_cols, &vocab, 1.0, err);
    for (int il = 0; !st && il < p->n_layer; il++) {
        layer_io L = {&g, p, il, il, il < s.n_layer, err};
        st = grow_block(&L, p->gdn[il]);
    }
    if (!st && s.n_nextn) st = grow_mtp(&g, p, err);
    if (!st) st = grow_vec(&g, "output_norm.weight", "output_norm.weight", &p->every, sqrt(p->e), 0.0f, err);
    if (!st)
        st = grow_mat(&g, s.tied ? "token_embd.weight" : "output.weight", "output.weight", type, &p->head, &vocab, 1.0,
                      err);
    axis_free(&vocab);
    if (!st) {
        fprintf(stderr, "sd-genmodel: writing %.1f MB of tensors to %s\n", (double)g.total_bytes / 1e6, out);
        st = gguf_writer_write(g.w, out, err);
    }
    gguf_writer_free(g.w);
    for (int i = 0; i < g.n_bufs; i++) free(g.bufs[i]);
    free(g.bufs);
    if (p) plan_free(p);
    free(p);
    gguf_close(small);
    return st;
}

int grow_q35_run(const char *small, const char *shape_name, uint32_t type, const char *out, bool dry_run) {
    const q35_shape *t = q35_shape_find(shape_name);
    if (!t) return fprintf(stderr, "sd-genmodel: unknown --grow shape '%s'\n", shape_name), 2;
    sd_err err = {0};
    if (grow_q35(small, t, type, out, dry_run, &err)) {
        fprintf(stderr, "sd-genmodel: %s\n", err.msg);
        return 1;
    }
    return 0;
}
