/* AVX2 tiles for the low-bit weight types Q2_K, Q3_K, IQ4_NL, IQ4_XS, MXFP4 and
 * the IQ1/IQ2/IQ3 grid types on
 * their repacked layouts (matmul_pack.c). As the Q8_0 / Q4_K tiles in
 * matmul_avx2.c: rows run in groups whose accumulators stay in registers,
 * each group over a span of blocks kept in L1, and every element gets the
 * integers and the float operations of the scalar reference (matmul_ref.c
 * block_fma) in block order, so grouping changes only speed.
 *
 * int16 bounds of the maddubs sums (activations in [-127, 127]):
 *  Q2_K   values 0..3, 4 maddubs per 16-value sub-block: 4 * 2 * 3 * 127 = 3048
 *  Q3_K   values 0..7 (the -4 offset is taken out afterwards through the
 *         activation sums, as Q6_K's -32): 4 * 2 * 7 * 127 = 7112
 *  IQ4_*  signed table values (|v| <= 127) through |w| x sign(x, w): one
 *         maddubs is at most 2 * 127 * 127 = 32258, so each goes to int32
 *         (madd) on its own. */
#include "numerics/kernels/x86/matmul_avx2.h"
#include "numerics/quant/quant_blocks.h"

/* 8 u8 at p -> (v & mask, v & mask) int16 pairs per row, after >> shift. */
INLINE __m256i u8_pairs(const uint8_t *p, int shift, int mask) {
    __m256i s = _mm256_and_si256(_mm256_srli_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p)), shift),
                                 _mm256_set1_epi32(mask));
    return _mm256_or_si256(s, _mm256_slli_epi32(s, 16));
}

/* 8 i8 at p -> (v, v) int16 pairs per row. */
INLINE __m256i i8_pairs(const int8_t *p) {
    __m256i s = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p));
    return _mm256_or_si256(_mm256_and_si256(s, _mm256_set1_epi32(0xFFFF)), _mm256_slli_epi32(s, 16));
}

/* (v[j], v[j + 8]) int16 pairs per row from two runs of 8 i8 / u8 (>> shift). */
INLINE __m256i i8_pair2(const int8_t *p) {
    __m256i s0 = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)p));
    __m256i s1 = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(p + 8)));
    return _mm256_or_si256(_mm256_and_si256(s0, _mm256_set1_epi32(0xFFFF)), _mm256_slli_epi32(s1, 16));
}
INLINE __m256i u8_pair2(const uint8_t *p, int shift) {
    __m256i s0 = _mm256_srli_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)p)), shift);
    __m256i s1 = _mm256_srli_epi32(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p + 8))), shift);
    return _mm256_or_si256(s0, _mm256_slli_epi32(s1, 16));
}

/* Per-row pointers into the activations of rows s..s+N-1 from block b0. */
typedef struct act_ptrs {
    const int8_t *xq[8];
    const int16_t *xs[8];
    const float *xd[8];
} act_ptrs;

INLINE void act_ptrs_set(act_ptrs *p, const sd_act *a, int s, int64_t b0, int N) {
    _Pragma("GCC unroll 8")
    for (int n = 0; n < N; n++) {
        size_t sb = (size_t)(s + n) * (size_t)a->nb + (size_t)b0;
        p->xq[n] = a->q + (size_t)(s + n) * (size_t)a->n_in + (size_t)b0 * (size_t)a->block;
        p->xs[n] = a->sum + sb * (size_t)a->nsum;
        p->xd[n] = a->d + sb;
    }
}

INLINE void act_ptrs_next(act_ptrs *p, const sd_act *a, int N) {
    _Pragma("GCC unroll 8")
    for (int n = 0; n < N; n++) {
        p->xq[n] += a->block;
        p->xs[n] += a->nsum;
        p->xd[n]++;
    }
}

/* ---- Q2_K: x = d * sc * q - dmin * m, 16 sub-blocks of 16 ---- */
#define Q2K_CHUNK 704
#define Q2K_GRP 6

