/* Internal to src/model: the KV cache of the attention layers of a context.
 * Layout (f16, IEEE binary16 bits in uint16_t, by default, as llama.cpp's
 * default cache type; half the bytes decode streams per token, which is
 * memory-bound): k[layer][kv_head][pos][head_dim], same for v. K and V may
 * each instead be one of llama.cpp's other cache types (its common/arg.cpp
 * kv_cache_types: f32, bf16, q8_0, q5_0, q5_1, q4_0, q4_1, iq4_nl), a row of
 * head_dim elements then being that type's blocks (ggml-common.h block
 * layouts, numerics/quant.h), quantized once when written. So the keys one attention
 * head reads are contiguous (position-major rows n_head_kv * head_dim apart
 * put every row of a head in the same few cache sets, and the S queries of a
 * verify re-read them from L3). A forward writes slots len..len+S-1 of every
 * head; rolling back is setting len.
 *
 * The cache also holds the slot plan of a token tree (model.h
 * sd_forward_tree): which slots each node attends to, and the compaction that
 * keeps one root path (sd_kv_cache_keep_path). That tree is its pending
 * state, cleared by sd_kv_cache_reset_pending.
 *
 * Sequences (memory.h): the length and truncate take a sequence id; only 0
 * is valid for now. The row layout above is that one sequence's. */
#ifndef SD_MODEL_MEMORY_KV_CACHE_H
#define SD_MODEL_MEMORY_KV_CACHE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "model/memory/memory.h"
#include "model/model.h"

/* The last sd_forward_tree put n nodes at slots base..base+n-1 (n = 0: none
 * pending). Node s sits at position base + depth[s] and attends to the
 * committed rows 0..base-1, then to the slots base + keys[s][0..depth[s]]
 * (its ancestors root first, itself last): the positions its chain would
 * have. active is set only during that forward, so the layers switch to the
 * tree mask. */
typedef struct sd_kv_tree {
    bool active;
    int32_t n, base;
    int32_t parent[SD_TREE_MAX], depth[SD_TREE_MAX];
    uint8_t keys[SD_TREE_MAX][SD_TREE_MAX];
} sd_kv_tree;

typedef struct sd_kv_cache {
    int32_t n_ctx;       /* slots per head */
    int32_t n_layers;    /* attention layers (n_layer - n_layer_gdn); sd_layer.slot indexes them */
    int32_t n_head_kv, head_dim;
    int64_t kv_dim;      /* n_head_kv * head_dim: one position's row of K (or V) in a batch */
    int32_t len;         /* slots 0..len-1 hold the sequence */
    int32_t pos_shift;   /* RoPE position of slot i: i + pos_shift (1 for an MTP head, else 0) */
    uint32_t type_k, type_v; /* ggml type of the K and V rows (GGML_TYPE_F16 unless asked) */
    size_t row_k, row_v; /* bytes of one head's row of head_dim elements */
    uint8_t *k, *v;      /* [max(n_layers, 1)][n_head_kv][n_ctx] rows of row_k (row_v) bytes */
    sd_kv_tree tree;
} sd_kv_cache;

/* Sizes the cache for the attention layers of hp and n_ctx slots (length 0,
 * nothing pending), rows f16. Errors: SD_ERR_NOMEM (kv left freed). */
sd_status sd_kv_cache_build(sd_kv_cache *kv, const sd_hparams *hp, int32_t n_ctx, sd_err *err);
/* The same with K rows of type type_k and V rows of type_v (ggml ids; see
 * sd_kv_type_check). Errors: SD_ERR_ARG (a type the cache cannot hold, or a
 * head_dim not a multiple of its block), SD_ERR_NOMEM; kv left freed. */
sd_status sd_kv_cache_build_typed(sd_kv_cache *kv, const sd_hparams *hp, int32_t n_ctx, uint32_t type_k,
                                  uint32_t type_v, sd_err *err);
/* Whether a cache of rows of head_dim elements can be of type t: f32, f16,
 * bf16, q8_0, q5_0, q5_1, q4_0, q4_1 or iq4_nl (llama.cpp's cache types),
 * head_dim a multiple of its block and at most SD_KV_TILE floats. Errors:
 * SD_ERR_ARG with a one-line reason naming what (e.g. "K cache"). */
sd_status sd_kv_type_check(uint32_t t, int32_t head_dim, const char *what, sd_err *err);
/* Floats of the per-call tile a quantized row run is widened into (stack). */
#define SD_KV_TILE 4096
void sd_kv_cache_free(sd_kv_cache *kv);
/* Every page of the K and V rows resident now, contents unchanged (memory.h sd_memory_commit). */
void sd_kv_cache_commit(sd_kv_cache *kv);
/* Bytes of K and V together (for messages). */
double sd_kv_cache_bytes(const sd_kv_cache *kv);
/* Bytes a cache of hp's attention layers, n_ctx slots and these row types
 * would take (for messages and the memory plan of a load). */
double sd_kv_cache_plan_bytes(const sd_hparams *hp, int32_t n_ctx, uint32_t type_k, uint32_t type_v);

