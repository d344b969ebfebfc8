/* The decode loop: prefill, then rounds of "commit a0, draft past it, verify"
 * (ARCHITECTURE.md §1) until n_predict tokens, an end-of-generation token, or a full
 * context. Plain decoding is the same loop with K = 0 every round. */
#include "decode/spec.h"

#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "core/clock.h"
#include "decode/constrain.h"
#include "decode/gate.h"
#include "decode/sampler.h"
#include "decode/tree.h"
#include "decode/verify.h"

sd_spec_params sd_spec_default_params(void) {
    return (sd_spec_params){
        .n_predict = 128,
        .draft_max = 8,
        .adaptive_k = true,
        .gate_misses = 4,
        .gate_probe = 16,
        .n_batch = 64,
        .stop_at_eog = true,
        .sampling = {.temp = 0, .top_k = 0, .top_p = 1, .min_p = 0, .seed = 0},
    };
}

/* Blocks of a block drafter scored at once: with K = 1 a block of 7 needs up
 * to 7 rounds to be known; an older one still open is dropped. */
#define SD_SHADOWS 16

typedef struct decoder {
    sd_lm *lm;
    sd_drafter *dr;
    const sd_spec_params *p;
    sd_sampler sm;
    sd_gate gate;          /* the drafter's proposals */
    sd_gate gate_free;     /* its free source alone (dr->propose_free), used while `gate` is closed */
    bool has_free;
    sd_gate *src;          /* the gate of the current round's proposal */
    int32_t blk;           /* a block drafter's drafts per forward (chain rounds), 0 = none */
    int32_t *blk_buf;      /* [blk] the drafts of the last block */
    int32_t *sh_tok;       /* [SD_SHADOWS][blk]: recent blocks being scored against the committed text */
    int32_t sh_start[SD_SHADOWS], sh_len[SD_SHADOWS], sh_done[SD_SHADOWS]; /* sh_len 0 = free slot */
    int32_t sh_next;
    int64_t pos_hit[SD_STATS_GATE_N], pos_try[SD_STATS_GATE_N]; /* the run's block-position outcomes */
    int32_t *hist, n_hist; /* committed tokens: prompt, generated (a0 included once committed) */
    int32_t *batch;        /* [K+1]: a0, d1..dK */
    float *logits;         /* [max(K+1, n_batch)][n_vocab] */
    float *q;              /* [K][n_vocab], stochastic drafters only */
    float *scratch;        /* [2][n_vocab] */
    bool tree_on;          /* p->tree_nodes > 0 and both the lm and the drafter can */
    bool tree_round;       /* this round's proposal is d->tree */
    int32_t *cand;         /* [K][tree_width] candidates (tree_on only) */
    sd_tree tree;
    int32_t path[SD_TREE_MAX];
    sd_gmatch *gm;         /* the grammar's matcher, NULL when unconstrained */
    bool forced;           /* this round's draft is text the grammar forces */
    int32_t g;             /* its committed state: after every committed token */
    int32_t *gst;          /* [max(K + 1, SD_TREE_MAX)] the round's draft-path states */
    sd_status gerr;        /* a grammar error met where no status could be returned */
    sd_rowpen pen;         /* penalties of the rows (pen.p NULL: none); pen.hist is hist */
    int32_t *out, n_out;
    sd_token_cb cb;
    void *user;
    bool stop;
    sd_spec_stats *st;
} decoder;

