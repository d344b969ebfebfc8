/* specdec_generate: check the parameters, build this call's drafter, keep the
 * longest cached prefix, run the decode loop (decode/spec.c) with the stream
 * of pieces as its token callback, and optionally the lossless check. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "core/checked.h"
#include "decode/drafter.h"
#include "decode/spec.h"
#include "decode/suffix_cache.h"

specdec_generate_params specdec_generate_default_params(void) {
    return (specdec_generate_params){
        .n_predict = 128,
        .spec = SPECDEC_SPEC_AUTO,
        .draft_max = 8,
        .ngram_min = 1,
        .ngram_max = 3,
        .gate = 4,
        .temperature = 0,
        .top_k = 0,
        .top_p = 1,
        .min_p = 0,
        .seed = 42,
        .stop_at_eog = true,
        .hybrid_window = 9,
        .tree_width = 2,
        .repeat_penalty = 1,
        .repeat_last_n = 64,
        .logprobs = -1,
    };
}

/* One call's state, the user pointer of the decode loop's callbacks. */
typedef struct run {
    specdec_context *c;
    const specdec_generate_params *gp;
    sd_drafter drafter;
    bool has_drafter;
    sd_spec_stats ist; /* the decode loop's counters, updated as it goes */
    specdec_stats pub; /* what the callback and the caller see */
    sd_api_stream stream;
    void *user;   /* the caller's, for gp->abort */
    bool aborted; /* gp->abort said stop */
    struct sd_gmatch *gm; /* gp->grammar's matcher for this call, from its pool */
    sd_penalties pen;  /* the decode loop's view of the penalty fields */
    sd_token_lp *lp;   /* [n_predict + 1] log-probabilities of the output (params.logprobs >= 0), else NULL */
} run;

/* specdec_token_logprob is the decode loop's sd_token_lp, unchanged. */
_Static_assert(sizeof(specdec_token_logprob) == sizeof(sd_token_lp) && SPECDEC_MAX_TOP_LOGPROBS == SD_TOP_LOGPROBS_MAX &&
                   offsetof(specdec_token_logprob, top_logprob) == offsetof(sd_token_lp, top_logprob) &&
                   offsetof(specdec_token_logprob, n_top) == offsetof(sd_token_lp, n_top),
               "specdec_token_logprob and sd_token_lp share one layout");

/* specdec_logit_bias is passed to the decode loop as sd_logit_bias, unchanged. */
_Static_assert(sizeof(specdec_logit_bias) == sizeof(sd_logit_bias) &&
                   offsetof(specdec_logit_bias, token) == offsetof(sd_logit_bias, token) &&
                   offsetof(specdec_logit_bias, bias) == offsetof(sd_logit_bias, bias),
               "specdec_logit_bias and sd_logit_bias share one layout");

/* An MTP block can draft: the sidecar's, else the target's own, unless an
 * EAGLE-3 head is the context's draft. */
static bool mtp_drafts(const specdec_context *c) {
    return c->draft_kind == SD_API_DRAFT_MTP_SIDECAR ||
           (c->draft_kind != SD_API_DRAFT_EAGLE3 && c->model->m->nextn.present);
}

/* The penalties' and the logit bias's ranges (specdec.h). */
static specdec_status check_penalties(const specdec_context *c, const specdec_generate_params *g,
                                      specdec_error *err) {
    if (!(g->presence_penalty >= -2 && g->presence_penalty <= 2))
        return sd_api_fail(err, SPECDEC_ERR_ARG, "presence_penalty must be in [-2, 2]");
    if (!(g->frequency_penalty >= -2 && g->frequency_penalty <= 2))
        return sd_api_fail(err, SPECDEC_ERR_ARG, "frequency_penalty must be in [-2, 2]");
    if (!(g->repeat_penalty > 0 && g->repeat_penalty <= 10))
        return sd_api_fail(err, SPECDEC_ERR_ARG, "repeat_penalty must be in (0, 10]");
    if (g->repeat_last_n < -1) return sd_api_fail(err, SPECDEC_ERR_ARG, "repeat_last_n must be >= -1");
    if (g->logprobs < -1 || g->logprobs > SPECDEC_MAX_TOP_LOGPROBS)
        return sd_api_fail(err, SPECDEC_ERR_ARG, "logprobs must be -1 (off) or in [0, %d]", SPECDEC_MAX_TOP_LOGPROBS);
    if (g->n_logit_bias < 0 || (g->n_logit_bias > 0 && !g->logit_bias))
        return sd_api_fail(err, SPECDEC_ERR_ARG, "n_logit_bias must be >= 0, with logit_bias set");
    for (int32_t i = 0; i < g->n_logit_bias; i++) {
        const specdec_logit_bias *b = &g->logit_bias[i];
        if (b->token < 0 || b->token >= c->tl.lm.n_vocab)
            return sd_api_fail(err, SPECDEC_ERR_ARG, "logit_bias: token %d is not in the vocabulary", b->token);
        if (!(b->bias >= -100 && b->bias <= 100))
            return sd_api_fail(err, SPECDEC_ERR_ARG, "logit_bias: the bias of token %d must be in [-100, 100]",
                               b->token);
    }
    return SPECDEC_OK;
}

