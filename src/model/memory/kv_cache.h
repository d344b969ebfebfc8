/* Internal to src/model: the KV cache of the attention layers of a context.
 * Layout (f16, IEEE binary16 bits in uint16_t, as llama.cpp's default cache
 * type; half the bytes decode streams per token, which is memory-bound):
 * k[layer][kv_head][pos][head_dim], same for v, so the keys one attention
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
    uint16_t *k, *v;     /* f16 [max(n_layers, 1)][n_head_kv][n_ctx][head_dim] */
    sd_kv_tree tree;
} sd_kv_cache;

/* Sizes the cache for the attention layers of hp and n_ctx slots (length 0,
 * nothing pending). Errors: SD_ERR_NOMEM (kv left freed). */
sd_status sd_kv_cache_build(sd_kv_cache *kv, const sd_hparams *hp, int32_t n_ctx, sd_err *err);
void sd_kv_cache_free(sd_kv_cache *kv);
/* Bytes of K and V together (for messages). */
double sd_kv_cache_bytes(const sd_kv_cache *kv);

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

/* The K (or V) rows of attention layer slot (sd_layer.slot), KV head h: f16 [n_ctx][head_dim]. */
static inline uint16_t *sd_kv_cache_k(const sd_kv_cache *kv, int slot, int h) {
    return kv->k + ((int64_t)slot * kv->n_head_kv + h) * kv->n_ctx * kv->head_dim;
}
static inline uint16_t *sd_kv_cache_v(const sd_kv_cache *kv, int slot, int h) {
    return kv->v + ((int64_t)slot * kv->n_head_kv + h) * kv->n_ctx * kv->head_dim;
}

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
