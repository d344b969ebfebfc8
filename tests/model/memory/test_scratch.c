/* model/memory/scratch: the batch activations as a component, and the
 * pending state of a context. The hybrid-only buffers exist exactly for
 * qwen35 shapes; sd_scratch_reset_pending ends a head resume; through a
 * context, sd_context_reset_pending and every path that calls it (a new
 * forward, a truncate that drops rows, a restore, a tree forward) leave
 * neither a head resume nor a token tree pending, and a resume left alone
 * still gives bitwise sd_forward's rows. */
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

static void test_build_shapes(void **state) {
    (void)state;
    sd_hparams dense = {.arch = SD_ARCH_QWEN3, .n_layer = 2, .n_embd = 16, .n_head = 4, .n_head_kv = 2,
                        .head_dim = 4, .n_ff = 32};
    sd_hparams hybrid = dense;
    hybrid.arch = SD_ARCH_QWEN35;
    hybrid.ssm_conv_dim = 24, hybrid.ssm_n_v_heads = 2, hybrid.ssm_state = 4;
    sd_scratch sc;
    assert_int_equal(sd_scratch_build(&sc, &dense, 4, 16, 2, NULL), SD_OK);
    assert_non_null(sc.x);
    assert_non_null(sc.att);
    assert_null(sc.qg);
    assert_null(sc.mix);
    assert_null(sc.gdn_o);
    sc.x[4 * 16 - 1] = 1.0f;                      /* [n_batch][n_embd] */
    sc.att[2 * SD_ATT_QUERIES * 16 - 1] = 1.0f;   /* [n_threads][SD_ATT_QUERIES][n_ctx] */
    assert_int_equal(sc.head_S, 0);
    sc.head_S = 3, sc.head_n = 1;
    sd_scratch_reset_pending(&sc);
    assert_int_equal(sc.head_S, 0);
    assert_int_equal(sc.head_n, 0);
    sd_scratch_free(&sc);
    assert_null(sc.x);
    assert_int_equal(sd_scratch_build(&sc, &hybrid, 4, 16, 1, NULL), SD_OK);
    assert_non_null(sc.qg);
    assert_non_null(sc.mix);
    assert_non_null(sc.conv);
    assert_non_null(sc.gdn_o);
    sc.conv[4 * 24 - 1] = 1.0f; /* [n_batch][conv_dim] */
    sd_scratch_free(&sc);
}

/* A head pass of 4 rows with 1 resumable, then `clear`; returns what
 * sd_forward_more says. */
static sd_status more_after(sd_context *c, const int32_t *tok, float *lg, void (*clear)(sd_context *, const int32_t *)) {
    sd_err err = {0};
    assert_int_equal(sd_context_truncate(c, 0), SD_OK);
    assert_int_equal(sd_forward_head(c, tok, 4, 1, lg, &err), SD_OK);
    if (clear) clear(c, tok);
    return sd_forward_more(c, lg, &err);
}

static void clear_reset(sd_context *c, const int32_t *tok) { (void)tok, sd_context_reset_pending(c); }
static void clear_forward(sd_context *c, const int32_t *tok) {
    sd_err err = {0};
    assert_int_equal(sd_forward_tail(c, tok, 1, 0, NULL, &err), SD_OK);
}
static void clear_truncate(sd_context *c, const int32_t *tok) { (void)tok, assert_int_equal(sd_context_truncate(c, 3), SD_OK); }
static void clear_tree(sd_context *c, const int32_t *tok) {
    sd_err err = {0};
    const int32_t parent[2] = {-1, 0};
    float *lg = malloc((size_t)2 * c->m->hp.n_vocab * sizeof *lg);
    assert_int_equal(sd_forward_tree(c, tok, parent, 2, lg, &err), SD_OK);
    free(lg);
}

static void test_pending_paths(void **state) {
    (void)state;
    sd_model *m = NULL;
    sd_err err = {0};
    assert_int_equal(sd_model_load("models/fixture-target.gguf", &m, &err), SD_OK);
    const int V = m->hp.n_vocab;
    int32_t tok[4];
    test_tokens(tok, 4, V, 21);
    sd_context *c = NULL;
    assert_int_equal(sd_context_init(m, 32, 8, 2, &c, &err), SD_OK);
    float *lg = malloc((size_t)4 * V * sizeof *lg), *want = malloc((size_t)4 * V * sizeof *want);
    /* left alone, the resume gives rows 1..3 bitwise as sd_forward does */
    assert_int_equal(sd_forward(c, tok, 4, want, &err), SD_OK);
    assert_int_equal(more_after(c, tok, lg, NULL), SD_OK);
    assert_memory_equal(lg, want + V, (size_t)3 * V * sizeof *lg);
    assert_int_equal(sd_forward_more(c, lg, &err), SD_ERR_ARG); /* all rows served */
    void (*clears[])(sd_context *, const int32_t *) = {clear_reset, clear_forward, clear_truncate, clear_tree};
    for (size_t i = 0; i < sizeof clears / sizeof clears[0]; i++)
        assert_int_equal(more_after(c, tok, lg, clears[i]), SD_ERR_ARG);
    /* a pending tree: reset_pending forgets it, as a truncate that drops its nodes does */
    const int32_t parent[3] = {-1, 0, 0}, keep[1] = {0};
    assert_int_equal(sd_context_truncate(c, 0), SD_OK);
    assert_int_equal(sd_forward_tree(c, tok, parent, 3, lg, &err), SD_OK);
    assert_int_equal(c->kv.tree.n, 3);
    sd_context_reset_pending(c);
    assert_int_equal(c->kv.tree.n, 0);
    assert_int_equal(c->sc.head_S, 0);
    assert_int_equal(sd_context_keep_path(c, keep, 1, &err), SD_ERR_ARG);
    assert_int_equal(sd_context_len(c), 3); /* the rows stay; only keep_path has nothing to keep */
    /* a restore that shortens the context forgets both */
    assert_int_equal(sd_context_truncate(c, 0), SD_OK);
    assert_int_equal(sd_forward_tail(c, tok, 1, 0, NULL, &err), SD_OK);
    const size_t n = sd_context_state_bytes(c);
    void *snap = malloc(n);
    assert_int_equal(sd_context_state_save(c, snap, n, &err), SD_OK);
    assert_int_equal(sd_forward_tree(c, tok + 1, parent, 3, lg, &err), SD_OK);
    assert_int_equal(sd_context_state_restore(c, snap, n, &err), SD_OK);
    assert_int_equal(sd_context_keep_path(c, keep, 1, &err), SD_ERR_ARG);
    free(snap);
    free(lg);
    free(want);
    sd_context_free(c);
    sd_model_free(m);
}

int main(int argc, char **argv) {
    (void)argc;
    test_passive_omp(argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_shapes),
        cmocka_unit_test(test_pending_paths),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
