/* Rollback disciplines for recurrent models behind sd_lm (lm_hybrid.h).
 *
 * Bookkeeping, in positions: a snapshot holds state(base); the capture ring
 * holds the steps cap_lo + 1 .. cap_hi (STATE for checkpoint, INPUTS for
 * replay); hist holds the tokens, for re-decoding. A "run" starts where the
 * positions held are committed (every forward of a target, or the first
 * forward after a truncate): the snapshot moves there (replay, redecode) and
 * the captures restart. truncate(n) then rolls back with the discipline, or,
 * when its data does not reach n (a caller rolling back further than it
 * promised, a ring too small), re-decodes from the snapshot or from position
 * 0: slower, never wrong. */
#include "decode/lm_hybrid.h"

#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "core/clock.h"

static const char *const ROLLBACK_NAMES[SD_ROLLBACK_N] = {"checkpoint", "replay", "redecode", "window"};

const char *sd_rollback_name(sd_rollback r) { return (unsigned)r < SD_ROLLBACK_N ? ROLLBACK_NAMES[r] : NULL; }

sd_capture_kind sd_rollback_capture_kind(sd_rollback d) {
    return d == SD_ROLLBACK_CHECKPOINT ? SD_CAPTURE_STATE : d == SD_ROLLBACK_REPLAY ? SD_CAPTURE_INPUTS : SD_CAPTURE_NONE;
}

/* Forgets captures and snapshot, keeping the tokens of positions still held. */
static void forget(sd_lm_hybrid *h, int32_t len) {
    h->len = len;
    h->base = -1;
    h->cap_lo = h->cap_hi = len;
    h->committed = true;
    h->m.capture_from(h->m.self, INT32_MAX);
}

/* Notices a change made to the model behind this lm's back (a reset or a
 * forward on the context itself): what was kept no longer describes it. */
static void sync(sd_lm_hybrid *h) {
    int32_t len = h->m.len(h->m.self);
    if (len == h->len) return;
    if (h->known > (len < h->len ? len : h->len)) h->known = len < h->len ? len : h->len;
    forget(h, len);
}

sd_status sd_lm_hybrid_snap_save(sd_lm_hybrid *h, sd_err *err) {
    h->st.saves++;
    h->st.bytes_moved += h->m.state_bytes_moved;
    return h->m.save(h->m.self, h->snap, err);
}

sd_status sd_lm_hybrid_snap_restore(sd_lm_hybrid *h, sd_err *err) {
    h->st.restores++;
    h->st.bytes_moved += h->m.state_bytes_moved;
    return h->m.restore(h->m.self, h->snap, err);
}

/* The snapshot moves to len (the time counts as rollback time). */
static sd_status save(sd_lm_hybrid *h, sd_err *err) {
    double t0 = sd_now_s();
    sd_status st = sd_lm_hybrid_snap_save(h, err);
    if (st != SD_OK) return st;
    h->base = h->len;
    h->st.rollback_s += sd_now_s() - t0;
    return SD_OK;
}

/* A target's forward that the decode loop never rolls back into: a plain
 * step and a prefill chunk (the caller says which, sd_lm_use). It is kept
 * whole or dropped whole, and dropping it (which the loop never does) falls
 * back to re-decoding: it needs no snapshot and no capture, and costs
 * nothing. A draft model's forwards can all be rolled back into. */
static bool kept_whole(const sd_lm_hybrid *h, sd_lm_use use) {
    return h->commit_on_forward && use != SD_LM_VERIFY;
}

/* Before a forward of S tokens at len: where the run starts, the snapshot,
 * and which steps the forward captures (*cap_first; INT32_MAX: none). */
static sd_status prepare(sd_lm_hybrid *h, int32_t S, bool whole, int32_t *cap_first, sd_err *err) {
    const int32_t L = h->len;
    sd_status st = SD_OK;
    if (h->committed || h->commit_on_forward) { /* a run starts here */
        h->committed = false;
        h->cap_lo = h->cap_hi = L;
        /* checkpoint needs no snapshot, except under a forward too long for its
         * ring: a rollback to its start (a draft model's gap-fed probe, see
         * drafter_model.c draft_guess) then restores instead of re-decoding from 0 */
        const bool snap = h->disc != SD_ROLLBACK_CHECKPOINT || S > h->n_slots;
        if (!whole && snap && h->base != L) st = save(h, err);
    }
    *cap_first = INT32_MAX;
    if (st != SD_OK || S <= 0 || whole) return st;
    if (h->disc == SD_ROLLBACK_CHECKPOINT) {
        /* all steps when they fit the ring, else the last one (a rollback into a
         * long forward, e.g. a draft's catch-up, lands on its end) */
        *cap_first = S <= h->n_slots ? L + 1 : L + S;
    } else if (h->disc == SD_ROLLBACK_REPLAY && S <= h->n_slots) {
        if (L + S - h->base > h->n_slots) { /* the run outgrew the ring: it restarts here */
            st = save(h, err);
            h->cap_lo = h->cap_hi = L;
        }
        *cap_first = L + 1;
    }
    return st;
}

