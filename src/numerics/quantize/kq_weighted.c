/* Importance-weighted quantizers for the k-quants and the legacy 32-blocks.
 * Our own search (not ggml's). The objective is the weighted squared error
 * E = sum_j w[j] (x[j] - q[j])^2 of each block, w the importance matrix
 * column means (as in iq_quantize.c).
 *
 * Every type here is, per sub-block j of a block, q = a_j * l + b_j with
 * integer levels l in [lmin, lmax]:
 *   Q2_K, Q4_K, Q5_K  a_j = D * sc_j, b_j = -Dmin * m_j (sc, m in 0..15 or 0..63)
 *   Q3_K, Q6_K        a_j = D * sc_j, b_j = 0 (sc in -32..31 or -128..127)
 *   Q4_0, Q5_0        a = d, b = 0 (one sub-block of 32)
 *   Q4_1, Q5_1        a = d, b = m (m any sign)
 * D, Dmin, d, m are fp16.
 * 1. Each sub-block gets a continuous (a, b): trial scales spread over
 *    [nlev - 2, nlev] / range (both signs for the symmetric types, whose
 *    level range is uneven), each followed by alternating steps (levels by
 *    rounding, then the weighted least-squares (a, b) for those levels; b
 *    kept <= 0 for the k-quant mins). This is Lloyd's alternating
 *    minimisation (S. P. Lloyd, "Least squares quantization in PCM", IEEE
 *    Trans. Inf. Theory 28(2), 1982) restricted to a uniform grid. Then,
 *    at the best offset, the scales where some value changes level (all of
 *    them for Q2_K and Q3_K, those within 15 % of the best scale for the
 *    rest), each followed by the least-squares (a, b): for the symmetric
 *    types with few levels this tries every level assignment rounding can
 *    give.
 * 2. The super-block scales: trial D (and Dmin) from the largest sub-block
 *    scale (and min) times 0.76 ... 1.04, rounded to fp16; per sub-block
 *    the integer sc (and m) is the rounded a_j / D (b_j / Dmin) or a
 *    neighbour, whichever gives the least sub-block error with every level
 *    re-rounded. The best trial is then refined: the weighted least-squares
 *    (D, Dmin) for its integers, rounded to fp16, integers re-chosen; twice;
 *    then the fp16 neighbours of D and Dmin within 2 units in the last place.
 * 3. Legacy types: the fp16 d (and m) of step 1 and its fp16 neighbours
 *    within 3 units in the last place, levels re-rounded each time.
 * Last, the block is dequantized by the reference dequantizer and compared
 * with the reference quantizer's block under w; the smaller error is written. */
#include "numerics/quantize/kq_weighted.h"

#include <math.h>
#include <string.h>

#include "format/ggml_type.h"
#include "numerics/quant.h"
#include "numerics/quant/quant_internal.h"

enum { MAXB = QK_K };

typedef struct kspec {
    uint32_t type;
    int block, sub;   /* values per block, per sub-block */
    int lmin, lmax;   /* levels */
    int mode;         /* 0 symmetric, 1 min (b <= 0), 2 free offset */
    int scmin, scmax; /* integer sub-scales (k-quants) */
    int mmax;         /* integer mins 0..mmax (modes 1 of the k-quants) */
    int legacy;
} kspec;

static const kspec k_specs[] = {
    {GGML_TYPE_Q2_K, QK_K, 16, 0, 3, 1, 0, 15, 15, 0},
    {GGML_TYPE_Q3_K, QK_K, 16, -4, 3, 0, -32, 31, 0, 0},
    {GGML_TYPE_Q4_K, QK_K, 32, 0, 15, 1, 0, 63, 63, 0},
    {GGML_TYPE_Q5_K, QK_K, 32, 0, 31, 1, 0, 63, 63, 0},
    {GGML_TYPE_Q6_K, QK_K, 16, -32, 31, 0, -128, 127, 0, 0},
    {GGML_TYPE_Q4_0, 32, 32, -8, 7, 0, 0, 0, 0, 1},
    {GGML_TYPE_Q4_1, 32, 32, 0, 15, 2, 0, 0, 0, 1},
    {GGML_TYPE_Q5_0, 32, 32, -16, 15, 0, 0, 0, 0, 1},
    {GGML_TYPE_Q5_1, 32, 32, 0, 31, 2, 0, 0, 0, 1},
};

