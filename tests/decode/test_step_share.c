/* decode/step_share: what a batched request's gate learns a step costs
 * (docs/BATCHING.md "Speculation under load"). Alone it is the step's time;
 * when rows are free a verify window costs a plain step's share; when rows
 * cost, each row a request adds is charged in full, so the c_v the gate
 * derives grows with the load and its predicted speedup falls. Also the
 * interpolation of unmeasured row counts. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "decode/gate.h"
#include "decode/step_share.h"

#define MAX_ROWS 64

/* A step of r rows costs a + b r (a: streaming the weights; b: per row). */
static void fill(double *t, double a, double b) {
    memset(t, 0, (MAX_ROWS + 1) * sizeof *t);
    for (int r = 1; r <= MAX_ROWS; r++) sd_step_learn(t, MAX_ROWS, r, a + b * r);
}

static void test_alone_is_the_step(void **state) {
    (void)state;
    double t[MAX_ROWS + 1];
    fill(t, 0.1, 0.002);
    for (int S = 1; S <= 9; S++)
        assert_true(fabs(sd_step_share(t, MAX_ROWS, S, S, 1, -1) - (0.1 + 0.002 * S)) < 1e-12);
}

static void test_free_rows_are_shared(void **state) {
    (void)state;
    double t[MAX_ROWS + 1];
    fill(t, 0.2, 0); /* flat: bandwidth-bound */
    for (int n = 1; n <= 8; n *= 2)
        for (int S = 1; S <= 9; S++) /* n - 1 others with a row each */
            assert_true(fabs(sd_step_share(t, MAX_ROWS, n - 1 + S, S, n, -1) - 0.2 / n) < 1e-12);
}

/* c_v(K + 1) as the gate learns it from the shares, with n - 1 other
 * requests of one row each. */
static double gate_cv(const double *t, int n, int K, double *speedup) {
    sd_spec_params p = sd_spec_default_params();
    sd_gate g;
    sd_gate_init(&g, &p, false);
    sd_gate_time_forward(&g, 1, sd_step_share(t, MAX_ROWS, n, 1, n, -1));
    sd_gate_time_forward(&g, K + 1, sd_step_share(t, MAX_ROWS, n + K, K + 1, n, -1));
    for (int i = 0; i < 3; i++) sd_gate_round(&g, K, K / 2); /* some acceptance evidence, the same for all loads */
    *speedup = sd_gate_predicted_speedup(&g, K);
    return sd_gate_cv(&g, K + 1);
}

static void test_costly_rows_turn_speculation_down(void **state) {
    (void)state;
    double t[MAX_ROWS + 1], s1, s8, s32;
    fill(t, 0.1, 0.001);
    const int K = 3;
    const double cv1 = gate_cv(t, 1, K, &s1), cv8 = gate_cv(t, 8, K, &s8), cv32 = gate_cv(t, 32, K, &s32);
    /* alone: (a + 4b) / (a + b); then each extra row charged in full against a shrinking share */
    assert_true(fabs(cv1 - 0.104 / 0.101) < 1e-9);
    assert_true(fabs(cv8 - (0.108 / 8 + 0.003) / (0.108 / 8)) < 1e-9);
    assert_true(cv1 < cv8 && cv8 < cv32);
    assert_true(s1 > s8 && s8 > s32);
    assert_true(cv32 > 1.5);
}

static void test_unmeasured_rows(void **state) {
    (void)state;
    double t[MAX_ROWS + 1] = {0};
    assert_true(sd_step_time(t, MAX_ROWS, 5, 0.7) == 0.7); /* nothing measured: the fallback */
    sd_step_learn(t, MAX_ROWS, 2, 0.2);
    sd_step_learn(t, MAX_ROWS, 6, 0.6);
    assert_true(fabs(sd_step_time(t, MAX_ROWS, 4, -1) - 0.4) < 1e-12);
    assert_true(sd_step_time(t, MAX_ROWS, 1, -1) == 0.2);
    assert_true(sd_step_time(t, MAX_ROWS, 9, -1) == 0.6);
    sd_step_learn(t, MAX_ROWS, 6, 0.9); /* smoothed, not replaced */
    assert_true(t[6] > 0.6 && t[6] < 0.9);
    sd_step_learn(t, MAX_ROWS, MAX_ROWS + 1, 1.0); /* out of range: ignored */
    sd_step_learn(t, MAX_ROWS, 3, NAN);
    assert_true(t[3] == 0);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_alone_is_the_step),
        cmocka_unit_test(test_free_rows_are_shared),
        cmocka_unit_test(test_costly_rows_turn_speculation_down),
        cmocka_unit_test(test_unmeasured_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
