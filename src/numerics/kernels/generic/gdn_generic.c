/* Gated DeltaNet kernels (gdn.h) of the generic row of the kernel table
 * (kernels.h): the reference the AVX2 build (x86/gdn_avx2.c) reproduces. */
#include <math.h>

#include "numerics/gdn.h"
#include "numerics/kernels/gdn_kernels.h"

void sd_conv_step_scalar(float *y, float *win, const float *w, const float *x, int K, int64_t ld, int64_t c0,
                         int64_t n) {
    for (int64_t c = c0; c < n; c++) {
        float acc = K > 1 ? w[c] * win[c] : w[c] * x[c];
        for (int j = 1; j < K - 1; j++) acc = fmaf(w[j * ld + c], win[j * ld + c], acc);
        if (K > 1) acc = fmaf(w[(K - 1) * ld + c], x[c], acc);
        for (int r = 0; r + 1 < K - 1; r++) win[r * ld + c] = win[(r + 1) * ld + c];
        if (K > 1) win[(K - 2) * ld + c] = x[c];
        y[c] = acc;
    }
}

void sd_conv_step_generic(float *y, float *win, const float *w, const float *x, int K, int64_t ld, int64_t n) {
    sd_conv_step_scalar(y, win, w, x, K, ld, 0, n);
}

static void gdn_step_scalar(float *st, const float *q, const float *k, const float *v, float decay, float beta,
                            float scale, float *o, int S) {
    float u[SD_GDN_MAX_STATE];
    for (int j = 0; j < S; j++) u[j] = 0.0f;
    for (int i = 0; i < S; i++) {
        float *row = st + (int64_t)i * S;
        for (int j = 0; j < S; j++) {
            const float s = row[j] * decay;
            row[j] = s;
            u[j] = fmaf(s, k[i], u[j]);
        }
    }
    for (int j = 0; j < S; j++) u[j] = (v[j] - u[j]) * beta; /* u is now d */
    for (int j = 0; j < S; j++) o[j] = 0.0f;
    for (int i = 0; i < S; i++) {
        float *row = st + (int64_t)i * S;
        for (int j = 0; j < S; j++) {
            const float s = fmaf(k[i], u[j], row[j]);
            row[j] = s;
            o[j] = fmaf(s, q[i], o[j]);
        }
    }
    for (int j = 0; j < S; j++) o[j] *= scale;
}

void sd_gdn_tokens_generic(float *st, int S, int T, const float *q, const float *k, const float *v, int64_t ld,
                           const float *decay, const float *beta, int64_t ls, float scale, float *o, int64_t ldo) {
    for (int t = 0; t < T; t++)
        gdn_step_scalar(st, q + t * ld, k + t * ld, v + t * ld, decay[t * ls], beta[t * ls], scale, o + t * ldo, S);
}
