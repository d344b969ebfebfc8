/* A drafter proposes tokens that continue the committed context; the target
 * verifies them (ARCHITECTURE.md §1, §3). Drafters never affect correctness, only
 * speed: every proposal is checked by the target.
 *
 * Implementations: n-gram prompt lookup (drafter_ngram.c), a draft model
 * behind an sd_lm (drafter_model.c), an EAGLE-3 head over the target's hidden
 * states (drafter_eagle3.c), a qwen35 target's own MTP block (drafter_mtp.c)
 * — both on one chain-drafting core (drafter_head.c) — a DFlash block
 * drafter (drafter_dflash.c), suffix drafting
 * over the context and a cross-request memory (drafter_suffix.c), and
 * "auto", n-gram where it hits and the costly drafter (head or draft model)
 * otherwise (drafter_auto.c). */
#ifndef SD_DECODE_DRAFTER_H
#define SD_DECODE_DRAFTER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "decode/lm.h"

typedef struct sd_sampling sd_sampling;
typedef struct sd_suffix_cache sd_suffix_cache;

typedef struct sd_drafter {
    const char *name; /* "ngram", "draft", "auto", ... */
    void *self;
    /* Proposing runs a model (a draft model): the hit-rate gate probes it
     * only now and then. False for n-gram lookup, which is free. */
    bool costly;
    /* Proposals are sampled (a draft model at temperature > 0): propose fills
     * q with their distributions. False = deterministic, q is one-hot. */
    bool stochastic;
    /* A block drafter (DFlash): one forward yields up to `block` drafts
     * whatever k is asked for, so the decode loop asks for all of them,
     * verifies the first K the speedup model picks (gate.h block mode) and
     * scores every row against the tokens committed later (its acceptance
     * per position). 0 for drafters that pay per drafted token. */
    int32_t block;
    /* Block drafters behind another (auto): whether the last proposal came
     * from the block forward (true) or from elsewhere (a free lookup). NULL:
     * every proposal of a block drafter does. */
    bool (*last_was_block)(void *self);
    /* Coupled drafting at temperature > 0, for deterministic drafters that
     * run a model (draft model, MTP and EAGLE-3 heads); May be NULL. The
     * decode loop calls it at the start of every generation with the
     * target's sampling (copied; NULL = greedy: argmax proposals). The
     * drafter then proposes, for the token at absolute position pos, the
     * draw from its OWN distribution under those settings by the exponential
     * race with the key of (seed, pos): the race plain sampling runs there
     * over the target's distribution (sampler.h sd_sampler_pick_at, sd_race_pick).
     * Both races share every token's noise, so they pick one token with
     * probability >= (1 - TV) / (1 + TV) of the two distributions — far more
     * often than the target's sample equals the draft's argmax (p(argmax q)),
     * and 1 when they are equal. From Daliri, Musco & Suresh, "Coupling
     * without communication and drafter-invariant speculative decoding"
     * (2024). Verification is as for any deterministic draft: byte-identical
     * to plain sampling. */
    void (*couple)(void *self, const sd_sampling *s);
    /* Forgets everything learned from a previous generation. May be NULL. */
    void (*reset)(void *self);
    /* Proposes up to k tokens continuing ctx[0..n) — the committed tokens
     * INCLUDING a0 (ARCHITECTURE.md §1: propose past a0). Writes them to out[k] and,
     * if stochastic, their distributions to q[k][n_vocab]. Returns how many
     * (0 = no proposal), or -1 with err set. */
    int (*propose)(void *self, const int32_t *ctx, int32_t n, int k, int32_t *out, float *q,
                   sd_err *err);
    /* Tree drafting (decode/tree.h): as propose, a chain of up to k tokens,
     * but always the drafter's best guess (deterministic, also where propose
     * samples), and per chain step its w best tokens, best first, in
     * cand[k][w] (cand[i][0] = chain token i; -1 where there are fewer).
     * Returns the chain length (0 = no proposal), or -1 with err set. NULL:
     * the drafter has no candidates to offer; the loop then drafts chains. */
    int (*propose_top)(void *self, const int32_t *ctx, int32_t n, int k, int w, int32_t *cand, sd_err *err);
    /* A drafter that is costly but also has a free source (auto: its n-gram
     * lookup): proposes up to k tokens from the free source alone, as propose
     * does (q one-hot if stochastic). The decode loop uses it while the
     * hit-rate gate has stopped the costly source, under a gate of its own.
     * NULL otherwise. */
    int (*propose_free)(void *self, const int32_t *ctx, int32_t n, int k, int32_t *out, float *q,
                        sd_err *err);
    /* Processes the prompt ctx[0..n) ahead of the first proposal (a draft
     * model's prefill), so that cost lands in the prefill, not in the first
     * decode round. Returns 0, or -1 with err set. May be NULL. */
    int (*prefill)(void *self, const int32_t *ctx, int32_t n, sd_err *err);
    /* A costly drafter's one-token guess for the gate's shadow probes, where
     * it may be approximate to be cheap (a draft model far behind the
     * committed context feeds only the last few tokens instead of catching
     * up on all of them): probes only estimate α, they never reach the
     * output. Returns 0 or 1, or -1 with err set. May be NULL (then the
     * gate's model probes use propose). */
    int (*guess)(void *self, const int32_t *ctx, int32_t n, int32_t *out, sd_err *err);
    /* Free proposal of one token (a lookup, no model forward) for the gate's
     * shadow probes; returns 0 or 1. NULL if the drafter has none. */
    int (*probe)(void *self, const int32_t *ctx, int32_t n, int32_t *out);
    /* After verification: the committed context is now ctx[0..n) (not yet
     * including the next a0), of which n_accepted tokens came from the last
     * proposal. May be NULL. */
    void (*accepted)(void *self, const int32_t *ctx, int32_t n, int n_accepted);
    /* Forwards of a draft model so far, for the stats (0 for n-gram). */
    int64_t (*n_forwards)(void *self);
    void (*free)(void *self);
} sd_drafter;

