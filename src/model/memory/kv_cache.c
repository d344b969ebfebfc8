/* The KV cache of the attention layers: see kv_cache.h. */
#include "model/memory/kv_cache.h"

#include <stdlib.h>
#include <string.h>

#include "model/memory/scratch.h"
#include "numerics/ops.h"
#include "numerics/quant.h"

#ifdef SD_TEST_MUTANTS
bool sd_mutant_tree_chain_mask;
#endif

/* llama.cpp's cache types (common/arg.cpp kv_cache_types). */
static const uint32_t kv_types[] = {GGML_TYPE_F32,  GGML_TYPE_F16,  GGML_TYPE_BF16, GGML_TYPE_Q8_0,  GGML_TYPE_Q4_0,
                                    GGML_TYPE_Q4_1, GGML_TYPE_IQ4_NL, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1};

sd_status sd_kv_type_check(uint32_t t, int32_t head_dim, const char *what, sd_err *err) {
    bool known = false;
    for (size_t i = 0; i < sizeof kv_types / sizeof *kv_types; i++) known |= kv_types[i] == t;
    if (!known)
        return sd_err_set(err, SD_ERR_ARG,
                          "%s type %s: not a cache type (f32, f16, bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1)", what,
                          ggml_type_get(t)->name);
    const uint32_t bs = sd_quant_block_size(t);
    if (head_dim <= 0 || head_dim % (int32_t)bs || head_dim > SD_KV_TILE)
        return sd_err_set(err, SD_ERR_ARG, "%s type %s: a head of %d dims is not whole blocks of %u", what,
                          ggml_type_get(t)->name, head_dim, bs);
    return SD_OK;
}

sd_status sd_kv_cache_build(sd_kv_cache *kv, const sd_hparams *hp, int32_t n_ctx, sd_err *err) {
    return sd_kv_cache_build_typed(kv, hp, n_ctx, GGML_TYPE_F16, GGML_TYPE_F16, err);
}

