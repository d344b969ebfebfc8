/* AVX2 builds of the row ops; each matches its scalar twin in ops.c bit for bit
 * (same lanes, same fused multiply-adds, same final tree). */
#include <immintrin.h>
#include <math.h>

#include "numerics/ops.h"

#include "numerics/kernels/ops_kernels.h"

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

/* Multi-query kernels. A tile is J queries x R key rows (scores) or J queries
 * x C vectors of 8 output columns (values); J, R, C are constants once
 * inlined, so the accumulators stay in registers (at most 12 of the 16 ymm,
 * the rest hold the shared key / value vectors and the broadcast weights).
 * Every accumulator gets exactly the fma sequence of its single-query twin
 * above, so only the number of loads changes: a key or value vector is read
 * once per tile instead of once per query. The KV rows are f32 or f16
 * (f16 = 1: uint16_t halves widened by VCVTPH2PS, exact, before the fma). */
#define MQ_INLINE static inline __attribute__((always_inline))
enum { DOT_J = 4, DOT_R = 3, AXPY_J = 3, AXPY_C = 4, AXPY_ROWS = 32 };

/* 8 KV elements from element index e of rows p, as floats. */
MQ_INLINE __m256 kv_load8(const void *p, int64_t e, const int f16) {
    if (f16) return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)((const uint16_t *)p + e)));
    return _mm256_loadu_ps((const float *)p + e);
}

/* The lanes of m (the first rem) from element index e, zeros elsewhere. */
MQ_INLINE __m256 kv_load8_tail(const void *p, int64_t e, int64_t rem, __m256i m, const int f16) {
    if (f16) {
        uint16_t h[8] = {0};
        for (int64_t l = 0; l < rem; l++) h[l] = ((const uint16_t *)p)[e + l];
        return _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)h));
    }
    return _mm256_maskload_ps((const float *)p + e, m);
}

/* out[j][r + k] = sd_dot_f32_avx2(q[j], widen(b + (r + k) * ld), n), j < J, k < R. */
MQ_INLINE void dot_tile(float *const *out, const float *const *q, const void *b, int64_t ld, int64_t r, int64_t n,
                        const int J, const int R, const int f16) {
    int64_t br[DOT_R];
    const float *qj[DOT_J];
    __m256 acc[DOT_J][DOT_R];
#pragma GCC unroll 4
    for (int k = 0; k < R; k++) br[k] = (r + k) * ld;
#pragma GCC unroll 4
    for (int j = 0; j < J; j++) {
        qj[j] = q[j];
#pragma GCC unroll 4
        for (int k = 0; k < R; k++) acc[j][k] = _mm256_setzero_ps();
    }
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 vb[DOT_R];
#pragma GCC unroll 4
        for (int k = 0; k < R; k++) vb[k] = kv_load8(b, br[k] + i, f16);
#pragma GCC unroll 4
        for (int j = 0; j < J; j++) {
            __m256 vq = _mm256_loadu_ps(qj[j] + i);
#pragma GCC unroll 4
            for (int k = 0; k < R; k++) acc[j][k] = _mm256_fmadd_ps(vq, vb[k], acc[j][k]);
        }
    }
    if (i < n) { /* the zero-padded last chunk, as sd_dot_f32_avx2 */
        __m256i m = tail_mask(n - i);
        __m256 vb[DOT_R];
#pragma GCC unroll 4
        for (int k = 0; k < R; k++) vb[k] = kv_load8_tail(b, br[k] + i, n - i, m, f16);
#pragma GCC unroll 4
        for (int j = 0; j < J; j++) {
            __m256 vq = _mm256_maskload_ps(qj[j] + i, m);
#pragma GCC unroll 4
            for (int k = 0; k < R; k++) acc[j][k] = _mm256_fmadd_ps(vq, vb[k], acc[j][k]);
        }
    }
#pragma GCC unroll 4
    for (int j = 0; j < J; j++)
#pragma GCC unroll 4
        for (int k = 0; k < R; k++) out[j][r + k] = hsum_tree(acc[j][k]);
}

#define DOT_CASE(J, R, F16)                                                                                           \
    case (J) * 4 + (R): dot_tile(out, q, b, ld, r, n, J, R, F16); break;
/* The key rows of a tile stay in L1 while every query block passes over
 * them (rows outer, queries inner), so the keys stream in once. One driver
 * per KV type: J and R become constants in each case of the switch. */