INLINE void q2_k_span(const uint8_t *c, const sd_act *a, int s, int64_t b0, int64_t b1, __m256 *acc_io, int N) {
    const __m256i m2 = _mm256_set1_epi8(3);
    const __m256 neg = _mm256_set1_ps(-0.0f);
    __m256 acc[8];
    act_ptrs p;
    act_ptrs_set(&p, a, s, b0, N);
    _Pragma("GCC unroll 8")
    for (int n = 0; n < N; n++) acc[n] = acc_io[n];
    for (int64_t b = b0; b < b1; b++, c += Q2K_CHUNK) {
        for (int l = 0; l < Q2K_CHUNK; l += 64) _mm_prefetch((const char *)c + 2 * Q2K_CHUNK + l, _MM_HINT_T0);
        __m256i isum[8], summ[8];
        _Pragma("GCC unroll 8")
        for (int n = 0; n < N; n++) isum[n] = summ[n] = _mm256_setzero_si256();
        _Pragma("GCC unroll 16")
        for (int j = 0; j < 16; j++) { /* values 16j..16j+15: bits 2(j/4) of vectors 4(j%4)..+3 */
            const uint8_t *v0 = c + 128 * (j % 4);
            __m256i t16[8];
            _Pragma("GCC unroll 8")
            for (int n = 0; n < N; n++) t16[n] = _mm256_setzero_si256();
            _Pragma("GCC unroll 4")
            for (int i = 0; i < 4; i++) {
                __m256i u = _mm256_and_si256(_mm256_srli_epi16(_mm256_load_si256((const __m256i *)(v0 + 32 * i)), 2 * (j / 4)), m2);
                _Pragma("GCC unroll 8")
                for (int n = 0; n < N; n++) {
                    t16[n] = _mm256_add_epi16(t16[n], _mm256_maddubs_epi16(u, bcast32(p.xq[n] + 16 * j + 4 * i)));
                    if (N > 1) KEEP_ACC(t16[n]);
                }
            }
            __m256i sc = u8_pairs(c + 512 + 8 * j, 0, 0xF);
            _Pragma("GCC unroll 8")
            for (int n = 0; n < N; n++) {
                isum[n] = _mm256_add_epi32(isum[n], _mm256_madd_epi16(t16[n], sc));
                if (N > 1) KEEP_ACC(isum[n]);
            }
        }
        _Pragma("GCC unroll 8")
        for (int i = 0; i < 8; i++) { /* min term: (m 2i, m 2i+1) x (sum16 2i, sum16 2i+1) */
            __m256i mn = u8_pair2(c + 512 + 16 * i, 4);
            _Pragma("GCC unroll 8")
            for (int n = 0; n < N; n++) summ[n] = _mm256_add_epi32(summ[n], _mm256_madd_epi16(mn, bcast32(p.xs[n] + 2 * i)));
        }
        __m256 dw = _mm256_load_ps((const float *)(c + 640)), dmin = _mm256_load_ps((const float *)(c + 672));
        _Pragma("GCC unroll 8")
        for (int n = 0; n < N; n++) {
            acc[n] = fma_block(isum[n], dw, *p.xd[n], acc[n]);
            acc[n] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(summ[n]),
                                     _mm256_xor_ps(_mm256_mul_ps(dmin, _mm256_set1_ps(*p.xd[n])), neg), acc[n]);
        }
        act_ptrs_next(&p, a, N);
    }
    _Pragma("GCC unroll 8")
    for (int n = 0; n < N; n++) acc_io[n] = acc[n];
}

/* ---- Q3_K: x = d * sc * (q - 4), sc signed, 16 sub-blocks of 16 ---- */
#define Q3K_CHUNK 928
#define Q3K_GRP 6

