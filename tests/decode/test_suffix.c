/* decode/suffix_tree, suffix_cache, drafter_suffix: the suffix trie's
 * proposals against a brute-force search over the same token strings (the
 * counts are occurrence counts, the chain rule SuffixDecoding's), after
 * insertions and removals; the memory's token budget and byte bound under
 * many outputs, its LRU eviction (by recency of adding and of accepted
 * drafts), and the drafter preferring the memory only when it scores higher.
 * (Lossless output with the drafter is tests/api/test_suffix_api.c's job.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "decode/drafter.h"
#include "decode/suffix_cache.h"
#include "decode/suffix_tree.h"

enum { MAX_DOCS = 64, MAX_LEN = 160 };

typedef struct corpus {
    int n;
    int32_t len[MAX_DOCS];
    int32_t tok[MAX_DOCS][MAX_LEN];
    bool gone[MAX_DOCS];
} corpus;

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static uint32_t rnd(uint32_t n) {
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (uint32_t)(rng % n);
}

/* Occurrences of x[0..m) in the corpus's strings still present. */
static int occ(const corpus *c, const int32_t *x, int m) {
    int n = 0;
    for (int d = 0; d < c->n; d++)
        for (int i = 0; !c->gone[d] && i + m <= c->len[d]; i++) n += !memcmp(c->tok[d] + i, x, (size_t)m * sizeof *x);
    return n;
}

/* The same rule as sd_stree_speculate, by counting occurrences directly. */
static void brute(const corpus *c, int depth, int alphabet, const int32_t *pat, int n, int k, float factor,
                  float min_prob, sd_stree_draft *best) {
    best->n = best->match_len = 0;
    best->score = 0;
    int32_t x[SD_STREE_MAX_DEPTH + SD_STREE_MAX_DRAFT];
    for (int m = n < depth ? n : depth; m >= 1; m--) {
        memcpy(x, pat + n - m, (size_t)m * sizeof *x);
        int cnt = occ(c, x, m);
        if (!cnt) continue;
        int mt = (int)((float)m * factor + 1e-6f), lim = mt < k ? mt : k, len = m;
        sd_stree_draft d = {0};
        float p = 1.0f;
        while (d.n < lim && len < depth) {
            int bt = -1, bc = 0;
            for (int t = 0; t < alphabet; t++) {
                x[len] = t;
                int cc = occ(c, x, len + 1);
                if (cc > bc) bc = cc, bt = t;
            }
            if (bt < 0) break;
            p *= (float)bc / (float)cnt;
            if (p < min_prob) break;
            x[len++] = bt;
            d.tok[d.n++] = bt;
            d.score += p;
            cnt = bc;
        }
        if (d.n > 0 && d.score > best->score) {
            *best = d;
            best->match_len = m;
        }
    }
}

static void insert(sd_stree *t, const int32_t *s, int n, uint32_t doc) {
    sd_stree_cursor cur;
    sd_stree_cursor_start(&cur);
    for (int i = 0; i < n; i++) assert_true(sd_stree_append(t, &cur, s[i], doc));
}

static void random_string(int32_t *s, int n, int alphabet) {
    /* repeats of earlier stretches, as real outputs have, among noise */
    for (int i = 0; i < n; i++)
        s[i] = i > 8 && rnd(3) == 0 ? s[rnd((uint32_t)i - 4)] : (int32_t)rnd((uint32_t)alphabet);
}

static void expect_same(sd_stree *t, const corpus *c, int depth, int alphabet, const int32_t *pat, int n, int k,
                        float factor, float min_prob) {
    sd_stree_draft a, b;
    sd_stree_speculate(t, pat, n, k, factor, min_prob, &a);
    brute(c, depth, alphabet, pat, n, k, factor, min_prob, &b);
    assert_int_equal(a.n, b.n);
    assert_int_equal(a.match_len, b.match_len);
    assert_memory_equal(a.tok, b.tok, (size_t)a.n * sizeof *a.tok);
    assert_true(a.score == b.score);
}

