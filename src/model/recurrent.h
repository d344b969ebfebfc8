/* Internal to src/model: the recurrent state of the Gated DeltaNet layers of
 * one sequence, beside the KV cache (which only the attention layers use).
 * Per GDN layer (llama.cpp src/models/qwen35.cpp build_layer_attn_linear,
 * delta-net-base.cpp build_conv_state), f32:
 *   conv: [K - 1][conv_dim]  the last K - 1 raw conv inputs, oldest first
 *   ssm:  [H_v][S][S]        per V head, S[i][j] with i the key index, j the
 *                            value index (o = S^T q reads columns of rows i)
 * A fresh sequence is all zeros. Layer slots are numbered in layer order
 * (sd_layer.slot). The public snapshot calls (model.h) are built on these. */
#ifndef SD_MODEL_RECURRENT_H
#define SD_MODEL_RECURRENT_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "model/model.h"

typedef struct sd_recurrent {
    int32_t n_layers;     /* GDN layers (0: nothing allocated) */
    int64_t conv_floats;  /* (K - 1) * conv_dim per layer */
    int64_t ssm_floats;   /* H_v * S * S per layer */
    float *data;          /* [n_layers][conv_floats + ssm_floats], one block so save/restore is one copy */
} sd_recurrent;

/* Floats of one GDN layer's conv window, (K - 1) * conv_dim, and of its
 * delta-rule states, H_v * S * S (the loader bounded every factor). */
static inline int64_t sd_recurrent_conv_floats(const sd_hparams *hp) {
    return (int64_t)(hp->ssm_conv_kernel - 1) * hp->ssm_conv_dim;
}
static inline int64_t sd_recurrent_ssm_floats(const sd_hparams *hp) {
    return (int64_t)hp->ssm_n_v_heads * hp->ssm_state * hp->ssm_state;
}

/* Sizes the state for the GDN layers of hp and zeroes it. A model without
 * GDN layers gets an empty state (data NULL). Errors: SD_ERR_NOMEM. */
sd_status sd_recurrent_init(sd_recurrent *r, const sd_hparams *hp, sd_err *err);
void sd_recurrent_free(sd_recurrent *r);
/* All zeros: the state before the first token. */
void sd_recurrent_reset(sd_recurrent *r);
/* Bytes of the whole state (all layers). */
size_t sd_recurrent_bytes(const sd_recurrent *r);
/* The conv window [K-1][conv_dim] and the delta-rule states [H_v][S][S] of GDN layer slot. */
static inline float *sd_recurrent_conv(const sd_recurrent *r, int32_t slot) {
    return r->data + (size_t)slot * (size_t)(r->conv_floats + r->ssm_floats);
}
static inline float *sd_recurrent_ssm(const sd_recurrent *r, int32_t slot) {
    return sd_recurrent_conv(r, slot) + r->conv_floats;
}

#endif