static const kspec *spec_of(uint32_t t) {
    for (size_t i = 0; i < sizeof k_specs / sizeof k_specs[0]; i++)
        if (k_specs[i].type == t)
            return &k_specs[i];
    return NULL;
}

static int clampi(int v, int lo, int hi) { return v < lo ? lo : v > hi ? hi : v; }

static float fp16_round(float v) { return sd_fp16_to_fp32(sd_fp32_to_fp16(v)); }

/* Levels for q = a l + b (a == 0: the lowest level) into L, and the error. */
static double levels_err(const float *x, const float *w, int n, float a, float b, int lmin, int lmax, int8_t *L) {
    double e = 0;
    for (int i = 0; i < n; i++) {
        const int l = a != 0 ? clampi(sd_nearest_int((x[i] - b) / a), lmin, lmax) : lmin;
        const float q = a * (float)l + b;
        const double d = (double)x[i] - q;
        e += (double)w[i] * d * d;
        L[i] = (int8_t)l;
    }
    return e;
}

/* The weighted least-squares (a, b) for fixed levels L under mode. */
static void ls_fit(const float *x, const float *w, int n, const int8_t *L, int mode, float *a, float *b) {
    double sw = 0, sl = 0, sll = 0, sx = 0, slx = 0;
    for (int i = 0; i < n; i++) {
        const double wi = w[i], l = L[i];
        sw += wi;
        sl += wi * l;
        sll += wi * l * l;
        sx += wi * x[i];
        slx += wi * l * x[i];
    }
    if (mode == 0) {
        if (sll > 0)
            *a = (float)(slx / sll);
        *b = 0;
        return;
    }
    const double det = sll * sw - sl * sl;
    if (det > 1e-12 * sll * sw && det > 0) {
        double aa = (slx * sw - sl * sx) / det, bb = (sll * sx - sl * slx) / det;
        if (mode == 1 && bb > 0) {
            bb = 0;
            aa = sll > 0 ? slx / sll : 0;
        }
        if (mode == 1 && aa < 0) {
            aa = 0;
            bb = sw > 0 ? sx / sw : 0;
            if (bb > 0)
                bb = 0;
        }
        *a = (float)aa;
        *b = (float)bb;
    } else if (sw > 0) { /* one level used: keep a, best offset */
        double bb = (sx - *a * sl) / sw;
        if (mode == 1 && bb > 0)
            bb = 0;
        *b = (float)bb;
    }
}

