/* Internal to src/model: the mixture-of-experts FFN of qwen3moe and
 * qwen35moe (docs/MOE.md): its weights (bound by moe_bind.c), the scratch a
 * context keeps for it (its own struct, sd_context holds one pointer) and
 * the layer (layer_moe.c).
 *
 * Per token t with normed FFN input m_t (RMSNorm(x_t; ffn_norm)):
 *   p = softmax(router · m_t)                      over the E experts
 *   e_1..e_k = the k largest p, in descending order (ties: lower id first)
 *   w_j = p[e_j] / max(sum_j p[e_j], 2^-14)        (renormalised: both archs)
 *   y_t = sum_{j = 1..k} w_j * down_e (silu(gate_e m_t) * up_e m_t),  e = e_j,
 *         summed in selection rank order j = 1, 2, .., k
 *   qwen35moe adds the shared expert: y_t += sigmoid(shexp_gate · m_t) * shexp(m_t)
 *   x_t += y_t */
#ifndef SD_MODEL_MOE_H
#define SD_MODEL_MOE_H

#include "model/arch.h"
#include "model/context.h"

/* One layer's experts. Expert e of gate / up / down is a 2-D view into the
 * file's 3-D tensor (its slice e: n_ff_exp rows of n_embd, resp. n_embd rows
 * of n_ff_exp), repacked like any matrix. */
typedef struct sd_moe {
    sd_matrix router;            /* ffn_gate_inp {n_embd, E} */
    sd_matrix *gate, *up, *down; /* [E] each: ffn_gate_exps / ffn_up_exps {n_embd, n_ff_exp, E}
                                    (or the halves of ffn_gate_up_exps), ffn_down_exps {n_ff_exp, n_embd, E} */
    bool has_shexp;
    sd_matrix sh_gate, sh_up, sh_down; /* ffn_{gate,up}_shexp {n_embd, n_ff_shexp}, ffn_down_shexp {n_ff_shexp, n_embd} */
    const float *sh_gate_inp;          /* ffn_gate_inp_shexp {n_embd}: one sigmoid gate per token */
    int32_t n_expert;                  /* E (the views' count) */
    int32_t counter;                   /* its slot in sd_moe_scratch.distinct */
} sd_moe;

/* Reads {arch}.expert_count, expert_used_count, expert_feed_forward_length and
 * (with_shexp) expert_shared_feed_forward_length into hp, validated:
 * SD_ERR_FORMAT "key X missing / out of range" for a count of 0, k > E, or E
 * above SD_MOE_MAX_EXPERTS. Call after the common keys (n_ff may be 0 when
 * feed_forward_length is absent; it then takes n_ff_exp). */
#define SD_MOE_MAX_EXPERTS 1024
sd_status sd_moe_hparams(sd_loader *L, sd_hparams *hp, bool with_shexp);

/* Binds the MoE FFN of block il into *out (allocated, owned by the layer;
 * counter = the layer's slot): router, the three expert tensors (checked
 * 3-D, [n_embd, n_ff_exp, E] / [n_ff_exp, n_embd, E], each expert a view) and,
 * when hp says so, the shared expert. Errors name the tensor: SD_ERR_FORMAT
 * (missing, shape), SD_ERR_UNSUPPORTED (type), SD_ERR_NOMEM. */
sd_status sd_bind_moe_ffn(sd_loader *L, struct sd_moe **out, int il, int32_t counter);
/* Frees the views' repacked copies and the struct. NULL-safe. */
void sd_moe_free(struct sd_moe *moe);
/* Parameters (bytes = false) or bytes as stored (true) of the layer's MoE
 * matrices; active: only what one token reads (router, k of the E experts, the
 * shared expert). */
uint64_t sd_moe_sum(const struct sd_moe *moe, int32_t n_expert_used, bool bytes, bool active);
/* Repacked bytes held by the layer's MoE matrices. */
uint64_t sd_moe_packed_bytes(const struct sd_moe *moe);

/* Everything layer_moe.c writes during a forward of up to n_batch rows. */
typedef struct sd_moe_scratch {
    int32_t n_batch;
    float *logits;      /* [n_batch][E] router output, then probabilities */
    int32_t *sel;       /* [n_batch][k] selected experts, rank order */
    float *w;           /* [n_batch][k] their weights */
    int32_t *count;     /* [E] rows routed to each expert */
    int32_t *start;     /* [E + 1] first entry of each expert in order */
    int32_t *order;     /* [n_batch * k] entries t * k + j grouped by expert, t ascending */
    float *xg;          /* [n_batch][n_embd] rows gathered for one expert */
    float *g, *u;       /* [n_batch][max(n_ff_exp, n_ff_shexp)] gate / up outputs */
    float *d;           /* [n_batch][n_embd] down output of one expert */
    float *eo;          /* [n_batch][k][n_embd] each token's expert outputs by rank */
    float *y;           /* [n_batch][n_embd] the FFN output */
    float *sg;          /* [n_batch] shared-expert gate logits */
    int32_t n_counters;
    int32_t *distinct;  /* [n_counters] distinct experts of the last batch, per MoE layer */
} sd_moe_scratch;

/* Scratch for batches of n_batch rows of hp's shape (NULL when hp has no
 * experts); the scratch component (memory/scratch.c) owns it. Errors: SD_ERR_NOMEM. */
sd_status sd_moe_scratch_init(const sd_hparams *hp, int32_t n_batch, sd_moe_scratch **out);
void sd_moe_scratch_free(sd_moe_scratch *s);

/* layer_moe.c: the FFN half of layer L (L->moe set) over the S rows of c->x:
 * c->x += y. Uses c->xb. Batch-invariant: each expert runs once over all the
 * rows routed to it (sd_matmul is row-wise), and every token sums its own k
 * outputs in its own rank order. */
void sd_layer_moe(sd_context *c, const sd_layer *L, int S);

#endif
