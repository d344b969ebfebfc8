/* AVX-512 VNNI matmul kernels over the 16-row layout of matmul_pack_avx512.c.
 * Each computes exactly the integers and float operations of the scalar
 * reference (matmul_ref.c): per weight block an exact integer dot (vpdpbusd
 * of unsigned weight bytes by a broadcast dword of signed activations, minus
 * off times the activation block sum), then acc = fma(isum, d_w * d_x, acc)
 * (and the min term) in block order, 16 output rows per vector. The per-block
 * scale work is thus done once per 16 rows (ARCHITECTURE.md §2, Kernel notes).
 * Rows of a chunk run in groups whose accumulators stay in registers; with
 * more rows than one group, the tile is walked span by span so that the
 * span's weights stay in L1 while every group passes over them. Grouping and
 * spans change only speed, never a result. */
#include <immintrin.h>
#include <string.h>

#include "numerics/kernels/matmul_impl.h"
#include "numerics/quant/quant_blocks.h"

#define INLINE static inline __attribute__((always_inline))

/* Keeps an unrolled chain of integer adds a chain (see matmul_avx2.h
 * KEEP_ACC); "v" allows all 32 zmm registers. */
#define KEEP512(v) __asm__("" : "+v"(v))

#define GRP32 12 /* rows per group, 32-element types: 2 * 12 + 4 of the 32 registers */
#define GRPK 8   /* K-quants: 3 * 8 + 5 */
#define SPAN_BYTES 12288 /* weights per span, well inside the 48 KB L1 */
#define PREFETCH_AHEAD 2048

INLINE __m512i bcast32(const void *p) {
    int32_t v;
    memcpy(&v, p, 4);
    return _mm512_set1_epi32(v);
}

/* The 16 f16 scales at p, as floats (exact). */
INLINE __m512 load_f16x16(const uint8_t *p) { return _mm512_cvtph_ps(_mm256_load_si256((const __m256i *)p)); }

INLINE __m512i load64(const uint8_t *p) { return _mm512_load_si512((const void *)p); }

/* Bits [lo, lo+n) of each byte moved to bit `to` (16-bit shifts: the masks
 * drop what crosses a byte boundary). */
INLINE __m512i shift_bits(__m512i v, int from, int to) {
    return from < to ? _mm512_slli_epi16(v, (unsigned)(to - from)) : _mm512_srli_epi16(v, (unsigned)(from - to));
}

/* Activation pointers of rows [s, s+N) at block b0. */
typedef struct rows_at {
    const int8_t *xq[GRP32];
    const int16_t *xs[GRP32];
    const float *xd[GRP32];
} rows_at;

INLINE void rows_init(rows_at *r, const sd_act *a, int s, int64_t b0, int N) {
    _Pragma("GCC unroll 16")
    for (int n = 0; n < N; n++) {
        size_t sb = (size_t)(s + n) * (size_t)a->nb + (size_t)b0;
        r->xq[n] = a->q + (size_t)(s + n) * (size_t)a->n_in + (size_t)b0 * (size_t)a->block;
        r->xs[n] = a->sum + sb * (size_t)a->nsum;
        r->xd[n] = a->d + sb;
    }
}

/* A span's start: the row pointers at b0 and the accumulators from acc_io. */
INLINE void span_begin(rows_at *r, __m512 *acc, const __m512 *acc_io, const sd_act *a, int s, int64_t b0, int N) {
    rows_init(r, a, s, b0, N);
    _Pragma("GCC unroll 16")
    for (int n = 0; n < N; n++) acc[n] = acc_io[n];
}

INLINE void span_end(__m512 *acc_io, const __m512 *acc, int N) {
    _Pragma("GCC unroll 16")
    for (int n = 0; n < N; n++) acc_io[n] = acc[n];
}

INLINE void rows_next(rows_at *r, const sd_act *a, int N) {
    _Pragma("GCC unroll 16")
    for (int n = 0; n < N; n++) {
        r->xq[n] += a->block;
        r->xs[n] += a->nsum;
        r->xd[n]++;
    }
}

