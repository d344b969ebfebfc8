/* n-gram prompt lookup (ARCHITECTURE.md §3): the continuation of the most recent
 * earlier occurrence of the context's last m tokens, m from ngram_max down to
 * ngram_min, continued periodically past the end of the context. An
 * open-addressing hash table maps each (m, m-gram) to the end
 * position of its latest occurrence; it grows with the context, so a lookup
 * costs O(m + k) whatever the context length. */
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "decode/drafter.h"

typedef struct slot {
    uint64_t hash;
    int32_t end; /* position of the m-gram's last token; -1 = empty */
    int32_t order;
} slot;

typedef struct ngram {
    int nmin, nmax;
    int32_t *tok, n_tok, cap_tok; /* the context seen so far */
    int32_t n_indexed;            /* m-grams ending before this are in the table */
    slot *tab;
    size_t cap, used; /* cap is a power of two */
} ngram;

static uint64_t gram_hash(const int32_t *t, int m) {
    uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t)m;
    for (int i = 0; i < m; i++) {
        h ^= (uint32_t)t[i];
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h;
}

static bool same_gram(const ngram *g, const slot *s, const int32_t *t, int m) {
    return s->order == m && !memcmp(g->tok + s->end - m + 1, t, (size_t)m * sizeof *t);
}

/* The slot holding (m, t[0..m)) or the empty slot where it would go. */
static slot *find(ngram *g, const int32_t *t, int m, uint64_t h) {
    size_t i = h & (g->cap - 1);
    while (g->tab[i].end >= 0 && !(g->tab[i].hash == h && same_gram(g, &g->tab[i], t, m)))
        i = (i + 1) & (g->cap - 1);
    return &g->tab[i];
}

static bool grow_table(ngram *g) {
    slot *old = g->tab;
    size_t old_cap = g->cap;
    g->cap = old_cap ? 2 * old_cap : 1024;
    g->tab = sd_malloc_array(g->cap, sizeof *g->tab);
    if (!g->tab) {
        g->tab = old;
        g->cap = old_cap;
        return false;
    }
    for (size_t i = 0; i < g->cap; i++) g->tab[i].end = -1;
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].end < 0) continue;
        const slot *s = &old[i];
        *find(g, g->tok + s->end - s->order + 1, s->order, s->hash) = *s;
    }
    free(old);
    return true;
}

static bool insert(ngram *g, int32_t end, int m) {
    if (2 * (g->used + 1) > g->cap && !grow_table(g)) return false;
    const int32_t *t = g->tok + end - m + 1;
    uint64_t h = gram_hash(t, m);
    slot *s = find(g, t, m, h);
    if (s->end < 0) g->used++;
    *s = (slot){h, end, m}; /* a later occurrence replaces an earlier one */
    return true;
}

static void ngram_reset(void *self) {
    ngram *g = self;
    g->n_tok = g->n_indexed = 0;
    g->used = 0;
    for (size_t i = 0; i < g->cap; i++) g->tab[i].end = -1;
}

/* Brings the index up to ctx[0..n): only m-grams with a continuation (ending
 * at n-2 or before) are indexed, so a hit is always an EARLIER occurrence. */
static bool sync(ngram *g, const int32_t *ctx, int32_t n) {
    if (n < g->n_tok || (g->n_tok > 0 && ctx[g->n_tok - 1] != g->tok[g->n_tok - 1])) ngram_reset(g);
    if (n > g->cap_tok) {
        int32_t cap = n > 2 * g->cap_tok ? n : 2 * g->cap_tok;
        int32_t *t = realloc(g->tok, (size_t)cap * sizeof *t);
        if (!t) return false;
        g->tok = t;
        g->cap_tok = cap;
    }
    memcpy(g->tok + g->n_tok, ctx + g->n_tok, (size_t)(n - g->n_tok) * sizeof *ctx);
    g->n_tok = n;
    for (; g->n_indexed <= n - 2; g->n_indexed++)
        for (int m = g->nmin; m <= g->nmax && m <= g->n_indexed + 1; m++)
            if (!insert(g, g->n_indexed, m)) return false;
    return true;
}

static int lookup(ngram *g, const int32_t *ctx, int32_t n, int k, int32_t *out) {
    for (int m = g->nmax; m >= g->nmin; m--) {
        if (m >= n || !g->cap) continue;
        const int32_t *t = ctx + n - m;
        slot *s = find(g, t, m, gram_hash(t, m));
        if (s->end < 0) continue;
        /* Copy the continuation; past the end of the context it continues
         * with the draft itself (LZ77-style overlap), so a repeating span of
         * period p yields a full-length draft, not just p tokens. */
        int got = 0;
        for (int32_t i = s->end + 1; got < k; i++) out[got++] = i < n ? g->tok[i] : out[i - n];
        return got;
    }
    return 0;
}

static int ngram_propose(void *self, const int32_t *ctx, int32_t n, int k, int32_t *out, float *q,
                         sd_err *err) {
    (void)q;
    ngram *g = self;
    if (!sync(g, ctx, n)) return sd_err_set(err, SD_ERR_NOMEM, "n-gram index: out of memory"), -1;
    return lookup(g, ctx, n, k, out);
}

static int ngram_probe(void *self, const int32_t *ctx, int32_t n, int32_t *out) {
    ngram *g = self;
    return sync(g, ctx, n) ? lookup(g, ctx, n, 1, out) : 0;
}

static void ngram_free(void *self) {
    ngram *g = self;
    if (!g) return;
    free(g->tok);
    free(g->tab);
    free(g);
}

sd_status sd_drafter_ngram_init(sd_drafter *d, int ngram_min, int ngram_max, sd_err *err) {
    if (ngram_min < 1 || ngram_max < ngram_min || ngram_max > 8)
        return sd_err_set(err, SD_ERR_ARG, "n-gram orders must satisfy 1 <= min <= max <= 8 (got %d..%d)",
                          ngram_min, ngram_max);
    ngram *g = calloc(1, sizeof *g);
    if (!g || !grow_table(g)) {
        ngram_free(g);
        return sd_err_set(err, SD_ERR_NOMEM, "n-gram drafter: out of memory");
    }
    g->nmin = ngram_min;
    g->nmax = ngram_max;
    *d = (sd_drafter){.name = "ngram", .self = g, .reset = ngram_reset, .propose = ngram_propose,
                      .probe = ngram_probe, .free = ngram_free};
    return SD_OK;
}