INLINE void q3_k_span(const uint8_t *c, const sd_act *a, int s, int64_t b0, int64_t b1, __m256 *acc_io, int N) {
    const __m256i m2 = _mm256_set1_epi8(3), b2 = _mm256_set1_epi8(4);
    __m256 acc[8];
    act_ptrs p;
    act_ptrs_set(&p, a, s, b0, N);
    _Pragma("GCC unroll 8")
    for (int n = 0; n < N; n++) acc[n] = acc_io[n];
    for (int64_t b = b0; b < b1; b++, c += Q3K_CHUNK) {
        for (int l = 0; l < Q3K_CHUNK; l += 64) _mm_prefetch((const char *)c + 2 * Q3K_CHUNK + l, _MM_HINT_T0);
        __m256i isum[8], corr[8];
        _Pragma("GCC unroll 8")
        for (int n = 0; n < N; n++) isum[n] = corr[n] = _mm256_setzero_si256();
        _Pragma("GCC unroll 16")
        for (int j = 0; j < 16; j++) {
            /* value-vector k = 4j + i: low bits at 2(j/4) of vector 4(j%4)+i,
             * third bit at bit j/2 of high vector 4(j%2)+i */
            const uint8_t *v0 = c + 128 * (j % 4), *h0 = c + 512 + 128 * (j % 2);
            const int hp = j / 2;
            __m256i t16[8];
            _Pragma("GCC unroll 8")
            for (int n = 0; n < N; n++) t16[n] = _mm256_setzero_si256();
            _Pragma("GCC unroll 4")
            for (int i = 0; i < 4; i++) {
                __m256i lo = _mm256_and_si256(_mm256_srli_epi16(_mm256_load_si256((const __m256i *)(v0 + 32 * i)), 2 * (j / 4)), m2);
                __m256i h = _mm256_load_si256((const __m256i *)(h0 + 32 * i));
                h = hp <= 2 ? _mm256_slli_epi16(h, 2 - hp) : _mm256_srli_epi16(h, hp - 2);
                __m256i u = _mm256_or_si256(lo, _mm256_and_si256(h, b2));
                _Pragma("GCC unroll 8")
                for (int n = 0; n < N; n++) {
                    t16[n] = _mm256_add_epi16(t16[n], _mm256_maddubs_epi16(u, bcast32(p.xq[n] + 16 * j + 4 * i)));
                    if (N > 1) KEEP_ACC(t16[n]);
                }
            }
            __m256i sc = i8_pairs((const int8_t *)(c + 768 + 8 * j));
            _Pragma("GCC unroll 8")
            for (int n = 0; n < N; n++) {
                isum[n] = _mm256_add_epi32(isum[n], _mm256_madd_epi16(t16[n], sc));
                if (N > 1) KEEP_ACC(isum[n]);
            }
        }
        _Pragma("GCC unroll 8")
        for (int i = 0; i < 8; i++) { /* offset 4: sum of sc_j * sum16_j, times 4 */
            __m256i scp = i8_pair2((const int8_t *)(c + 768 + 16 * i));
            _Pragma("GCC unroll 8")
            for (int n = 0; n < N; n++) corr[n] = _mm256_add_epi32(corr[n], _mm256_madd_epi16(scp, bcast32(p.xs[n] + 2 * i)));
        }
        __m256 dw = _mm256_load_ps((const float *)(c + 896));
        _Pragma("GCC unroll 8")
        for (int n = 0; n < N; n++)
            acc[n] = fma_block(_mm256_sub_epi32(isum[n], _mm256_slli_epi32(corr[n], 2)), dw, *p.xd[n], acc[n]);
        act_ptrs_next(&p, a, N);
    }
    _Pragma("GCC unroll 8")
    for (int n = 0; n < N; n++) acc_io[n] = acc[n];
}

/* ---- IQ4_NL / IQ4_XS: table values by pshufb, |w| x sign(x, w) ---- */
#define IQ4NL_CHUNK 160
#define IQ4XS_CHUNK 1120
#define IQ4_GRP 6

/* isum[n] += madd(|w| x sign(x_n, w), sc) for one vector of table indices. */
INLINE void iq4_vec(__m256i idx, __m256i table, __m256i sc, const act_ptrs *p, int off, __m256i *isum, int N) {
    __m256i w = _mm256_shuffle_epi8(table, idx), aw = _mm256_abs_epi8(w);
    _Pragma("GCC unroll 8")
    for (int n = 0; n < N; n++) {
        __m256i pr = _mm256_maddubs_epi16(aw, _mm256_sign_epi8(bcast32(p->xq[n] + off), w));
        isum[n] = _mm256_add_epi32(isum[n], _mm256_madd_epi16(pr, sc));
        if (N > 1) KEEP_ACC(isum[n]);
    }
}

/* nsub 1: IQ4_NL or MXFP4 by tb (sc = 1, d at 128); nsub 8: IQ4_XS (sc from
 * 1024, d at 1088). */
