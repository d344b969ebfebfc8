/* Softmax attention of the dense architectures (llama.cpp
 * src/models/llama.cpp, qwen2.cpp, qwen3.cpp; the EAGLE-3 head's layer):
 *
 *   out = Wo · attention(rope(norm_q(Wq·n + bq)), rope(norm_k(Wk·n + bk)), Wv·n + bv)
 *
 * and the attention pieces the other kinds share (layers.h): per-head
 * norm + RoPE, the KV rows (f16 or a quantized cache type), causal attention over the cache. Each
 * (position, head) gets the operations of a lone query over keys 0..pos in
 * position order (several queries share each key load, not its arithmetic),
 * so the output of a position does not depend on S or on the thread count. */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "model/layers.h"
#include "numerics/ops.h"

static void add_bias(float *x, const float *b, int S, int64_t n) {
    if (!b) return;
    for (int s = 0; s < S; s++) sd_add(x + s * n, b, n);
}

/* Per head of every row: optional qwen3 RMSNorm over the head, then RoPE
 * (with the Llama 3.1 frequency factors when the model has them). The sines
 * of a position are computed once for all its heads, ROPE_PAIRS pairs at a time. */
#define ROPE_PAIRS 256
void sd_fwd_norm_rope_heads(const sd_model *m, float *x, const float *norm_w, int S, int n_heads, int32_t pos0,
                            const int32_t *depth) {
    const sd_hparams *hp = &m->hp;
    const int hd = hp->head_dim, half = hp->n_rot / 2;
    float cs[2 * ROPE_PAIRS];
    for (int s = 0; s < S; s++) {
        float *row = x + (int64_t)s * n_heads * hd;
        if (norm_w)
            for (int h = 0; h < n_heads; h++) sd_rmsnorm(row + (int64_t)h * hd, row + (int64_t)h * hd, norm_w, hd, hp->rms_eps);
        for (int i0 = 0; i0 < half; i0 += ROPE_PAIRS) {
            int i1 = half - i0 < ROPE_PAIRS ? half : i0 + ROPE_PAIRS;
            sd_rope_cossin(cs, i0, i1, hp->n_rot, pos0 + (depth ? depth[s] : s), hp->rope_base, hp->rope_freq_scale, m->rope_freqs);
            for (int h = 0; h < n_heads; h++) sd_rope_apply(row + (int64_t)h * hd, cs, i0, i1, hp->n_rot, hp->rope_neox);
        }
    }
}

/* Attention of the queries j0..j1-1 of KV head kvh, numbered position-major
 * (j = s * group + g: position pos0 + s, query head kvh * group + g), so the
 * queries that see a given new key row are a suffix j >= s * group. Each key
 * and value row is read once for all of them (sd_*_rows_mq); each query still
 * gets exactly the operations of a lone query: scores over keys 0..pos0+s,
 * softmax, then the value rows in position order. att: SD_ATT_QUERIES x n_ctx. */
static void attend_queries(sd_context *c, int il, int32_t pos0, int kvh, int j0, int j1, const float *q,
                           float *out, float *att) {
    const sd_hparams *hp = &c->m->hp;
    const int hd = hp->head_dim, group = hp->n_head / hp->n_head_kv, nq = j1 - j0;
    const int64_t q_dim = (int64_t)hp->n_head * hd;
    const float scale = 1.0f / sqrtf((float)hd);
    const int s_first = j0 / group, s_last = (j1 - 1) / group;
    float *sc[SD_ATT_QUERIES] = {0}, *oh[SD_ATT_QUERIES];
    const float *qh[SD_ATT_QUERIES] = {0}, *w[SD_ATT_QUERIES];
    for (int k = 0; k < nq; k++) {
        const int s = (j0 + k) / group, h = kvh * group + (j0 + k) % group;
        qh[k] = q + s * q_dim + (int64_t)h * hd;
        oh[k] = out + s * q_dim + (int64_t)h * hd;
        sc[k] = att + (int64_t)k * c->n_ctx;
    }
    /* Scores of every query over the keys of the last one: the few past a
     * query's own position are computed but never read. */
    sd_kv_cache_dot_k(&c->kv, il, kvh, sc, qh, nq, 0, pos0 + s_last + 1);
    int64_t n_kv[SD_ATT_QUERIES];
    for (int k = 0; k < nq; k++) {
        n_kv[k] = pos0 + (j0 + k) / group + 1;
        memset(oh[k], 0, (size_t)hd * sizeof *oh[k]);
    }
    sd_softmax_mq(sc, n_kv, nq, scale);
    /* Values: the rows every query sees, then the causal tail row by row,
     * each to the queries at or after its position. */
    sd_kv_cache_axpy_v(&c->kv, il, kvh, oh, (const float *const *)sc, nq, 0, pos0 + s_first + 1);
    for (int t = s_first + 1; t <= s_last; t++) {
        const int k0 = t * group - j0;
        for (int k = k0; k < nq; k++) w[k] = sc[k] + pos0 + t;
        sd_kv_cache_axpy_v(&c->kv, il, kvh, oh + k0, w + k0, nq - k0, pos0 + t, 1);
    }
}