/* Random corpora, depths, alphabets, patterns; half the strings removed again. */
static void test_tree_vs_brute_force(void **state) {
    (void)state;
    static corpus c;
    for (int trial = 0; trial < 40; trial++) {
        const int depth = 1 + (int)rnd(10), alphabet = 2 + (int)rnd(5);
        sd_stree t;
        assert_true(sd_stree_init(&t, depth));
        memset(&c, 0, sizeof c);
        c.n = 1 + (int)rnd(12);
        for (int d = 0; d < c.n; d++) {
            c.len[d] = 1 + (int)rnd(MAX_LEN);
            random_string(c.tok[d], c.len[d], alphabet);
            insert(&t, c.tok[d], c.len[d], (uint32_t)d + 1);
        }
        for (int phase = 0; phase < 2; phase++) {
            for (int q = 0; q < 30; q++) {
                int32_t pat[40];
                const int n = 1 + (int)rnd(40);
                if (rnd(2)) { /* a pattern ending inside a held string */
                    const int d = (int)rnd((uint32_t)c.n);
                    for (int i = 0; i < n; i++) pat[i] = c.tok[d][rnd((uint32_t)c.len[d])];
                    int end = (int)rnd((uint32_t)c.len[d]) + 1, m = end < n ? end : n;
                    memcpy(pat + n - m, c.tok[d] + end - m, (size_t)m * sizeof *pat);
                } else random_string(pat, n, alphabet);
                const float factors[] = {1.0f, 0.5f, 4.0f}, probs[] = {0.1f, 0.0f, 0.5f};
                expect_same(&t, &c, depth, alphabet, pat, n, 1 + (int)rnd(20), factors[q % 3], probs[q % 3 == 1 ? 1 : q % 2 * 2]);
            }
            for (int d = 0; d < c.n; d += 2) { /* phase 2 runs on what is left */
                if (c.gone[d]) continue;
                sd_stree_remove(&t, c.tok[d], c.len[d]);
                c.gone[d] = true;
            }
        }
        for (int d = 0; d < c.n; d++)
            if (!c.gone[d]) sd_stree_remove(&t, c.tok[d], c.len[d]);
        /* all taken back: only the root is left, and no child entry */
        assert_int_equal(t.n_live, 1);
        assert_int_equal(t.node[0].count, 0);
        assert_int_equal((int)t.hused, 0);
        sd_stree_free(&t);
    }
}

/* The top children come in the order the chain takes them. */
static void test_top_children(void **state) {
    (void)state;
    sd_stree t;
    assert_true(sd_stree_init(&t, 4));
    const int32_t s[] = {1, 5, 1, 3, 1, 5, 1, 7, 1, 5, 1, 3};
    insert(&t, s, 12, 1);
    int32_t ids[3];
    const int32_t one = sd_stree_child(&t, 0, 1);
    assert_int_equal(sd_stree_top_children(&t, one, 3, ids), 3);
    assert_int_equal(t.node[ids[0]].tok, 5); /* 3 times */
    assert_int_equal(t.node[ids[1]].tok, 3); /* twice */
    assert_int_equal(t.node[ids[2]].tok, 7);
    assert_int_equal(sd_stree_best_child(&t, one), ids[0]);
    sd_stree_free(&t);
}

/* Many outputs through a small budget: never more tokens than the budget,
 * never more bytes than the bound, and what is held answers as a trie built
 * from the held outputs alone would (eviction takes every count back). */
