/* Internal to src/model: the inference state behind the opaque sd_context,
 * composed of the memory components of src/model/memory/ (memory.h lists
 * them). The context owns one of each, builds them together
 * (sd_context_init) and hands them to the forward: layers read c->sc (the
 * batch), c->kv (attention rows and the length), c->rec (GDN state and
 * captures), c->hid (the hidden-state hook). */
#ifndef SD_MODEL_CONTEXT_H
#define SD_MODEL_CONTEXT_H

#include <stdint.h>

#include "model/memory/hidden_hook.h"
#include "model/memory/kv_cache.h"
#include "model/memory/recurrent.h"
#include "model/memory/scratch.h"
#include "model/model.h"

struct sd_context {
    const sd_model *m;
    int32_t n_ctx, n_batch; /* positions of every component, rows of a batch */
    int n_threads;
    sd_kv_cache kv;         /* attention layers' K/V rows, the length, a pending token tree */
    sd_recurrent rec;       /* GDN layers' conv windows and delta-rule states, the capture ring (empty for dense) */
    sd_scratch sc;          /* one batch's activations, a pending head resume */
    sd_hidden_hook hid;     /* hidden-state rows for draft heads (off until requested) */
    sd_forward_hook fwd_hook; /* NULL, or where sd_forward / _tail send their batches (model.h) */
    void *fwd_hook_user;
};

/* Clears what every component holds pending (a resumable head pass, a token
 * tree): the one call each path makes that moves the length other than by a
 * plain append, or that starts a new forward. */
void sd_context_reset_pending(sd_context *c);

#endif