#define DOT_ROWS_MQ(name, KV, F16)                                                                                    \
    void name(float *const *out_all, const float *const *q_all, int nq, const KV *b, int64_t ld, int64_t rows,      \
              int64_t n) {                                                                                            \
        for (int64_t r = 0; r < rows; r += DOT_R) {                                                                  \
            const int R = rows - r < DOT_R ? (int)(rows - r) : DOT_R;                                                 \
            for (int j0 = 0; j0 < nq; j0 += DOT_J) {                                                                  \
                float *const *out = out_all + j0;                                                                     \
                const float *const *q = q_all + j0;                                                                   \
                switch ((nq - j0 < DOT_J ? nq - j0 : DOT_J) * 4 + R) {                                                \
                    DOT_CASE(1, 1, F16) DOT_CASE(1, 2, F16) DOT_CASE(1, 3, F16)                                       \
                    DOT_CASE(2, 1, F16) DOT_CASE(2, 2, F16) DOT_CASE(2, 3, F16)                                       \
                    DOT_CASE(3, 1, F16) DOT_CASE(3, 2, F16) DOT_CASE(3, 3, F16)                                       \
                    DOT_CASE(4, 1, F16) DOT_CASE(4, 2, F16) DOT_CASE(4, 3, F16)                                       \
                }                                                                                                     \
            }                                                                                                         \
        }                                                                                                             \
    }
DOT_ROWS_MQ(sd_dot_f32_rows_mq_avx2, float, 0)
DOT_ROWS_MQ(sd_dot_f16_rows_mq_avx2, uint16_t, 1)
#undef DOT_ROWS_MQ
#undef DOT_CASE

/* y[j][i + 8c ..] += w[j][r] * widen(x[r][i + 8c ..]) (fma) for rows r0..r1-1
 * in order, j < J, c < C; masked (C = 1 only): the first rem lanes (mask m),
 * the tail of a row. */
MQ_INLINE void axpy_tile(float *const *y, const float *const *w, const void *x, int64_t ld, int64_t r0, int64_t r1,
                         int64_t i, const int J, const int C, const int masked, __m256i m, int64_t rem,
                         const int f16) {
    float *yj[AXPY_J];
    const float *wj[AXPY_J];
    __m256 acc[AXPY_J][AXPY_C];
#pragma GCC unroll 4
    for (int j = 0; j < J; j++) {
        yj[j] = y[j] + i;
        wj[j] = w[j];
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) acc[j][c] = masked ? _mm256_maskload_ps(yj[j], m) : _mm256_loadu_ps(yj[j] + 8 * c);
    }
    for (int64_t r = r0; r < r1; r++) {
        const int64_t xr = r * ld + i;
        __m256 vw[AXPY_J];
#pragma GCC unroll 4
        for (int j = 0; j < J; j++) vw[j] = _mm256_set1_ps(wj[j][r]);
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) {
            __m256 vx = masked ? kv_load8_tail(x, xr, rem, m, f16) : kv_load8(x, xr + 8 * c, f16);
#pragma GCC unroll 4
            for (int j = 0; j < J; j++) acc[j][c] = _mm256_fmadd_ps(vw[j], vx, acc[j][c]);
        }
    }
#pragma GCC unroll 4
    for (int j = 0; j < J; j++)
#pragma GCC unroll 4
        for (int c = 0; c < C; c++) {
            if (masked)
                _mm256_maskstore_ps(yj[j], m, acc[j][c]);
            else
                _mm256_storeu_ps(yj[j] + 8 * c, acc[j][c]);
        }
}

#define AXPY_CASE(J, F16)                                                                                             \
    case J:                                                                                                           \
        for (; i + 8 * AXPY_C <= n; i += 8 * AXPY_C) axpy_tile(y, w, x, ld, r0, r1, i, J, AXPY_C, 0, m, 0, F16);      \
        for (; i + 8 <= n; i += 8) axpy_tile(y, w, x, ld, r0, r1, i, J, 1, 0, m, 0, F16);                              \
        if (i < n) axpy_tile(y, w, x, ld, r0, r1, i, J, 1, 1, tail_mask(n - i), n - i, F16);                           \
        break;
/* Blocks of AXPY_ROWS value rows (16 KiB at head_dim 128 in f32) stay in L1
 * while every query block (J <= AXPY_J queries, all n columns) passes over
 * them; the outputs are reloaded per block, which is exact (a store and a
 * load round nothing). One driver per KV type. */