sd_status sd_kv_cache_build_typed(sd_kv_cache *kv, const sd_hparams *hp, int32_t n_ctx, uint32_t type_k,
                                  uint32_t type_v, sd_err *err) {
    memset(kv, 0, sizeof *kv);
    const bool attn = hp->n_layer > hp->n_layer_gdn; /* a cache without attention layers is never read */
    if (attn && type_k != GGML_TYPE_F16 && sd_kv_type_check(type_k, hp->head_dim, "K cache", err) != SD_OK)
        return SD_ERR_ARG;
    if (attn && type_v != GGML_TYPE_F16 && sd_kv_type_check(type_v, hp->head_dim, "V cache", err) != SD_OK)
        return SD_ERR_ARG;
    if (!attn) type_k = type_v = GGML_TYPE_F16;
    kv->type_k = type_k;
    kv->type_v = type_v;
    kv->row_k = (size_t)hp->head_dim / sd_quant_block_size(type_k) * sd_quant_type_size(type_k);
    kv->row_v = (size_t)hp->head_dim / sd_quant_block_size(type_v) * sd_quant_type_size(type_v);
    kv->n_ctx = n_ctx;
    kv->n_layers = hp->n_layer - hp->n_layer_gdn;
    kv->n_head_kv = hp->n_head_kv;
    kv->head_dim = hp->head_dim;
    kv->kv_dim = (int64_t)hp->n_head_kv * hp->head_dim;
    kv->pos_shift = hp->arch == SD_ARCH_QWEN35_MTP; /* slot i holds the MTP pair of position i + 1 */
    bool ok = true;
    const size_t layers = kv->n_layers > 0 ? (size_t)kv->n_layers : 1;
    kv->k = sd_memory_alloc(layers, (size_t)n_ctx, (size_t)kv->n_head_kv, kv->row_k, &ok);
    kv->v = sd_memory_alloc(layers, (size_t)n_ctx, (size_t)kv->n_head_kv, kv->row_v, &ok);
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

void sd_kv_cache_commit(sd_kv_cache *kv) {
    sd_memory_commit(kv->k);
    sd_memory_commit(kv->v);
}

double sd_kv_cache_bytes(const sd_kv_cache *kv) {
    const double layers = kv->n_layers > 0 ? kv->n_layers : 1;
    return layers * (double)kv->n_ctx * (double)kv->n_head_kv * (double)(kv->row_k + kv->row_v);
}

double sd_kv_cache_plan_bytes(const sd_hparams *hp, int32_t n_ctx, uint32_t type_k, uint32_t type_v) {
    const int32_t nl = hp->n_layer - hp->n_layer_gdn;
    const double row = (double)hp->head_dim / sd_quant_block_size(type_k) * sd_quant_type_size(type_k) +
                       (double)hp->head_dim / sd_quant_block_size(type_v) * sd_quant_type_size(type_v);
    return (nl > 0 ? nl : 1) * (double)n_ctx * hp->n_head_kv * row;
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
    if (dst->type_k != src->type_k || dst->type_v != src->type_v) return SD_ERR_ARG;
    for (int32_t l = 0; l < src->n_layers; l++)
        for (int h = 0; h < src->n_head_kv; h++) {
            memcpy(sd_kv_cache_krow(dst, l, h, 0), sd_kv_cache_krow(src, l, h, 0), (size_t)src->len * src->row_k);
            memcpy(sd_kv_cache_vrow(dst, l, h, 0), sd_kv_cache_vrow(src, l, h, 0), (size_t)src->len * src->row_v);
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
    for (int32_t l = 0; l < kv->n_layers; l++)
        for (int h = 0; h < kv->n_head_kv; h++) {
            memcpy(sd_kv_cache_krow(kv, l, h, to), sd_kv_cache_krow(kv, l, h, from), kv->row_k);
            memcpy(sd_kv_cache_vrow(kv, l, h, to), sd_kv_cache_vrow(kv, l, h, from), kv->row_v);
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

/* One row of type t: f16 by the kernel table's conversion (as before there
 * were other types), the rest by the reference quantizer. */
static void store_row(uint32_t t, uint8_t *dst, const float *x, int64_t n) {
    if (t == GGML_TYPE_F16)
        sd_fp32_to_fp16_row((uint16_t *)(void *)dst, x, n);
    else
        sd_quantize_row(t, x, dst, n);
}

void sd_kv_cache_store(sd_kv_cache *kv, int slot, int h, int64_t pos, const float *k, const float *v) {
    store_row(kv->type_k, sd_kv_cache_krow(kv, slot, h, pos), k, kv->head_dim);
    store_row(kv->type_v, sd_kv_cache_vrow(kv, slot, h, pos), v, kv->head_dim);
}

/* Rows r0.. of a run widened to f32 in tile[], at most SD_KV_TILE floats:
 * returns how many rows it took. */
static int64_t widen_rows(uint32_t t, const uint8_t *rows, size_t row_bytes, int64_t hd, int64_t n, float *tile) {
    int64_t take = SD_KV_TILE / hd;
    if (take > n) take = n;
    for (int64_t i = 0; i < take; i++) sd_dequantize_row(t, rows + i * (int64_t)row_bytes, tile + i * hd, hd);
    return take;
}

void sd_kv_cache_dot_k(const sd_kv_cache *kv, int slot, int h, float *const *out, const float *const *q, int nq,
                       int64_t r0, int64_t rows) {
    const int64_t hd = kv->head_dim;
    if (kv->type_k == GGML_TYPE_F16) {
        sd_dot_f16_rows_mq(out, q, nq, sd_kv_cache_k(kv, slot, h) + r0 * hd, hd, rows, hd);
        return;
    }
    float tile[SD_KV_TILE], *o[SD_ATT_QUERIES];
    for (int64_t done = 0; done < rows;) {
        const int64_t n = widen_rows(kv->type_k, sd_kv_cache_krow(kv, slot, h, r0 + done), kv->row_k, hd,
                                     rows - done, tile);
        for (int j = 0; j < nq; j++) o[j] = out[j] + done;
        sd_dot_f32_rows_mq(o, q, nq, tile, hd, n, hd);
        done += n;
    }
}

void sd_kv_cache_axpy_v(const sd_kv_cache *kv, int slot, int h, float *const *y, const float *const *w, int nq,
                        int64_t r0, int64_t rows) {
    const int64_t hd = kv->head_dim;
    if (kv->type_v == GGML_TYPE_F16) {
        sd_axpy_f16_rows_mq(y, w, nq, sd_kv_cache_v(kv, slot, h) + r0 * hd, hd, rows, hd);
        return;
    }
    float tile[SD_KV_TILE];
    const float *wt[SD_ATT_QUERIES];
    for (int64_t done = 0; done < rows;) {
        const int64_t n = widen_rows(kv->type_v, sd_kv_cache_vrow(kv, slot, h, r0 + done), kv->row_v, hd,
                                     rows - done, tile);
        for (int j = 0; j < nq; j++) wt[j] = w[j] + done;
        sd_axpy_f32_rows_mq(y, wt, nq, tile, hd, n, hd);
        done += n;
    }
}
