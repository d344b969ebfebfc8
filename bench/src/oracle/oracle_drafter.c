/* Synthetic-acceptance drafter: see oracle_drafter.h. */
#include "oracle/oracle_drafter.h"

#include <stdlib.h>
#include <string.h>

#include "core/checked.h"

typedef struct oracle {
    int32_t *greedy, n_greedy, n_prompt, n_vocab;
    double alpha;
    uint64_t seed, rng;
    sd_drafter cost; /* a real drafter whose time the proposals cost (propose NULL: free) */
} oracle;

/* splitmix64 (Steele, Lea, Flood 2014): small, seedable, good enough here. */
static uint64_t next_u64(oracle *o) {
    uint64_t z = (o->rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static double next_unit(oracle *o) { return (double)(next_u64(o) >> 11) * 0x1.0p-53; }

/* Nothing to restart: the drafts are a function of (seed, position). */
static void oracle_reset(void *self) {
    oracle *o = self;
    if (o->cost.reset) o->cost.reset(o->cost.self);
}

/* Reference position j always gets splitmix64 draws 2j+1 (keep the token if
 * u < α) and 2j+2 (which wrong id), whatever the rounds around it: the draft
 * errors do not depend on how an engine cuts its rounds, so the llama.cpp
 * side of the race (bench/vs-llamacpp/lib.mjs oracleDraft) sees the same ones.
 * ctx[0..n) = prompt + generated tokens including a0, so the proposal starts
 * at reference index n − n_prompt (ARCHITECTURE.md §1: propose past a0). */
static int oracle_tokens(oracle *o, int32_t n, int k, int32_t *out) {
    int32_t g = n - o->n_prompt;
    int m = 0;
    for (; m < k && g >= 0 && g + m < o->n_greedy; m++) {
        int32_t t = o->greedy[g + m];
        o->rng = o->seed + 2 * (uint64_t)(g + m) * 0x9E3779B97F4A7C15ull;
        if (next_unit(o) >= o->alpha) /* corrupt: any id but the right one */
            t = (int32_t)(((uint64_t)t + 1 + next_u64(o) % (uint64_t)(o->n_vocab - 1)) % (uint64_t)o->n_vocab);
        out[m] = t;
    }
    return m;
}

static int oracle_propose(void *self, const int32_t *ctx, int32_t n, int k, int32_t *out, float *q,
                          sd_err *err) {
    (void)q;
    oracle *o = self;
    if (o->cost.propose && o->cost.propose(o->cost.self, ctx, n, k, out, NULL, err) < 0) return -1;
    return oracle_tokens(o, n, k, out);
}

/* A gate probe of the costed oracle: the cost drafter's own one-token guess
 * (a draft model's is a 16-token window, drafter_model.c draft_guess, not a
 * catch-up over every token since the gate closed), then the oracle's token. */
static int oracle_guess(void *self, const int32_t *ctx, int32_t n, int32_t *out, sd_err *err) {
    oracle *o = self;
    int32_t unused;
    int got = o->cost.guess ? o->cost.guess(o->cost.self, ctx, n, &unused, err)
                            : o->cost.propose(o->cost.self, ctx, n, 1, &unused, NULL, err);
    if (got < 0) return -1;
    return oracle_tokens(o, n, 1, out);
}

static int64_t oracle_n_forwards(void *self) {
    oracle *o = self;
    return o->cost.n_forwards ? o->cost.n_forwards(o->cost.self) : 0;
}

static int oracle_prefill(void *self, const int32_t *ctx, int32_t n, sd_err *err) {
    oracle *o = self;
    return o->cost.prefill ? o->cost.prefill(o->cost.self, ctx, n, err) : 0;
}

static void oracle_free(void *self) {
    oracle *o = self;
    if (o) free(o->greedy), sd_drafter_free(&o->cost);
    free(o);
}

sd_status sd_drafter_oracle_init(sd_drafter *d, const int32_t *greedy, int32_t n_greedy,
                                 int32_t n_prompt, double alpha, int32_t n_vocab, uint64_t seed,
                                 sd_err *err) {
    if (!d || (!greedy && n_greedy > 0) || n_greedy < 0 || n_prompt < 0 || !(alpha >= 0.0 && alpha <= 1.0) ||
        n_vocab < 2)
        return sd_err_set(err, SD_ERR_ARG, "oracle drafter: bad arguments (alpha %g, n_vocab %d)", alpha, n_vocab);
    oracle *o = calloc(1, sizeof *o);
    int32_t *copy = sd_malloc_array(n_greedy > 0 ? (size_t)n_greedy : 1, sizeof *copy);
    if (!o || !copy) {
        free(o), free(copy);
        return sd_err_set(err, SD_ERR_NOMEM, "oracle drafter: out of memory");
    }
    if (n_greedy > 0) memcpy(copy, greedy, (size_t)n_greedy * sizeof *copy);
    *o = (oracle){.greedy = copy, .n_greedy = n_greedy, .n_prompt = n_prompt, .n_vocab = n_vocab,
                  .alpha = alpha, .seed = seed, .rng = seed};
    memset(d, 0, sizeof *d);
    d->name = "oracle";
    d->self = o;
    d->costly = false;
    d->stochastic = false;
    d->reset = oracle_reset;
    d->propose = oracle_propose;
    d->probe = NULL;
    d->accepted = NULL;
    d->n_forwards = oracle_n_forwards;
    d->free = oracle_free;
    return SD_OK;
}

sd_status sd_drafter_oracle_costed_init(sd_drafter *d, const int32_t *greedy, int32_t n_greedy, int32_t n_prompt,
                                        double alpha, int32_t n_vocab, uint64_t seed, sd_drafter *cost,
                                        sd_err *err) {
    sd_status st = sd_drafter_oracle_init(d, greedy, n_greedy, n_prompt, alpha, n_vocab, seed, err);
    if (st != SD_OK) return st;
    oracle *o = d->self;
    o->cost = *cost;
    *cost = (sd_drafter){0};
    d->name = "oracle (costed)";
    d->costly = true;
    d->prefill = oracle_prefill;
    if (o->cost.propose) d->guess = oracle_guess;
    return SD_OK;
}
