/* Internal to the NEON matmul (matmul_neon.c, matmul_neon_dot.c; aarch64 only). */
#ifndef SD_NUMERICS_MATMUL_NEON_H
#define SD_NUMERICS_MATMUL_NEON_H

#include <stdint.h>

#include "numerics/kernels/matmul_impl.h"

/* out[j] = sum over i in sub-block j of w[i] * x[i], for the n / sub
 * sub-blocks (sub 16 or 32, n a multiple of sub, at most 16 sub-blocks).
 * Exact int32 sums whichever version runs. */
typedef void (*sd_neon_sub_dots_fn)(const int8_t *w, const int8_t *x, int n, int sub, int32_t *out);

/* Widening multiplies (any Armv8-A). */
void sd_neon_sub_dots_plain(const int8_t *w, const int8_t *x, int n, int sub, int32_t *out);
/* SDOT (Armv8.2 dot product; compiled with +dotprod, run only through the
 * neon-dot row). */
void sd_neon_sub_dots_sdot(const int8_t *w, const int8_t *x, int n, int sub, int32_t *out);

/* The quantized matmul of matmul_impl.h on the GGUF layout with the given
 * integer dots; the neon row's build (plain dots) and the neon-dot row's
 * (SDOT). */
void sd_matmul_neon_quant_with(const sd_matrix *m, const sd_act *a, float *y, int64_t o0, int64_t o1,
                               sd_neon_sub_dots_fn dots);
void sd_matmul_neon_quant_dot(const sd_matrix *m, const sd_act *a, float *y, int64_t o0, int64_t o1);

#endif
