/* The bench's oracle drafter (bench/src/oracle/oracle_drafter.h): proposes the
 * greedy reference past a0, corrupts each token with probability 1 − α,
 * reproducibly per (seed, position). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "oracle/oracle_drafter.h"

enum { N_PROMPT = 5, N_GREEDY = 64, N_VOCAB = 50 };

static void make_ref(int32_t *ctx, int32_t *greedy) {
    for (int i = 0; i < N_PROMPT; i++) ctx[i] = (i * 7) % N_VOCAB;
    for (int i = 0; i < N_GREEDY; i++) greedy[i] = (i * 13 + 3) % N_VOCAB;
    for (int i = 0; i < N_GREEDY; i++) ctx[N_PROMPT + i] = greedy[i];
}

static void test_alpha_one_is_the_reference(void **state) {
    (void)state;
    int32_t ctx[N_PROMPT + N_GREEDY], greedy[N_GREEDY], out[8];
    make_ref(ctx, greedy);
    sd_drafter d;
    assert_int_equal(sd_drafter_oracle_init(&d, greedy, N_GREEDY, N_PROMPT, 1.0, N_VOCAB, 7, NULL), SD_OK);
    /* committed = prompt + a0 (greedy[0]): propose greedy[1..] */
    for (int g = 1; g < N_GREEDY; g += 5) {
        int m = d.propose(d.self, ctx, N_PROMPT + g, 8, out, NULL, NULL);
        int want = N_GREEDY - g < 8 ? N_GREEDY - g : 8;
        assert_int_equal(m, want);
        for (int i = 0; i < m; i++) assert_int_equal(out[i], greedy[g + i]);
    }
    assert_int_equal(d.propose(d.self, ctx, N_PROMPT + N_GREEDY, 8, out, NULL, NULL), 0);
    d.free(d.self);
}

static void test_alpha_zero_never_right(void **state) {
    (void)state;
    int32_t ctx[N_PROMPT + N_GREEDY], greedy[N_GREEDY], out[8];
    make_ref(ctx, greedy);
    sd_drafter d;
    assert_int_equal(sd_drafter_oracle_init(&d, greedy, N_GREEDY, N_PROMPT, 0.0, N_VOCAB, 7, NULL), SD_OK);
    for (int g = 1; g + 8 <= N_GREEDY; g++) {
        assert_int_equal(d.propose(d.self, ctx, N_PROMPT + g, 8, out, NULL, NULL), 8);
        for (int i = 0; i < 8; i++) {
            assert_int_not_equal(out[i], greedy[g + i]);
            assert_true(out[i] >= 0 && out[i] < N_VOCAB);
        }
    }
    d.free(d.self);
}

static void test_rate_and_seed(void **state) {
    (void)state;
    int32_t ctx[N_PROMPT + N_GREEDY], greedy[N_GREEDY], a[8], b[8];
    make_ref(ctx, greedy);
    long right = 0, total = 0;
    for (uint64_t seed = 1; seed <= 500; seed++) {
        sd_drafter d1, d2;
        assert_int_equal(sd_drafter_oracle_init(&d1, greedy, N_GREEDY, N_PROMPT, 0.7, N_VOCAB, seed, NULL), SD_OK);
        assert_int_equal(sd_drafter_oracle_init(&d2, greedy, N_GREEDY, N_PROMPT, 0.7, N_VOCAB, seed, NULL), SD_OK);
        for (int g = 1; g + 8 <= N_GREEDY; g += 8) {
            assert_int_equal(d1.propose(d1.self, ctx, N_PROMPT + g, 8, a, NULL, NULL), 8);
            assert_int_equal(d2.propose(d2.self, ctx, N_PROMPT + g, 8, b, NULL, NULL), 8);
            for (int i = 0; i < 8; i++) {
                assert_int_equal(a[i], b[i]); /* same seed, same pattern */
                right += a[i] == greedy[g + i], total++;
            }
        }
        d1.free(d1.self);
        d2.free(d2.self);
    }
    double rate = (double)right / (double)total; /* 28000 draws: sd ≈ 0.0027 */
    assert_true(fabs(rate - 0.7) < 0.02);
}

