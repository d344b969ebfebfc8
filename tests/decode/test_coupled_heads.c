/* Coupled drafting in the head drafters (decode/drafter_head.c, drafter.h
 * couple) on the committed fixtures: the qwen35 target's MTP block
 * (models/fixture-q35-target.gguf) and the EAGLE-3 head
 * (models/fixture-eagle3.gguf over models/fixture-target.gguf, whose own
 * token list is spread over the target's ids before the draw).
 *
 * For one context: uncoupled (greedy), the proposal is the head's argmax
 * whatever the seed; coupled at a high temperature (near-uniform draws), the
 * proposal follows the target's per-position uniform, so different seeds
 * give different tokens, each a valid target id; coupling off again gives
 * the argmax back. That the output stays plain sampling's with coupled
 * heads is tested with the decode loop (test_lossless_classes,
 * test_spec_eagle3). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "decode/drafter.h"
#include "decode/spec.h"
#include "model/model.h"

enum { N_CTX = 24, N_SEEDS = 16 };

static sd_model *load(const char *path) {
    if (access(path, R_OK) != 0) fail_msg("%s is missing: run from the repository root", path);
    sd_model *m = NULL;
    sd_err err = {0};
    if (sd_model_load(path, &m, &err) != SD_OK) fail_msg("%s: %s", path, err.msg);
    return m;
}

/* One proposal (k = 1) for ctx[0..N_CTX) from d, the target having run ctx[0..N_CTX-1). */
static int32_t propose_one(sd_drafter *d, const int32_t *ctx) {
    int32_t tok = -1;
    sd_err err = {0};
    if (d->propose(d->self, ctx, N_CTX, 1, &tok, NULL, &err) != 1) fail_msg("propose: %s", err.msg);
    return tok;
}

static void check_head(sd_drafter *d, int32_t n_vocab, const char *what) {
    int32_t ctx[N_CTX];
    for (int i = 0; i < N_CTX; i++) ctx[i] = (int32_t)((i * 37 + 11) % n_vocab);
    assert_non_null(d->couple);
    d->couple(d->self, NULL);
    const int32_t greedy = propose_one(d, ctx);
    int distinct = 0;
    int32_t seen[N_SEEDS];
    for (int s = 0; s < N_SEEDS; s++) {
        const sd_sampling smp = {.temp = 50.0f, .top_p = 1, .seed = 100 + (uint64_t)s};
        d->couple(d->self, &smp);
        int32_t t = propose_one(d, ctx);
        assert_true(t >= 0 && t < n_vocab);
        int j = 0;
        while (j < distinct && seen[j] != t) j++;
        if (j == distinct) seen[distinct++] = t;
        const sd_sampling again = smp; /* the same seed and position: the same draw */
        d->couple(d->self, &again);
        assert_int_equal(propose_one(d, ctx), t);
    }
    d->couple(d->self, NULL);
    assert_int_equal(propose_one(d, ctx), greedy);
    printf("%s: argmax %d; coupled at T 50, %d seeds: %d distinct proposals\n", what, greedy, N_SEEDS, distinct);
    assert_true(distinct >= N_SEEDS / 2);
}

static void run_target(sd_context *c, int32_t n_vocab) {
    int32_t ctx[N_CTX];
    for (int i = 0; i < N_CTX; i++) ctx[i] = (int32_t)((i * 37 + 11) % n_vocab);
    float *logits = malloc((size_t)(N_CTX - 1) * (size_t)n_vocab * sizeof *logits);
    assert_non_null(logits);
    sd_err err = {0};
    assert_int_equal(sd_forward(c, ctx, N_CTX - 1, logits, &err), SD_OK);
    free(logits);
}

static void test_mtp_coupled(void **state) {
    (void)state;
    sd_model *m = load("models/fixture-q35-target.gguf");
    sd_context *c = NULL;
    sd_err err = {0};
    assert_int_equal(sd_context_init(m, 64, 16, 1, &c, &err), SD_OK);
    sd_drafter d = {0};
    assert_int_equal(sd_drafter_mtp_init(&d, c, 1, 16, &err), SD_OK);
    run_target(c, m->hp.n_vocab);
    check_head(&d, m->hp.n_vocab, "mtp");
    sd_drafter_free(&d);
    sd_context_free(c);
    sd_model_free(m);
}

static void test_eagle3_coupled(void **state) {
    (void)state;
    sd_model *m = load("models/fixture-target.gguf"), *h = load("models/fixture-eagle3.gguf");
    sd_context *c = NULL;
    sd_err err = {0};
    assert_int_equal(sd_context_init(m, 64, 16, 1, &c, &err), SD_OK);
    sd_drafter d = {0};
    assert_int_equal(sd_drafter_eagle3_init(&d, h, c, 1, 16, &err), SD_OK);
    run_target(c, m->hp.n_vocab);
    check_head(&d, m->hp.n_vocab, "eagle3");
    sd_drafter_free(&d);
    sd_context_free(c);
    sd_model_free(h);
    sd_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_mtp_coupled),
        cmocka_unit_test(test_eagle3_coupled),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
