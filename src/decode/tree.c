/* Token trees in the decode loop: construction from top candidates and the
 * acceptance walk (tree.h). */
#include "decode/tree.h"

#include <math.h>
#include <stdbool.h>

#include "decode/logprob.h"
#include "decode/penalty.h"

void sd_top_w(const float *x, int32_t n, int w, int32_t *out) {
    for (int r = 0; r < w; r++) { /* w is small: w passes beat a sort */
        int32_t best = -1;
        for (int32_t i = 0; i < n; i++) {
            bool taken = false;
            for (int q = 0; q < r && !taken; q++) taken = out[q] == i;
            if (!taken && (best < 0 || x[i] > x[best])) best = i;
        }
        out[r] = best;
    }
}

static void add_node(sd_tree *t, int32_t tok, int32_t parent) {
    t->tok[t->n] = tok;
    t->parent[t->n] = parent;
    t->depth[t->n] = parent < 0 ? 0 : t->depth[parent] + 1;
    t->n++;
}

void sd_tree_from_top(sd_tree *t, int32_t a0, const int32_t *cand, int k, int w, int32_t n_max) {
    if (n_max > SD_TREE_MAX - 1) n_max = SD_TREE_MAX - 1;
    if (k > n_max) k = n_max;
    t->n = 0;
    add_node(t, a0, -1);
    for (int i = 0; i < k; i++) add_node(t, cand[(size_t)i * w], i); /* chain node i + 1, child of node i */
    for (int i = 0; i < k; i++)
        for (int r = 1; r < w && t->n <= n_max; r++)
            if (cand[(size_t)i * w + r] >= 0) add_node(t, cand[(size_t)i * w + r], i);
}

/* The target's own choice after node s (row s of logits), at position
 * n + depth + 1, among the tokens node s's grammar state allows when
 * constrained (each node masked with the state along its own path). -1:
 * nothing allowed, -2: grammar error. */
static int32_t target_choice(const sd_tree *t, int32_t s, float *logits, sd_sampler *sm, int32_t n,
                             const sd_rowmask *rm, sd_err *err) {
    float *row = logits + (size_t)s * (size_t)sm->n_vocab;
    if (rm && rm->pen) { /* penalties from the text along node s's own path */
        int32_t path[SD_TREE_MAX], d = t->depth[s];
        for (int32_t i = s; i > 0; i = t->parent[i]) path[--d] = t->tok[i];
        sd_penalty_row(rm->pen, path, t->depth[s], row, sm->n_vocab);
    }
    if (rm && rm->m) {
        int32_t g = sd_rowmask_state(rm, s, -1);
        if (sm->s.temp <= 0 && !rm->lp) return sd_constrain_argmax(rm->m, g, row, sm->n_vocab, err);
        if (sd_constrain_mask_row(rm->m, g, row, sm->n_vocab, err) != SD_OK) return -2;
    }
    int32_t pick = sm->s.temp <= 0 ? sd_argmax(row, sm->n_vocab) : sd_sampler_pick_at(sm, row, (int64_t)n + t->depth[s] + 1);
    if (rm && rm->m && !(row[pick] > -INFINITY)) return -1; /* masked (greedy with log-probabilities): nothing allowed */
    if (rm && rm->lp) sd_logprob_row(row, sm->n_vocab, pick, rm->n_top, &rm->lp[t->depth[s]]);
    return pick;
}

sd_status sd_verify_tree(sd_lm *lm, const sd_tree *t, float *logits, sd_sampler *sm, const sd_rowmask *rm,
                         sd_verdict *v, int32_t *path, sd_err *err) {
    const int32_t n = lm->len(lm->self);
    sd_status st = lm->forward_tree(lm->self, t->tok, t->parent, t->n, logits, err);
    if (st != SD_OK) return st;
    int32_t cur = 0, j = 0;
    path[0] = 0;
    for (;;) {
        int32_t want = target_choice(t, cur, logits, sm, n, rm, err), next = -1;
        if (want < 0) {
            lm->truncate(lm->self, n, NULL);
            return want == -2 && err && err->code ? err->code
                                                   : sd_err_set(err, SD_ERR_ARG, "grammar: a tree node allows no token");
        }
        for (int32_t c = cur + 1; c < t->n && next < 0; c++) /* children come after their parent */
            if (t->parent[c] == cur && t->tok[c] == want && (!rm || !rm->m || rm->state[c] >= 0)) next = c;
        if (next < 0) {
            *v = (sd_verdict){j, want};
            break;
        }
        path[++j] = cur = next;
    }
    st = lm->keep_path(lm->self, path, j + 1, err);
    if (st != SD_OK) lm->truncate(lm->self, n, NULL); /* the forward's error is the one told */
    return st;
}