static specdec_status check_params(const specdec_context *c, const specdec_generate_params *g, specdec_error *err) {
    if ((unsigned)g->spec > SPECDEC_SPEC_DFLASH)
        return sd_api_fail(err, SPECDEC_ERR_ARG, "unknown spec mode %d", g->spec);
    if (g->spec == SPECDEC_SPEC_GRAMMAR && !g->grammar)
        return sd_api_fail(err, SPECDEC_ERR_ARG, "spec mode grammar needs a grammar (params.grammar)");
    const sd_api_draft dk = c->draft_kind;
    if (g->spec == SPECDEC_SPEC_DRAFT && dk != SD_API_DRAFT_MODEL)
        return sd_api_fail(err, SPECDEC_ERR_ARG, "spec mode draft needs a context with a draft model%s",
                           dk == SD_API_DRAFT_EAGLE3        ? " (it has an EAGLE-3 head: use spec mode eagle3)"
                           : dk == SD_API_DRAFT_MTP_SIDECAR ? " (it has an MTP sidecar: use spec mode mtp)"
                                                            : "");
    if (g->spec == SPECDEC_SPEC_MTP && !mtp_drafts(c))
        return sd_api_fail(err, SPECDEC_ERR_ARG, "spec mode mtp needs a target with an MTP block%s",
                           dk == SD_API_DRAFT_EAGLE3 ? " and no EAGLE-3 head in the context"
                                                     : " (a qwen35 file with nextn_predict_layers = 1) or an MTP sidecar as the draft");
    if (g->spec == SPECDEC_SPEC_EAGLE3 && dk != SD_API_DRAFT_EAGLE3)
        return c->draft ? sd_api_fail(err, SPECDEC_ERR_ARG,
                                      "spec mode eagle3 needs an EAGLE-3 head; the context's draft %s has "
                                      "architecture '%s', not eagle3",
                                      c->draft->path, c->draft->m->hp.arch_name)
                        : sd_api_fail(err, SPECDEC_ERR_ARG, "spec mode eagle3 needs a context with an EAGLE-3 head");
    if (g->spec == SPECDEC_SPEC_DFLASH && dk != SD_API_DRAFT_DFLASH)
        return c->draft ? sd_api_fail(err, SPECDEC_ERR_ARG,
                                      "spec mode dflash needs a DFlash draft; the context's draft %s has "
                                      "architecture '%s', not dflash",
                                      c->draft->path, c->draft->m->hp.arch_name)
                        : sd_api_fail(err, SPECDEC_ERR_ARG, "spec mode dflash needs a context with a DFlash draft");
    if (g->draft_max < 1 || g->draft_max > 64)
        return sd_api_fail(err, SPECDEC_ERR_ARG, "draft_max must be in [1, 64], not %d", g->draft_max);
    if (g->ngram_min < 1 || g->ngram_max > 8 || g->ngram_min > g->ngram_max)
        return sd_api_fail(err, SPECDEC_ERR_ARG, "n-gram orders must satisfy 1 <= ngram_min <= ngram_max <= 8");
    if (g->gate < 0) return sd_api_fail(err, SPECDEC_ERR_ARG, "gate must be >= 0");
    if (isnan(g->temperature) || g->temperature > 100)
        return sd_api_fail(err, SPECDEC_ERR_ARG, "temperature must be a number <= 100");
    if (g->top_k < 0) return sd_api_fail(err, SPECDEC_ERR_ARG, "top_k must be >= 0");
    if (!(g->top_p > 0 && g->top_p <= 1)) return sd_api_fail(err, SPECDEC_ERR_ARG, "top_p must be in (0, 1]");
    if (!(g->min_p >= 0 && g->min_p < 1)) return sd_api_fail(err, SPECDEC_ERR_ARG, "min_p must be in [0, 1)");
    if (g->n_stop < 0 || g->n_stop > SPECDEC_MAX_STOP || (g->n_stop > 0 && !g->stop))
        return sd_api_fail(err, SPECDEC_ERR_ARG, "n_stop must be in [0, %d], with stop set", SPECDEC_MAX_STOP);
    for (int32_t i = 0; i < g->n_stop; i++)
        if (!g->stop[i] || !g->stop[i][0])
            return sd_api_fail(err, SPECDEC_ERR_ARG, "stop string %d is empty", i);
    if ((unsigned)g->hybrid_rollback > SPECDEC_ROLLBACK_WINDOW)
        return sd_api_fail(err, SPECDEC_ERR_ARG, "unknown hybrid rollback %d", g->hybrid_rollback);
    if (g->hybrid_rollback == SPECDEC_ROLLBACK_WINDOW && (g->hybrid_window < 2 || g->hybrid_window > 64))
        return sd_api_fail(err, SPECDEC_ERR_ARG, "hybrid_window must be in [2, 64], not %d", g->hybrid_window);
    if (g->tree_nodes < 0 || g->tree_nodes > SD_TREE_MAX - 1 || g->tree_width < 1 || g->tree_width > 8)
        return sd_api_fail(err, SPECDEC_ERR_ARG, "tree_nodes must be in [0, %d] and tree_width in [1, 8]",
                           SD_TREE_MAX - 1);
    if (g->tree_nodes > 0 && c->tl.hybrid)
        return sd_api_fail(err, SPECDEC_ERR_ARG,
                           "token trees need a dense target: %s has recurrent layers, and a tree would need one "
                           "recurrent state per branch",
                           c->model->m->hp.arch_name);
    if (g->tree_nodes > 0 && g->tree_nodes + 1 > c->n_batch)
        return sd_api_fail(err, SPECDEC_ERR_ARG, "tree_nodes %d does not fit the context's batch of %d rows",
                           g->tree_nodes, c->n_batch);
    specdec_status pst = check_penalties(c, g, err);
    if (pst != SPECDEC_OK) return pst;
    if (g->check_lossless && g->temperature > 0 && g->draft_sample)
        return sd_api_fail(err, SPECDEC_ERR_ARG,
                           "check_lossless at temperature > 0 needs deterministic drafts: draft_sample off");
    return SPECDEC_OK;
}

