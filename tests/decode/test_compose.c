/* decode/compose.h: every rollback discipline builds an lm for either role
 * over a dense and a hybrid model (and the lm it builds rolls back), every
 * drafter kind builds where its model can serve it and is refused with a
 * one-line error where it cannot, and values outside the enums are refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/compose.h"
#include "model/model.h"
#include "support/fixture_load.h"

static const char *DENSE = "models/fixture-target.gguf", *DRAFT = "models/fixture-draft.gguf",
                  *HEAD = "models/fixture-eagle3.gguf", *HYBRID = "models/fixture-q35-target.gguf";

/* Builds the lm over an empty c, forwards 6 tokens, rolls back to 3: the length follows. */
static void check_lm(sd_context *c, const sd_model *m, sd_rollback d, sd_lm_role role) {
    sd_err err = {0};
    sd_model_lm l;
    assert_int_equal(sd_context_truncate(c, 0), SD_OK);
    assert_int_equal(sd_compose_lm(&l, c, m, d, d == SD_ROLLBACK_WINDOW ? 4 : 9, role, &err), SD_OK);
    assert_int_equal(l.hybrid != NULL, sd_model_is_recurrent(m));
    const int32_t toks[6] = {1, 2, 3, 4, 5, 6};
    float *logits = malloc((size_t)m->hp.n_vocab * sizeof *logits);
    assert_non_null(logits);
    assert_int_equal(sd_lm_forward_tail(&l.lm, SD_LM_PREFILL, toks, 6, 1, logits, &err), SD_OK);
    assert_int_equal(l.lm.len(l.lm.self), 6);
    assert_int_equal(l.lm.truncate(l.lm.self, 3, &err), SD_OK);
    assert_int_equal(l.lm.len(l.lm.self), 3);
    free(logits);
    sd_model_lm_free(&l);
    assert_null(l.hybrid);
}

static void test_lm_every_discipline_and_role(void **state) {
    (void)state;
    const char *paths[2] = {DENSE, HYBRID};
    for (int i = 0; i < 2; i++) {
        sd_model *m = load(paths[i]);
        sd_context *c = NULL;
        sd_err err = {0};
        assert_int_equal(sd_context_init(m, 64, 16, 1, &c, &err), SD_OK);
        for (int d = 0; d < SD_ROLLBACK_N; d++)
            for (int r = 0; r < SD_LM_ROLE_N; r++) check_lm(c, m, (sd_rollback)d, (sd_lm_role)r);
        sd_model_lm l;
        assert_int_equal(sd_compose_lm(&l, c, m, SD_ROLLBACK_N, 9, SD_LM_TARGET, &err), SD_ERR_ARG);
        assert_non_null(strstr(err.msg, "discipline"));
        assert_int_equal(sd_compose_lm(&l, c, m, SD_ROLLBACK_REPLAY, 9, SD_LM_ROLE_N, &err), SD_ERR_ARG);
        assert_non_null(strstr(err.msg, "role"));
        if (sd_model_is_recurrent(m)) { /* a window of one token is no window */
            assert_int_equal(sd_compose_lm(&l, c, m, SD_ROLLBACK_WINDOW, 1, SD_LM_TARGET, &err), SD_ERR_ARG);
            /* switching discipline keeps the lm usable in place */
            assert_int_equal(sd_compose_lm(&l, c, m, SD_ROLLBACK_REPLAY, 9, SD_LM_TARGET, &err), SD_OK);
            assert_int_equal(sd_compose_lm_rollback(&l, SD_ROLLBACK_WINDOW, 4, &err), SD_OK);
            assert_non_null(l.lm.max_batch); /* the window lm's own */
            assert_int_equal(sd_compose_lm_rollback(&l, SD_ROLLBACK_CHECKPOINT, 9, &err), SD_OK);
            assert_null(l.lm.max_batch);
            sd_model_lm_free(&l);
        }
        sd_context_free(c);
        sd_model_free(m);
    }
}

/* Kind k builds with in (then is freed), or fails with code and a message holding msg. */
static void expect_drafter(sd_drafter_kind k, const sd_drafter_inputs *in, sd_status code, const char *msg) {
    sd_drafter d;
    sd_err err = {0};
    sd_status st = sd_compose_drafter(&d, k, in, &err);
    if (st != code) fail_msg("kind %d: status %d, want %d (%s)", (int)k, (int)st, (int)code, err.msg);
    if (code == SD_OK) assert_non_null(d.propose);
    else assert_null(d.self);
    if (msg && !strstr(err.msg, msg)) fail_msg("kind %d: message '%s' lacks '%s'", (int)k, err.msg, msg);
    sd_drafter_free(&d);
}

