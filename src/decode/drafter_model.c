/* Draft model drafter (ARCHITECTURE.md §3): K proposals from a smaller model with
 * its own KV cache. The cache only ever holds committed tokens plus this
 * drafter's own last proposals; `fed` mirrors what it holds, so each round
 * rolls back to the longest prefix shared with the committed context and
 * catches up with one batched forward (usually just [a0], or [dK, a0] after a
 * fully accepted round). */
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "decode/drafter.h"
#include "decode/sampler.h"
#include "decode/spec.h"
#include "decode/tree.h"

typedef struct draft {
    sd_lm *lm;
    sd_sampler sm;         /* its own settings (own), or the target's while coupled */
    sd_sampling own;
    int32_t n_batch;
    int32_t *fed, cap_fed; /* fed[0..lm len) = the tokens in the draft's cache */
    float *logits;         /* [n_batch][n_vocab] */
    int64_t n_forwards;
} draft;

static bool reserve_fed(draft *m, int32_t n) {
    if (n <= m->cap_fed) return true;
    int32_t cap = n > 2 * m->cap_fed ? n : 2 * m->cap_fed;
    int32_t *f = realloc(m->fed, (size_t)cap * sizeof *f);
    if (!f) return false;
    m->fed = f;
    m->cap_fed = cap;
    return true;
}

/* Runs toks[S] (S >= 1) in chunks of n_batch for use (a catch-up: PREFILL,
 * a proposal: STEP); the last row's logits stay in m->logits. */
static sd_status feed(draft *m, sd_lm_use use, const int32_t *toks, int32_t S, const float **last, sd_err *err) {
    int32_t len = m->lm->len(m->lm->self), done = 0, c = 0;
    if (!reserve_fed(m, len + S)) return sd_err_set(err, SD_ERR_NOMEM, "draft model: out of memory");
    while (done < S) {
        c = S - done < m->n_batch ? S - done : m->n_batch;
        int32_t n_tail = done + c == S; /* only the last row's logits are read */
        sd_status st = sd_lm_forward_tail(m->lm, use, toks + done, c, n_tail, m->logits, err);
        if (st != SD_OK) return st;
        memcpy(m->fed + len + done, toks + done, (size_t)c * sizeof *toks);
        done += c;
        m->n_forwards++;
    }
    *last = m->logits;
    return SD_OK;
}

/* Picks the proposal for absolute position pos from the draft's logits: the
 * coupled draw, argmax, or a draw of its own reported in q_row. */
/* Coupled (drafter.h couple): an argmax draft holding the target's sampling at temperature > 0. */
static bool coupled(const draft *m) { return m->own.temp <= 0 && m->sm.s.temp > 0; }

static int32_t pick(draft *m, const float *logits, float *q_row, int64_t pos) {
    if (coupled(m)) return sd_sampler_pick_at(&m->sm, logits, pos);
    if (m->sm.s.temp <= 0) return sd_argmax(logits, m->lm->n_vocab);
    sd_sampler_probs(&m->sm, logits, m->sm.p);
    if (q_row) memcpy(q_row, m->sm.p, (size_t)m->lm->n_vocab * sizeof *q_row);
    return sd_sample_probs(m->sm.p, m->lm->n_vocab, &m->sm.rng);
}

/* The length of the prefix the draft's cache shares with ctx[0..n), short of
 * the last token (its logits are the ones that continue ctx: it is re-run). */
static int32_t shared_prefix(const draft *m, const int32_t *ctx, int32_t n) {
    int32_t keep = 0, len = m->lm->len(m->lm->self);
    while (keep < len && keep < n - 1 && m->fed[keep] == ctx[keep]) keep++;
    return keep;
}

/* The chain of up to k proposals: picked (pick) into out when w == 0, else
 * the w best of each row into out[k][w], the best continuing the chain. */
static int draft_chain(draft *m, const int32_t *ctx, int32_t n, int k, int w, int32_t *out, float *q, sd_err *err) {
    int32_t V = m->lm->n_vocab, n_ctx = m->lm->n_ctx(m->lm->self);
    if (n > n_ctx) return 0; /* the draft's context is full: no proposal */
    int32_t keep = shared_prefix(m, ctx, n);
    const float *row;
    if (m->lm->truncate(m->lm->self, keep, err) != SD_OK || feed(m, SD_LM_PREFILL, ctx + keep, n - keep, &row, err) != SD_OK)
        return -1;
    int got = 0;
    for (;;) {
        int32_t *tok = w ? out + (size_t)got * (size_t)w : out + got;
        if (w) sd_top_w(row, V, w, tok);
        else *tok = pick(m, row, q ? q + (size_t)got * (size_t)V : NULL, (int64_t)n + got);
        if (++got == k || m->lm->len(m->lm->self) >= n_ctx) break;
        if (feed(m, SD_LM_STEP, tok, 1, &row, err) != SD_OK) return -1;
    }
    return got;
}

