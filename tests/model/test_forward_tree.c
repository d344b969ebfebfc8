/* model/forward_tree: batch invariance extends to token trees (model.h
 * sd_forward_tree). Each node's logits must be BITWISE the logits its root
 * path gives as a plain chain after the same committed prefix, for several
 * tree shapes, thread counts and prefixes, on the committed fixtures and on
 * tiny llama / qwen2 / qwen3 models; sd_context_keep_path must leave the KV
 * cache a chain would (the next forward's logits bitwise the chain's). A
 * mutant mask that lets a node see the nodes before it (siblings included)
 * must fail the same checks, so they can tell a wrong mask. A recurrent
 * (qwen35) model refuses a tree. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/context.h"
#include "model_test_util.h"
#include "numerics/quant.h"

#define N_PRE 5
#define MAX_NODES 16

typedef struct shape {
    const char *name;
    int n;
    int32_t parent[MAX_NODES];
} shape;

static const shape SHAPES[] = {
    {"chain", 5, {-1, 0, 1, 2, 3}},
    {"root and 3 children", 4, {-1, 0, 0, 0}},
    {"chain with siblings at levels 1-2", 8, {-1, 0, 0, 1, 1, 3, 5, 6}},
    {"binary depth 3", 15, {-1, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6}},
    {"branches interleaved", 9, {-1, 0, 1, 0, 2, 3, 1, 5, 4}},
    {"two roots", 6, {-1, -1, 0, 1, 2, 2}},
};
enum { N_SHAPES = sizeof SHAPES / sizeof SHAPES[0] };

/* The chain logits of node s: committed prefix, then its root path as one forward. */
static void chain_row(const sd_model *m, const int32_t *pre, const int32_t *tok, const int32_t *parent, int s,
                      float *row) {
    const int V = m->hp.n_vocab;
    int32_t path[MAX_NODES], n = 0, rev[MAX_NODES];
    for (int a = s; a >= 0; a = parent[a]) rev[n++] = tok[a];
    for (int i = 0; i < n; i++) path[i] = rev[n - 1 - i];
    sd_context *c = NULL;
    sd_err err = {0};
    assert_int_equal(sd_context_init(m, 64, 32, 1, &c, &err), SD_OK);
    assert_int_equal(sd_forward_tail(c, pre, N_PRE, 0, NULL, &err), SD_OK);
    float *lg = malloc((size_t)n * V * sizeof *lg);
    assert_int_equal(sd_forward(c, path, n, lg, &err), SD_OK);
    memcpy(row, lg + (size_t)(n - 1) * V, (size_t)V * sizeof *row);
    free(lg);
    sd_context_free(c);
}

/* Runs the tree after the prefix; returns how many nodes' rows differ from their chains. */
static int tree_mismatches(const sd_model *m, const int32_t *pre, const shape *sh, const int32_t *tok,
                           int n_threads, bool mutant) {
    const int V = m->hp.n_vocab;
    sd_context *c = NULL;
    sd_err err = {0};
    assert_int_equal(sd_context_init(m, 64, 32, n_threads, &c, &err), SD_OK);
    assert_int_equal(sd_forward_tail(c, pre, N_PRE, 0, NULL, &err), SD_OK);
    float *lg = malloc((size_t)sh->n * V * sizeof *lg), *want = malloc((size_t)V * sizeof *want);
    sd_mutant_tree_chain_mask = mutant; /* this test's build of kv_cache.c has the mutant (CMakeLists.txt) */
    assert_int_equal(sd_forward_tree(c, tok, sh->parent, sh->n, lg, &err), SD_OK);
    sd_mutant_tree_chain_mask = false;
    assert_int_equal(sd_context_len(c), N_PRE + sh->n);
    int bad = 0;
    for (int s = 0; s < sh->n; s++) {
        chain_row(m, pre, tok, sh->parent, s, want);
        bad += memcmp(lg + (size_t)s * V, want, (size_t)V * sizeof *want) != 0;
    }
    free(lg);
    free(want);
    sd_context_free(c);
    return bad;
}

/* Keeps the root path of the deepest node, then steps once more: the KV
 * cache must be the chain's, so the step's logits are the chain's bitwise. */
