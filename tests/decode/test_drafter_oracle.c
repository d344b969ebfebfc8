/* decode/drafter_oracle: proposes the greedy reference past a0, corrupts each
 * token with probability 1 − α, reproducibly per seed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "decode/drafter_oracle.h"

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
    sd_drafter d1, d2;
    assert_int_equal(sd_drafter_oracle_init(&d1, greedy, N_GREEDY, N_PROMPT, 0.7, N_VOCAB, 42, NULL), SD_OK);
    assert_int_equal(sd_drafter_oracle_init(&d2, greedy, N_GREEDY, N_PROMPT, 0.7, N_VOCAB, 42, NULL), SD_OK);
    long right = 0, total = 0;
    for (int r = 0; r < 4000; r++) {
        int g = 1 + r % (N_GREEDY - 8);
        assert_int_equal(d1.propose(d1.self, ctx, N_PROMPT + g, 8, a, NULL, NULL), 8);
        assert_int_equal(d2.propose(d2.self, ctx, N_PROMPT + g, 8, b, NULL, NULL), 8);
        for (int i = 0; i < 8; i++) {
            assert_int_equal(a[i], b[i]); /* same seed, same pattern */
            right += a[i] == greedy[g + i], total++;
        }
    }
    double rate = (double)right / (double)total; /* 32000 draws: sd ≈ 0.0026 */
    assert_true(fabs(rate - 0.7) < 0.02);
    /* reset restarts the pattern */
    d1.reset(d1.self);
    d2.reset(d2.self);
    d1.propose(d1.self, ctx, N_PROMPT + 1, 8, a, NULL, NULL);
    d2.propose(d2.self, ctx, N_PROMPT + 1, 8, b, NULL, NULL);
    for (int i = 0; i < 8; i++) assert_int_equal(a[i], b[i]);
    d1.free(d1.self);
    d2.free(d2.self);
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
        cmocka_unit_test(test_bad_args),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