/* Frees d's implementation (d itself is the caller's). NULL-safe. */
void sd_drafter_free(sd_drafter *d);

/* ---- n-gram prompt lookup (drafter_ngram.c) ----
 * The last m tokens of the context, m = ngram_max down to ngram_min, are
 * looked up in the context before them (prompt + generated); the
 * continuation of their most recent earlier occurrence is the draft (continued
 * periodically past the end of the context: a repeating span drafts K). A hash
 * index over every m-gram is updated as the context grows, so a lookup costs
 * O(ngram_max + k), not a scan. Errors: SD_ERR_ARG (1 <= ngram_min <=
 * ngram_max <= 8 required), SD_ERR_NOMEM. */
sd_status sd_drafter_ngram_init(sd_drafter *d, int ngram_min, int ngram_max, sd_err *err);

/* ---- draft model (drafter_model.c) ----
 * A smaller model with the target's vocabulary, behind its own sd_lm (own
 * KV cache; not owned, must outlive the drafter). Its state only ever holds
 * committed tokens plus its own last proposals: each propose rolls it back to
 * the longest prefix it shares with the committed context, catches up with
 * one batched forward, and then proposes k tokens one forward each — greedy
 * (argmax) when sampling is NULL or greedy (coupled draws while the decode
 * loop couples it at temperature > 0: couple above), else drawn from the
 * sampler's distribution with the drafter's own generator (seed ^ a
 * constant) and reported as q. n_batch bounds the catch-up forward's rows. The caller checks
 * the vocabularies match (sd_lm_check_same_vocab). Errors: SD_ERR_ARG,
 * SD_ERR_NOMEM. */
sd_status sd_drafter_model_init(sd_drafter *d, sd_lm *draft, const sd_sampling *sampling,
                                int32_t n_batch, sd_err *err);

/* ---- EAGLE-3 head (drafter_eagle3.c) ----
 * A one-layer head (model/model.h, architecture eagle3) over the target's
 * hidden states: asks target (the target's context, borrowed; must outlive
 * the drafter) for the rows of the head's target_layers, and drafts a chain
 * of up to k tokens (the head's argmax, mapped through d2t; coupled draws
 * over the target's ids at temperature > 0: couple above; the drafter is
 * deterministic at any temperature), one head step per token. Its
 * own context (n_ctx as the target's, n_batch rows per catch-up forward,
 * n_threads) rolls back with the target's: each propose keeps the head
 * positions built from rows the target still holds for the same tokens and
 * catches up on the rest in one batched forward. The head borrows nothing
 * else; it must outlive the drafter. Freeing turns the target's hidden-state
 * hook off. Errors: SD_ERR_ARG (head does not fit the target: its message
 * from sd_eagle3_check), SD_ERR_VOCAB (different token lists), SD_ERR_NOMEM. */
