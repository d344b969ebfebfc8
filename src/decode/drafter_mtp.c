/* MTP drafter (DESIGN.md §7; llama.cpp common/speculative.cpp, the "single
 * trained head" MTP mode): the target file's own MTP block drafts a chain of
 * K greedy tokens, one head step per token.
 *
 * Head position p holds the pair (ctx[p], h_{p-1}), h the target's hidden
 * after output_norm — "real" pairs, built only from rows the target has run;
 * positions start at 1 (model.h: head index i = position i + 1). With the
 * committed context ctx[0..N) (ctx[N-1] = a0, not yet run by the target) the
 * target holds rows 0..N-2, so the real pairs go up to p = N-1 = (a0,
 * h_{N-2}), whose logits give d1. Each further step feeds (d_i, y) at the
 * next position, y the head's own output after head_norm. Rollback is a
 * counter, as for the target: the next propose keeps the real pairs whose
 * tokens still match the context and drops the rest (the chained steps
 * always), then catches up on the target's new rows in one batched head
 * forward. */
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "decode/drafter.h"
#include "decode/sampler.h"

typedef struct mtp {
    sd_model *view;          /* owned: the target's MTP block as a one-layer model */
    sd_context *tctx;        /* the target's (borrowed): its hidden rows */
    sd_context *hc;          /* the head's own (one layer of KV cache) */
    int32_t n_batch, n_vocab;
    int32_t *saved, cap;     /* saved[0..n_real]: the context tokens the real pairs were built from */
    int32_t n_real;          /* head indices 0..n_real-1 hold the real pairs of positions 1..n_real */
    float *h, *y;            /* [n_batch][n_embd] each */
    float *logits;           /* [n_vocab] */
    int64_t n_forwards;
    bool own_hook;           /* the drafter turned the target's hidden-state hook on: off at free */
} mtp;

/* Real pairs still valid for ctx: the pair of position p needs ctx[0..p]
 * unchanged (the target's row p-1 depends on ctx[0..p-1], the token is ctx[p]). */
static int32_t valid_pairs(const mtp *e, const int32_t *ctx, int32_t n) {
    int32_t m = 0, n_saved = e->n_real > 0 ? e->n_real + 1 : 0;
    while (m < n_saved && m < n && e->saved[m] == ctx[m]) m++;
    return m > 0 ? m - 1 : 0;
}

/* Runs the real pairs of positions from+1..to (head indices from..to-1; the
 * target holds rows up to to-1); the last row's logits and y stay in
 * e->logits and e->y. */
static sd_status catch_up(mtp *e, const int32_t *ctx, int32_t from, int32_t to, sd_err *err) {
    const int64_t E = e->view->hp.n_embd;
    for (int32_t i = from; i < to;) {
        int32_t n = to - i < e->n_batch ? to - i : e->n_batch;
        for (int32_t s = 0; s < n; s++) {
            const float *h = sd_context_hidden(e->tctx, i + s); /* h_{p-1} for p = i + s + 1 */
            if (!h) return sd_err_set(err, SD_ERR_ARG, "mtp: no target hidden row for position %d", i + s);
            memcpy(e->h + s * E, h, (size_t)E * sizeof *h);
        }
        int32_t n_tail = i + n == to;
        sd_status st = sd_mtp_forward(e->hc, ctx + i + 1, e->h, n, e->y, n_tail, e->logits, err);
        if (st != SD_OK) return st;
        e->n_forwards++;
        i += n;
    }
    if (to > from) memmove(e->y, e->y + (int64_t)((to - from - 1) % e->n_batch) * E, (size_t)E * sizeof *e->y);
    return SD_OK;
}

static bool save_ctx(mtp *e, const int32_t *ctx, int32_t n) {
    if (n > e->cap) {
        int32_t cap = n > 2 * e->cap ? n : 2 * e->cap;
        int32_t *s = realloc(e->saved, (size_t)cap * sizeof *s);
        if (!s) return false;
        e->saved = s, e->cap = cap;
    }
    memcpy(e->saved, ctx, (size_t)n * sizeof *ctx);
    return true;
}

/* Brings the real pairs up to position n-1 (re-running that one if already
 * there: its logits are what d1 comes from). */
