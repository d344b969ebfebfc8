/* The chain-drafting core of the head drafters (drafter_head.h: the pairs a
 * head's context holds and how they roll back with the target). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "decode/drafter_head.h"
#include "decode/sampler.h"
#include "decode/tree.h"

typedef struct head {
    const sd_head_kind *kind;
    const sd_model *model, *target;
    sd_model *owned;         /* model again when the drafter owns it (kind->free_head) */
    sd_context *tctx;        /* the target's (borrowed): its hidden rows */
    sd_context *hc;          /* the head's own (one layer of KV cache) */
    int32_t n_batch, n_logits;
    int64_t n_row;           /* floats of one target hidden row (all requested ids) */
    int32_t *saved, cap;     /* saved[0..n_real]: the context tokens the real pairs were built from */
    int32_t n_real;          /* head indices 0..n_real-1 hold real pairs */
    float *rows;             /* [n_batch][n_row] target rows to encode (kind->encode), else NULL */
    float *g, *y;            /* [n_batch][n_embd] each: the head's input hidden and its output */
    float *logits;           /* [n_logits] */
    sd_sampler cs;           /* the target's sampling, temp > 0 while coupled (drafter.h couple); n_vocab 0: none */
    float *full;             /* [target n_vocab] a mapped head's logits in target ids, -inf elsewhere */
    int64_t n_forwards;
    bool own_hook;           /* the drafter turned the target's hidden-state hook on: off at free */
} head;

/* Real pairs still valid for ctx: pair P needs ctx[0..P+1] unchanged (the
 * target's row P depends on ctx[0..P], the pair's token is ctx[P+1]). */
static int32_t valid_pairs(const head *e, const int32_t *ctx, int32_t n) {
    int32_t m = 0, n_saved = e->n_real > 0 ? e->n_real + 1 : 0;
    while (m < n_saved && m < n && e->saved[m] == ctx[m]) m++;
    return m > 0 ? m - 1 : 0;
}

/* Runs the real pairs P = from..to-1 (to <= target len); the last row's
 * logits and y stay in e->logits and e->y. */
static sd_status catch_up(head *e, const int32_t *ctx, int32_t from, int32_t to, sd_err *err) {
    const int64_t E = e->model->hp.n_embd;
    float *dst = e->kind->encode ? e->rows : e->g;
    for (int32_t P = from; P < to;) {
        int32_t n = to - P < e->n_batch ? to - P : e->n_batch;
        for (int32_t s = 0; s < n; s++) {
            const float *h = sd_context_hidden(e->tctx, P + s);
            if (!h) return sd_err_set(err, SD_ERR_ARG, "%s: no target hidden row for position %d", e->kind->name, P + s);
            memcpy(dst + s * e->n_row, h, (size_t)e->n_row * sizeof *h);
        }
        if (e->kind->encode) e->kind->encode(e->hc, e->rows, n, e->g);
        int32_t n_tail = P + n == to;
        sd_status st = e->kind->forward(e->hc, e->target, ctx + P + 1, e->g, n, e->y, n_tail, e->logits, err);
        if (st != SD_OK) return st;
        e->n_forwards++;
        P += n;
    }
    if (to > from) memmove(e->y, e->y + (int64_t)((to - from - 1) % e->n_batch) * E, (size_t)E * sizeof *e->y);
    return SD_OK;
}

/* The coupled draw for absolute position pos (drafter.h couple): a head
 * with its own token list (kind->token) spreads its logits over the
 * target's ids first, so both races give token t the same noise. */
static int32_t pick_coupled(head *e, int64_t pos) {
    const float *lg = e->logits;
    if (e->kind->token) {
        for (int32_t i = 0; i < e->cs.n_vocab; i++) e->full[i] = -INFINITY;
        for (int32_t id = 0; id < e->n_logits; id++) {
            int32_t t = e->kind->token(e->model, id);
            if (t >= 0 && t < e->cs.n_vocab) e->full[t] = e->logits[id];
        }
        lg = e->full;
    }
    return sd_sampler_pick_at(&e->cs, lg, pos);
}

