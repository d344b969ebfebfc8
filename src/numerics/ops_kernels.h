/* Internal: AVX2 builds of the ops in ops.h (ops_avx2.c). Same results bit for
 * bit as the scalar code in ops.c; only called when sd_cpu_avx2() is true. */
#ifndef SD_NUMERICS_OPS_KERNELS_H
#define SD_NUMERICS_OPS_KERNELS_H

#include <stdint.h>

float sd_dot_f32_avx2(const float *a, const float *b, int64_t n);
void sd_axpy_f32_avx2(float *y, float a, const float *x, int64_t n);
void sd_dot_f32_rows_avx2(float *out, const float *a, const float *b, int64_t ld, int64_t rows, int64_t n);
void sd_axpy_f32_rows_avx2(float *y, const float *w, const float *x, int64_t ld, int64_t rows, int64_t n);
void sd_dot_f32_rows_mq_avx2(float *const *out, const float *const *q, int nq, const float *b, int64_t ld,
                             int64_t rows, int64_t n);
void sd_axpy_f32_rows_mq_avx2(float *const *y, const float *const *w, int nq, const float *x, int64_t ld,
                              int64_t rows, int64_t n);
void sd_add_avx2(float *x, const float *y, int64_t n);
/* out[i] = (x[i] * scale) * w[i] (w may be NULL: out[i] = x[i] * scale). */
void sd_scale_mul_avx2(float *out, const float *x, float scale, const float *w, int64_t n);

#endif