static sd_status sync_pairs(mtp *e, const int32_t *ctx, int32_t n, bool want_last, sd_err *err) {
    int32_t keep = valid_pairs(e, ctx, n);
    if (want_last && keep > n - 2) keep = n - 2;
    sd_context_truncate(e->hc, keep);
    e->n_real = keep;
    sd_status st = catch_up(e, ctx, keep, n - 1, err);
    if (st != SD_OK) return st;
    if (!save_ctx(e, ctx, n)) return sd_err_set(err, SD_ERR_NOMEM, "mtp: out of memory");
    e->n_real = n - 1;
    return SD_OK;
}

static int mtp_propose(void *self, const int32_t *ctx, int32_t n, int k, int32_t *out, float *q, sd_err *err) {
    mtp *e = self;
    (void)q; /* proposals are the head's argmax: deterministic, q one-hot */
    const int64_t E = e->view->hp.n_embd;
    /* n - 1 rows needed from the target; the chain needs head indices up to n - 2 + k */
    if (n < 2 || sd_context_len(e->tctx) < n - 1) return 0;
    int32_t room = sd_context_n_ctx(e->hc) - (n - 1);
    if (k > room) k = room;
    if (k < 1) return 0;
    if (sync_pairs(e, ctx, n, true, err) != SD_OK) return -1;
    int got = 0;
    for (;;) {
        out[got] = sd_argmax(e->logits, e->n_vocab);
        if (++got == k) break;
        memcpy(e->h, e->y, (size_t)E * sizeof *e->h);
        if (sd_mtp_forward(e->hc, &out[got - 1], e->h, 1, e->y, 1, e->logits, err) != SD_OK) return -1;
        e->n_forwards++;
    }
    return got;
}

static int mtp_prefill(void *self, const int32_t *ctx, int32_t n, sd_err *err) {
    mtp *e = self;
    if (n < 2 || sd_context_len(e->tctx) < n || n > sd_context_n_ctx(e->hc)) return 0; /* propose will see */
    return sync_pairs(e, ctx, n, false, err) == SD_OK ? 0 : -1;
}

static void mtp_reset(void *self) {
    mtp *e = self;
    sd_context_truncate(e->hc, 0);
    e->n_real = 0;
    e->n_forwards = 0;
}

static int64_t mtp_n_forwards(void *self) { return ((mtp *)self)->n_forwards; }

static void mtp_free(void *self) {
    mtp *e = self;
    if (!e) return;
    if (e->tctx && e->own_hook) sd_context_request_hidden(e->tctx, NULL, 0, NULL);
    sd_context_free(e->hc);
    sd_mtp_view_free(e->view);
    free(e->saved), free(e->h), free(e->y), free(e->logits);
    free(e);
}

sd_status sd_drafter_mtp_init(sd_drafter *d, sd_context *target, int n_threads, int32_t n_batch, sd_err *err) {
    const sd_model *tm = sd_context_model(target);
    if (n_batch < 1) return sd_err_set(err, SD_ERR_ARG, "mtp: n_batch must be >= 1");
    mtp *e = calloc(1, sizeof *e);
    if (!e) return sd_err_set(err, SD_ERR_NOMEM, "mtp: out of memory");
    sd_status st = sd_mtp_view_init(tm, &e->view, err);
    if (st != SD_OK) {
        free(e);
        return st;
    }
    e->n_batch = n_batch, e->n_vocab = tm->hp.n_vocab;
    const size_t nb = (size_t)n_batch, E = (size_t)tm->hp.n_embd;
    e->h = sd_malloc_array(nb, E * sizeof *e->h);
    e->y = sd_malloc_array(nb, E * sizeof *e->y);
    e->logits = sd_malloc_array((size_t)e->n_vocab, sizeof *e->logits);
    st = e->h && e->y && e->logits ? SD_OK : sd_err_set(err, SD_ERR_NOMEM, "mtp: out of memory");
    /* the head's context: one index per position after the first */
    if (st == SD_OK) st = sd_context_init(e->view, sd_context_n_ctx(target), n_batch, n_threads, &e->hc, err);
    const int32_t id = tm->hp.n_layer; /* the hidden after output_norm */
    e->own_hook = !sd_context_hidden_is(target, &id, 1);
    if (st == SD_OK && e->own_hook) st = sd_context_request_hidden(target, &id, 1, err);
    if (st == SD_OK) e->tctx = target;
    if (st != SD_OK) {
        mtp_free(e);
        return st;
    }
    *d = (sd_drafter){.name = "mtp", .self = e, .costly = true, .stochastic = false, .reset = mtp_reset,
                      .propose = mtp_propose, .prefill = mtp_prefill, .n_forwards = mtp_n_forwards, .free = mtp_free};
    return SD_OK;
}