/* Step 1: the continuous (a, b) of one sub-block; returns its error. */
static double fit_sub(const float *x, const float *w, int n, int lmin, int lmax, int mode, float *pa, float *pb) {
    float xmin = x[0], xmax = x[0], xm = 0;
    for (int i = 0; i < n; i++) {
        xmin = x[i] < xmin ? x[i] : xmin;
        xmax = x[i] > xmax ? x[i] : xmax;
        if (fabsf(x[i]) > fabsf(xm))
            xm = x[i];
    }
    *pa = 0;
    *pb = 0;
    int8_t L[MAXB];
    if (mode == 1 && xmin > 0)
        xmin = 0;
    if (mode != 0 && xmax == xmin) { /* constant (or zero) sub-block */
        *pb = mode == 2 ? xmin : xmin < 0 ? xmin : 0;
        if (mode == 1 && xmin > 0 && lmax > 0)
            *pa = xmin / (float)lmax; /* all equal and positive: reach them with the top level */
        return levels_err(x, w, n, *pa, *pb, lmin, lmax, L);
    }
    if (mode == 0 && xm == 0)
        return 0;
    double best = INFINITY;
    const int nt = 2 * 16;
    for (int t = 0; t < nt; t++) {
        float a, b = 0;
        const float step = 0.1f * (float)(t % 16);
        if (mode == 0) { /* the largest |x| on the top or the bottom level */
            const float target = t < 16 ? (float)lmax + 0.5f - step : (float)lmin - 0.5f + step;
            a = xm / target;
        } else {
            if (t >= 16)
                break;
            a = (xmax - xmin) / ((float)(lmax - lmin) + 0.5f - step);
            b = xmin;
        }
        if (!(a != 0) || !isfinite(a))
            continue;
        double e = levels_err(x, w, n, a, b, lmin, lmax, L);
        for (int it = 0; it < 4; it++) {
            float a2 = a, b2 = b;
            ls_fit(x, w, n, L, mode, &a2, &b2);
            int8_t L2[MAXB];
            const double e2 = levels_err(x, w, n, a2, b2, lmin, lmax, L2);
            if (!(e2 < e))
                break;
            e = e2;
            a = a2;
            b = b2;
            memcpy(L, L2, (size_t)n);
        }
        if (e < best) {
            best = e;
            *pa = a;
            *pb = b;
        }
    }
    /* the scales where some value changes level (the offset held), each
     * followed by the least-squares (a, b): with few levels (Q2_K, Q3_K) all
     * of them, so every level assignment that rounding can give at that
     * offset is tried; with more, those within 15 % of the best scale. */
    if (best > 0 && *pa != 0) {
        const bool all = (lmax - lmin + 2) * n <= 160;
        const float a0 = *pa, b0 = *pb;
        for (int i = 0; i < n; i++) {
            if (x[i] == b0)
                continue;
            int h0 = lmin, h1 = lmax + 1;
            if (!all) {
                const float r = (x[i] - b0) / a0, lo = r / 1.15f + 0.5f, hi = r * 1.15f + 0.5f;
                h0 = clampi((int)floorf(fminf(lo, hi)), lmin, lmax + 1);
                h1 = clampi((int)ceilf(fmaxf(lo, hi)), lmin, lmax + 1);
            }
            for (int h = h0; h <= h1; h++) {
                float a = (x[i] - b0) / ((float)h - 0.5f) * (1 - 1e-5f), b = b0;
                if (!(a != 0) || !isfinite(a) || (mode == 1 && a < 0))
                    continue;
                levels_err(x, w, n, a, b, lmin, lmax, L);
                ls_fit(x, w, n, L, mode, &a, &b);
                const double e = levels_err(x, w, n, a, b, lmin, lmax, L);
                if (e < best) {
                    best = e;
                    *pa = a;
                    *pb = b;
                }
            }
        }
    }
    return best;
}

static float fp16_step(float v, int steps);

/* ---- k-quant super-blocks ---- */

typedef struct kblock {
    float D, M; /* fp16-exact */
    int sc[16], mn[16];
    int8_t L[QK_K];
    double err;
} kblock;

/* Step 2 for given fp16 D, M: the integers of each sub-block and the error. */
static void choose_ints(const kspec *k, const float *x, const float *w, const float *a, const float *b, kblock *kb) {
    const int nsub = k->block / k->sub;
    kb->err = 0;
    for (int j = 0; j < nsub; j++) {
        const float *xj = x + j * k->sub, *wj = w + j * k->sub;
        const int sc0 = kb->D != 0 ? clampi(sd_nearest_int(a[j] / kb->D), k->scmin, k->scmax) : 0;
        const int m0 = k->mode == 1 && kb->M != 0 ? clampi(sd_nearest_int(-b[j] / kb->M), 0, k->mmax) : 0;
        double best = INFINITY;
        int8_t L[32];
        for (int ds = -1; ds <= 1; ds++) {
            const int sc = sc0 + ds;
            if (sc < k->scmin || sc > k->scmax || (ds && kb->D == 0))
                continue;
            for (int dm = -1; dm <= 1; dm++) {
                const int mn = m0 + dm;
                if (mn < 0 || mn > k->mmax || (dm && (k->mode != 1 || kb->M == 0)))
                    continue;
                const float aa = kb->D * (float)sc, bb = -(kb->M * (float)mn);
                const double e = levels_err(xj, wj, k->sub, aa, bb, k->lmin, k->lmax, L);
                if (e < best) {
                    best = e;
                    kb->sc[j] = sc;
                    kb->mn[j] = mn;
                    memcpy(kb->L + j * k->sub, L, (size_t)k->sub);
                }
            }
        }
        kb->err += best;
    }
}

