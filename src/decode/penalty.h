/* Repetition penalties and logit bias on a verify row (docs/LIBRARY.md
 * "Penalties and logit bias"). A row's penalties depend on the text before
 * it, so under speculation row i of a round is penalised with the counts of
 * the committed text plus the draft prefix d_1..d_i (its own path in a token
 * tree), never the committed text alone: then every row is bitwise what
 * plain decoding computes at that position and speculation stays lossless.
 *
 * Order on one row, before the grammar mask (which sets refused tokens to
 * -inf; every step below keeps -inf at -inf, so the two commute), and before
 * temperature, top-k, top-p, min-p:
 *   1. logit bias: logit += bias; a bias of -100 (the lowest allowed) bans
 *      the token (-inf), as OpenAI documents -100 ("should result in a ban").
 *   2. repeat penalty, llama.cpp's formula (src/llama-sampler.cpp,
 *      llama_sampler_penalties_apply): a token seen in the last
 *      repeat_last_n tokens of prompt + generated text (llama-server feeds
 *      the prompt to its sampler too) gets logit * r when logit <= 0, logit / r
 *      otherwise.
 *   3. frequency and presence penalties, OpenAI's formula (API reference,
 *      "frequency and presence penalties"): logit -= c * frequency +
 *      (c > 0) * presence, c = how often the token was generated so far
 *      (the prompt does not count). */
#ifndef SD_DECODE_PENALTY_H
#define SD_DECODE_PENALTY_H

#include <stdbool.h>
#include <stdint.h>

typedef struct sd_logit_bias {
    int32_t token;
    float bias; /* [-100, 100]; -100 bans */
} sd_logit_bias;

typedef struct sd_penalties {
    float presence, frequency; /* OpenAI's, over generated tokens; 0 = off */
    float repeat;              /* llama.cpp's repeat penalty; 1 = off */
    int32_t repeat_last_n;     /* its window: 0 = off, -1 = the whole text */
    const sd_logit_bias *bias; /* borrowed; n_bias entries, ids < n_vocab */
    int32_t n_bias;
} sd_penalties;

/* Whether p changes any logit (NULL: no). */
bool sd_penalties_active(const sd_penalties *p);

/* What one round needs to penalise its rows: the committed text hist[0..n_hist)
 * of which hist[0..n_prompt) is the prompt, and a count scratch of n_vocab
 * zeros (left zero on return). */
typedef struct sd_rowpen {
    const sd_penalties *p;
    const int32_t *hist;
    int32_t n_hist, n_prompt;
    int32_t *count;
} sd_rowpen;

/* Penalises row[n_vocab] in place as the prediction after the text
 * hist + ext[0..n_ext) (ext: the draft prefix before this row). rp NULL or
 * inactive: nothing. Token ids outside [0, n_vocab) are skipped. */
void sd_penalty_row(const sd_rowpen *rp, const int32_t *ext, int32_t n_ext, float *row, int32_t n_vocab);

/* Test-only mutants (SD_TEST_MUTANTS builds of penalty.c). 0 = none. */
enum {
    SD_PMUT_NONE = 0,
    SD_PMUT_COMMITTED_ONLY, /* counts from the committed text only, the draft prefix ignored */
    SD_PMUT_SHORT_PREFIX,   /* the draft prefix one token short (row i sees d_1..d_{i-1}) */
};
extern int sd_penalty_mutant;

#endif