INLINE void prefetch_block(const uint8_t *c, int ib) {
    for (int l = 0; l < ib; l += 64) _mm_prefetch((const char *)c + PREFETCH_AHEAD + l, _MM_HINT_T0);
}

/* ---- 32-element blocks: Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL ---- */

enum { K_Q8, K_NIB4, K_NIB5, K_IQ4 };

/* Vector k (values 4k..4k+3 of the 16 rows) as unsigned bytes. */
INLINE __m512i q32_vec(int kind, const uint8_t *c, int k, __m512i tbl) {
    if (kind == K_Q8) return load64(c + 64 * k);
    const __m512i m4 = _mm512_set1_epi8(0x0F);
    __m512i v = load64(c + 64 * (k & 3));
    v = _mm512_and_si512(k < 4 ? v : _mm512_srli_epi16(v, 4), m4);
    if (kind == K_IQ4) return _mm512_shuffle_epi8(tbl, v);
    if (kind == K_NIB5)
        v = _mm512_or_si512(v, _mm512_and_si512(shift_bits(load64(c + 256), k, 4), _mm512_set1_epi8(0x10)));
    return v;
}

INLINE void q32_span(int kind, int off, int has_min, int ib, const uint8_t *c, const uint8_t *sc, const sd_act *a,
                     int s, int64_t b0, int64_t b1, __m512 *acc_io, int N) {
    __m512i tbl = _mm512_setzero_si512();
    if (kind == K_IQ4) { /* table value + 128, in each 128-bit lane for vpshufb */
        uint8_t t[16];
        for (int i = 0; i < 16; i++) t[i] = (uint8_t)(sd_kvalues_iq4nl[i] + 128);
        tbl = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)t));
    }
    __m512 acc[GRP32];
    rows_at r;
    span_begin(&r, acc, acc_io, a, s, b0, N);
    c += (size_t)b0 * (size_t)ib;
    sc += (size_t)b0 * (size_t)(has_min ? 64 : 32);
    for (int64_t b = b0; b < b1; b++, c += ib, sc += has_min ? 64 : 32) {
        prefetch_block(c, ib);
        __m512i isum[GRP32];
        _Pragma("GCC unroll 16")
        for (int n = 0; n < N; n++) isum[n] = _mm512_set1_epi32(-off * r.xs[n][0]);
        _Pragma("GCC unroll 8")
        for (int k = 0; k < 8; k++) {
            __m512i u = q32_vec(kind, c, k, tbl);
            _Pragma("GCC unroll 16")
            for (int n = 0; n < N; n++) {
                isum[n] = _mm512_dpbusd_epi32(isum[n], u, bcast32(r.xq[n] + 4 * k));
                if (N > 1) KEEP512(isum[n]);
            }
        }
        __m512 dw = load_f16x16(sc);
        _Pragma("GCC unroll 16")
        for (int n = 0; n < N; n++) {
            __m512 dx = _mm512_set1_ps(*r.xd[n]);
            acc[n] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[n]), _mm512_mul_ps(dw, dx), acc[n]);
            if (has_min)
                acc[n] = _mm512_fmadd_ps(_mm512_set1_ps((float)r.xs[n][0]), _mm512_mul_ps(load_f16x16(sc + 32), dx),
                                         acc[n]);
        }
        rows_next(&r, a, N);
    }
    span_end(acc_io, acc, N);
}

/* ---- K-quants with 32-value sub-blocks and mins: Q4_K, Q5_K ---- */

