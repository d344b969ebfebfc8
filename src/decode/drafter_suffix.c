/* Suffix drafting (SuffixDecoding: Oliaro, Jia, Campos, Qiao, "SuffixDecoding:
 * Extreme Speculative Decoding for Emerging AI Applications", arXiv:2411.04975;
 * Arctic Inference's suffix_decoding, which vLLM's `suffix` method runs).
 *
 * Two suffix tries (suffix_tree.h) answer each proposal: one over this
 * request's context (prompt + tokens generated so far, grown token by token
 * as the context is committed) and, if the caller keeps one, the
 * cross-request memory of earlier outputs (suffix_cache.h). In each, the
 * rule is Arctic Inference's SuffixTree::speculate path mode: for every
 * match length m (the context's last m tokens, m <= depth) found in the trie,
 * follow the most frequent child while the running product of the count
 * ratios p = prod count(child) / count(parent) stays >= min_prob, for at
 * most min(k, m * spec_factor) tokens; the score of that chain is the sum
 * of p over its tokens (its expected accepted length under the counts), and
 * the best-scoring chain of all match lengths wins (the longer match on
 * ties). Between the two tries the memory wins only with a strictly higher
 * score. The parameters are vLLM's defaults: max_tree_depth 24,
 * max_spec_factor 1, min_token_prob 0.1.
 *
 * The drafter is deterministic and free (no model forward). propose_top
 * offers the same chain with the next most frequent children as siblings,
 * for token trees (decode/tree.h). The verify loop decides every token:
 * lossless whatever is proposed. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "decode/drafter.h"
#include "decode/suffix_cache.h"

#define SPEC_FACTOR 1.0f
#define MIN_PROB 0.1f

typedef struct suffix_drafter {
    sd_suffix_cache *mem; /* borrowed; NULL = the context alone */
    sd_stree ctx;         /* the context so far */
    sd_stree_cursor cur;
    int32_t n_tok, last_tok; /* context tokens in ctx, and the last of them */
    uint32_t last_doc;       /* the memory's output the last proposal came from; 0 = the context */
    int32_t n_vocab;         /* the target's: a memory may hold another model's ids */
} suffix_drafter;

/* A chain from the memory with an id outside the target's vocabulary (the
 * memory served a model with another vocabulary) is not proposed at all. */
static bool chain_in_vocab(const sd_stree_draft *d, int32_t n_vocab) {
    for (int i = 0; i < d->n; i++)
        if (d->tok[i] < 0 || d->tok[i] >= n_vocab) return false;
    return true;
}

static void suffix_reset(void *self) {
    suffix_drafter *s = self;
    sd_stree_clear(&s->ctx);
    sd_stree_cursor_start(&s->cur);
    s->n_tok = 0;
    s->last_doc = 0;
}

/* Brings the context trie up to ctx[0..n): it only grows while a
 * generation goes on; anything else starts it over. */
static bool sync(suffix_drafter *s, const int32_t *ctx, int32_t n) {
    if (n < s->n_tok || (s->n_tok > 0 && ctx[s->n_tok - 1] != s->last_tok)) suffix_reset(s);
    for (; s->n_tok < n; s->n_tok++)
        if (!sd_stree_append(&s->ctx, &s->cur, ctx[s->n_tok], 0)) return false;
    if (n > 0) s->last_tok = ctx[n - 1];
    return true;
}

/* The chain of this request's own trie into *d (*tree its trie), after
 * bringing that trie up to ctx[0..n): no lock, the trie is the request's. */
static bool own_chain(suffix_drafter *s, const int32_t *ctx, int32_t n, int k, sd_stree_draft *d, sd_stree **tree,
                      sd_err *err) {
    if (!sync(s, ctx, n)) return sd_err_set(err, SD_ERR_NOMEM, "suffix drafter: out of memory"), false;
    sd_stree_speculate(&s->ctx, ctx, n, k, SPEC_FACTOR, MIN_PROB, d);
    *tree = &s->ctx;
    s->last_doc = 0;
    return true;
}

/* The memory's chain replaces *d when it scores strictly higher (*tree then
 * the memory's trie). The caller holds the memory's lock. */