static sd_status decoder_init(decoder *d, int32_t n_prompt, sd_err *err) {
    const sd_spec_params *p = d->p;
    size_t V = (size_t)d->lm->n_vocab, K = (size_t)p->draft_max;
    d->tree_on = p->tree_nodes > 0 && d->lm->forward_tree && d->lm->keep_path && d->dr && d->dr->propose_top;
    size_t rows = K + 1 > (size_t)p->n_batch ? K + 1 : (size_t)p->n_batch;
    if (d->tree_on && rows < SD_TREE_MAX) rows = SD_TREE_MAX;
    sd_status st = sd_sampler_init(&d->sm, &p->sampling, d->lm->n_vocab, err);
    if (st != SD_OK) return st;
    d->hist = sd_malloc_array((size_t)n_prompt + (size_t)p->n_predict + 1, sizeof *d->hist);
    d->batch = sd_malloc_array(K + 1, sizeof *d->batch);
    d->logits = sd_malloc_array(rows, V * sizeof *d->logits);
    d->scratch = sd_malloc_array(2 * V, sizeof *d->scratch);
    bool want_q = d->dr && d->dr->stochastic && K > 0;
    d->q = want_q ? sd_malloc_array(K, V * sizeof *d->q) : NULL;
    d->cand = d->tree_on ? sd_malloc_array(K, (size_t)p->tree_width * sizeof *d->cand) : NULL;
    d->gm = p->grammar;
    d->gst = d->gm ? sd_malloc_array(K + 1 > SD_TREE_MAX ? K + 1 : SD_TREE_MAX, sizeof *d->gst) : NULL;
    bool pen_on = sd_penalties_active(p->penalties);
    d->pen = (sd_rowpen){.p = pen_on ? p->penalties : NULL, .hist = d->hist, .n_prompt = n_prompt};
    d->pen.count = pen_on ? calloc((size_t)V, sizeof *d->pen.count) : NULL;
    if (!d->hist || !d->batch || !d->logits || !d->scratch || (want_q && !d->q) || (d->tree_on && !d->cand) ||
        (d->gm && !d->gst) || (pen_on && !d->pen.count))
        return sd_err_set(err, SD_ERR_NOMEM, "decode buffers: out of memory");
    sd_gate_init(&d->gate, p, d->dr && d->dr->costly);
    d->has_free = d->dr && d->dr->costly && d->dr->propose_free;
    sd_gate_init(&d->gate_free, p, false);
    d->blk = d->dr && d->dr->block > 0 && !d->tree_on && !d->dr->stochastic ? d->dr->block : 0;
    if (d->blk > SD_GATE_MAX_BLOCK) d->blk = SD_GATE_MAX_BLOCK;
    if (d->blk) {
        d->blk_buf = sd_malloc_array((size_t)d->blk, sizeof *d->blk_buf);
        d->sh_tok = sd_malloc_array((size_t)SD_SHADOWS * (size_t)d->blk, sizeof *d->sh_tok);
        if (!d->blk_buf || !d->sh_tok) return sd_err_set(err, SD_ERR_NOMEM, "decode buffers: out of memory");
        sd_gate_set_block(&d->gate, d->blk);
    }
    return SD_OK;
}

static void decoder_free(decoder *d) {
    sd_sampler_free(&d->sm);
    free(d->hist);
    free(d->batch);
    free(d->logits);
    free(d->scratch);
    free(d->q);
    free(d->cand);
    free(d->gst);
    free(d->pen.count);
    free(d->blk_buf);
    free(d->sh_tok);
}

/* A block drafter's block of n drafts for the positions from start on (hist
 * index of its first draft), kept to be scored as the text is committed. */
static void shadow_add(decoder *d, int32_t start, const int32_t *tok, int32_t n) {
    int32_t i = d->sh_next;
    d->sh_next = (i + 1) % SD_SHADOWS;
    memcpy(d->sh_tok + (size_t)i * (size_t)d->blk, tok, (size_t)n * sizeof *tok);
    d->sh_start[i] = start, d->sh_len[i] = n, d->sh_done[i] = 0;
}

/* Each open block's drafts against the tokens committed since: draft j + 1
 * of a block whose drafts 1..j matched is a trial of position j + 1 (gate.h
 * block mode), whether or not the round verified it; a miss closes the block. */
static void shadow_score(decoder *d) {
    for (int32_t i = 0; i < SD_SHADOWS; i++) {
        const int32_t *tok = d->sh_tok + (size_t)i * (size_t)d->blk;
        while (d->sh_done[i] < d->sh_len[i] && d->sh_start[i] + d->sh_done[i] < d->n_hist) {
            const bool hit = d->hist[d->sh_start[i] + d->sh_done[i]] == tok[d->sh_done[i]];
            sd_gate_position(&d->gate, ++d->sh_done[i], hit);
            if (d->sh_done[i] < SD_STATS_GATE_N) d->pos_try[d->sh_done[i]]++, d->pos_hit[d->sh_done[i]] += hit;
            if (!hit) d->sh_len[i] = 0;
        }
        if (d->sh_done[i] >= d->sh_len[i]) d->sh_len[i] = 0;
    }
}