INLINE void iq4_span(const uint8_t *c, const sd_act *a, int s, int64_t b0, int64_t b1, __m256 *acc_io, int N,
                     int nsub, const int8_t *tb) {
    const int chunk = nsub == 1 ? IQ4NL_CHUNK : IQ4XS_CHUNK;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)tb));
    __m256 acc[8];
    act_ptrs p;
    act_ptrs_set(&p, a, s, b0, N);
    _Pragma("GCC unroll 8")
    for (int n = 0; n < N; n++) acc[n] = acc_io[n];
    for (int64_t b = b0; b < b1; b++, c += chunk) {
        for (int l = 0; l < chunk; l += 64) _mm_prefetch((const char *)c + 2 * chunk + l, _MM_HINT_T0);
        __m256i isum[8];
        _Pragma("GCC unroll 8")
        for (int n = 0; n < N; n++) isum[n] = _mm256_setzero_si256();
        for (int j = 0; j < nsub; j++) {
            __m256i sc = nsub == 1 ? _mm256_set1_epi16(1) : i8_pairs((const int8_t *)(c + 1024 + 8 * j));
            _Pragma("GCC unroll 4")
            for (int i = 0; i < 4; i++) {
                __m256i v = _mm256_load_si256((const __m256i *)(c + 32 * (4 * j + i)));
                iq4_vec(_mm256_and_si256(v, m4), table, sc, &p, 32 * j + 4 * i, isum, N);
                iq4_vec(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), table, sc, &p, 32 * j + 16 + 4 * i, isum, N);
            }
        }
        __m256 dw = _mm256_load_ps((const float *)(c + (nsub == 1 ? 128 : 1088)));
        _Pragma("GCC unroll 8")
        for (int n = 0; n < N; n++) acc[n] = fma_block(isum[n], dw, *p.xd[n], acc[n]);
        act_ptrs_next(&p, a, N);
    }
    _Pragma("GCC unroll 8")
    for (int n = 0; n < N; n++) acc_io[n] = acc[n];
}

INLINE void iq4_nl_span(const uint8_t *c, const sd_act *a, int s, int64_t b0, int64_t b1, __m256 *acc, int N) {
    iq4_span(c, a, s, b0, b1, acc, N, 1, sd_kvalues_iq4nl);
}
INLINE void iq4_xs_span(const uint8_t *c, const sd_act *a, int s, int64_t b0, int64_t b1, __m256 *acc, int N) {
    iq4_span(c, a, s, b0, b1, acc, N, 8, sd_kvalues_iq4nl);
}
INLINE void mxfp4_span(const uint8_t *c, const sd_act *a, int s, int64_t b0, int64_t b1, __m256 *acc, int N) {
    iq4_span(c, a, s, b0, b1, acc, N, 1, sd_kvalues_mxfp4);
}

/* ---- grid types (IQ1/IQ2/IQ3): the IQ4_XS tile over the type's levels ----
 * sub16 0: 8 odd scales per 32 (scales at 1024, d at 1088, as IQ4_XS);
 * sub16 1: 16 per 16 (IQ2_XS, IQ2_S, IQ1_M: scales at 1024, d at 1152), the
 * low nibbles of vectors 4j..4j+3 being sub-block 2j, the high ones 2j + 1.
 * |level| <= 62, |scale| <= 31: a maddubs pair is at most 2 * 62 * 127, a
 * block's int32 sum at most 256 * 62 * 127 * 31. */
#define GRID_CHUNK8 1120
#define GRID_CHUNK16 1184

INLINE void grid_span(const uint8_t *c, const sd_act *a, int s, int64_t b0, int64_t b1, __m256 *acc_io, int N,
                      int sub16, const int8_t *tb) {
    const int chunk = sub16 ? GRID_CHUNK16 : GRID_CHUNK8;
    const __m256i m4 = _mm256_set1_epi8(0x0F);
    const __m256i table = _mm256_broadcastsi128_si256(_mm_loadu_si128((const __m128i *)tb));
    __m256 acc[8];
    act_ptrs p;
    act_ptrs_set(&p, a, s, b0, N);
    _Pragma("GCC unroll 8")
    for (int n = 0; n < N; n++) acc[n] = acc_io[n];
    for (int64_t b = b0; b < b1; b++, c += chunk) {
        for (int l = 0; l < chunk; l += 64) _mm_prefetch((const char *)c + 2 * chunk + l, _MM_HINT_T0);
        __m256i isum[8];
        _Pragma("GCC unroll 8")
        for (int n = 0; n < N; n++) isum[n] = _mm256_setzero_si256();
        for (int j = 0; j < 8; j++) {
            __m256i sl = i8_pairs((const int8_t *)(c + 1024 + 8 * (sub16 ? 2 * j : j)));
            __m256i sh = sub16 ? i8_pairs((const int8_t *)(c + 1024 + 8 * (2 * j + 1))) : sl;
            _Pragma("GCC unroll 4")
            for (int i = 0; i < 4; i++) {
                __m256i v = _mm256_load_si256((const __m256i *)(c + 32 * (4 * j + i)));
                iq4_vec(_mm256_and_si256(v, m4), table, sl, &p, 32 * j + 4 * i, isum, N);
                iq4_vec(_mm256_and_si256(_mm256_srli_epi16(v, 4), m4), table, sh, &p, 32 * j + 16 + 4 * i, isum, N);
            }
        }
        __m256 dw = _mm256_load_ps((const float *)(c + (sub16 ? 1152 : 1088)));
        _Pragma("GCC unroll 8")
        for (int n = 0; n < N; n++) acc[n] = fma_block(isum[n], dw, *p.xd[n], acc[n]);
        act_ptrs_next(&p, a, N);
    }
    _Pragma("GCC unroll 8")
    for (int n = 0; n < N; n++) acc_io[n] = acc[n];
}

