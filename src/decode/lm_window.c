/* The window discipline of lm_hybrid.h (ARCHITECTURE.md §4, the source design),
 * an sd_lm of its own over the books of sd_lm_hybrid (sd_lm_window_as_lm):
 *
 * - The model's state only ever holds a committed prefix, at the anchor m
 *   (h->base), with a snapshot of it. The tail = committed tokens not yet in
 *   it; m + |tail| = n, the length the decode loop sees (h->len).
 * - A forward feeds, from m, the tail plus the new tokens, padded to exactly
 *   S = h->window tokens (a target's rounds; the loop keeps tail + 1 + K <= S
 *   through sd_lm.max_batch, so a round is always exactly S tokens).
 * - At the truncate that ends a round: if every fed token was committed (all
 *   accepted, no pad), the new state is kept and snapshot, m moves to n;
 *   otherwise the snapshot is restored and the tail grows by 1 + j.
 * - Committed tokens make full windows of S before the next round (the
 *   re-anchor forwards, all committed); with the tail at S - 1 the loop's
 *   plain step feeds tail + a0 = S committed tokens, the re-anchor for free.
 * - Prefill in the same windows, the last prompt token held back: the rows
 *   whose logits the caller wants are never counted as committed, so the
 *   first round's feed ends with the last prompt token and its row is a
 *   real token's row, never a pad's, whatever the prompt length mod S.
 * A draft model's lm (commit_on_forward false) is not padded, and its own
 * proposals are forwarded on top of its run until a truncate decides.
 * Rolling back below m (a caller's outside reset excepted) starts over from
 * position 0 and re-anchors from the token history. */
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "core/clock.h"
#include "decode/lm_hybrid.h"

void sd_window_start(sd_lm_hybrid *h) {
    h->base = h->m.len(h->m.self);
    h->fed = h->pad = 0;
    h->len = h->commit = h->base;
    if (h->known > h->base) h->known = h->base;
    if (sd_lm_hybrid_snap_save(h, NULL) != SD_OK) { /* cannot fail for a snapshot buffer of state_bytes */
        h->m.reset(h->m.self);
        h->base = h->len = h->commit = h->known = 0;
    }
}

/* An outside change of the model (a reset, a restore on the context) starts the books over. */
static void wsync(sd_lm_hybrid *h) {
    if (h->m.len(h->m.self) != h->base + h->fed + h->pad) sd_window_start(h);
}

/* The fed run is committed and unpadded: it becomes the new anchor. */
static sd_status keep(sd_lm_hybrid *h, sd_err *err) {
    h->base += h->fed;
    h->fed = 0;
    return sd_lm_hybrid_snap_save(h, err);
}

/* Back to the anchor's snapshot. */
static sd_status clean(sd_lm_hybrid *h, sd_err *err) {
    h->fed = h->pad = 0;
    return sd_lm_hybrid_snap_restore(h, err);
}

/* The model to a committed prefix, with c committed positions: keep the run
 * when it is all committed and unpadded, else restore. */
static sd_status settle(sd_lm_hybrid *h, int32_t c, sd_err *err) {
    if (h->fed + h->pad == 0) return SD_OK;
    return h->pad == 0 && h->base + h->fed <= c ? keep(h, err) : clean(h, err);
}

/* Logits buffer for rows real + pad rows. */
static float *wbuf(sd_lm_hybrid *h, int32_t rows) {
    if (rows <= h->wlogits_rows) return h->wlogits;
    float *b = realloc(h->wlogits, (size_t)rows * (size_t)h->m.n_vocab * sizeof *b);
    if (!b) return NULL;
    h->wlogits = b;
    h->wlogits_rows = rows;
    return b;
}

