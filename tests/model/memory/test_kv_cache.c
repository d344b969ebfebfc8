/* model/memory/kv_cache: the KV cache as a component. Its length and
 * truncate refuse any sequence but 0; a truncate clamps, drops rows and the
 * pending tree; keep_path moves exactly the rows of the kept root path; a
 * copy takes rows and length. Through a context: a truncate then a forward
 * gives bitwise the logits of a fresh context fed the same tokens. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "model/context.h"
#include "model/model_test_util.h"

/* A small dense shape: 2 attention layers, 2 KV heads of 4 dims. */
static sd_hparams small_hp(void) {
    sd_hparams hp = {.arch = SD_ARCH_QWEN3, .n_layer = 2, .n_head = 4, .n_head_kv = 2, .head_dim = 4};
    return hp;
}

/* Writes a value naming (slot, head, position, dim) into every K and V element of slots 0..n-1. */
static void fill_rows(sd_kv_cache *kv, int32_t n) {
    for (int l = 0; l < kv->n_layers; l++)
        for (int h = 0; h < kv->n_head_kv; h++)
            for (int32_t p = 0; p < n; p++)
                for (int d = 0; d < kv->head_dim; d++) {
                    sd_kv_cache_k(kv, l, h)[p * kv->head_dim + d] = (uint16_t)(l * 1000 + h * 100 + p * 10 + d);
                    sd_kv_cache_v(kv, l, h)[p * kv->head_dim + d] = (uint16_t)(30000 + l * 1000 + h * 100 + p * 10 + d);
                }
}

/* Whether slot `slot` of every head holds what fill_rows wrote for position p. */
static bool row_is(const sd_kv_cache *kv, int32_t slot, int32_t p) {
    for (int l = 0; l < kv->n_layers; l++)
        for (int h = 0; h < kv->n_head_kv; h++)
            for (int d = 0; d < kv->head_dim; d++)
                if (sd_kv_cache_k(kv, l, h)[slot * kv->head_dim + d] != (uint16_t)(l * 1000 + h * 100 + p * 10 + d) ||
                    sd_kv_cache_v(kv, l, h)[slot * kv->head_dim + d] != (uint16_t)(30000 + l * 1000 + h * 100 + p * 10 + d))
                    return false;
    return true;
}

static void test_len_truncate_seq(void **state) {
    (void)state;
    const sd_hparams hp = small_hp();
    sd_kv_cache kv;
    assert_int_equal(sd_kv_cache_build(&kv, &hp, 16, NULL), SD_OK);
    assert_int_equal(kv.n_layers, 2);
    assert_int_equal(kv.kv_dim, 8);
    assert_int_equal(kv.pos_shift, 0);
    assert_int_equal(sd_kv_cache_len(&kv, 0), 0);
    kv.len = 10;
    assert_int_equal(sd_kv_cache_len(&kv, 1), -1); /* only sequence 0 exists */
    assert_int_equal(sd_kv_cache_len(&kv, -1), -1);
    assert_int_equal(sd_kv_cache_truncate(&kv, 1, 3), SD_ERR_ARG);
    assert_int_equal(sd_kv_cache_len(&kv, 0), 10);
    /* a truncate that drops nothing keeps a pending tree; one that drops rows forgets it */
    sd_kv_tree_pending(&kv, 7, 3);
    assert_int_equal(sd_kv_cache_truncate(&kv, 0, 12), SD_OK);
    assert_int_equal(sd_kv_cache_len(&kv, 0), 10);
    assert_int_equal(kv.tree.n, 3);
    assert_int_equal(sd_kv_cache_truncate(&kv, 0, 9), SD_OK);
    assert_int_equal(sd_kv_cache_len(&kv, 0), 9);
    assert_int_equal(kv.tree.n, 0);
    assert_int_equal(sd_kv_cache_truncate(&kv, 0, -5), SD_OK); /* clamped to 0 */
    assert_int_equal(sd_kv_cache_len(&kv, 0), 0);
    sd_kv_cache_free(&kv);
    sd_kv_cache_free(&kv); /* idempotent */
}

