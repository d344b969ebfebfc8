/* DFlash drafter (drafter.h; llama.cpp common/speculative.cpp,
 * common_speculative_impl_draft_dflash): a block drafter. The draft's KV
 * cache holds injected positions 0..N-2 built from the target's hidden rows
 * (model.h sd_dflash_inject); with the committed context ctx[0..N) (ctx[N-1]
 * = a0, not yet run by the target) one block forward of [a0, mask, ...] at
 * positions N-1.. gives up to block - 1 drafts at once (sd_dflash_block),
 * argmax per row (or the coupled draw, drafter.h couple). The forward is
 * always the whole block; a request for fewer drafts only returns fewer.
 *
 * Rollback: injected position P depends on ctx[0..P] (the target's row P),
 * so the next propose keeps the positions whose tokens still match and
 * injects the target's new rows in batched forwards; the block's own rows
 * are never kept. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "decode/drafter.h"
#include "decode/sampler.h"
#include "decode/tree.h"

typedef struct dflash {
    const sd_model *head, *target;
    sd_context *tctx;   /* the target's (borrowed): its hidden rows */
    sd_context *hc;     /* the draft's own */
    int32_t n_batch, block, n_logits;
    int64_t n_row;      /* floats of one target hidden row (all target_layers) */
    int32_t *saved, cap; /* saved[0..n_inj]: the context the injected positions were built from */
    int32_t n_inj;      /* draft positions 0..n_inj-1 are injected */
    float *rows;        /* [n_batch][n_row] */
    int32_t *tokens;    /* [block] */
    float *logits;      /* [block - 1][n_logits] */
    sd_sampler cs;      /* coupled draws (temp > 0), n_vocab 0: none */
    float *full;        /* [target n_vocab] a mapped draft's logits in target ids */
    int64_t n_forwards;
    bool own_hook;
} dflash;

/* Injected positions still valid for ctx: P needs ctx[0..P] unchanged. */
static int32_t valid_positions(const dflash *e, const int32_t *ctx, int32_t n) {
    int32_t m = 0;
    while (m < e->n_inj && m < n && e->saved[m] == ctx[m]) m++;
    return m;
}

static bool save_ctx(dflash *e, const int32_t *ctx, int32_t n) {
    if (n > e->cap) {
        int32_t cap = n > 2 * e->cap ? n : 2 * e->cap;
        int32_t *s = realloc(e->saved, (size_t)cap * sizeof *s);
        if (!s) return false;
        e->saved = s, e->cap = cap;
    }
    memcpy(e->saved, ctx, (size_t)n * sizeof *ctx);
    return true;
}

/* Injects the target's rows up to position to - 1 (to <= target len). */
static sd_status sync_inject(dflash *e, const int32_t *ctx, int32_t to, sd_err *err) {
    int32_t keep = valid_positions(e, ctx, to);
    if (keep > to) keep = to;
    sd_context_truncate(e->hc, keep);
    e->n_inj = keep;
    for (int32_t P = keep; P < to;) {
        int32_t n = to - P < e->n_batch ? to - P : e->n_batch;
        for (int32_t s = 0; s < n; s++) {
            const float *h = sd_context_hidden(e->tctx, P + s);
            if (!h) return sd_err_set(err, SD_ERR_ARG, "dflash: no target hidden row for position %d", P + s);
            memcpy(e->rows + s * e->n_row, h, (size_t)e->n_row * sizeof *h);
        }
        sd_status st = sd_dflash_inject(e->hc, e->rows, n, err);
        if (st != SD_OK) return st;
        e->n_forwards++;
        P += n;
    }
    if (!save_ctx(e, ctx, to)) return sd_err_set(err, SD_ERR_NOMEM, "dflash: out of memory");
    e->n_inj = to;
    return SD_OK;
}

static int32_t to_target(const dflash *e, int32_t id) { return e->head->d2t && id >= 0 ? e->head->d2t[id] : id; }

/* The coupled draw for absolute position pos from logits row lg. */
static int32_t pick_coupled(dflash *e, const float *lg, int64_t pos) {
    if (e->head->d2t) {
        for (int32_t i = 0; i < e->cs.n_vocab; i++) e->full[i] = -INFINITY;
        for (int32_t id = 0; id < e->n_logits; id++) e->full[e->head->d2t[id]] = lg[id];
        lg = e->full;
    }
    return sd_sampler_pick_at(&e->cs, lg, pos);
}

/* The block after ctx[0..n): up to k drafts, each with its w best in out[k][w]. */
static int dflash_block_run(dflash *e, const int32_t *ctx, int32_t n, int k, int w, int32_t *out, sd_err *err) {
    if (n < 2 || sd_context_len(e->tctx) < n - 1) return 0;
    /* always the whole block (the rows attend to each other: a shorter
     * block is another forward than the one trained); k only cuts the output */
    int32_t B = e->block;
    const int32_t room = sd_context_n_ctx(e->hc) - (n - 1);
    if (B > room) B = room;
    if (B < 2) return 0;
    if (sync_inject(e, ctx, n - 1, err) != SD_OK) return -1;
    e->tokens[0] = ctx[n - 1];
    for (int32_t i = 1; i < B; i++) e->tokens[i] = e->head->hp.mask_token;
    if (sd_dflash_block(e->hc, e->target, e->tokens, B, e->logits, err) != SD_OK) return -1;
    e->n_forwards++;
    const int32_t nd = B - 1 < k ? B - 1 : k;
    for (int32_t i = 0; i < nd; i++) {
        const float *lg = e->logits + (int64_t)i * e->n_logits;
        int32_t *tok = out + (size_t)i * (size_t)w;
        if (w == 1 && e->cs.s.temp > 0) {
            tok[0] = pick_coupled(e, lg, (int64_t)n + i);
            continue;
        }
        if (w == 1) tok[0] = sd_argmax(lg, e->n_logits);
        else sd_top_w(lg, e->n_logits, w, tok);
        for (int r = 0; r < w; r++) tok[r] = tok[r] < 0 ? -1 : to_target(e, tok[r]);
    }
    return nd;
}