specdec_status specdec_generate_params_check(const specdec_context *ctx, const specdec_generate_params *params,
                                             specdec_error *err) {
    if (!ctx || !params) return sd_api_fail(err, SPECDEC_ERR_ARG, "NULL context or params");
    return check_params(ctx, params, err);
}

static sd_sampling sampling_of(const specdec_generate_params *g) {
    return (sd_sampling){.temp = g->temperature > 0 ? g->temperature : 0, .top_k = g->top_k, .top_p = g->top_p,
                         .min_p = g->min_p, .seed = g->seed};
}

/* The target layers whose hidden rows this call's drafter reads (the ids its
 * init asks the target's context for, decode/drafter.h): the MTP block's,
 * the hidden after output_norm (id n_layer); an EAGLE-3 head's, its
 * target_layers. 0 when the call drafts without a head. */
static int head_layers(const specdec_context *c, const specdec_generate_params *g, const int32_t **ids) {
    if (mtp_drafts(c) && (g->spec == SPECDEC_SPEC_MTP || g->spec == SPECDEC_SPEC_AUTO)) {
        *ids = &c->model->m->hp.n_layer;
        return 1;
    }
    if (c->draft_kind == SD_API_DRAFT_EAGLE3 && (g->spec == SPECDEC_SPEC_EAGLE3 || g->spec == SPECDEC_SPEC_AUTO)) {
        *ids = c->draft->m->hp.target_layers;
        return 3;
    }
    if (c->draft_kind == SD_API_DRAFT_DFLASH && g->spec == SPECDEC_SPEC_DFLASH) {
        *ids = c->draft->m->hp.target_layers;
        return c->draft->m->hp.n_target_layers;
    }
    *ids = NULL;
    return 0;
}

