/* Model-free language models behind sd_lm for the decode tests (header-only,
 * shared by the property and sampling tests):
 * - hash: the argmax after a prefix is hash(last w tokens) mod V, made unique
 *   by a margin; the other logits are hash noise below it;
 * - markov: logits = table[last token][v], random small integers, so ties
 *   happen and the first-index rule is exercised.
 * The lm checks the loop's use of it: forwards never pass n_ctx, truncate
 * never grows; violations are counted in `misuse`. */
#ifndef SD_TESTS_ORACLE_LM_H
#define SD_TESTS_ORACLE_LM_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "decode/lm.h"
#include "decode/sampler.h"

typedef enum { ORACLE_HASH, ORACLE_MARKOV } oracle_kind;

typedef struct oracle {
    oracle_kind kind;
    int32_t V, w, n_ctx;
    uint64_t salt;
    float *table;   /* markov: [V][V] */
    int32_t *state; /* [n_ctx] tokens in the "KV cache" */
    int32_t len;
    int misuse;
    int64_t forwards;
    bool two_pass;           /* offer forward_first / logits_rest */
    int32_t pend_S, pend_n;  /* the pending second pass: batch size, rows done (pend_S = 0: none) */
    int32_t pend_len;        /* len right after that batch */
    bool tree;               /* offer forward_tree / keep_path */
    int32_t tree_n, tree_base, tree_parent[64]; /* the pending tree (tree_n = 0: none) */
    int64_t tree_forwards, tree_moves; /* tree forwards; keep_path rows moved (a sibling was kept) */
    int fail_truncate_at;    /* > 0: the truncate of that number (1-based) and every later one fail */
    int truncates;           /* truncates counted while fail_truncate_at is set */
    int64_t forwards_at_fail; /* forwards when the first truncate failed (-1: none failed) */
    int32_t force_len, force_tok; /* force_len > 0: the row after a prefix of that length has force_tok on top */
} oracle;

static inline uint64_t oracle_mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

/* Logits row after the prefix t[0..len) (len >= 1). */
static inline void oracle_row(const oracle *o, const int32_t *t, int32_t len, float *row) {
    if (o->kind == ORACLE_MARKOV) {
        memcpy(row, o->table + (size_t)t[len - 1] * (size_t)o->V, (size_t)o->V * sizeof *row);
    } else {
        uint64_t h = o->salt;
        for (int32_t i = len - o->w < 0 ? 0 : len - o->w; i < len; i++) h = oracle_mix(h ^ (uint64_t)t[i]);
        for (int32_t v = 0; v < o->V; v++) row[v] = (float)(oracle_mix(h + (uint64_t)v) >> 40) * 0x1p-24f;
        row[h % (uint64_t)o->V] = 2.0f;
    }
    /* Forced text: depends on the prefix's length only, so still a language
     * model; 1e6 is above any other logit: the argmax, and all the mass when
     * sampled at temperature 0.8. */
    if (o->force_len > 0 && len == o->force_len) row[o->force_tok] = 1e6f;
}

static inline int32_t oracle_n_ctx(void *self) { return ((oracle *)self)->n_ctx; }
static inline int32_t oracle_len(void *self) { return ((oracle *)self)->len; }
static inline sd_status oracle_truncate(void *self, int32_t n, sd_err *err) {
    oracle *o = self;
    o->tree_n = 0;
    if (o->fail_truncate_at > 0 && ++o->truncates >= o->fail_truncate_at) { /* the failing-rollback test */
        if (o->forwards_at_fail < 0) o->forwards_at_fail = o->forwards;
        return sd_err_set(err, SD_ERR_UNSUPPORTED, "oracle: rollback %d refused", o->truncates);
    }
    if (n > o->len || n < 0) o->misuse++;
    else o->len = n;
    return SD_OK;
}
static inline sd_status oracle_forward(void *self, sd_lm_use use, const int32_t *tok, int32_t S, float *logits,
                                       sd_err *err) {
    oracle *o = self;
    if ((unsigned)use > SD_LM_VERIFY) o->misuse++;
    o->forwards++;
    o->pend_S = 0;
    o->tree_n = 0;
    if (S < 1 || o->len + S > o->n_ctx) {
        o->misuse++;
        return sd_err_set(err, SD_ERR_CONTEXT, "oracle: forward past n_ctx");
    }
    for (int32_t i = 0; i < S; i++) {
        if (tok[i] < 0 || tok[i] >= o->V) {
            o->misuse++;
            return sd_err_set(err, SD_ERR_ARG, "oracle: token out of range");
        }
        o->state[o->len++] = tok[i];
        oracle_row(o, o->state, o->len, logits + (size_t)i * (size_t)o->V);
    }
    return SD_OK;
}

/* The two-pass head: the first pass computes a varying number of rows and
 * poisons the others with NaN (a loop that read them would see argmax 0 and
 * lose losslessness); the second pass fills them. */
