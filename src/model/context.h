/* Internal to src/model: the inference state behind the opaque sd_context.
 * KV cache layout (f32): k[layer][pos][n_head_kv * head_dim], same for v,
 * so one position's keys for all KV heads are contiguous and a forward
 * appends rows at len..len+S-1. Rolling back is setting len. */
#ifndef SD_MODEL_CONTEXT_H
#define SD_MODEL_CONTEXT_H

#include <stdint.h>

#include "model/model.h"

struct sd_context {
    const sd_model *m;
    int32_t n_ctx, n_batch, len;
    int n_threads;
    int64_t kv_dim;        /* n_head_kv * head_dim */
    float *k_cache, *v_cache;  /* [n_layer][n_ctx][kv_dim] */
    /* scratch for one batch of up to n_batch rows */
    float *x;       /* [n_batch][n_embd] residual stream */
    float *xb;      /* [n_batch][n_embd] normed input / block output */
    float *q;       /* [n_batch][n_head * head_dim] */
    float *k, *v;   /* [n_batch][kv_dim] */
    float *att_out; /* [n_batch][n_head * head_dim] */
    float *hb, *hb2;/* [n_batch][n_ff] */
    float *att;     /* [n_threads][n_ctx] attention scores, one row per thread */
};

/* Row of the K (or V) cache of layer il at position pos. */
static inline float *sd_kv_row(const struct sd_context *c, float *cache, int il, int32_t pos) {
    return cache + ((int64_t)il * c->n_ctx + pos) * c->kv_dim;
}

#endif
