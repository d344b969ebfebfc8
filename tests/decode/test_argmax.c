/* decode/sampler: sd_argmax is the greedy rule of both plain decoding and the
 * verify (ARCHITECTURE.md §1): the FIRST index of the largest value, NaN never the
 * largest. Checked against the textbook loop on rows full of ties, signed
 * zeros and NaNs. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "decode/sampler.h"

/* The definition: best moves only on a strictly larger x[i]. */
static int32_t ref_argmax(const float *x, int32_t n) {
    int32_t best = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint32_t rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return (uint32_t)(g_rng >> 32);
}

static void test_edge_cases(void **state) {
    (void)state;
    const float a[] = {1.0f, 3.0f, 3.0f, 2.0f};
    assert_int_equal(sd_argmax(a, 4), 1); /* first of a tie */
    const float z[] = {-0.0f, 0.0f};
    assert_int_equal(sd_argmax(z, 2), 0); /* -0 == +0: a tie */
    const float n0[] = {NAN, 5.0f, 7.0f};
    assert_int_equal(sd_argmax(n0, 3), 0); /* nothing is larger than a NaN at 0 */
    const float n1[] = {1.0f, NAN, 0.5f, 2.0f, NAN};
    assert_int_equal(sd_argmax(n1, 5), 3);
    const float inf[] = {-INFINITY, -INFINITY};
    assert_int_equal(sd_argmax(inf, 2), 0);
    assert_int_equal(sd_argmax(a, 1), 0);
}

static void test_matches_definition(void **state) {
    (void)state;
    float x[4099];
    for (int trial = 0; trial < 400; trial++) {
        int32_t n = 1 + (int32_t)(rnd() % 4099);
        for (int32_t i = 0; i < n; i++) {
            uint32_t r = rnd() % 100;
            x[i] = r < 3 ? NAN : r < 6 ? -0.0f : (float)(int)(rnd() % 9) - 4.0f; /* many ties */
        }
        assert_int_equal(sd_argmax(x, n), ref_argmax(x, n));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_edge_cases),
        cmocka_unit_test(test_matches_definition),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