static inline sd_status oracle_forward_first(void *self, const int32_t *tok, int32_t S, float *logits,
                                             int32_t *n_first, sd_err *err) {
    oracle *o = self;
    sd_status st = oracle_forward(self, SD_LM_VERIFY, tok, S, logits, err);
    if (st != SD_OK) return st;
    *n_first = 1 + (int32_t)(oracle_mix((uint64_t)o->forwards ^ o->salt) % (uint64_t)S);
    for (size_t i = (size_t)*n_first * (size_t)o->V; i < (size_t)S * (size_t)o->V; i++) logits[i] = NAN;
    o->pend_S = S;
    o->pend_n = *n_first;
    o->pend_len = o->len;
    return SD_OK;
}

static inline sd_status oracle_logits_rest(void *self, float *logits, sd_err *err) {
    oracle *o = self;
    if (o->pend_S == 0 || o->pend_n >= o->pend_S || o->len != o->pend_len) {
        o->misuse++;
        return sd_err_set(err, SD_ERR_ARG, "oracle: no rows pending");
    }
    for (int32_t r = o->pend_n; r < o->pend_S; r++)
        oracle_row(o, o->state, o->len - o->pend_S + r + 1, logits + (size_t)(r - o->pend_n) * (size_t)o->V);
    o->pend_n = o->pend_S;
    return SD_OK;
}

/* Token trees (decode/lm.h forward_tree): node s is held at slot len + s;
 * its logits are those after the committed tokens and its root path. */
static inline sd_status oracle_forward_tree(void *self, const int32_t *tok, const int32_t *parent, int32_t S,
                                            float *logits, sd_err *err) {
    oracle *o = self;
    o->forwards++;
    o->tree_forwards++;
    o->pend_S = 0;
    if (S < 1 || S > 64 || o->len + S > o->n_ctx) {
        o->misuse++;
        return sd_err_set(err, SD_ERR_CONTEXT, "oracle: bad tree or past n_ctx");
    }
    int32_t *buf = malloc((size_t)(o->len + S) * sizeof *buf), depth[64];
    memcpy(buf, o->state, (size_t)o->len * sizeof *buf);
    for (int32_t s = 0; s < S; s++) {
        if (tok[s] < 0 || tok[s] >= o->V || parent[s] < -1 || parent[s] >= s) o->misuse++;
        depth[s] = parent[s] < 0 ? 0 : depth[parent[s]] + 1;
        for (int32_t a = s; a >= 0; a = parent[a]) buf[o->len + depth[a]] = tok[a];
        oracle_row(o, buf, o->len + depth[s] + 1, logits + (size_t)s * (size_t)o->V);
        o->tree_parent[s] = parent[s];
    }
    free(buf);
    memcpy(o->state + o->len, tok, (size_t)S * sizeof *tok);
    o->tree_base = o->len;
    o->tree_n = S;
    o->len += S;
    return SD_OK;
}

static inline sd_status oracle_keep_path(void *self, const int32_t *path, int32_t m, sd_err *err) {
    oracle *o = self;
    bool ok = o->tree_n > 0 && o->len == o->tree_base + o->tree_n && m >= 0 && m <= o->tree_n;
    for (int32_t d = 0; ok && d < m; d++)
        ok = path[d] >= 0 && path[d] < o->tree_n && o->tree_parent[path[d]] == (d ? path[d - 1] : -1);
    if (!ok) {
        o->misuse++;
        return sd_err_set(err, SD_ERR_ARG, "oracle: keep_path is not a root path of the pending tree");
    }
    for (int32_t d = 0; d < m; d++) {
        o->tree_moves += path[d] != d;
        o->state[o->tree_base + d] = o->state[o->tree_base + path[d]];
    }
    o->len = o->tree_base + m;
    o->tree_n = 0;
    return SD_OK;
}

/* markov_levels: table entries are integers in [0, levels) (small = many ties). */
static inline void oracle_init(oracle *o, oracle_kind kind, int32_t V, int32_t w, int32_t n_ctx,
                               uint64_t seed, int markov_levels) {
    *o = (oracle){.kind = kind, .V = V, .w = w, .n_ctx = n_ctx, .salt = oracle_mix(seed), .forwards_at_fail = -1};
    o->state = malloc((size_t)n_ctx * sizeof *o->state);
    if (kind == ORACLE_MARKOV) {
        o->table = malloc((size_t)V * (size_t)V * sizeof *o->table);
        sd_rng r;
        sd_rng_seed(&r, seed);
        for (size_t i = 0; i < (size_t)V * (size_t)V; i++)
            o->table[i] = (float)(sd_rng_next(&r) % (uint64_t)markov_levels);
    }
}

static inline void oracle_free(oracle *o) {
    free(o->state);
    free(o->table);
}

static inline sd_lm oracle_lm(oracle *o) {
    sd_lm lm = {.self = o, .n_vocab = o->V, .n_ctx = oracle_n_ctx, .len = oracle_len,
                .forward = oracle_forward, .truncate = oracle_truncate};
    if (o->two_pass) {
        lm.forward_first = oracle_forward_first;
        lm.logits_rest = oracle_logits_rest;
    }
    if (o->tree) {
        lm.forward_tree = oracle_forward_tree;
        lm.keep_path = oracle_keep_path;
    }
    return lm;
}

#endif
