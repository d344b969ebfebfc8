/* One verify round (ARCHITECTURE.md §1 greedy, §6 sampling). Plain decoding is the
 * same round with no draft tokens (K = 0). */
#ifndef SD_DECODE_VERIFY_H
#define SD_DECODE_VERIFY_H

#include <stdint.h>

#include "decode/constrain.h"
#include "decode/lm.h"
#include "decode/sampler.h"
#include "decode/spec.h"

/* What a round decided: j draft tokens accepted (0..K) and the next a0. */
typedef struct sd_verdict {
    int j;
    int32_t next_a0;
} sd_verdict;

/* batch[K+1] = [a0, d1..dK] is forwarded at positions n..n+K (n = lm len);
 * logits has room for (K+1) rows. On return the lm holds n+1+j positions.
 * Greedy (sm->s.temp <= 0): d_t is accepted while d_t == argmax(r_{t-1}) and
 * the next a0 is argmax(r_j). Sampling, deterministic draft (q NULL): d_t is
 * accepted while it equals the target's own pick at position n+t
 * (sd_sampler_pick_at), the next a0 is the first pick that differs or the
 * pick at n+K+1: byte-identical to plain sampling; rule is not used.
 * Sampling, sampled draft (q[K][n_vocab] the drafter's distributions): each
 * d_t goes through rule and the next a0 is the replacement token, or a draw
 * from r_K's distribution when all K pass.
 * scratch: 2 * n_vocab floats. Greedy rounds on an lm with forward_first run the
 * output head in two passes and compute the rows past the first pass only when
 * every draft up to there passed; logits then holds just the rows the round
 * read. rm (NULL or rm->m NULL: unconstrained) gives the grammar state of
 * each row 0..K (the draft-path states g_0..g_K, constrain.h): row i's
 * refused tokens are out before anything reads it (greedy: the masked
 * argmax; sampling: logits set to -inf before temperature and filters), so
 * every accepted draft and the next a0 are allowed tokens; the caller
 * cut the draft before its first refused token. Errors: the lm's forward
 * errors, a grammar bound passed (state unchanged). */
sd_status sd_verify_round(sd_lm *lm, const int32_t *batch, int K, const float *q, float *logits,
                          sd_sampler *sm, sd_accept_rule rule, float *scratch, const sd_rowmask *rm,
                          sd_verdict *v, sd_err *err);

/* The speculative-sampling rule of ARCHITECTURE.md §6 (Leviathan et al. 2023,
 * "Fast Inference from Transformers via Speculative Decoding", Alg. 1):
 * accept d with probability min(1, p(d)/q(d)); on rejection draw from
 * normalize(max(0, p - q)). With q NULL (one-hot at d) that is: accept with
 * probability p(d), else draw from p with d removed. */
int32_t sd_accept_speculative(const float *p, const float *q, int32_t d, int32_t n_vocab,
                              struct sd_rng *rng, float *scratch);

#endif