INLINE void k4_span(int bits5, const uint8_t *c, const uint8_t *sc, const sd_act *a, int s, int64_t b0, int64_t b1,
                    __m512 *acc_io, int N) {
    const int ib = bits5 ? 2816 : 2304, so = bits5 ? 2560 : 2048;
    const __m512i m4 = _mm512_set1_epi8(0x0F), b4 = _mm512_set1_epi8(0x10);
    __m512 acc[GRPK];
    rows_at r;
    span_begin(&r, acc, acc_io, a, s, b0, N);
    c += (size_t)b0 * (size_t)ib;
    sc += (size_t)b0 * 64;
    for (int64_t b = b0; b < b1; b++, c += ib, sc += 64) {
        prefetch_block(c, ib);
        __m512i isum[GRPK], t[GRPK];
        _Pragma("GCC unroll 8")
        for (int n = 0; n < N; n++) isum[n] = _mm512_setzero_si512();
        for (int j = 0; j < 8; j++) { /* sub-block j: nibble half j % 2 of vectors 8(j/2) .. 8(j/2)+7 */
            const uint8_t *v0 = c + 64 * 8 * (j / 2);
            _Pragma("GCC unroll 8")
            for (int n = 0; n < N; n++) t[n] = _mm512_setzero_si512();
            _Pragma("GCC unroll 8")
            for (int m = 0; m < 8; m++) {
                __m512i u = _mm512_and_si512(_mm512_srli_epi16(load64(v0 + 64 * m), (unsigned)(4 * (j % 2))), m4);
                if (bits5) u = _mm512_or_si512(u, _mm512_and_si512(shift_bits(load64(c + 2048 + 64 * m), j, 4), b4));
                _Pragma("GCC unroll 8")
                for (int n = 0; n < N; n++) {
                    t[n] = _mm512_dpbusd_epi32(t[n], u, bcast32(r.xq[n] + 32 * j + 4 * m));
                    if (N > 1) KEEP512(t[n]);
                }
            }
            __m512i scj = _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(c + so + 16 * j)));
            _Pragma("GCC unroll 8")
            for (int n = 0; n < N; n++) isum[n] = _mm512_add_epi32(isum[n], _mm512_mullo_epi32(t[n], scj));
        }
        /* min term: sum_j mn_j * (activation sum of sub-block j), int16 pairs */
        _Pragma("GCC unroll 8")
        for (int n = 0; n < N; n++) t[n] = _mm512_setzero_si512();
        for (int i = 0; i < 4; i++) {
            __m512i m0 = _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(c + so + 128 + 32 * i)));
            __m512i m1 = _mm512_cvtepu8_epi32(_mm_load_si128((const __m128i *)(c + so + 128 + 32 * i + 16)));
            __m512i mn = _mm512_or_si512(m0, _mm512_slli_epi32(m1, 16));
            _Pragma("GCC unroll 8")
            for (int n = 0; n < N; n++) t[n] = _mm512_dpwssd_epi32(t[n], mn, bcast32(r.xs[n] + 16 + 2 * i));
        }
        __m512 dw = load_f16x16(sc), dmin = load_f16x16(sc + 32);
        const __m512i neg = _mm512_set1_epi32(INT32_MIN);
        _Pragma("GCC unroll 8")
        for (int n = 0; n < N; n++) {
            __m512 dx = _mm512_set1_ps(*r.xd[n]);
            acc[n] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[n]), _mm512_mul_ps(dw, dx), acc[n]);
            acc[n] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(t[n]), _mm512_castsi512_ps(_mm512_xor_si512(_mm512_castps_si512(_mm512_mul_ps(dmin, dx)), neg)), acc[n]);
        }
        rows_next(&r, a, N);
    }
    span_end(acc_io, acc, N);
}

/* ---- Q6_K: 16-value sub-blocks, signed scales, off 32 ---- */

