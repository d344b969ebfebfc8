/* Internal to src/model: the hidden-state hook of a context (model.h
 * sd_context_request_hidden has the contract): for every position a forward
 * runs, one row of n * n_embd floats, [h(ids[0]) | h(ids[1]) | ...], stored
 * per absolute position. Rows past the length are stale until a forward
 * rewrites them, so a rollback needs nothing and nothing is ever pending
 * (no reset_pending); a kept tree path moves its rows (sd_hidden_hook_move_row). */
#ifndef SD_MODEL_MEMORY_HIDDEN_HOOK_H
#define SD_MODEL_MEMORY_HIDDEN_HOOK_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "model/model.h"

typedef struct sd_hidden_hook {
    int32_t n_ctx, n_embd;
    int n;                          /* number of layer ids (0: off) */
    int32_t ids[SD_HIDDEN_MAX_IDS];
    float *rows;                    /* [n_ctx][n * n_embd], NULL when off */
} sd_hidden_hook;

/* An empty hook for n_ctx positions of n_embd floats (allocates nothing). */
void sd_hidden_hook_build(sd_hidden_hook *h, int32_t n_ctx, int32_t n_embd);
void sd_hidden_hook_free(sd_hidden_hook *h);
/* Its rows resident now, when it stores any (memory.h sd_memory_commit). */
void sd_hidden_hook_commit(sd_hidden_hook *h);
/* Stores layer_ids[n_ids] (each in 0..n_layer) from now on; model.h
 * sd_context_request_hidden has the contract and messages. */
sd_status sd_hidden_hook_request(sd_hidden_hook *h, const int32_t *layer_ids, int n_ids, int32_t n_layer,
                                 sd_err *err);
/* Whether the hook stores exactly layer_ids[n_ids], in that order. */
bool sd_hidden_hook_is(const sd_hidden_hook *h, const int32_t *layer_ids, int n_ids);
/* The row of position pos (0 <= pos < n_ctx), NULL when off. */
float *sd_hidden_hook_row(const sd_hidden_hook *h, int32_t pos);
/* The row of position `from` copied to `to` (a kept tree node); nothing when off. */
void sd_hidden_hook_move_row(sd_hidden_hook *h, int32_t from, int32_t to);

#endif
