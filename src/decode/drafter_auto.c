/* "auto" (DESIGN.md §3, both at once): n-gram lookup first — free, and it
 * wins on extractive spans — and the draft model when the n-gram has no
 * match. With a cross-request suffix memory, suffix drafting goes before the
 * n-gram (it sees the context too, and earlier outputs). A stochastic draft model makes this drafter stochastic: n-gram
 * proposals then report one-hot q rows. */
#include <stdlib.h>
#include <string.h>

#include "decode/drafter.h"

typedef struct auto_drafter {
    sd_drafter first;        /* a free drafter before the n-gram (suffix); propose NULL = none */
    sd_drafter ngram, draft; /* draft.propose NULL = none */
    int32_t n_vocab;
} auto_drafter;

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

static int auto_propose(void *self, const int32_t *ctx, int32_t n, int k, int32_t *out, float *q,
                        sd_err *err) {
    auto_drafter *a = self;
    int got = auto_propose_free(self, ctx, n, k, out, q, err);
    if (got != 0 || !a->draft.propose) return got;
    return a->draft.propose(a->draft.self, ctx, n, k, out, q, err);
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
    if (a->first.accepted) a->first.accepted(a->first.self, ctx, n, n_accepted);
    if (a->ngram.accepted) a->ngram.accepted(a->ngram.self, ctx, n, n_accepted);
    if (a->draft.accepted) a->draft.accepted(a->draft.self, ctx, n, n_accepted);
}

static int64_t auto_n_forwards(void *self) {
    auto_drafter *a = self;
    return a->draft.n_forwards ? a->draft.n_forwards(a->draft.self) : 0;
}

static void auto_free(void *self) {
    auto_drafter *a = self;
    sd_drafter_free(&a->first);
    sd_drafter_free(&a->ngram);
    sd_drafter_free(&a->draft);
    free(a);
}

sd_status sd_drafter_auto_init(sd_drafter *d, sd_drafter *ngram, sd_drafter *draft, int32_t n_vocab,
                               sd_err *err) {
    auto_drafter *a = calloc(1, sizeof *a);
    if (!a) return sd_err_set(err, SD_ERR_NOMEM, "auto drafter: out of memory");
    a->ngram = *ngram;
    if (draft) a->draft = *draft;
    a->n_vocab = n_vocab;
    *ngram = (sd_drafter){0};
    if (draft) *draft = (sd_drafter){0};
    *d = (sd_drafter){.name = "auto", .self = a, .costly = a->draft.costly,
                      .stochastic = a->draft.stochastic, .reset = auto_reset,
                      .propose = auto_propose, .probe = auto_probe, .accepted = auto_accepted,
                      .propose_free = a->draft.propose ? auto_propose_free : NULL, .prefill = auto_prefill,
                      .guess = a->draft.propose ? auto_guess : NULL, .couple = auto_couple,
                      .n_forwards = auto_n_forwards, .free = auto_free};
    return SD_OK;
}

void sd_drafter_auto_put_first(sd_drafter *d, sd_drafter *first) {
    auto_drafter *a = d->self;
    sd_drafter_free(&a->first);
    a->first = *first;
    *first = (sd_drafter){0};
}