INLINE void q6k_span(const uint8_t *c, const uint8_t *sc, const sd_act *a, int s, int64_t b0, int64_t b1,
                     __m512 *acc_io, int N) {
    const int ib = 3328;
    const __m512i m4 = _mm512_set1_epi8(0x0F), m2 = _mm512_set1_epi8(0x30), lo16 = _mm512_set1_epi32(0xFFFF);
    __m512 acc[GRPK];
    rows_at r;
    span_begin(&r, acc, acc_io, a, s, b0, N);
    c += (size_t)b0 * (size_t)ib;
    sc += (size_t)b0 * 32;
    for (int64_t b = b0; b < b1; b++, c += ib, sc += 32) {
        prefetch_block(c, ib);
        __m512i isum[GRPK], t[GRPK];
        _Pragma("GCC unroll 8")
        for (int n = 0; n < N; n++) isum[n] = _mm512_setzero_si512();
        for (int j = 0; j < 16; j++) { /* values 16j..16j+15 = dwords e = 4j..4j+3 */
            _Pragma("GCC unroll 8")
            for (int n = 0; n < N; n++) t[n] = _mm512_setzero_si512();
            _Pragma("GCC unroll 4")
            for (int q = 0; q < 4; q++) {
                const int e = 4 * j + q;
                __m512i lo = load64(c + 64 * (e % 32));
                lo = _mm512_and_si512(e < 32 ? lo : _mm512_srli_epi16(lo, 4), m4);
                __m512i hi = _mm512_and_si512(shift_bits(load64(c + 2048 + 64 * (e % 16)), 2 * (e / 16), 4), m2);
                __m512i u = _mm512_or_si512(lo, hi);
                _Pragma("GCC unroll 8")
                for (int n = 0; n < N; n++) t[n] = _mm512_dpbusd_epi32(t[n], u, bcast32(r.xq[n] + 4 * e));
            }
            __m512i scj = _mm512_cvtepi8_epi32(_mm_load_si128((const __m128i *)(c + 3072 + 16 * j)));
            _Pragma("GCC unroll 8")
            for (int n = 0; n < N; n++) isum[n] = _mm512_add_epi32(isum[n], _mm512_mullo_epi32(t[n], scj));
        }
        /* off 32: minus 32 * sum_j sc_j * (activation sum of sub-block j) */
        _Pragma("GCC unroll 8")
        for (int n = 0; n < N; n++) t[n] = _mm512_setzero_si512();
        for (int i = 0; i < 8; i++) {
            __m512i s0 = _mm512_cvtepi8_epi32(_mm_load_si128((const __m128i *)(c + 3072 + 32 * i)));
            __m512i s1 = _mm512_cvtepi8_epi32(_mm_load_si128((const __m128i *)(c + 3072 + 32 * i + 16)));
            __m512i scp = _mm512_or_si512(_mm512_and_si512(s0, lo16), _mm512_slli_epi32(s1, 16));
            _Pragma("GCC unroll 8")
            for (int n = 0; n < N; n++) t[n] = _mm512_dpwssd_epi32(t[n], scp, bcast32(r.xs[n] + 2 * i));
        }
        __m512 dw = load_f16x16(sc);
        _Pragma("GCC unroll 8")
        for (int n = 0; n < N; n++) {
            isum[n] = _mm512_sub_epi32(isum[n], _mm512_slli_epi32(t[n], 5));
            acc[n] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(isum[n]), _mm512_mul_ps(dw, _mm512_set1_ps(*r.xd[n])), acc[n]);
        }
        rows_next(&r, a, N);
    }
    span_end(acc_io, acc, N);
}

/* ---- dispatch: one group of N rows over blocks [b0, b1) ---- */

typedef struct tile_ref {
    uint32_t type;
    const uint8_t *ints, *scales;
} tile_ref;

