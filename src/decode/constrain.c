/* Grammar masks on verify rows; see constrain.h. */
#include "decode/constrain.h"

#include <math.h>

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

int32_t sd_constrain_argmax(sd_gmatch *m, int32_t state, const float *row, int32_t n_vocab, sd_err *err) {
    int32_t top = sd_argmax(row, n_vocab);
    if (state == -3) return top; /* a mutant's unmasked row */
    int32_t next = sd_gmatch_token(m, state, top);
    if (next >= 0) return top;
    if (next == SD_GSTATE_ERROR) {
        if (err) *err = *sd_gmatch_error(m);
        return -2;
    }
    const uint32_t *mask = sd_gmatch_mask(m, state, err);
    if (!mask) return -2;
    int32_t best = -1;
    for (int32_t i = 0; i < n_vocab; i++)
        if (allowed(mask, i) && (best < 0 || row[i] > row[best])) best = i;
    return best;
}

sd_status sd_constrain_mask_row(sd_gmatch *m, int32_t state, float *row, int32_t n_vocab, sd_err *err) {
    if (state == -3) return SD_OK;
    const uint32_t *mask = sd_gmatch_mask(m, state, err);
    if (!mask) return err ? err->code : SD_ERR_UNSUPPORTED;
    for (int32_t i = 0; i < n_vocab; i++)
        if (!allowed(mask, i)) row[i] = -INFINITY;
    return SD_OK;
}

int sd_constrain_draft(sd_gmatch *m, int32_t g0, const int32_t *draft, int K, int32_t *state, sd_err *err) {
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

void sd_constrain_mask_q(sd_gmatch *m, const int32_t *state, int K, float *q, int32_t n_vocab) {
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
