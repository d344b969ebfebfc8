/* Token selection: greedy argmax, and sampling with temperature, top-k, top-p
 * and min-p from a seeded generator. Speculative sampling (ARCHITECTURE.md §6)
 * needs the final probability vector p after every filter, not just a token,
 * so that is what sd_sampler_probs exposes. */
#ifndef SD_DECODE_SAMPLER_H
#define SD_DECODE_SAMPLER_H

#include <stdint.h>

#include "core/status.h"
#include "decode/spec.h"

/* xoshiro256** (Blackman & Vigna, https://prng.di.unimi.it/), state expanded
 * from a 64-bit seed with splitmix64 as its authors recommend. */
typedef struct sd_rng {
    uint64_t s[4];
} sd_rng;

void sd_rng_seed(sd_rng *r, uint64_t seed);
uint64_t sd_rng_next(sd_rng *r);
/* Uniform double in [0, 1) with 53 random bits. */
double sd_rng_uniform(sd_rng *r);

/* Index of the largest x[i], i < n; the FIRST index on ties (n >= 1). The
 * greedy decode and the greedy verify both use exactly this. */
int32_t sd_argmax(const float *x, int32_t n);

/* Draws index i with probability p[i] / sum(p) by inverse CDF over one
 * uniform draw (p >= 0, sum > 0; n >= 1). Consumes exactly one draw. */
int32_t sd_sample_probs(const float *p, int32_t n, sd_rng *rng);

/* A sampler: settings, scratch for n_vocab, and its own generator. */
typedef struct sd_sampler {
    sd_sampling s;
    int32_t n_vocab;
    sd_rng rng;
    float *p;     /* [n_vocab] last probability vector */
    int32_t top;  /* the most likely token of the last sd_sampler_probs (p[top] > 0) */
    int32_t *idx; /* [n_vocab] scratch for sorting */
} sd_sampler;

/* Errors: SD_ERR_ARG (n_vocab < 1, top_p outside (0, 1], min_p outside [0, 1),
 * top_k < 0), SD_ERR_NOMEM. */
sd_status sd_sampler_init(sd_sampler *sm, const sd_sampling *s, int32_t n_vocab, sd_err *err);
void sd_sampler_free(sd_sampler *sm);

/* p[n_vocab] = the distribution plain sampling draws from, given logits
 * [n_vocab]: softmax(logits / temp), then top-k (keep the k most likely; ties
 * at the cut keep the lower ids), top-p (the smallest most-likely-first set
 * whose mass reaches top_p), min-p (drop p < min_p * p_max), renormalised to
 * sum 1; filtered entries are exactly 0. Greedy settings (temp <= 0) give the
 * one-hot vector of sd_argmax. p may be sm->p. */
void sd_sampler_probs(sd_sampler *sm, const float *logits, float *p);

/* A draw from p[n] (p >= 0, some p > 0), the race started from token first
 * (fastest when it is the most likely one; where p[first] is 0 the race
 * finds it with sd_argmax) by the exponential race: token i
 * gets E_i = -ln u_i, u_i in (0, 1] a hash of (key, i), and the smallest
 * E_i / p_i wins; P(i wins) = p_i / sum(p), as the E_i are independent
 * Exp(1) (the Gumbel-max trick in exponential form). Two distributions
 * raced with one key pick the same token with probability at least
 * (1 - TV) / (1 + TV) (Daliri, Musco & Suresh 2024), where one inverse-CDF
 * uniform shared by both does much worse: its intervals shift with every
 * difference in the mass of the tokens before them. */
int32_t sd_race_pick(const float *p, int32_t n, int32_t first, uint64_t key);
/* Token i's uniform u_i in (0, 1] under key (53 bits; a pure function). */
double sd_race_uniform(uint64_t key, int32_t i);

/* The token at absolute position pos, picked from the logits that precede
 * it: sd_argmax when greedy, else the exponential race (sd_race_pick) over
 * sd_sampler_probs with the key of (seed, pos). Plain decoding and the
 * verify of a deterministic draft both pick every token this way, which is
 * what makes speculative sampling byte-identical to plain sampling with the
 * same seed; a coupled drafter races its own distribution with the same key
 * (drafter.h couple). */
int32_t sd_sampler_pick_at(sd_sampler *sm, const float *logits, int64_t pos);

#endif
