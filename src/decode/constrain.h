/* Constrained decoding in the verify loop (docs/GRAMMAR.md): a grammar state per verify row, masks applied to the
 * logits before any sampling filter, drafts cut before the first token the
 * grammar refuses. Plain decoding is the K = 0 case: row 0 masked with the
 * committed state. */
#ifndef SD_DECODE_CONSTRAIN_H
#define SD_DECODE_CONSTRAIN_H

#include <stdint.h>

#include "core/status.h"
#include "grammar/grammar.h"

struct sd_rowpen;
struct sd_token_lp;
/* The grammar states of one round's rows: state[i] masks row i (the
 * prediction after d_i; row 0 after a0). NULL m: unconstrained. pen (NULL:
 * none) penalises each row before anything reads it, with the counts along
 * the row's own draft path (decode/penalty.h). lp (NULL: none) receives, at
 * lp[i], the log-probabilities of the token picked from row i (at the depth
 * of the node in a tree), with n_top alternatives (decode/logprob.h). */
typedef struct sd_rowmask {
    sd_gmatch *m;
    const int32_t *state;
    const struct sd_rowpen *pen;
    struct sd_token_lp *lp;
    int32_t n_top;
} sd_rowmask;

/* Test-only mutants (SD_TEST_MUTANTS builds of constrain.c): each breaks one
 * rule so a test can show it is caught. 0 = none. */
enum {
    SD_GMUT_NONE = 0,
    SD_GMUT_SKIP_ROW1,     /* row 1 left unmasked */
    SD_GMUT_BONUS_UNMASKED, /* row K of a round with K >= 1 left unmasked */
    SD_GMUT_COMMITTED_STATE, /* every row masked with the committed state g_0 */
    SD_GMUT_ADVANCE_REJECTED, /* the committed state advanced over the first rejected draft too */
    SD_GMUT_UNMASKED_Q,     /* sampled drafts' q not masked */
};
extern int sd_grammar_mutant;

/* The row's state for verify row i of a K-draft round, after any mutant. */
int32_t sd_rowmask_state(const sd_rowmask *rm, int i, int K);

/* Greedy choice at row i: argmax over the tokens M(state) allows (first
 * index on ties, as sd_argmax). The full mask is computed only when the
 * unmasked argmax is refused, which gives the same token. -1 when nothing is
 * allowed; -2 on a grammar error (err set). */
int32_t sd_constrain_argmax(sd_gmatch *m, int32_t state, const float *row, int32_t n_vocab, sd_err *err);

/* Sets the logits of every token M(state) refuses to -infinity. Errors: the
 * matcher's (a state bound passed). */
sd_status sd_constrain_mask_row(sd_gmatch *m, int32_t state, float *row, int32_t n_vocab, sd_err *err);

/* The draft-path states: state[0] = g0, state[i] = advance(state[i-1],
 * draft[i-1]); returns the draft length kept: cut before the first token the
 * grammar refuses or after which no token is allowed (every kept row then
 * has a non-empty mask). -1 on a grammar error. */
int sd_constrain_draft(sd_gmatch *m, int32_t g0, const int32_t *draft, int K, int32_t *state, sd_err *err);

/* The committed state after a round that accepted j of K drafts: state[j]
 * (a rejected draft never advances it). */
int32_t sd_constrain_committed(sd_gmatch *m, const int32_t *state, const int32_t *draft, int j, int K);

/* Masks each of K rows of q[K][n_vocab] (a sampled draft's distributions)
 * with state[0..K) and renormalizes: the law the draft tokens were drawn
 * from, conditioned on the grammar. */
void sd_constrain_mask_q(sd_gmatch *m, const int32_t *state, int K, float *q, int32_t n_vocab);

#endif
