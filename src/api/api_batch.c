/* specdec_batch: several requests over one model, one ragged forward per
 * step (docs/BATCHING.md).
 *
 * Each request runs specdec_generate unchanged on its slot's context, on a
 * thread of its own; the slot's target context has a forward hook (model.h
 * sd_context_set_forward_hook) that, instead of running a forward, posts it
 * to the batch and sleeps until a step has run it. specdec_batch_step waits
 * until every active request is either asleep on a posted forward or done
 * (so no request thread runs while the step does), runs one
 * sd_forward_ragged over all the posted rows, and wakes them. The decode
 * loop, the drafters, the gate, the verify rules and the rollback
 * disciplines are thus the single-request code, and the ragged forward is
 * batch invariant per sequence: a request's tokens are the ones it gets
 * alone. The request threads only compute between steps (drafting,
 * sampling, rollback); their callbacks are queued and delivered on the
 * caller's thread inside specdec_batch_step. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "core/checked.h"
#include "core/clock.h"
#include "decode/step_share.h"

#define MAX_SLOTS 64
#define N_RECENT 8       /* a slot's last forwards kept for its gate's cost */

typedef enum slot_state {
    SLOT_FREE = 0,
    SLOT_BUSY,    /* its thread is computing */
    SLOT_WAITING, /* its thread sleeps on a posted forward */
    SLOT_DONE,    /* generate returned; not yet reported */
} slot_state;

/* A piece of text queued for delivery. */
typedef struct piece_ev {
    char *text;
    size_t len;
    int32_t n_tokens, n_drafted;
    specdec_stats stats;
    specdec_token_logprob *lp; /* a copy of the piece's log-probabilities, or NULL */
    int32_t n_lp;
} piece_ev;

/* A forward the slot took part in: when posted, how long it slept, its share of the step. */
typedef struct recent_fwd {
    double t_post, waited, share;
} recent_fwd;

typedef struct sd_api_slot {
    specdec_batch *b;
    int32_t id;
    specdec_context *ctx;
    slot_state state;
    pthread_t thread;
    /* the request */
    specdec_token *prompt;
    size_t n_prompt;
    specdec_generate_params gp;
    char **stop; /* copies of gp.stop */
    specdec_logit_bias *bias; /* a copy of gp.logit_bias */
    specdec_piece_cb on_piece;
    specdec_batch_done_cb on_done;
    void *user;
    bool cancel;
    /* the posted forward (state WAITING) and its outcome */
    sd_ragged_seq fwd;
    bool fwd_done;
    sd_status fwd_st;
    sd_err fwd_err;
    double t_post;
    recent_fwd recent[N_RECENT];
    int32_t n_recent;
    /* what the step delivers */
    piece_ev *ev;
    size_t n_ev, cap_ev;
    bool ev_oom;
    specdec_status status;
    specdec_stats stats;
    specdec_error err;
} sd_api_slot;

struct specdec_batch {
    const specdec_model *model;
    sd_ctx_group *g;
    int32_t n_slots, n_batch, max_rows;
    pthread_mutex_t mu;
    pthread_cond_t to_engine; /* a slot posted a forward or ended */
    pthread_cond_t to_slots;  /* a step ran the posted forwards */
    sd_api_slot *slots;
    double *t_rows;           /* [max_rows + 1]: smoothed seconds of a step of R rows, 0 = unseen */
    sd_ragged_seq *rs;        /* [n_slots] */
    sd_api_slot **in_step;    /* [n_slots] */
};

specdec_batch_params specdec_batch_default_params(void) {
    return (specdec_batch_params){.n_slots = 4, .ctx = specdec_context_default_params()};
}

int32_t specdec_batch_n_slots(const specdec_batch *b) { return b ? b->n_slots : 0; }

int32_t specdec_batch_n_active(const specdec_batch *b) {
    if (!b) return 0;
    specdec_batch *m = (specdec_batch *)b; /* the lock only: request threads write the states */
    int32_t n = 0;
    pthread_mutex_lock(&m->mu);
    for (int32_t i = 0; i < b->n_slots; i++) n += b->slots[i].state != SLOT_FREE;
    pthread_mutex_unlock(&m->mu);
    return n;
}

