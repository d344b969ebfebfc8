/* AVX2 matmul kernels over the repacked layout (matmul_pack.c). Each computes
 * exactly the integers and float operations of the scalar reference
 * (matmul_ref.c), 8 output rows per vector, so a weight tile is read from
 * memory once per SD_SCHUNK activation rows. Q8_0 and Q4_K (the formats of
 * the target models) run span by span with the accumulators of a few rows in
 * registers (sd_avx2_span_tile over q8_0_rows, q4_k_rows; Q2_K, Q3_K, IQ4_NL
 * and IQ4_XS likewise in matmul_lowbit_avx2.c); Q4_K with more rows than
 * one group instead unpacks each sub-block once for all rows (q4_k_all); the other
 * types one weight block at a time for groups of up to SD_GRP rows
 * (block_rows). */
#include "numerics/kernels/x86/matmul_avx2.h"

/* ---- activation quantization: the scalar quantize_block, 8 floats at a time ---- */

INLINE float hmax8(__m256 v) {
    __m128 m = _mm_max_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    m = _mm_max_ps(m, _mm_movehl_ps(m, m));
    m = _mm_max_ss(m, _mm_shuffle_ps(m, m, 1));
    return _mm_cvtss_f32(m);
}

static float quantize_block_avx2(const float *x, int n, int8_t *q) {
    const __m256 sign = _mm256_set1_ps(-0.0f);
    __m256 vmax = _mm256_setzero_ps();
    for (int i = 0; i < n; i += 8) vmax = _mm256_max_ps(vmax, _mm256_andnot_ps(sign, _mm256_loadu_ps(x + i)));
    float d = hmax8(vmax) / 127.0f;
    __m256 id = _mm256_set1_ps(d != 0.0f ? 1.0f / d : 0.0f);
    const __m256 lo = _mm256_set1_ps(-127.0f), hi = _mm256_set1_ps(127.0f);
    const __m256i perm = _mm256_setr_epi32(0, 4, 1, 5, 2, 6, 3, 7);
    for (int i = 0; i < n; i += 32) {
        __m256i v[4];
        for (int j = 0; j < 4; j++) {
            __m256 r = _mm256_round_ps(_mm256_mul_ps(_mm256_loadu_ps(x + i + 8 * j), id),
                                       _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            r = _mm256_min_ps(_mm256_max_ps(r, lo), hi); /* max_ps(NaN, lo) = lo, as the scalar clamp */
            v[j] = _mm256_cvtps_epi32(r);
        }
        __m256i p = _mm256_packs_epi16(_mm256_packs_epi32(v[0], v[1]), _mm256_packs_epi32(v[2], v[3]));
        _mm256_storeu_si256((__m256i *)(q + i), _mm256_permutevar8x32_epi32(p, perm));
    }
    return d;
}

void sd_act_quantize_row_avx2(sd_act *a, int s, const float *x) {
    int8_t *q = a->q + (size_t)s * a->n_in;
    for (int64_t b = 0; b < a->nb; b++) {
        int8_t *qb = q + b * a->block;
        a->d[(size_t)s * a->nb + b] = quantize_block_avx2(x + b * a->block, a->block, qb);
        sd_act_block_sums(qb, a->block, a->sum + ((size_t)s * a->nb + b) * a->nsum);
    }
}

/* ---- quantized tiles ---- */

#define SD_GRP 8 /* activation rows per pass over a decoded block */

typedef struct grp {
    const int8_t *xq[SD_GRP]; /* activation block of each row in the group */
    const int16_t *xs[SD_GRP];
    float dx[SD_GRP];
} grp;

INLINE void grp_set(grp *g, const sd_act *a, int s, int64_t b, int N) {
    _Pragma("GCC unroll 16")
    for (int n = 0; n < N; n++) {
        size_t sb = (size_t)(s + n) * (size_t)a->nb + (size_t)b;
        g->xq[n] = a->q + (size_t)(s + n) * (size_t)a->n_in + (size_t)b * (size_t)a->block;
        g->xs[n] = a->sum + sb * (size_t)a->nsum;
        g->dx[n] = a->d[sb];
    }
}

/* Q4_0, Q4_1, Q5_0, Q5_1: unsigned values x signed activations. int16 sums of
 * maddubs: 8 fit for 4-bit values (8 * 2 * 15 * 127 = 30480), 4 for 5-bit ones
 * (31496). Minus off * block sum; plus the min term for Q4_1/Q5_1. so: offset
 * of d[8] in the chunk (m[8] follows). */
INLINE void q32_grp(const __m256i *u, const uint8_t *c, int so, int bits5, int has_min, int off, const grp *g,
                    __m256 *acc, int N) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256i isum[SD_GRP];
    _Pragma("GCC unroll 16")
    for (int n = 0; n < N; n++) isum[n] = _mm256_set1_epi32(-off * g->xs[n][0]);
    for (int h = 0; h < 8; h += bits5 ? 4 : 8) {
        __m256i t16[SD_GRP];
        _Pragma("GCC unroll 16")
        for (int n = 0; n < N; n++) t16[n] = _mm256_setzero_si256();
        for (int k = h; k < h + (bits5 ? 4 : 8); k++)
            _Pragma("GCC unroll 16")
            for (int n = 0; n < N; n++)
                t16[n] = _mm256_add_epi16(t16[n], _mm256_maddubs_epi16(u[k], bcast32(g->xq[n] + 4 * k)));
        _Pragma("GCC unroll 16")
        for (int n = 0; n < N; n++) isum[n] = _mm256_add_epi32(isum[n], _mm256_madd_epi16(t16[n], ones));
    }
    __m256 dw = _mm256_load_ps((const float *)(c + so));
    _Pragma("GCC unroll 16")
    for (int n = 0; n < N; n++) {
        acc[n] = fma_block(isum[n], dw, g->dx[n], acc[n]);
        if (has_min) {
            __m256 mw = _mm256_load_ps((const float *)(c + so + 32));
            acc[n] = _mm256_fmadd_ps(_mm256_set1_ps((float)g->xs[n][0]), _mm256_mul_ps(mw, _mm256_set1_ps(g->dx[n])),
                                     acc[n]);
        }
    }
}