/* The target's hidden rows cost n_ctx rows of memory and a copy in every
 * forward, so they are kept only while a head drafts: on for this call's
 * head (and left on for the next call's reused prefix), off when the call
 * drafts without one. Only forwards write rows, so a prefix cached while
 * they were off has none: turning them on reuses no prefix. */
static sd_status keep_head_rows(specdec_context *c, const specdec_generate_params *g, sd_err *err) {
    const int32_t *ids;
    const int n = head_layers(c, g, &ids);
    if (n > 0 && sd_context_hidden_is(c->tctx, ids, n)) return SD_OK;
    if (n > 0) c->n_kv = 0;
    return sd_context_request_hidden(c->tctx, ids, n, err);
}

specdec_status specdec_context_reserve_hidden(specdec_context *ctx, const specdec_generate_params *params,
                                              specdec_error *err) {
    if (!ctx || !params) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_context_reserve_hidden: NULL context or params");
    specdec_status rc = check_params(ctx, params, err);
    if (rc != SPECDEC_OK) return rc;
    const int32_t *ids;
    if (head_layers(ctx, params, &ids) == 0) return SPECDEC_OK; /* no head: nothing to reserve, nothing turned off */
    sd_err e = {0};
    if (keep_head_rows(ctx, params, &e) != SD_OK) return sd_api_error(err, &e);
    return SPECDEC_OK;
}

/* The drafter kind a spec mode asks for on context c. */
static sd_drafter_kind drafter_kind(const specdec_context *c, specdec_spec_mode spec) {
    switch (spec) {
    case SPECDEC_SPEC_NGRAM: return SD_DRAFTER_NGRAM;
    case SPECDEC_SPEC_DRAFT: return SD_DRAFTER_MODEL;
    case SPECDEC_SPEC_EAGLE3: return SD_DRAFTER_EAGLE3;
    case SPECDEC_SPEC_MTP: return c->draft_kind == SD_API_DRAFT_MTP_SIDECAR ? SD_DRAFTER_MTP_SIDECAR : SD_DRAFTER_MTP;
    case SPECDEC_SPEC_SUFFIX: return SD_DRAFTER_SUFFIX;
    case SPECDEC_SPEC_DFLASH: return SD_DRAFTER_DFLASH;
    default: return SD_DRAFTER_AUTO;
    }
}

/* The name the stats give auto: what drafts behind n-gram (and before it:
 * suffix drafting, with a suffix memory). */
static const char *auto_name(sd_drafter_kind costly, bool suffix) {
    if (suffix) switch (costly) {
        case SD_DRAFTER_MTP:
        case SD_DRAFTER_MTP_SIDECAR: return "auto (suffix + ngram + mtp)";
        case SD_DRAFTER_EAGLE3: return "auto (suffix + ngram + eagle3)";
        case SD_DRAFTER_MODEL: return "auto (suffix + ngram + draft)";
        case SD_DRAFTER_DFLASH: return "auto (suffix + ngram + dflash)";
        default: return "auto (suffix + ngram)";
        }
    switch (costly) {
    case SD_DRAFTER_MTP:
    case SD_DRAFTER_MTP_SIDECAR: return "auto (ngram + mtp)";
    case SD_DRAFTER_EAGLE3: return "auto (ngram + eagle3)";
    case SD_DRAFTER_MODEL: return "auto (ngram + draft)";
    case SD_DRAFTER_DFLASH: return "auto (ngram + dflash)";
    default: return "auto (ngram)";
    }
}

