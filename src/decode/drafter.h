/* A drafter proposes tokens that continue the committed context; the target
 * verifies them (DESIGN.md §1, §3). Drafters never affect correctness, only
 * speed: every proposal is checked by the target. */
#ifndef SD_DECODE_DRAFTER_H
#define SD_DECODE_DRAFTER_H

#include <stdint.h>

#include "core/status.h"

typedef struct sd_drafter {
    const char *name;  /* "ngram", "draft", "auto", ... */
    void *self;
    /* Proposes up to k tokens continuing ctx[0..n) — the committed tokens
     * INCLUDING a0 (DESIGN.md §1: propose past a0). Writes them to out[k] and
     * returns how many (0 = no proposal). */
    int (*propose)(void *self, const int32_t *ctx, int32_t n, int k, int32_t *out, sd_err *err);
    /* After verification: the committed context is now ctx[0..n), of which
     * n_accepted tokens came from the last proposal. */
    void (*accepted)(void *self, const int32_t *ctx, int32_t n, int n_accepted);
    /* Target forwards spent drafting are not counted here; draft-model
     * forwards are, for the stats. */
    int64_t (*n_forwards)(void *self);
    void (*free)(void *self);
} sd_drafter;

#endif