/* ---- the request threads' side ---- */

/* The forward hook of a slot's target context: posts the batch in chunks of
 * at most n_batch rows (as sd_forward_tail splits it) and sleeps on each
 * until a step ran it. */
static sd_status slot_forward(void *user, sd_context *c, const int32_t *tokens, int32_t S, int32_t n_tail,
                              float *logits, sd_err *err) {
    sd_api_slot *s = user;
    specdec_batch *b = s->b;
    const int64_t V = sd_context_model(c)->hp.n_vocab;
    const int32_t first = S - n_tail;
    for (int32_t done = 0; done < S;) {
        const int32_t n = S - done < b->n_batch ? S - done : b->n_batch;
        const int32_t r0 = first > done ? (first - done < n ? first - done : n) : 0;
        pthread_mutex_lock(&b->mu);
        s->fwd = (sd_ragged_seq){.c = c, .tokens = tokens + done, .S = n, .n_tail = n - r0,
                                 .logits = r0 < n ? logits + (int64_t)(done + r0 - first) * V : NULL};
        s->fwd_done = false;
        s->t_post = sd_now_s();
        s->state = SLOT_WAITING;
        pthread_cond_broadcast(&b->to_engine);
        while (!s->fwd_done) pthread_cond_wait(&b->to_slots, &b->mu);
        s->state = SLOT_BUSY;
        const sd_status st = s->fwd_st;
        if (st != SD_OK && err) *err = s->fwd_err;
        pthread_mutex_unlock(&b->mu);
        if (st != SD_OK) return st;
        done += n;
    }
    return SD_OK;
}

double sd_api_slot_cost(struct sd_api_slot *s, int32_t S, double seconds) {
    (void)S;
    const double t_start = sd_now_s() - seconds;
    double waited = 0, share = 0;
    pthread_mutex_lock(&s->b->mu);
    const int32_t n = s->n_recent < N_RECENT ? s->n_recent : N_RECENT;
    for (int32_t i = 0; i < n; i++)
        if (s->recent[i].t_post >= t_start) waited += s->recent[i].waited, share += s->recent[i].share;
    pthread_mutex_unlock(&s->b->mu);
    const double own = seconds - waited; /* drafting, sampling, rollback: the slot's own work */
    return (own > 0 ? own : 0) + share;
}

/* specdec_generate's piece callback on the request thread: queued for the step. */
static bool slot_piece(const specdec_piece *p, void *user) {
    sd_api_slot *s = user;
    pthread_mutex_lock(&s->b->mu);
    if (s->n_ev == s->cap_ev) {
        size_t cap = s->cap_ev ? 2 * s->cap_ev : 16;
        size_t bytes = 0;
        piece_ev *ev = sd_mul_size(cap, sizeof *ev, &bytes) ? realloc(s->ev, bytes) : NULL;
        if (ev) s->ev = ev, s->cap_ev = cap;
    }
    char *text = malloc(p->len + 1);
    specdec_token_logprob *lp = p->n_logprobs > 0 ? sd_malloc_array((size_t)p->n_logprobs, sizeof *lp) : NULL;
    if (s->n_ev < s->cap_ev && text && (p->n_logprobs <= 0 || lp)) {
        memcpy(text, p->text, p->len);
        text[p->len] = 0;
        if (lp) memcpy(lp, p->logprobs, (size_t)p->n_logprobs * sizeof *lp);
        s->ev[s->n_ev++] = (piece_ev){.text = text, .len = p->len, .n_tokens = p->n_tokens,
                                      .n_drafted = p->n_drafted, .stats = *p->stats, .lp = lp,
                                      .n_lp = lp ? p->n_logprobs : 0};
    } else {
        free(lp);
        free(text);
        s->ev_oom = true;
        s->cancel = true; /* a piece that cannot be delivered ends the request */
    }
    const bool go_on = !s->cancel;
    pthread_mutex_unlock(&s->b->mu);
    return go_on;
}