/* Whether the drafter's last proposal came from its block forward. */
static bool from_block(const decoder *d) {
    return d->blk && (!d->dr->last_was_block || d->dr->last_was_block(d->dr->self));
}

/* Where the log-probabilities of this round's row 0 go (the next output position), or NULL. */
static sd_token_lp *round_lp(decoder *d) { return d->p->logprobs ? d->p->logprobs + d->n_out : NULL; }

/* The rows' penalties for a round starting now (the committed text is hist[0..n_hist)), or NULL. */
static const sd_rowpen *round_pen(decoder *d) {
    if (!d->pen.p) return NULL;
    d->pen.n_hist = d->n_hist;
    return &d->pen;
}

/* Appends one token to the output; sets d->stop at n_predict, EOG, or when
 * the callback asks. */
static void commit(decoder *d, int32_t tok, bool from_draft) {
    d->hist[d->n_hist++] = tok;
    d->out[d->n_out++] = tok;
    if (d->p->commit_cb) {
        if (!d->p->commit_cb(d->user, tok, from_draft)) d->stop = true;
    } else if (d->cb && !d->cb(d->user, tok)) {
        d->stop = true;
    }
    if (d->n_out >= d->p->n_predict) d->stop = true;
    if (d->p->stop_at_eog && d->p->is_eog && d->p->is_eog(d->user, tok)) d->stop = true;
}

/* The caller's abort hook; once it said stop, stop stays set. */
static bool aborted(decoder *d) {
    if (d->p->abort && !d->stop && d->p->abort(d->user)) d->stop = true;
    return d->stop;
}

static sd_status grammar_error(decoder *d, sd_err *err) {
    const sd_err *ge = sd_gmatch_error(d->gm);
    if (ge->code != SD_OK) {
        if (err) *err = *ge;
        return ge->code;
    }
    return sd_err_set(err, SD_ERR_ARG, "grammar: no token allowed");
}

/* Advances the committed grammar state over a committed token; generation
 * stops where the grammar then allows no token (the same place in plain
 * and speculative decoding, as both commit the same tokens). */
static void grammar_commit(decoder *d, int32_t tok) {
    if (!d->gm || d->stop) return;
    double t0 = sd_now_s();
    d->g = sd_gmatch_token(d->gm, d->g, tok);
    int any = d->g >= 0 ? sd_gmatch_any(d->gm, d->g) : d->g == SD_GSTATE_DEAD ? 0 : -1;
    sd_gmatch_add_seconds(d->gm, sd_now_s() - t0); /* counts as constraining (stats t_grammar_s) */
    if (any < 0) d->gerr = sd_gmatch_error(d->gm)->code ? sd_gmatch_error(d->gm)->code : SD_ERR_UNSUPPORTED;
    if (any == 0) d->st->grammar_end = true;
    if (any <= 0) d->stop = true;
}

/* Forwards the prompt in chunks of n_batch rows; a0 comes from the last row. */
static sd_status prefill(decoder *d, const int32_t *prompt, int32_t n_prompt, int32_t *a0,
                         sd_err *err) {
    int32_t done = 0, S = 0;
    while (done < n_prompt) {
        if (aborted(d)) return SD_OK;
        S = n_prompt - done < d->p->n_batch ? n_prompt - done : d->p->n_batch;
        int32_t n_tail = done + S == n_prompt; /* only the last row's logits are read */
        sd_status st = sd_lm_forward_tail(d->lm, SD_LM_PREFILL, prompt + done, S, n_tail, d->logits, err);
        if (st != SD_OK) return st;
        done += S;
    }
    /* the token at the absolute position after the prompt (prompt may be the
     * part after a reused prefix), penalised after the whole prompt;
     * constrained: masked with the start state */
    sd_penalty_row(round_pen(d), NULL, 0, d->logits, d->lm->n_vocab);
    if (d->gm) {
        d->g = sd_gmatch_start(d->gm);
        int any = d->g >= 0 ? sd_gmatch_any(d->gm, d->g) : d->g == SD_GSTATE_DEAD ? 0 : -1;
        if (any < 0) return grammar_error(d, err);
        if (!any) { /* the grammar allows no first token: nothing is generated */
            d->stop = true;
            d->st->grammar_end = true;
            return SD_OK;
        }
        if (d->sm.s.temp <= 0 && !d->p->logprobs) {
            *a0 = sd_constrain_argmax(d->gm, d->g, d->logits, d->lm->n_vocab, err);
            return *a0 < 0 ? grammar_error(d, err) : SD_OK;
        }
        if (sd_constrain_mask_row(d->gm, d->g, d->logits, d->lm->n_vocab, err) != SD_OK) return grammar_error(d, err);
    }
    *a0 = sd_sampler_pick_at(&d->sm, d->logits, d->lm->len(d->lm->self));
    if (d->p->logprobs) sd_logprob_row(d->logits, d->lm->n_vocab, *a0, d->p->top_logprobs, &d->p->logprobs[0]);
    return SD_OK;
}

