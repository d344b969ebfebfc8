/* EAGLE-3 drafter (DESIGN.md §7; llama.cpp common/speculative.cpp,
 * common_speculative_impl_draft_eagle3): a one-layer head that reads the
 * target's hidden states and drafts a chain of K greedy tokens, one head step
 * per token.
 *
 * Head KV position P holds the pair (ctx[P+1], g_P), g_P = fc(target hidden
 * rows of position P) — "real" pairs, built only from what the target has
 * run. With the committed context ctx[0..N) (ctx[N-1] = a0, not yet run by
 * the target), the target holds rows 0..N-2, so the real pairs go up to
 * P = N-2 = (a0, g_{N-2}), whose logits give d1. Each further step feeds
 * (d_i, y) at the next position, y the head's own pre-norm output of the
 * step before. Rollback is a counter, as for the target: the next propose
 * keeps the real pairs whose tokens still match the context and drops the
 * rest (the chained steps always), then catches up on the target's new rows
 * in one batched head forward. */
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "decode/drafter.h"
#include "decode/sampler.h"

typedef struct eagle3 {
    const sd_model *head, *target;
    sd_context *tctx;        /* the target's (borrowed): its hidden rows */
    sd_context *hc;          /* the head's own (one layer of KV cache) */
    int32_t n_batch;
    int32_t *saved, cap;     /* saved[0..n_real]: the context tokens the real pairs were built from */
    int32_t n_real;          /* head positions 0..n_real-1 hold real pairs */
    float *feat, *g, *y;     /* [n_batch][3 * n_embd_tgt], [n_batch][n_embd] x 2 */
    float *logits;           /* [n_draft_vocab] */
    int64_t n_forwards;
    bool own_hook;           /* the drafter turned the target's hidden-state hook on: off at free */
} eagle3;

/* Real pairs still valid for ctx: pair P needs ctx[0..P+1] unchanged (the
 * target's row P depends on ctx[0..P], the pair's token is ctx[P+1]). */
static int32_t valid_pairs(const eagle3 *e, const int32_t *ctx, int32_t n) {
    int32_t m = 0, n_saved = e->n_real > 0 ? e->n_real + 1 : 0;
    while (m < n_saved && m < n && e->saved[m] == ctx[m]) m++;
    return m > 0 ? m - 1 : 0;
}

/* Runs the real pairs P = from..to-1 (to <= target len); the last row's
 * logits and y stay in e->logits and e->y. */
static sd_status catch_up(eagle3 *e, const int32_t *ctx, int32_t from, int32_t to, sd_err *err) {
    const int64_t F = 3 * (int64_t)e->head->hp.n_embd_tgt, E = e->head->hp.n_embd;
    for (int32_t P = from; P < to;) {
        int32_t n = to - P < e->n_batch ? to - P : e->n_batch;
        for (int32_t s = 0; s < n; s++) {
            const float *h = sd_context_hidden(e->tctx, P + s);
            if (!h) return sd_err_set(err, SD_ERR_ARG, "eagle3: no target hidden row for position %d", P + s);
            memcpy(e->feat + s * F, h, (size_t)F * sizeof *h);
        }
        sd_eagle3_encode(e->hc, e->feat, n, e->g);
        int32_t n_tail = P + n == to;
        sd_status st = sd_eagle3_forward(e->hc, e->target, ctx + P + 1, e->g, n, e->y, n_tail, e->logits, err);
        if (st != SD_OK) return st;
        e->n_forwards++;
        P += n;
    }
    if (to > from) memmove(e->y, e->y + (int64_t)((to - from - 1) % e->n_batch) * E, (size_t)E * sizeof *e->y);
    return SD_OK;
}

static int32_t pick(const eagle3 *e) {
    return sd_eagle3_token(e->head, sd_argmax(e->logits, e->head->hp.n_draft_vocab));
}