static bool slot_abort(void *user) {
    sd_api_slot *s = user;
    pthread_mutex_lock(&s->b->mu);
    const bool stop = s->cancel;
    pthread_mutex_unlock(&s->b->mu);
    return stop;
}

static void *slot_main(void *arg) {
    sd_api_slot *s = arg;
    specdec_generate_params g = s->gp;
    g.abort = slot_abort;
    specdec_stats stats;
    specdec_error err = {0};
    specdec_status st = specdec_generate(s->ctx, s->prompt, s->n_prompt, &g, slot_piece, s, &stats, &err);
    pthread_mutex_lock(&s->b->mu);
    if (st == SPECDEC_OK && s->ev_oom) st = specdec_error_set(&err, SPECDEC_ERR_NOMEM, "out of memory for the pieces");
    s->status = st;
    s->stats = stats;
    s->err = err;
    s->state = SLOT_DONE;
    pthread_cond_broadcast(&s->b->to_engine);
    pthread_mutex_unlock(&s->b->mu);
    return NULL;
}

/* ---- the engine's side ---- */

static void request_free(sd_api_slot *s) {
    for (int32_t i = 0; s->stop && i < s->gp.n_stop; i++) free(s->stop[i]);
    free(s->stop);
    free(s->prompt);
    free(s->bias);
    s->stop = NULL;
    s->prompt = NULL;
    s->bias = NULL;
}

/* Under the lock: until no request thread computes. */
static void settle(specdec_batch *b) {
    for (;;) {
        bool busy = false;
        for (int32_t i = 0; i < b->n_slots; i++) busy = busy || b->slots[i].state == SLOT_BUSY;
        if (!busy) return;
        pthread_cond_wait(&b->to_engine, &b->mu);
    }
}

/* Delivers every slot's queued pieces, then the end of the requests that
 * ended; called without the lock, when no request thread computes. The
 * callbacks may add or cancel requests. */
static void deliver(specdec_batch *b) {
    for (int32_t i = 0; i < b->n_slots; i++) {
        sd_api_slot *s = &b->slots[i];
        pthread_mutex_lock(&b->mu);
        piece_ev *ev = s->ev;
        size_t n = s->n_ev;
        const slot_state state = s->state;
        s->ev = NULL;
        s->n_ev = s->cap_ev = 0;
        pthread_mutex_unlock(&b->mu);
        bool go_on = true;
        for (size_t k = 0; k < n; k++) {
            if (go_on && s->on_piece) {
                specdec_piece p = {.text = ev[k].text, .len = ev[k].len, .n_tokens = ev[k].n_tokens,
                                   .n_drafted = ev[k].n_drafted, .stats = &ev[k].stats, .logprobs = ev[k].lp,
                                   .n_logprobs = ev[k].n_lp};
                go_on = s->on_piece(&p, s->user);
            }
            free(ev[k].text);
            free(ev[k].lp);
        }
        free(ev);
        if (!go_on) specdec_batch_cancel(b, s->id);
        if (state != SLOT_DONE) continue;
        pthread_join(s->thread, NULL);
        size_t n_hist = 0;
        const specdec_token *hist = specdec_context_tokens(s->ctx, &n_hist);
        const size_t n_gen = s->status == SPECDEC_OK && n_hist >= s->n_prompt ? n_hist - s->n_prompt : 0;
        specdec_batch_result res = {.slot = s->id, .status = s->status, .err = &s->err, .stats = &s->stats,
                                    .tokens = n_gen ? hist + s->n_prompt : NULL, .n_tokens = n_gen};
        if (s->on_done) s->on_done(&res, s->user);
        request_free(s);
        pthread_mutex_lock(&b->mu);
        s->state = SLOT_FREE;
        pthread_mutex_unlock(&b->mu);
    }
}

/* Learns a step of R rows over n requests that took T seconds, and each
 * request's share of it (decode/step_share.h). */
static void learn_step(specdec_batch *b, int32_t n, int32_t R, double T, double *share) {
    sd_step_learn(b->t_rows, b->max_rows, R, T);
    for (int32_t i = 0; i < n; i++) share[i] = sd_step_share(b->t_rows, b->max_rows, R, b->rs[i].S, n, T);
}

