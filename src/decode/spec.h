/* The decode loop: plain decoding (no drafter) or lossless speculative
 * decoding through any sd_drafter, with the fused verify round of ARCHITECTURE.md §1
 * (greedy) and speculative sampling of §6 (temperature > 0), plus the
 * hit-rate gate of §3. */
#ifndef SD_DECODE_SPEC_H
#define SD_DECODE_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "decode/drafter.h"
#include "decode/lm.h"
#include "decode/logprob.h"
#include "decode/penalty.h"
#include "grammar/grammar.h"

/* Sampling settings. temp <= 0 means greedy (argmax, first index on ties). */
typedef struct sd_sampling {
    float temp;
    int32_t top_k;  /* 0 = off */
    float top_p;    /* 1 = off */
    float min_p;    /* 0 = off */
    uint64_t seed;
} sd_sampling;

struct sd_rng;
/* The speculative-sampling acceptance rule for one draft token d (ARCHITECTURE.md
 * §6): p[n_vocab] the target's distribution, q[n_vocab] the drafter's (NULL =
 * one-hot at d). Returns -1 to accept d, else the replacement token. scratch
 * has n_vocab floats. The default is sd_accept_speculative (verify.c); tests
 * plug in broken rules to show the statistics can tell. */
typedef int32_t (*sd_accept_rule)(const float *p, const float *q, int32_t d, int32_t n_vocab,
                                  struct sd_rng *rng, float *scratch);

typedef struct sd_spec_params {
    int32_t n_predict;   /* tokens to generate at most */
    int32_t draft_max;   /* K: most tokens proposed per round */
    bool adaptive_k;     /* start rounds at K=1, double on full acceptance, halve on zero */
    int32_t gate_misses; /* G: zero-accept rounds in a row that close the gate (0 = never) */
    int32_t gate_probe;  /* while closed, plain steps between probes of a costly drafter */
    int32_t n_batch;     /* most rows per prefill forward */
    bool stop_at_eog;    /* stop after an end-of-generation token (see is_eog) */
    bool (*is_eog)(void *user, int32_t token);
    sd_sampling sampling;
    sd_accept_rule accept; /* NULL = sd_accept_speculative */
    /* Prefix reuse: the lm's state already holds prompt[0..n_past) (a
     * previous call's KV cache); only prompt[n_past..] is prefilled. 0 <=
     * n_past < n_prompt (the last prompt token's logits are needed). The
     * result is the same as with n_past 0, as the forward is batch invariant
     * (ARCHITECTURE.md §5). Default 0. */
    int32_t n_past;
    /* Token trees (decode/tree.h, ARCHITECTURE.md §7): 0 = off (chains). Else a
     * drafter with candidates (propose_top) on an lm with forward_tree
     * drafts a chain of K as usual plus up to tree_width - 1 siblings of
     * each chain token (its next-best candidates, level 1 first), at most
     * tree_nodes draft nodes in all (K <= tree_nodes < SD_TREE_MAX and
     * < n_batch), verified in one tree forward. Otherwise chains. */
    int32_t tree_nodes;
    int32_t tree_width; /* 1..8 candidates per level (1 = a chain) */
    /* If not NULL, called instead of the sd_token_cb with each committed
     * token and whether it was an accepted draft token (a0, the target's own
     * pick, is not); return false to stop early. */
    bool (*commit_cb)(void *user, int32_t token, bool from_draft);
    /* If not NULL, polled before each prefill chunk and each decode step;
     * true stops the generation there (no error; a prefill cut short leaves
     * the lm holding a prefix of the prompt and generates nothing). */
    bool (*abort)(void *user);
    /* If not NULL, the cost the gate learns for a target forward of S rows
     * that took `seconds` of wall clock (a request served in a batch: its
     * share of the batched step, docs/BATCHING.md); NULL: the wall clock. */
    double (*forward_cost)(void *user, int32_t S, double seconds);
    /* Constrained decoding (docs/GRAMMAR.md): NULL = off. Else every generated token is one the
     * grammar allows after the tokens generated before it (the prompt is not
     * constrained): the matcher's state starts at sd_gmatch_start and every
     * verify row is masked with its draft-path state before the sampling
     * filters, so the output is bitwise what constrained plain decoding
     * gives, with any drafter. Generation also stops where the grammar
     * allows no token (e.g. accepted with no end-of-generation token left).
     * The matcher is borrowed and used by this call only (one thread). */
    sd_gmatch *grammar;
    /* With a grammar: where it forces text (the only continuation, e.g.
     * `"town": "` after `{`), propose the tokenizer's encoding of that text
     * instead of asking the drafter; with drafter NULL, the only drafts. */
    bool grammar_draft;
    /* Repetition penalties and logit bias (decode/penalty.h): NULL or
     * inactive = none. Every row is penalised with the counts of the text
     * before it, along the draft path in a verify round, so the output is
     * bitwise what penalised plain decoding gives, with any drafter.
     * Borrowed for the call. */
    const sd_penalties *penalties;
    /* Log-probabilities (decode/logprob.h): NULL = off. Else logprobs[i]
     * receives the i-th generated token's (capacity n_predict + 1), filled
     * before that token is committed (so commit_cb can read it), with
     * top_logprobs (0..SD_TOP_LOGPROBS_MAX) alternatives. Constrained rows
     * are then masked in full also when greedy, which picks the same token. */
    sd_token_lp *logprobs;
    int32_t top_logprobs;
} sd_spec_params;