INLINE void group(const tile_ref *tr, const sd_act *a, int s, int64_t b0, int64_t b1, __m512 *acc, int N) {
    const uint8_t *c = tr->ints, *sc = tr->scales;
    switch (tr->type) {
    case GGML_TYPE_Q8_0: q32_span(K_Q8, 128, 0, 512, c, sc, a, s, b0, b1, acc, N); break;
    case GGML_TYPE_Q4_0: q32_span(K_NIB4, 8, 0, 256, c, sc, a, s, b0, b1, acc, N); break;
    case GGML_TYPE_Q4_1: q32_span(K_NIB4, 0, 1, 256, c, sc, a, s, b0, b1, acc, N); break;
    case GGML_TYPE_Q5_0: q32_span(K_NIB5, 16, 0, 320, c, sc, a, s, b0, b1, acc, N); break;
    case GGML_TYPE_Q5_1: q32_span(K_NIB5, 0, 1, 320, c, sc, a, s, b0, b1, acc, N); break;
    case GGML_TYPE_IQ4_NL: q32_span(K_IQ4, 128, 0, 256, c, sc, a, s, b0, b1, acc, N); break;
    case GGML_TYPE_Q4_K: if (N <= GRPK) k4_span(0, c, sc, a, s, b0, b1, acc, N <= GRPK ? N : 1); break;
    case GGML_TYPE_Q5_K: if (N <= GRPK) k4_span(1, c, sc, a, s, b0, b1, acc, N <= GRPK ? N : 1); break;
    case GGML_TYPE_Q6_K: if (N <= GRPK) q6k_span(c, sc, a, s, b0, b1, acc, N <= GRPK ? N : 1); break;
    }
}

static void group_n(const tile_ref *tr, const sd_act *a, int s, int64_t b0, int64_t b1, __m512 *acc, int n) {
    switch (n) {
#define CASE(N) \
    case N: group(tr, a, s, b0, b1, acc, N); break;
    CASE(12) CASE(11) CASE(10) CASE(9) CASE(8) CASE(7) CASE(6) CASE(5) CASE(4) CASE(3) CASE(2)
#undef CASE
    default: group(tr, a, s, b0, b1, acc, 1); break;
    }
}

static int grp_rows(uint32_t type) { return type == GGML_TYPE_Q4_K || type == GGML_TYPE_Q5_K || type == GGML_TYPE_Q6_K ? GRPK : GRP32; }

int sd_matmul_avx512_pass_rows(uint32_t type) { return grp_rows(type); }

/* Rows [s0, s0+ns) over blocks [b0, b1) in balanced groups (13 rows = 7 + 6). */
static void rows_span(const tile_ref *tr, const sd_act *a, int s0, int ns, int64_t b0, int64_t b1, __m512 *acc) {
    int grp = grp_rows(tr->type), groups = (ns + grp - 1) / grp;
    for (int g = 0, i = 0; g < groups; g++) {
        int n = ns / groups + (g < ns % groups);
        group_n(tr, a, s0 + i, b0, b1, acc + i, n);
        i += n;
    }
}

void sd_matmul_avx512_tile(const sd_matrix *m, const sd_act *a, float *y, int64_t t) {
    int ib, sb;
    if (!sd_avx512_layout(m->type, &ib, &sb)) return;
    const uint8_t *tile = (const uint8_t *)m->packed + (size_t)t * sd_avx512_tile_bytes(m->type, a->nb);
    tile_ref tr = {m->type, tile, tile + (size_t)a->nb * (size_t)ib};
    int64_t o0 = t * SD_TILE16;
    int rows = m->n_out - o0 < SD_TILE16 ? (int)(m->n_out - o0) : SD_TILE16;
    int64_t span = SPAN_BYTES / (ib + sb);
    if (span < 1) span = 1;
    __m512 acc[SD_SCHUNK];
    for (int s0 = 0; s0 < a->S; s0 += SD_SCHUNK) {
        int ns = a->S - s0 < SD_SCHUNK ? a->S - s0 : SD_SCHUNK;
        for (int s = 0; s < ns; s++) acc[s] = _mm512_setzero_ps();
        if (ns <= grp_rows(m->type))
            rows_span(&tr, a, s0, ns, 0, a->nb, acc); /* one pass streams the tile */
        else
            for (int64_t b0 = 0; b0 < a->nb; b0 += span)
                rows_span(&tr, a, s0, ns, b0, b0 + span < a->nb ? b0 + span : a->nb, acc);
        __mmask16 keep = (__mmask16)((1u << rows) - 1);
        for (int s = 0; s < ns; s++) _mm512_mask_storeu_ps(y + (size_t)(s0 + s) * (size_t)m->n_out + o0, keep, acc[s]);
    }
}
