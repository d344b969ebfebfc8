/* AVX2 builds of the row ops; each matches its scalar twin in ops.c bit for bit
 * (same lanes, same fused multiply-adds, same final tree). */
#include <immintrin.h>

#include "numerics/ops_kernels.h"

/* ((l0+l4)+(l2+l6)) + ((l1+l5)+(l3+l7)): the tree sd_dot_f32 documents. */
static inline float hsum_tree(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(s) + _mm_cvtss_f32(_mm_shuffle_ps(s, s, 1));
}

static inline __m256i tail_mask(int64_t rem) {
    const __m256i idx = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    return _mm256_cmpgt_epi32(_mm256_set1_epi32((int)rem), idx);
}

float sd_dot_f32_avx2(const float *a, const float *b, int64_t n) {
    __m256 acc = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) acc = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), acc);
    if (i < n) {
        __m256i m = tail_mask(n - i);
        acc = _mm256_fmadd_ps(_mm256_maskload_ps(a + i, m), _mm256_maskload_ps(b + i, m), acc);
    }
    return hsum_tree(acc);
}

void sd_axpy_f32_avx2(float *y, float a, const float *x, int64_t n) {
    __m256 va = _mm256_set1_ps(a);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm256_storeu_ps(y + i, _mm256_fmadd_ps(va, _mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++) {
        __m128 r = _mm_fmadd_ss(_mm_set_ss(a), _mm_set_ss(x[i]), _mm_set_ss(y[i]));
        y[i] = _mm_cvtss_f32(r);
    }
}

/* Four rows at a time: each row's accumulator sees exactly the fma sequence
 * of sd_dot_f32_avx2; interleaving four independent chains hides the fma
 * latency that bounds a single 128-element dot. */
void sd_dot_f32_rows_avx2(float *out, const float *a, const float *b, int64_t ld, int64_t rows, int64_t n) {
    int64_t r = 0;
    for (; r + 4 <= rows; r += 4) {
        const float *b0 = b + r * ld, *b1 = b0 + ld, *b2 = b1 + ld, *b3 = b2 + ld;
        __m256 c0 = _mm256_setzero_ps(), c1 = c0, c2 = c0, c3 = c0;
        int64_t i = 0;
        for (; i + 8 <= n; i += 8) {
            __m256 va = _mm256_loadu_ps(a + i);
            c0 = _mm256_fmadd_ps(va, _mm256_loadu_ps(b0 + i), c0);
            c1 = _mm256_fmadd_ps(va, _mm256_loadu_ps(b1 + i), c1);
            c2 = _mm256_fmadd_ps(va, _mm256_loadu_ps(b2 + i), c2);
            c3 = _mm256_fmadd_ps(va, _mm256_loadu_ps(b3 + i), c3);
        }
        if (i < n) {
            __m256i m = tail_mask(n - i);
            __m256 va = _mm256_maskload_ps(a + i, m);
            c0 = _mm256_fmadd_ps(va, _mm256_maskload_ps(b0 + i, m), c0);
            c1 = _mm256_fmadd_ps(va, _mm256_maskload_ps(b1 + i, m), c1);
            c2 = _mm256_fmadd_ps(va, _mm256_maskload_ps(b2 + i, m), c2);
            c3 = _mm256_fmadd_ps(va, _mm256_maskload_ps(b3 + i, m), c3);
        }
        out[r] = hsum_tree(c0);
        out[r + 1] = hsum_tree(c1);
        out[r + 2] = hsum_tree(c2);
        out[r + 3] = hsum_tree(c3);
    }
    for (; r < rows; r++) out[r] = sd_dot_f32_avx2(a, b + r * ld, n);
}

/* y stays in registers 64 floats at a time while the rows stream past; each
 * element still gets its fmas in row order, as rows calls of sd_axpy_f32_avx2. */
void sd_axpy_f32_rows_avx2(float *y, const float *w, const float *x, int64_t ld, int64_t rows, int64_t n) {
    int64_t i = 0;
    for (; i + 64 <= n; i += 64) {
        __m256 acc[8];
        for (int j = 0; j < 8; j++) acc[j] = _mm256_loadu_ps(y + i + 8 * j);
        for (int64_t r = 0; r < rows; r++) {
            __m256 va = _mm256_set1_ps(w[r]);
            const float *xr = x + r * ld + i;
            for (int j = 0; j < 8; j++) acc[j] = _mm256_fmadd_ps(va, _mm256_loadu_ps(xr + 8 * j), acc[j]);
        }
        for (int j = 0; j < 8; j++) _mm256_storeu_ps(y + i + 8 * j, acc[j]);
    }
    if (i < n)
        for (int64_t r = 0; r < rows; r++) sd_axpy_f32_avx2(y + i, w[r], x + r * ld + i, n - i);
}

void sd_add_avx2(float *x, const float *y, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_add_ps(_mm256_loadu_ps(x + i), _mm256_loadu_ps(y + i)));
    for (; i < n; i++) x[i] += y[i];
}

void sd_scale_mul_avx2(float *out, const float *x, float scale, const float *w, int64_t n) {
    __m256 vs = _mm256_set1_ps(scale);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), vs);
        if (w) v = _mm256_mul_ps(v, _mm256_loadu_ps(w + i));
        _mm256_storeu_ps(out + i, v);
    }
    for (; i < n; i++) {
        float v = x[i] * scale;
        out[i] = w ? v * w[i] : v;
    }
}
