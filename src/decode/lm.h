/* The decode loop's view of a language model: something that appends tokens to
 * its state and returns logits for every one of them, and that can roll its
 * state back to a shorter prefix. The real model (lm_model.c wraps an
 * sd_context) and the model-free oracles of the property tests (a hash model,
 * a Markov model) both sit behind it, so the verify loop under test is the
 * one users run. */
#ifndef SD_DECODE_LM_H
#define SD_DECODE_LM_H

#include <stdint.h>

#include "core/status.h"
#include "model/model.h"

/* What a forward is for. The caller says so (the decode loop knows); an lm
 * whose bookkeeping depends on it (a rollback discipline, lm_hybrid.h) never
 * guesses it from row counts. */
typedef enum sd_lm_use {
    SD_LM_PREFILL = 0, /* the prompt in chunks, or a drafter's catch-up on committed context */
    SD_LM_STEP,        /* one token, a plain step (or a drafter's next proposal) */
    SD_LM_VERIFY,      /* a verify window a0, d1..dK: the round's truncate keeps a0 and the accepted drafts */
} sd_lm_use;

typedef struct sd_lm {
    void *self;
    int32_t n_vocab;
    /* Maximum number of positions (n_ctx). */
    int32_t (*n_ctx)(void *self);
    /* Positions currently held (committed + any speculative rows). */
    int32_t (*len)(void *self);
    /* Appends tokens[S] at positions len..len+S-1 for use; logits[S][n_vocab]
     * out. A target's lm never sees a truncate into a PREFILL or STEP
     * forward (the decode loop keeps them whole); a draft model's lm may be
     * rolled back into any forward. SD_ERR_CONTEXT (state unchanged) if it
     * would pass n_ctx. */
    sd_status (*forward)(void *self, sd_lm_use use, const int32_t *tokens, int32_t S, float *logits, sd_err *err);
    /* As forward, but writes only the logits of the last n_tail rows
     * (logits[n_tail][n_vocab]); prefill and catch-up want one. May be NULL:
     * then callers use forward (sd_lm_forward_tail does). */
    sd_status (*forward_tail)(void *self, sd_lm_use use, const int32_t *tokens, int32_t S, int32_t n_tail,
                              float *logits, sd_err *err);
    /* The greedy verify's two-pass head (always an SD_LM_VERIFY forward) (model.h sd_forward_head): forward_first
     * runs tokens[S] like forward but writes only the logits of the first
     * *n_first rows (1 <= *n_first <= S, the lm's choice: the rows one cheap
     * pass of its output head serves); logits_rest then writes rows
     * *n_first..S-1 to logits[S - *n_first][n_vocab], and must come before any
     * other call. Both NULL when the lm has no cheaper first pass. */
    sd_status (*forward_first)(void *self, const int32_t *tokens, int32_t S, float *logits, int32_t *n_first,
                               sd_err *err);
    sd_status (*logits_rest)(void *self, float *logits, sd_err *err);
    /* Rolls back to n positions (n <= len). An error (a rollback the lm
     * could not carry out: a model that cannot drop positions, a failed
     * restore) is returned, with the lm holding a consistent shorter prefix
     * (possibly empty); the decode loop stops with it. err may be NULL. */
    sd_status (*truncate)(void *self, int32_t n, sd_err *err);
    /* Optional (NULL: no preference): the most tokens the next forward
     * should carry, for an lm whose forward costs the same up to a fixed
     * batch (the window discipline of lm_hybrid.h); the decode loop cuts its
     * draft to that minus one (a plain step when it is 1). */
    int32_t (*max_batch)(void *self);
    /* Optional (NULL: nothing to do): makes the buffers rollbacks use
     * resident now (a hybrid model's snapshot and capture ring, lm_hybrid.h),
     * so that their page faults are not paid inside the first verify rounds.
     * The decode loop calls it after prefill when it has a drafter. */
    void (*warm)(void *self);
    /* Token trees (model.h sd_forward_tree, decode/tree.h), both NULL when
     * the lm has none (a model with recurrent layers: a tree would need one
     * recurrent state per branch). forward_tree appends the S nodes
     * tokens[S], parent[S] (parent[s] in -1..s-1) at slots len..len+S-1, node
     * s at position len + its depth, seeing only its root path; logits[S][n_vocab],
     * each row bitwise its chain's. keep_path then keeps the root path
     * path[m] of that tree at positions len0..len0+m-1 (len0 the length
     * before it); it must come right after forward_tree. */
    sd_status (*forward_tree)(void *self, const int32_t *tokens, const int32_t *parent, int32_t S, float *logits,
                              sd_err *err);
    sd_status (*keep_path)(void *self, const int32_t *path, int32_t m, sd_err *err);
} sd_lm;

/* lm->forward_tail, or lm->forward when it has none: then logits must hold
 * S rows, and the last n_tail of them are moved to its start. */
sd_status sd_lm_forward_tail(sd_lm *lm, sd_lm_use use, const int32_t *tokens, int32_t S, int32_t n_tail,
                             float *logits, sd_err *err);

/* An sd_lm over a model's inference context (lm_model.c). The lm borrows c:
 * nothing to free; c and its model must outlive it. */
void sd_lm_from_context(sd_lm *lm, sd_context *c, const sd_model *m);

/* SD_OK if a draft model can serve target (identical token lists, the check
 * of ARCHITECTURE.md §3), else SD_ERR_VOCAB with a message naming both sizes. */
sd_status sd_lm_check_same_vocab(const sd_model *target, const sd_model *draft, sd_err *err);

#endif
