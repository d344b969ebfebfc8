/* A model-free recurrent "model" behind the rollback primitives (sd_recm of
 * decode/lm_hybrid.h), header-only, for the decode tests. Its next token
 * depends on a running state that, like a Gated DeltaNet layer's, cannot be
 * truncated, only saved, restored, loaded from a capture or replayed:
 *   u   = mix(token ^ salt)                 the token's "projection"
 *   y   = mix(3 w0 + 5 w1 + u)              a "conv" over the window w0, w1 and u
 *   w0, w1 <- w1, u                         the conv window shifts
 *   h   = ((h << 16) ^ (y & 0xffff)) mod 2^48   the "recurrence" (remembers ~3 steps)
 * and the logits row after a token has its argmax at mix(h ^ salt) mod V
 * (hash noise below it). So the greedy text is a function of the last few
 * tokens (n-gram drafters hit sometimes), and a rollback that leaves a
 * rejected token in h, or the window one step off, changes the text.
 * Captures: STATE = (h, w0, w1) after the step, INPUTS = (u, y) of the step.
 * Every call the decode side should never make (a load or replay of a step
 * not in the ring, a restore past len, a forward past n_ctx) counts in
 * `misuse`. */
#ifndef SD_TESTS_ORACLE_REC_H
#define SD_TESTS_ORACLE_REC_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode/lm_hybrid.h"
#include "oracle_lm.h" /* oracle_mix */

typedef struct rec_slot {
    int32_t p;
    uint64_t a, b, c;
} rec_slot;

typedef struct rec_state {
    int32_t len;
    uint64_t h, w0, w1;
} rec_state;

typedef struct rec_oracle {
    int32_t V, n_ctx;
    uint64_t salt;
    rec_state s;
    sd_capture_kind kind;
    int32_t n_slots, cap_from;
    rec_slot *ring;
    int misuse;
    int64_t forwards, steps;
} rec_oracle;

static inline uint64_t rec_proj(uint64_t salt, int32_t tok) { return oracle_mix((uint64_t)tok ^ salt); }
static inline uint64_t rec_conv(const rec_state *s, uint64_t u) { return oracle_mix(3 * s->w0 + 5 * s->w1 + u); }
static inline void rec_apply(rec_state *s, uint64_t u, uint64_t y) {
    s->w0 = s->w1;
    s->w1 = u;
    s->h = ((s->h << 16) ^ (y & 0xffff)) & ((1ull << 48) - 1);
    s->len++;
}

/* One token through the state (the fresh state is all zeros). */
static inline void rec_step(uint64_t salt, rec_state *s, int32_t tok) {
    uint64_t u = rec_proj(salt, tok);
    rec_apply(s, u, rec_conv(s, u));
}

static inline int32_t rec_argmax_of(const rec_oracle *o, const rec_state *s) {
    return (int32_t)(oracle_mix(s->h ^ o->salt) % (uint64_t)o->V);
}

static inline void rec_row(const rec_oracle *o, const rec_state *s, float *row) {
    uint64_t h = oracle_mix(s->h ^ (o->salt * 7));
    for (int32_t v = 0; v < o->V; v++) row[v] = (float)(oracle_mix(h + (uint64_t)v) >> 40) * 0x1p-24f;
    row[rec_argmax_of(o, s)] = 2.0f;
}

/* The greedy next token after t[0..n), computed from scratch. */
static inline int32_t rec_next(const rec_oracle *o, const int32_t *t, int32_t n) {
    rec_state s = {0};
    for (int32_t i = 0; i < n; i++) rec_step(o->salt, &s, t[i]);
    return rec_argmax_of(o, &s);
}

static inline int32_t rec_n_ctx(void *self) { return ((rec_oracle *)self)->n_ctx; }
static inline int32_t rec_len(void *self) { return ((rec_oracle *)self)->s.len; }

static inline sd_status rec_forward_tail(void *self, const int32_t *tok, int32_t S, int32_t n_tail, float *logits,
                                         sd_err *err) {
    rec_oracle *o = self;
    o->forwards++;
    if (S < 0 || o->s.len + S > o->n_ctx || n_tail < 0 || n_tail > S) {
        o->misuse++;
        return sd_err_set(err, SD_ERR_CONTEXT, "rec oracle: forward past n_ctx");
    }
    for (int32_t i = 0; i < S; i++)
        if (tok[i] < 0 || tok[i] >= o->V) {
            o->misuse++;
            return sd_err_set(err, SD_ERR_ARG, "rec oracle: token out of range");
        }
    for (int32_t i = 0; i < S; i++) {
        uint64_t u = rec_proj(o->salt, tok[i]), y = rec_conv(&o->s, u);
        rec_apply(&o->s, u, y);
        o->steps++;
        int32_t p = o->s.len;
        if (o->kind != SD_CAPTURE_NONE && p >= o->cap_from) {
            rec_slot *sl = &o->ring[p % o->n_slots];
            *sl = o->kind == SD_CAPTURE_STATE ? (rec_slot){p, o->s.h, o->s.w0, o->s.w1} : (rec_slot){p, u, y, 0};
        }
        if (i >= S - n_tail) rec_row(o, &o->s, logits + (size_t)(i - (S - n_tail)) * (size_t)o->V);
    }
    return SD_OK;
}

