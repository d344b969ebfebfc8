/* The KV cache of the attention layers: see kv_cache.h. */
#include "model/memory/kv_cache.h"

#include <stdlib.h>
#include <string.h>

#ifdef SD_TEST_MUTANTS
bool sd_mutant_tree_chain_mask;
#endif

sd_status sd_kv_cache_build(sd_kv_cache *kv, const sd_hparams *hp, int32_t n_ctx, sd_err *err) {
    memset(kv, 0, sizeof *kv);
    kv->n_ctx = n_ctx;
    kv->n_layers = hp->n_layer - hp->n_layer_gdn;
    kv->n_head_kv = hp->n_head_kv;
    kv->head_dim = hp->head_dim;
    kv->kv_dim = (int64_t)hp->n_head_kv * hp->head_dim;
    kv->pos_shift = hp->arch == SD_ARCH_QWEN35_MTP; /* slot i holds the MTP pair of position i + 1 */
    bool ok = true;
    const size_t layers = kv->n_layers > 0 ? (size_t)kv->n_layers : 1;
    kv->k = sd_memory_alloc(layers, (size_t)n_ctx, (size_t)kv->kv_dim, sizeof(uint16_t), &ok);
    kv->v = sd_memory_alloc(layers, (size_t)n_ctx, (size_t)kv->kv_dim, sizeof(uint16_t), &ok);
    if (!ok) {
        sd_status st = sd_err_set(err, SD_ERR_NOMEM, "out of memory for a KV cache of %.1f MiB",
                                  sd_kv_cache_bytes(kv) / (1 << 20));
        sd_kv_cache_free(kv);
        return st;
    }
    return SD_OK;
}

void sd_kv_cache_free(sd_kv_cache *kv) {
    free(kv->k);
    free(kv->v);
    kv->k = kv->v = NULL;
}

double sd_kv_cache_bytes(const sd_kv_cache *kv) {
    const double layers = kv->n_layers > 0 ? kv->n_layers : 1;
    return 2.0 * layers * (double)kv->n_ctx * (double)kv->kv_dim * sizeof(uint16_t);
}

void sd_kv_cache_reset_pending(sd_kv_cache *kv) {
    kv->tree.n = 0;
    kv->tree.active = false;
}

int32_t sd_kv_cache_len(const sd_kv_cache *kv, int32_t seq) { return sd_memory_seq_ok(seq) ? kv->len : -1; }

sd_status sd_kv_cache_truncate(sd_kv_cache *kv, int32_t seq, int32_t n) {
    if (!sd_memory_seq_ok(seq)) return SD_ERR_ARG;
    if (n < 0) n = 0;
    if (n >= kv->len) return SD_OK;
    kv->len = n;
    sd_kv_cache_reset_pending(kv); /* a tree's nodes are gone */
    return SD_OK;
}

sd_status sd_kv_cache_copy(sd_kv_cache *dst, const sd_kv_cache *src, int32_t seq) {
    if (!sd_memory_seq_ok(seq)) return SD_ERR_ARG;
    const size_t n = (size_t)src->len * (size_t)src->head_dim * sizeof(uint16_t);
    for (int32_t l = 0; l < src->n_layers; l++)
        for (int h = 0; h < src->n_head_kv; h++) {
            memcpy(sd_kv_cache_k(dst, l, h), sd_kv_cache_k(src, l, h), n);
            memcpy(sd_kv_cache_v(dst, l, h), sd_kv_cache_v(src, l, h), n);
        }
    dst->len = src->len;
    sd_kv_cache_reset_pending(dst);
    return SD_OK;
}

void sd_kv_tree_plan(sd_kv_cache *kv, const int32_t *parent, int32_t S) {
    sd_kv_tree *t = &kv->tree;
    for (int32_t s = 0; s < S; s++) {
        t->parent[s] = parent[s];
        t->depth[s] = parent[s] < 0 ? 0 : t->depth[parent[s]] + 1;
        for (int32_t a = s; a >= 0; a = t->parent[a]) t->keys[s][t->depth[a]] = (uint8_t)a;
#ifdef SD_TEST_MUTANTS
        if (sd_mutant_tree_chain_mask) {
            for (int32_t u = 0; u <= s; u++) t->keys[s][u] = (uint8_t)u;
            t->depth[s] = s;
        }
#endif
    }
}

void sd_kv_tree_pending(sd_kv_cache *kv, int32_t base, int32_t S) {
    kv->tree.n = S;
    kv->tree.base = base;
}

sd_status sd_kv_tree_check_path(const sd_kv_cache *kv, const int32_t *path, int32_t m, sd_err *err) {
    const sd_kv_tree *t = &kv->tree;
    if (t->n == 0 || kv->len != t->base + t->n) return sd_err_set(err, SD_ERR_ARG, "keep_path: no token tree is pending");
    if (m < 0 || m > t->n || (m > 0 && !path))
        return sd_err_set(err, SD_ERR_ARG, "keep_path: %d nodes of a tree of %d", m, t->n);
    for (int32_t d = 0; d < m; d++)
        if (path[d] < 0 || path[d] >= t->n || t->parent[path[d]] != (d ? path[d - 1] : -1))
            return sd_err_set(err, SD_ERR_ARG, "keep_path: node %d at depth %d is not on a root path", path[d], d);
    return SD_OK;
}

/* Moves the row of slot `from` to slot `to` in every KV head. */
static void move_row(sd_kv_cache *kv, int32_t from, int32_t to) {
    const int64_t hd = kv->head_dim;
    for (int32_t l = 0; l < kv->n_layers; l++)
        for (int h = 0; h < kv->n_head_kv; h++) {
            uint16_t *k = sd_kv_cache_k(kv, l, h), *v = sd_kv_cache_v(kv, l, h);
            memcpy(k + to * hd, k + from * hd, (size_t)hd * sizeof *k);
            memcpy(v + to * hd, v + from * hd, (size_t)hd * sizeof *v);
        }
}

void sd_kv_cache_keep_path(sd_kv_cache *kv, const int32_t *path, int32_t m) {
    /* path[d] >= d (parents come first), so a row only moves down onto a slot
     * no later node of the path is read from */
    for (int32_t d = 0; d < m; d++)
        if (path[d] != d) move_row(kv, kv->tree.base + path[d], kv->tree.base + d);
    kv->len = kv->tree.base + m;
    sd_kv_cache_reset_pending(kv);
}
