/* Gated DeltaNet kernels (gdn.h): the build of the kernel table's row in use
 * (kernels/kernels.h; the reference is kernels/generic/gdn_generic.c). */
#include "numerics/gdn.h"

#include "numerics/kernels/kernels.h"

void sd_conv_step(float *y, float *win, const float *w, const float *x, int K, int64_t ld, int64_t n) {
    sd_kernels_active()->conv_step(y, win, w, x, K, ld, n);
}

void sd_gdn_tokens(float *st, int S, int T, const float *q, const float *k, const float *v, int64_t ld,
                   const float *decay, const float *beta, int64_t ls, float scale, float *o, int64_t ldo) {
    sd_kernels_active()->gdn_tokens(st, S, T, q, k, v, ld, decay, beta, ls, scale, o, ldo);
}

void sd_gdn_step(float *st, const float *q, const float *k, const float *v, float decay, float beta, float scale,
                 float *o, int S) {
    sd_gdn_tokens(st, S, 1, q, k, v, 0, &decay, &beta, 0, scale, o, 0);
}
