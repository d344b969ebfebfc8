/* What the weighted-quantizer tests share: a seeded xorshift64 source of
 * uniform and Gaussian values (each test file defines QT_SEED before the
 * include, so its rows stay its own), and the weighted relative error
 * E = sum w (x - y)^2 / sum w x^2 of a row x read back as y, every y finite.
 * Include after cmocka.h. */
#ifndef SD_TESTS_QUANT_TEST_ROWS_H
#define SD_TESTS_QUANT_TEST_ROWS_H

#include <math.h>
#include <stdint.h>

static uint64_t g_rng = QT_SEED;
static double urand(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return ((double)(g_rng >> 11) + 0.5) / 9007199254740992.0;
}
static float grand(void) { return (float)(sqrt(-2 * log(urand())) * cos(6.283185307179586 * urand())); }

static double weighted_rel_err(const float *x, const float *y, const float *w, int n) {
    double num = 0, den = 0;
    for (int j = 0; j < n; j++) {
        assert_true(isfinite(y[j]));
        num += (double)w[j] * ((double)x[j] - y[j]) * ((double)x[j] - y[j]);
        den += (double)w[j] * (double)x[j] * x[j];
    }
    return num / den;
}

#endif