/* This call's drafter, as the spec mode asks (decode/compose.h); its name goes to the stats. */
static sd_status build_drafter(run *r, sd_err *err) {
    const specdec_generate_params *g = r->gp;
    specdec_context *c = r->c;
    r->pub.drafter = "none";
    if (g->spec == SPECDEC_SPEC_NONE) return SD_OK;
    if (g->spec == SPECDEC_SPEC_GRAMMAR) { /* the decode loop drafts the forced text itself */
        r->pub.drafter = "grammar";
        return SD_OK;
    }
    sd_sampling s = sampling_of(g);
    const sd_drafter_inputs in = {.target = c->tctx,
                                  .draft_lm = c->draft_kind == SD_API_DRAFT_MODEL ? &c->dl.lm : NULL,
                                  .draft_sampling = g->draft_sample ? &s : NULL,
                                  .eagle3 = c->draft_kind == SD_API_DRAFT_EAGLE3 ? c->draft->m : NULL,
                                  .mtp_sidecar = c->draft_kind == SD_API_DRAFT_MTP_SIDECAR ? c->draft->m : NULL,
                                  .n_threads = sd_context_n_threads(c->tctx),
                                  .n_batch = c->n_batch,
                                  .ngram_min = g->ngram_min,
                                  .ngram_max = g->ngram_max,
                                  .suffix_cache = g->suffix_cache ? &g->suffix_cache->mem : NULL,
                                  .dflash = c->draft_kind == SD_API_DRAFT_DFLASH ? c->draft->m : NULL};
    const sd_drafter_kind kind = drafter_kind(c, g->spec);
    sd_status st = sd_compose_drafter(&r->drafter, kind, &in, err);
    if (st != SD_OK) return st;
    r->has_drafter = true;
    r->pub.drafter = kind == SD_DRAFTER_AUTO ? auto_name(sd_drafter_auto_costly(&in), in.suffix_cache)
                     : kind == SD_DRAFTER_MTP_SIDECAR ? "mtp"
                                                      : sd_drafter_kind_name(kind);
    return SD_OK;
}

/* A hybrid model's rollback discipline for this call (lm_hybrid.h): the
 * one asked for (auto = replay: about as fast as checkpoint in the bench's
 * rollback table, for a tenth of its memory),
 * with a ring for the largest verify window, K + 1 positions; its counters
 * start from zero. */
static sd_status setup_rollback(run *r, sd_err *err) {
    specdec_context *c = r->c;
    static const sd_rollback of[] = {SD_ROLLBACK_REPLAY, SD_ROLLBACK_CHECKPOINT, SD_ROLLBACK_REPLAY,
                                     SD_ROLLBACK_REDECODE, SD_ROLLBACK_WINDOW};
    const sd_rollback d = of[r->gp->hybrid_rollback];
    const int32_t slots = d == SD_ROLLBACK_WINDOW ? r->gp->hybrid_window : r->gp->draft_max + 1;
    r->pub.rollback = c->tl.hybrid ? sd_rollback_name(d) : "none";
    sd_status st = sd_compose_lm_rollback(&c->tl, d, slots, err);
    if (st == SD_OK) st = sd_compose_lm_rollback(&c->dl, d, slots, err);
    if (st != SD_OK) return st;
    if (c->tl.hybrid) {
        const sd_model *m = c->model->m;
        r->pub.rollback_bytes_held = (uint64_t)sd_context_state_bytes(c->tctx) +
                                     (uint64_t)slots * sd_model_capture_bytes(m, sd_rollback_capture_kind(d));
    }
    return SD_OK;
}

/* The running counters the piece callback sees. */
static void sync_stats(run *r) {
    r->pub.n_drafted = r->ist.drafted;
    r->pub.n_accepted = r->ist.accepted;
    r->pub.n_rounds = r->ist.rounds;
    r->pub.n_target_forwards = r->ist.target_forwards;
    r->pub.gate_closed_steps = r->ist.gate_closed_steps;
    r->pub.n_probes = r->ist.probes;
    r->pub.n_probe_hits = r->ist.probe_hits;
}

static bool on_commit(void *user, int32_t token, bool from_draft) {
    run *r = user;
    r->pub.n_gen++;
    sync_stats(r);
    return sd_api_stream_push(&r->stream, token, from_draft);
}

static bool is_eog(void *user, int32_t token) {
    run *r = user;
    return sd_tokenizer_is_eog(r->c->model->m->tok, token);
}

static bool on_abort(void *user) {
    run *r = user;
    if (!r->aborted && r->gp->abort(r->user)) r->aborted = true;
    return r->aborted;
}

