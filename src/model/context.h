/* Internal to src/model: the inference state behind the opaque sd_context.
 * KV cache layout (f16, IEEE binary16 bits in uint16_t, as llama.cpp's default
 * cache type; half the bytes decode streams per token, which is memory-bound):
 * k[layer][kv_head][pos][head_dim], same for v, so
 * the keys one attention head reads are contiguous (position-major rows
 * n_head_kv * head_dim apart put every row of a head in the same few cache
 * sets, and the S queries of a verify re-read them from L3). A forward
 * writes positions len..len+S-1 of every head. Rolling back is setting len. */
#ifndef SD_MODEL_CONTEXT_H
#define SD_MODEL_CONTEXT_H

#include <stdint.h>

#include "model/model.h"
#include "model/recurrent.h"

struct sd_context {
    const sd_model *m;
    int32_t n_ctx, n_batch, len;
    int n_threads;
    int64_t kv_dim;        /* n_head_kv * head_dim */
    int32_t n_kv_layers;   /* attention layers (n_layer - n_layer_gdn); sd_layer.slot indexes them */
    uint16_t *k_cache, *v_cache; /* f16 [n_kv_layers][n_head_kv][n_ctx][head_dim] */
    sd_recurrent rec;      /* GDN layers' conv windows and delta-rule states (empty for dense models) */
    /* scratch for one batch of up to n_batch rows */
    float *x;       /* [n_batch][n_embd] residual stream */
    float *xb;      /* [n_batch][n_embd] normed input / block output (eagle3, MTP: [n_batch][2 * n_embd], the [e ; h] input) */
    int32_t pos_shift; /* RoPE position of cache index i: i + pos_shift (1 for an MTP head, else 0) */
    float *q;       /* [n_batch][n_head * head_dim] */
    float *k, *v;   /* [n_batch][kv_dim] */
    float *att_out; /* [n_batch][n_head * head_dim] */
    float *hb, *hb2;/* [n_batch][n_ff] */
    float *att;     /* [n_threads][SD_ATT_QUERIES][n_ctx] attention scores, one block per thread */
    /* qwen35 only (NULL otherwise) */
    float *qg;      /* [n_batch][2 * n_head * head_dim] joint Q + gate projection */
    float *gate;    /* [n_batch][n_head * head_dim] the attention output gate */
    float *mix;     /* [n_batch][conv_dim] GDN conv inputs (attn_qkv) */
    float *conv;    /* [n_batch][conv_dim] conv outputs after SiLU: q | k | v */
    float *z;       /* [n_batch][H_v * S] GDN output gate */
    float *beta, *alpha; /* [n_batch][H_v] */
    float *gdn_o;   /* [n_batch][H_v * S] GDN output before ssm_out */
    /* ---- mixture of experts (qwen3moe, qwen35moe): scratch and counters of
     * layer_moe.c, built and freed by moe.h; NULL for dense models ---- */
    struct sd_moe_scratch *moe;
    /* The last forward when it was one batch (S <= n_batch): x still holds its
     * S final residual rows, so sd_forward_more can run the output head on rows
     * it skipped. head_S = 0 when there is nothing to resume (any other
     * forward, and a truncate that drops positions, clear it). */
    int32_t head_S, head_n; /* its S, and the rows with logits so far */
    /* Hidden-state hook (model.h sd_context_request_hidden): hid = NULL when off. */
    int hid_n;                           /* number of layer ids */
    int32_t hid_ids[SD_HIDDEN_MAX_IDS];
    float *hid;                          /* [n_ctx][hid_n * n_embd] */
    /* Rollback captures (model.h sd_context_capture_init): slot p % cap_slots
     * holds what the step from p - 1 to p tokens left (STATE: the whole
     * recurrent state after it, the layout of rec.data; INPUTS: per GDN layer
     * [mix conv_dim | conv conv_dim | decay H_v | beta H_v]). cap_pos[slot] is
     * the p a slot holds (-1: none). Forwards capture steps p >= cap_from. */
    sd_capture_kind cap_kind;
    int32_t cap_slots, cap_from;
    int64_t cap_layer_floats, cap_floats; /* per GDN layer, per slot (all layers) */
    float *cap;                           /* [cap_slots][cap_floats] */
    int32_t *cap_pos;                     /* [cap_slots] */
    bool cap_touched;                     /* every page of cap written once (sd_context_capture_touch) */
    /* Token tree (forward_tree.c): the last sd_forward_tree put tree_n nodes
     * at KV slots tree_base.. (tree_n = 0: none, or another forward or a
     * truncate came since). Node s sits at position tree_base + tree_depth[s]
     * and attends to the committed rows 0..tree_base-1, then to the slots
     * tree_base + tree_keys[s][0..tree_depth[s]] (its ancestors root first,
     * itself last): the positions its chain would have. tree_active is set
     * only during that forward, so the layers switch to the tree mask. */
    bool tree_active;
    int32_t tree_n, tree_base;
    int32_t tree_parent[SD_TREE_MAX], tree_depth[SD_TREE_MAX];
    uint8_t tree_keys[SD_TREE_MAX][SD_TREE_MAX];
    /* Test-only mutant (tests/model/test_forward_tree.c): every node attends
     * to all nodes before it (a causal chain mask), siblings included. The
     * test shows its checks fail then. Never set outside that test. */
    bool tree_mutant_chain_mask;
};

/* The capture slot of step p (the step that makes the p-th token's state), GDN layer slot `layer`. */
static inline float *sd_cap_slot(const struct sd_context *c, int32_t p, int32_t layer) {
    return c->cap + (int64_t)(p % c->cap_slots) * c->cap_floats + (int64_t)layer * c->cap_layer_floats;
}

/* Queries (query head x position pairs of one KV head) that attention()
 * scores together: each key and value row is read once for all of them. */
#define SD_ATT_QUERIES 32

/* The K (or V) cache of attention layer slot (sd_layer.slot), KV head h: f16 [n_ctx][head_dim]. */
static inline uint16_t *sd_kv_head(const struct sd_context *c, uint16_t *cache, int slot, int h) {
    const int64_t hd = c->m->hp.head_dim;
    return cache + (int64_t)slot * c->n_ctx * c->kv_dim + (int64_t)h * c->n_ctx * hd;
}

#endif