/* Both gates learn c_v(S) from every target forward. */
static void time_forward(decoder *d, int32_t S, double seconds) {
    if (d->p->forward_cost) seconds = d->p->forward_cost(d->user, S, seconds);
    sd_gate_time_forward(&d->gate, S, seconds);
    if (d->has_free) sd_gate_time_forward(&d->gate_free, S, seconds);
}

/* Draft length for this round: what the gate allows, cut so the verify
 * window fits the context (n + K + 1 <= n_ctx) and commits no more than
 * n_predict (a round yields up to K + 1 tokens counting the next a0). */
static int plan_k(decoder *d, const sd_gate *g, int32_t n) {
    if (g && !d->dr) return 0;
    int32_t k = g ? sd_gate_k(g) : d->p->draft_max; /* no gate: forced text, drafted whenever there is some */
    int32_t room = d->lm->n_ctx(d->lm->self) - n - 1;
    if (d->lm->max_batch) { /* the lm's cheapest batch */
        int32_t mb = d->lm->max_batch(d->lm->self) - 1;
        if (mb < room) room = mb;
    }
    int32_t budget = d->p->n_predict - d->n_out - 1;
    if (k > room) k = room;
    if (k > budget) k = budget;
    return k > 0 ? k : 0;
}

/* The tree of this round from the chain of k and its candidates: at most
 * tree_nodes draft nodes, and no more than fit the context and a batch. */
static int plan_tree(decoder *d, int32_t n, int k) {
    int32_t n_max = d->p->tree_nodes, room = d->lm->n_ctx(d->lm->self) - n - 1;
    if (n_max > room) n_max = room;
    if (n_max > d->p->n_batch - 1) n_max = d->p->n_batch - 1;
    if (n_max < 1) return 0; /* no room for a draft node: a plain step */
    sd_tree_from_top(&d->tree, d->batch[0], d->cand, k, d->p->tree_width, n_max);
    d->tree_round = true;
    return k < n_max ? k : n_max;
}

/* This round's proposal into batch[1..]: the drafter's, or while its gate is
 * closed, its free source's under the free gate. Returns how many, 0 for a
 * plain step, -1 on error. Times the drafter (r of the speedup model). */
/* The tokenizer's encoding of the text the grammar forces from the
 * committed state, at most k tokens into batch[1..]; 0 if none is forced. */
static int propose_forced(decoder *d, int k, sd_err *err) {
    char text[256];
    size_t len = sd_gmatch_forced(d->gm, d->g, text, sizeof text);
    const sd_tokenizer *tok = sd_gmatch_tokenizer(d->gm);
    if (len == 0 || !tok) return 0;
    int32_t *ids = NULL;
    size_t n_ids = 0;
    if (sd_tokenize(tok, text, len, false, false, &ids, &n_ids, err) != SD_OK) return -1;
    int got = n_ids < (size_t)k ? (int)n_ids : k;
    memcpy(d->batch + 1, ids, (size_t)got * sizeof *ids);
    free(ids);
    return got; /* deterministic: verified as the target's own picks, like an n-gram draft */
}

