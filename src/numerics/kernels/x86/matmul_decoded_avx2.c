/* AVX2 matmul on the GGUF layout, for the matrices the avx2 and avx512 rows
 * have no repacked tile of: a matrix not repacked (--no-repack, a file larger
 * than the memory, a type without a tile). Each weight block is decoded once through its
 * descriptor (quant/qtype.h) and dotted with the S activation rows in flight:
 * the integer dots run 32 int8 products at a time (VPMADDUBSW on |w| and the
 * activation with w's sign, VPMADDWD by the sub-block scales, one horizontal
 * add per block), and the float part is the reference's fmaf sequence
 * (generic/matmul_ref.c block_fma). Integer sums are exact in any order;
 * |w| <= 128, |x| <= 127 keep each pair sum of VPMADDUBSW within int16 and
 * |scale| <= 128 each VPMADDWD lane within int32, so every bit equals the
 * scalar path's. */
#include <immintrin.h>
#include <math.h>
#include <string.h>

#include "numerics/kernels/matmul_impl.h"

static inline int32_t hsum8(__m256i v) {
    __m128i s = _mm_add_epi32(_mm256_castsi256_si128(v), _mm256_extracti128_si256(v, 1));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0x4E));
    s = _mm_add_epi32(s, _mm_shuffle_epi32(s, 0xB1));
    return _mm_cvtsi128_si32(s);
}

/* 8 int32 partial sums of 32 products w[i] * x[i] * sc(i), sc a vector of
 * 16 int16 weights (one per pair of elements). */
static inline __m256i dot32(__m256i uw, __m256i w, __m256i sc, const int8_t *x) {
    __m256i xv = _mm256_loadu_si256((const __m256i *)x);
    return _mm256_madd_epi16(_mm256_maddubs_epi16(uw, _mm256_sign_epi8(xv, w)), sc);
}

/* The weight block as vectors: its values, their magnitudes, and the
 * sub-block scales per element pair (ones for the 32-element types). */
typedef struct wvec {
    __m256i w[8], uw[8], sc[8];
} wvec;

/* sum_j sc_j * (t_j - off * xs_j), t_j the integer dot of sub-block j, as
 * sum_j sc_j * t_j - off * sum_j sc_j * xs_j: the same integer. */
static float block_fma_avx2(const sd_wblock *wb, const wvec *v, const sd_act *a, int s, int64_t b, float acc) {
    const int8_t *xq = a->q + (size_t)s * a->n_in + b * a->block;
    const int16_t *xs = a->sum + ((size_t)s * a->nb + b) * a->nsum;
    float dx = a->d[(size_t)s * a->nb + b];
    if (a->block == SD_QK) {
        int32_t isum = hsum8(dot32(v->uw[0], v->w[0], v->sc[0], xq));
        isum -= wb->off * xs[0];
        acc = fmaf((float)isum, wb->d * dx, acc);
        if (wb->has_min) acc = fmaf((float)xs[0], wb->m * dx, acc);
        return acc;
    }
    __m256i t = _mm256_setzero_si256();
    for (int k = 0; k < 8; k++) t = _mm256_add_epi32(t, dot32(v->uw[k], v->w[k], v->sc[k], xq + 32 * k));
    const int nsub = SD_QK_K / wb->sub;
    int32_t sumi = hsum8(t);
    if (wb->off) {
        int32_t so = 0;
        for (int j = 0; j < nsub; j++) so += wb->sc[j] * (wb->sub == 16 ? xs[j] : xs[16 + j]);
        sumi -= wb->off * so;
    }
    acc = fmaf((float)sumi, wb->d * dx, acc);
    if (wb->has_min) {
        int32_t summ = 0;
        for (int j = 0; j < nsub; j++) summ += wb->mn[j] * (wb->sub == 16 ? xs[j] : xs[16 + j]);
        acc = fmaf((float)summ, -(wb->m * dx), acc);
    }
    return acc;
}

static void load_block(const sd_wblock *wb, int nvec, wvec *v) {
    for (int k = 0; k < nvec; k++) {
        v->w[k] = _mm256_loadu_si256((const __m256i *)(wb->q + 32 * k));
        v->uw[k] = _mm256_abs_epi8(v->w[k]); /* -128 stays 0x80 = 128 unsigned */
        if (nvec == 1) v->sc[k] = _mm256_set1_epi16(1);
        else if (wb->sub == 32) v->sc[k] = _mm256_set1_epi16((int16_t)wb->sc[k]);
        else v->sc[k] = _mm256_setr_m128i(_mm_set1_epi16((int16_t)wb->sc[2 * k]), _mm_set1_epi16((int16_t)wb->sc[2 * k + 1]));
    }
}

void sd_matmul_avx2_decoded(const sd_matrix *m, const sd_act *a, float *y, int64_t o0, int64_t o1) {
    const sd_wtype *wt = sd_wtype_get(m->type);
    const size_t row_bytes = (size_t)a->nb * (size_t)wt->block_bytes;
    const int nvec = wt->block / 32;
    sd_wblock wb;
    wvec v;
    for (int64_t o = o0; o < o1; o++) {
        const uint8_t *row = (const uint8_t *)m->data + (size_t)o * row_bytes;
        for (int s0 = 0; s0 < a->S; s0 += SD_SCHUNK) {
            int ns = a->S - s0 < SD_SCHUNK ? a->S - s0 : SD_SCHUNK;
            float acc[SD_SCHUNK] = {0};
            for (int64_t b = 0; b < a->nb; b++) {
                sd_qtype_decode(wt, row + (size_t)b * wt->block_bytes, &wb);
                load_block(&wb, nvec, &v);
                for (int s = 0; s < ns; s++) acc[s] = block_fma_avx2(&wb, &v, a, s0 + s, b, acc[s]);
            }
            for (int s = 0; s < ns; s++) y[(size_t)(s0 + s) * m->n_out + o] = acc[s];
        }
    }
}
