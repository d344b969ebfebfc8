/* AVX2 builds of the Gated DeltaNet kernels (gdn.h): eight channels or value
 * indices per vector, each lane doing exactly the scalar operations of gdn.c
 * on its element (no reduction crosses lanes), so the bits are the same. */
#include <immintrin.h>
#include <math.h>

#include "numerics/gdn_kernels.h"

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
    for (; c < n; c++) { /* the scalar code of gdn.c on the last channels */
        float acc = K > 1 ? w[c] * win[c] : w[c] * x[c];
        for (int j = 1; j < K - 1; j++) acc = fmaf(w[j * ld + c], win[j * ld + c], acc);
        if (K > 1) acc = fmaf(w[(K - 1) * ld + c], x[c], acc);
        for (int r = 0; r + 1 < K - 1; r++) win[r * ld + c] = win[(r + 1) * ld + c];
        if (K > 1) win[(K - 2) * ld + c] = x[c];
        y[c] = acc;
    }
}

/* Value indices are processed in blocks of up to 64 (8 accumulators); the
 * state rows i are walked in order for each block, so every element's fma
 * chain is the scalar one. */
#define GDN_BLOCK 64

void sd_gdn_step_avx2(float *st, const float *q, const float *k, const float *v, float decay, float beta,
                      float scale, float *o, int S) {
    const __m256 vdecay = _mm256_set1_ps(decay), vbeta = _mm256_set1_ps(beta), vscale = _mm256_set1_ps(scale);
    for (int j0 = 0; j0 < S; j0 += GDN_BLOCK) {
        const int nb = (S - j0 < GDN_BLOCK ? S - j0 : GDN_BLOCK) / 8;
        __m256 acc[GDN_BLOCK / 8], d[GDN_BLOCK / 8];
        for (int b = 0; b < nb; b++) acc[b] = _mm256_setzero_ps();
        for (int i = 0; i < S; i++) { /* decay, and u = st^T k */
            float *row = st + (int64_t)i * S + j0;
            const __m256 ki = _mm256_set1_ps(k[i]);
            for (int b = 0; b < nb; b++) {
                const __m256 s = _mm256_mul_ps(_mm256_loadu_ps(row + 8 * b), vdecay);
                _mm256_storeu_ps(row + 8 * b, s);
                acc[b] = _mm256_fmadd_ps(s, ki, acc[b]);
            }
        }
        for (int b = 0; b < nb; b++) {
            d[b] = _mm256_mul_ps(_mm256_sub_ps(_mm256_loadu_ps(v + j0 + 8 * b), acc[b]), vbeta);
            acc[b] = _mm256_setzero_ps();
        }
        for (int i = 0; i < S; i++) { /* st += k d^T, and o = st^T q */
            float *row = st + (int64_t)i * S + j0;
            const __m256 ki = _mm256_set1_ps(k[i]), qi = _mm256_set1_ps(q[i]);
            for (int b = 0; b < nb; b++) {
                const __m256 s = _mm256_fmadd_ps(ki, d[b], _mm256_loadu_ps(row + 8 * b));
                _mm256_storeu_ps(row + 8 * b, s);
                acc[b] = _mm256_fmadd_ps(s, qi, acc[b]);
            }
        }
        for (int b = 0; b < nb; b++) _mm256_storeu_ps(o + j0 + 8 * b, _mm256_mul_ps(acc[b], vscale));
    }
}