/* u[k] = values 4k..4k+3 of the 8 rows (hb: the vector of 5th bits, or NULL). */
static void q32_decode(const uint8_t *c, const uint8_t *hb, __m256i *u) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), b4 = _mm256_set1_epi8(0x10);
    for (int k = 0; k < 4; k++) {
        __m256i v = _mm256_load_si256((const __m256i *)(c + 32 * k));
        u[k] = _mm256_and_si256(v, m4);
        u[k + 4] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
    }
    if (hb) {
        __m256i h = _mm256_load_si256((const __m256i *)hb);
        __m256i sh[8] = {_mm256_slli_epi16(h, 4), _mm256_slli_epi16(h, 3), _mm256_slli_epi16(h, 2),
                         _mm256_slli_epi16(h, 1), h, _mm256_srli_epi16(h, 1), _mm256_srli_epi16(h, 2),
                         _mm256_srli_epi16(h, 3)};
        for (int k = 0; k < 8; k++) u[k] = _mm256_or_si256(u[k], _mm256_and_si256(sh[k], b4));
    }
}

/* Q4_K: u[8j+m] = sub-block j dword m; sc[j] = (scale, scale) int16 pairs per
 * row; mn[i] = (min 2i, min 2i+1) int16 pairs per row. */
typedef struct k4_dec {
    __m256i u[64], sc[8], mn[4];
} k4_dec;

/* Q4_K and Q5_K (hb: the Q5_K high-bit vectors, else NULL; so: offset of the scales). */
static void q4_k_decode(const uint8_t *c, const uint8_t *hb, int so, k4_dec *k4) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), b4 = _mm256_set1_epi8(0x10);
    for (int i = 0; i < 4; i++)
        for (int m = 0; m < 8; m++) {
            __m256i v = _mm256_load_si256((const __m256i *)(c + 32 * (8 * i + m)));
            k4->u[16 * i + m] = _mm256_and_si256(v, m4);
            k4->u[16 * i + 8 + m] = _mm256_and_si256(_mm256_srli_epi16(v, 4), m4);
        }
    if (hb)
        for (int m = 0; m < 8; m++) { /* bit j of H_m -> bit 4 of sub-block j's dword m */
            __m256i h = _mm256_load_si256((const __m256i *)(hb + 32 * m));
            __m256i sh[8] = {_mm256_slli_epi16(h, 4), _mm256_slli_epi16(h, 3), _mm256_slli_epi16(h, 2),
                             _mm256_slli_epi16(h, 1), h, _mm256_srli_epi16(h, 1), _mm256_srli_epi16(h, 2),
                             _mm256_srli_epi16(h, 3)};
            for (int j = 0; j < 8; j++) k4->u[8 * j + m] = _mm256_or_si256(k4->u[8 * j + m], _mm256_and_si256(sh[j], b4));
        }
    for (int j = 0; j < 8; j++) {
        __m256i s = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(c + so + 8 * j)));
        k4->sc[j] = _mm256_or_si256(s, _mm256_slli_epi32(s, 16));
    }
    for (int i = 0; i < 4; i++) {
        __m256i m0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(c + so + 64 + 16 * i)));
        __m256i m1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(c + so + 64 + 16 * i + 8)));
        k4->mn[i] = _mm256_or_si256(m0, _mm256_slli_epi32(m1, 16));
    }
}

/* int16 sums of maddubs: 8 of them fit for 4-bit values (8 * 2 * 15 * 127 =
 * 30480), 4 for 5-bit ones (4 * 2 * 31 * 127 = 31496): bits5 splits each
 * sub-block in two halves. */
