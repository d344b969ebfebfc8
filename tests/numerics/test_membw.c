/* numerics/membw: the probe runs on small arrays and reports plausible figures
 * (no speed thresholds: the machine is shared; only sanity of the result). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>

#include "numerics/membw.h"

static void test_small_arrays(void **state) {
    (void)state;
    sd_membw bw = {0};
    sd_err err = {0};
    assert_int_equal(sd_membw_measure(1u << 20, 2, 2, &bw, &err), SD_OK);
    assert_true(isfinite(bw.read_gbs) && bw.read_gbs > 0.0);
    assert_true(isfinite(bw.triad_gbs) && bw.triad_gbs > 0.0);
    assert_int_equal(bw.array_bytes, 1u << 20);
    assert_int_equal(bw.n_threads, 2);
    assert_int_equal(bw.reps, 2);
}

static void test_too_small(void **state) {
    (void)state;
    sd_membw bw = {0};
    sd_err err = {0};
    assert_int_equal(sd_membw_measure(8, 1, 1, &bw, &err), SD_ERR_ARG);
    assert_int_equal(err.code, SD_ERR_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_arrays),
        cmocka_unit_test(test_too_small),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