/* After a successful forward of tokens[S] at len that captured steps >= cap_first. */
static sd_status finish(sd_lm_hybrid *h, const int32_t *tokens, int32_t S, bool whole, int32_t cap_first,
                        sd_err *err) {
    const int32_t L = h->len;
    memcpy(h->hist + L, tokens, (size_t)S * sizeof *tokens);
    if (h->known >= L) h->known = L + S;
    h->len = L + S;
    if (cap_first != INT32_MAX) {
        if (cap_first > h->cap_hi + 1) h->cap_lo = cap_first - 1; /* not contiguous with what the ring held */
        h->cap_hi = L + S;
        if (h->cap_lo < h->cap_hi - h->n_slots) h->cap_lo = h->cap_hi - h->n_slots;
        if (h->disc == SD_ROLLBACK_CHECKPOINT)
            h->st.bytes_moved += (uint64_t)(L + S - cap_first + 1) * h->m.state_bytes_moved;
    } else if (!whole && h->disc == SD_ROLLBACK_REPLAY && S > h->n_slots) {
        /* too long to capture: the run restarts at its end, but a snapshot
         * taken at its start stays: a draft model's probe feeds a gap of
         * uncommitted tokens that the next truncate drops whole, and moving
         * the snapshot past them made that a re-decode from position 0 (of
         * the whole context, at every gate probe). A short forward on top
         * moves it to the end anyway (prepare: the run outgrew the ring). */
        h->cap_lo = h->cap_hi = L + S;
        return h->base == L ? SD_OK : save(h, err);
    }
    return SD_OK;
}

/* The model's forward a run wraps: forward_first when n_first is given, else forward_tail. */
static sd_status model_forward(sd_lm_hybrid *h, const int32_t *tokens, int32_t S, int32_t n_tail, float *logits,
                               int32_t *n_first, sd_err *err) {
    return n_first ? h->m.forward_first(h->m.self, tokens, S, logits, n_first, err)
                   : h->m.forward_tail(h->m.self, tokens, S, n_tail, logits, err);
}

/* A forward of tokens[S] at len with the discipline's snapshot and captures
 * around it (every discipline but window). */
static sd_status run(sd_lm_hybrid *h, sd_lm_use use, const int32_t *tokens, int32_t S, int32_t n_tail,
                     float *logits, int32_t *n_first, sd_err *err) {
    sync(h);
    if (S < (n_first ? 1 : 0) || S > h->m.n_ctx(h->m.self) - h->len) /* the model's own message, nothing changed */
        return model_forward(h, tokens, S, n_tail, logits, n_first, err);
    const bool whole = kept_whole(h, use);
    int32_t cap_first;
    sd_status st = prepare(h, S, whole, &cap_first, err);
    if (st != SD_OK) return st;
    h->m.capture_from(h->m.self, cap_first);
    st = model_forward(h, tokens, S, n_tail, logits, n_first, err);
    h->m.capture_from(h->m.self, INT32_MAX); /* nothing else captures */
    return st == SD_OK ? finish(h, tokens, S, whole, cap_first, err) : st;
}

static sd_status hy_forward_tail(void *self, sd_lm_use use, const int32_t *tokens, int32_t S, int32_t n_tail,
                                 float *logits, sd_err *err) {
    return run(self, use, tokens, S, n_tail, logits, NULL, err);
}

static sd_status hy_forward(void *self, sd_lm_use use, const int32_t *tokens, int32_t S, float *logits, sd_err *err) {
    return run(self, use, tokens, S, S, logits, NULL, err);
}

static sd_status hy_forward_first(void *self, const int32_t *tokens, int32_t S, float *logits, int32_t *n_first,
                                  sd_err *err) {
    return run(self, SD_LM_VERIFY, tokens, S, S, logits, n_first, err);
}