static int propose(decoder *d, int32_t n, sd_err *err) {
    if (d->blk) shadow_score(d);
    int k = plan_k(d, &d->gate, n), got = 0;
    bool block_round = false;
    d->src = &d->gate;
    double t0 = sd_now_s();
    d->tree_round = false;
    d->forced = false;
    int kf = d->gm && d->p->grammar_draft ? plan_k(d, NULL, n) : 0;
    if (kf > 0 && (got = propose_forced(d, kf, err)) != 0) {
        d->forced = got > 0;
    } else if (!d->dr) {
        got = 0;
    } else if (k > 0 && d->tree_on) {
        got = d->dr->propose_top(d->dr->self, d->hist, d->n_hist, k, d->p->tree_width, d->cand, err);
        if (got > 0) got = plan_tree(d, n, got);
    } else if (k > 0 && d->blk) { /* the whole block, verified up to k; every row scored later */
        got = d->dr->propose(d->dr->self, d->hist, d->n_hist, d->blk, d->blk_buf, d->q, err);
        block_round = got > 0 && from_block(d);
        if (block_round) shadow_add(d, d->n_hist, d->blk_buf, got);
        if (got > k) got = k;
        if (got > 0) memcpy(d->batch + 1, d->blk_buf, (size_t)got * sizeof *d->blk_buf);
    } else if (k > 0) {
        got = d->dr->propose(d->dr->self, d->hist, d->n_hist, k, d->batch + 1, d->q, err);
    } else if (d->has_free && (k = plan_k(d, &d->gate_free, n)) > 0) {
        d->src = &d->gate_free;
        got = d->dr->propose_free(d->dr->self, d->hist, d->n_hist, k, d->batch + 1, d->q, err);
    }
    double dt = sd_now_s() - t0;
    d->st->t_draft_s += dt;
    /* a block drafter's time is per block (its free lookups are not timed) */
    if (got > 0 && d->dr && !d->forced && (!d->blk || d->src != &d->gate || block_round))
        sd_gate_time_draft(d->src, got, dt);
    return got;
}

/* A shadow probe of gate g: the drafter's one-token guess (-1: none), to be
 * checked against the plain step's result. A drafter with a separate free
 * gate probes its costly source only through the main gate. */
static sd_status probe_guess(decoder *d, sd_gate *g, int32_t *guess, bool *ran_model, sd_err *err) {
    *guess = -1;
    *ran_model = false;
    if (!sd_gate_probe_due(g, ran_model)) return SD_OK;
    int got = 0;
    double t0 = sd_now_s();
    if (*ran_model && d->blk && g == &d->gate && !d->dr->last_was_block) { /* a whole block: all rows scored */
        shadow_score(d);
        got = d->dr->propose(d->dr->self, d->hist, d->n_hist, d->blk, d->blk_buf, d->q, err);
        if (got > 0) {
            shadow_add(d, d->n_hist, d->blk_buf, got);
            *guess = d->blk_buf[0];
            got = 1;
        }
        /* the same block forward a round pays: r keeps learning while closed
         * (one slow first block, a preempted thread, would else keep it shut) */
        if (got > 0) sd_gate_time_draft(g, d->blk, sd_now_s() - t0);
        sd_gate_time_probe(g, sd_now_s() - t0);
    } else if (*ran_model) {
        got = d->dr->guess ? d->dr->guess(d->dr->self, d->hist, d->n_hist, guess, err)
                           : d->dr->propose(d->dr->self, d->hist, d->n_hist, 1, guess, d->q, err);
        sd_gate_time_probe(g, sd_now_s() - t0); /* spaces the next probes */
    } else if (d->dr->probe && !(d->has_free && g == &d->gate)) {
        got = d->dr->probe(d->dr->self, d->hist, d->n_hist, guess);
    }
    d->st->t_draft_s += sd_now_s() - t0;
    if (got < 0) return err ? err->code : SD_ERR_ARG;
    if (got == 0) *guess = -1;
    return SD_OK;
}

static void probe_score(decoder *d, sd_gate *g, int32_t guess, bool ran_model, int32_t next_a0) {
    if (guess < 0) return;
    d->st->probes++;
    d->st->probe_hits += guess == next_a0;
    /* a block drafter's probe behind auto (no block to score): its first position */
    if (ran_model && d->blk && g == &d->gate && d->dr->last_was_block) sd_gate_position(g, 1, guess == next_a0);
    sd_gate_probe_result(g, guess == next_a0, ran_model);
}

/* A plain step (forward a0 alone). While the gate is closed, the drafter's
 * one-token guess is checked against this step's result, for free. */
