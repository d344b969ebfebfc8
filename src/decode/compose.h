/* The one place where a model context becomes what the decode loop calls:
 * an sd_lm with its rollback discipline, and a drafter of a given kind.
 * The public API (src/api), the bench (src/cli) and the tests build both
 * here, so a discipline or a drafter kind means the same thing everywhere. */
#ifndef SD_DECODE_COMPOSE_H
#define SD_DECODE_COMPOSE_H

#include <stdint.h>

#include "core/status.h"
#include "decode/drafter.h"
#include "decode/lm.h"
#include "decode/lm_hybrid.h"
#include "decode/spec.h"
#include "model/model.h"

/* What an lm is for. A target's forwards always start on committed
 * positions (each verify round ends in a truncate to the accepted prefix);
 * a draft model's forwards run on top of its own uncommitted proposals
 * until a truncate decides. The rollback books differ accordingly. */
typedef enum sd_lm_role { SD_LM_TARGET = 0, SD_LM_DRAFT, SD_LM_ROLE_N } sd_lm_role;

/* A composed lm: lm is what callers use; hybrid is the rollback discipline
 * behind it for a model with recurrent layers (owned), NULL for a dense
 * model (whose KV cache truncates exactly: no discipline needed). */
typedef struct sd_model_lm {
    sd_lm lm;
    sd_lm_hybrid *hybrid;
} sd_model_lm;

/* Builds out->lm over the context c of model m (both borrowed: they must
 * outlive it) for role. A dense model gets the plain lm (lm_model.c) and
 * ignores d and n_slots; a recurrent one gets discipline d with n_slots
 * (checkpoint / replay / redecode: the capture ring, >= the largest verify
 * window K + 1; window: the window S >= 2), lm_hybrid.h. Errors:
 * SD_ERR_ARG (role or d outside its enum, n_slots too small), SD_ERR_NOMEM;
 * out is then empty (sd_model_lm_free is still safe). */
sd_status sd_compose_lm(sd_model_lm *out, sd_context *c, const sd_model *m, sd_rollback d, int32_t n_slots,
                        sd_lm_role role, sd_err *err);

/* Switches a composed lm to discipline d with n_slots (as sd_compose_lm),
 * keeping the positions held where the discipline allows
 * (sd_lm_hybrid_configure), and zeroes its rollback counters. out->lm is
 * rewritten in place: pointers to it (a draft model drafter's) stay valid.
 * A dense lm is left as it is. Errors as sd_compose_lm; on error the lm is
 * unchanged. */
sd_status sd_compose_lm_rollback(sd_model_lm *l, sd_rollback d, int32_t n_slots, sd_err *err);

/* Frees what l owns (not the context); l may be empty or NULL. */
void sd_model_lm_free(sd_model_lm *l);

/* The kinds of drafter (decode/drafter.h). */
typedef enum sd_drafter_kind {
    SD_DRAFTER_NGRAM = 0,   /* prompt lookup over the context */
    SD_DRAFTER_MODEL,       /* a draft model behind its own lm (inputs.draft_lm) */
    SD_DRAFTER_EAGLE3,      /* an EAGLE-3 head over the target's hidden rows (inputs.eagle3) */
    SD_DRAFTER_MTP,         /* the target's own MTP block */
    SD_DRAFTER_MTP_SIDECAR, /* the MTP block of another file (inputs.mtp_sidecar) */
    SD_DRAFTER_AUTO,        /* n-gram first, then the costly drafter sd_drafter_auto_costly picks;
                               with inputs.suffix_cache, suffix drafting before the n-gram */
    SD_DRAFTER_SUFFIX,      /* suffix drafting over the context and inputs.suffix_cache (may be NULL) */
    SD_DRAFTER_DFLASH,      /* a DFlash block drafter over the target's hidden rows (inputs.dflash) */
    SD_DRAFTER_KIND_N
} sd_drafter_kind;

/* What the drafter kinds draw on; a kind uses only its own fields (others
 * may be NULL / 0). Everything is borrowed and must outlive the drafter. */
typedef struct sd_drafter_inputs {
    sd_context *target;          /* the target's context (the heads read its hidden rows; AUTO: its vocabulary) */
    sd_lm *draft_lm;             /* a draft model's lm (sd_compose_lm, role SD_LM_DRAFT), or NULL */
    const sd_sampling *draft_sampling; /* the draft model's sampling; NULL: greedy */
    const sd_model *eagle3;      /* an EAGLE-3 head (checked against the target: sd_eagle3_check), or NULL */
    const sd_model *mtp_sidecar; /* an MTP sidecar (vocabulary checked by the caller), or NULL */
    int n_threads;               /* the heads' own contexts */
    int32_t n_batch;             /* rows per catch-up forward (draft model, heads) */
    int ngram_min, ngram_max;    /* n-gram lengths (NGRAM and AUTO) */
    sd_suffix_cache *suffix_cache; /* earlier outputs (SUFFIX, AUTO), or NULL */
    const sd_model *dflash;      /* a DFlash draft (checked against the target: sd_dflash_check), or NULL */
} sd_drafter_inputs;

/* "ngram", "draft", "eagle3", "mtp", "mtp-sidecar", "auto", "suffix", "dflash"; NULL outside the enum. */
const char *sd_drafter_kind_name(sd_drafter_kind k);

/* The costly drafter AUTO puts behind n-gram with these inputs: an MTP
 * sidecar, else a DFlash draft, else the target's own MTP block unless an
 * EAGLE-3 head is given, else the EAGLE-3 head, else the draft model;
 * SD_DRAFTER_NGRAM when there is none (AUTO is then n-gram alone). A given
 * file wins over the target's own block, as the user named it; a DFlash
 * draft drafts only the block length the speedup model picks, and not at
 * all where no length pays (gate.h block mode). */
sd_drafter_kind sd_drafter_auto_costly(const sd_drafter_inputs *in);

/* Builds the drafter of kind k from in into *out (free with
 * sd_drafter_free). A draft model's lm is rolled back to empty first.
 * Errors: SD_ERR_ARG with a one-line message naming the kind when k is
 * outside the enum or in lacks what k needs (a draft lm, a head, a target
 * context; SD_ERR_UNSUPPORTED for MTP on a target without an MTP block),
 * else the drafter's own init errors; *out is then empty. */
sd_status sd_compose_drafter(sd_drafter *out, sd_drafter_kind k, const sd_drafter_inputs *in, sd_err *err);

#endif