static sd_status win_forward_tail(void *self, sd_lm_use use, const int32_t *tokens, int32_t S, int32_t n_tail,
                                  float *logits, sd_err *err) {
    sd_lm_hybrid *h = self;
    wsync(h);
    const int32_t L = h->len, n_ctx = h->m.n_ctx(h->m.self), W = h->window;
    if (S < 0 || n_tail < 0 || n_tail > S || (n_tail > 0 && !logits))
        return sd_err_set(err, SD_ERR_ARG, "forward: bad batch (S = %d, %d logits rows)", S, n_tail);
    if (S > n_ctx - L) return sd_err_set(err, SD_ERR_CONTEXT, "context full: %d + %d tokens > n_ctx %d", L, S, n_ctx);
    if (S == 0) return SD_OK;
    for (int32_t i = 0; i < S; i++)
        if (tokens[i] < 0 || tokens[i] >= h->m.n_vocab)
            return sd_err_set(err, SD_ERR_ARG, "token id %d out of range [0, %d)", tokens[i], h->m.n_vocab);
    sd_status st = SD_OK;
    if (!h->commit_on_forward && h->fed > 0 && h->pad == 0) { /* a draft's proposals on top of its run */
        st = h->m.forward_tail(h->m.self, tokens, S, n_tail, logits, err);
        if (st != SD_OK) return st;
        memcpy(h->hist + L, tokens, (size_t)S * sizeof *tokens);
        if (h->known >= L) h->known = L + S;
        h->fed += S;
        h->len = L + S;
        return SD_OK;
    }
    /* committed: what the loop has committed, and the rows whose logits nobody reads */
    int32_t c = h->commit_on_forward ? L : h->commit;
    if (L + S - n_tail > c) c = L + S - n_tail;
    memcpy(h->hist + L, tokens, (size_t)S * sizeof *tokens);
    if (h->known >= L) h->known = L + S;
    double t0 = sd_now_s();
    const bool decoding = use != SD_LM_PREFILL; /* a verify round or plain step */
    st = settle(h, c, err);
    while (st == SD_OK && c - h->base >= W) { /* re-anchor: a full window of committed tokens */
        st = h->m.forward_tail(h->m.self, h->hist + h->base, W, 0, NULL, err);
        h->fed = st == SD_OK ? W : 0;
        if (st == SD_OK) st = keep(h, err);
        h->st.redecodes += decoding; /* the discipline's extra forwards (a prefill's windows are its prefill) */
        h->st.redecoded += decoding ? W : 0;
    }
    if (decoding) h->st.rollback_s += sd_now_s() - t0;
    if (st != SD_OK) return st;
    h->commit = c;
    h->len = L + S;
    if (n_tail == 0) return SD_OK; /* nothing to read: the rest waits in the tail */
    /* the round: tail + new tokens, padded to the window (a target's) */
    const int32_t F = L + S - h->base;
    int32_t P = h->commit_on_forward && F < W ? W - F : 0;
    if (P > n_ctx - (h->base + F)) P = n_ctx - (h->base + F);
    if (decoding && S == 1 && h->commit_on_forward && F == W) h->st.anchor_steps++; /* no room for a draft */
    for (int32_t i = 0; i < P; i++) h->hist[L + S + i] = 0; /* pad: any token, its rows are never kept */
    float *out = P ? wbuf(h, n_tail + P) : logits;
    if (!out) return sd_err_set(err, SD_ERR_NOMEM, "window: out of memory");
    st = h->m.forward_tail(h->m.self, h->hist + h->base, F + P, n_tail + P, out, err);
    if (st != SD_OK) {
        h->len = L;
        return st;
    }
    if (P) memcpy(logits, out, (size_t)n_tail * (size_t)h->m.n_vocab * sizeof *logits);
    h->fed = F;
    h->pad = P;
    return SD_OK;
}

static sd_status win_truncate(void *self, int32_t n, sd_err *err) {
    sd_lm_hybrid *h = self;
    wsync(h);
    if (n < 0) n = 0;
    double t0 = sd_now_s();
    sd_status st = SD_OK;
    if (n >= h->len) { /* everything held is committed: a fully accepted unpadded round is kept */
        h->commit = h->len;
        if (h->fed > 0 && h->pad == 0 && h->base + h->fed == h->len) st = keep(h, err);
    } else {
        if (n > 0 && h->mutant == SD_MUTANT_SHORT) n--; /* the test's deliberate off-by-one */
        h->st.rollbacks += n > 0;
        h->len = h->commit = n;
        st = settle(h, n, err);
        if (st == SD_OK && n < h->base) { /* below the anchor: start over, re-anchoring from the history */
            h->st.fallbacks++;
            h->m.reset(h->m.self);
            h->base = h->fed = h->pad = 0;
            if (h->known < n) h->len = h->commit = h->known;
            st = sd_lm_hybrid_snap_save(h, err);
        }
    }
    if (st != SD_OK) { /* a consistent empty model, never a wrong state; the caller stops */
        h->m.reset(h->m.self);
        h->known = 0;
        sd_window_start(h);
    }
    h->st.rollback_s += sd_now_s() - t0;
    return st;
}

static int32_t win_len(void *self) {
    sd_lm_hybrid *h = self;
    wsync(h);
    return h->len;
}

static int32_t win_max_batch(void *self) {
    sd_lm_hybrid *h = self;
    if (!h->commit_on_forward) return INT32_MAX;
    const int32_t room = h->window - (h->len - h->base);
    return room > 1 ? room : 1;
}

static sd_status win_forward(void *self, sd_lm_use use, const int32_t *tokens, int32_t S, float *logits,
                             sd_err *err) {
    return win_forward_tail(self, use, tokens, S, S, logits, err);
}

/* One pass, every row: the window's forward has no cheaper first pass. */
static sd_status win_forward_first(void *self, const int32_t *tokens, int32_t S, float *logits, int32_t *n_first,
                                   sd_err *err) {
    *n_first = S;
    return win_forward_tail(self, SD_LM_VERIFY, tokens, S, S, logits, err);
}

static sd_status win_logits_rest(void *self, float *logits, sd_err *err) {
    (void)self, (void)logits;
    return sd_err_set(err, SD_ERR_ARG, "window: no second pass (the first covers every row)");
}

void sd_lm_window_as_lm(sd_lm *lm, sd_lm_hybrid *h) {
    *lm = (sd_lm){.self = h, .n_vocab = h->m.n_vocab, .n_ctx = sd_lm_hybrid_n_ctx, .len = win_len,
                  .forward = win_forward, .forward_tail = win_forward_tail, .truncate = win_truncate,
                  .max_batch = win_max_batch, .warm = sd_lm_hybrid_warm};
    if (h->m.forward_first && h->m.logits_rest) { /* as before the split: verify takes the two-pass path */
        lm->forward_first = win_forward_first;
        lm->logits_rest = win_logits_rest;
    }
}
