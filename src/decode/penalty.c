/* Penalties and logit bias on one row; see penalty.h for the formulas and
 * their sources. */
#include "decode/penalty.h"

#include <math.h>
#include <stddef.h>

int sd_penalty_mutant = SD_PMUT_NONE;

bool sd_penalties_active(const sd_penalties *p) {
    return p && (p->presence != 0 || p->frequency != 0 || (p->repeat != 1 && p->repeat_last_n != 0) ||
                 p->n_bias > 0);
}

/* Token i of the text hist + ext. */
static int32_t tok_at(const sd_rowpen *rp, const int32_t *ext, int32_t i) {
    return i < rp->n_hist ? rp->hist[i] : ext[i - rp->n_hist];
}

/* One penalty on one logit, given the token's count. */
typedef void (*apply_fn)(const sd_penalties *p, float *logit, int32_t count);

/* Counts the tokens of text[from..to) into rp->count; each id counted is
 * penalised once, in order of first appearance, through apply(), and its
 * count goes back to zero. Two passes over the range, no sort: the work is
 * the window's length, not the vocabulary's. */
static void over_range(const sd_rowpen *rp, const int32_t *ext, int32_t from, int32_t to, float *row,
                       int32_t n_vocab, apply_fn apply) {
    for (int32_t i = from; i < to; i++) {
        int32_t t = tok_at(rp, ext, i);
        if (t >= 0 && t < n_vocab) rp->count[t]++;
    }
    for (int32_t i = from; i < to; i++) {
        int32_t t = tok_at(rp, ext, i);
        if (t < 0 || t >= n_vocab || rp->count[t] == 0) continue;
        apply(rp->p, &row[t], rp->count[t]);
        rp->count[t] = 0; /* applied once per id */
    }
}

static void apply_repeat(const sd_penalties *p, float *logit, int32_t count) {
    (void)count;
    if (*logit <= 0) *logit *= p->repeat;
    else *logit /= p->repeat;
}

static void apply_openai(const sd_penalties *p, float *logit, int32_t count) {
    *logit -= (float)count * p->frequency + p->presence;
}

void sd_penalty_row(const sd_rowpen *rp, const int32_t *ext, int32_t n_ext, float *row, int32_t n_vocab) {
    if (!rp || !sd_penalties_active(rp->p)) return;
#ifdef SD_TEST_MUTANTS
    if (sd_penalty_mutant == SD_PMUT_COMMITTED_ONLY) n_ext = 0;
    if (sd_penalty_mutant == SD_PMUT_SHORT_PREFIX && n_ext > 0) n_ext--;
#endif
    const sd_penalties *p = rp->p;
    for (int32_t i = 0; i < p->n_bias; i++) {
        int32_t t = p->bias[i].token;
        if (t < 0 || t >= n_vocab) continue;
        row[t] = p->bias[i].bias <= -100 ? -INFINITY : row[t] + p->bias[i].bias;
    }
    int32_t n = rp->n_hist + n_ext;
    if (p->repeat != 1 && p->repeat_last_n != 0) {
        int32_t from = p->repeat_last_n < 0 || p->repeat_last_n > n ? 0 : n - p->repeat_last_n;
        over_range(rp, ext, from, n, row, n_vocab, apply_repeat);
    }
    if (p->presence != 0 || p->frequency != 0) over_range(rp, ext, rp->n_prompt, n, row, n_vocab, apply_openai);
}