/* The draft at a reference position does not depend on the rounds: one
 * 8-token proposal equals the same positions proposed 3 + 5, or again later. */
static void test_per_position(void **state) {
    (void)state;
    int32_t ctx[N_PROMPT + N_GREEDY], greedy[N_GREEDY], a[8], b[8];
    make_ref(ctx, greedy);
    sd_drafter d;
    assert_int_equal(sd_drafter_oracle_init(&d, greedy, N_GREEDY, N_PROMPT, 0.5, N_VOCAB, 3, NULL), SD_OK);
    int diff_seed = 0;
    for (int g = 1; g + 8 <= N_GREEDY; g++) {
        assert_int_equal(d.propose(d.self, ctx, N_PROMPT + g, 8, a, NULL, NULL), 8);
        assert_int_equal(d.propose(d.self, ctx, N_PROMPT + g, 3, b, NULL, NULL), 3);
        assert_int_equal(d.propose(d.self, ctx, N_PROMPT + g + 3, 5, b + 3, NULL, NULL), 5);
        for (int i = 0; i < 8; i++) assert_int_equal(a[i], b[i]);
    }
    /* and a different seed gives a different pattern somewhere */
    sd_drafter e;
    assert_int_equal(sd_drafter_oracle_init(&e, greedy, N_GREEDY, N_PROMPT, 0.5, N_VOCAB, 4, NULL), SD_OK);
    for (int g = 1; g + 8 <= N_GREEDY; g += 8) {
        d.propose(d.self, ctx, N_PROMPT + g, 8, a, NULL, NULL);
        e.propose(e.self, ctx, N_PROMPT + g, 8, b, NULL, NULL);
        for (int i = 0; i < 8; i++) diff_seed += a[i] != b[i];
    }
    assert_true(diff_seed > 0);
    d.free(d.self);
    e.free(e.self);
}

/* The draws are those of lib.mjs oracleDraft: splitmix64 seed 1, positions
 * 0..9 at α = 0.7 over N_VOCAB = 4096 with ref[j] = j keep 0, 2, 4..9 and
 * replace 1 and 3 (values printed by lib.mjs; a cross-language check). */
static void test_matches_js_side(void **state) {
    (void)state;
    int32_t greedy[10], ctx[N_PROMPT + 10], out[10];
    for (int i = 0; i < 10; i++) greedy[i] = i, ctx[N_PROMPT + i] = i;
    for (int i = 0; i < N_PROMPT; i++) ctx[i] = 0;
    sd_drafter d;
    assert_int_equal(sd_drafter_oracle_init(&d, greedy, 10, N_PROMPT, 0.7, 4096, 1, NULL), SD_OK);
    assert_int_equal(d.propose(d.self, ctx, N_PROMPT, 10, out, NULL, NULL), 10);
    const int32_t want[10] = {0, 2137, 2, 2212, 4, 5, 6, 7, 8, 9};
    for (int i = 0; i < 10; i++) assert_int_equal(out[i], want[i]);
    d.free(d.self);
}

static void test_bad_args(void **state) {
    (void)state;
    int32_t greedy[4] = {1, 2, 3, 4};
    sd_drafter d;
    sd_err err = {0};
    assert_int_equal(sd_drafter_oracle_init(&d, greedy, 4, 1, 1.5, 10, 1, &err), SD_ERR_ARG);
    assert_int_equal(sd_drafter_oracle_init(&d, greedy, 4, 1, 0.5, 1, 1, &err), SD_ERR_ARG);
    assert_int_equal(sd_drafter_oracle_init(&d, NULL, 4, 1, 0.5, 10, 1, &err), SD_ERR_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alpha_one_is_the_reference),
        cmocka_unit_test(test_alpha_zero_never_right),
        cmocka_unit_test(test_rate_and_seed),
        cmocka_unit_test(test_per_position),
        cmocka_unit_test(test_matches_js_side),
        cmocka_unit_test(test_bad_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