specdec_status specdec_batch_step(specdec_batch *b, specdec_error *err) {
    if (!b) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_batch_step: NULL batch");
    pthread_mutex_lock(&b->mu);
    settle(b);
    pthread_mutex_unlock(&b->mu);
    deliver(b);
    pthread_mutex_lock(&b->mu);
    settle(b);
    int32_t n = 0, R = 0;
    for (int32_t i = 0; i < b->n_slots; i++) {
        sd_api_slot *s = &b->slots[i];
        if (s->state != SLOT_WAITING || s->fwd_done) continue;
        b->in_step[n] = s;
        b->rs[n++] = s->fwd;
        R += s->fwd.S;
    }
    pthread_mutex_unlock(&b->mu);
    if (n == 0) return SPECDEC_OK;
    sd_err e = {0};
    const double t0 = sd_now_s();
    const sd_status st = sd_forward_ragged(b->g, b->rs, n, &e);
    const double t1 = sd_now_s();
    double share[MAX_SLOTS];
    learn_step(b, n, R, t1 - t0, share);
    pthread_mutex_lock(&b->mu);
    for (int32_t i = 0; i < n; i++) {
        sd_api_slot *s = b->in_step[i];
        s->fwd_st = st;
        s->fwd_err = e;
        s->fwd_done = true;
        s->recent[s->n_recent++ % N_RECENT] = (recent_fwd){.t_post = s->t_post, .waited = t1 - s->t_post,
                                                          .share = share[i]};
    }
    pthread_cond_broadcast(&b->to_slots);
    for (int32_t i = 0; i < n; i++) /* woken: not computing until it runs, but no longer asleep */
        if (b->in_step[i]->state == SLOT_WAITING) b->in_step[i]->state = SLOT_BUSY;
    settle(b);
    pthread_mutex_unlock(&b->mu);
    deliver(b);
    return st == SD_OK ? SPECDEC_OK : sd_api_error(err, &e);
}

int32_t specdec_batch_next_slot(const specdec_batch *b) {
    if (!b) return -1;
    specdec_batch *m = (specdec_batch *)b; /* the lock only: request threads write the states */
    int32_t id = -1;
    pthread_mutex_lock(&m->mu);
    for (int32_t i = 0; i < b->n_slots && id < 0; i++)
        if (b->slots[i].state == SLOT_FREE) id = i;
    pthread_mutex_unlock(&m->mu);
    return id;
}

bool specdec_batch_slot_is_free(const specdec_batch *b, int32_t slot) {
    if (!b || slot < 0 || slot >= b->n_slots) return false;
    specdec_batch *m = (specdec_batch *)b; /* the lock only, as next_slot */
    pthread_mutex_lock(&m->mu);
    const bool is_free = b->slots[slot].state == SLOT_FREE;
    pthread_mutex_unlock(&m->mu);
    return is_free;
}

specdec_context *specdec_batch_slot_context(specdec_batch *b, int32_t slot) {
    return b && slot >= 0 && slot < b->n_slots ? b->slots[slot].ctx : NULL;
}

void specdec_batch_cancel(specdec_batch *b, int32_t slot) {
    if (!b || slot < 0 || slot >= b->n_slots) return;
    pthread_mutex_lock(&b->mu);
    if (b->slots[slot].state != SLOT_FREE) b->slots[slot].cancel = true;
    pthread_mutex_unlock(&b->mu);
}