/* A tree of 6 nodes after 2 committed rows; keep the path 0 -> 2 -> 5. */
static void test_keep_path(void **state) {
    (void)state;
    const sd_hparams hp = small_hp();
    sd_kv_cache kv, cp;
    assert_int_equal(sd_kv_cache_build(&kv, &hp, 16, NULL), SD_OK);
    assert_int_equal(sd_kv_cache_build(&cp, &hp, 16, NULL), SD_OK);
    const int32_t parent[6] = {-1, 0, 0, 1, 2, 2}, base = 2;
    fill_rows(&kv, base + 6);
    kv.len = base + 6;
    sd_kv_tree_plan(&kv, parent, 6);
    const int32_t want_depth[6] = {0, 1, 1, 2, 2, 2};
    for (int s = 0; s < 6; s++) assert_int_equal(kv.tree.depth[s], want_depth[s]);
    assert_int_equal(kv.tree.keys[5][0], 0); /* node 5's keys: its root path, root first */
    assert_int_equal(kv.tree.keys[5][1], 2);
    assert_int_equal(kv.tree.keys[5][2], 5);
    sd_err err = {0};
    const int32_t path[3] = {0, 2, 5}, bad[2] = {0, 3};
    assert_int_equal(sd_kv_tree_check_path(&kv, path, 3, &err), SD_ERR_ARG); /* nothing pending yet */
    sd_kv_tree_pending(&kv, base, 6);
    assert_int_equal(sd_kv_tree_check_path(&kv, bad, 2, &err), SD_ERR_ARG); /* 3 is not a child of 0 */
    assert_non_null(strstr(err.msg, "not on a root path"));
    assert_int_equal(sd_kv_tree_check_path(&kv, path, 7, &err), SD_ERR_ARG);
    assert_int_equal(sd_kv_tree_check_path(&kv, path, 3, &err), SD_OK);
    sd_kv_cache_keep_path(&kv, path, 3);
    assert_int_equal(sd_kv_cache_len(&kv, 0), base + 3);
    assert_int_equal(kv.tree.n, 0);
    assert_true(row_is(&kv, 0, 0) && row_is(&kv, 1, 1)); /* committed rows untouched */
    for (int d = 0; d < 3; d++) assert_true(row_is(&kv, base + d, base + path[d]));
    assert_int_equal(sd_kv_tree_check_path(&kv, path, 3, &err), SD_ERR_ARG); /* kept: nothing pending */
    /* a copy takes rows 0..len-1 and the length, and nothing pending */
    sd_kv_tree_pending(&cp, 0, 1);
    assert_int_equal(sd_kv_cache_copy(&cp, &kv, 1), SD_ERR_ARG);
    assert_int_equal(sd_kv_cache_copy(&cp, &kv, 0), SD_OK);
    assert_int_equal(sd_kv_cache_len(&cp, 0), base + 3);
    assert_int_equal(cp.tree.n, 0);
    for (int d = 0; d < 3; d++) assert_true(row_is(&cp, base + d, base + path[d]));
    sd_kv_cache_free(&kv);
    sd_kv_cache_free(&cp);
}

/* Through a context: forward 8 tokens, truncate to 3, forward 5 other
 * tokens; the logits are bitwise those of a fresh context fed the 3 kept
 * tokens and the 5 new ones (the dropped rows leave no trace). */
static void test_truncate_then_forward(void **state) {
    (void)state;
    sd_model *m = NULL;
    sd_err err = {0};
    assert_int_equal(sd_model_load("models/fixture-target.gguf", &m, &err), SD_OK);
    const int V = m->hp.n_vocab;
    int32_t a[8], b[8];
    test_tokens(a, 8, V, 3);
    test_tokens(b, 8, V, 4);
    memcpy(b, a, 3 * sizeof *b);
    float *lg = malloc((size_t)8 * V * sizeof *lg), *want = malloc((size_t)8 * V * sizeof *want);
    sd_context *c = NULL, *f = NULL;
    assert_int_equal(sd_context_init(m, 32, 8, 2, &c, &err), SD_OK);
    assert_int_equal(sd_context_init(m, 32, 8, 2, &f, &err), SD_OK);
    assert_int_equal(sd_forward(f, b, 8, want, &err), SD_OK);
    assert_int_equal(sd_forward(c, a, 8, lg, &err), SD_OK);
    assert_int_equal(sd_context_truncate(c, 3), SD_OK);
    assert_int_equal(sd_context_len(c), 3);
    assert_int_equal(sd_forward(c, b + 3, 5, lg, &err), SD_OK);
    assert_memory_equal(lg, want + (size_t)3 * V, (size_t)5 * V * sizeof *lg);
    assert_memory_not_equal(b + 3, a + 3, 5 * sizeof *a); /* the test feeds different tokens */
    sd_context_free(c);
    sd_context_free(f);
    free(lg);
    free(want);
    sd_model_free(m);
}

int main(int argc, char **argv) {
    (void)argc;
    test_passive_omp(argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_len_truncate_seq),
        cmocka_unit_test(test_keep_path),
        cmocka_unit_test(test_truncate_then_forward),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
