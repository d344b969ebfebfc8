/* Internal: the builds of the ops in ops.h that the kernel table's rows name
 * (kernels.h): generic (generic/ops_generic.c, the reference), AVX2
 * (x86/ops_avx2.c) and NEON for some (arm/ops_neon.c). Same results bit for
 * bit; a SIMD build runs only through a row this machine can run. */
#ifndef SD_NUMERICS_OPS_KERNELS_H
#define SD_NUMERICS_OPS_KERNELS_H

#include <stdint.h>

/* glibc's expf (sysdeps/ieee754/flt-32/e_expf.c, ARM optimized-routines):
 * exp(x) = 2^(k/32) * 2^(r/32), 2^(k/32) from a 32-entry table of doubles,
 * 2^(r/32) a cubic in r. The constants are glibc's __exp2f_data, bit for bit;
 * the AVX2 build runs the same double ops four lanes at a time. */
#define SD_EXPF_INVLN2N 0x1.71547652b82fep+5 /* 32 / ln 2 */
#define SD_EXPF_SHIFT 0x1.8p+52              /* rounds to an integer in the low mantissa bits */
#define SD_EXPF_C0 0x1.c6af84b912394p-20
#define SD_EXPF_C1 0x1.ebfce50fac4f3p-13
#define SD_EXPF_C2 0x1.62e42ff0c52d6p-6
#define SD_EXPF_OFLOW 0x1.62e42ep6f          /* x > this: +inf */
#define SD_EXPF_UFLOW (-0x1.9fe368p6f)       /* x < this: 0 */
#define SD_EXPF_MAY_UFLOW (-0x1.9d1d9ep6f)   /* x < this: 0x1p-149 */
/* bits of 2^(i/32), minus i << 47 so that adding k << 47 scales by 2^(k/32) */
extern const uint64_t sd_expf_tab[32];

float sd_dot_f32_generic(const float *a, const float *b, int64_t n);
void sd_axpy_f32_generic(float *y, float a, const float *x, int64_t n);
void sd_dot_f32_rows_generic(float *out, const float *a, const float *b, int64_t ld, int64_t rows, int64_t n);
void sd_axpy_f32_rows_generic(float *y, const float *w, const float *x, int64_t ld, int64_t rows, int64_t n);
void sd_dot_f32_rows_mq_generic(float *const *out, const float *const *q, int nq, const float *b, int64_t ld,
                                int64_t rows, int64_t n);
void sd_axpy_f32_rows_mq_generic(float *const *y, const float *const *w, int nq, const float *x, int64_t ld,
                                 int64_t rows, int64_t n);
void sd_dot_f16_rows_mq_generic(float *const *out, const float *const *q, int nq, const uint16_t *b, int64_t ld,
                                int64_t rows, int64_t n);
void sd_axpy_f16_rows_mq_generic(float *const *y, const float *const *w, int nq, const uint16_t *x, int64_t ld,
                                 int64_t rows, int64_t n);
void sd_fp32_to_fp16_row_generic(uint16_t *out, const float *x, int64_t n);
void sd_fp16_to_fp32_row_generic(float *out, const uint16_t *h, int64_t n);
void sd_add_generic(float *x, const float *y, int64_t n);
/* out[i] = (x[i] * scale) * w[i] (w may be NULL: out[i] = x[i] * scale). */
void sd_scale_mul_generic(float *out, const float *x, float scale, const float *w, int64_t n);
void sd_softmax_generic(float *x, int64_t n);
void sd_softmax_mq_generic(float *const *x, const int64_t *n, int nq, float scale);
void sd_swiglu_generic(float *out, const float *gate, const float *up, int64_t n);
void sd_silu_generic(float *out, const float *x, int64_t n);

float sd_dot_f32_avx2(const float *a, const float *b, int64_t n);
void sd_axpy_f32_avx2(float *y, float a, const float *x, int64_t n);
void sd_dot_f32_rows_avx2(float *out, const float *a, const float *b, int64_t ld, int64_t rows, int64_t n);
void sd_axpy_f32_rows_avx2(float *y, const float *w, const float *x, int64_t ld, int64_t rows, int64_t n);
void sd_dot_f32_rows_mq_avx2(float *const *out, const float *const *q, int nq, const float *b, int64_t ld,
                             int64_t rows, int64_t n);
void sd_axpy_f32_rows_mq_avx2(float *const *y, const float *const *w, int nq, const float *x, int64_t ld,
                              int64_t rows, int64_t n);
void sd_dot_f16_rows_mq_avx2(float *const *out, const float *const *q, int nq, const uint16_t *b, int64_t ld,
                             int64_t rows, int64_t n);
void sd_axpy_f16_rows_mq_avx2(float *const *y, const float *const *w, int nq, const uint16_t *x, int64_t ld,
                              int64_t rows, int64_t n);
void sd_fp32_to_fp16_row_avx2(uint16_t *out, const float *x, int64_t n);
void sd_fp16_to_fp32_row_avx2(float *out, const uint16_t *h, int64_t n);
/* sd_softmax(_mq) and sd_swiglu (ops.h), the exponentials 8 lanes at a time. */
void sd_softmax_avx2(float *x, int64_t n);
void sd_softmax_mq_avx2(float *const *x, const int64_t *n, int nq, float scale);
void sd_swiglu_avx2(float *out, const float *gate, const float *up, int64_t n);
void sd_silu_avx2(float *out, const float *x, int64_t n);
void sd_add_avx2(float *x, const float *y, int64_t n);
/* out[i] = (x[i] * scale) * w[i] (w may be NULL: out[i] = x[i] * scale). */
void sd_scale_mul_avx2(float *out, const float *x, float scale, const float *w, int64_t n);

float sd_dot_f32_neon(const float *a, const float *b, int64_t n);
void sd_axpy_f32_neon(float *y, float a, const float *x, int64_t n);
void sd_dot_f32_rows_neon(float *out, const float *a, const float *b, int64_t ld, int64_t rows, int64_t n);
void sd_axpy_f32_rows_neon(float *y, const float *w, const float *x, int64_t ld, int64_t rows, int64_t n);
void sd_dot_f32_rows_mq_neon(float *const *out, const float *const *q, int nq, const float *b, int64_t ld,
                             int64_t rows, int64_t n);
void sd_axpy_f32_rows_mq_neon(float *const *y, const float *const *w, int nq, const float *x, int64_t ld,
                              int64_t rows, int64_t n);
void sd_dot_f16_rows_mq_neon(float *const *out, const float *const *q, int nq, const uint16_t *b, int64_t ld,
                             int64_t rows, int64_t n);
void sd_axpy_f16_rows_mq_neon(float *const *y, const float *const *w, int nq, const uint16_t *x, int64_t ld,
                              int64_t rows, int64_t n);
void sd_add_neon(float *x, const float *y, int64_t n);
void sd_scale_mul_neon(float *out, const float *x, float scale, const float *w, int64_t n);

#endif