/* The head's w best target tokens (w = 1: its argmax, or the coupled draw
 * for position pos), best first. */
static void pick_top(head *e, int w, int32_t *out, int64_t pos) {
    if (w == 1 && e->cs.s.temp > 0) {
        out[0] = pick_coupled(e, pos);
        return;
    }
    if (w == 1) out[0] = sd_argmax(e->logits, e->n_logits);
    else sd_top_w(e->logits, e->n_logits, w, out);
    if (e->kind->token)
        for (int r = 0; r < w; r++) out[r] = out[r] < 0 ? -1 : e->kind->token(e->model, out[r]);
}

static bool save_ctx(head *e, const int32_t *ctx, int32_t n) {
    if (n > e->cap) {
        int32_t cap = n > 2 * e->cap ? n : 2 * e->cap;
        int32_t *s = realloc(e->saved, (size_t)cap * sizeof *s);
        if (!s) return false;
        e->saved = s, e->cap = cap;
    }
    memcpy(e->saved, ctx, (size_t)n * sizeof *ctx);
    return true;
}

/* Brings the real pairs up to P = n-2 (re-running that one if already there:
 * its logits are what d1 comes from). */
static sd_status sync_pairs(head *e, const int32_t *ctx, int32_t n, bool want_last, sd_err *err) {
    int32_t keep = valid_pairs(e, ctx, n);
    if (want_last && keep > n - 2) keep = n - 2;
    sd_context_truncate(e->hc, keep);
    e->n_real = keep;
    sd_status st = catch_up(e, ctx, keep, n - 1, err);
    if (st != SD_OK) return st;
    if (!save_ctx(e, ctx, n)) return sd_err_set(err, SD_ERR_NOMEM, "%s: out of memory", e->kind->name);
    e->n_real = n - 1;
    return SD_OK;
}

/* The chain of up to k greedy tokens, with each step's w best in out[k][w]. */
static int head_chain(head *e, const int32_t *ctx, int32_t n, int k, int w, int32_t *out, sd_err *err) {
    const int64_t E = e->model->hp.n_embd;
    /* n - 1 rows needed from the target; the chain needs indices up to n - 2 + k */
    if (n < 2 || sd_context_len(e->tctx) < n - 1) return 0;
    int32_t room = sd_context_n_ctx(e->hc) - (n - 1);
    if (k > room) k = room;
    if (k < 1) return 0;
    if (sync_pairs(e, ctx, n, true, err) != SD_OK) return -1;
    int got = 0;
    for (;;) {
        int32_t *tok = out + (size_t)got * (size_t)w;
        pick_top(e, w, tok, (int64_t)n + got);
        if (++got == k) break;
        memcpy(e->g, e->y, (size_t)E * sizeof *e->g);
        if (e->kind->forward(e->hc, e->target, tok, e->g, 1, e->y, 1, e->logits, err) != SD_OK) return -1;
        e->n_forwards++;
    }
    return got;
}

static int head_propose(void *self, const int32_t *ctx, int32_t n, int k, int32_t *out, float *q, sd_err *err) {
    (void)q; /* proposals are the head's argmax: deterministic, q one-hot */
    return head_chain(self, ctx, n, k, 1, out, err);
}

static int head_propose_top(void *self, const int32_t *ctx, int32_t n, int k, int w, int32_t *cand, sd_err *err) {
    return head_chain(self, ctx, n, k, w < 1 ? 1 : w, cand, err);
}

/* Couples chain proposals (not tree candidates: those stay the best w). The
 * target-sized scratch is made on the first coupled generation; without the
 * memory the head keeps proposing its argmax, which only costs speed. */
