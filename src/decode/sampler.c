#include "decode/sampler.h"

#include <math.h>
#include <stdlib.h>

#include "core/checked.h"

static uint64_t splitmix64(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

void sd_rng_seed(sd_rng *r, uint64_t seed) {
    for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&seed);
}

static inline uint64_t rotl(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

uint64_t sd_rng_next(sd_rng *r) {
    uint64_t *s = r->s;
    uint64_t result = rotl(s[1] * 5, 7) * 9, t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = rotl(s[3], 45);
    return result;
}

double sd_rng_uniform(sd_rng *r) { return (double)(sd_rng_next(r) >> 11) * 0x1.0p-53; }

/* The best value is kept in a register: comparing against x[best] made every
 * step wait on a load that depends on the previous compare (620 us per
 * 151936-entry row here, against 76 us). Same result: the first index of the
 * largest value, NaN never larger. */
int32_t sd_argmax(const float *x, int32_t n) {
    if (n <= 0) return 0;
    int32_t best = 0;
    float bv = x[0];
    for (int32_t i = 1; i < n; i++)
        if (x[i] > bv) {
            bv = x[i];
            best = i;
        }
    return best;
}

int32_t sd_sample_probs(const float *p, int32_t n, sd_rng *rng) {
    double sum = 0;
    for (int32_t i = 0; i < n; i++) sum += p[i];
    double u = sd_rng_uniform(rng) * sum, acc = 0;
    int32_t last = 0;
    for (int32_t i = 0; i < n; i++) {
        if (p[i] <= 0) continue;
        acc += p[i];
        last = i;
        if (u < acc) return i;
    }
    return last; /* u landed on the rounding slack at the top */
}

sd_status sd_sampler_init(sd_sampler *sm, const sd_sampling *s, int32_t n_vocab, sd_err *err) {
    *sm = (sd_sampler){0};
    if (n_vocab < 1) return sd_err_set(err, SD_ERR_ARG, "n_vocab must be >= 1");
    if (!(s->top_p > 0 && s->top_p <= 1)) return sd_err_set(err, SD_ERR_ARG, "top-p must be in (0, 1]");
    if (!(s->min_p >= 0 && s->min_p < 1)) return sd_err_set(err, SD_ERR_ARG, "min-p must be in [0, 1)");
    if (s->top_k < 0) return sd_err_set(err, SD_ERR_ARG, "top-k must be >= 0");
    sm->s = *s;
    sm->n_vocab = n_vocab;
    sd_rng_seed(&sm->rng, s->seed);
    sm->p = sd_malloc_array((size_t)n_vocab, sizeof *sm->p);
    sm->idx = sd_malloc_array((size_t)n_vocab, sizeof *sm->idx);
    if (!sm->p || !sm->idx) {
        sd_sampler_free(sm);
        return sd_err_set(err, SD_ERR_NOMEM, "sampler: out of memory");
    }
    return SD_OK;
}

void sd_sampler_free(sd_sampler *sm) {
    free(sm->p);
    free(sm->idx);
    sm->p = NULL;
    sm->idx = NULL;
}

/* qsort has no context argument: the probabilities being sorted by. */
static _Thread_local const float *g_sort_p;

static int by_prob_desc(const void *a, const void *b) {
    int32_t i = *(const int32_t *)a, j = *(const int32_t *)b;
    if (g_sort_p[i] != g_sort_p[j]) return g_sort_p[i] > g_sort_p[j] ? -1 : 1;
    return (i > j) - (i < j); /* ties: lower id first, so the order is total */
}

/* Keeps the n_keep first entries of the sorted candidate list idx[n], zeroes the rest. */
static void cut(float *p, const int32_t *idx, int32_t n, int32_t n_keep) {
    for (int32_t i = n_keep; i < n; i++) p[idx[i]] = 0;
}

void sd_sampler_probs(sd_sampler *sm, const float *logits, float *p) {
    int32_t n = sm->n_vocab;
    if (sm->s.temp <= 0) {
        int32_t best = sd_argmax(logits, n);
        for (int32_t i = 0; i < n; i++) p[i] = 0;
        p[best] = 1;
        sm->top = best;
        return;
    }
    sm->top = sd_argmax(logits, n);
    float mx = logits[sm->top];
    double sum = 0;
    for (int32_t i = 0; i < n; i++) {
        p[i] = expf((logits[i] - mx) / sm->s.temp);
        sum += p[i];
    }
    for (int32_t i = 0; i < n; i++) p[i] = (float)(p[i] / sum);
    bool need_sort = (sm->s.top_k > 0 && sm->s.top_k < n) || sm->s.top_p < 1;
    if (need_sort) {
        /* Only tokens whose probability did not underflow to 0 can be kept. */
        int32_t m = 0;
        for (int32_t i = 0; i < n; i++)
            if (p[i] > 0) sm->idx[m++] = i;
        g_sort_p = p;
        qsort(sm->idx, (size_t)m, sizeof *sm->idx, by_prob_desc);
        int32_t keep = m;
        if (sm->s.top_k > 0 && sm->s.top_k < keep) keep = sm->s.top_k;
        if (sm->s.top_p < 1) {
            double mass = 0, total = 0;
            for (int32_t i = 0; i < keep; i++) total += p[sm->idx[i]];
            for (int32_t i = 0; i < keep; i++) {
                mass += p[sm->idx[i]];
                if (mass >= sm->s.top_p * total) {
                    keep = i + 1;
                    break;
                }
            }
        }
        cut(p, sm->idx, m, keep);
    }
    if (sm->s.min_p > 0) {
        float floor_p = sm->s.min_p * p[sd_argmax(p, n)];
        for (int32_t i = 0; i < n; i++)
            if (p[i] < floor_p) p[i] = 0;
    }
    sum = 0;
    for (int32_t i = 0; i < n; i++) sum += p[i];
    for (int32_t i = 0; i < n; i++) p[i] = (float)(p[i] / sum);
}

/* The key of absolute position pos under seed: pos hashed apart from seed before they mix. */
static uint64_t pos_key(uint64_t seed, int64_t pos) {
    uint64_t x = (uint64_t)pos ^ 0x5851f42d4c957f2dull;
    return seed ^ splitmix64(&x);
}

/* splitmix64's output mix of key + (i + 1) * its increment: every token has its own number
 * without a generator to step through. */
double sd_race_uniform(uint64_t key, int32_t i) {
    uint64_t z = key + (uint64_t)(i + 1) * 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (double)((z >> 11) + 1) * 0x1.0p-53;
}

/* A token only beats the best E/p so far, bv, if E_i = -ln u_i < bv p_i; as -ln u >= 1 - u, a token
 * with 1 - u_i above bv p_i (with a margin for rounding) cannot, and costs no logarithm. Starting
 * from the most likely token makes bv small at once, so almost every other token is skipped. */
int32_t sd_race_pick(const float *p, int32_t n, int32_t first, uint64_t key) {
    if (first < 0 || first >= n || !(p[first] > 0)) first = sd_argmax(p, n); /* (a filter's tie cut it) */
    int32_t best = first;
    double bv = -log(sd_race_uniform(key, first)) / (double)p[first];
    for (int32_t i = 0; i < n; i++) {
        if (!(p[i] > 0) || i == first) continue;
        const double u = sd_race_uniform(key, i);
        if (1.0 - u > bv * (double)p[i] * (1.0 + 0x1.0p-40)) continue;
        const double r = -log(u) / (double)p[i];
        if (r < bv) {
            bv = r;
            best = i;
        }
    }
    return best;
}

int32_t sd_sampler_pick_at(sd_sampler *sm, const float *logits, int64_t pos) {
    if (sm->s.temp <= 0) return sd_argmax(logits, sm->n_vocab);
    sd_sampler_probs(sm, logits, sm->p);
    return sd_race_pick(sm->p, sm->n_vocab, sm->top, pos_key(sm->s.seed, pos));
}