static void mem_chain(suffix_drafter *s, const int32_t *ctx, int32_t n, int k, sd_stree_draft *d, sd_stree **tree) {
    if (!s->mem || s->mem->n_doc == 0) return;
    sd_stree_draft m;
    sd_stree_speculate(&s->mem->tree, ctx, n, k, SPEC_FACTOR, MIN_PROB, &m);
    if (m.n > 0 && m.score > d->score && chain_in_vocab(&m, s->n_vocab)) {
        *d = m;
        *tree = &s->mem->tree;
        s->last_doc = s->mem->tree.node[m.node[0]].doc;
    }
}

/* The memory may be shared by generations on other threads (a batch's
 * slots): its trie is read under its lock, the chain copied out before it
 * is released; the request's own trie is synced and read before, unlocked. */
static void mem_lock(suffix_drafter *s) {
    if (s->mem) pthread_mutex_lock(&s->mem->mu);
}
static void mem_unlock(suffix_drafter *s) {
    if (s->mem) pthread_mutex_unlock(&s->mem->mu);
}

static int suffix_propose(void *self, const int32_t *ctx, int32_t n, int k, int32_t *out, float *q, sd_err *err) {
    (void)q;
    sd_stree_draft d;
    sd_stree *t;
    if (!own_chain(self, ctx, n, k, &d, &t, err)) return -1;
    mem_lock(self);
    mem_chain(self, ctx, n, k, &d, &t);
    memcpy(out, d.tok, (size_t)d.n * sizeof *out);
    mem_unlock(self);
    return d.n;
}

static int suffix_propose_top(void *self, const int32_t *ctx, int32_t n, int k, int w, int32_t *cand, sd_err *err) {
    sd_stree_draft d;
    sd_stree *t;
    if (!own_chain(self, ctx, n, k, &d, &t, err)) return -1;
    mem_lock(self); /* held while t may be the memory's trie */
    mem_chain(self, ctx, n, k, &d, &t);
    int32_t ids[8];
    const int wt = w < 8 ? w : 8; /* the loop's trees are at most 8 wide; past that: no candidate */
    for (int i = 0; i < d.n; i++) {
        /* the chain's own token ranks first among its parent's children */
        sd_stree_top_children(t, i == 0 ? d.from : d.node[i - 1], wt, ids);
        for (int j = 0; j < w; j++)
            cand[(size_t)i * (size_t)w + (size_t)j] = j < wt && ids[j] >= 0 ? t->node[ids[j]].tok : -1;
    }
    mem_unlock(self);
    return d.n;
}

static int suffix_probe(void *self, const int32_t *ctx, int32_t n, int32_t *out) {
    sd_err e = {0};
    int got = suffix_propose(self, ctx, n, 1, out, NULL, &e);
    return got > 0 ? 1 : 0;
}

static void suffix_accepted(void *self, const int32_t *ctx, int32_t n, int n_accepted) {
    (void)ctx;
    (void)n;
    suffix_drafter *s = self;
    if (s->mem && s->last_doc && n_accepted > 0) sd_suffix_cache_touch(s->mem, s->last_doc);
}

static void suffix_free(void *self) {
    suffix_drafter *s = self;
    if (!s) return;
    sd_stree_free(&s->ctx);
    free(s);
}

sd_status sd_drafter_suffix_init(sd_drafter *d, sd_suffix_cache *mem, int32_t n_vocab, sd_err *err) {
    suffix_drafter *s = calloc(1, sizeof *s);
    if (!s || !sd_stree_init(&s->ctx, mem ? mem->tree.depth : SD_SUFFIX_DEPTH)) {
        free(s);
        return sd_err_set(err, SD_ERR_NOMEM, "suffix drafter: out of memory");
    }
    s->mem = mem;
    s->n_vocab = n_vocab;
    sd_stree_cursor_start(&s->cur);
    *d = (sd_drafter){.name = "suffix", .self = s, .reset = suffix_reset, .propose = suffix_propose,
                      .propose_top = suffix_propose_top, .probe = suffix_probe, .accepted = suffix_accepted,
                      .free = suffix_free};
    return SD_OK;
}