static void test_drafter_kinds_dense(void **state) {
    (void)state;
    sd_model *t = load(DENSE), *dm = load(DRAFT), *head = load(HEAD);
    sd_context *tc = NULL, *dc = NULL;
    sd_err err = {0};
    assert_int_equal(sd_context_init(t, 64, 16, 1, &tc, &err), SD_OK);
    assert_int_equal(sd_context_init(dm, 64, 16, 1, &dc, &err), SD_OK);
    sd_model_lm dl;
    assert_int_equal(sd_compose_lm(&dl, dc, dm, SD_ROLLBACK_REPLAY, 9, SD_LM_DRAFT, &err), SD_OK);
    sd_drafter_inputs in = {.target = tc, .n_threads = 1, .n_batch = 16, .ngram_min = 1, .ngram_max = 3};
    /* nothing but the target: n-gram and auto (n-gram alone) build, the rest say what they lack */
    assert_int_equal(sd_drafter_auto_costly(&in), SD_DRAFTER_NGRAM);
    expect_drafter(SD_DRAFTER_NGRAM, &in, SD_OK, NULL);
    expect_drafter(SD_DRAFTER_AUTO, &in, SD_OK, NULL);
    expect_drafter(SD_DRAFTER_MODEL, &in, SD_ERR_ARG, "needs a draft model");
    expect_drafter(SD_DRAFTER_EAGLE3, &in, SD_ERR_ARG, "needs an EAGLE-3 head");
    expect_drafter(SD_DRAFTER_MTP, &in, SD_ERR_UNSUPPORTED, "MTP block");
    expect_drafter(SD_DRAFTER_MTP_SIDECAR, &in, SD_ERR_ARG, "MTP sidecar");
    expect_drafter(SD_DRAFTER_KIND_N, &in, SD_ERR_ARG, "unknown");
    expect_drafter((sd_drafter_kind)-1, &in, SD_ERR_ARG, "unknown");
    /* with a draft model and a head */
    in.draft_lm = &dl.lm;
    assert_int_equal(sd_drafter_auto_costly(&in), SD_DRAFTER_MODEL);
    expect_drafter(SD_DRAFTER_MODEL, &in, SD_OK, NULL);
    in.eagle3 = head;
    assert_int_equal(sd_drafter_auto_costly(&in), SD_DRAFTER_EAGLE3);
    expect_drafter(SD_DRAFTER_EAGLE3, &in, SD_OK, NULL);
    expect_drafter(SD_DRAFTER_AUTO, &in, SD_OK, NULL);
    /* a head that does not fit the target: the head drafter's own refusal */
    in.eagle3 = dm;
    expect_drafter(SD_DRAFTER_EAGLE3, &in, SD_ERR_ARG, NULL);
    /* no target context: the heads and auto are refused */
    in = (sd_drafter_inputs){.n_batch = 16, .ngram_min = 1, .ngram_max = 3, .eagle3 = head};
    expect_drafter(SD_DRAFTER_EAGLE3, &in, SD_ERR_ARG, "no target context");
    expect_drafter(SD_DRAFTER_AUTO, &in, SD_ERR_ARG, "no target context");
    sd_model_lm_free(&dl);
    sd_context_free(dc);
    sd_context_free(tc);
    sd_model_free(head);
    sd_model_free(dm);
    sd_model_free(t);
}

static void test_drafter_kinds_mtp(void **state) {
    (void)state;
    sd_model *t = load(HYBRID);
    sd_context *tc = NULL;
    sd_err err = {0};
    assert_int_equal(sd_context_init(t, 64, 16, 1, &tc, &err), SD_OK);
    sd_drafter_inputs in = {.target = tc, .n_threads = 1, .n_batch = 16, .ngram_min = 1, .ngram_max = 3};
    assert_true(t->nextn.present);
    assert_int_equal(sd_drafter_auto_costly(&in), SD_DRAFTER_MTP);
    expect_drafter(SD_DRAFTER_MTP, &in, SD_OK, NULL);
    expect_drafter(SD_DRAFTER_AUTO, &in, SD_OK, NULL);
    in.mtp_sidecar = t; /* any qwen35 file with an MTP block serves as a sidecar */
    assert_int_equal(sd_drafter_auto_costly(&in), SD_DRAFTER_MTP_SIDECAR);
    expect_drafter(SD_DRAFTER_MTP_SIDECAR, &in, SD_OK, NULL);
    sd_context_free(tc);
    sd_model_free(t);
}

static void test_kind_names(void **state) {
    (void)state;
    for (int k = 0; k < SD_DRAFTER_KIND_N; k++) assert_non_null(sd_drafter_kind_name((sd_drafter_kind)k));
    assert_string_equal(sd_drafter_kind_name(SD_DRAFTER_MODEL), "draft");
    assert_null(sd_drafter_kind_name(SD_DRAFTER_KIND_N));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_lm_every_discipline_and_role),
        cmocka_unit_test(test_drafter_kinds_dense),
        cmocka_unit_test(test_drafter_kinds_mtp),
        cmocka_unit_test(test_kind_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
