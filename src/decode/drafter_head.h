/* The chain-drafting core of the drafters that run a head over the target's
 * hidden rows (drafter_eagle3.c, drafter_mtp.c; ARCHITECTURE.md §7, llama.cpp
 * common/speculative.cpp). Internal to src/decode.
 *
 * Head index P holds the pair (ctx[P+1], g_P), g_P the head's input made
 * from the target's hidden row of position P — "real" pairs, built only from
 * rows the target has run. With the committed context ctx[0..N) (ctx[N-1] =
 * a0, not yet run by the target) the target holds rows 0..N-2, so the real
 * pairs go up to P = N-2 = (a0, g_{N-2}), whose logits give d1. Each further
 * step feeds (d_i, y) at the next index, y the head's own output of the step
 * before. Rollback is a counter, as for the target: the next propose keeps
 * the real pairs whose tokens still match the context and drops the rest
 * (the chained steps always), then catches up on the target's new rows in
 * one batched head forward. */
#ifndef SD_DECODE_DRAFTER_HEAD_H
#define SD_DECODE_DRAFTER_HEAD_H

#include "decode/drafter.h"

/* What differs between heads: the model functions that run one. */
typedef struct sd_head_kind {
    const char *name; /* the drafter's name and its messages' prefix */
    /* g[S][n_embd] from the target's rows[S][n_ids * target n_embd] (may
     * overwrite rows). NULL: the rows are g (one id, n_embd of the head's). */
    void (*encode)(sd_context *hc, float *rows, int32_t S, float *g);
    /* The head over S pairs at the next indices of hc (model.h
     * sd_eagle3_forward's contract; target lends what the head has not). */
    sd_status (*forward)(sd_context *hc, const sd_model *target, const int32_t *tokens, const float *g, int32_t S,
                         float *y, int32_t n_tail, float *logits, sd_err *err);
    /* The target's token id of logits row index id. NULL: id itself. */
    int32_t (*token)(const sd_model *head, int32_t id);
    /* Frees an owned head (sd_drafter_head_init's owned). NULL: none owned. */
    void (*free_head)(sd_model *head);
} sd_head_kind;

/* A drafter of kind over head (borrowed, or owned when owned == head: freed
 * with kind->free_head, also on failure) for the target's context target
 * (borrowed; must outlive the drafter): asks target for the hidden rows of
 * ids[n_ids] unless its hook already stores exactly those (then it is left
 * on at free, else turned off), n_logits = rows of the head's logits. The
 * head's own context has the target's n_ctx, n_batch rows per catch-up
 * forward, n_threads. Errors: SD_ERR_ARG (n_batch < 1, bad ids),
 * SD_ERR_NOMEM. */
sd_status sd_drafter_head_init(sd_drafter *d, const sd_head_kind *kind, const sd_model *head, sd_model *owned,
                               sd_context *target, const int32_t *ids, int n_ids, int32_t n_logits, int n_threads,
                               int32_t n_batch, sd_err *err);

#endif