INLINE void q4_k_grp(const k4_dec *k4, const uint8_t *c, int so, int bits5, const grp *g, __m256 *acc, int N) {
    __m256i isum[SD_GRP], summ[SD_GRP];
    _Pragma("GCC unroll 16")
    for (int n = 0; n < N; n++) isum[n] = summ[n] = _mm256_setzero_si256();
    for (int j = 0; j < 8; j++)
        for (int h = 0; h < 8; h += bits5 ? 4 : 8) {
            __m256i t16[SD_GRP];
            _Pragma("GCC unroll 16")
            for (int n = 0; n < N; n++) t16[n] = _mm256_setzero_si256();
            for (int m = h; m < h + (bits5 ? 4 : 8); m++)
                _Pragma("GCC unroll 16")
                for (int n = 0; n < N; n++)
                    t16[n] = _mm256_add_epi16(t16[n], _mm256_maddubs_epi16(k4->u[8 * j + m], bcast32(g->xq[n] + 32 * j + 4 * m)));
            _Pragma("GCC unroll 16")
            for (int n = 0; n < N; n++) isum[n] = _mm256_add_epi32(isum[n], _mm256_madd_epi16(t16[n], k4->sc[j]));
        }
    for (int i = 0; i < 4; i++)
        _Pragma("GCC unroll 16")
        for (int n = 0; n < N; n++)
            summ[n] = _mm256_add_epi32(summ[n], _mm256_madd_epi16(k4->mn[i], bcast32(g->xs[n] + 16 + 2 * i)));
    __m256 dw = _mm256_load_ps((const float *)(c + so + 128)), dmin = _mm256_load_ps((const float *)(c + so + 160));
    const __m256 neg = _mm256_set1_ps(-0.0f);
    _Pragma("GCC unroll 16")
    for (int n = 0; n < N; n++) {
        __m256 dxv = _mm256_set1_ps(g->dx[n]);
        acc[n] = fma_block(isum[n], dw, g->dx[n], acc[n]);
        acc[n] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(summ[n]), _mm256_xor_ps(_mm256_mul_ps(dmin, dxv), neg), acc[n]);
    }
}

/* Q6_K: u[e] = values 4e..4e+3 (0..63) of the 8 rows; sc[j] = (scale, scale)
 * per row for the 16-value sub-block j; scp[i] = (scale 2i, scale 2i+1). */
typedef struct k6_dec {
    __m256i u[64], sc[16], scp[8];
} k6_dec;

static void q6_k_decode(const uint8_t *c, k6_dec *k6) {
    const __m256i m4 = _mm256_set1_epi8(0x0F), m2 = _mm256_set1_epi8(0x30);
    for (int k = 0; k < 16; k++) {
        __m256i l0 = _mm256_load_si256((const __m256i *)(c + 32 * k));
        __m256i l1 = _mm256_load_si256((const __m256i *)(c + 32 * (k + 16)));
        __m256i h = _mm256_load_si256((const __m256i *)(c + 1024 + 32 * k));
        k6->u[k] = _mm256_or_si256(_mm256_and_si256(l0, m4), _mm256_and_si256(_mm256_slli_epi16(h, 4), m2));
        k6->u[k + 16] = _mm256_or_si256(_mm256_and_si256(l1, m4), _mm256_and_si256(_mm256_slli_epi16(h, 2), m2));
        k6->u[k + 32] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4), _mm256_and_si256(h, m2));
        k6->u[k + 48] = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
                                        _mm256_and_si256(_mm256_srli_epi16(h, 2), m2));
    }
    const __m256i lo16 = _mm256_set1_epi32(0xFFFF);
    __m256i s[16];
    for (int j = 0; j < 16; j++) {
        s[j] = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(c + 1536 + 8 * j)));
        k6->sc[j] = _mm256_or_si256(_mm256_and_si256(s[j], lo16), _mm256_slli_epi32(s[j], 16));
    }
    for (int i = 0; i < 8; i++)
        k6->scp[i] = _mm256_or_si256(_mm256_and_si256(s[2 * i], lo16), _mm256_slli_epi32(s[2 * i + 1], 16));
}

/* Two maddubs per int16 sum: 2 * 2 * 63 * 127 = 32004 fits. */
INLINE void q6_k_grp(const k6_dec *k6, const uint8_t *c, const grp *g, __m256 *acc, int N) {
    __m256i isum[SD_GRP];
    _Pragma("GCC unroll 16")
    for (int n = 0; n < N; n++) isum[n] = _mm256_setzero_si256();
    for (int j = 0; j < 16; j++)
        _Pragma("GCC unroll 16")
        for (int n = 0; n < N; n++) {
            const int8_t *x = g->xq[n] + 16 * j;
            __m256i ta = _mm256_add_epi16(_mm256_maddubs_epi16(k6->u[4 * j], bcast32(x)),
                                          _mm256_maddubs_epi16(k6->u[4 * j + 1], bcast32(x + 4)));
            __m256i tb = _mm256_add_epi16(_mm256_maddubs_epi16(k6->u[4 * j + 2], bcast32(x + 8)),
                                          _mm256_maddubs_epi16(k6->u[4 * j + 3], bcast32(x + 12)));
            isum[n] = _mm256_add_epi32(isum[n], _mm256_add_epi32(_mm256_madd_epi16(ta, k6->sc[j]),
                                                                 _mm256_madd_epi16(tb, k6->sc[j])));
        }
    __m256 dw = _mm256_load_ps((const float *)(c + 1664));
    _Pragma("GCC unroll 16")
    for (int n = 0; n < N; n++) {
        __m256i corr = _mm256_setzero_si256();
        for (int i = 0; i < 8; i++)
            corr = _mm256_add_epi32(corr, _mm256_madd_epi16(k6->scp[i], bcast32(g->xs[n] + 2 * i)));
        isum[n] = _mm256_sub_epi32(isum[n], _mm256_slli_epi32(corr, 5));
        acc[n] = fma_block(isum[n], dw, g->dx[n], acc[n]);
    }
}