static bool quiet_eog(void *user, int32_t token) { return sd_tokenizer_is_eog(user, token); }

/* Tokens the history and the prompt share, leaving at least the prompt's
 * last token to prefill (its logits give the first generated token). */
static int32_t reusable_prefix(const specdec_context *c, const specdec_token *prompt, int32_t n_prompt) {
    int32_t n = 0, max = n_prompt - 1 < c->n_kv ? n_prompt - 1 : c->n_kv;
    while (n < max && c->hist[n] == prompt[n]) n++;
    return n;
}

/* After a run: the history is the prompt and the output; the target's cache
 * holds them as far as it goes (not the last token, nor rows of accepted
 * drafts left uncommitted by a stop in the middle of a verify round: cut). */
static sd_status keep_history(specdec_context *c, const specdec_token *prompt, int32_t n_prompt,
                              const int32_t *out, int32_t n_out, sd_err *err) {
    int32_t len = sd_context_len(c->tctx);
    memcpy(c->hist, prompt, (size_t)n_prompt * sizeof *prompt);
    memcpy(c->hist + n_prompt, out, (size_t)n_out * sizeof *out);
    c->n_hist = n_prompt + n_out;
    c->n_kv = c->n_hist < len ? c->n_hist : len;
    return c->tl.lm.truncate(c->tl.lm.self, c->n_kv, err); /* a hybrid model rolls back through its discipline */
}

/* The same prompt through plain decoding from an empty cache (greedy, or
 * sampling with the same seed: the same bytes, ARCHITECTURE.md §6), compared token
 * by token with the speculative output. */
static sd_status check_lossless(run *r, const int32_t *prompt, int32_t n_prompt, sd_spec_params p, int32_t *out,
                                int32_t n_out, sd_err *err) {
    int32_t *plain = malloc(((size_t)p.n_predict + 1) * sizeof *plain), n_plain = 0;
    if (!plain) return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    sd_spec_stats pst;
    sd_context_truncate(r->c->tctx, 0);
    p.n_past = 0;
    p.commit_cb = NULL;
    p.abort = NULL;
    p.logprobs = NULL; /* the speculative run's were delivered */
    p.is_eog = quiet_eog;
    p.grammar_draft = false; /* plain: no draft at all (the grammar still constrains) */
    sd_status st = sd_spec_generate(&r->c->tl.lm, NULL, prompt, n_prompt, &p, NULL, r->c->model->m->tok, plain,
                                    &n_plain, &pst, err);
    if (st == SD_OK) {
        int32_t n = n_plain < n_out ? n_plain : n_out, i = 0;
        while (i < n && plain[i] == out[i]) i++;
        r->pub.lossless_checked = true;
        r->pub.lossless = i == n && n_plain == n_out;
        r->pub.lossless_first_diff = i;
        r->pub.plain_n_gen = (int32_t)pst.n_gen;
        r->pub.plain_decode_ms = pst.t_decode_s * 1e3;
        /* the history stays the speculative output; the cache now holds the
         * plain run's tokens, which agree with it up to the first difference */
        st = keep_history(r->c, prompt, n_prompt, out, n_out, err);
        if (r->c->n_kv > n_prompt + i) r->c->n_kv = n_prompt + i;
        if (st == SD_OK) st = r->c->tl.lm.truncate(r->c->tl.lm.self, r->c->n_kv, err);
    }
    free(plain);
    return st;
}

/* Why the decode loop stopped, from what it produced. */
static specdec_stop_reason stop_reason(const run *r, const int32_t *out, int32_t n_out, int32_t asked) {
    if (r->stream.cancelled || r->aborted) return SPECDEC_STOP_CANCELLED;
    if (r->stream.stop_index >= 0) return SPECDEC_STOP_STRING;
    if (n_out > 0 && r->gp->stop_at_eog && sd_tokenizer_is_eog(r->c->model->m->tok, out[n_out - 1]))
        return SPECDEC_STOP_EOG;
    if (r->ist.grammar_end) return SPECDEC_STOP_GRAMMAR;
    if (asked >= 0 && n_out >= asked) return SPECDEC_STOP_LENGTH;
    return SPECDEC_STOP_CONTEXT;
}