static void test_cache_bound(void **state) {
    (void)state;
    enum { BUDGET = 600, ALPHA = 6 };
    sd_suffix_cache m;
    assert_int_equal(sd_suffix_cache_init(&m, BUDGET, 8, NULL), SD_OK);
    const size_t bound = sd_suffix_cache_bytes_max(&m);
    int32_t s[MAX_LEN];
    for (int i = 0; i < 300; i++) {
        int n = 1 + (int)rnd(MAX_LEN);
        random_string(s, n, ALPHA);
        assert_int_equal(sd_suffix_cache_add(&m, s, n, NULL), SD_OK);
        assert_true(m.n_tokens <= BUDGET);
        assert_true(sd_suffix_cache_bytes(&m) <= bound);
    }
    assert_true(m.n_evicted > 200);
    static corpus c;
    memset(&c, 0, sizeof c);
    for (int d = 0; d < m.n_doc; d++) {
        c.len[c.n] = m.doc[d].n;
        memcpy(c.tok[c.n++], m.doc[d].tok, (size_t)m.doc[d].n * sizeof *s);
    }
    for (int q = 0; q < 50; q++) {
        const int d = (int)rnd((uint32_t)c.n), end = 1 + (int)rnd((uint32_t)c.len[d]), n = end < 12 ? end : 12;
        expect_same(&m.tree, &c, 8, ALPHA, c.tok[d] + end - n, n, 8, 1.0f, 0.1f);
    }
    /* one output as long as the budget leaves only itself */
    random_string(s, MAX_LEN, ALPHA);
    sd_suffix_cache big;
    assert_int_equal(sd_suffix_cache_init(&big, MAX_LEN, 8, NULL), SD_OK);
    assert_int_equal(sd_suffix_cache_add(&big, s, 10, NULL), SD_OK);
    assert_int_equal(sd_suffix_cache_add(&big, s, MAX_LEN, NULL), SD_OK);
    assert_int_equal(big.n_doc, 1);
    assert_int_equal((int)big.tree.node[0].count, MAX_LEN);
    /* longer than the budget: its tail */
    int32_t longer[MAX_LEN + 5];
    random_string(longer, MAX_LEN + 5, ALPHA);
    assert_int_equal(sd_suffix_cache_add(&big, longer, MAX_LEN + 5, NULL), SD_OK);
    assert_int_equal(big.n_doc, 1);
    assert_memory_equal(big.doc[0].tok, longer + 5, MAX_LEN * sizeof *longer);
    sd_suffix_cache_free(&big);
    sd_suffix_cache_free(&m);
    assert_int_equal(sd_suffix_cache_init(&m, 0, 8, NULL), SD_ERR_ARG);
    assert_int_equal(sd_suffix_cache_init(&m, 10, SD_STREE_MAX_DEPTH + 1, NULL), SD_ERR_ARG);
}

/* Outputs A, B, C of 10 tokens each (disjoint tokens) fill a budget of 30. */
static void fill_abc(sd_suffix_cache *m, int32_t abc[3][10]) {
    assert_int_equal(sd_suffix_cache_init(m, 30, SD_SUFFIX_DEPTH, NULL), SD_OK);
    for (int d = 0; d < 3; d++) {
        for (int i = 0; i < 10; i++) abc[d][i] = 100 * (d + 1) + i;
        assert_int_equal(sd_suffix_cache_add(m, abc[d], 10, NULL), SD_OK);
    }
}

/* Does the memory still draft B's continuation? */
static int drafts(sd_drafter *dr, const int32_t *s) {
    int32_t out[8];
    dr->reset(dr->self);
    return dr->propose(dr->self, s, 4, 8, out, NULL, NULL);
}

/* LRU: adding D evicts the least recently used output — B after A was used
 * (touched directly, or through an accepted draft), else A. */
