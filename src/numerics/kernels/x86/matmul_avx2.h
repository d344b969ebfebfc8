/* Helpers shared by the AVX2 matmul kernel files (matmul_avx2.c,
 * matmul_lowbit_avx2.c). Private to the numerics *_avx2.c files: it needs the
 * -mavx2 -mfma flags those files are compiled with. */
#ifndef SD_NUMERICS_MATMUL_AVX2_H
#define SD_NUMERICS_MATMUL_AVX2_H

#include <immintrin.h>
#include <string.h>

#include "numerics/kernels/matmul_impl.h"

#define INLINE static inline __attribute__((always_inline))

/* Pins a running integer accumulator to its register. Integer adds are
 * associative, so GCC 12 rewrites an unrolled chain acc += p0; acc += p1;
 * ... into a tree over all the products of a block, which needs more than
 * the 16 ymm registers: the products went to the stack (the Q8_0 span
 * loop stored and reloaded ~2 vectors per product). The empty asm makes
 * each partial sum opaque, so the chain stays a chain. */
#define KEEP_ACC(v) __asm__("" : "+x"(v))

INLINE __m256i bcast32(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm256_set1_epi32(v);
}

/* acc += cvt(isum) * (d_w * d_x): the reference's fmaf((float)isum, d * dx, acc). */
INLINE __m256 fma_block(__m256i isum, __m256 dw, float dx, __m256 acc) {
    return _mm256_fmadd_ps(_mm256_cvtepi32_ps(isum), _mm256_mul_ps(dw, _mm256_set1_ps(dx)), acc);
}

/* Rows [s0, s0+ns) of one tile over blocks [b0, b1): the row groups of a span. */
typedef void (*span_rows_fn)(const uint8_t *tile, const sd_act *a, int s0, int ns, int64_t b0, int64_t b1,
                             __m256 *acc);

/* A tile for ns activation rows: up to grp rows (one group) stream the whole
 * tile in one pass; more go span by span (span blocks, which stay in L1 while
 * every group passes over them). */
void sd_avx2_span_tile(span_rows_fn rows, int grp, int64_t span, const uint8_t *tile, const sd_act *a, int s0,
                       int ns, __m256 *acc);

/* Q2_K, Q3_K, IQ4_NL, IQ4_XS (matmul_lowbit_avx2.c): rows [s0, s0+ns) of one
 * tile, all blocks, accumulated into acc[ns]; and the rows of one streaming
 * pass (sd_matmul_pass_rows). False / 0 for other types. */
bool sd_lowbit_avx2_tile(uint32_t type, const uint8_t *tile, const sd_act *a, int s0, int ns, __m256 *acc);
int sd_lowbit_avx2_pass_rows(uint32_t type);

#endif