sd_status sd_drafter_eagle3_init(sd_drafter *d, const sd_model *head, sd_context *target, int n_threads,
                                 int32_t n_batch, sd_err *err);

/* ---- qwen35 MTP head (drafter_mtp.c) ----
 * The target's own MTP block (model/model.h sd_nextn, sd_mtp_forward) drafts
 * a chain of up to k tokens (argmax, or coupled draws: couple above), one
 * head step per token, feeding its own
 * output back as the next step's hidden (llama.cpp's single-trained-head
 * mode). Asks target (borrowed; must outlive the drafter) for its hidden
 * after output_norm; the head's own context (n_ctx as the target's, n_batch
 * rows per catch-up forward, n_threads) rolls back with the target's as the
 * EAGLE-3 head's does. Freeing turns a hook it set off again. Errors:
 * SD_ERR_UNSUPPORTED (the target has no MTP block), SD_ERR_ARG, SD_ERR_NOMEM. */
sd_status sd_drafter_mtp_init(sd_drafter *d, sd_context *target, int n_threads, int32_t n_batch, sd_err *err);
/* The same with the MTP block of sidecar (borrowed; must outlive the drafter):
 * an mtp_only file (model.h) or any qwen35 file with an MTP block, drafting
 * for a target without one (or instead of its own). The vocabularies must
 * match: the caller checks that once (sd_lm_check_same_vocab, as for a draft
 * model; the API at context init), not every drafter init, which runs per
 * generate call and would compare the whole vocabulary again. Errors as
 * above, plus SD_ERR_ARG (n_embd differs: sd_mtp_check). */
sd_status sd_drafter_mtp_sidecar_init(sd_drafter *d, const sd_model *sidecar, sd_context *target, int n_threads,
                                      int32_t n_batch, sd_err *err);

/* ---- DFlash block drafter (drafter_dflash.c) ----
 * A dflash draft (model/model.h sd_dflash_*, llama.cpp's draft-dflash) over
 * the target's hidden rows at its target_layers: asks target (borrowed; must
 * outlive the drafter) for them, injects the rows of the committed context
 * into its own context (n_ctx as the target's, n_batch rows per inject
 * forward, n_threads), and proposes up to min(k, block - 1, n_batch - 1)
 * tokens from ONE forward of the whole block (sd_drafter.block = block - 1): each row's argmax mapped through d2t, or
 * coupled draws at temperature > 0 (couple above; deterministic either
 * way); tree candidates are each row's w best. Rolls back with the target as
 * the head drafters do. head must outlive the drafter; freeing turns a hook
 * it set off. Errors: SD_ERR_ARG (the draft does not fit the target: its
 * message from sd_dflash_check; n_batch < 2), SD_ERR_VOCAB (different token
 * lists), SD_ERR_NOMEM. */
sd_status sd_drafter_dflash_init(sd_drafter *d, const sd_model *head, sd_context *target, int n_threads,
                                 int32_t n_batch, sd_err *err);

/* ---- suffix drafting (drafter_suffix.c) ----
 * SuffixDecoding's frequency-weighted chain from a suffix trie over the
 * context (prompt + generated) and, when mem is given (borrowed: it must
 * outlive the drafter), from the memory of earlier outputs
 * (suffix_cache.h); the higher-scoring chain wins (a memory chain holding an id
 * outside [0, n_vocab), from a model with another vocabulary, never does). Deterministic and free;
 * offers candidates for token trees. An accepted draft from the memory marks
 * the output it came from used (the memory's LRU order). Errors:
 * SD_ERR_NOMEM. */
sd_status sd_drafter_suffix_init(sd_drafter *d, sd_suffix_cache *mem, int32_t n_vocab, sd_err *err);

/* ---- auto (drafter_auto.c) ----
 * n-gram first (it is free and wins on extractive spans); when it has no
 * match, the draft model if one is given. Takes ownership of both drafters
 * (draft may be NULL: then it behaves as n-gram alone; both are emptied).
 * n_vocab sizes the one-hot q rows of n-gram proposals. */
sd_status sd_drafter_auto_init(sd_drafter *d, sd_drafter *ngram, sd_drafter *draft, int32_t n_vocab,
                               sd_err *err);
/* Puts the free drafter first (suffix drafting over a cross-request memory)
 * ahead of auto d's n-gram lookup: its proposal when it has one, else the
 * n-gram's. Takes ownership of first (emptied). */
void sd_drafter_auto_put_first(sd_drafter *d, sd_drafter *first);

#endif
