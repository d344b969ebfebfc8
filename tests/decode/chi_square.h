/* Pearson's chi-square test for the sampling-law tests of decode/spec
 * (header-only, shared by test_spec_sampling.c on Markov oracles and
 * test_spec_hybrid_models.c on the qwen35 fixture). */
#ifndef SD_TESTS_CHI_SQUARE_H
#define SD_TESTS_CHI_SQUARE_H

#include <math.h>

/* p-value below which the distributions are declared different. The runs are
 * seeded (the test is deterministic); the margin is for future changes. */
#define P_FAIL 1e-4

/* ---- chi-square upper tail: Q(df/2, x/2), the regularized upper incomplete
 * gamma function by its series (x < a + 1) or continued fraction (Lentz). */
static inline double gamma_q(double a, double x) {
    if (x <= 0) return 1;
    double lg = lgamma(a);
    if (x < a + 1) {
        double sum = 1 / a, term = sum;
        for (int n = 1; n < 1000 && fabs(term) > fabs(sum) * 1e-15; n++) sum += term *= x / (a + n);
        return 1 - sum * exp(-x + a * log(x) - lg);
    }
    double b = x + 1 - a, c = 1e300, d = 1 / b, h = d;
    for (int i = 1; i < 1000; i++) {
        double an = -i * (i - a);
        b += 2;
        d = an * d + b;
        d = fabs(d) < 1e-300 ? 1e-300 : d;
        c = b + an / c;
        c = fabs(c) < 1e-300 ? 1e-300 : c;
        d = 1 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1) < 1e-15) break;
    }
    return exp(-x + a * log(x) - lg) * h;
}

/* Pearson chi-square of counts against expected probabilities; cells with an
 * expected count under 5 are pooled into one. Returns the p-value. */
static inline double chi_square_p(const int *count, const double *prob, int n_cells, int n_samples) {
    double chi = 0, pooled_e = 0, pooled_o = 0;
    int df = -1;
    for (int c = 0; c < n_cells; c++) {
        double e = prob[c] * n_samples;
        if (e < 5) {
            pooled_e += e;
            pooled_o += count[c];
            continue;
        }
        chi += (count[c] - e) * (count[c] - e) / e;
        df++;
    }
    if (pooled_e > 0) {
        chi += (pooled_o - pooled_e) * (pooled_o - pooled_e) / pooled_e;
        df++;
    }
    return gamma_q(df / 2.0, chi / 2.0);
}

#endif
