/* Log-probabilities of one row; see logprob.h. */
#include "decode/logprob.h"

#include <math.h>

#include "decode/sampler.h"

void sd_logprob_row(const float *row, int32_t n_vocab, int32_t token, int32_t n_top, sd_token_lp *out) {
    const float mx = row[sd_argmax(row, n_vocab)];
    double sum = 0;
    for (int32_t i = 0; i < n_vocab; i++)
        if (row[i] > -INFINITY) sum += exp((double)row[i] - (double)mx);
    const double lse = (double)mx + log(sum);
    out->token = token;
    out->logprob = row[token] > -INFINITY ? (float)((double)row[token] - lse) : -INFINITY;
    if (n_top > SD_TOP_LOGPROBS_MAX) n_top = SD_TOP_LOGPROBS_MAX;
    /* the n_top best by value, lower id first on ties: an insertion list */
    int k = 0;
    for (int32_t i = 0; i < n_vocab && n_top > 0; i++) {
        if (!(row[i] > -INFINITY)) continue;
        if (k == n_top && !(row[i] > row[out->top_token[n_top - 1]])) continue;
        int j = k < n_top ? k++ : n_top - 1;
        while (j > 0 && row[i] > row[out->top_token[j - 1]]) {
            out->top_token[j] = out->top_token[j - 1];
            j--;
        }
        out->top_token[j] = i;
    }
    out->n_top = k;
    for (int j = 0; j < k; j++) out->top_logprob[j] = (float)((double)row[out->top_token[j]] - lse);
}
