/* AVX2 builds of the Gated DeltaNet kernels (gdn.h): eight channels or value
 * indices per vector, each lane doing exactly the scalar operations of generic/gdn_generic.c
 * on its element (no reduction crosses lanes), so the bits are the same. */
#include <immintrin.h>

#include "numerics/kernels/gdn_kernels.h"

void sd_conv_step_avx2(float *y, float *win, const float *w, const float *x, int K, int64_t ld, int64_t n) {
    int64_t c = 0;
    if (K > 1) {
        for (; c + 8 <= n; c += 8) {
            const __m256 xc = _mm256_loadu_ps(x + c);
            __m256 acc = _mm256_mul_ps(_mm256_loadu_ps(w + c), _mm256_loadu_ps(win + c));
            for (int j = 1; j < K - 1; j++) {
                const __m256 u = _mm256_loadu_ps(win + j * ld + c);
                acc = _mm256_fmadd_ps(_mm256_loadu_ps(w + j * ld + c), u, acc);
                _mm256_storeu_ps(win + (j - 1) * ld + c, u); /* shift: row j moves to j - 1 */
            }
            acc = _mm256_fmadd_ps(_mm256_loadu_ps(w + (K - 1) * ld + c), xc, acc);
            _mm256_storeu_ps(win + (K - 2) * ld + c, xc);
            _mm256_storeu_ps(y + c, acc);
        }
    } else {
        for (; c + 8 <= n; c += 8) _mm256_storeu_ps(y + c, _mm256_mul_ps(_mm256_loadu_ps(w + c), _mm256_loadu_ps(x + c)));
    }
    sd_conv_step_scalar(y, win, w, x, K, ld, c, n); /* the last channels */
}

/* Columns (value indices) in blocks of up to 32, four vectors: a block of a
 * 128-row state is 16 KB and stays in L1 while every token runs over it, and
 * four independent fma chains cover the fma latency. Per token: pass 1 reads
 * the rows for u = (decay * st)^T k without storing; pass 2 recomputes
 * decay * st (the same product), adds k d^T, stores, and sums o. Each element
 * gets exactly the scalar operations of generic/gdn_generic.c. */
#define GDN_BLOCK 4

void sd_gdn_tokens_avx2(float *st, int S, int T, const float *q, const float *k, const float *v, int64_t ld,
                        const float *decay, const float *beta, int64_t ls, float scale, float *o, int64_t ldo) {
    if (S % 8 != 0) { /* whole vectors only */
        sd_gdn_tokens_generic(st, S, T, q, k, v, ld, decay, beta, ls, scale, o, ldo);
        return;
    }
    const __m256 vscale = _mm256_set1_ps(scale);
    for (int j0 = 0; j0 < S; j0 += 8 * GDN_BLOCK) {
        const int nb = (S - j0) / 8 < GDN_BLOCK ? (S - j0) / 8 : GDN_BLOCK;
        for (int t = 0; t < T; t++) {
            const float *qt = q + t * ld, *kt = k + t * ld, *vt = v + t * ld;
            const __m256 vdecay = _mm256_set1_ps(decay[t * ls]), vbeta = _mm256_set1_ps(beta[t * ls]);
            __m256 acc[GDN_BLOCK], d[GDN_BLOCK];
            for (int b = 0; b < nb; b++) acc[b] = _mm256_setzero_ps();
            for (int i = 0; i < S; i++) { /* u = (decay st)^T k */
                const float *row = st + (int64_t)i * S + j0;
                const __m256 ki = _mm256_set1_ps(kt[i]);
                for (int b = 0; b < nb; b++)
                    acc[b] = _mm256_fmadd_ps(_mm256_mul_ps(_mm256_loadu_ps(row + 8 * b), vdecay), ki, acc[b]);
            }
            for (int b = 0; b < nb; b++) {
                d[b] = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(vt + j0 + 8 * b), acc[b]), vbeta);
                acc[b] = _mm256_setzero_ps();
            }
            for (int i = 0; i < S; i++) { /* st = decay st + k d^T, o = st^T q */
                float *row = st + (int64_t)i * S + j0;
                const __m256 ki = _mm256_set1_ps(kt[i]), qi = _mm256_set1_ps(qt[i]);
                for (int b = 0; b < nb; b++) {
                    const __m256 s = _mm256_fmadd_ps(ki, d[b], _mm256_mul_ps(_mm256_loadu_ps(row + 8 * b), vdecay));
                    _mm256_storeu_ps(row + 8 * b, s);
                    acc[b] = _mm256_fmadd_ps(s, qi, acc[b]);
                }
            }
            for (int b = 0; b < nb; b++) _mm256_storeu_ps(o + t * ldo + j0 + 8 * b, _mm256_mul_ps(acc[b], vscale));
        }
    }
}