/* The weighted least-squares (D, M) for the block's integers. */
static bool refit_dm(const kspec *k, const float *x, const float *w, const kblock *kb, float *D, float *M) {
    double A = 0, B = 0, C = 0, p = 0, q = 0;
    for (int i = 0; i < k->block; i++) {
        const int j = i / k->sub;
        const double u = (double)kb->sc[j] * kb->L[i], v = -(double)kb->mn[j], wi = w[i];
        A += wi * u * u;
        B += wi * u * v;
        C += wi * v * v;
        p += wi * u * x[i];
        q += wi * v * x[i];
    }
    if (k->mode != 1 || C == 0) {
        if (!(A > 0))
            return false;
        *D = (float)(p / A);
        *M = kb->M;
        return true;
    }
    const double det = A * C - B * B;
    if (!(det > 1e-12 * A * C))
        return false;
    double d = (p * C - B * q) / det, m = (A * q - B * p) / det;
    if (m < 0) {
        m = 0;
        d = A > 0 ? p / A : 0;
    }
    *D = (float)d;
    *M = (float)m;
    return true;
}

static void search_k(const kspec *k, const float *x, const float *w, kblock *best) {
    const int nsub = k->block / k->sub;
    float a[16], b[16];
    float amax = 0, asgn = 0, bmax = 0;
    for (int j = 0; j < nsub; j++) {
        fit_sub(x + j * k->sub, w + j * k->sub, k->sub, k->lmin, k->lmax, k->mode, &a[j], &b[j]);
        if (fabsf(a[j]) > amax) {
            amax = fabsf(a[j]);
            asgn = a[j];
        }
        if (-b[j] > bmax)
            bmax = -b[j];
    }
    static const float fs[] = {1.04f, 1.0f, 0.96f, 0.92f, 0.88f, 0.84f, 0.8f, 0.76f};
    static const float fm[] = {1.0f, 0.9f, 0.8f, 1.1f};
    const int nfs = (int)(sizeof fs / sizeof fs[0]);
    const int nfm = k->mode == 1 && bmax > 0 ? (int)(sizeof fm / sizeof fm[0]) : 1;
    const int nside = k->mode == 0 ? 2 : 1;
    best->err = INFINITY;
    kblock kb;
    for (int side = 0; side < nside; side++)
        for (int i = 0; i < nfs; i++)
            for (int im = 0; im < nfm; im++) {
                const float top = side ? (float)k->scmin : (float)k->scmax;
                kb.D = amax > 0 ? fp16_round(asgn / (top * fs[i])) : 0;
                kb.M = k->mode == 1 && bmax > 0 ? fp16_round(bmax * fm[im] / (float)k->mmax) : 0;
                if (!isfinite(kb.D) || !isfinite(kb.M))
                    continue;
                choose_ints(k, x, w, a, b, &kb);
                if (kb.err < best->err)
                    *best = kb;
            }
    if (!isfinite(best->err)) { /* nothing representable: zeros */
        memset(best, 0, sizeof *best);
        best->err = INFINITY;
        return;
    }
    for (int it = 0; it < 2; it++) {
        float D, M;
        if (!refit_dm(k, x, w, best, &D, &M))
            break;
        kb.D = fp16_round(D);
        kb.M = fp16_round(M);
        if (!isfinite(kb.D) || !isfinite(kb.M))
            break;
        choose_ints(k, x, w, a, b, &kb);
        if (!(kb.err < best->err))
            break;
        *best = kb;
    }
    /* the fp16 neighbours of D (and Dmin) */
    const kblock base = *best;
    const int rm = k->mode == 1 && base.M != 0 ? 2 : 0;
    for (int dd = -2; dd <= 2; dd++)
        for (int dm = -rm; dm <= rm; dm++) {
            if (!dd && !dm)
                continue;
            kb.D = fp16_step(base.D, dd);
            kb.M = rm ? fp16_step(base.M, dm) : base.M;
            if (!isfinite(kb.D) || !isfinite(kb.M) || kb.M < 0)
                continue;
            choose_ints(k, x, w, a, b, &kb);
            if (kb.err < best->err)
                *best = kb;
        }
}

/* 6-bit scales and mins of Q4_K / Q5_K into their 12 bytes. */
static void pack_k4_scales(const int *sc, const int *mn, uint8_t *p) {
    memset(p, 0, K_SCALE_SIZE);
    for (int j = 0; j < 8; j++) sd_set_scale_min_k4(j, (uint8_t)sc[j], (uint8_t)mn[j], p);
}