static inline sd_status rec_capture_init(void *self, sd_capture_kind kind, int32_t n_slots, sd_err *err) {
    rec_oracle *o = self;
    free(o->ring);
    o->ring = NULL;
    o->kind = kind;
    o->n_slots = kind == SD_CAPTURE_NONE ? 0 : n_slots;
    o->cap_from = INT32_MAX;
    if (kind == SD_CAPTURE_NONE) return SD_OK;
    o->ring = calloc((size_t)n_slots, sizeof *o->ring);
    for (int32_t i = 0; i < n_slots; i++) o->ring[i].p = -1;
    return o->ring ? SD_OK : sd_err_set(err, SD_ERR_NOMEM, "rec oracle: out of memory");
}

static inline void rec_capture_from(void *self, int32_t p) { ((rec_oracle *)self)->cap_from = p; }

static inline sd_status rec_load(void *self, int32_t p, sd_err *err) {
    rec_oracle *o = self;
    if (o->kind != SD_CAPTURE_STATE || p < 1 || p > o->s.len || o->ring[p % o->n_slots].p != p) {
        o->misuse++;
        return sd_err_set(err, SD_ERR_ARG, "rec oracle: no state of step %d", p);
    }
    const rec_slot *sl = &o->ring[p % o->n_slots];
    o->s = (rec_state){p, sl->a, sl->b, sl->c};
    return SD_OK;
}

static inline sd_status rec_replay(void *self, int32_t p, sd_err *err) {
    rec_oracle *o = self;
    bool ok = o->kind == SD_CAPTURE_INPUTS && p > o->s.len && p <= o->n_ctx;
    for (int32_t q = o->s.len + 1; ok && q <= p; q++) ok = o->ring[q % o->n_slots].p == q;
    if (!ok) {
        o->misuse++;
        return sd_err_set(err, SD_ERR_ARG, "rec oracle: replay to %d from %d not captured", p, o->s.len);
    }
    while (o->s.len < p) {
        const rec_slot *sl = &o->ring[(o->s.len + 1) % o->n_slots];
        rec_apply(&o->s, sl->a, sl->b);
    }
    return SD_OK;
}

static inline sd_status rec_save(void *self, void *buf, sd_err *err) {
    (void)err;
    memcpy(buf, &((rec_oracle *)self)->s, sizeof(rec_state));
    return SD_OK;
}

static inline sd_status rec_restore(void *self, const void *buf, sd_err *err) {
    rec_oracle *o = self;
    rec_state s;
    memcpy(&s, buf, sizeof s);
    if (s.len > o->s.len) {
        o->misuse++;
        return sd_err_set(err, SD_ERR_CONTEXT, "rec oracle: restore past len");
    }
    o->s = s;
    return SD_OK;
}

static inline void rec_reset(void *self) { ((rec_oracle *)self)->s = (rec_state){0}; }
static inline void rec_set_len(void *self, int32_t n) { ((rec_oracle *)self)->s.len = n; }

static inline void rec_oracle_init(rec_oracle *o, int32_t V, int32_t n_ctx, uint64_t seed) {
    *o = (rec_oracle){.V = V, .n_ctx = n_ctx, .salt = oracle_mix(seed ^ 0x9e3779b97f4a7c15ull), .cap_from = INT32_MAX};
}

static inline void rec_oracle_free(rec_oracle *o) {
    free(o->ring);
    o->ring = NULL;
}

static inline sd_recm rec_oracle_recm(rec_oracle *o) {
    return (sd_recm){.self = o, .n_vocab = o->V, .n_ctx = rec_n_ctx, .len = rec_len, .forward_tail = rec_forward_tail,
                     .capture_init = rec_capture_init, .capture_from = rec_capture_from, .load = rec_load,
                     .replay = rec_replay, .save = rec_save, .restore = rec_restore, .reset = rec_reset,
                     .state_bytes = sizeof(rec_state), .state_bytes_moved = 3 * sizeof(uint64_t),
                     .set_len = rec_set_len};
}

#endif