/* One block of the tile for activation rows [s, s+ns) of a chunk (the types
 * without a span kernel: Q4_0, Q4_1, Q5_0, Q5_1, Q5_K, Q6_K). */
static void block_rows(uint32_t type, const uint8_t *c, const sd_act *a, int s, int ns, int64_t b, __m256 *acc) {
    union {
        __m256i u[8];
        k4_dec k4;
        k6_dec k6;
    } dec;
    grp g;
    if (type == GGML_TYPE_Q4_0 || type == GGML_TYPE_Q4_1) q32_decode(c, NULL, dec.u);
    else if (type == GGML_TYPE_Q5_0 || type == GGML_TYPE_Q5_1) q32_decode(c, c + 128, dec.u);
    else if (type == GGML_TYPE_Q5_K) q4_k_decode(c, c + 1024, 1280, &dec.k4);
    else if (type == GGML_TYPE_Q6_K) q6_k_decode(c, &dec.k6);
    int i = 0;
#define GROUP(N)                                                          \
    do {                                                                  \
        grp_set(&g, a, s + i, b, N);                                      \
        switch (type) {                                                   \
        case GGML_TYPE_Q4_0: q32_grp(dec.u, c, 128, 0, 0, 8, &g, acc + i, N); break; \
        case GGML_TYPE_Q4_1: q32_grp(dec.u, c, 128, 0, 1, 0, &g, acc + i, N); break; \
        case GGML_TYPE_Q5_0: q32_grp(dec.u, c, 160, 1, 0, 16, &g, acc + i, N); break; \
        case GGML_TYPE_Q5_1: q32_grp(dec.u, c, 160, 1, 1, 0, &g, acc + i, N); break; \
        case GGML_TYPE_Q5_K: q4_k_grp(&dec.k4, c, 1280, 1, &g, acc + i, N); break; \
        case GGML_TYPE_Q6_K: q6_k_grp(&dec.k6, c, &g, acc + i, N); break; \
        }                                                                 \
        i += N;                                                           \
    } while (0)
    /* Groups of up to SD_GRP rows, the rest in one group: each group reads the
     * block's vectors once. Grouping changes no arithmetic, only speed. */
    while (ns - i >= SD_GRP) GROUP(SD_GRP);
    switch (ns - i) {
    case 7: GROUP(7); break;
    case 6: GROUP(6); break;
    case 5: GROUP(5); break;
    case 4: GROUP(4); break;
    case 3: GROUP(3); break;
    case 2: GROUP(2); break;
    case 1: GROUP(1); break;
    }
#undef GROUP
}

/* ---- Q8_0 tiles: accumulators in registers ----
 * Rows of a chunk run in groups of at most Q8_GRP, each group over a span of
 * Q8_SPAN blocks with its accumulators (and the sums of the current block) in
 * registers: 2 * Q8_GRP + 3 vectors. The span's weights (Q8_SPAN * 272 bytes)
 * stay in L1 while the groups pass over it; a lone group (S <= Q8_GRP, decode)
 * streams the whole tile in one pass. The arithmetic per element is the
 * reference's: exact block sums, then acc = fma(isum, d_w * d_x, acc) in block
 * order, so grouping and spans change only speed. */
#define Q8_GRP 5 /* S = 9: groups of 5 + 4 (2-5% faster than 3 + 3 + 3, sd-matmul_probe) */
#define Q8_SPAN 8
#define Q8_CHUNK 256 /* packed int bytes per (tile, block); the f16 scales follow the tile's ints */
/* Software prefetch of the weight stream 8 chunks (2.3 KB) ahead: the
 * hardware prefetcher alone left a 2-thread decode at ~8 GB/s; with it the
 * 0.6B-shape probe ran 15-25% faster at S = 1..4 (sd-matmul_probe, cpu time). */
#define Q8_PREFETCH (8 * Q8_CHUNK)