#define AXPY_ROWS_MQ(name, KV, F16)                                                                                   \
    void name(float *const *y_all, const float *const *w_all, int nq, const KV *x, int64_t ld, int64_t rows,        \
              int64_t n) {                                                                                            \
        const __m256i m = _mm256_setzero_si256();                                                                     \
        for (int64_t r0 = 0; r0 < rows; r0 += AXPY_ROWS) {                                                            \
            const int64_t r1 = rows - r0 < AXPY_ROWS ? rows : r0 + AXPY_ROWS;                                         \
            for (int j0 = 0; j0 < nq; j0 += AXPY_J) {                                                                 \
                float *const *y = y_all + j0;                                                                         \
                const float *const *w = w_all + j0;                                                                   \
                int64_t i = 0;                                                                                        \
                switch (nq - j0 < AXPY_J ? nq - j0 : AXPY_J) {                                                        \
                    AXPY_CASE(1, F16) AXPY_CASE(2, F16) AXPY_CASE(3, F16)                                             \
                }                                                                                                     \
            }                                                                                                         \
        }                                                                                                             \
    }
AXPY_ROWS_MQ(sd_axpy_f32_rows_mq_avx2, float, 0)
AXPY_ROWS_MQ(sd_axpy_f16_rows_mq_avx2, uint16_t, 1)
#undef AXPY_ROWS_MQ
#undef AXPY_CASE

/* VCVTPS2PH with imm 0: round to nearest even (MXCSR not consulted), the
 * rounding sd_fp32_to_fp16 implements; the tail goes through a padded buffer. */
void sd_fp32_to_fp16_row_avx2(uint16_t *out, const float *x, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8)
        _mm_storeu_si128((__m128i *)(out + i), _mm256_cvtps_ph(_mm256_loadu_ps(x + i), _MM_FROUND_TO_NEAREST_INT));
    if (i < n) {
        float f[8] = {0};
        uint16_t h[8];
        for (int64_t l = 0; l < n - i; l++) f[l] = x[i + l];
        _mm_storeu_si128((__m128i *)h, _mm256_cvtps_ph(_mm256_loadu_ps(f), _MM_FROUND_TO_NEAREST_INT));
        for (int64_t l = 0; l < n - i; l++) out[i + l] = h[l];
    }
}

void sd_fp16_to_fp32_row_avx2(float *out, const uint16_t *h, int64_t n) {
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(out + i, kv_load8(h, i, 1));
    if (i < n) {
        float f[8];
        _mm256_storeu_ps(f, kv_load8_tail(h, i, n - i, _mm256_setzero_si256(), 1));
        for (int64_t l = 0; l < n - i; l++) out[i + l] = f[l];
    }
}

/* sd_expf on 4 lanes: the same double ops (cvtps_pd is exact), the table
 * entry by a gather, one rounding to float at the end. */
static inline __m128 expf4(__m128 x) {
    const __m256d invln2n = _mm256_set1_pd(SD_EXPF_INVLN2N), shift = _mm256_set1_pd(SD_EXPF_SHIFT);
    const __m256d xd = _mm256_cvtps_pd(x);
    const __m256d kds = _mm256_fmadd_pd(invln2n, xd, shift), kd = _mm256_sub_pd(kds, shift);
    const __m256d r = _mm256_fmsub_pd(invln2n, xd, kd);
    const __m256i ki = _mm256_castpd_si256(kds);
    const __m256i tab = _mm256_i64gather_epi64((const long long *)sd_expf_tab,
                                               _mm256_and_si256(ki, _mm256_set1_epi64x(31)), 8);
    const __m256d s = _mm256_castsi256_pd(_mm256_add_epi64(tab, _mm256_slli_epi64(ki, 47)));
    const __m256d z = _mm256_fmadd_pd(_mm256_set1_pd(SD_EXPF_C0), r, _mm256_set1_pd(SD_EXPF_C1));
    const __m256d r2 = _mm256_mul_pd(r, r);
    const __m256d y = _mm256_fmadd_pd(_mm256_set1_pd(SD_EXPF_C2), r, _mm256_set1_pd(1.0));
    return _mm256_cvtpd_ps(_mm256_mul_pd(_mm256_fmadd_pd(z, r2, y), s));
}

/* sd_expf on 8 lanes; lanes with |x| >= 88 or nan get sd_expf's special
 * values by blends (the thresholds lie beyond 88, so testing them on every
 * lane changes no other lane). */