#define DEFINE_GRID_SPAN(name, sub16, type)                                                                    \
    INLINE void name(const uint8_t *c, const sd_act *a, int s, int64_t b0, int64_t b1, __m256 *acc, int N) { \
        int nsub;                                                                                              \
        grid_span(c, a, s, b0, b1, acc, N, sub16, sd_grid_tile_table(type, &nsub));                            \
    }
DEFINE_GRID_SPAN(grid8_iq2xxs_span, 0, GGML_TYPE_IQ2_XXS)
DEFINE_GRID_SPAN(grid8_iq3xxs_span, 0, GGML_TYPE_IQ3_XXS)
DEFINE_GRID_SPAN(grid8_iq3s_span, 0, GGML_TYPE_IQ3_S)
DEFINE_GRID_SPAN(grid8_iq1s_span, 0, GGML_TYPE_IQ1_S)
DEFINE_GRID_SPAN(grid16_iq2_span, 1, GGML_TYPE_IQ2_XS) /* IQ2_XS and IQ2_S: one table */
DEFINE_GRID_SPAN(grid16_iq1m_span, 1, GGML_TYPE_IQ1_M)

/* Rows [s0, s0+ns) over blocks [b0, b1), in balanced groups of at most GRP
 * (9 rows with GRP 6: 5 + 4). */
#define DEFINE_ROWS(name, span, GRP, CHUNK)                                                                    \
    static void name(const uint8_t *tile, const sd_act *a, int s0, int ns, int64_t b0, int64_t b1, __m256 *acc) { \
        const uint8_t *c = tile + (size_t)b0 * (CHUNK);                                                        \
        int groups = (ns + (GRP) - 1) / (GRP);                                                                 \
        for (int g = 0, i = 0; g < groups; g++) {                                                              \
            int n = ns / groups + (g < ns % groups);                                                           \
            switch (n) {                                                                                       \
            case 6: span(c, a, s0 + i, b0, b1, acc + i, 6); break;                                             \
            case 5: span(c, a, s0 + i, b0, b1, acc + i, 5); break;                                             \
            case 4: span(c, a, s0 + i, b0, b1, acc + i, 4); break;                                             \
            case 3: span(c, a, s0 + i, b0, b1, acc + i, 3); break;                                             \
            case 2: span(c, a, s0 + i, b0, b1, acc + i, 2); break;                                             \
            default: span(c, a, s0 + i, b0, b1, acc + i, 1); break;                                            \
            }                                                                                                  \
            i += n;                                                                                            \
        }                                                                                                      \
    }

_Static_assert(Q2K_GRP <= 6 && Q3K_GRP <= 6 && IQ4_GRP <= 6, "DEFINE_ROWS handles groups of up to 6 rows");