INLINE void q8_0_span(const uint8_t *c, const uint8_t *d16, const sd_act *a, int s, int64_t b0, int64_t b1,
                      __m256 *acc_io, int N) {
    const __m256i ones = _mm256_set1_epi16(1);
    __m256 acc[Q8_GRP];
    const int8_t *xq[Q8_GRP];
    const float *xd[Q8_GRP];
    _Pragma("GCC unroll 5")
    for (int n = 0; n < N; n++) {
        acc[n] = acc_io[n];
        xq[n] = a->q + (size_t)(s + n) * (size_t)a->n_in + (size_t)b0 * SD_QK;
        xd[n] = a->d + (size_t)(s + n) * (size_t)a->nb + (size_t)b0;
    }
    for (int64_t b = b0; b < b1; b++, c += Q8_CHUNK, d16 += 16) {
        for (int l = 0; l < Q8_CHUNK; l += 64) _mm_prefetch((const char *)c + Q8_PREFETCH + l, _MM_HINT_T0);
        __m256i isum[Q8_GRP];
        _Pragma("GCC unroll 5")
        for (int n = 0; n < N; n++) isum[n] = _mm256_setzero_si256();
        _Pragma("GCC unroll 8")
        for (int k = 0; k < 8; k++) {
            /* loadu: a tile's ints are 32-byte aligned only when nb is even */
            __m256i w = _mm256_loadu_si256((const __m256i *)(c + 32 * k)), aw = _mm256_abs_epi8(w);
            _Pragma("GCC unroll 5")
            for (int n = 0; n < N; n++) {
                __m256i p = _mm256_maddubs_epi16(aw, _mm256_sign_epi8(bcast32(xq[n] + 4 * k), w));
                isum[n] = _mm256_add_epi32(isum[n], _mm256_madd_epi16(p, ones));
                if (N > 1) KEEP_ACC(isum[n]);
            }
        }
        __m256 dw = _mm256_cvtph_ps(_mm_loadu_si128((const __m128i *)d16)); /* exact, as sd_fp16_to_fp32 */
        _Pragma("GCC unroll 5")
        for (int n = 0; n < N; n++) {
            acc[n] = fma_block(isum[n], dw, *xd[n], acc[n]);
            xq[n] += SD_QK;
            xd[n]++;
        }
    }
    _Pragma("GCC unroll 5")
    for (int n = 0; n < N; n++) acc_io[n] = acc[n];
}

/* Rows [0, ns) of a chunk starting at row s0, over blocks [b0, b1). */
static void q8_0_rows(const uint8_t *tile, const sd_act *a, int s0, int ns, int64_t b0, int64_t b1, __m256 *acc) {
    const uint8_t *c = tile + (size_t)b0 * Q8_CHUNK, *d16 = tile + (size_t)a->nb * Q8_CHUNK + (size_t)b0 * 16;
    int groups = (ns + Q8_GRP - 1) / Q8_GRP;
    for (int g = 0, i = 0; g < groups; g++) {
        int n = ns / groups + (g < ns % groups); /* balanced: 9 rows = 5 + 4 */
        switch (n) {
        case 5: q8_0_span(c, d16, a, s0 + i, b0, b1, acc + i, 5); break;
        case 4: q8_0_span(c, d16, a, s0 + i, b0, b1, acc + i, 4); break;
        case 3: q8_0_span(c, d16, a, s0 + i, b0, b1, acc + i, 3); break;
        case 2: q8_0_span(c, d16, a, s0 + i, b0, b1, acc + i, 2); break;
        default: q8_0_span(c, d16, a, s0 + i, b0, b1, acc + i, 1); break;
        }
        i += n;
    }
}

void sd_avx2_span_tile(span_rows_fn rows, int grp, int64_t span, const uint8_t *tile, const sd_act *a, int s0,
                       int ns, __m256 *acc) {
    if (ns <= grp) {
        rows(tile, a, s0, ns, 0, a->nb, acc);
        return;
    }
    for (int64_t b0 = 0; b0 < a->nb; b0 += span) rows(tile, a, s0, ns, b0, b0 + span < a->nb ? b0 + span : a->nb, acc);
}

/* ---- Q4_K tiles: decoded on the fly ----
 * Rows run in groups of at most K4_GRP over spans of K4_SPAN blocks (as the
 * Q8_0 tiles); the nibbles are unpacked in registers as they are used
 * instead of through the 2.4 KB k4_dec of block_rows. Same integers as
 * q4_k_grp: int16 sums of the 8 maddubs of a 32-value sub-block, times its
 * scale (madd), summed in int32; the min term; then the same two fmas per
 * block in block order.
 * 6 rows: t16, isum (and the min sums after) for 6 rows plus the nibbles
 * and the scales fit the 16 registers; an S = 9 verify is then 2 unpackings
 * of each block instead of 3 (single-thread L2-resident 1024 x 256: S=9
 * 43-54 -> 40-42 us; S=5..6 ~10% faster). */
#define K4_GRP 6
#define K4_CHUNK 1184
#define K4_PREFETCH (2 * K4_CHUNK)

INLINE __m256i k4_scale_pairs(const uint8_t *p) { /* 8 u8 scales -> (scale, scale) int16 pairs per row */
    __m256i s = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p));
    return _mm256_or_si256(s, _mm256_slli_epi32(s, 16));
}