static inline __m256 expf8(__m256 x) {
    __m256 e = _mm256_set_m128(expf4(_mm256_extractf128_ps(x, 1)), expf4(_mm256_castps256_ps128(x)));
    e = _mm256_blendv_ps(e, _mm256_set1_ps(0x1p-149f), _mm256_cmp_ps(x, _mm256_set1_ps(SD_EXPF_MAY_UFLOW), _CMP_LT_OQ));
    e = _mm256_blendv_ps(e, _mm256_setzero_ps(), _mm256_cmp_ps(x, _mm256_set1_ps(SD_EXPF_UFLOW), _CMP_LT_OQ));
    e = _mm256_blendv_ps(e, _mm256_set1_ps(INFINITY), _mm256_cmp_ps(x, _mm256_set1_ps(SD_EXPF_OFLOW), _CMP_GT_OQ));
    return _mm256_blendv_ps(e, _mm256_add_ps(x, x), _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
}

/* x[t] *= scale, then e_t = sd_expf(x[t] - max) stored in place; n >= 1.
 * max: the scalar rule (x > max ? x : max from x[0]) per lane, then over the
 * lanes. It can differ from the scalar max only in the sign of a zero, which
 * changes x - max only where x is a zero, and sd_expf(+-0) = 1. */
static void scale_exp_row(float *x, int64_t n, float scale) {
    const __m256 vs = _mm256_set1_ps(scale);
    float max = x[0] * scale;
    __m256 vm = _mm256_set1_ps(max);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_mul_ps(_mm256_loadu_ps(x + i), vs);
        _mm256_storeu_ps(x + i, v);
        vm = _mm256_max_ps(v, vm); /* v > vm ? v : vm, nan v keeps vm */
    }
    float lanes[8];
    _mm256_storeu_ps(lanes, vm);
    for (int l = 0; l < 8; l++)
        if (lanes[l] > max) max = lanes[l];
    for (int64_t t = i; t < n; t++) {
        x[t] *= scale;
        if (x[t] > max) max = x[t];
    }
    const __m256 vmax = _mm256_set1_ps(max);
    for (i = 0; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, expf8(_mm256_sub_ps(_mm256_loadu_ps(x + i), vmax)));
    for (; i < n; i++) x[i] = sd_expf(x[i] - max);
}

static void scale_row(float *x, int64_t n, float s) {
    const __m256 vs = _mm256_set1_ps(s);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) _mm256_storeu_ps(x + i, _mm256_mul_ps(_mm256_loadu_ps(x + i), vs));
    for (; i < n; i++) x[i] *= s;
}

/* The sums are left to right per row (sd_softmax's order), so a row's sum is
 * a chain of dependent adds; four rows' chains run side by side. */
void sd_softmax_mq_avx2(float *const *x, const int64_t *n, int nq, float scale) {
    for (int j0 = 0; j0 < nq; j0 += 4) {
        const int J = nq - j0 < 4 ? nq - j0 : 4;
        float *const *xr = x + j0;
        float sum[4] = {0.0f, 0.0f, 0.0f, 0.0f};
        int64_t common = INT64_MAX;
        for (int j = 0; j < J; j++) {
            if (n[j0 + j] > 0) scale_exp_row(xr[j], n[j0 + j], scale);
            if (n[j0 + j] < common) common = n[j0 + j];
        }
        int64_t t = 0;
        if (J == 4) {
            float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f;
            for (; t < common; t++) {
                s0 += xr[0][t];
                s1 += xr[1][t];
                s2 += xr[2][t];
                s3 += xr[3][t];
            }
            sum[0] = s0, sum[1] = s1, sum[2] = s2, sum[3] = s3;
        }
        for (int j = 0; j < J; j++) {
            if (n[j0 + j] <= 0) continue;
            float s = sum[j];
            for (int64_t u = t; u < n[j0 + j]; u++) s += xr[j][u];
            scale_row(xr[j], n[j0 + j], 1.0f / s);
        }
    }
}

/* sd_softmax: one row, scale 1 (which changes no value). */
void sd_softmax_avx2(float *x, int64_t n) { sd_softmax_mq_avx2(&x, &n, 1, 1.0f); }

void sd_swiglu_avx2(float *out, const float *gate, const float *up, int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 g = _mm256_loadu_ps(gate + i);
        const __m256 d = _mm256_add_ps(one, expf8(_mm256_xor_ps(g, sign)));
        _mm256_storeu_ps(out + i, _mm256_mul_ps(_mm256_div_ps(g, d), _mm256_loadu_ps(up + i)));
    }
    for (; i < n; i++) {
        float g = gate[i];
        out[i] = g / (1.0f + sd_expf(-g)) * up[i];
    }
}

void sd_silu_avx2(float *out, const float *x, int64_t n) {
    const __m256 one = _mm256_set1_ps(1.0f), sign = _mm256_set1_ps(-0.0f);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        const __m256 g = _mm256_loadu_ps(x + i);
        _mm256_storeu_ps(out + i, _mm256_div_ps(g, _mm256_add_ps(one, expf8(_mm256_xor_ps(g, sign)))));
    }
    for (; i < n; i++) out[i] = x[i] / (1.0f + sd_expf(-x[i]));
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
