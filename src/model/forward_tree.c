/* Token trees (model.h sd_forward_tree, ARCHITECTURE.md §7): candidate
 * continuations verified in one forward under a tree attention mask, and the
 * compaction that keeps the accepted root path at consecutive positions.
 *
 * Why it is batch-invariant: each row's arithmetic outside attention is
 * row-wise (matmul, norms, FFN), RoPE takes the node's chain position
 * (len + depth), and attention gives node s exactly the key list its chain
 * query has — committed rows 0..len-1, then its root path in position order —
 * with the per-row kernels of sd_fwd_attention (scores row by row, softmax
 * over that list left to right, value rows in the same order). Only the slots
 * the keys are read from differ, and a key row's bits do not depend on its
 * slot. */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "model/layers.h"
#include "numerics/ops.h"

/* The group queries j0..j1-1 of node s and KV head kvh: the operations of a
 * lone query over its chain's keys (layer_attn.c attend_queries), in pieces:
 * the committed rows in one run, then one key slot at a time. */
static void attend_node(sd_context *c, int il, int32_t pos0, int kvh, int s, int g0, int g1, const float *q,
                        float *out, float *att) {
    const sd_hparams *hp = &c->m->hp;
    const int hd = hp->head_dim, group = hp->n_head / hp->n_head_kv, nq = g1 - g0;
    const int64_t q_dim = (int64_t)hp->n_head * hd;
    const int32_t d = c->kv.tree.depth[s];
    float *sc[SD_ATT_QUERIES], *oh[SD_ATT_QUERIES], *w[SD_ATT_QUERIES];
    const float *qh[SD_ATT_QUERIES];
    int64_t n_kv[SD_ATT_QUERIES];
    for (int k = 0; k < nq; k++) {
        const int h = kvh * group + g0 + k;
        qh[k] = q + s * q_dim + (int64_t)h * hd;
        oh[k] = out + s * q_dim + (int64_t)h * hd;
        sc[k] = att + (int64_t)k * c->n_ctx;
        n_kv[k] = pos0 + d + 1;
        memset(oh[k], 0, (size_t)hd * sizeof *oh[k]);
    }
    sd_kv_cache_dot_k(&c->kv, il, kvh, sc, qh, nq, 0, pos0);
    for (int32_t t = 0; t <= d; t++) {
        for (int k = 0; k < nq; k++) w[k] = sc[k] + pos0 + t;
        sd_kv_cache_dot_k(&c->kv, il, kvh, w, qh, nq, pos0 + c->kv.tree.keys[s][t], 1);
    }
    sd_softmax_mq(sc, n_kv, nq, 1.0f / sqrtf((float)hd));
    sd_kv_cache_axpy_v(&c->kv, il, kvh, oh, (const float *const *)sc, nq, 0, pos0);
    for (int32_t t = 0; t <= d; t++) {
        for (int k = 0; k < nq; k++) w[k] = sc[k] + pos0 + t;
        sd_kv_cache_axpy_v(&c->kv, il, kvh, oh, (const float *const *)w, nq, pos0 + c->kv.tree.keys[s][t], 1);
    }
}

void sd_fwd_attention_tree(sd_context *c, int slot, int32_t pos0, int S, const float *q, float *out) {
    const sd_hparams *hp = &c->m->hp;
    const int group = hp->n_head / hp->n_head_kv;
    const int n_chunks = (group + SD_ATT_QUERIES - 1) / SD_ATT_QUERIES; /* a group is one item unless huge */
#pragma omp parallel for num_threads(c->n_threads) schedule(static)
    for (int it = 0; it < hp->n_head_kv * S * n_chunks; it++) {
        const int kvh = it / (S * n_chunks), s = it / n_chunks % S, g0 = it % n_chunks * SD_ATT_QUERIES;
        const int g1 = g0 + SD_ATT_QUERIES < group ? g0 + SD_ATT_QUERIES : group;
        float *att = c->sc.att + (int64_t)omp_get_thread_num() * SD_ATT_QUERIES * c->n_ctx;
        attend_node(c, slot, pos0, kvh, s, g0, g1, q, out, att);
    }
}

static sd_status check_tree(const sd_context *c, const int32_t *parent, int32_t S, sd_err *err) {
    if (sd_model_is_recurrent(c->m))
        return sd_err_set(err, SD_ERR_UNSUPPORTED,
                          "token tree: %s has recurrent layers, and a tree would need one recurrent state per branch",
                          c->m->hp.arch_name);
    int32_t max = c->n_batch < SD_TREE_MAX ? c->n_batch : SD_TREE_MAX;
    if (S < 1 || S > max || !parent)
        return sd_err_set(err, SD_ERR_ARG, "token tree: %d nodes (1..%d allowed)", S, max);
    for (int32_t s = 0; s < S; s++)
        if (parent[s] < -1 || parent[s] >= s)
            return sd_err_set(err, SD_ERR_ARG, "token tree: node %d has parent %d (must be in -1..%d)", s, parent[s],
                              s - 1);
    return SD_OK;
}

sd_status sd_forward_tree(sd_context *c, const int32_t *tokens, const int32_t *parent, int32_t S, float *logits,
                          sd_err *err) {
    sd_status st = check_tree(c, parent, S, err);
    if (st == SD_OK) st = sd_fwd_check_batch(c, tokens, S, S, logits, err);
    if (st == SD_OK && c->fwd_hook)
        st = sd_err_set(err, SD_ERR_UNSUPPORTED, "token trees are not supported on a batched sequence");
    if (st != SD_OK) return st;
    const int32_t base = c->kv.len;
    sd_context_reset_pending(c);
    sd_kv_tree_plan(&c->kv, parent, S);
    c->kv.tree.active = true;
    sd_fwd_batch(c, tokens, S, 0, S, logits);
    c->kv.tree.active = false;
    sd_kv_tree_pending(&c->kv, base, S);
    return SD_OK;
}

sd_status sd_context_keep_path(sd_context *c, const int32_t *path, int32_t m, sd_err *err) {
    sd_status st = sd_kv_tree_check_path(&c->kv, path, m, err);
    if (st != SD_OK) return st;
    /* the hidden rows move as the KV rows do (kv_cache.c keep_path) */
    for (int32_t d = 0; d < m; d++)
        if (path[d] != d) sd_hidden_hook_move_row(&c->hid, c->kv.tree.base + path[d], c->kv.tree.base + d);
    sd_kv_cache_keep_path(&c->kv, path, m);
    sd_context_reset_pending(c);
    return SD_OK;
}