INLINE void q4_k_span(const uint8_t *c, const sd_act *a, int s, int64_t b0, int64_t b1, __m256 *acc_io, int N) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256 neg = _mm256_set1_ps(-0.0f);
    __m256 acc[K4_GRP];
    const int8_t *xq[K4_GRP];
    const int16_t *xs[K4_GRP];
    const float *xd[K4_GRP];
    _Pragma("GCC unroll 8")
    for (int n = 0; n < N; n++) {
        acc[n] = acc_io[n];
        xq[n] = a->q + (size_t)(s + n) * (size_t)a->n_in + (size_t)b0 * SD_QK_K;
        xs[n] = a->sum + ((size_t)(s + n) * (size_t)a->nb + (size_t)b0) * (size_t)a->nsum;
        xd[n] = a->d + (size_t)(s + n) * (size_t)a->nb + (size_t)b0;
    }
    for (int64_t b = b0; b < b1; b++, c += K4_CHUNK) {
        for (int l = 0; l < K4_CHUNK; l += 64) _mm_prefetch((const char *)c + K4_PREFETCH + l, _MM_HINT_T0);
        __m256i isum[K4_GRP], summ[K4_GRP];
        _Pragma("GCC unroll 8")
        for (int n = 0; n < N; n++) isum[n] = summ[n] = _mm256_setzero_si256();
        for (int j = 0; j < 8; j++) { /* sub-block j: nibble half j % 2 of vectors 8(j/2) .. 8(j/2)+7 */
            const uint8_t *v0 = c + 32 * 8 * (j / 2);
            const int sh = 4 * (j % 2);
            __m256i t16[K4_GRP];
            _Pragma("GCC unroll 8")
            for (int n = 0; n < N; n++) t16[n] = _mm256_setzero_si256();
            _Pragma("GCC unroll 8")
            for (int m = 0; m < 8; m++) {
                __m256i u = _mm256_and_si256(_mm256_srli_epi16(_mm256_load_si256((const __m256i *)(v0 + 32 * m)), sh), m4);
                _Pragma("GCC unroll 8")
                for (int n = 0; n < N; n++) {
                    t16[n] = _mm256_add_epi16(t16[n], _mm256_maddubs_epi16(u, bcast32(xq[n] + 32 * j + 4 * m)));
                    if (N > 1) KEEP_ACC(t16[n]);
                }
            }
            __m256i sc = k4_scale_pairs(c + 1024 + 8 * j);
            _Pragma("GCC unroll 8")
            for (int n = 0; n < N; n++) {
                isum[n] = _mm256_add_epi32(isum[n], _mm256_madd_epi16(t16[n], sc));
                if (N > 1) KEEP_ACC(isum[n]);
            }
        }
        for (int i = 0; i < 4; i++) {
            __m256i m0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(c + 1088 + 16 * i)));
            __m256i m1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(c + 1088 + 16 * i + 8)));
            __m256i mn = _mm256_or_si256(m0, _mm256_slli_epi32(m1, 16));
            _Pragma("GCC unroll 8")
            for (int n = 0; n < N; n++) summ[n] = _mm256_add_epi32(summ[n], _mm256_madd_epi16(mn, bcast32(xs[n] + 16 + 2 * i)));
        }
        __m256 dw = _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(c + 1152))); /* f16: exact */
        __m256 dmin = _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(c + 1168)));
        _Pragma("GCC unroll 8")
        for (int n = 0; n < N; n++) {
            __m256 dxv = _mm256_set1_ps(*xd[n]);
            acc[n] = fma_block(isum[n], dw, *xd[n], acc[n]);
            acc[n] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(summ[n]), _mm256_xor_ps(_mm256_mul_ps(dmin, dxv), neg), acc[n]);
            xq[n] += SD_QK_K;
            xs[n] += a->nsum;
            xd[n]++;
        }
    }
    _Pragma("GCC unroll 8")
    for (int n = 0; n < N; n++) acc_io[n] = acc[n];
}

#define K4_SPAN 4 /* blocks (4.8 KB) passed over by every row group while in L1 */

/* ---- Q4_K, several rows: each sub-block unpacked once for all rows ----
 * For ns >= K4_ALL_MIN rows: per sub-block j the 8 nibble vectors are unpacked into
 * registers once, then every row runs its 8 maddubs against them; the int32
 * block sums live in a small array (L1) instead of registers, so the number
 * of rows is not limited by the 16 ymm registers and a verify of 9 rows
 * unpacks each block once instead of twice (groups 5 + 4 of q4_k_span).
 * Same integers as q4_k_span (each int16 sum holds the same 8 products,
 * each int32 sum the same sub-block terms; integer sums are exact in any
 * order) and the same two fmas per block in block order. */
/* Rows from which q4_k_all runs: where the spans need two row groups (and so
 * two unpackings). Up to K4_GRP rows one span group streams the tile with
 * everything in registers; q4_k_all measured no better there (S = 2..6,
 * sd-matmul_probe, loaded machine: within the noise, some S slower). */
#define K4_ALL_MIN (K4_GRP + 1)

