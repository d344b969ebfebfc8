/* An sd_lm for a model whose state cannot be truncated (recurrent layers:
 * qwen35's Gated DeltaNet), ARCHITECTURE.md §4. The decode loop keeps calling
 * forward and truncate; this lm carries out "roll back to n" by one of the
 * disciplines below, on a small set of primitives (sd_recm) that the real
 * model context implements (lm_model.c sd_recm_from_context) and so does the
 * model-free recurrent oracle of the property tests (tests/decode/
 * oracle_rec.h), so the discipline logic under test is the one users run.
 * Any drafter's lm can be one of these (a hybrid draft model rolls back
 * through the same code). */
#ifndef SD_DECODE_LM_HYBRID_H
#define SD_DECODE_LM_HYBRID_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "decode/lm.h"
#include "model/model.h"

/* The primitives of a recurrent model. Positions and the meaning of len are
 * those of sd_lm; "state(p)" is the model's state after p tokens. */
typedef struct sd_recm {
    void *self;
    int32_t n_vocab;
    int32_t (*n_ctx)(void *self);
    int32_t (*len)(void *self);
    /* sd_lm forward_tail (logits of the last n_tail rows; n_tail 0: none). */
    sd_status (*forward_tail)(void *self, const int32_t *tokens, int32_t S, int32_t n_tail, float *logits,
                              sd_err *err);
    /* Optional two-pass head, as sd_lm's (NULL: none). */
    sd_status (*forward_first)(void *self, const int32_t *tokens, int32_t S, float *logits, int32_t *n_first,
                               sd_err *err);
    sd_status (*logits_rest)(void *self, float *logits, sd_err *err);
    /* model.h sd_context_capture_init / _from / _load / sd_context_replay. */
    sd_status (*capture_init)(void *self, sd_capture_kind kind, int32_t n_slots, sd_err *err);
    void (*capture_from)(void *self, int32_t p_first);
    sd_status (*load)(void *self, int32_t p, sd_err *err);
    sd_status (*replay)(void *self, int32_t p, sd_err *err);
    /* A snapshot in the caller's buf[state_bytes]: save copies state(len)
     * and len into it; restore copies them back (the snapshot's len <= the
     * current len; KV rows below it are kept, as sd_context_state_restore). */
    sd_status (*save)(void *self, void *buf, sd_err *err);
    sd_status (*restore)(void *self, const void *buf, sd_err *err);
    /* Back to 0 tokens (a fresh state). */
    void (*reset)(void *self);
    /* Optional (NULL: nothing to do): makes the capture buffers resident
     * (model.h sd_context_capture_touch). */
    void (*touch)(void *self);
    /* Bytes of one snapshot; state_bytes_moved: the part of it (and of one
     * STATE capture) that is recurrent state, for the cost report. */
    size_t state_bytes;
    uint64_t state_bytes_moved;
    /* Test hook only (NULL in real models): sets len without touching the
     * state, the rollback "by counter" that is wrong for a recurrent model. */
    void (*set_len)(void *self, int32_t n);
} sd_recm;

/* How a rollback is done (ARCHITECTURE.md §4 "cheaper alternatives"). */
typedef enum sd_rollback {
    /* Keep the state after each position of a forward (SD_CAPTURE_STATE):
     * rolling back to n is loading one of them. */
    SD_ROLLBACK_CHECKPOINT = 0,
    /* Keep a snapshot at the committed prefix and each position's inputs to
     * the recurrence (SD_CAPTURE_INPUTS): rolling back is restoring the
     * snapshot and replaying the recurrence of the kept positions. */
    SD_ROLLBACK_REPLAY,
    /* Keep a snapshot at the committed prefix: rolling back is restoring it
     * and running the forward again over the kept tokens (llama.cpp's
     * host-checkpoint path). */
    SD_ROLLBACK_REDECODE,
    /* The source design (ARCHITECTURE.md §4, lm_window.c): the model's state only
     * ever holds a committed prefix at an anchor m, with a snapshot there;
     * every forward feeds the committed tail since m plus the new tokens,
     * padded to exactly `window` tokens; a fully committed unpadded feed
     * moves the anchor, anything else restores the snapshot. */
    SD_ROLLBACK_WINDOW,
    SD_ROLLBACK_N
} sd_rollback;

/* The primitives over a model context (lm_model.c): c must outlive r. */
void sd_recm_from_context(sd_recm *r, sd_context *c);

/* What discipline d keeps per position of a forward (model.h
 * sd_capture_kind): STATE for checkpoint, INPUTS for replay, else NONE. */
sd_capture_kind sd_rollback_capture_kind(sd_rollback d);

/* "checkpoint", "replay", "redecode", "window"; NULL outside the enum. */
const char *sd_rollback_name(sd_rollback r);

/* Deliberate bugs for the tests that must catch them (never set otherwise). */
typedef enum sd_hybrid_mutant {
    SD_MUTANT_NONE = 0,
    SD_MUTANT_SHORT,   /* every rollback lands one position short (an off-by-one) */
    SD_MUTANT_COUNTER, /* the state is not rolled back, only the length (needs recm->set_len) */
} sd_hybrid_mutant;