/* Writes kb (levels relative to lmin made unsigned) in type k->type at dst. */
static void pack_k(const kspec *k, const kblock *kb, void *dst) {
    uint8_t U[QK_K];
    for (int i = 0; i < QK_K; i++) U[i] = (uint8_t)(kb->L[i] - k->lmin);
    const uint16_t d16 = sd_fp32_to_fp16(kb->D), m16 = sd_fp32_to_fp16(kb->M);
    switch (k->type) {
    case GGML_TYPE_Q2_K: {
        block_q2_K *y = dst;
        for (int j = 0; j < 16; j++) y->scales[j] = (uint8_t)(kb->sc[j] | (kb->mn[j] << 4));
        sd_pack_2bit(U, y->qs);
        y->d = d16;
        y->dmin = m16;
        break;
    }
    case GGML_TYPE_Q3_K: {
        block_q3_K *y = dst;
        memset(y->scales, 0, sizeof y->scales);
        for (int j = 0; j < 16; j++) {
            const int l = kb->sc[j] + 32;
            if (j < 8)
                y->scales[j] |= (uint8_t)(l & 0xF);
            else
                y->scales[j - 8] |= (uint8_t)((l & 0xF) << 4);
            y->scales[j % 4 + 8] |= (uint8_t)((l >> 4) << (2 * (j / 4)));
        }
        memset(y->hmask, 0, sizeof y->hmask);
        uint8_t low[QK_K];
        for (int e = 0; e < QK_K; e++) {
            if (U[e] > 3)
                y->hmask[e % 32] |= (uint8_t)(1u << (e / 32));
            low[e] = (uint8_t)(U[e] & 3);
        }
        sd_pack_2bit(low, y->qs);
        y->d = d16;
        break;
    }
    case GGML_TYPE_Q4_K: {
        block_q4_K *y = dst;
        y->d = d16;
        y->dmin = m16;
        pack_k4_scales(kb->sc, kb->mn, y->scales);
        uint8_t *q = y->qs;
        for (int j = 0; j < QK_K; j += 64, q += 32)
            for (int l = 0; l < 32; l++) q[l] = (uint8_t)(U[j + l] | (U[j + l + 32] << 4));
        break;
    }
    case GGML_TYPE_Q5_K: {
        block_q5_K *y = dst;
        y->d = d16;
        y->dmin = m16;
        pack_k4_scales(kb->sc, kb->mn, y->scales);
        memset(y->qh, 0, sizeof y->qh);
        uint8_t *ql = y->qs;
        for (int n = 0, s = 0; n < QK_K; n += 64, ql += 32, s += 2)
            for (int j = 0; j < 32; j++) {
                const int l1 = U[n + j], l2 = U[n + j + 32];
                y->qh[j] |= (uint8_t)(((l1 >> 4) << s) | ((l2 >> 4) << (s + 1)));
                ql[j] = (uint8_t)((l1 & 0xF) | ((l2 & 0xF) << 4));
            }
        break;
    }
    default: { /* Q6_K */
        block_q6_K *y = dst;
        for (int j = 0; j < 16; j++) y->scales[j] = (int8_t)kb->sc[j];
        y->d = d16;
        uint8_t *ql = y->ql, *qh = y->qh;
        for (int j = 0; j < QK_K; j += 128, ql += 64, qh += 32)
            for (int l = 0; l < 32; l++) {
                ql[l] = (uint8_t)((U[j + l] & 0xF) | ((U[j + l + 64] & 0xF) << 4));
                ql[l + 32] = (uint8_t)((U[j + l + 32] & 0xF) | ((U[j + l + 96] & 0xF) << 4));
                qh[l] = (uint8_t)((U[j + l] >> 4) | ((U[j + l + 32] >> 4) << 2) | ((U[j + l + 64] >> 4) << 4) |
                                  ((U[j + l + 96] >> 4) << 6));
            }
        break;
    }
    }
}

/* ---- legacy 32-blocks ---- */