/* Copies the request into slot s (prompt, params, stop strings). */
static specdec_status request_copy(sd_api_slot *s, const specdec_token *prompt, size_t n_prompt,
                                   const specdec_generate_params *gp, specdec_error *err) {
    s->gp = *gp;
    s->n_prompt = n_prompt;
    s->prompt = sd_malloc_array(n_prompt, sizeof *prompt);
    s->stop = gp->n_stop > 0 ? calloc((size_t)gp->n_stop, sizeof *s->stop) : NULL;
    s->bias = gp->n_logit_bias > 0 ? sd_malloc_array((size_t)gp->n_logit_bias, sizeof *s->bias) : NULL;
    bool ok = s->prompt && (gp->n_stop == 0 || s->stop) && (gp->n_logit_bias <= 0 || s->bias);
    for (int32_t i = 0; ok && i < gp->n_stop; i++) ok = (s->stop[i] = strdup(gp->stop[i])) != NULL;
    if (!ok) {
        request_free(s);
        return sd_api_fail(err, SPECDEC_ERR_NOMEM, "out of memory");
    }
    memcpy(s->prompt, prompt, n_prompt * sizeof *prompt);
    s->gp.stop = (const char *const *)s->stop;
    if (s->bias) memcpy(s->bias, gp->logit_bias, (size_t)gp->n_logit_bias * sizeof *s->bias);
    s->gp.logit_bias = s->bias;
    return SPECDEC_OK;
}

specdec_status specdec_batch_add(specdec_batch *b, const specdec_token *prompt, size_t n_prompt,
                                 const specdec_generate_params *params, specdec_piece_cb on_piece,
                                 specdec_batch_done_cb on_done, void *user, int32_t *slot, specdec_error *err) {
    return specdec_batch_add_at(b, -1, prompt, n_prompt, params, on_piece, on_done, user, slot, err);
}

specdec_status specdec_batch_add_at(specdec_batch *b, int32_t at, const specdec_token *prompt, size_t n_prompt,
                                    const specdec_generate_params *params, specdec_piece_cb on_piece,
                                    specdec_batch_done_cb on_done, void *user, int32_t *slot, specdec_error *err) {
    if (slot) *slot = -1;
    if (!b || !prompt) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_batch_add: NULL batch or prompt");
    if (n_prompt == 0) return sd_api_fail(err, SPECDEC_ERR_ARG, "the prompt is empty");
    const specdec_generate_params gp = params ? *params : specdec_generate_default_params();
    if (gp.tree_nodes > 0) return sd_api_fail(err, SPECDEC_ERR_ARG, "token trees are not supported in a batch");
    if (gp.abort)
        return sd_api_fail(err, SPECDEC_ERR_ARG, "a batched request has no abort hook: use specdec_batch_cancel");
    /* only this thread frees a slot, but request threads write the states */
    if (at >= b->n_slots) return sd_api_fail(err, SPECDEC_ERR_ARG, "slot %d out of range (%d slots)", at, b->n_slots);
    if (at >= 0 && !specdec_batch_slot_is_free(b, at))
        return sd_api_fail(err, SPECDEC_ERR_ARG, "slot %d holds a request", at);
    const int32_t id = at >= 0 ? at : specdec_batch_next_slot(b);
    sd_api_slot *s = id >= 0 ? &b->slots[id] : NULL;
    if (!s) return sd_api_fail(err, SPECDEC_ERR_ARG, "no free slot (all %d hold a request)", b->n_slots);
    if (n_prompt > (size_t)specdec_context_n_ctx(s->ctx))
        return sd_api_fail(err, SPECDEC_ERR_CONTEXT, "the prompt has %zu tokens, more than the context size %d",
                           n_prompt, specdec_context_n_ctx(s->ctx));
    specdec_status st = specdec_generate_params_check(s->ctx, &gp, err);
    if (st == SPECDEC_OK) st = request_copy(s, prompt, n_prompt, &gp, err);
    if (st != SPECDEC_OK) return st;
    s->on_piece = on_piece;
    s->on_done = on_done;
    s->user = user;
    s->cancel = false;
    s->ev_oom = false;
    s->n_recent = 0;
    pthread_mutex_lock(&b->mu);
    s->state = SLOT_BUSY; /* before the thread runs: the next step waits for its first forward */
    pthread_mutex_unlock(&b->mu);
    if (pthread_create(&s->thread, NULL, slot_main, s) != 0) {
        pthread_mutex_lock(&b->mu);
        s->state = SLOT_FREE;
        pthread_mutex_unlock(&b->mu);
        request_free(s);
        return sd_api_fail(err, SPECDEC_ERR_NOMEM, "cannot start a request thread");
    }
    if (slot) *slot = s->id;
    return SPECDEC_OK;
}