static bool save_ctx(eagle3 *e, const int32_t *ctx, int32_t n) {
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
static sd_status sync_pairs(eagle3 *e, const int32_t *ctx, int32_t n, bool want_last, sd_err *err) {
    int32_t keep = valid_pairs(e, ctx, n);
    if (want_last && keep > n - 2) keep = n - 2;
    sd_context_truncate(e->hc, keep);
    e->n_real = keep;
    sd_status st = catch_up(e, ctx, keep, n - 1, err);
    if (st != SD_OK) return st;
    if (!save_ctx(e, ctx, n)) return sd_err_set(err, SD_ERR_NOMEM, "eagle3: out of memory");
    e->n_real = n - 1;
    return SD_OK;
}

static int e3_propose(void *self, const int32_t *ctx, int32_t n, int k, int32_t *out, float *q, sd_err *err) {
    eagle3 *e = self;
    (void)q; /* proposals are the head's argmax: deterministic, q one-hot */
    const int64_t E = e->head->hp.n_embd;
    /* n - 1 rows needed from the target; the chain needs n - 2 + k positions */
    if (n < 2 || sd_context_len(e->tctx) < n - 1) return 0;
    int32_t room = sd_context_n_ctx(e->hc) - (n - 1);
    if (k > room) k = room;
    if (k < 1) return 0;
    if (sync_pairs(e, ctx, n, true, err) != SD_OK) return -1;
    int got = 0;
    for (;;) {
        out[got] = pick(e);
        if (++got == k) break;
        memcpy(e->g, e->y, (size_t)E * sizeof *e->g);
        if (sd_eagle3_forward(e->hc, e->target, &out[got - 1], e->g, 1, e->y, 1, e->logits, err) != SD_OK) return -1;
        e->n_forwards++;
    }
    return got;
}

static int e3_prefill(void *self, const int32_t *ctx, int32_t n, sd_err *err) {
    eagle3 *e = self;
    if (n < 2 || sd_context_len(e->tctx) < n || n > sd_context_n_ctx(e->hc)) return 0; /* propose will see */
    return sync_pairs(e, ctx, n, false, err) == SD_OK ? 0 : -1;
}

static void e3_reset(void *self) {
    eagle3 *e = self;
    sd_context_truncate(e->hc, 0);
    e->n_real = 0;
    e->n_forwards = 0;
}

static int64_t e3_n_forwards(void *self) { return ((eagle3 *)self)->n_forwards; }

static void e3_free(void *self) {
    eagle3 *e = self;
    if (!e) return;
    if (e->tctx && e->own_hook) sd_context_request_hidden(e->tctx, NULL, 0, NULL); /* no head asks any more */
    sd_context_free(e->hc);
    free(e->saved), free(e->feat), free(e->g), free(e->y), free(e->logits);
    free(e);
}

sd_status sd_drafter_eagle3_init(sd_drafter *d, const sd_model *head, sd_context *target, int n_threads,
                                 int32_t n_batch, sd_err *err) {
    const sd_model *tm = sd_context_model(target);
    sd_status st = sd_eagle3_check(head, tm, err);
    if (st == SD_OK) st = sd_lm_check_same_vocab(tm, head, err);
    if (st != SD_OK) return st;
    if (n_batch < 1) return sd_err_set(err, SD_ERR_ARG, "eagle3: n_batch must be >= 1");
    eagle3 *e = calloc(1, sizeof *e);
    if (!e) return sd_err_set(err, SD_ERR_NOMEM, "eagle3: out of memory");
    e->head = head, e->target = tm, e->n_batch = n_batch;
    const size_t nb = (size_t)n_batch, E = (size_t)head->hp.n_embd, F = 3 * (size_t)head->hp.n_embd_tgt;
    e->feat = sd_malloc_array(nb, F * sizeof *e->feat);
    e->g = sd_malloc_array(nb, E * sizeof *e->g);
    e->y = sd_malloc_array(nb, E * sizeof *e->y);
    e->logits = sd_malloc_array((size_t)head->hp.n_draft_vocab, sizeof *e->logits);
    st = e->feat && e->g && e->y && e->logits ? SD_OK : sd_err_set(err, SD_ERR_NOMEM, "eagle3: out of memory");
    if (st == SD_OK) st = sd_context_init(head, sd_context_n_ctx(target), n_batch, n_threads, &e->hc, err);
    /* a hook already on for these layers (an API context keeps one for its
     * life, so a reused prefix has its rows) is left as it is */
    e->own_hook = !sd_context_hidden_is(target, head->hp.target_layers, 3);
    if (st == SD_OK && e->own_hook) st = sd_context_request_hidden(target, head->hp.target_layers, 3, err);
    if (st == SD_OK) e->tctx = target;
    if (st != SD_OK) {
        e3_free(e);
        return st;
    }
    *d = (sd_drafter){.name = "eagle3", .self = e, .costly = true, .stochastic = false, .reset = e3_reset,
                      .propose = e3_propose, .prefill = e3_prefill, .n_forwards = e3_n_forwards, .free = e3_free};
    return SD_OK;
}
