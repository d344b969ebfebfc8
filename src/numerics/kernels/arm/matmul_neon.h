/* Internal to the NEON matmul (matmul_neon.c, matmul_neon_dot.c; aarch64 only). */
#ifndef SD_NUMERICS_MATMUL_NEON_H
#define SD_NUMERICS_MATMUL_NEON_H

#include <stdint.h>

/* out[j] = sum over i in sub-block j of w[i] * x[i], for the n / sub
 * sub-blocks (sub 16 or 32, n a multiple of sub, at most 16 sub-blocks).
 * Exact int32 sums whichever version runs. */
typedef void (*sd_neon_sub_dots_fn)(const int8_t *w, const int8_t *x, int n, int sub, int32_t *out);

/* Widening multiplies (any Armv8-A). */
void sd_neon_sub_dots_plain(const int8_t *w, const int8_t *x, int n, int sub, int32_t *out);
/* SDOT (Armv8.2 dot product; compiled with +dotprod, called only when
 * sd_cpu_neon_dotprod()). */
void sd_neon_sub_dots_sdot(const int8_t *w, const int8_t *x, int n, int sub, int32_t *out);

#endif