static void test_cache_lru(void **state) {
    (void)state;
    int32_t abc[3][10], d4[10];
    for (int i = 0; i < 10; i++) d4[i] = 400 + i;
    sd_suffix_cache m;
    /* no use: A, the oldest, goes */
    fill_abc(&m, abc);
    const uint32_t a = m.doc[0].serial, b = m.doc[1].serial;
    assert_int_equal(sd_suffix_cache_add(&m, d4, 10, NULL), SD_OK);
    assert_false(sd_suffix_cache_holds(&m, a));
    assert_true(sd_suffix_cache_holds(&m, b));
    sd_suffix_cache_free(&m);
    /* A touched: B goes */
    fill_abc(&m, abc);
    sd_suffix_cache_touch(&m, m.doc[0].serial);
    assert_int_equal(sd_suffix_cache_add(&m, d4, 10, NULL), SD_OK);
    assert_true(sd_suffix_cache_holds(&m, a));
    assert_false(sd_suffix_cache_holds(&m, b));
    sd_suffix_cache_free(&m);
    /* a draft from A accepted: A is used, B goes, and the drafter no longer finds B */
    fill_abc(&m, abc);
    sd_drafter dr;
    assert_int_equal(sd_drafter_suffix_init(&dr, &m, 1000, NULL), SD_OK);
    int32_t out[8];
    const int got = dr.propose(dr.self, abc[0], 4, 8, out, NULL, NULL);
    assert_int_equal(got, 4); /* a match of 4: at most 4 tokens (spec factor 1) */
    assert_memory_equal(out, abc[0] + 4, 4 * sizeof *out);
    assert_int_equal(drafts(&dr, abc[1]), 4);
    dr.propose(dr.self, abc[0], 4, 8, out, NULL, NULL);
    dr.accepted(dr.self, abc[0], 4, 2);
    assert_int_equal(sd_suffix_cache_add(&m, d4, 10, NULL), SD_OK);
    assert_true(sd_suffix_cache_holds(&m, a));
    assert_false(sd_suffix_cache_holds(&m, b));
    assert_int_equal(drafts(&dr, abc[1]), 0);
    assert_int_equal(drafts(&dr, abc[0]), 4);
    sd_drafter_free(&dr);
    sd_suffix_cache_free(&m);
}

/* The drafter's own context: a repeat inside the context drafts without a
 * memory; the memory wins where it scores higher. */
static void test_drafter_context_and_memory(void **state) {
    (void)state;
    sd_drafter dr;
    assert_int_equal(sd_drafter_suffix_init(&dr, NULL, 1000, NULL), SD_OK);
    const int32_t ctx[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 1, 2, 3, 4};
    int32_t out[8];
    int got = dr.propose(dr.self, ctx, 13, 8, out, NULL, NULL);
    assert_int_equal(got, 4); /* the 4-token match 1 2 3 4 continues 5 6 7 8 */
    const int32_t want[] = {5, 6, 7, 8};
    assert_memory_equal(out, want, sizeof want);
    assert_int_equal(dr.probe(dr.self, ctx, 13, out), 1);
    assert_int_equal(out[0], 5);
    sd_drafter_free(&dr);
    /* a memory where 1 2 3 4 went on 50 51 52 53 twice beats the context's once */
    sd_suffix_cache m;
    assert_int_equal(sd_suffix_cache_init(&m, 1000, SD_SUFFIX_DEPTH, NULL), SD_OK);
    const int32_t o[] = {1, 2, 3, 4, 50, 51, 52, 53};
    for (int i = 0; i < 2; i++) assert_int_equal(sd_suffix_cache_add(&m, o, 8, NULL), SD_OK);
    assert_int_equal(sd_drafter_suffix_init(&dr, &m, 1000, NULL), SD_OK);
    got = dr.propose(dr.self, ctx, 13, 8, out, NULL, NULL);
    const int32_t want_mem[] = {50, 51, 52, 53};
    assert_int_equal(got, 4);
    assert_memory_equal(out, want_mem, sizeof want_mem);
    int32_t cand[4 * 2];
    assert_int_equal(dr.propose_top(dr.self, ctx, 13, 4, 2, cand, NULL), 4);
    for (int i = 0; i < 4; i++) assert_int_equal(cand[2 * i], want_mem[i]);
    sd_drafter_free(&dr);
    /* the same memory for a target of 52 tokens: its chain holds ids 52 and 53,
     * outside that vocabulary, so the context's chain is proposed instead */
    assert_int_equal(sd_drafter_suffix_init(&dr, &m, 52, NULL), SD_OK);
    got = dr.propose(dr.self, ctx, 13, 8, out, NULL, NULL);
    assert_int_equal(got, 4);
    assert_memory_equal(out, want, sizeof want);
    sd_drafter_free(&dr);
    sd_suffix_cache_free(&m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tree_vs_brute_force),
        cmocka_unit_test(test_top_children),
        cmocka_unit_test(test_cache_bound),
        cmocka_unit_test(test_cache_lru),
        cmocka_unit_test(test_drafter_context_and_memory),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