static sd_status plain_step(decoder *d, int32_t a0, sd_verdict *v, sd_err *err) {
    int32_t guess = -1, guess_free = -1;
    bool run_model = false, unused;
    if (d->dr) {
        sd_status st = probe_guess(d, &d->gate, &guess, &run_model, err);
        if (st == SD_OK && d->has_free) st = probe_guess(d, &d->gate_free, &guess_free, &unused, err);
        if (st != SD_OK) return st;
    }
    d->batch[0] = a0;
    double t0 = sd_now_s();
    if (d->gm) d->gst[0] = d->g;
    sd_rowmask rm = {d->gm, d->gst, round_pen(d), round_lp(d), d->p->top_logprobs};
    sd_status st = sd_verify_round(d->lm, d->batch, 0, NULL, d->logits, &d->sm, d->p->accept,
                                   d->scratch, &rm, v, err);
    if (st != SD_OK) return st;
    double dt = sd_now_s() - t0;
    d->st->t_plain_s += dt;
    time_forward(d, 1, dt);
    d->st->target_forwards++;
    if (d->dr && !d->gate.open) d->st->gate_closed_steps++;
    if (d->gm) d->g = d->gst[0];
    probe_score(d, &d->gate, guess, run_model, v->next_a0);
    if (d->has_free) probe_score(d, &d->gate_free, guess_free, false, v->next_a0);
    return SD_OK;
}

/* One speculative round on k proposed tokens (batch[1..k] already filled). */
/* The bookkeeping every verify round ends with: time and counters, the
 * gate's record, the accepted drafts d->batch[1..v->j] committed, the drafter
 * told. rows = the positions the forward verified; drafted = its draft tokens.
 * The round's time includes the lm's rollback (for a hybrid model its
 * discipline's snapshot, capture, restore or replay), so the gate's c_v(S)
 * and its predicted speedup carry that cost too. */
static void round_done(decoder *d, int k, int rows, int drafted, double t0, const sd_verdict *v) {
    double dt = sd_now_s() - t0;
    d->st->t_rounds_s += dt;
    time_forward(d, rows, dt);
    d->st->target_forwards++;
    d->st->rounds++;
    d->st->drafted += drafted;
    d->st->accepted += v->j;
    if (d->forced) d->st->forced_rounds++;
    else if (d->dr) sd_gate_round(d->src, k, v->j);
    for (int t = 1; t <= v->j && !d->stop; t++) commit(d, d->batch[t], true);
    /* the drafter hears only of its own proposals (a forced round was not one) */
    if (d->dr && d->dr->accepted && !d->forced) d->dr->accepted(d->dr->self, d->hist, d->n_hist, v->j);
}

/* One chain round on k drafts in batch[1..k]. Constrained: the draft-path
 * states g_0..g_K, the draft cut before the first token the grammar refuses
 * (a draft cut to nothing is a plain step), sampled drafts' q masked with the
 * same states; afterwards the committed state is g_j, never past a rejected
 * token (the next a0 then advances it in decode()). */
/* The matcher's constraining time so far (0 unconstrained). */
static double grammar_s(const decoder *d) { return d->gm ? sd_gmatch_seconds(d->gm) : 0; }

static sd_status spec_round(decoder *d, int k, sd_verdict *v, sd_err *err) {
    double t0 = sd_now_s(), g0 = grammar_s(d);
    bool stochastic = d->dr && d->dr->stochastic && !d->forced;
    if (d->gm) {
        int kept = sd_constrain_draft(d->gm, d->g, d->batch + 1, k, d->gst, err);
        if (kept < 0) return grammar_error(d, err);
        d->st->grammar_cut += k - kept;
        if (kept == 0) { /* as a round that accepted nothing, for the drafter's bookkeeping */
            sd_status st = plain_step(d, d->batch[0], v, err);
            if (st == SD_OK && d->dr && !d->forced && d->dr->accepted)
                d->dr->accepted(d->dr->self, d->hist, d->n_hist, 0);
            return st;
        }
        if (stochastic) sd_constrain_mask_q(d->gm, d->gst, kept, d->q, d->lm->n_vocab);
        k = kept;
    }
    sd_rowmask rm = {d->gm, d->gst, round_pen(d), round_lp(d), d->p->top_logprobs};
    sd_status st = sd_verify_round(d->lm, d->batch, k, stochastic ? d->q : NULL, d->logits, &d->sm,
                                   d->p->accept, d->scratch, &rm, v, err);
    if (st != SD_OK) return st;
    if (d->gm) d->g = sd_constrain_committed(d->gm, d->gst, d->batch + 1, v->j, k);
    d->st->t_grammar_rounds_s += grammar_s(d) - g0;
    round_done(d, k, k + 1, k, t0, v);
    return SD_OK;
}

