/* The verify round, as ARCHITECTURE.md §1 (greedy) and §6 (sampling) state it. */
#include "decode/verify.h"

#include <math.h>

#include "decode/constrain.h"
#include "decode/logprob.h"
#include "decode/penalty.h"

static const float *row(const float *logits, int i, int32_t n_vocab) {
    return logits + (size_t)i * (size_t)n_vocab;
}

/* Row j's penalties and logit bias (penalty.h), in place, from the text
 * along the draft path: the committed text plus d_1..d_j. */
static void penalize_at(const sd_rowmask *rm, float *logits, int j, const int32_t *draft, int32_t n_vocab) {
    if (rm && rm->pen) sd_penalty_row(rm->pen, draft, j, logits + (size_t)j * (size_t)n_vocab, n_vocab);
}

/* The greedy choice at row j: argmax (after the row's penalties), over the
 * tokens the grammar allows there when constrained (row j masked with its
 * draft-path state). -1 when nothing is allowed, -2 on a grammar error. */
static int32_t greedy_at(const sd_rowmask *rm, float *logits, int j, int K, const int32_t *draft, int32_t n_vocab,
                         sd_err *err) {
    penalize_at(rm, logits, j, draft, n_vocab);
    const float *r = row(logits, j, n_vocab);
    if (!rm || !rm->m) return sd_argmax(r, n_vocab);
    if (rm->lp) { /* log-probabilities read the whole masked row: mask it, then the plain argmax (same token) */
        if (sd_constrain_mask_row(rm->m, sd_rowmask_state(rm, j, K), logits + (size_t)j * (size_t)n_vocab, n_vocab,
                                  err) != SD_OK)
            return -2;
        int32_t t = sd_argmax(r, n_vocab);
        return r[t] > -INFINITY ? t : -1;
    }
    return sd_constrain_argmax(rm->m, sd_rowmask_state(rm, j, K), r, n_vocab, err);
}

/* Penalises and masks row j in place (sampling reads whole rows): before
 * temperature and every filter, as plain constrained sampling does. */
static sd_status mask_at(const sd_rowmask *rm, float *logits, int j, int K, const int32_t *draft, int32_t n_vocab,
                         sd_err *err) {
    penalize_at(rm, logits, j, draft, n_vocab);
    if (!rm || !rm->m) return SD_OK;
    return sd_constrain_mask_row(rm->m, sd_rowmask_state(rm, j, K), logits + (size_t)j * (size_t)n_vocab, n_vocab,
                                 err);
}

/* The log-probabilities of token t, picked from row j (penalised and masked). */
static void note_lp(const sd_rowmask *rm, const float *logits, int j, int32_t t, int32_t n_vocab) {
    if (rm && rm->lp && t >= 0) sd_logprob_row(row(logits, j, n_vocab), n_vocab, t, rm->n_top, &rm->lp[j]);
}

static sd_status pick_failed(int32_t t, sd_err *err) {
    if (t == -2) return err && err->code ? err->code : SD_ERR_UNSUPPORTED;
    return sd_err_set(err, SD_ERR_ARG, "grammar: a verify row allows no token");
}

/* §1 step 3: the longest prefix with d_t == argmax(r_{t-1}); next a0 = argmax(r_j). */
static sd_status accept_greedy(const int32_t *draft, int K, float *logits, int32_t n_vocab,
                               const sd_rowmask *rm, sd_verdict *v, sd_err *err) {
    for (int j = 0;; j++) {
        int32_t top = greedy_at(rm, logits, j, K, draft, n_vocab, err);
        if (top < 0) return pick_failed(top, err);
        note_lp(rm, logits, j, top, n_vocab);
        if (j == K || draft[j] != top) {
            *v = (sd_verdict){j, top};
            return SD_OK;
        }
    }
}

/* §6, a deterministic draft (n-gram, or a head or model proposing its argmax):
 * d_t is accepted iff the target's own pick at its position, n + t, is d_t
 * (sd_sampler_pick_at: randomness a function of seed and position); the first
 * pick that differs is the next a0, else the bonus pick at n + K + 1. Every
 * committed token is thus the one plain sampling picks at that position, and
 * a draft token passes with probability p(d), as speculative sampling with a
 * one-hot q accepts it. Plain steps are the K = 0 case. */
static sd_status accept_own_picks(const int32_t *draft, int K, float *logits, sd_sampler *sm, int32_t n,
                                  const sd_rowmask *rm, sd_verdict *v, sd_err *err) {
    for (int t = 1; t <= K; t++) {
        sd_status st = mask_at(rm, logits, t - 1, K, draft, sm->n_vocab, err);
        if (st != SD_OK) return st;
        int32_t s = sd_sampler_pick_at(sm, row(logits, t - 1, sm->n_vocab), (int64_t)n + t);
        note_lp(rm, logits, t - 1, s, sm->n_vocab);
        if (s != draft[t - 1]) {
            *v = (sd_verdict){t - 1, s};
            return SD_OK;
        }
    }
    sd_status st = mask_at(rm, logits, K, K, draft, sm->n_vocab, err);
    if (st != SD_OK) return st;
    *v = (sd_verdict){K, sd_sampler_pick_at(sm, row(logits, K, sm->n_vocab), (int64_t)n + K + 1)};
    note_lp(rm, logits, K, v->next_a0, sm->n_vocab);
    return SD_OK;
}

