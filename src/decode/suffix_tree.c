/* The depth-limited suffix trie (suffix_tree.h). Insertion keeps, per string
 * being inserted, the nodes of its last 0..depth-1 tokens (the cursor), so an
 * appended token costs depth hash lookups, not a walk per suffix; the
 * per-token update is the one Arctic Inference's SuffixTree::append makes,
 * without its path compression (a plain trie keeps removal a counter walk). */
#include "decode/suffix_tree.h"

#include <stdlib.h>
#include <string.h>

#include "core/checked.h"

#define EMPTY UINT64_MAX

static uint64_t key_of(int32_t parent, int32_t tok) { return (uint64_t)(uint32_t)parent << 32 | (uint32_t)tok; }

static size_t slot_of(const sd_stree *t, uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k & (t->hcap - 1);
}

static bool hash_alloc(sd_stree *t, size_t cap) {
    uint64_t *k = sd_malloc_array(cap, sizeof *k);
    int32_t *v = sd_malloc_array(cap, sizeof *v);
    if (!k || !v) {
        free(k);
        free(v);
        return false;
    }
    for (size_t i = 0; i < cap; i++) k[i] = EMPTY;
    uint64_t *ok = t->hkey;
    int32_t *ov = t->hval;
    size_t ocap = t->hcap;
    t->hkey = k;
    t->hval = v;
    t->hcap = cap;
    for (size_t i = 0; i < ocap; i++) {
        if (ok[i] == EMPTY) continue;
        size_t j = slot_of(t, ok[i]);
        while (k[j] != EMPTY) j = (j + 1) & (cap - 1);
        k[j] = ok[i];
        v[j] = ov[i];
    }
    free(ok);
    free(ov);
    return true;
}

static void hash_put(sd_stree *t, uint64_t k, int32_t v) {
    size_t j = slot_of(t, k);
    while (t->hkey[j] != EMPTY) j = (j + 1) & (t->hcap - 1);
    t->hkey[j] = k;
    t->hval[j] = v;
    t->hused++;
}

/* Linear probing's deletion by backward shift: the entries after the hole
 * that probed past it move into it, so no tombstones pile up. */
static void hash_del(sd_stree *t, uint64_t k) {
    const size_t mask = t->hcap - 1;
    size_t i = slot_of(t, k);
    while (t->hkey[i] != k) i = (i + 1) & mask;
    for (size_t j = (i + 1) & mask; t->hkey[j] != EMPTY; j = (j + 1) & mask) {
        size_t home = slot_of(t, t->hkey[j]);
        /* j's entry may fill the hole at i unless its home lies cyclically in (i, j] */
        bool stays = i <= j ? (home > i && home <= j) : (home > i || home <= j);
        if (stays) continue;
        t->hkey[i] = t->hkey[j];
        t->hval[i] = t->hval[j];
        i = j;
    }
    t->hkey[i] = EMPTY;
    t->hused--;
}

int32_t sd_stree_child(const sd_stree *t, int32_t node, int32_t tok) {
    const uint64_t k = key_of(node, tok);
    for (size_t j = slot_of(t, k);; j = (j + 1) & (t->hcap - 1)) {
        if (t->hkey[j] == k) return t->hval[j];
        if (t->hkey[j] == EMPTY) return -1;
    }
}

static void root_init(sd_stree *t) {
    t->node[0] = (sd_snode){.tok = -1, .parent = -1, .child = -1, .next = -1, .prev = -1, .best = -1};
    t->n_node = t->n_live = 1;
    t->free_head = -1;
}

bool sd_stree_init(sd_stree *t, int depth) {
    memset(t, 0, sizeof *t);
    if (depth < 1 || depth > SD_STREE_MAX_DEPTH) return false;
    t->depth = depth;
    t->cap_node = SD_STREE_INIT_NODES;
    t->node = sd_malloc_array((size_t)t->cap_node, sizeof *t->node);
    if (!t->node || !hash_alloc(t, SD_STREE_INIT_SLOTS)) {
        sd_stree_free(t);
        return false;
    }
    root_init(t);
    return true;
}