DEFINE_ROWS(q2_k_rows, q2_k_span, Q2K_GRP, Q2K_CHUNK)
DEFINE_ROWS(q3_k_rows, q3_k_span, Q3K_GRP, Q3K_CHUNK)
DEFINE_ROWS(iq4_nl_rows, iq4_nl_span, IQ4_GRP, IQ4NL_CHUNK)
DEFINE_ROWS(iq4_xs_rows, iq4_xs_span, IQ4_GRP, IQ4XS_CHUNK)
DEFINE_ROWS(mxfp4_rows, mxfp4_span, IQ4_GRP, IQ4NL_CHUNK)
DEFINE_ROWS(iq2_xxs_rows, grid8_iq2xxs_span, IQ4_GRP, GRID_CHUNK8)
DEFINE_ROWS(iq3_xxs_rows, grid8_iq3xxs_span, IQ4_GRP, GRID_CHUNK8)
DEFINE_ROWS(iq3_s_rows, grid8_iq3s_span, IQ4_GRP, GRID_CHUNK8)
DEFINE_ROWS(iq1_s_rows, grid8_iq1s_span, IQ4_GRP, GRID_CHUNK8)
DEFINE_ROWS(iq2_16_rows, grid16_iq2_span, IQ4_GRP, GRID_CHUNK16)
DEFINE_ROWS(iq1_m_rows, grid16_iq1m_span, IQ4_GRP, GRID_CHUNK16)

/* Blocks per span (about 4-5 KB, as the Q4_K tiles). */
#define SPAN_BYTES 4864

bool sd_lowbit_avx2_tile(uint32_t type, const uint8_t *tile, const sd_act *a, int s0, int ns, __m256 *acc) {
    switch (type) {
    case GGML_TYPE_Q2_K: sd_avx2_span_tile(q2_k_rows, Q2K_GRP, SPAN_BYTES / Q2K_CHUNK, tile, a, s0, ns, acc); return true;
    case GGML_TYPE_Q3_K: sd_avx2_span_tile(q3_k_rows, Q3K_GRP, SPAN_BYTES / Q3K_CHUNK, tile, a, s0, ns, acc); return true;
    case GGML_TYPE_IQ4_NL: sd_avx2_span_tile(iq4_nl_rows, IQ4_GRP, SPAN_BYTES / IQ4NL_CHUNK, tile, a, s0, ns, acc); return true;
    case GGML_TYPE_IQ4_XS: sd_avx2_span_tile(iq4_xs_rows, IQ4_GRP, SPAN_BYTES / IQ4XS_CHUNK, tile, a, s0, ns, acc); return true;
    case GGML_TYPE_MXFP4: sd_avx2_span_tile(mxfp4_rows, IQ4_GRP, SPAN_BYTES / IQ4NL_CHUNK, tile, a, s0, ns, acc); return true;
    case GGML_TYPE_IQ2_XXS: sd_avx2_span_tile(iq2_xxs_rows, IQ4_GRP, SPAN_BYTES / GRID_CHUNK8, tile, a, s0, ns, acc); return true;
    case GGML_TYPE_IQ3_XXS: sd_avx2_span_tile(iq3_xxs_rows, IQ4_GRP, SPAN_BYTES / GRID_CHUNK8, tile, a, s0, ns, acc); return true;
    case GGML_TYPE_IQ3_S: sd_avx2_span_tile(iq3_s_rows, IQ4_GRP, SPAN_BYTES / GRID_CHUNK8, tile, a, s0, ns, acc); return true;
    case GGML_TYPE_IQ1_S: sd_avx2_span_tile(iq1_s_rows, IQ4_GRP, SPAN_BYTES / GRID_CHUNK8, tile, a, s0, ns, acc); return true;
    case GGML_TYPE_IQ2_XS:
    case GGML_TYPE_IQ2_S: sd_avx2_span_tile(iq2_16_rows, IQ4_GRP, SPAN_BYTES / GRID_CHUNK16, tile, a, s0, ns, acc); return true;
    case GGML_TYPE_IQ1_M: sd_avx2_span_tile(iq1_m_rows, IQ4_GRP, SPAN_BYTES / GRID_CHUNK16, tile, a, s0, ns, acc); return true;
    default: return false;
    }
}

int sd_lowbit_avx2_pass_rows(uint32_t type) {
    switch (type) {
    case GGML_TYPE_Q2_K: return Q2K_GRP;
    case GGML_TYPE_Q3_K: return Q3K_GRP;
    case GGML_TYPE_IQ4_NL:
    case GGML_TYPE_IQ4_XS:
    case GGML_TYPE_MXFP4: return IQ4_GRP;
    default: { /* the grid types run on the IQ4_XS tile */
        int nsub;
        return sd_grid_tile_table(type, &nsub) ? IQ4_GRP : 0;
    }
    }
}