static void check_keep_path(const sd_model *m, const int32_t *pre, const shape *sh, const int32_t *tok) {
    const int V = m->hp.n_vocab;
    int deep = 0, depth[MAX_NODES] = {0};
    for (int s = 0; s < sh->n; s++) {
        depth[s] = sh->parent[s] < 0 ? 0 : depth[sh->parent[s]] + 1;
        if (depth[s] > depth[deep]) deep = s;
    }
    int32_t path[MAX_NODES], n = depth[deep] + 1, chain[MAX_NODES + 1];
    for (int a = deep; a >= 0; a = sh->parent[a]) path[depth[a]] = a;
    for (int d = 0; d < n; d++) chain[d] = tok[path[d]];
    chain[n] = (tok[0] + 7) % V; /* the next step's token */
    sd_context *c = NULL;
    sd_err err = {0};
    float *lg = malloc((size_t)(MAX_NODES + 1) * V * sizeof *lg), *want = malloc((size_t)(n + 1) * V * sizeof *want);
    /* the hidden-state hook of a draft head (a layer input and the final normed hidden) moves with the rows */
    const int32_t ids[2] = {1, m->hp.n_layer};
    const size_t hid_row = 2 * (size_t)m->hp.n_embd * sizeof(float);
    sd_context *cc = NULL;
    assert_int_equal(sd_context_init(m, 64, 32, 2, &cc, &err), SD_OK);
    assert_int_equal(sd_context_request_hidden(cc, ids, 2, &err), SD_OK);
    assert_int_equal(sd_forward_tail(cc, pre, N_PRE, 0, NULL, &err), SD_OK);
    assert_int_equal(sd_forward(cc, chain, n + 1, want, &err), SD_OK);

    assert_int_equal(sd_context_init(m, 64, 32, 2, &c, &err), SD_OK);
    assert_int_equal(sd_context_request_hidden(c, ids, 2, &err), SD_OK);
    assert_int_equal(sd_forward_tail(c, pre, N_PRE, 0, NULL, &err), SD_OK);
    assert_int_equal(sd_forward_tree(c, tok, sh->parent, sh->n, lg, &err), SD_OK);
    if (n > 1) { /* paths that are not root paths: the deep node alone, or right after the root */
        int32_t broken[2] = {path[0], path[n - 1]};
        assert_int_equal(sd_context_keep_path(c, broken + 1, 1, &err), SD_ERR_ARG);
        if (n > 2) assert_int_equal(sd_context_keep_path(c, broken, 2, &err), SD_ERR_ARG);
    }
    assert_int_equal(sd_context_keep_path(c, path, n, &err), SD_OK);
    assert_int_equal(sd_context_len(c), N_PRE + n);
    assert_int_equal(sd_context_keep_path(c, path, n, &err), SD_ERR_ARG); /* nothing pending any more */
    assert_int_equal(sd_forward(c, chain + n, 1, lg, &err), SD_OK);
    if (memcmp(lg, want + (size_t)n * V, (size_t)V * sizeof *lg) != 0)
        fail_msg("%s: the step after keep_path differs from the chain's", sh->name);
    for (int d = 0; d <= n; d++)
        if (memcmp(sd_context_hidden(c, N_PRE + d), sd_context_hidden(cc, N_PRE + d), hid_row) != 0)
            fail_msg("%s: hidden row of position %d differs from the chain's after keep_path", sh->name, N_PRE + d);
    sd_context_free(cc);
    /* keeping nothing rolls the tree back entirely */
    assert_int_equal(sd_forward_tree(c, tok, sh->parent, sh->n, lg, &err), SD_OK);
    assert_int_equal(sd_context_keep_path(c, NULL, 0, &err), SD_OK);
    assert_int_equal(sd_context_len(c), N_PRE + n + 1);
    sd_context_free(c);
    free(lg);
    free(want);
}

