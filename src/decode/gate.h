/* The hit-rate gate (DESIGN.md §3) and the draft length K of the next round.
 *
 * A verify round that accepts nothing costs c_v(K+1) - 1 target steps more
 * than a plain step. On a compute-bound model c_v(9) is near 3, so at α ≈ 0
 * the gate has to find out cheaply and stop drafting:
 * - K starts at 1, doubles after a fully accepted round, halves after a
 *   zero-accept one (adaptive_k), so a miss costs c_v(2) - 1, not c_v(9) - 1.
 * - After G zero-accept rounds in a row the gate closes: plain steps only.
 *   A free drafter (n-gram) on probation — at the start, and after each
 *   reopening — closes on its first miss: it can be re-opened for free.
 * - While closed, the gate probes in the shadow of the plain steps: the
 *   drafter proposes one token, and the plain step's own result says whether
 *   it would have been accepted, at no target cost. A free drafter is probed
 *   at every step; a costly one (draft model) every `interval` steps, the
 *   interval doubling after each miss (up to 8 × gate_probe). Two free hits
 *   in a row, or one model-probe hit, reopen the gate. */
#ifndef SD_DECODE_GATE_H
#define SD_DECODE_GATE_H

#include <stdbool.h>
#include <stdint.h>

#include "decode/spec.h"

typedef struct sd_gate {
    int32_t k_max, misses_to_close, probe0;
    bool adaptive, costly;
    bool open, probation;
    int32_t k, misses;
    int32_t interval, since_probe, streak;
} sd_gate;

void sd_gate_init(sd_gate *g, const sd_spec_params *p, bool costly_drafter);
/* Draft length for the next round: 0 when the gate is closed. */
int32_t sd_gate_k(const sd_gate *g);
/* After a verify round that sent k draft tokens and accepted j. */
void sd_gate_round(sd_gate *g, int32_t k, int32_t j);
/* At a plain step while closed: whether to probe, and whether that probe may
 * run the (costly) drafter or only its free lookup. */
bool sd_gate_probe_due(sd_gate *g, bool *may_run_model);
/* The outcome of a shadow probe (ran_model: it ran the costly drafter). */
void sd_gate_probe_result(sd_gate *g, bool hit, bool ran_model);

#endif