static sd_status hy_logits_rest(void *self, float *logits, sd_err *err) {
    sd_lm_hybrid *h = self;
    return h->m.logits_rest(h->m.self, logits, err);
}

/* Re-runs the forward over hist[from..to) (no logits, no capture). */
static sd_status redecode(sd_lm_hybrid *h, int32_t from, int32_t to, sd_err *err) {
    h->st.redecoded += to - from;
    h->st.redecodes += to > from;
    return to > from ? h->m.forward_tail(h->m.self, h->hist + from, to - from, 0, NULL, err) : SD_OK;
}

/* The discipline's own way back to n; false when its data does not reach. */
static bool roll_back(sd_lm_hybrid *h, int32_t n, sd_status *st, sd_err *err) {
    switch (h->disc) {
    case SD_ROLLBACK_CHECKPOINT:
        if (n <= h->cap_lo || n > h->cap_hi) return false;
        h->st.loads++;
        h->st.bytes_moved += h->m.state_bytes_moved;
        *st = h->m.load(h->m.self, n, err);
        return true;
    case SD_ROLLBACK_REPLAY:
        if (h->base < 0 || n < h->base || h->cap_lo > h->base || n > h->cap_hi) return false;
        *st = sd_lm_hybrid_snap_restore(h, err);
        if (*st == SD_OK && n > h->base) *st = h->m.replay(h->m.self, n, err);
        h->st.replayed += n - h->base;
        return true;
    case SD_ROLLBACK_REDECODE:
        if (h->base < 0 || n < h->base || h->known < n) return false;
        *st = sd_lm_hybrid_snap_restore(h, err);
        if (*st == SD_OK) *st = redecode(h, h->base, n, err);
        return true;
    default:
        return false;
    }
}

/* The way back that always works: from the snapshot if it is not past n,
 * else from position 0, re-decoding the known tokens. */
static sd_status fall_back(sd_lm_hybrid *h, int32_t n, sd_err *err) {
    h->st.fallbacks++;
    if (h->known < n) return sd_err_set(err, SD_ERR_ARG, "rollback: the tokens of positions below %d are unknown", n);
    if (h->base >= 0 && h->base <= n) {
        sd_status st = sd_lm_hybrid_snap_restore(h, err);
        return st == SD_OK ? redecode(h, h->base, n, err) : st;
    }
    h->m.reset(h->m.self);
    return redecode(h, 0, n, err);
}

/* Back to an empty model (a truncate to 0, or after a rollback that failed). */
static void start_over(sd_lm_hybrid *h) {
    h->m.reset(h->m.self);
    h->known = 0;
    forget(h, 0);
}

static sd_status hy_truncate(void *self, int32_t n, sd_err *err) {
    sd_lm_hybrid *h = self;
    sync(h);
    h->committed = true;
    if (n >= h->len) return SD_OK;
    double t0 = sd_now_s();
    h->m.capture_from(h->m.self, INT32_MAX);
    if (n > 0 && h->mutant == SD_MUTANT_SHORT) n--;
    sd_status st = SD_OK;
    if (n <= 0) {
        start_over(h);
        return SD_OK;
    }
    h->st.rollbacks++;
    if (h->mutant == SD_MUTANT_COUNTER && h->m.set_len) {
        h->m.set_len(h->m.self, n);
    } else if (!roll_back(h, n, &st, err) || st != SD_OK) {
        st = fall_back(h, n, err);
    }
    h->len = h->m.len(h->m.self);
    if (st == SD_OK && h->len != n)
        st = sd_err_set(err, SD_ERR_ARG, "rollback to %d positions left %d", n, h->len);
    if (st != SD_OK) start_over(h); /* a consistent empty model, never a wrong state; the caller stops */
    if (h->cap_hi > h->len) h->cap_hi = h->len;
    if (h->cap_lo > h->cap_hi) h->cap_lo = h->cap_hi;
    if (h->base > h->len) h->base = -1;
    h->st.rollback_s += sd_now_s() - t0;
    return st;
}

int32_t sd_lm_hybrid_n_ctx(void *self) {
    sd_lm_hybrid *h = self;
    return h->m.n_ctx(h->m.self);
}

static int32_t hy_len(void *self) {
    sd_lm_hybrid *h = self;
    sync(h);
    return h->len;
}