/* One round on the token tree d->tree (its chain of k from the drafter). The
 * accepted root path's tokens go to d->batch[1..j] (batch[0] is a0, the
 * tree's root), where round_done commits a chain's. */
static sd_status tree_round(decoder *d, int k, sd_verdict *v, sd_err *err) {
    double t0 = sd_now_s(), g0 = grammar_s(d);
    if (d->gm) { /* each node's state along its own path; refused nodes DEAD */
        d->gst[0] = d->g;
        for (int32_t i = 1; i < d->tree.n; i++) {
            int32_t ps = d->gst[d->tree.parent[i]];
            int32_t s = ps >= 0 ? sd_gmatch_token(d->gm, ps, d->tree.tok[i]) : SD_GSTATE_DEAD;
            int any = s >= 0 ? sd_gmatch_any(d->gm, s) : 0;
            if (s == SD_GSTATE_ERROR || any < 0) return grammar_error(d, err);
            d->gst[i] = any ? s : SD_GSTATE_DEAD;
        }
        sd_gmatch_add_seconds(d->gm, sd_now_s() - t0); /* the walk counts as constraining */
    }
    sd_rowmask rm = {d->gm, d->gst, round_pen(d), round_lp(d), d->p->top_logprobs};
    sd_status st = sd_verify_tree(d->lm, &d->tree, d->logits, &d->sm, &rm, v, d->path, err);
    if (st != SD_OK) return st;
    if (d->gm) d->g = d->gst[d->path[v->j]];
    d->st->t_grammar_rounds_s += grammar_s(d) - g0;
    for (int t = 1; t <= v->j; t++) d->batch[t] = d->tree.tok[d->path[t]];
    d->st->tree_rounds++;
    round_done(d, k, d->tree.n, d->tree.n - 1, t0, v);
    return SD_OK;
}

static sd_status decode(decoder *d, int32_t a0, sd_err *err) {
    for (;;) {
        commit(d, a0, false); /* §1: a0 is always correct */
        grammar_commit(d, a0);
        if (d->gerr != SD_OK) return sd_err_set(err, d->gerr, "%s", sd_gmatch_error(d->gm)->msg);
        int32_t n = d->lm->len(d->lm->self);
        if (d->stop || n >= d->lm->n_ctx(d->lm->self) || aborted(d)) return SD_OK;
        d->batch[0] = a0;
        int got = propose(d, n, err);
        if (got < 0) return err ? err->code : SD_ERR_ARG;
        sd_verdict v;
        sd_status st = got == 0        ? plain_step(d, a0, &v, err)
                       : d->tree_round ? tree_round(d, got, &v, err)
                                       : spec_round(d, got, &v, err);
        if (st != SD_OK || d->stop) return st;
        a0 = v.next_a0;
    }
}

static sd_status check_args(sd_lm *lm, const sd_drafter *dr, int32_t n_prompt, const sd_spec_params *p,
                            sd_err *err) {
    if (n_prompt < 1) return sd_err_set(err, SD_ERR_ARG, "the prompt must have at least one token");
    if (p->n_predict < 0 || p->draft_max < 0 || p->n_batch < 1 || p->gate_misses < 0)
        return sd_err_set(err, SD_ERR_ARG, "bad decode parameters");
    /* a drafter with K = 0 would still be asked for one-token probes */
    if ((dr || (p->grammar && p->grammar_draft)) && p->draft_max < 1)
        return sd_err_set(err, SD_ERR_ARG, "draft_max must be >= 1 with a drafter");
    if (p->tree_nodes < 0 || p->tree_nodes >= SD_TREE_MAX || (p->tree_nodes > 0 && p->tree_width < 1) ||
        p->tree_width > 8)
        return sd_err_set(err, SD_ERR_ARG, "tree: %d nodes of width %d (0..%d nodes, width 1..8)", p->tree_nodes,
                          p->tree_width, SD_TREE_MAX - 1);
    if (p->n_past < 0 || p->n_past >= n_prompt)
        return sd_err_set(err, SD_ERR_ARG, "n_past must be in [0, n_prompt)");
    if (lm->len(lm->self) != p->n_past)
        return sd_err_set(err, SD_ERR_ARG, "the model state does not hold exactly n_past tokens");
    int32_t n_ctx = lm->n_ctx(lm->self);
    if (n_prompt > n_ctx)
        return sd_err_set(err, SD_ERR_CONTEXT,
                          "the prompt has %d tokens, more than the context size %d (raise -c)",
                          n_prompt, n_ctx);
    return SD_OK;
}