/* Causal attention of S query rows at positions pos0..pos0+S-1 against the
 * KV cache of layer il (which already holds those positions). Work items are
 * a KV head x a run of at most SD_ATT_QUERIES of its group's S * group
 * queries (split evenly); one thread computes an item start to finish, and
 * no query's result depends on which item or thread it falls in, so the
 * output is the same for every S and thread count. GQA: query head h reads
 * KV head h / (n_head / n_head_kv). */
void sd_fwd_attention(sd_context *c, int il, int32_t pos0, int S, const float *q, float *out) {
    const sd_hparams *hp = &c->m->hp;
    const int nq_kv = S * (hp->n_head / hp->n_head_kv); /* queries per KV head */
    const int n_items = (nq_kv + SD_ATT_QUERIES - 1) / SD_ATT_QUERIES;
    const int per_item = (nq_kv + n_items - 1) / n_items;
#pragma omp parallel for num_threads(c->n_threads) schedule(static)
    for (int it = 0; it < hp->n_head_kv * n_items; it++) {
        const int kvh = it / n_items, j0 = (it % n_items) * per_item;
        const int j1 = j0 + per_item < nq_kv ? j0 + per_item : nq_kv;
        float *att = c->sc.att + (int64_t)omp_get_thread_num() * SD_ATT_QUERIES * c->n_ctx;
        if (j0 < j1) attend_queries(c, il, pos0, kvh, j0, j1, q, out, att);
    }
}

void sd_fwd_kv_store(sd_context *c, int slot, int32_t pos0, int S) {
    const int64_t hd = c->m->hp.head_dim, kv_dim = c->kv.kv_dim;
    for (int h = 0; h < c->m->hp.n_head_kv; h++)
        for (int s = 0; s < S; s++) /* rounded (quantized) once; every query, its own included, reads these */
            sd_kv_cache_store(&c->kv, slot, h, pos0 + s, c->sc.k + s * kv_dim + h * hd, c->sc.v + s * kv_dim + h * hd);
}

void sd_layer_attn_in(sd_context *c, const sd_layer *L, int S) {
    const sd_hparams *hp = &c->m->hp;
    const int64_t q_dim = (int64_t)hp->n_head * hp->head_dim;
    const sd_matrix *qkv[3] = {&L->wq, &L->wk, &L->wv};
    float *qkv_out[3] = {c->sc.q, c->sc.k, c->sc.v};
    sd_matmul_multi(qkv, 3, c->sc.xb, S, qkv_out, c->n_threads); /* one activation quantization, one thread wake-up */
    if (hp->qkv_bias) {
        add_bias(c->sc.q, L->bq, S, q_dim);
        add_bias(c->sc.k, L->bk, S, c->kv.kv_dim);
        add_bias(c->sc.v, L->bv, S, c->kv.kv_dim);
    }
}

void sd_layer_attn_seq(sd_context *c, const sd_layer *L, int S) {
    const sd_model *m = c->m;
    const sd_hparams *hp = &m->hp;
    const int32_t pos0 = c->kv.len;
    const int32_t *depth = c->kv.tree.active ? c->kv.tree.depth : NULL; /* a token tree (forward_tree.c) */
    sd_fwd_norm_rope_heads(m, c->sc.q, hp->qk_norm ? L->q_norm : NULL, S, hp->n_head, pos0, depth);
    sd_fwd_norm_rope_heads(m, c->sc.k, hp->qk_norm ? L->k_norm : NULL, S, hp->n_head_kv, pos0, depth);
    sd_fwd_kv_store(c, L->slot, pos0, S);
    if (depth)
        sd_fwd_attention_tree(c, L->slot, pos0, S, c->sc.q, c->sc.att_out);
    else
        sd_fwd_attention(c, L->slot, pos0, S, c->sc.q, c->sc.att_out);
}

void sd_layer_attn_out(sd_context *c, const sd_layer *L, int S) {
    sd_matmul(&L->wo, c->sc.att_out, S, c->sc.xb, c->n_threads);
}