static void q4_k_all(const uint8_t *tile, const sd_act *a, int s0, int ns, __m256 *acc) {
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256 neg = _mm256_set1_ps(-0.0f);
    __m256i isum[SD_SCHUNK];
    const int8_t *xq0 = a->q + (size_t)s0 * (size_t)a->n_in;
    const size_t xstride = (size_t)a->n_in;
    const uint8_t *c = tile;
    for (int64_t b = 0; b < a->nb; b++, c += K4_CHUNK) {
        _Pragma("GCC unroll 19")
        for (int l = 0; l < K4_CHUNK; l += 64) _mm_prefetch((const char *)c + K4_PREFETCH + l, _MM_HINT_T0);
        const int8_t *xb = xq0 + (size_t)b * SD_QK_K;
        _Pragma("GCC unroll 8")
        for (int j = 0; j < 8; j++) { /* sub-block j: nibble half j % 2 of vectors 8(j/2) .. 8(j/2)+7 */
            const uint8_t *v0 = c + 32 * 8 * (j / 2);
            const int sh = 4 * (j % 2);
            __m256i u[8];
            _Pragma("GCC unroll 8")
            for (int m = 0; m < 8; m++)
                u[m] = _mm256_and_si256(_mm256_srli_epi16(_mm256_load_si256((const __m256i *)(v0 + 32 * m)), sh), m4);
            __m256i sc = k4_scale_pairs(c + 1024 + 8 * j);
            const int8_t *x = xb + 32 * j;
            for (int n = 0; n < ns; n++, x += xstride) {
                __m256i t16 = _mm256_maddubs_epi16(u[0], bcast32(x));
                _Pragma("GCC unroll 8")
                for (int m = 1; m < 8; m++) t16 = _mm256_add_epi16(t16, _mm256_maddubs_epi16(u[m], bcast32(x + 4 * m)));
                __m256i p = _mm256_madd_epi16(t16, sc);
                isum[n] = j == 0 ? p : _mm256_add_epi32(isum[n], p);
            }
        }
        __m256i mn[4];
        _Pragma("GCC unroll 4")
        for (int i = 0; i < 4; i++) {
            __m256i m0 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(c + 1088 + 16 * i)));
            __m256i m1 = _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(c + 1088 + 16 * i + 8)));
            mn[i] = _mm256_or_si256(m0, _mm256_slli_epi32(m1, 16));
        }
        __m256 dw = _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(c + 1152))); /* f16: exact */
        __m256 dmin = _mm256_cvtph_ps(_mm_load_si128((const __m128i *)(c + 1168)));
        for (int n = 0; n < ns; n++) {
            const size_t sb = (size_t)(s0 + n) * (size_t)a->nb + (size_t)b;
            const int16_t *xs = a->sum + sb * (size_t)a->nsum;
            const float dx = a->d[sb];
            __m256i summ = _mm256_madd_epi16(mn[0], bcast32(xs + 16));
            _Pragma("GCC unroll 3")
            for (int i = 1; i < 4; i++) summ = _mm256_add_epi32(summ, _mm256_madd_epi16(mn[i], bcast32(xs + 16 + 2 * i)));
            acc[n] = fma_block(isum[n], dw, dx, acc[n]);
            acc[n] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(summ), _mm256_xor_ps(_mm256_mul_ps(dmin, _mm256_set1_ps(dx)), neg),
                                     acc[n]);
        }
    }
}

static void q4_k_rows(const uint8_t *tile, const sd_act *a, int s0, int ns, int64_t b0, int64_t b1, __m256 *acc) {
    const uint8_t *c = tile + (size_t)b0 * K4_CHUNK;
    int groups = (ns + K4_GRP - 1) / K4_GRP;
    for (int g = 0, i = 0; g < groups; g++) {
        int n = ns / groups + (g < ns % groups);
        switch (n) {
        case 6: q4_k_span(c, a, s0 + i, b0, b1, acc + i, 6); break;
        case 5: q4_k_span(c, a, s0 + i, b0, b1, acc + i, 5); break;
        case 4: q4_k_span(c, a, s0 + i, b0, b1, acc + i, 4); break;
        case 3: q4_k_span(c, a, s0 + i, b0, b1, acc + i, 3); break;
        case 2: q4_k_span(c, a, s0 + i, b0, b1, acc + i, 2); break;
        default: q4_k_span(c, a, s0 + i, b0, b1, acc + i, 1); break;
        }
        i += n;
    }
}


/* Q4_K: q4_k_all reads the weights once for any number of rows, but from
 * about K4_GRP rows on its cost grows with S (compute-bound), which is what
 * the hint is for. */
int sd_matmul_avx2_pass_rows(uint32_t type) {
    const sd_wtype *wt = sd_wtype_get(type);
    if (type == GGML_TYPE_Q8_0) return Q8_GRP;
    if (type == GGML_TYPE_Q4_K) return K4_GRP;
    if (sd_lowbit_avx2_pass_rows(type)) return sd_lowbit_avx2_pass_rows(type);
    return wt && wt->block == 1 ? 4 : SD_GRP; /* float_grp rows; block_rows groups */
}

