/* The decode loop: plain decoding (no drafter) or lossless speculative
 * decoding through any sd_drafter, with the fused verify round of DESIGN.md §1
 * (greedy) and speculative sampling of §6 (temperature > 0), plus the
 * hit-rate gate of §3. */
#ifndef SD_DECODE_SPEC_H
#define SD_DECODE_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "decode/drafter.h"
#include "decode/lm.h"

/* Sampling settings. temp <= 0 means greedy (argmax, first index on ties). */
typedef struct sd_sampling {
    float temp;
    int32_t top_k;  /* 0 = off */
    float top_p;    /* 1 = off */
    float min_p;    /* 0 = off */
    uint64_t seed;
} sd_sampling;

typedef struct sd_spec_params {
    int32_t n_predict;   /* tokens to generate at most */
    int32_t draft_max;   /* K: tokens proposed per round */
    int32_t gate_misses; /* G: zero-accept rounds in a row that close the gate (0 = never) */
    int32_t gate_probe;  /* while closed, plain steps between re-probes */
    bool stop_at_eog;    /* stop after an end-of-generation token (see is_eog) */
    bool (*is_eog)(void *user, int32_t token);
    sd_sampling sampling;
} sd_spec_params;

/* Defaults: n_predict 128, draft_max 8, gate_misses 4, gate_probe 16, greedy. */
sd_spec_params sd_spec_default_params(void);

typedef struct sd_spec_stats {
    int64_t n_prompt, n_gen;
    int64_t rounds;          /* verify rounds (target forwards with >= 1 draft token) */
    int64_t drafted;         /* draft tokens sent to verification */
    int64_t accepted;        /* of those, accepted */
    int64_t target_forwards; /* all target forwards after prefill (plain steps included) */
    int64_t draft_forwards;  /* forwards of a draft model, if any */
    double t_prefill_s, t_decode_s;
} sd_spec_stats;

/* Called with each committed token in order; return false to stop early. */
typedef bool (*sd_token_cb)(void *user, int32_t token);

/* Generates up to p->n_predict tokens after prompt[n_prompt] (n_prompt >= 1)
 * on an lm whose state is empty (len 0). drafter NULL = plain decoding.
 * out (capacity p->n_predict) receives the tokens, *n_out their count.
 * Errors: SD_ERR_CONTEXT when the prompt does not fit n_ctx (generation also
 * stops, without error, when the context is full), SD_ERR_ARG, forward errors. */
sd_status sd_spec_generate(sd_lm *target, sd_drafter *drafter, const int32_t *prompt,
                           int32_t n_prompt, const sd_spec_params *p, sd_token_cb cb, void *user,
                           int32_t *out, int32_t *n_out, sd_spec_stats *stats, sd_err *err);

#endif