sd_status sd_lm_hybrid_configure(sd_lm_hybrid *h, sd_rollback d, int32_t n_slots, sd_err *err) {
    if ((unsigned)d >= SD_ROLLBACK_N || n_slots < 1)
        return sd_err_set(err, SD_ERR_ARG, "rollback: discipline %d with %d slots", (int)d, n_slots);
    if (d == SD_ROLLBACK_WINDOW && n_slots < 2) return sd_err_set(err, SD_ERR_ARG, "rollback: window %d < 2", n_slots);
    sd_status st = h->m.capture_init(h->m.self, sd_rollback_capture_kind(d), d == SD_ROLLBACK_WINDOW ? 1 : n_slots, err);
    if (st != SD_OK) return st;
    const bool restart = (d == SD_ROLLBACK_WINDOW) != (h->disc == SD_ROLLBACK_WINDOW) && h->hist;
    h->disc = d;
    h->n_slots = n_slots;
    h->window = n_slots;
    if (restart) { /* the two keep different books: start from an empty model */
        h->m.reset(h->m.self);
        h->known = 0;
        forget(h, 0);
    }
    h->cap_lo = h->cap_hi = h->len;
    if (d == SD_ROLLBACK_WINDOW) sd_window_start(h);
    return SD_OK;
}

void sd_lm_hybrid_adopt(sd_lm_hybrid *h, const int32_t *tokens, int32_t n) {
    memcpy(h->hist, tokens, (size_t)n * sizeof *tokens);
    h->known = n;
    forget(h, n);
    if (h->disc == SD_ROLLBACK_WINDOW) sd_window_start(h);
}

sd_status sd_lm_hybrid_init(sd_lm_hybrid *h, const sd_recm *m, sd_rollback d, int32_t n_slots,
                            bool commit_on_forward, sd_err *err) {
    memset(h, 0, sizeof *h);
    h->m = *m;
    h->commit_on_forward = commit_on_forward;
    h->disc = d;
    h->hist = sd_malloc_array((size_t)m->n_ctx(m->self) + 1, sizeof *h->hist);
    h->snap = malloc(m->state_bytes ? m->state_bytes : 1);
    if (!h->hist || !h->snap) {
        sd_lm_hybrid_free(h);
        return sd_err_set(err, SD_ERR_NOMEM, "rollback: out of memory");
    }
    h->len = m->len(m->self);
    h->known = 0;
    forget(h, h->len);
    sd_status st = sd_lm_hybrid_configure(h, d, n_slots, err);
    if (st != SD_OK) sd_lm_hybrid_free(h);
    return st;
}

void sd_lm_hybrid_free(sd_lm_hybrid *h) {
    if (!h) return;
    if (h->m.capture_init && h->hist) h->m.capture_init(h->m.self, SD_CAPTURE_NONE, 0, NULL);
    free(h->hist);
    free(h->snap);
    free(h->wlogits);
    h->hist = NULL;
    h->snap = NULL;
    h->wlogits = NULL;
}

/* sd_lm warm: the snapshot's and the capture ring's pages faulted in now,
 * not in the first rounds (the page faults of a snapshot of tens of MB
 * would otherwise be counted as a rollback's cost). */
void sd_lm_hybrid_warm(void *self) {
    sd_lm_hybrid *h = self;
    if (!h->snap_touched && h->base < 0) { /* base >= 0: it holds a snapshot, touched by now */
        memset(h->snap, 0, h->m.state_bytes ? h->m.state_bytes : 1);
        h->snap_touched = true;
    }
    if (h->m.touch) h->m.touch(h->m.self);
}

void sd_lm_hybrid_as_lm(sd_lm *lm, sd_lm_hybrid *h) {
    if (h->disc == SD_ROLLBACK_WINDOW) { /* its own lm (lm_window.c) over the same books */
        sd_lm_window_as_lm(lm, h);
        return;
    }
    *lm = (sd_lm){.self = h, .n_vocab = h->m.n_vocab, .n_ctx = sd_lm_hybrid_n_ctx, .len = hy_len,
                  .forward = hy_forward, .forward_tail = hy_forward_tail, .truncate = hy_truncate,
                  .warm = sd_lm_hybrid_warm};
    if (h->m.forward_first && h->m.logits_rest) {
        lm->forward_first = hy_forward_first;
        lm->logits_rest = hy_logits_rest;
    }
}