static void head_couple(void *self, const sd_sampling *s) {
    head *e = self;
    e->cs.s.temp = 0; /* argmax proposals unless coupled below */
    if (!s || s->temp <= 0) return;
    const int32_t V = e->target->hp.n_vocab;
    if (e->cs.n_vocab == 0) {
        bool ok = sd_sampler_init(&e->cs, s, V, NULL) == SD_OK;
        if (ok && e->kind->token) ok = (e->full = sd_malloc_array((size_t)V, sizeof *e->full)) != NULL;
        if (!ok) {
            sd_sampler_free(&e->cs);
            e->cs = (sd_sampler){0};
            return;
        }
    }
    e->cs.s = *s;
}

static int head_prefill(void *self, const int32_t *ctx, int32_t n, sd_err *err) {
    head *e = self;
    if (n < 2 || sd_context_len(e->tctx) < n || n > sd_context_n_ctx(e->hc)) return 0; /* propose will see */
    return sync_pairs(e, ctx, n, false, err) == SD_OK ? 0 : -1;
}

static void head_reset(void *self) {
    head *e = self;
    sd_context_truncate(e->hc, 0);
    e->n_real = 0;
    e->n_forwards = 0;
}

static int64_t head_n_forwards(void *self) { return ((head *)self)->n_forwards; }

static void head_free(void *self) {
    head *e = self;
    if (!e) return;
    if (e->tctx && e->own_hook) sd_context_request_hidden(e->tctx, NULL, 0, NULL); /* no head asks any more */
    sd_context_free(e->hc);
    if (e->owned) e->kind->free_head(e->owned);
    sd_sampler_free(&e->cs);
    free(e->saved), free(e->rows), free(e->g), free(e->y), free(e->logits), free(e->full);
    free(e);
}

sd_status sd_drafter_head_init(sd_drafter *d, const sd_head_kind *kind, const sd_model *model, sd_model *owned,
                               sd_context *target, const int32_t *ids, int n_ids, int32_t n_logits, int n_threads,
                               int32_t n_batch, sd_err *err) {
    head *e = calloc(1, sizeof *e);
    if (!e) {
        if (owned) kind->free_head(owned);
        return sd_err_set(err, SD_ERR_NOMEM, "%s: out of memory", kind->name);
    }
    e->kind = kind, e->model = model, e->owned = owned, e->target = sd_context_model(target);
    e->n_batch = n_batch, e->n_logits = n_logits;
    e->n_row = (int64_t)n_ids * e->target->hp.n_embd;
    sd_status st = n_batch < 1 ? sd_err_set(err, SD_ERR_ARG, "%s: n_batch must be >= 1", kind->name) : SD_OK;
    if (st == SD_OK) {
        const size_t nb = (size_t)n_batch, E = (size_t)model->hp.n_embd;
        if (kind->encode) e->rows = sd_malloc_array(nb, (size_t)e->n_row * sizeof *e->rows);
        e->g = sd_malloc_array(nb, E * sizeof *e->g);
        e->y = sd_malloc_array(nb, E * sizeof *e->y);
        e->logits = sd_malloc_array((size_t)n_logits, sizeof *e->logits);
        if ((kind->encode && !e->rows) || !e->g || !e->y || !e->logits)
            st = sd_err_set(err, SD_ERR_NOMEM, "%s: out of memory", kind->name);
    }
    if (st == SD_OK) st = sd_context_init(model, sd_context_n_ctx(target), n_batch, n_threads, &e->hc, err);
    /* a hook already on for these layers (an API context keeps one while its
     * calls draft with a head, so a reused prefix has its rows) is left as it is */
    e->own_hook = !sd_context_hidden_is(target, ids, n_ids);
    if (st == SD_OK && e->own_hook) st = sd_context_request_hidden(target, ids, n_ids, err);
    if (st == SD_OK) e->tctx = target;
    if (st != SD_OK) {
        head_free(e);
        return st;
    }
    *d = (sd_drafter){.name = kind->name, .self = e, .costly = true, .stochastic = false, .reset = head_reset,
                      .propose = head_propose, .propose_top = head_propose_top, .prefill = head_prefill,
                      .couple = head_couple,
                      .n_forwards = head_n_forwards, .free = head_free};
    return SD_OK;
}
