/* Synthetic-acceptance drafter, for measuring speculative decoding at a known
 * acceptance rate α on models whose own drafts would never be accepted
 * (random weights, ARCHITECTURE.md §9.3). It proposes the target's own greedy
 * continuation, precomputed by a plain greedy run, with every proposed token
 * independently replaced by a different one with probability 1 − α, decided
 * per reference position from (seed, position) with splitmix64 (the same
 * function as bench/vs-llamacpp/lib.mjs oracleDraft, so both engines of the
 * race see the same draft errors).
 * A round of K proposals then accepts i tokens with P = α^i (1 − α), the model
 * behind E(α, K) = (1 − α^(K+1)) / (1 − α) of ARCHITECTURE.md §2, so measured and
 * predicted speedups can be put side by side.
 *
 * Since the verify loop is lossless and the kernels batch-invariant, the
 * committed text always equals the greedy reference, so the position in the
 * reference is simply the number of generated tokens (n − n_prompt). */
#ifndef SD_BENCH_ORACLE_DRAFTER_H
#define SD_BENCH_ORACLE_DRAFTER_H

#include <stdint.h>

#include "core/status.h"
#include "decode/drafter.h"

/* Fills d with an oracle drafter over greedy[n_greedy] (the tokens a plain
 * greedy run produced after a prompt of n_prompt tokens; copied). alpha in
 * [0, 1]; n_vocab >= 2 (a replacement is drawn uniformly among the other
 * n_vocab − 1 ids); seed fixes the corruption pattern. Free with
 * sd_drafter_free or d->free(d->self). Errors: SD_ERR_ARG, SD_ERR_NOMEM. */
sd_status sd_drafter_oracle_init(sd_drafter *d, const int32_t *greedy, int32_t n_greedy,
                                 int32_t n_prompt, double alpha, int32_t n_vocab, uint64_t seed,
                                 sd_err *err);

/* The same proposals at the cost of a real drafter (ARCHITECTURE.md §2: speedup =
 * E / (draft cost + c_v)): cost->propose runs first with the same arguments
 * (its forwards, and its own state kept in step with the context), then its
 * tokens are replaced by the oracle's. A draft model and an EAGLE-3 head can
 * so be compared at the SAME synthetic α, each paying its real time per
 * drafted token. Takes ownership of *cost (emptied); the drafter is costly
 * and deterministic. Errors as sd_drafter_oracle_init. */
sd_status sd_drafter_oracle_costed_init(sd_drafter *d, const int32_t *greedy, int32_t n_greedy, int32_t n_prompt,
                                        double alpha, int32_t n_vocab, uint64_t seed, sd_drafter *cost,
                                        sd_err *err);

#endif
