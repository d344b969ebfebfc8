/* The hit-rate gate (ARCHITECTURE.md §3) and the draft length K of the next round.
 *
 * A verify round that accepts nothing costs c_v(K+1) - 1 target steps more
 * than a plain step, plus K·r for a draft model. The gate has to find out
 * cheaply when drafting does not pay and stop:
 * - K starts at 1, doubles after a fully accepted round, halves after a
 *   zero-accept one (adaptive_k), so a miss costs c_v(2) - 1, not c_v(9) - 1.
 * - After G zero-accept rounds in a row the gate closes: plain steps only.
 *   A free drafter (n-gram) on probation — at the start, and after each
 *   reopening — closes on its first miss: it can be re-opened for free.
 * - The speedup model of ARCHITECTURE.md §2 on MEASURED costs: the decode loop
 *   reports how long each target forward over S rows took and how long the
 *   drafter took per proposed token, so the gate knows c_v(S) = t(S) / t(1)
 *   and r = t_draft / t(1) on this machine for this model pair. With α̂, a
 *   decayed estimate of the per-token acceptance, the predicted speedup of a
 *   round of K is E(α̂,K) / (c_v(K+1) + K·r), E = (1 - α̂^(K+1)) / (1 - α̂).
 *   The gate closes when no K predicts a speedup of at least 1, and K is cut
 *   to the best predicted one (so a cliff in c_v(S) is avoided). While the
 *   plain-step time t(1) is unknown, the next step is plain and measures it
 *   (the first step of a decode, unless the caller timed one before).
 * - While closed, the gate probes in the shadow of the plain steps: the
 *   drafter proposes one token, and the plain step's own result says whether
 *   it would have been accepted, at no target cost. A free drafter is probed
 *   at every step; a costly one (draft model) every `interval` steps, the
 *   interval doubling after each miss (up to 8 × gate_probe), and never so
 *   short that probes take more than ~0.5% of the time. Two free hits
 *   in a row, or one model-probe hit, reopen the gate — if the speedup model,
 *   updated with the probes, predicts a gain of at least 5% (hysteresis).
 * G = 0 turns the gate off altogether (every round drafts, K as adaptive_k).
 *
 * A block drafter (DFlash: one draft forward yields a whole block of drafts,
 * drafter.h `block`) is priced per round, not per token, and its acceptance
 * is not one α: its row i is trained to guess further ahead than row i - 1.
 * In block mode (sd_gate_set_block) the gate keeps a decayed acceptance per
 * block position, a_i = P(draft i matches | drafts 1..i-1 matched), fed by
 * sd_gate_position from every block the drafter made (the decode loop scores
 * all its rows against the tokens committed later, verified or not: free),
 * and K is the argmax over 1..min(k_max, block) of
 *   (1 + sum_{i<=K} a_1·...·a_i) / (c_v(K+1) + r),  r = t_block / t(1),
 * the same §2 model with E summed over the measured per-position products
 * and the draft cost paid once per round. adaptive_k does not apply; with G
 * = 0 K stays k_max (a fixed length). */
#ifndef SD_DECODE_GATE_H
#define SD_DECODE_GATE_H

#include <stdbool.h>
#include <stdint.h>

#include "decode/spec.h"

#define SD_GATE_MAX_S 64 /* forwards over more rows are not timed */
#define SD_GATE_MAX_BLOCK 64 /* block positions the gate keeps acceptance for */

typedef struct sd_gate {
    int32_t k_max, misses_to_close, probe0;
    bool adaptive, costly, economic;
    bool open, probation;
    int32_t k, misses;
    int32_t interval, since_probe, streak;
    double hits, trials;               /* decayed acceptance evidence: α̂ = hits / trials */
    double t_fwd[SD_GATE_MAX_S + 1];   /* smoothed seconds of a target forward over S rows, 0 = unseen */
    double t_draft;                    /* smoothed drafter seconds per proposed token, 0 = unseen */
    double t_probe;                    /* smoothed seconds of a model probe, 0 = unseen */
    int32_t block;                     /* block mode: drafts per block forward; 0 = per-token drafter */
    double pos_hits[SD_GATE_MAX_BLOCK + 1], pos_trials[SD_GATE_MAX_BLOCK + 1]; /* [i], i = 1..block */
} sd_gate;

void sd_gate_init(sd_gate *g, const sd_spec_params *p, bool costly_drafter);
/* Draft length for the next round: 0 when the gate is closed, or for one
 * plain step that measures t(1). */
int32_t sd_gate_k(const sd_gate *g);
/* After a verify round that sent k draft tokens and accepted j. */
void sd_gate_round(sd_gate *g, int32_t k, int32_t j);
/* At a plain step while closed: whether to probe, and whether that probe may
 * run the (costly) drafter or only its free lookup. */
bool sd_gate_probe_due(sd_gate *g, bool *may_run_model);
/* The outcome of a shadow probe (ran_model: it ran the costly drafter). */
void sd_gate_probe_result(sd_gate *g, bool hit, bool ran_model);

/* Measured costs, in seconds (wall clock, as the user waits): a target
 * forward over S rows (sampling included), and a drafter's proposal of k
 * tokens (a draft model's catch-up included). Smoothed; a single outlier
 * (the thread was preempted) is clipped to 3x the running estimate. */
void sd_gate_time_forward(sd_gate *g, int32_t S, double seconds);
void sd_gate_time_draft(sd_gate *g, int32_t k, double seconds);
/* A model probe's cost: probes are spaced so they take at most ~0.5% of the
 * decode time (interval >= 200 x t_probe / t(1)), whatever the interval
 * doubling says — on a tiny target a draft-model probe costs about a step. */
void sd_gate_time_probe(sd_gate *g, double seconds);
/* Block mode for a drafter whose one forward yields up to n drafts
 * (n clipped to 1..SD_GATE_MAX_BLOCK; K then never exceeds it): t_draft is
 * per round, K comes from the per-position acceptance (above). */
void sd_gate_set_block(sd_gate *g, int32_t n);
/* Block mode: draft i (1-based) of a block whose drafts 1..i-1 matched the
 * committed text did (hit) or did not match it. Ignored outside block mode
 * or past the block. */
void sd_gate_position(sd_gate *g, int32_t i, bool hit);
/* Block mode: the estimate of a_i in [0, 1] (prior 0.5 worth one trial). */
double sd_gate_accept_at(const sd_gate *g, int32_t i);
/* The K in 1..k_max (block mode: ..min(k_max, block)) with the highest
 * predicted speedup, which goes to *speedup (negative while t(1) is
 * unknown: then K is 1). */
int32_t sd_gate_best_k(const sd_gate *g, double *speedup);
/* The acceptance estimate α̂ in [0, 1]. */
double sd_gate_alpha(const sd_gate *g);
/* c_v(S) from the measured times: t(S) / t(1); an unmeasured S is
 * extrapolated from the nearest measured S' < S at +0.1 per row, or at the
 * measured mean slope (c_v(S') - 1) / (S' - 1) where that is steeper (a
 * mixture-of-experts target, whose window reads the union of its experts).
 * Returns a negative value while t(1) is unknown. */
double sd_gate_cv(const sd_gate *g, int32_t S);
/* ARCHITECTURE.md §2's predicted speedup of a round of k at the current α̂, c_v and
 * r; negative while t(1) is unknown. */
double sd_gate_predicted_speedup(const sd_gate *g, int32_t k);

#endif