static int draft_propose(void *self, const int32_t *ctx, int32_t n, int k, int32_t *out, float *q,
                         sd_err *err) {
    return draft_chain(self, ctx, n, k, 0, out, q, err);
}

static int draft_propose_top(void *self, const int32_t *ctx, int32_t n, int k, int w, int32_t *cand, sd_err *err) {
    return draft_chain(self, ctx, n, k, w < 1 ? 1 : w, cand, NULL, err);
}

/* Tokens a probe feeds at most: past that, the guess continues the cached
 * prefix with only the last GUESS_WINDOW tokens (a gap in the middle). fed[]
 * records them at the positions they took, so the next propose sees the
 * mismatch and rolls back to the true shared prefix. */
#define GUESS_WINDOW 16

static int draft_guess(void *self, const int32_t *ctx, int32_t n, int32_t *out, sd_err *err) {
    draft *m = self;
    int32_t keep = shared_prefix(m, ctx, n);
    if (n - keep <= GUESS_WINDOW || keep + GUESS_WINDOW > m->lm->n_ctx(m->lm->self))
        return draft_propose(self, ctx, n, 1, out, NULL, err);
    const float *row;
    if (m->lm->truncate(m->lm->self, keep, err) != SD_OK ||
        feed(m, SD_LM_PREFILL, ctx + n - GUESS_WINDOW, GUESS_WINDOW, &row, err) != SD_OK)
        return -1;
    out[0] = pick(m, row, NULL, n);
    return 1;
}

static int draft_prefill(void *self, const int32_t *ctx, int32_t n, sd_err *err) {
    draft *m = self;
    if (n < 1 || n > m->lm->n_ctx(m->lm->self)) return 0; /* propose will find out */
    if (m->lm->truncate(m->lm->self, 0, err) != SD_OK) return -1;
    if (m->lm->warm) m->lm->warm(m->lm->self); /* a hybrid draft's rollback buffers, as the target's */
    const float *row;
    return feed(m, SD_LM_PREFILL, ctx, n, &row, err) == SD_OK ? 0 : -1;
}

static void draft_reset(void *self) {
    draft *m = self;
    m->lm->truncate(m->lm->self, 0, NULL); /* to empty: a reset cannot fail */
    m->n_forwards = 0;
}

/* Only a deterministic (argmax) draft couples: a sampling one keeps its own draws. */
static void draft_couple(void *self, const sd_sampling *s) {
    draft *m = self;
    m->sm.s = s && s->temp > 0 && m->own.temp <= 0 ? *s : m->own;
}

static int64_t draft_n_forwards(void *self) { return ((draft *)self)->n_forwards; }

static void draft_free(void *self) {
    draft *m = self;
    if (!m) return;
    sd_sampler_free(&m->sm);
    free(m->fed);
    free(m->logits);
    free(m);
}

sd_status sd_drafter_model_init(sd_drafter *d, sd_lm *lm, const sd_sampling *sampling,
                                int32_t n_batch, sd_err *err) {
    if (n_batch < 1) return sd_err_set(err, SD_ERR_ARG, "draft model: n_batch must be >= 1");
    draft *m = calloc(1, sizeof *m);
    if (!m) return sd_err_set(err, SD_ERR_NOMEM, "draft model: out of memory");
    m->lm = lm;
    m->n_batch = n_batch;
    sd_sampling s = sampling ? *sampling : (sd_sampling){.top_p = 1};
    s.seed ^= 0x5deece66dull; /* its own stream, apart from the target's */
    m->own = s;
    sd_status st = sd_sampler_init(&m->sm, &s, lm->n_vocab, err);
    if (st == SD_OK) {
        m->logits = sd_malloc_array((size_t)n_batch, (size_t)lm->n_vocab * sizeof *m->logits);
        if (!m->logits) st = sd_err_set(err, SD_ERR_NOMEM, "draft model: out of memory");
    }
    if (st != SD_OK) {
        draft_free(m);
        return st;
    }
    *d = (sd_drafter){.name = "draft", .self = m, .costly = true, .stochastic = s.temp > 0,
                      .reset = draft_reset, .propose = draft_propose, .propose_top = draft_propose_top,
                      .prefill = draft_prefill, .guess = draft_guess, .couple = draft_couple,
                      .n_forwards = draft_n_forwards,
                      .free = draft_free};
    return SD_OK;
}
