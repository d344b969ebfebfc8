/* Internal to src/model: the recurrent memory of the Gated DeltaNet layers,
 * beside the KV cache (which only the attention layers use). Per GDN layer
 * (llama.cpp src/models/qwen35.cpp build_layer_attn_linear,
 * delta-net-base.cpp build_conv_state), f32:
 *   conv: [K - 1][conv_dim]  the last K - 1 raw conv inputs, oldest first
 *   ssm:  [H_v][S][S]        per V head, S[i][j] with i the key index, j the
 *                            value index (o = S^T q reads columns of rows i)
 * A fresh sequence is all zeros. Layer slots are numbered in layer order
 * (sd_layer.slot). The public snapshot calls (model.h) are built on
 * save / load / copy here.
 *
 * The rollback capture ring (model.h sd_context_capture_init) lives here
 * too: slot p % slots holds what the step from p - 1 to p tokens left
 * (STATE: the whole recurrent state after it, the layout of data; INPUTS: per
 * GDN layer [mix conv_dim | conv conv_dim | decay H_v | beta H_v]); the GDN
 * layer writes the slots, rollback.c loads and replays them.
 *
 * Nothing here is pending in the sense of memory.h: the state is the
 * sequence's, and captures stay valid across a truncate on purpose (a
 * rollback truncates, then loads or replays them), so there is no
 * reset_pending.
 *
 * Sequences (memory.h): the state calls take a sequence id; only 0 is
 * valid for now, the state of that one sequence. */
#ifndef SD_MODEL_MEMORY_RECURRENT_H
#define SD_MODEL_MEMORY_RECURRENT_H

#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "model/memory/memory.h"
#include "model/model.h"

typedef struct sd_capture_ring {
    sd_capture_kind kind;
    int32_t slots;              /* ring size (0: no ring) */
    int32_t from;               /* forwards capture steps p >= from (INT32_MAX: none) */
    int64_t layer_floats, floats; /* per GDN layer, per slot (all layers) */
    float *data;                /* [slots][floats] */
    int32_t *pos;               /* [slots]: the step p a slot holds (-1: none) */
    bool touched;               /* every page of data written once (sd_recurrent_capture_touch) */
} sd_capture_ring;

typedef struct sd_recurrent {
    int32_t n_layers;     /* GDN layers (0: nothing allocated) */
    int64_t conv_floats;  /* (K - 1) * conv_dim per layer */
    int64_t ssm_floats;   /* H_v * S * S per layer */
    float *data;          /* [n_layers][conv_floats + ssm_floats], one block so save/restore is one copy */
    sd_capture_ring cap;
} sd_recurrent;

/* Floats of one GDN layer's conv window, (K - 1) * conv_dim, and of its
 * delta-rule states, H_v * S * S (the loader bounded every factor). */
static inline int64_t sd_recurrent_conv_floats(const sd_hparams *hp) {
    return (int64_t)(hp->ssm_conv_kernel - 1) * hp->ssm_conv_dim;
}
static inline int64_t sd_recurrent_ssm_floats(const sd_hparams *hp) {
    return (int64_t)hp->ssm_n_v_heads * hp->ssm_state * hp->ssm_state;
}

/* Sizes the state for the GDN layers of hp and zeroes it; no capture ring.
 * A model without GDN layers gets an empty state (data NULL). Errors:
 * SD_ERR_NOMEM. */
sd_status sd_recurrent_build(sd_recurrent *r, const sd_hparams *hp, sd_err *err);
/* Frees the state and the capture ring. */
void sd_recurrent_free(sd_recurrent *r);
/* Bytes of one sequence's whole state (all layers). */
size_t sd_recurrent_bytes(const sd_recurrent *r);
/* All zeros: the state of sequence seq before its first token. Errors: SD_ERR_ARG (no such seq). */
sd_status sd_recurrent_reset(sd_recurrent *r, int32_t seq);
/* Copies sequence seq's state to dst (sd_recurrent_bytes), or back from src.
 * Errors: SD_ERR_ARG (no such seq). */
sd_status sd_recurrent_save(const sd_recurrent *r, int32_t seq, void *dst);
sd_status sd_recurrent_load(sd_recurrent *r, int32_t seq, const void *src);
/* The conv window [K-1][conv_dim] and the delta-rule states [H_v][S][S] of
 * GDN layer slot of sequence seq (NULL for a seq that does not exist). */
static inline float *sd_recurrent_conv(const sd_recurrent *r, int32_t seq, int32_t slot) {
    if (!sd_memory_seq_ok(seq)) return NULL;
    return r->data + (size_t)slot * (size_t)(r->conv_floats + r->ssm_floats);
}
static inline float *sd_recurrent_ssm(const sd_recurrent *r, int32_t seq, int32_t slot) {
    float *conv = sd_recurrent_conv(r, seq, slot);
    return conv ? conv + r->conv_floats : NULL;
}

/* ---- the capture ring ---- */

/* Floats one GDN layer keeps per captured step of kind (0 for NONE). */
int64_t sd_capture_layer_floats(const sd_hparams *hp, sd_capture_kind kind);
/* Sets kind and ring size (model.h sd_context_capture_init has the contract
 * and messages); capturing is off until sd_recurrent_capture_from. Errors:
 * SD_ERR_ARG, SD_ERR_NOMEM (ring unchanged). */
sd_status sd_recurrent_capture_init(sd_recurrent *r, const sd_hparams *hp, sd_capture_kind kind, int32_t n_slots,
                                    sd_err *err);
/* Writes every slot that holds no capture once (the first call only). */
void sd_recurrent_capture_touch(sd_recurrent *r);
/* Forwards from now on capture every step p >= p_first (< 1 counts as 1). */
void sd_recurrent_capture_from(sd_recurrent *r, int32_t p_first);
/* The ring slot of step p (the step that makes the p-th token's state), GDN layer slot `layer`. */
static inline float *sd_capture_slot(const sd_recurrent *r, int32_t p, int32_t layer) {
    return r->cap.data + (int64_t)(p % r->cap.slots) * r->cap.floats + (int64_t)layer * r->cap.layer_floats;
}
/* Whether the ring holds step p of the given kind. */
bool sd_recurrent_captured(const sd_recurrent *r, sd_capture_kind kind, int32_t p);
/* The first token t of a batch of S at positions len.. whose step (p = len +
 * t + 1) a forward captures as kind; S when none. */
int sd_recurrent_capture_start(const sd_recurrent *r, sd_capture_kind kind, int32_t len, int S);
/* A forward of S tokens after len wrote its captured steps: record them. */
void sd_recurrent_capture_commit(sd_recurrent *r, int32_t len, int S);
/* Sequence seq's state becomes the STATE captured at step p (the caller
 * checked sd_recurrent_captured). Errors: SD_ERR_ARG (no such seq). */
sd_status sd_recurrent_capture_load(sd_recurrent *r, int32_t seq, int32_t p);

#endif