static void final_stats(run *r, specdec_stats *stats) {
    sync_stats(r);
    r->pub.n_gen = (int32_t)r->ist.n_gen;
    r->pub.t_prefill_ms = r->ist.t_prefill_s * 1e3;
    r->pub.t_decode_ms = r->ist.t_decode_s * 1e3;
    r->pub.n_draft_forwards = r->ist.draft_forwards;
    r->pub.gate_open = r->ist.gate_open;
    r->pub.stop_index = r->stream.stop_index;
    r->pub.grammar_ms = r->ist.t_grammar_s * 1e3;
    r->pub.grammar_rounds_ms = r->ist.t_grammar_rounds_s * 1e3;
    r->pub.n_grammar_masks = r->ist.grammar_masks;
    r->pub.gate_k = r->ist.gate_k;
    r->pub.gate_r = r->ist.gate_r;
    _Static_assert(SPECDEC_GATE_N == SD_STATS_GATE_N, "gate report sizes");
    memcpy(r->pub.gate_cv, r->ist.gate_cv, sizeof r->pub.gate_cv);
    memcpy(r->pub.gate_accept, r->ist.gate_accept, sizeof r->pub.gate_accept);
    if (r->c->tl.hybrid) {
        const sd_hybrid_stats *h = &r->c->tl.hybrid->st;
        r->pub.n_rollbacks = h->rollbacks;
        r->pub.n_redecoded = h->redecoded;
        r->pub.rollback_ms = h->rollback_s * 1e3;
        r->pub.rollback_bytes_moved = h->bytes_moved;
    }
    if (stats) *stats = r->pub;
}

/* A batched request's gate learns its share of each step (api_batch.c). */
static double slot_cost(void *user, int32_t S, double seconds) {
    run *r = user;
    return sd_api_slot_cost(r->c->slot, S, seconds);
}

/* The decode loop's parameters for this call; n_predict is cut to what the
 * context can still take (a0 of the last position included), which changes
 * nothing but the size of the buffers. */
static sd_spec_params spec_params(run *r, int32_t n_prompt, int32_t n_past) {
    const specdec_generate_params *g = r->gp;
    int32_t room = sd_context_n_ctx(r->c->tctx) - n_prompt + 1;
    sd_spec_params p = sd_spec_default_params();
    p.n_predict = g->n_predict < 0 || g->n_predict > room ? (room > 0 ? room : 0) : g->n_predict;
    p.draft_max = g->draft_max;
    p.adaptive_k = !g->fixed_k;
    p.tree_nodes = g->tree_nodes;
    p.tree_width = g->tree_width;
    p.gate_misses = g->gate;
    p.n_batch = r->c->n_batch;
    p.stop_at_eog = g->stop_at_eog;
    p.is_eog = is_eog;
    p.sampling = sampling_of(g);
    p.n_past = n_past;
    p.commit_cb = on_commit;
    p.abort = g->abort ? on_abort : NULL;
    p.forward_cost = r->c->slot ? slot_cost : NULL;
    p.grammar = r->gm;
    p.grammar_draft = r->gm && (g->spec == SPECDEC_SPEC_AUTO || g->spec == SPECDEC_SPEC_GRAMMAR);
    r->pen = (sd_penalties){.presence = g->presence_penalty,
                            .frequency = g->frequency_penalty,
                            .repeat = g->repeat_penalty,
                            .repeat_last_n = g->repeat_last_n,
                            .bias = (const sd_logit_bias *)g->logit_bias,
                            .n_bias = g->n_logit_bias};
    p.penalties = &r->pen;
    p.logprobs = r->lp;
    p.top_logprobs = g->logprobs > 0 ? g->logprobs : 0;
    return p;
}

