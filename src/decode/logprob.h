/* Log-probabilities of generated tokens (docs/LIBRARY.md "Log-probabilities"):
 * for each committed token, log softmax of the row it was picked from, after
 * the logit bias, the penalties and the grammar mask, before temperature and
 * the top-k / top-p / min-p filters; and the n_top most likely tokens of that
 * row. Computed from the verify row (or the plain step's row), which is
 * bitwise the single-step row (ARCHITECTURE.md §5), so the values are the
 * same with speculation on and off. */
#ifndef SD_DECODE_LOGPROB_H
#define SD_DECODE_LOGPROB_H

#include <stdint.h>

#define SD_TOP_LOGPROBS_MAX 20

typedef struct sd_token_lp {
    int32_t token;
    float logprob; /* <= 0; -inf only for a token the row refuses (never a picked one) */
    int32_t n_top; /* entries in top_*: min(asked, tokens with a finite logprob) */
    int32_t top_token[SD_TOP_LOGPROBS_MAX]; /* most likely first; ties: lower id first */
    float top_logprob[SD_TOP_LOGPROBS_MAX];
} sd_token_lp;

/* Fills *out for token picked from row[n_vocab] (after penalties and mask),
 * with the n_top (0..SD_TOP_LOGPROBS_MAX) best tokens. Tokens at -inf are
 * never listed. One pass for the sum and one for the best tokens; the sum
 * runs in index order in double, so the result is a pure function of the row. */
void sd_logprob_row(const float *row, int32_t n_vocab, int32_t token, int32_t n_top, sd_token_lp *out);

#endif
