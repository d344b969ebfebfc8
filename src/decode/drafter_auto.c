/* "auto" (ARCHITECTURE.md §3, both at once): n-gram lookup first — free, and it
 * wins on extractive spans — and the draft model when the n-gram has no
 * match, or when the lookup's proposals have lately been accepted for fewer
 * tokens than the draft model's (text that does not repeat itself, sampled
 * text: a lookup that always finds some earlier 1-gram would otherwise crowd
 * out a drafter that predicts far better). Both are running averages of
 * accepted tokens per proposal: the draft model's from its verified rounds,
 * the lookup's from its proposal of every round, used or not, against the
 * tokens the round committed there (free to check: no forward; where the
 * draft model's proposal was used, the lookup is credited with at most what
 * that round committed, so it keeps the lead where it would have gone on).
 * With a cross-request suffix memory, suffix drafting goes before the n-gram
 * (it sees the context too, and earlier outputs). A stochastic draft model
 * makes this drafter stochastic: n-gram proposals then report one-hot q rows.
 * A block drafter (DFlash) behind it makes this one a block drafter: the
 * decode loop asks for a whole block and scores only the block drafter's
 * proposals per position (last_was_block). */
#include <stdlib.h>
#include <string.h>

#include "decode/drafter.h"

typedef struct auto_drafter {
    sd_drafter first;        /* a free drafter before the n-gram (suffix); propose NULL = none */
    sd_drafter ngram, draft; /* draft.propose NULL = none */
    int32_t n_vocab;
    /* accepted tokens per proposal, running averages (prior 1 each) */
    double free_len, draft_len;
    int32_t *free_prop, free_n, free_cap; /* the free sources' last proposal (free_n tokens) ... */
    int32_t free_pos;                     /* ... for the positions from free_pos on; -1 = none */
    bool draft_proposed;                  /* the last proposal was the draft model's */
} auto_drafter;

/* Weight of the newest round in a running average: about the last eight rounds count. */
#define LEN_DECAY 0.125

/* The n-gram's proposal, with one-hot q rows when the drafter is stochastic. */
static int auto_propose_free(void *self, const int32_t *ctx, int32_t n, int k, int32_t *out, float *q,
                             sd_err *err) {
    auto_drafter *a = self;
    int got = a->first.propose ? a->first.propose(a->first.self, ctx, n, k, out, NULL, err) : 0;
    if (got == 0) got = a->ngram.propose(a->ngram.self, ctx, n, k, out, NULL, err);
    if (got > 0 && q && a->draft.stochastic) {
        memset(q, 0, (size_t)got * (size_t)a->n_vocab * sizeof *q);
        for (int i = 0; i < got; i++) q[(size_t)i * (size_t)a->n_vocab + (size_t)out[i]] = 1;
    }
    return got;
}

/* Scores the free sources' last proposal: its tokens that the committed context holds since. */
static void score_free(auto_drafter *a, const int32_t *ctx, int32_t n) {
    if (a->free_pos >= 0 && a->free_pos < n) {
        int32_t m = 0;
        while (m < a->free_n && a->free_pos + m < n && ctx[a->free_pos + m] == a->free_prop[m]) m++;
        a->free_len += LEN_DECAY * (m - a->free_len);
    }
    a->free_pos = -1;
}

/* Keeps out[got] as the free sources' proposal for the positions from n on (not kept: no score). */
static void keep_free(auto_drafter *a, const int32_t *out, int got, int32_t n) {
    if (got > a->free_cap) {
        int32_t *p = realloc(a->free_prop, (size_t)got * sizeof *p);
        if (!p) return;
        a->free_prop = p, a->free_cap = got;
    }
    memcpy(a->free_prop, out, (size_t)got * sizeof *out);
    a->free_n = got, a->free_pos = n;
}

static int auto_propose(void *self, const int32_t *ctx, int32_t n, int k, int32_t *out, float *q,
                        sd_err *err) {
    auto_drafter *a = self;
    score_free(a, ctx, n);
    a->draft_proposed = false;
    int got = auto_propose_free(self, ctx, n, k, out, q, err);
    if (got > 0) keep_free(a, out, got, n);
    if (got < 0 || !a->draft.propose || (got > 0 && a->free_len >= a->draft_len)) return got;
    got = a->draft.propose(a->draft.self, ctx, n, k, out, q, err);
    a->draft_proposed = got > 0;
    return got;
}