/* §6: each d_t against p_{t-1}; the first rejection's replacement is the next
 * a0; if every draft passes, the bonus a0 is drawn from p_K. For drafts that
 * were sampled (q given): their law is preserved, not the bytes. */
static sd_status accept_sampled(const int32_t *draft, int K, const float *q, float *logits, sd_sampler *sm,
                                sd_accept_rule rule, float *scratch, const sd_rowmask *rm, sd_verdict *v,
                                sd_err *err) {
    int32_t V = sm->n_vocab;
    float *p = scratch, *resid = scratch + V;
    for (int t = 1; t <= K; t++) {
        sd_status st = mask_at(rm, logits, t - 1, K, draft, V, err);
        if (st != SD_OK) return st;
        sd_sampler_probs(sm, row(logits, t - 1, V), p);
        const float *q_t = q ? q + (size_t)(t - 1) * (size_t)V : NULL;
        int32_t r = rule(p, q_t, draft[t - 1], V, &sm->rng, resid);
        note_lp(rm, logits, t - 1, r >= 0 ? r : draft[t - 1], V);
        if (r >= 0) {
            *v = (sd_verdict){t - 1, r};
            return SD_OK;
        }
    }
    sd_status st = mask_at(rm, logits, K, K, draft, V, err);
    if (st != SD_OK) return st;
    sd_sampler_probs(sm, row(logits, K, V), p);
    *v = (sd_verdict){K, sd_sample_probs(p, V, &sm->rng)};
    note_lp(rm, logits, K, v->next_a0, V);
    return SD_OK;
}

/* The greedy round with the head in two passes: rows 0..n_first-1 first;
 * the rest only if d1..d_{n_first} all pass, since a rejection at row j < n_first
 * decides the round (§1 step 3 reads rows 0..j). Same verdict as accept_greedy
 * on a full forward: the rows are bitwise those of lm->forward. */
static sd_status verify_greedy_two_pass(sd_lm *lm, const int32_t *batch, int K, float *logits,
                                        const sd_rowmask *rm, sd_verdict *v, sd_err *err) {
    int32_t n_first = K + 1;
    sd_status st = lm->forward_first(lm->self, batch, K + 1, logits, &n_first, err);
    if (st != SD_OK) return st;
    const int32_t *draft = batch + 1;
    for (int j = 0;; j++) {
        if (j == n_first) { /* every draft so far passed: the rest of the rows */
            st = lm->logits_rest(lm->self, logits + (size_t)j * (size_t)lm->n_vocab, err);
            if (st != SD_OK) return st;
            n_first = K + 1;
        }
        int32_t top = greedy_at(rm, logits, j, K, draft, lm->n_vocab, err);
        if (top < 0) return pick_failed(top, err);
        note_lp(rm, logits, j, top, lm->n_vocab);
        if (j == K || draft[j] != top) {
            *v = (sd_verdict){j, top};
            return SD_OK;
        }
    }
}

sd_status sd_verify_round(sd_lm *lm, const int32_t *batch, int K, const float *q, float *logits,
                          sd_sampler *sm, sd_accept_rule rule, float *scratch, const sd_rowmask *rm,
                          sd_verdict *v, sd_err *err) {
    int32_t n = lm->len(lm->self);
    const int32_t *draft = batch + 1;
    sd_status st;
    if (sm->s.temp <= 0 && K > 0 && lm->forward_first && lm->logits_rest) {
        st = verify_greedy_two_pass(lm, batch, K, logits, rm, v, err);
        if (st != SD_OK) {
            lm->truncate(lm->self, n, NULL); /* a failed second pass leaves the rows unread; its error is the one told */
            return st;
        }
    } else {
        /* §1 step 2: one forward over [a0, d1..dK] at positions n..n+K, every row. */
        st = lm->forward(lm->self, K > 0 ? SD_LM_VERIFY : SD_LM_STEP, batch, K + 1, logits, err);
        if (st != SD_OK) return st;
        if (sm->s.temp <= 0)
            st = accept_greedy(draft, K, logits, lm->n_vocab, rm, v, err);
        else if (!q)
            st = accept_own_picks(draft, K, logits, sm, n, rm, v, err);
        else
            st = accept_sampled(draft, K, q, logits, sm, rule ? rule : sd_accept_speculative, scratch, rm, v, err);
        if (st != SD_OK) {
            lm->truncate(lm->self, n, NULL);
            return st;
        }
    }
    /* §1 step 4: a0 and d1..dj are committed; rows past them are stale. */
    return lm->truncate(lm->self, n + 1 + v->j, err);
}

int32_t sd_accept_speculative(const float *p, const float *q, int32_t d, int32_t n_vocab,
                              sd_rng *rng, float *scratch) {
    float q_d = q ? q[d] : 1.0f;
    double u = sd_rng_uniform(rng);
    if (q_d > 0 && u * q_d < p[d]) return -1; /* u < p(d)/q(d) */
    double mass = 0;
    for (int32_t i = 0; i < n_vocab; i++) {
        float qi = q ? q[i] : (i == d ? 1.0f : 0.0f);
        scratch[i] = p[i] > qi ? p[i] - qi : 0.0f;
        mass += scratch[i];
    }
    /* mass 0 means p <= q everywhere, i.e. p == q, where rejection has
     * probability 0; only rounding gets here, and p is then the right law. */
    return sd_sample_probs(mass > 0 ? scratch : p, n_vocab, rng);
}
