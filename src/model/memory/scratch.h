/* Internal to src/model: the activations of one batch of up to n_batch rows,
 * sized once when the context is built so a forward never allocates, and the
 * two-pass output head's resume point (model.h sd_forward_head / _more),
 * which lives here because what it resumes is the rows left in x.
 * Every buffer is row-major [rows][width]; a layer kind reads and writes only
 * the ones named in its file (model/layers.h). */
#ifndef SD_MODEL_MEMORY_SCRATCH_H
#define SD_MODEL_MEMORY_SCRATCH_H

#include <stdint.h>

#include "core/status.h"
#include "model/model.h"

/* Queries (query head x position pairs of one KV head) that attention()
 * scores together: each key and value row is read once for all of them. */
#define SD_ATT_QUERIES 32

typedef struct sd_scratch {
    float *x;       /* [n_batch][n_embd] residual stream */
    float *xb;      /* [n_batch][n_embd] normed input / block output (eagle3, MTP: [n_batch][2 * n_embd], the [e ; h] input) */
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
    /* A Mixture-of-Experts layer kind's routing scratch (model/moe.h: router
     * probabilities, chosen experts and weights, rows grouped per expert, the
     * per-layer distinct-expert counters); NULL when hp has no experts. */
    struct sd_moe_scratch *moe;

    /* The last forward when it was one batch (S <= n_batch): x still holds its
     * S final residual rows, so sd_forward_more can run the output head on rows
     * it skipped. head_S = 0: nothing to resume (sd_scratch_reset_pending). */
    int32_t head_S, head_n; /* its S, and the rows with logits so far */
} sd_scratch;

/* Allocates every buffer for batches of n_batch rows of hp's shape, n_ctx
 * positions of attention scores for each of n_threads threads. Errors:
 * SD_ERR_NOMEM (sc left freed). */
sd_status sd_scratch_build(sd_scratch *sc, const sd_hparams *hp, int32_t n_batch, int32_t n_ctx, int n_threads,
                           sd_err *err);
void sd_scratch_free(sd_scratch *sc);
/* Every page of the activation buffers resident now (memory.h sd_memory_commit;
 * the MoE routing buffers, a few rows' worth, are left to be paged in). */
void sd_scratch_commit(sd_scratch *sc);
/* Nothing to resume: another forward, a truncate or a restore came. */
void sd_scratch_reset_pending(sd_scratch *sc);

#endif