static int dflash_propose(void *self, const int32_t *ctx, int32_t n, int k, int32_t *out, float *q, sd_err *err) {
    (void)q; /* deterministic: q one-hot */
    return dflash_block_run(self, ctx, n, k, 1, out, err);
}

static int dflash_propose_top(void *self, const int32_t *ctx, int32_t n, int k, int w, int32_t *cand, sd_err *err) {
    return dflash_block_run(self, ctx, n, k, w < 1 ? 1 : w, cand, err);
}

/* As the head drafters: without the memory for coupling, argmax proposals (speed only). */
static void dflash_couple(void *self, const sd_sampling *s) {
    dflash *e = self;
    e->cs.s.temp = 0;
    if (!s || s->temp <= 0) return;
    const int32_t V = e->target->hp.n_vocab;
    if (e->cs.n_vocab == 0) {
        bool ok = sd_sampler_init(&e->cs, s, V, NULL) == SD_OK;
        if (ok && e->head->d2t) ok = (e->full = sd_malloc_array((size_t)V, sizeof *e->full)) != NULL;
        if (!ok) {
            sd_sampler_free(&e->cs);
            e->cs = (sd_sampler){0};
            return;
        }
    }
    e->cs.s = *s;
}

static int dflash_prefill(void *self, const int32_t *ctx, int32_t n, sd_err *err) {
    dflash *e = self;
    if (n < 2 || sd_context_len(e->tctx) < n - 1 || n > sd_context_n_ctx(e->hc)) return 0; /* propose will see */
    return sync_inject(e, ctx, n - 1, err) == SD_OK ? 0 : -1;
}

static void dflash_reset(void *self) {
    dflash *e = self;
    sd_context_truncate(e->hc, 0);
    e->n_inj = 0;
    e->n_forwards = 0;
}

static int64_t dflash_n_forwards(void *self) { return ((dflash *)self)->n_forwards; }

static void dflash_free(void *self) {
    dflash *e = self;
    if (!e) return;
    if (e->tctx && e->own_hook) sd_context_request_hidden(e->tctx, NULL, 0, NULL);
    sd_context_free(e->hc);
    sd_sampler_free(&e->cs);
    free(e->saved), free(e->rows), free(e->tokens), free(e->logits), free(e->full);
    free(e);
}

sd_status sd_drafter_dflash_init(sd_drafter *d, const sd_model *head, sd_context *target, int n_threads,
                                 int32_t n_batch, sd_err *err) {
    const sd_model *tm = sd_context_model(target);
    sd_status st = sd_dflash_check(head, tm, err);
    if (st == SD_OK) st = sd_lm_check_same_vocab(tm, head, err);
    if (st != SD_OK) return st;
    if (n_batch < 2) return sd_err_set(err, SD_ERR_ARG, "dflash: n_batch must be >= 2");
    dflash *e = calloc(1, sizeof *e);
    if (!e) return sd_err_set(err, SD_ERR_NOMEM, "dflash: out of memory");
    e->head = head, e->target = tm;
    e->n_batch = n_batch;
    e->block = head->hp.dflash_block < n_batch ? head->hp.dflash_block : n_batch;
    e->n_logits = head->hp.n_draft_vocab;
    e->n_row = (int64_t)head->hp.n_target_layers * tm->hp.n_embd;
    e->rows = sd_malloc_array((size_t)n_batch, (size_t)e->n_row * sizeof *e->rows);
    e->tokens = sd_malloc_array((size_t)e->block, sizeof *e->tokens);
    e->logits = sd_malloc_array((size_t)(e->block - 1), (size_t)e->n_logits * sizeof *e->logits);
    if (!e->rows || !e->tokens || !e->logits) st = sd_err_set(err, SD_ERR_NOMEM, "dflash: out of memory");
    if (st == SD_OK) st = sd_context_init(head, sd_context_n_ctx(target), n_batch, n_threads, &e->hc, err);
    const int32_t *ids = head->hp.target_layers;
    const int n_ids = head->hp.n_target_layers;
    e->own_hook = !sd_context_hidden_is(target, ids, n_ids);
    if (st == SD_OK && e->own_hook) st = sd_context_request_hidden(target, ids, n_ids, err);
    if (st == SD_OK) e->tctx = target;
    if (st != SD_OK) {
        dflash_free(e);
        return st;
    }
    *d = (sd_drafter){.name = "dflash", .self = e, .costly = true, .stochastic = false, .block = e->block - 1,
                      .reset = dflash_reset,
                      .propose = dflash_propose, .propose_top = dflash_propose_top, .prefill = dflash_prefill,
                      .couple = dflash_couple, .n_forwards = dflash_n_forwards, .free = dflash_free};
    return SD_OK;
}