/* Defaults: n_predict 128, draft_max 8, adaptive K, gate_misses 4,
 * gate_probe 16, n_batch 64, greedy, stop at EOG. */
sd_spec_params sd_spec_default_params(void);

#define SD_STATS_GATE_N 17 /* c_v(S) and acceptance per position reported for 1..16 */

typedef struct sd_spec_stats {
    int64_t n_prompt, n_gen;
    int64_t rounds;          /* verify rounds (target forwards with >= 1 draft token) */
    int64_t drafted;         /* draft tokens sent to verification */
    int64_t accepted;        /* of those, accepted */
    int64_t target_forwards; /* all target forwards after prefill (plain steps included) */
    int64_t draft_forwards;  /* forwards of a draft model, if any */
    int64_t gate_closed_steps; /* plain steps taken because the gate was closed */
    int64_t tree_rounds;       /* rounds verified as a token tree (their drafted counts every node) */
    int64_t probes, probe_hits; /* shadow probes while closed, and how many would have hit */
    int64_t forced_rounds;      /* rounds whose draft was text the grammar forced */
    int64_t grammar_cut;        /* draft tokens dropped because the grammar refused them */
    bool grammar_end;           /* generation ended where the grammar allowed no token */
    bool gate_open;             /* the gate's state at the end (false without a drafter) */
    double t_prefill_s, t_decode_s;
    /* where t_decode_s went: the drafter (proposals and probes), verify
     * rounds (the target forward with its rollback), plain steps (the
     * target forward of a0 alone) */
    double t_draft_s, t_rounds_s, t_plain_s;
    /* With a grammar: the time spent constraining (masks, masked argmaxes,
     * draft-path states, q masks, advancing the committed state:
     * sd_gmatch_seconds) in all, and the part
     * inside verify rounds (part of t_rounds_s); full masks computed (a trie
     * walk each; the others came from the per-state cache or were not needed). */
    double t_grammar_s, t_grammar_rounds_s;
    int64_t grammar_masks;
    /* The speedup model at the end (gate.h): the K it would draft next (0:
     * closed, or t(1) unknown), r = the drafter's cost per drafted token (per
     * block for a block drafter) in target steps, c_v(S) at index S =
     * 1..SD_STATS_GATE_N - 1 (measured or extrapolated; 0 unknown), and a
     * block drafter's acceptance at block position i over the whole call
     * (i-th drafts that matched where drafts 1..i-1 did; 0 otherwise). */
    int32_t gate_k;
    double gate_r;
    double gate_cv[SD_STATS_GATE_N], gate_accept[SD_STATS_GATE_N];
} sd_spec_stats;

/* Called with each committed token in order; return false to stop early.
 * The stats passed to sd_spec_generate are updated in place as the decode
 * goes (rounds, drafted, accepted before a round's tokens are committed);
 * n_gen and the times are set at the end. */
typedef bool (*sd_token_cb)(void *user, int32_t token);

/* Generates up to p->n_predict tokens after prompt[n_prompt] (n_prompt >= 1)
 * on an lm whose state holds exactly p->n_past tokens (empty by default). drafter NULL = plain decoding.
 * out (capacity p->n_predict) receives the tokens, *n_out their count.
 * Errors: SD_ERR_CONTEXT when the prompt does not fit n_ctx (generation also
 * stops, without error, when the context is full), SD_ERR_ARG, forward errors. */
sd_status sd_spec_generate(sd_lm *target, sd_drafter *drafter, const int32_t *prompt,
                           int32_t n_prompt, const sd_spec_params *p, sd_token_cb cb, void *user,
                           int32_t *out, int32_t *n_out, sd_spec_stats *stats, sd_err *err);

#endif