static void pack_legacy(const kspec *k, float d, float m, const int8_t *L, void *dst) {
    uint8_t U[32];
    for (int i = 0; i < 32; i++) U[i] = (uint8_t)(L[i] - k->lmin);
    uint8_t *qs;
    uint32_t qh = 0;
    for (int i = 0; i < 32; i++) qh |= (uint32_t)((U[i] >> 4) & 1) << i;
    switch (k->type) {
    case GGML_TYPE_Q4_0: {
        block_q4_0 *y = dst;
        y->d = sd_fp32_to_fp16(d);
        qs = y->qs;
        break;
    }
    case GGML_TYPE_Q4_1: {
        block_q4_1 *y = dst;
        y->d = sd_fp32_to_fp16(d);
        y->m = sd_fp32_to_fp16(m);
        qs = y->qs;
        break;
    }
    case GGML_TYPE_Q5_0: {
        block_q5_0 *y = dst;
        y->d = sd_fp32_to_fp16(d);
        memcpy(y->qh, &qh, 4); /* little-endian hosts only, as the rest of numerics */
        qs = y->qs;
        break;
    }
    default: { /* Q5_1 */
        block_q5_1 *y = dst;
        y->d = sd_fp32_to_fp16(d);
        y->m = sd_fp32_to_fp16(m);
        memcpy(y->qh, &qh, 4);
        qs = y->qs;
        break;
    }
    }
    for (int i = 0; i < 16; i++) qs[i] = (uint8_t)((U[i] & 0xF) | ((U[i + 16] & 0xF) << 4));
}

/* fp16 value `steps` units in the last place away from the fp16 value v. */
static float fp16_step(float v, int steps) {
    uint16_t h = sd_fp32_to_fp16(v);
    int mag = h & 0x7FFF, sign = h & 0x8000;
    int s = sign ? -1 : 1, signed_mag = s * mag + steps;
    if (signed_mag < -0x7BFF || signed_mag > 0x7BFF)
        return NAN;
    h = (uint16_t)(signed_mag < 0 ? (0x8000 | -signed_mag) : signed_mag);
    return sd_fp16_to_fp32(h);
}

static void search_legacy(const kspec *k, const float *x, const float *w, void *dst) {
    float a, b;
    fit_sub(x, w, 32, k->lmin, k->lmax, k->mode, &a, &b);
    const float a0 = fp16_round(a), b0 = fp16_round(b);
    double best = INFINITY;
    float bd = 0, bm = 0;
    int8_t L[32], BL[32];
    memset(BL, 0, sizeof BL);
    const int rm = k->mode == 2 ? 3 : 0;
    for (int da = -3; da <= 3; da++)
        for (int dm = -rm; dm <= rm; dm++) {
            const float aa = fp16_step(a0, da), bb = k->mode == 2 ? fp16_step(b0, dm) : 0;
            if (!isfinite(aa) || !isfinite(bb))
                continue;
            const double e = levels_err(x, w, 32, aa, bb, k->lmin, k->lmax, L);
            if (e < best) {
                best = e;
                bd = aa;
                bm = bb;
                memcpy(BL, L, sizeof L);
            }
        }
    if (!isfinite(best)) {
        bd = 0;
        bm = 0;
        levels_err(x, w, 32, 0, 0, k->lmin, k->lmax, BL);
    }
    pack_legacy(k, bd, bm, BL, dst);
}

/* ---- dispatch ---- */

static double block_err(uint32_t t, const void *blk, const float *x, const float *w, int n) {
    float y[MAXB];
    sd_dequantize_row(t, blk, y, n);
    double e = 0;
    for (int i = 0; i < n; i++) {
        const double d = (double)x[i] - y[i];
        e += (double)w[i] * d * d;
    }
    return isfinite(e) ? e : INFINITY;
}

bool sd_kquant_weighted_has(uint32_t t) { return spec_of(t) != NULL; }

bool sd_kquant_row_weighted(uint32_t t, const float *x, void *dst, int64_t n, const float *w) {
    const kspec *k = spec_of(t);
    if (!k)
        return false;
    const uint32_t bytes = sd_quant_type_size(t);
    float ones[MAXB];
    for (int i = 0; i < MAXB; i++) ones[i] = 1.0f;
    uint8_t ours[256], ref[256]; /* the largest block here is Q6_K's 210 bytes */
    uint8_t *out = dst;
    for (int64_t i = 0; i < n / k->block; i++, out += bytes) {
        const float *xb = x + i * k->block, *wb = w ? w + i * k->block : ones;
        if (k->legacy) {
            search_legacy(k, xb, wb, ours);
        } else {
            kblock kb;
            search_k(k, xb, wb, &kb);
            pack_k(k, &kb, ours);
        }
        sd_quantize_row(t, xb, ref, k->block);
        const bool keep_ref = !(block_err(t, ours, xb, wb, k->block) < block_err(t, ref, xb, wb, k->block));
        memcpy(out, keep_ref ? ref : ours, bytes);
    }
    return true;
}
