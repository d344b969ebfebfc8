/* Scripted drafters over an oracle's own greedy text for the decode property
 * tests (header-only, shared by test_spec_property.c over the hash and
 * Markov oracles and test_spec_hybrid.c over the recurrent one): perfect
 * (the greedy continuation), always-wrong (each greedy token + 1) and random
 * (random tokens, a random count of them, sometimes none). The oracle is
 * reached through next(o, t, n): its greedy token after t[0..n). The other
 * kinds (n-gram, draft model, auto) are the real drafters. */
#ifndef SD_TESTS_TOY_DRAFTER_H
#define SD_TESTS_TOY_DRAFTER_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode/drafter.h"
#include "decode/sampler.h"

typedef enum { D_NGRAM, D_DRAFT, D_AUTO, D_PERFECT, D_WRONG, D_RANDOM, D_KINDS } drafter_kind;
static const char *const KIND_NAME[D_KINDS] = {"ngram", "draft", "auto", "perfect", "wrong", "random"};

typedef int32_t (*toy_next_fn)(const void *o, const int32_t *t, int32_t n);

typedef struct toy {
    const void *o;
    toy_next_fn next;
    int32_t V;
    drafter_kind kind;
    sd_rng rng;
    int32_t *buf;
} toy;

static inline int toy_propose(void *self, const int32_t *ctx, int32_t n, int k, int32_t *out, float *q,
                              sd_err *err) {
    (void)q, (void)err;
    toy *t = self;
    if (t->kind == D_RANDOM) {
        for (int i = 0; i < k; i++) out[i] = (int32_t)(sd_rng_next(&t->rng) % (uint64_t)t->V);
        return (int)(sd_rng_next(&t->rng) % (uint64_t)(k + 1)); /* sometimes fewer, or none */
    }
    memcpy(t->buf, ctx, (size_t)n * sizeof *ctx);
    for (int i = 0; i < k; i++) {
        int32_t next = t->next(t->o, t->buf, n + i);
        out[i] = t->kind == D_WRONG ? (next + 1) % t->V : next;
        t->buf[n + i] = out[i];
    }
    return k;
}

/* Candidates for token trees: per step the kind's chain token, then the
 * greedy token (for always-wrong: so siblings are accepted) and random ones. */
static inline int toy_propose_top(void *self, const int32_t *ctx, int32_t n, int k, int w, int32_t *cand,
                                  sd_err *err) {
    toy *t = self;
    int32_t chain[64];
    int got = toy_propose(self, ctx, n, k < 64 ? k : 64, chain, NULL, err);
    memcpy(t->buf, ctx, (size_t)n * sizeof *ctx);
    for (int i = 0; i < got; i++) {
        int32_t *c = cand + (size_t)i * (size_t)w;
        c[0] = chain[i];
        for (int r = 1; r < w; r++)
            c[r] = r == 1 && t->kind == D_WRONG ? t->next(t->o, t->buf, n + i)
                   : sd_rng_next(&t->rng) % 4 ? (int32_t)(sd_rng_next(&t->rng) % (uint64_t)t->V) : -1;
        t->buf[n + i] = chain[i];
    }
    return got;
}

static inline void toy_free(void *self) {
    toy *t = self;
    free(t->buf);
    free(t);
}

/* A toy drafter of kind over the oracle o (V tokens) for contexts of up to
 * cap tokens; sd_drafter_free frees it. */
static inline sd_drafter toy_drafter(const void *o, toy_next_fn next, int32_t V, drafter_kind kind, uint64_t seed,
                                     int32_t cap) {
    toy *t = calloc(1, sizeof *t);
    t->o = o;
    t->next = next;
    t->V = V;
    t->kind = kind;
    t->buf = malloc((size_t)cap * sizeof *t->buf);
    sd_rng_seed(&t->rng, seed);
    return (sd_drafter){.name = KIND_NAME[kind], .self = t, .propose = toy_propose, .propose_top = toy_propose_top,
                        .free = toy_free};
}

#endif
