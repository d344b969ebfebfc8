/* Grammar masks on verify rows; see constrain.h. */
#include "decode/constrain.h"

#include <math.h>

#include "core/clock.h"
#include "decode/sampler.h"

int sd_grammar_mutant = SD_GMUT_NONE;

int32_t sd_rowmask_state(const sd_rowmask *rm, int i, int K) {
#ifdef SD_TEST_MUTANTS
    if (sd_grammar_mutant == SD_GMUT_COMMITTED_STATE) return rm->state[0];
    if (sd_grammar_mutant == SD_GMUT_SKIP_ROW1 && i == 1) return -3;
    if (sd_grammar_mutant == SD_GMUT_BONUS_UNMASKED && K >= 1 && i == K) return -3;
#else
    (void)K;
#endif
    return rm->state[i];
}

static int allowed(const uint32_t *mask, int32_t id) { return (mask[id >> 5] >> (id & 31)) & 1; }

/* The n best tokens of row in the order greedy decoding ranks them (value
 * descending, lower id first on ties), one pass with a small sorted list. */
static int top_n(const float *row, int32_t n_vocab, int n, int32_t *out) {
    int k = 0;
    for (int32_t i = 0; i < n_vocab; i++) {
        if (k == n && !(row[i] > row[out[n - 1]])) continue; /* ties keep the lower id already held */
        int j = k < n ? k++ : n - 1;
        while (j > 0 && row[i] > row[out[j - 1]]) {
            out[j] = out[j - 1];
            j--;
        }
        out[j] = i;
    }
    return k;
}

/* How many of the best tokens are tried one by one (a cached byte walk
 * each) before the full mask is computed: the masked argmax is the first
 * allowed token in greedy order, so trying them in that order is exact, and
 * where the grammar allows much (inside a string) one of the first few
 * almost always is, while a full mask there walks most of the vocabulary. */
#define TRY_BEST 32

static int32_t constrain_argmax(sd_gmatch *m, int32_t state, const float *row, int32_t n_vocab, sd_err *err) {
    int32_t top = sd_argmax(row, n_vocab);
    if (state == -3) return top; /* a mutant's unmasked row */
    int32_t next = sd_gmatch_token(m, state, top);
    if (next >= 0) return top;
    if (next == SD_GSTATE_ERROR) {
        if (err) *err = *sd_gmatch_error(m);
        return -2;
    }
    int32_t best_ids[TRY_BEST];
    int nb = top_n(row, n_vocab, TRY_BEST, best_ids);
    for (int i = 1; i < nb; i++) { /* best_ids[0] is top, refused */
        next = sd_gmatch_token(m, state, best_ids[i]);
        if (next >= 0) return best_ids[i];
        if (next == SD_GSTATE_ERROR) {
            if (err) *err = *sd_gmatch_error(m);
            return -2;
        }
    }
    const uint32_t *mask = sd_gmatch_mask(m, state, err);
    if (!mask) return -2;
    int32_t best = -1;
    for (int32_t i = 0; i < n_vocab; i++)
        if (allowed(mask, i) && (best < 0 || row[i] > row[best])) best = i;
    return best;
}

static sd_status constrain_mask_row(sd_gmatch *m, int32_t state, float *row, int32_t n_vocab, sd_err *err) {
    if (state == -3) return SD_OK;
    const uint32_t *mask = sd_gmatch_mask(m, state, err);
    if (!mask) return err ? err->code : SD_ERR_UNSUPPORTED;
    for (int32_t i = 0; i < n_vocab; i++)
        if (!allowed(mask, i)) row[i] = -INFINITY;
    return SD_OK;
}

static int constrain_draft(sd_gmatch *m, int32_t g0, const int32_t *draft, int K, int32_t *state, sd_err *err) {
    state[0] = g0;
    for (int i = 1; i <= K; i++) {
        int32_t s = sd_gmatch_token(m, state[i - 1], draft[i - 1]);
        int any = s >= 0 ? sd_gmatch_any(m, s) : 0;
        if (s == SD_GSTATE_ERROR || any < 0) {
            if (err) *err = *sd_gmatch_error(m);
            return -1;
        }
        if (s < 0 || !any) return i - 1;
        state[i] = s;
    }
    return K;
}

int32_t sd_constrain_committed(sd_gmatch *m, const int32_t *state, const int32_t *draft, int j, int K) {
#ifdef SD_TEST_MUTANTS
    if (sd_grammar_mutant == SD_GMUT_ADVANCE_REJECTED && j < K) {
        int32_t s = sd_gmatch_token(m, state[j], draft[j]);
        if (s >= 0) return s;
    }
#else
    (void)m, (void)draft, (void)K;
#endif
    return state[j];
}

static void constrain_mask_q(sd_gmatch *m, const int32_t *state, int K, float *q, int32_t n_vocab) {
#ifdef SD_TEST_MUTANTS
    if (sd_grammar_mutant == SD_GMUT_UNMASKED_Q) return;
#endif
    for (int i = 0; i < K; i++) {
        float *row = q + (size_t)i * (size_t)n_vocab;
        const uint32_t *mask = sd_gmatch_mask(m, state[i], NULL);
        if (!mask) continue;
        double sum = 0;
        for (int32_t t = 0; t < n_vocab; t++) {
            if (!allowed(mask, t)) row[t] = 0;
            sum += row[t];
        }
        if (sum > 0)
            for (int32_t t = 0; t < n_vocab; t++) row[t] = (float)(row[t] / sum);
    }
}

/* The entry points: each adds its wall time to the matcher's counter
 * (sd_gmatch_seconds), which the decode loop reports as the grammar's cost. */

int32_t sd_constrain_argmax(sd_gmatch *m, int32_t state, const float *row, int32_t n_vocab, sd_err *err) {
    double t0 = sd_now_s();
    int32_t t = constrain_argmax(m, state, row, n_vocab, err);
    sd_gmatch_add_seconds(m, sd_now_s() - t0);
    return t;
}

sd_status sd_constrain_mask_row(sd_gmatch *m, int32_t state, float *row, int32_t n_vocab, sd_err *err) {
    double t0 = sd_now_s();
    sd_status st = constrain_mask_row(m, state, row, n_vocab, err);
    sd_gmatch_add_seconds(m, sd_now_s() - t0);
    return st;
}

int sd_constrain_draft(sd_gmatch *m, int32_t g0, const int32_t *draft, int K, int32_t *state, sd_err *err) {
    double t0 = sd_now_s();
    int kept = constrain_draft(m, g0, draft, K, state, err);
    sd_gmatch_add_seconds(m, sd_now_s() - t0);
    return kept;
}

void sd_constrain_mask_q(sd_gmatch *m, const int32_t *state, int K, float *q, int32_t n_vocab) {
    double t0 = sd_now_s();
    constrain_mask_q(m, state, K, q, n_vocab);
    sd_gmatch_add_seconds(m, sd_now_s() - t0);
}