static int auto_guess(void *self, const int32_t *ctx, int32_t n, int32_t *out, sd_err *err) {
    auto_drafter *a = self;
    if (a->draft.guess) return a->draft.guess(a->draft.self, ctx, n, out, err);
    return a->draft.propose(a->draft.self, ctx, n, 1, out, NULL, err);
}

static int auto_prefill(void *self, const int32_t *ctx, int32_t n, sd_err *err) {
    auto_drafter *a = self;
    return a->draft.prefill ? a->draft.prefill(a->draft.self, ctx, n, err) : 0;
}

static int auto_probe(void *self, const int32_t *ctx, int32_t n, int32_t *out) {
    auto_drafter *a = self;
    if (a->first.probe && a->first.probe(a->first.self, ctx, n, out)) return 1;
    return a->ngram.probe(a->ngram.self, ctx, n, out);
}

static void auto_reset(void *self) {
    auto_drafter *a = self;
    a->free_len = a->draft_len = 1;
    a->free_pos = -1;
    a->draft_proposed = false;
    if (a->first.reset) a->first.reset(a->first.self);
    if (a->ngram.reset) a->ngram.reset(a->ngram.self);
    if (a->draft.reset) a->draft.reset(a->draft.self);
}

static void auto_couple(void *self, const sd_sampling *smp) {
    auto_drafter *a = self;
    if (a->draft.couple) a->draft.couple(a->draft.self, smp); /* the lookups have no distribution to draw from */
}

static void auto_accepted(void *self, const int32_t *ctx, int32_t n, int n_accepted) {
    auto_drafter *a = self;
    if (a->draft_proposed) a->draft_len += LEN_DECAY * (n_accepted - a->draft_len);
    a->draft_proposed = false;
    if (a->first.accepted) a->first.accepted(a->first.self, ctx, n, n_accepted);
    if (a->ngram.accepted) a->ngram.accepted(a->ngram.self, ctx, n, n_accepted);
    if (a->draft.accepted) a->draft.accepted(a->draft.self, ctx, n, n_accepted);
}

static bool auto_last_was_block(void *self) { return ((auto_drafter *)self)->draft_proposed; }

static int64_t auto_n_forwards(void *self) {
    auto_drafter *a = self;
    return a->draft.n_forwards ? a->draft.n_forwards(a->draft.self) : 0;
}

static void auto_free(void *self) {
    auto_drafter *a = self;
    sd_drafter_free(&a->first);
    sd_drafter_free(&a->ngram);
    sd_drafter_free(&a->draft);
    free(a->free_prop);
    free(a);
}

sd_status sd_drafter_auto_init(sd_drafter *d, sd_drafter *ngram, sd_drafter *draft, int32_t n_vocab,
                               sd_err *err) {
    auto_drafter *a = calloc(1, sizeof *a);
    if (!a) return sd_err_set(err, SD_ERR_NOMEM, "auto drafter: out of memory");
    a->ngram = *ngram;
    if (draft) a->draft = *draft;
    a->n_vocab = n_vocab;
    a->free_len = a->draft_len = 1;
    a->free_pos = -1;
    *ngram = (sd_drafter){0};
    if (draft) *draft = (sd_drafter){0};
    *d = (sd_drafter){.name = "auto", .self = a, .costly = a->draft.costly,
                      .stochastic = a->draft.stochastic, .reset = auto_reset,
                      .propose = auto_propose, .probe = auto_probe, .accepted = auto_accepted,
                      .propose_free = a->draft.propose ? auto_propose_free : NULL, .prefill = auto_prefill,
                      .guess = a->draft.propose ? auto_guess : NULL, .couple = auto_couple,
                      .n_forwards = auto_n_forwards, .free = auto_free, .block = a->draft.block,
                      .last_was_block = a->draft.block > 0 ? auto_last_was_block : NULL};
    return SD_OK;
}

void sd_drafter_auto_put_first(sd_drafter *d, sd_drafter *first) {
    auto_drafter *a = d->self;
    sd_drafter_free(&a->first);
    a->first = *first;
    *first = (sd_drafter){0};
}