void sd_stree_free(sd_stree *t) {
    if (!t) return;
    free(t->node);
    free(t->hkey);
    free(t->hval);
    memset(t, 0, sizeof *t);
}

void sd_stree_clear(sd_stree *t) {
    for (size_t i = 0; i < t->hcap; i++) t->hkey[i] = EMPTY;
    t->hused = 0;
    root_init(t);
}

bool sd_stree_reserve(sd_stree *t, int64_t n_new) {
    if (n_new < 0 || n_new > INT32_MAX - t->n_live) return false;
    const int64_t live = t->n_live + n_new;
    /* free-list nodes count as room only when the pool is full */
    const int64_t pool_need = t->n_node + (n_new > t->n_node - t->n_live ? n_new - (t->n_node - t->n_live) : 0);
    if (pool_need > t->cap_node) {
        int64_t cap = t->cap_node;
        while (cap < pool_need) cap *= 2;
        if (cap > INT32_MAX) cap = INT32_MAX;
        sd_snode *p = realloc(t->node, (size_t)cap * sizeof *p);
        if (!p) return false;
        t->node = p;
        t->cap_node = (int32_t)cap;
    }
    size_t cap = t->hcap;
    while ((size_t)live * 2 > cap) cap *= 2;
    return cap == t->hcap || hash_alloc(t, cap);
}

static int32_t new_node(sd_stree *t, int32_t parent, int32_t tok) {
    int32_t id;
    if (t->free_head >= 0) {
        id = t->free_head;
        t->free_head = t->node[id].next;
    } else id = t->n_node++;
    sd_snode *p = &t->node[parent];
    t->node[id] = (sd_snode){.tok = tok, .parent = parent, .child = -1, .next = p->child, .prev = -1, .best = -1};
    if (p->child >= 0) t->node[p->child].prev = id;
    p->child = id;
    hash_put(t, key_of(parent, tok), id);
    t->n_live++;
    return id;
}

static void drop_node(sd_stree *t, int32_t id) {
    sd_snode *n = &t->node[id];
    sd_snode *p = &t->node[n->parent];
    if (n->prev >= 0) t->node[n->prev].next = n->next;
    else p->child = n->next;
    if (n->next >= 0) t->node[n->next].prev = n->prev;
    if (p->best == id) p->best = -1;
    hash_del(t, key_of(n->parent, n->tok));
    n->next = t->free_head;
    n->count = 0;
    t->free_head = id;
    t->n_live--;
}

/* a ranks before b: higher count, then lower token */
static bool ranks_before(const sd_snode *a, const sd_snode *b) {
    return a->count > b->count || (a->count == b->count && a->tok < b->tok);
}

void sd_stree_cursor_start(sd_stree_cursor *c) {
    c->act[0] = 0;
    c->n_act = 1;
}

bool sd_stree_append(sd_stree *t, sd_stree_cursor *c, int32_t tok, uint32_t doc) {
    if (!sd_stree_reserve(t, t->depth)) return false;
    const int top = c->n_act - 1 < t->depth - 1 ? c->n_act - 1 : t->depth - 1;
    for (int i = top; i >= 0; i--) { /* deepest first: act[i + 1] is overwritten after its use */
        const int32_t parent = c->act[i];
        int32_t ch = sd_stree_child(t, parent, tok);
        if (ch < 0) ch = new_node(t, parent, tok);
        sd_snode *n = &t->node[ch], *p = &t->node[parent];
        n->count++;
        n->doc = doc;
        if (p->best >= 0 && p->best != ch && ranks_before(n, &t->node[p->best])) p->best = ch;
        c->act[i + 1] = ch;
    }
    t->node[0].count++;
    c->act[0] = 0;
    if (c->n_act < t->depth + 1) c->n_act++;
    return true;
}