sd_status sd_spec_generate(sd_lm *target, sd_drafter *drafter, const int32_t *prompt,
                           int32_t n_prompt, const sd_spec_params *p, sd_token_cb cb, void *user,
                           int32_t *out, int32_t *n_out, sd_spec_stats *stats, sd_err *err) {
    sd_spec_stats local;
    if (!stats) stats = &local;
    *stats = (sd_spec_stats){.n_prompt = n_prompt};
    *n_out = 0;
    sd_status st = check_args(target, drafter, n_prompt, p, err);
    if (st != SD_OK) return st;
    decoder d = {.lm = target, .dr = drafter, .p = p, .out = out, .cb = cb, .user = user, .st = stats};
    st = decoder_init(&d, n_prompt, err);
    if (st == SD_OK) {
        if (drafter && drafter->reset) drafter->reset(drafter->self);
        /* a deterministic drafter races with the target's per-position noise (drafter.h couple) */
        if (drafter && drafter->couple)
            drafter->couple(drafter->self, !drafter->stochastic && p->sampling.temp > 0 ? &p->sampling : NULL);
        memcpy(d.hist, prompt, (size_t)n_prompt * sizeof *prompt);
        d.n_hist = n_prompt;
    }
    double t0 = sd_now_s(), g0 = p->grammar ? sd_gmatch_seconds(p->grammar) : 0;
    int64_t masks0 = p->grammar ? sd_gmatch_n_masks(p->grammar) : 0;
    int32_t a0 = 0;
    if (st == SD_OK) st = prefill(&d, prompt + p->n_past, n_prompt - p->n_past, &a0, err);
    if (st == SD_OK && !d.stop && drafter && drafter->prefill &&
        drafter->prefill(drafter->self, prompt, n_prompt, err) < 0)
        st = err ? err->code : SD_ERR_ARG;
    if (st == SD_OK && drafter && target->warm) target->warm(target->self); /* page faults in prefill time */
    double t1 = sd_now_s();
    if (st == SD_OK && p->n_predict > 0 && !d.stop) st = decode(&d, a0, err);
    stats->t_prefill_s = t1 - t0;
    stats->t_decode_s = sd_now_s() - t1;
    stats->n_gen = d.n_out;
    if (p->grammar) {
        stats->t_grammar_s = sd_gmatch_seconds(p->grammar) - g0;
        stats->grammar_masks = sd_gmatch_n_masks(p->grammar) - masks0;
    }
    stats->gate_open = drafter && d.gate.open;
    if (st == SD_OK && d.blk) shadow_score(&d); /* the last blocks against the last tokens */
    if (drafter) {
        stats->gate_k = sd_gate_k(&d.gate);
        stats->gate_r = d.gate.t_fwd[1] > 0 ? d.gate.t_draft / d.gate.t_fwd[1] : 0;
        for (int32_t S = 1; S < SD_STATS_GATE_N; S++) {
            const double cv = sd_gate_cv(&d.gate, S);
            stats->gate_cv[S] = cv > 0 ? cv : 0;
            stats->gate_accept[S] = d.pos_try[S] ? (double)d.pos_hit[S] / (double)d.pos_try[S] : 0;
        }
    }
    stats->draft_forwards = drafter && drafter->n_forwards ? drafter->n_forwards(drafter->self) : 0;
    *n_out = d.n_out;
    decoder_free(&d);
    return st;
}