void sd_matmul_avx2_tile(const sd_matrix *m, const sd_wtype *wt, const sd_act *a, float *y, int64_t t) {
    const uint8_t *tile = (const uint8_t *)m->packed + (size_t)t * (size_t)a->nb * (size_t)wt->packed_bytes;
    int64_t o0 = t * SD_TILE;
    int rows = m->n_out - o0 < SD_TILE ? (int)(m->n_out - o0) : SD_TILE;
    __m256 acc[SD_SCHUNK];
    for (int s0 = 0; s0 < a->S; s0 += SD_SCHUNK) {
        int ns = a->S - s0 < SD_SCHUNK ? a->S - s0 : SD_SCHUNK;
        for (int s = 0; s < ns; s++) acc[s] = _mm256_setzero_ps();
        if (m->type == GGML_TYPE_Q8_0)
            sd_avx2_span_tile(q8_0_rows, Q8_GRP, Q8_SPAN, tile, a, s0, ns, acc);
        else if (m->type == GGML_TYPE_Q4_K && ns >= K4_ALL_MIN)
            q4_k_all(tile, a, s0, ns, acc);
        else if (m->type == GGML_TYPE_Q4_K)
            sd_avx2_span_tile(q4_k_rows, K4_GRP, K4_SPAN, tile, a, s0, ns, acc);
        else if (!sd_lowbit_avx2_tile(m->type, tile, a, s0, ns, acc))
            for (int64_t b = 0; b < a->nb; b++)
                block_rows(m->type, tile + (size_t)b * (size_t)wt->packed_bytes, a, s0, ns, b, acc);
        for (int s = 0; s < ns; s++) {
            float *ys = y + (size_t)(s0 + s) * (size_t)m->n_out + o0;
            if (rows == SD_TILE) {
                _mm256_storeu_ps(ys, acc[s]); /* (a memcpy of variable length is a libc call) */
            } else {
                float out[8];
                _mm256_storeu_ps(out, acc[s]);
                memcpy(ys, out, (size_t)rows * sizeof(float));
            }
        }
    }
}

/* ---- float weights: the order of sd_dot_f32, 4 activation rows per weight load ---- */

INLINE float hsum_tree(__m256 v) {
    __m128 s = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps(v, 1));
    s = _mm_add_ps(s, _mm_movehl_ps(s, s));
    return _mm_cvtss_f32(s) + _mm_cvtss_f32(_mm_shuffle_ps(s, s, 1));
}

INLINE __m256 load_w8(uint32_t type, const void *p) {
    if (type == GGML_TYPE_F32) return _mm256_loadu_ps((const float *)p);
    __m128i h = _mm_loadu_si128((const __m128i *)p);
    if (type == GGML_TYPE_F16) return _mm256_cvtph_ps(h);
    return _mm256_castsi256_ps(_mm256_slli_epi32(_mm256_cvtepu16_epi32(h), 16));
}

INLINE void float_grp(uint32_t type, const uint8_t *row, size_t es, const float *x, int64_t n_in, float *out, int N) {
    __m256 acc[4];
    _Pragma("GCC unroll 16")
    for (int n = 0; n < N; n++) acc[n] = _mm256_setzero_ps();
    int64_t i = 0;
    for (; i + 8 <= n_in; i += 8) {
        __m256 w = load_w8(type, row + (size_t)i * es);
        _Pragma("GCC unroll 16")
        for (int n = 0; n < N; n++) acc[n] = _mm256_fmadd_ps(w, _mm256_loadu_ps(x + (size_t)n * n_in + i), acc[n]);
    }
    if (i < n_in) { /* zero-padded tail, as the reference */
        uint8_t wt[32] = {0};
        memcpy(wt, row + (size_t)i * es, (size_t)(n_in - i) * es);
        __m256 w = load_w8(type, wt);
        _Pragma("GCC unroll 16")
        for (int n = 0; n < N; n++) {
            float xt[8] = {0};
            memcpy(xt, x + (size_t)n * n_in + i, (size_t)(n_in - i) * sizeof(float));
            acc[n] = _mm256_fmadd_ps(w, _mm256_loadu_ps(xt), acc[n]);
        }
    }
    _Pragma("GCC unroll 16")
    for (int n = 0; n < N; n++) out[n] = hsum_tree(acc[n]);
}

void sd_matmul_avx2_float_rows(const sd_matrix *m, const float *x, int S, float *y, int64_t o0, int64_t o1) {
    size_t es = m->type == GGML_TYPE_F32 ? 4 : 2;
    float out[4];
    for (int64_t o = o0; o < o1; o++) {
        const uint8_t *row = (const uint8_t *)m->data + (size_t)o * (size_t)m->n_in * es;
        int s = 0;
        for (; s + 4 <= S; s += 4) {
            float_grp(m->type, row, es, x + (size_t)s * m->n_in, m->n_in, out, 4);
            for (int n = 0; n < 4; n++) y[(size_t)(s + n) * m->n_out + o] = out[n];
        }
        for (; s < S; s++) {
            float_grp(m->type, row, es, x + (size_t)s * m->n_in, m->n_in, out, 1);
            y[(size_t)s * m->n_out + o] = out[0];
        }
    }
}
