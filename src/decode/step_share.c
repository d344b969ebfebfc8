/* A batched request's share of a step: see step_share.h. */
#include "decode/step_share.h"

#define STEP_KEEP 0.7 /* smoothing, as the gate's own times (gate.c TIME_KEEP) */

void sd_step_learn(double *t, int32_t max_rows, int32_t R, double T) {
    if (R < 1 || R > max_rows || !(T > 0)) return;
    t[R] = t[R] > 0 ? STEP_KEEP * t[R] + (1 - STEP_KEEP) * T : T;
}

double sd_step_time(const double *t, int32_t max_rows, int32_t r, double fallback) {
    if (r < 1) r = 1;
    if (r > max_rows) r = max_rows;
    if (t[r] > 0) return t[r];
    int32_t lo = r - 1, hi = r + 1;
    while (lo >= 1 && t[lo] <= 0) lo--;
    while (hi <= max_rows && t[hi] <= 0) hi++;
    const int has_lo = lo >= 1, has_hi = hi <= max_rows;
    if (has_lo && has_hi) return t[lo] + (t[hi] - t[lo]) * (r - lo) / (double)(hi - lo);
    if (has_lo) return t[lo];
    if (has_hi) return t[hi];
    return fallback;
}

double sd_step_share(const double *t, int32_t max_rows, int32_t R, int32_t S, int32_t n, double fallback) {
    if (n < 1) n = 1;
    if (S < 1) S = 1;
    if (S > R) S = R;
    const double tR = sd_step_time(t, max_rows, R, fallback), tb = sd_step_time(t, max_rows, R - S + 1, fallback);
    const double extra = tR - tb;
    return tb / n + (extra > 0 ? extra : 0);
}