void sd_stree_remove(sd_stree *t, const int32_t *s, int32_t n) {
    int32_t path[SD_STREE_MAX_DEPTH];
    for (int32_t start = 0; start < n; start++) {
        int len = 0;
        int32_t node = 0;
        t->node[0].count--;
        for (int32_t i = start; i < n && len < t->depth; i++) {
            const int32_t ch = sd_stree_child(t, node, s[i]);
            if (ch < 0) break; /* not inserted whole: nothing more to take back */
            t->node[ch].count--;
            if (t->node[node].best == ch) t->node[node].best = -1; /* it may no longer lead */
            path[len++] = node = ch;
        }
        /* deepest first: a node's count bounds its children's, so a node at
         * zero has only children at zero, all on this path */
        while (len > 0 && t->node[path[len - 1]].count == 0) drop_node(t, path[--len]);
    }
}

int32_t sd_stree_find(const sd_stree *t, const int32_t *s, int32_t n) {
    int32_t node = 0;
    for (int32_t i = 0; i < n && node >= 0; i++) node = sd_stree_child(t, node, s[i]);
    return node;
}

int32_t sd_stree_best_child(sd_stree *t, int32_t node) {
    sd_snode *p = &t->node[node];
    if (p->best < 0)
        for (int32_t c = p->child; c >= 0; c = t->node[c].next)
            if (p->best < 0 || ranks_before(&t->node[c], &t->node[p->best])) p->best = c;
    return p->best;
}

int sd_stree_top_children(const sd_stree *t, int32_t node, int w, int32_t *out) {
    int got = 0;
    for (int i = 0; i < w; i++) out[i] = -1;
    for (int32_t c = t->node[node].child; c >= 0; c = t->node[c].next) {
        int i = got < w ? got++ : w;
        if (i == w && !ranks_before(&t->node[c], &t->node[out[w - 1]])) continue;
        if (i == w) i = w - 1;
        while (i > 0 && ranks_before(&t->node[c], &t->node[out[i - 1]])) {
            out[i] = out[i - 1];
            i--;
        }
        out[i] = c;
    }
    return got;
}

/* The greedy chain from node: Arctic Inference's _speculate_path rule. */
static void chain_from(sd_stree *t, int32_t node, int max_tokens, float min_prob, sd_stree_draft *d) {
    float p = 1.0f;
    d->n = 0;
    d->score = 0;
    d->from = node;
    while (d->n < max_tokens) {
        const int32_t ch = sd_stree_best_child(t, node);
        if (ch < 0) break;
        p *= (float)t->node[ch].count / (float)t->node[node].count;
        if (p < min_prob) break;
        d->tok[d->n] = t->node[ch].tok;
        d->node[d->n++] = ch;
        d->score += p;
        node = ch;
    }
}

void sd_stree_speculate(sd_stree *t, const int32_t *pat, int32_t n, int max_tokens, float spec_factor,
                        float min_prob, sd_stree_draft *d) {
    d->n = d->match_len = 0;
    d->score = 0;
    d->from = -1;
    if (max_tokens > SD_STREE_MAX_DRAFT) max_tokens = SD_STREE_MAX_DRAFT;
    sd_stree_draft c;
    for (int m = n < t->depth ? (int)n : t->depth; m >= 1; m--) {
        const int32_t node = sd_stree_find(t, pat + n - m, m);
        if (node < 0) continue;
        int mt = (int)((float)m * spec_factor + 1e-6f);
        chain_from(t, node, mt < max_tokens ? mt : max_tokens, min_prob, &c);
        if (c.n > 0 && c.score > d->score) {
            *d = c;
            d->match_len = m;
        }
    }
}

size_t sd_stree_bytes(const sd_stree *t) {
    return (size_t)t->cap_node * sizeof *t->node + t->hcap * (sizeof *t->hkey + sizeof *t->hval);
}

size_t sd_stree_bytes_per_token_max(int depth) {
    /* the pool at most twice the live nodes, the table at most 4 slots per live node */
    return (size_t)depth * (2 * sizeof(sd_snode) + 4 * (sizeof(uint64_t) + sizeof(int32_t)));
}