/* Forgets a pending token tree: another forward, a truncate or a restore
 * came, so keep_path has nothing to keep. */
void sd_kv_cache_reset_pending(sd_kv_cache *kv);

/* Length of sequence seq; -1 for a seq that does not exist. */
int32_t sd_kv_cache_len(const sd_kv_cache *kv, int32_t seq);
/* Sequence seq keeps its first n slots (n clamped to 0..len; nothing changes
 * when n >= len); dropping slots resets what is pending. Errors: SD_ERR_ARG
 * (no such seq). */
sd_status sd_kv_cache_truncate(sd_kv_cache *kv, int32_t seq, int32_t n);
/* dst takes sequence seq of src: its rows 0..len-1 and length. Both of one
 * shape (the caller checked the model) with n_ctx(dst) >= len(src). Errors:
 * SD_ERR_ARG (no such seq). */
sd_status sd_kv_cache_copy(sd_kv_cache *dst, const sd_kv_cache *src, int32_t seq);

/* The bytes of the K (or V) row of position pos, attention layer slot
 * (sd_layer.slot), KV head h: row_k (row_v) bytes of type_k (type_v). */
static inline uint8_t *sd_kv_cache_krow(const sd_kv_cache *kv, int slot, int h, int64_t pos) {
    return kv->k + (((int64_t)slot * kv->n_head_kv + h) * kv->n_ctx + pos) * (int64_t)kv->row_k;
}
static inline uint8_t *sd_kv_cache_vrow(const sd_kv_cache *kv, int slot, int h, int64_t pos) {
    return kv->v + (((int64_t)slot * kv->n_head_kv + h) * kv->n_ctx + pos) * (int64_t)kv->row_v;
}
/* The same rows as f16 [n_ctx][head_dim]: for an f16 cache only. */
static inline uint16_t *sd_kv_cache_k(const sd_kv_cache *kv, int slot, int h) {
    return (uint16_t *)(void *)sd_kv_cache_krow(kv, slot, h, 0);
}
static inline uint16_t *sd_kv_cache_v(const sd_kv_cache *kv, int slot, int h) {
    return (uint16_t *)(void *)sd_kv_cache_vrow(kv, slot, h, 0);
}

/* Writes the K and V rows of position pos, layer slot, head h from head_dim
 * floats each: rounded to f16 or quantized by the type's reference quantizer
 * (numerics/quant.h sd_quantize_row), once; every query reads these bits. */
void sd_kv_cache_store(sd_kv_cache *kv, int slot, int h, int64_t pos, const float *k, const float *v);

/* Attention over the stored rows, for queries q[0..nq-1] (head_dim floats
 * each): out[j][i] = q[j] . K[r0 + i] for i < rows (sd_dot_*_rows_mq), and
 * y[j] += w[j][i] * V[r0 + i] for i = 0..rows-1 in order (sd_axpy_*_rows_mq).
 * f16 rows go to the f16 kernels; other types are widened exactly to f32
 * (their dequantization, numerics/quant.h: d * q (+ m), exact or one fixed
 * rounding) SD_KV_TILE floats at a time and go to the f32 kernels. Each
 * score and each output element gets the same operations whatever rows,
 * tiles or batch it comes in (a score is one row's dot; the value rows are
 * fmas in row order), on every kernel path. */
void sd_kv_cache_dot_k(const sd_kv_cache *kv, int slot, int h, float *const *out, const float *const *q, int nq,
                       int64_t r0, int64_t rows);
void sd_kv_cache_axpy_v(const sd_kv_cache *kv, int slot, int h, float *const *y, const float *const *w, int nq,
                        int64_t r0, int64_t rows);

/* The slot plan of a tree of S nodes, parent[s] in -1..s-1 (checked by the
 * caller): parent, depth and key slots of every node (sd_kv_tree). */
void sd_kv_tree_plan(sd_kv_cache *kv, const int32_t *parent, int32_t S);
/* After the tree forward: its S nodes are pending at slots base..base+S-1. */
void sd_kv_tree_pending(sd_kv_cache *kv, int32_t base, int32_t S);
/* Checks that path[m] is a root path of the pending tree (model.h
 * sd_context_keep_path has the contract). Errors: SD_ERR_ARG, nothing changed. */
sd_status sd_kv_tree_check_path(const sd_kv_cache *kv, const int32_t *path, int32_t m, sd_err *err);
/* Keeps the checked root path path[m]: the rows of its nodes move to slots
 * base..base+m-1, the length becomes base + m, nothing is pending. */
void sd_kv_cache_keep_path(sd_kv_cache *kv, const int32_t *path, int32_t m);

#ifdef SD_TEST_MUTANTS
/* Test builds only (tests/model/test_forward_tree.c compiles kv_cache.c with
 * SD_TEST_MUTANTS): when set, every tree node attends to all nodes before it
 * (a causal chain mask, siblings included), so the test can show its checks
 * fail under a wrong mask. */
extern bool sd_mutant_tree_chain_mask;
#endif

#endif