specdec_status specdec_batch_init(const specdec_model *model, const specdec_batch_params *params,
                                  specdec_batch **out, specdec_error *err) {
    if (!out) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_batch_init: out is NULL");
    *out = NULL;
    if (!model) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_batch_init: model is NULL");
    specdec_batch_params p = params ? *params : specdec_batch_default_params();
    if (p.n_slots <= 0) p.n_slots = 4;
    if (p.n_slots > MAX_SLOTS) return sd_api_fail(err, SPECDEC_ERR_ARG, "n_slots must be in [1, %d]", MAX_SLOTS);
    specdec_batch *b = calloc(1, sizeof *b);
    if (!b) return sd_api_fail(err, SPECDEC_ERR_NOMEM, "out of memory");
    b->model = model;
    b->n_slots = p.n_slots;
    pthread_mutex_init(&b->mu, NULL);
    pthread_cond_init(&b->to_engine, NULL);
    pthread_cond_init(&b->to_slots, NULL);
    b->slots = calloc((size_t)p.n_slots, sizeof *b->slots);
    b->rs = calloc((size_t)p.n_slots, sizeof *b->rs);
    b->in_step = calloc((size_t)p.n_slots, sizeof *b->in_step);
    specdec_status st = b->slots && b->rs && b->in_step ? SPECDEC_OK
                                                        : sd_api_fail(err, SPECDEC_ERR_NOMEM, "out of memory");
    for (int32_t i = 0; st == SPECDEC_OK && i < p.n_slots; i++) {
        sd_api_slot *s = &b->slots[i];
        s->b = b;
        s->id = i;
        st = specdec_context_init(model, &p.ctx, &s->ctx, err);
        if (st != SPECDEC_OK) break;
        s->ctx->slot = s;
        sd_context_set_forward_hook(s->ctx->tctx, slot_forward, s);
    }
    if (st == SPECDEC_OK) {
        const sd_context *c0 = b->slots[0].ctx->tctx;
        b->n_batch = sd_context_n_batch(c0);
        b->max_rows = b->n_batch * p.n_slots;
        b->t_rows = calloc((size_t)b->max_rows + 1, sizeof *b->t_rows);
        sd_err e = {0};
        if (!b->t_rows) st = sd_api_fail(err, SPECDEC_ERR_NOMEM, "out of memory");
        else if (sd_ctx_group_init(model->m, sd_context_n_ctx(c0), b->max_rows, sd_context_n_threads(c0), &b->g, &e) !=
                 SD_OK)
            st = sd_api_error(err, &e);
    }
    if (st != SPECDEC_OK) {
        specdec_batch_free(b);
        return st;
    }
    *out = b;
    return SPECDEC_OK;
}

specdec_status specdec_batch_commit_memory(specdec_batch *b, specdec_error *err) {
    if (!b) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_batch_commit_memory: batch is NULL");
    sd_err e = {0};
    if (sd_ctx_group_commit(b->g, &e) != SD_OK) return sd_api_error(err, &e);
    for (int32_t i = 0; i < b->n_slots; i++) {
        /* a slot's target forwards run in the group's activations (slot_forward);
         * its draft's in the draft context's own */
        sd_context_commit(b->slots[i].ctx->tctx, false);
        if (b->slots[i].ctx->dctx) sd_context_commit(b->slots[i].ctx->dctx, true);
    }
    return SPECDEC_OK;
}

void specdec_batch_free(specdec_batch *b) {
    if (!b) return;
    if (b->slots) {
        for (int32_t i = 0; i < b->n_slots; i++) specdec_batch_cancel(b, i);
        while (specdec_batch_n_active(b) > 0) specdec_batch_step(b, NULL);
        for (int32_t i = 0; i < b->n_slots; i++) specdec_context_free(b->slots[i].ctx);
    }
    sd_ctx_group_free(b->g);
    free(b->slots);
    free(b->rs);
    free(b->in_step);
    free(b->t_rows);
    pthread_cond_destroy(&b->to_engine);
    pthread_cond_destroy(&b->to_slots);
    pthread_mutex_destroy(&b->mu);
    free(b);
}
