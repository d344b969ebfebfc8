/* Internal: the builds of the Gated DeltaNet kernels of gdn.h that the
 * kernel table's rows name (kernels.h): generic (generic/gdn_generic.c, the
 * reference) and AVX2 (x86/gdn_avx2.c, bitwise the same). And the scalar conv
 * step on channels [c0, n), which the AVX2 build runs on the channels left
 * after its last full vector. */
#ifndef SD_NUMERICS_GDN_KERNELS_H
#define SD_NUMERICS_GDN_KERNELS_H

#include <stdint.h>

void sd_conv_step_scalar(float *y, float *win, const float *w, const float *x, int K, int64_t ld, int64_t c0,
                         int64_t n);
void sd_conv_step_generic(float *y, float *win, const float *w, const float *x, int K, int64_t ld, int64_t n);
void sd_gdn_tokens_generic(float *st, int S, int T, const float *q, const float *k, const float *v, int64_t ld,
                           const float *decay, const float *beta, int64_t ls, float scale, float *o, int64_t ldo);
void sd_conv_step_avx2(float *y, float *win, const float *w, const float *x, int K, int64_t ld, int64_t n);
/* Vectors of 8 value indices: S not a multiple of 8 runs the generic build. */
void sd_gdn_tokens_avx2(float *st, int S, int T, const float *q, const float *k, const float *v, int64_t ld,
                        const float *decay, const float *beta, int64_t ls, float scale, float *o, int64_t ldo);

#endif