static void check_model(const sd_model *m, uint32_t seed) {
    const int V = m->hp.n_vocab;
    int32_t pre[N_PRE], tok[MAX_NODES];
    test_tokens(pre, N_PRE, V, seed);
    int mutant_bad = 0, mutant_nodes = 0;
    for (int i = 0; i < N_SHAPES; i++) {
        const shape *sh = &SHAPES[i];
        test_tokens(tok, sh->n, V, seed * 31 + (uint32_t)i);
        tok[1 % sh->n] = tok[0]; /* a repeated token: the mask, not the token, must separate nodes */
        for (int th = 1; th <= 2; th++) {
            int bad = tree_mismatches(m, pre, sh, tok, th, false);
            if (bad) fail_msg("tree '%s', %d threads: %d of %d nodes differ bitwise from their chains", sh->name, th,
                              bad, sh->n);
        }
        check_keep_path(m, pre, sh, tok);
        /* the mutant differs from the true mask unless the tree is one chain from node 0 */
        bool is_chain = true;
        for (int s = 0; s < sh->n; s++) is_chain &= sh->parent[s] == s - 1;
        int bad = tree_mismatches(m, pre, sh, tok, 2, true);
        if (is_chain) assert_int_equal(bad, 0);
        mutant_bad += bad, mutant_nodes += is_chain ? 0 : 1;
        if (!is_chain && bad == 0) fail_msg("tree '%s': the chain-mask mutant passed the bitwise check", sh->name);
    }
    printf("  %d shapes bitwise equal to their chains; the mutant mask failed %d node rows\n", N_SHAPES, mutant_bad);
}

static void test_tiny(void **state) {
    const char *arch = *state;
    char path[256];
    sd_model *m = tiny_load_small(arch, path, sizeof path);
    assert_non_null(m);
    check_model(m, 7);
    sd_model_free(m);
    remove(path);
}

static void test_fixtures(void **state) {
    (void)state;
    const char *files[] = {"models/fixture-target.gguf", "models/fixture-draft.gguf"};
    for (int i = 0; i < 2; i++) {
        sd_model *m = NULL;
        sd_err err = {0};
        if (sd_model_load(files[i], &m, &err) != SD_OK) fail_msg("%s", err.msg);
        printf("token trees on %s\n", files[i]);
        check_model(m, 40 + (uint32_t)i);
        sd_model_free(m);
    }
}

/* Bad trees are refused with the state unchanged; a recurrent model refuses any. */
static void test_refusals(void **state) {
    (void)state;
    sd_model *m = NULL;
    sd_err err = {0};
    assert_int_equal(sd_model_load("models/fixture-target.gguf", &m, &err), SD_OK);
    sd_context *c = NULL;
    assert_int_equal(sd_context_init(m, 64, 8, 1, &c, &err), SD_OK);
    int32_t tok[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, bad_parent[3] = {-1, 1, 0}, p9[10] = {-1};
    for (int i = 1; i < 10; i++) p9[i] = i - 1;
    float *lg = malloc((size_t)10 * m->hp.n_vocab * sizeof *lg);
    assert_int_equal(sd_forward_tree(c, tok, bad_parent, 3, lg, &err), SD_ERR_ARG); /* parent not before */
    assert_non_null(strstr(err.msg, "parent"));
    assert_int_equal(sd_forward_tree(c, tok, p9, 9, lg, &err), SD_ERR_ARG); /* more than n_batch */
    assert_int_equal(sd_forward_tree(c, tok, p9, 0, lg, &err), SD_ERR_ARG);
    assert_int_equal(sd_context_keep_path(c, p9, 1, &err), SD_ERR_ARG); /* no tree */
    assert_int_equal(sd_context_len(c), 0);
    assert_int_equal(sd_forward_tree(c, tok, p9, 3, lg, &err), SD_OK);
    assert_int_equal(sd_context_truncate(c, 1), SD_OK);
    assert_int_equal(sd_context_keep_path(c, p9, 1, &err), SD_ERR_ARG); /* a truncate came between */
    free(lg);
    sd_context_free(c);
    sd_model_free(m);

    assert_int_equal(sd_model_load("models/fixture-q35-target.gguf", &m, &err), SD_OK);
    assert_int_equal(sd_context_init(m, 64, 8, 1, &c, &err), SD_OK);
    lg = malloc((size_t)2 * m->hp.n_vocab * sizeof *lg);
    assert_int_equal(sd_forward_tree(c, tok, p9, 2, lg, &err), SD_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "recurrent state per branch"));
    assert_int_equal(sd_context_len(c), 0);
    free(lg);
    sd_context_free(c);
    sd_model_free(m);
}

int main(int argc, char **argv) {
    (void)argc;
    test_passive_omp(argv);
    static const char *archs[] = {"llama", "qwen2", "qwen3"};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_tiny, (void *)archs[0]),
        cmocka_unit_test_prestate(test_tiny, (void *)archs[1]),
        cmocka_unit_test_prestate(test_tiny, (void *)archs[2]),
        cmocka_unit_test(test_fixtures),
        cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