static sd_status run_generate(run *r, const specdec_token *prompt, int32_t n_prompt, specdec_piece_cb cb,
                              void *user, sd_err *err) {
    specdec_context *c = r->c;
    sd_status st = setup_rollback(r, err);
    if (st == SD_OK) st = keep_head_rows(c, r->gp, err);
    if (st != SD_OK) return st;
    int32_t n_past = reusable_prefix(c, prompt, n_prompt);
    st = c->tl.lm.truncate(c->tl.lm.self, n_past, err); /* a hybrid model re-decodes from its snapshot if it must */
    if (st != SD_OK) return st;
    c->n_hist = c->n_kv = n_past;
    r->pub.n_prompt = n_prompt;
    r->pub.n_cached = n_past;
    r->pub.stop_index = -1;
    if (r->gp->grammar) {
        st = sd_api_grammar_take(r->gp->grammar, c->model, &r->gm, err);
        if (st != SD_OK) return st;
    }
    sd_spec_params p = spec_params(r, n_prompt, n_past);
    int32_t *out = malloc(((size_t)p.n_predict + 1) * sizeof *out), n_out = 0;
    if (r->gp->logprobs >= 0) p.logprobs = r->lp = sd_malloc_array((size_t)p.n_predict + 1, sizeof *r->lp);
    if (!out || (r->gp->logprobs >= 0 && !r->lp)) {
        free(out);
        free(r->lp);
        r->lp = NULL;
        if (r->gm) sd_api_grammar_give(r->gp->grammar, r->gm);
        r->gm = NULL;
        return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    }
    st = build_drafter(r, err);
    if (st == SD_OK)
        st = sd_api_stream_init(&r->stream, c->model->m->tok, r->gp->stop, r->gp->n_stop, cb, user, &r->pub, err);
    if (st == SD_OK) r->stream.lp = (const specdec_token_logprob *)r->lp;
    if (st == SD_OK) {
        st = sd_spec_generate(&c->tl.lm, r->has_drafter ? &r->drafter : NULL, prompt, n_prompt, &p, NULL, r, out,
                              &n_out, &r->ist, err);
        if (st == SD_OK) sd_api_stream_finish(&r->stream);
        if (st == SD_OK && r->stream.text.oom) st = sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    }
    if (st == SD_OK) {
        r->pub.stop_reason = stop_reason(r, out, n_out, r->gp->n_predict);
        st = keep_history(c, prompt, n_prompt, out, n_out, err);
    }
    /* the suffix memory learns this output (the drafter reads it only while proposing) */
    if (st == SD_OK && r->gp->suffix_cache) st = sd_suffix_cache_add(&r->gp->suffix_cache->mem, out, n_out, err);
    if (st == SD_OK && r->gp->check_lossless) {
        /* a stop string or a cancel cut the speculative run short: compare as far as it went */
        if (r->pub.stop_reason == SPECDEC_STOP_STRING || r->pub.stop_reason == SPECDEC_STOP_CANCELLED)
            p.n_predict = n_out;
        st = check_lossless(r, prompt, n_prompt, p, out, n_out, err);
    }
    sd_drafter_free(&r->drafter);
    sd_api_stream_free(&r->stream);
    if (r->gm) sd_api_grammar_give(r->gp->grammar, r->gm);
    r->gm = NULL;
    free(out);
    free(r->lp);
    r->lp = NULL;
    return st;
}

specdec_status specdec_generate(specdec_context *ctx, const specdec_token *prompt, size_t n_prompt,
                                const specdec_generate_params *params, specdec_piece_cb on_piece, void *user,
                                specdec_stats *stats, specdec_error *err) {
    specdec_generate_params g = params ? *params : specdec_generate_default_params();
    if (stats) *stats = (specdec_stats){.stop_index = -1, .drafter = "none", .rollback = "none"};
    if (!ctx || (!prompt && n_prompt)) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_generate: NULL argument");
    if (n_prompt == 0) return sd_api_fail(err, SPECDEC_ERR_ARG, "the prompt is empty");
    if (n_prompt > (size_t)specdec_context_n_ctx(ctx)) {
        specdec_context_reset(ctx);
        return sd_api_fail(err, SPECDEC_ERR_CONTEXT, "the prompt has %zu tokens, more than the context size %d",
                           n_prompt, specdec_context_n_ctx(ctx));
    }
    specdec_status pst = check_params(ctx, &g, err);
    if (pst != SPECDEC_OK) return pst;
    run r = {.c = ctx, .gp = &g, .user = user, .pub = {.rollback = "none"}};
    sd_err e = {0};
    sd_status st = run_generate(&r, prompt, (int32_t)n_prompt, on_piece, user, &e);
    final_stats(&r, stats);
    if (st != SD_OK) {
        specdec_context_reset(ctx);
        return sd_api_error(err, &e);
    }
    return SPECDEC_OK;
}