/* What the rollbacks cost (since init or the last sd_lm_hybrid_stats_reset). */
typedef struct sd_hybrid_stats {
    int64_t rollbacks;      /* truncates that dropped positions (n > 0) */
    int64_t saves, restores, loads;
    int64_t replayed;       /* positions re-run by replay */
    int64_t redecoded;      /* tokens forwarded again (redecode, fallbacks) */
    int64_t redecodes;      /* the forwards that did it */
    int64_t fallbacks;      /* rollbacks the discipline could not serve (redecoded instead) */
    int64_t anchor_steps;   /* window: plain steps it forced (the tail at S - 1 leaves no room for a
                               draft), each an S-token forward of committed tokens */
    uint64_t bytes_moved;   /* state bytes copied by saves, restores, loads and checkpoint captures */
    double rollback_s;      /* time in truncate (the rollbacks) and in saves */
} sd_hybrid_stats;

typedef struct sd_lm_hybrid {
    sd_recm m;
    sd_rollback disc;
    /* true: every forward starts from committed positions (a target under the
     * decode loop: each verify round ends in a truncate), so the snapshot and
     * captures restart at its first position; a forward the caller marks
     * SD_LM_PREFILL or SD_LM_STEP (sd_lm_use) needs neither, the loop never
     * rolls back into it. The role of compose.h (SD_LM_TARGET: true). false
     * (a draft model's lm): only
     * a truncate commits; forwards on top of uncommitted ones keep extending
     * the captures. Either way any truncate is served correctly, the other
     * pattern only costs more (a fallback re-decodes). */
    bool commit_on_forward;
    int32_t n_slots;        /* capture ring (positions a rollback can reach back) */
    sd_hybrid_mutant mutant;
    int32_t *hist, known;   /* hist[0..known): the tokens of the positions held, for re-decoding */
    int32_t len;            /* the model's len when this lm last looked (an outside change resets the rest) */
    int32_t base;           /* the snapshot is state(base); -1: none */
    int32_t cap_lo, cap_hi; /* the captures of steps cap_lo + 1 .. cap_hi are in the ring */
    bool committed;         /* the next forward starts on committed positions (after a truncate) */
    void *snap;             /* [m.state_bytes]: state(base) */
    bool snap_touched;      /* every page of snap written once (sd_lm warm) */
    /* window only: the static window S, the model's own length (the anchor
     * base plus what the last feed put on top: fed real tokens, pad pads),
     * the committed length, and a logits buffer for the padded rows. */
    int32_t window, fed, pad, commit;
    float *wlogits;
    int32_t wlogits_rows;
    sd_hybrid_stats st;
} sd_lm_hybrid;

/* Sets h up over the primitives m (copied; m->self must outlive h) with
 * discipline d and a ring of n_slots captured positions (>= the largest
 * verify window, K + 1). Allocates the token history (n_ctx) and the model's
 * capture ring (STATE: n_slots * sd_model_recurrent_bytes; INPUTS: n_slots *
 * sd_model_capture_bytes). Errors: SD_ERR_ARG, SD_ERR_NOMEM. */
sd_status sd_lm_hybrid_init(sd_lm_hybrid *h, const sd_recm *m, sd_rollback d, int32_t n_slots,
                            bool commit_on_forward, sd_err *err);
/* Switches discipline and ring size (the state held is kept, the captures
 * are not; switching to or from window starts the model over at 0).
 * For SD_ROLLBACK_WINDOW n_slots is the window S (>= 2). Errors as init; h
 * is unchanged on error. */
sd_status sd_lm_hybrid_configure(sd_lm_hybrid *h, sd_rollback d, int32_t n_slots, sd_err *err);

/* lm_hybrid.c, for lm_window.c too: the model's state copied into the
 * snapshot h->snap, or back, counted in h->st (saves / restores, bytes). */
sd_status sd_lm_hybrid_snap_save(sd_lm_hybrid *h, sd_err *err);
sd_status sd_lm_hybrid_snap_restore(sd_lm_hybrid *h, sd_err *err);

/* lm_window.c: the window discipline's books started over at the model's
 * current length (configure calls it when switching to window). */
void sd_window_start(sd_lm_hybrid *h);
/* lm_hybrid.c, shared by both lms over h: sd_lm n_ctx and warm. */
int32_t sd_lm_hybrid_n_ctx(void *self);
void sd_lm_hybrid_warm(void *self);
/* The model's state was replaced from outside (a prefix cache restored a
 * saved sequence of n = len tokens, tokens[n]): the books start over there,
 * with tokens as the known history a later rollback may re-decode. n must be
 * the model's length and <= n_ctx (the caller's contract). */
void sd_lm_hybrid_adopt(sd_lm_hybrid *h, const int32_t *tokens, int32_t n);
void sd_lm_hybrid_free(sd_lm_hybrid *h);
/* The sd_lm view of h (borrowing h): for checkpoint, replay and redecode
 * the snapshot-and-capture lm of lm_hybrid.c; for window its own lm
 * (sd_lm_window_as_lm). Call again after sd_lm_hybrid_configure changes the
 * discipline (compose.h sd_compose_lm_rollback does). */
void sd_lm_hybrid_as_lm(sd_lm *lm, sd_lm_hybrid *h);
/* lm_window.c: the window discipline's sd_lm over h. */
void sd_lm_window_as_lm(sd_lm *lm, sd_lm_hybrid *h);

#endif
