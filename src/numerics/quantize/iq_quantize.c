/* Importance-weighted quantizers for the lookup-grid types, MXFP4 and IQ4.
 * Our own search (not ggml's); the objective everywhere is the weighted
 * squared error E = sum_j w[j] (x[j] - q[j])^2, w the importance matrix
 * column means (the diagonal of E[a a^T] over calibration activations a,
 * so E approximates the expected squared error of the matrix's outputs).
 *
 * Grid types (block 256; layouts in quant/iq2_xxs.c ... quant/iq3_s.c):
 * value = d * c * (2s + 1) * grid value * sign, d the block's fp16 scale, s a
 * 4-bit scale per scale group (32 values, or 16 for IQ2_XS / IQ2_S), c 1/8
 * (IQ2), 1/4 (IQ3_XXS) or 1 (IQ3_S). Per block:
 *  1. Signs: each value takes its own sign. IQ2_XXS, IQ2_XS and IQ3_XXS
 *     store 7 sign bits per 8 values and the eighth makes the count of minus
 *     signs even; where the count is odd, the value with the least w |x|
 *     takes the wrong sign, so its target |x| becomes -|x| (the grid search
 *     then gives it the smallest level).
 *  2. Per scale group, a float scale: 24 trial scales spread over
 *     [0.45, 1.6] x max|x| / top level; for each, every 8 (or 4) values take
 *     the grid entry of least weighted error among the K nearest entries of
 *     the point made of each value's nearest level (a neighbour table built
 *     once per grid); then the least-squares scale for that choice. The
 *     trial with the least error wins.
 *  3. The block scale d from the largest group scale (d c 31 = S_max, and 4
 *     smaller trials); per group s is the rounded (S / dc - 1) / 2 or its
 *     neighbour, each checked by re-choosing the entries at the quantized
 *     scale. The trial d with the least block error is written.
 * IQ1_S: the same search with a signed grid of -1, 0, 1, no signs, 3-bit
 *     scales and a shift of +-1/8 per 32 values, both shifts tried in step 2.
 * IQ1_M (layout in quant/iq1_m.c, after ggml-common.h block_iq1_m): the IQ1_S
 *     grid with 3-bit scales per 16 values and the +-1/8 shift per 8 values:
 *     wherever entries are chosen (steps 2 and 3) each group of 8 tries both
 *     shifts and keeps the one of lesser weighted error. d, stored as four
 *     nibbles in the scale words, is the same fp16 value.
 * MXFP4 (block 32, E8M0 exponent): every exponent within 2 of
 *     log2(max|x| / 6) is tried with each value at its nearest code.
 * IQ4_NL (block 32) and IQ4_XS (256, 6-bit signed sub-scales): per 32, 2 x
 *     41 trial scales with the largest |x| mapped near -127 or +113, nearest
 *     levels, the least-squares scale; IQ4_XS then quantizes the sub-scales
 *     under trial super-scales and re-picks the levels. */
#include "numerics/quantize/iq_quantize.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "format/ggml_type.h"
#include "numerics/quant.h"
#include "numerics/quant/iq_grids.h"

#define QKK 256
enum { K_NBR = 16 };

/* ---- grids and their neighbour tables ---- */

enum { G_IQ2XXS, G_IQ2XS, G_IQ2S, G_IQ3XXS, G_IQ3S, G_IQ1S, G_COUNT };

typedef struct grid {
    int P, N, nlev, nlat; /* values per entry, entries, levels, nlev^P */
    float lev[8];         /* the level values, ascending */
    float *val;           /* N x P entry values */
    uint16_t *nbr;        /* nlat x K_NBR entries nearest to each lattice point */
} grid;

static grid g_grids[G_COUNT];
static int g_grids_ok;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static int build_grid(grid *g, const uint16_t *codes, int N, int P, const int8_t *lv, int nlev) {
    g->P = P;
    g->N = N;
    g->nlev = nlev;
    g->nlat = 1;
    for (int j = 0; j < P; j++) g->nlat *= nlev;
    for (int i = 0; i < nlev; i++) g->lev[i] = (float)lv[i];
    g->val = malloc((size_t)N * (size_t)P * sizeof(float));
    g->nbr = malloc((size_t)g->nlat * K_NBR * sizeof(uint16_t));
    if (!g->val || !g->nbr) return 0;
    const int bits = P == 8 ? 2 : 3;
    for (int k = 0; k < N; k++)
        for (int j = 0; j < P; j++) g->val[k * P + j] = (float)lv[(codes[k] >> (bits * j)) & ((1 << bits) - 1)];
    float pt[8], bd[K_NBR];
    for (int L = 0; L < g->nlat; L++) {
        for (int j = 0, r = L; j < P; j++, r /= nlev) pt[j] = g->lev[r % nlev];
        int nb = 0;
        uint16_t *out = g->nbr + (size_t)L * K_NBR;
        for (int k = 0; k < N; k++) {
            float dist = 0;
            for (int j = 0; j < P; j++) dist += (pt[j] - g->val[k * P + j]) * (pt[j] - g->val[k * P + j]);
            if (nb == K_NBR && dist >= bd[K_NBR - 1]) continue;
            int pos = nb < K_NBR ? nb++ : K_NBR - 1;
            while (pos > 0 && bd[pos - 1] > dist) {
                bd[pos] = bd[pos - 1];
                out[pos] = out[pos - 1];
                pos--;
            }
            bd[pos] = dist;
            out[pos] = (uint16_t)k;
        }
    }
    return 1;
}

static void build_all(void) {
    static const int8_t lv2[3] = {8, 25, 43};
    g_grids_ok = build_grid(&g_grids[G_IQ2XXS], sd_iq2xxs_grid, 256, 8, lv2, 3) &&
                 build_grid(&g_grids[G_IQ2XS], sd_iq2xs_grid, 512, 8, lv2, 3) &&
                 build_grid(&g_grids[G_IQ2S], sd_iq2s_grid, 1024, 8, lv2, 3) &&
                 build_grid(&g_grids[G_IQ3XXS], sd_iq3xxs_grid, 256, 4, sd_iq3xxs_levels, 8) &&
                 build_grid(&g_grids[G_IQ3S], sd_iq3s_grid, 512, 4, sd_iq3s_levels, 8) &&
                 build_grid(&g_grids[G_IQ1S], sd_iq1s_grid, 2048, 8, sd_iq1s_levels, 3);
}

static const grid *get_grid(int id) {
    pthread_once(&g_once, build_all);
    return g_grids_ok ? &g_grids[id] : NULL;
}

/* The entry of least sum w (t - S v)^2 among the neighbours of t / S's
 * nearest lattice point; *err gets that error. */
static int best_entry(const grid *g, const float *t, const float *w, float S, float *err) {
    int L = 0, mul = 1;
    for (int j = 0; j < g->P; j++, mul *= g->nlev) {
        const float v = t[j] / S;
        int li = 0;
        for (int i = 1; i < g->nlev; i++)
            if (fabsf(v - g->lev[i]) < fabsf(v - g->lev[li])) li = i;
        L += li * mul;
    }
    const uint16_t *nb = g->nbr + (size_t)L * K_NBR;
    int best = nb[0];
    float be = INFINITY;
    for (int c = 0; c < K_NBR; c++) {
        const float *v = g->val + (size_t)nb[c] * g->P;
        float e = 0;
        for (int j = 0; j < g->P; j++) {
            const float r = t[j] - S * v[j];
            e += w[j] * r * r;
        }
        if (e < be) {
            be = e;
            best = nb[c];
        }
    }
    *err = be;
    return best;
}

/* ---- the grid block search ---- */

typedef struct gtype {
    int grid;   /* G_* */
    int sg;     /* scale group length: 32 or 16 */
    int parity; /* 7 stored sign bits per 8 values, even count of minus signs */
    float c;    /* value = d c (2s + 1) grid sign */
    int iq1;    /* 1 (IQ1_S): signed grid {-1, 0, 1}, no signs, value = d (2s + 1)
                 * (grid + delta), delta +-1/8 per scale group, s 3 bits;
                 * 2 (IQ1_M): the same with delta +-1/8 per 8 values */
} gtype;

typedef struct gres {
    float d;
    int s[16];
    uint16_t idx[64]; /* per entry of P values, in order */
    uint8_t sign[32]; /* per 8 values: bit j = value j negative */
    int neg_delta[16]; /* IQ1_S: delta -1/8 in this scale group */
    uint8_t neg8[32];  /* IQ1_M: delta -1/8 for this entry of 8 */
} gres;

/* Entries of one scale group at scale S (values S (grid + delta)): sum of
 * the errors; idx filled. neg8 != NULL (IQ1_M): each entry takes the delta
 * sign (+-1/8) of its lesser error, written to neg8; delta is then unused. */
static float pick_group_d(const grid *g, const float *t, const float *w, int len, float S, float delta,
                          uint16_t *idx, uint8_t *neg8) {
    float tot = 0, e, ts[32];
    if (neg8) {
        for (int k = 0; k < len / g->P; k++) {
            float best = INFINITY;
            for (int ng = 0; ng < 2; ng++) {
                const float dl = ng ? -0.125f : 0.125f;
                for (int j = 0; j < g->P; j++) ts[j] = t[k * g->P + j] - S * dl;
                const int i = best_entry(g, ts, w + k * g->P, S, &e);
                if (e < best) {
                    best = e;
                    idx[k] = (uint16_t)i;
                    neg8[k] = (uint8_t)ng;
                }
            }
            tot += best;
        }
        return tot;
    }
    for (int j = 0; j < len; j++) ts[j] = t[j] - S * delta;
    for (int k = 0; k < len / g->P; k++) {
        idx[k] = (uint16_t)best_entry(g, ts + k * g->P, w + k * g->P, S, &e);
        tot += e;
    }
    return tot;
}


/* The float scale of least error for a scale group (0 if nothing to fit).
 * iq1: also the delta sign (*neg), each tried. */
static float fit_group(const grid *g, const float *t, const float *w, int len, int iq1, int *neg) {
    float tmax = 0;
    for (int j = 0; j < len; j++)
        if ((iq1 ? fabsf(t[j]) : t[j]) > tmax) tmax = iq1 ? fabsf(t[j]) : t[j];
    if (tmax <= 0) return 0;
    const float top = g->lev[g->nlev - 1] + (iq1 ? 0.125f : 0.0f);
    float best_S = tmax / top, best_e = INFINITY;
    uint16_t idx[32];
    uint8_t n8[32];
    const int per8 = iq1 == 2, tries = iq1 == 1 ? 2 : 1;
    for (int it = 0; it < 24 * tries; it++) {
        const float delta = iq1 == 1 ? (it & 1 ? -0.125f : 0.125f) : 0.0f;
        const float S0 = tmax / top * (0.45f + 0.05f * (float)(it / tries));
        pick_group_d(g, t, w, len, S0, delta, idx, per8 ? n8 : NULL);
        double num = 0, den = 0, tt = 0;
        for (int k = 0; k < len / g->P; k++)
            for (int j = 0; j < g->P; j++) {
                const int e = k * g->P + j;
                const double v = g->val[(size_t)idx[k] * g->P + j] + (per8 ? (n8[k] ? -0.125 : 0.125) : delta);
                num += (double)w[e] * t[e] * v;
                den += (double)w[e] * v * v;
                tt += (double)w[e] * t[e] * t[e];
            }
        if (den <= 0 || num <= 0) continue;
        const double err = tt - num * num / den;
        if (err < best_e) {
            best_e = (float)err;
            best_S = (float)(num / den);
            if (neg && !per8) *neg = delta < 0;
        }
    }
    return best_S;
}

static void quantize_grid_block(const gtype *gt, const grid *g, const float *x, const float *w, gres *r) {
    float t[QKK];
    memset(r, 0, sizeof *r);
    /* 1. signs (IQ1_S: none, the grid is signed) */
    for (int gi = 0; gi < 32 && gt->iq1; gi++)
        for (int j = 0; j < 8; j++) t[8 * gi + j] = x[8 * gi + j];
    for (int gi = 0; gi < 32 && !gt->iq1; gi++) {
        uint8_t sb = 0;
        for (int j = 0; j < 8; j++) {
            const float v = x[8 * gi + j];
            t[8 * gi + j] = fabsf(v);
            if (v < 0) sb |= (uint8_t)(1u << j);
        }
        if (gt->parity && __builtin_popcount(sb) & 1) {
            int jm = 0;
            for (int j = 1; j < 8; j++)
                if (w[8 * gi + j] * t[8 * gi + j] < w[8 * gi + jm] * t[8 * gi + jm]) jm = j;
            sb ^= (uint8_t)(1u << jm);
            t[8 * gi + jm] = -t[8 * gi + jm];
        }
        r->sign[gi] = sb;
    }
    /* 2. float scale per group */
    const int ng = QKK / gt->sg, per = gt->sg / g->P;
    float S[16], smax = 0;
    for (int k = 0; k < ng; k++) {
        S[k] = fit_group(g, t + k * gt->sg, w + k * gt->sg, gt->sg, gt->iq1, &r->neg_delta[k]);
        if (S[k] > smax) smax = S[k];
    }
    if (smax <= 0) return; /* d 0: all zero */
    /* 3. block scale trials */
    static const float trial31[5] = {31.f, 30.f, 29.f, 32.f, 27.f}, trial15[5] = {15.f, 14.f, 13.f, 16.f, 12.f};
    const float *trial = gt->iq1 ? trial15 : trial31;
    const int s_top = gt->iq1 ? 7 : 15;
    float best = INFINITY;
    gres cur;
    for (int tr = 0; tr < 5; tr++) {
        const uint16_t d16 = sd_fp32_to_fp16(smax / (gt->c * trial[tr]));
        const float dq = sd_fp16_to_fp32(d16);
        if (!(dq > 0) || !isfinite(dq)) continue;
        cur = *r;
        cur.d = dq;
        float tot = 0;
        for (int k = 0; k < ng; k++) {
            const float *tk = t + k * gt->sg, *wk = w + k * gt->sg;
            int s0 = (int)floorf((S[k] / (dq * gt->c) - 1.0f) * 0.5f);
            float be = INFINITY;
            uint16_t idx[32];
            uint8_t n8[32];
            uint8_t *n8p = gt->iq1 == 2 ? n8 : NULL;
            const float delta = gt->iq1 ? (r->neg_delta[k] ? -0.125f : 0.125f) : 0.0f;
            for (int s = s0; s <= s0 + 1; s++) {
                if (s < 0 || s > s_top) continue;
                float e = pick_group_d(g, tk, wk, gt->sg, dq * gt->c * (float)(2 * s + 1), delta, idx, n8p);
                if (e < be) {
                    be = e;
                    cur.s[k] = s;
                    memcpy(cur.idx + k * per, idx, (size_t)per * sizeof idx[0]);
                    if (n8p) memcpy(cur.neg8 + k * per, n8, (size_t)per);
                }
            }
            if (be == INFINITY) { /* scale above the top: take the top */
                cur.s[k] = s0 < 0 ? 0 : s_top;
                be = pick_group_d(g, tk, wk, gt->sg, dq * gt->c * (float)(2 * cur.s[k] + 1), delta, cur.idx + k * per,
                                  n8p ? cur.neg8 + k * per : NULL);
            }
            tot += be;
        }
        if (tot < best) {
            best = tot;
            *r = cur;
        }
    }
}

static void put16(uint8_t *p, uint16_t v) {
    p[0] = (uint8_t)v;
    p[1] = (uint8_t)(v >> 8);
}
static void put32(uint8_t *p, uint32_t v) {
    for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i);
}

/* Writes r in type t's layout (the byte maps of quant/<type>.c). */
static void pack_grid(uint32_t t, const gres *r, uint8_t *b) {
    if (t != GGML_TYPE_IQ1_M) put16(b, sd_fp32_to_fp16(r->d));
    switch (t) {
    case GGML_TYPE_IQ2_XXS:
        memset(b + 2, 0, 64);
        for (int ib = 0; ib < 8; ib++) {
            uint32_t a = (uint32_t)r->s[ib] << 28;
            for (int l = 0; l < 4; l++) {
                b[2 + 8 * ib + l] = (uint8_t)r->idx[4 * ib + l];
                a |= (uint32_t)(r->sign[4 * ib + l] & 127) << 7 * l;
            }
            put32(b + 2 + 8 * ib + 4, a);
        }
        break;
    case GGML_TYPE_IQ2_XS:
        for (int gi = 0; gi < 32; gi++) put16(b + 2 + 2 * gi, (uint16_t)(r->idx[gi] | (r->sign[gi] & 127) << 9));
        for (int ib = 0; ib < 8; ib++) b[66 + ib] = (uint8_t)(r->s[2 * ib] | r->s[2 * ib + 1] << 4);
        break;
    case GGML_TYPE_IQ2_S:
        memset(b + 66, 0, 8);
        for (int gi = 0; gi < 32; gi++) {
            b[2 + gi] = (uint8_t)r->idx[gi];
            b[34 + gi] = r->sign[gi];
            b[66 + gi / 4] |= (uint8_t)((r->idx[gi] >> 8) << 2 * (gi % 4));
        }
        for (int ib = 0; ib < 8; ib++) b[74 + ib] = (uint8_t)(r->s[2 * ib] | r->s[2 * ib + 1] << 4);
        break;
    case GGML_TYPE_IQ3_XXS:
        for (int e = 0; e < 64; e++) b[2 + e] = (uint8_t)r->idx[e];
        for (int ib = 0; ib < 8; ib++) {
            uint32_t a = (uint32_t)r->s[ib] << 28;
            for (int l = 0; l < 4; l++) a |= (uint32_t)(r->sign[4 * ib + l] & 127) << 7 * l;
            put32(b + 66 + 4 * ib, a);
        }
        break;
    case GGML_TYPE_IQ3_S:
        memset(b + 66, 0, 8);
        memset(b + 106, 0, 4);
        for (int e = 0; e < 64; e++) {
            b[2 + e] = (uint8_t)r->idx[e];
            b[66 + e / 8] |= (uint8_t)(((r->idx[e] >> 8) & 1) << (e % 8));
        }
        for (int gi = 0; gi < 32; gi++) b[74 + gi] = r->sign[gi];
        for (int ib = 0; ib < 8; ib++) b[106 + ib / 2] |= (uint8_t)(r->s[ib] << 4 * (ib % 2));
        break;
    case GGML_TYPE_IQ1_S:
        for (int ib = 0; ib < 8; ib++) {
            uint16_t h = (uint16_t)(r->s[ib] << 12 | (r->neg_delta[ib] ? 0x8000 : 0));
            for (int l = 0; l < 4; l++) {
                b[2 + 4 * ib + l] = (uint8_t)r->idx[4 * ib + l];
                h |= (uint16_t)((r->idx[4 * ib + l] >> 8) << 3 * l);
            }
            put16(b + 34 + 2 * ib, h);
        }
        break;
    case GGML_TYPE_IQ1_M: { /* quant/iq1_m.c: no fp16 field, d in the top nibbles of the scales */
        const uint16_t d16 = sd_fp32_to_fp16(r->d);
        for (int e = 0; e < 32; e++) {
            b[e] = (uint8_t)r->idx[e];
            const uint8_t h = (uint8_t)((r->idx[e] >> 8) | (r->neg8[e] ? 8 : 0));
            if (e % 2) b[32 + e / 2] |= (uint8_t)(h << 4);
            else b[32 + e / 2] = h;
        }
        for (int u = 0; u < 4; u++) {
            uint16_t v = (uint16_t)(((d16 >> 4 * u) & 0xF) << 12);
            for (int half = 0; half < 2; half++) /* sub-block 2u + half: its two 3-bit scales */
                v |= (uint16_t)((r->s[4 * u + 2 * half] | r->s[4 * u + 2 * half + 1] << 3) << 6 * half);
            put16(b + 48 + 2 * u, v);
        }
        break;
    }
    default: break;
    }
}

static const gtype *grid_type(uint32_t t, int *bytes) {
    static const gtype T[] = {
        {G_IQ2XXS, 32, 1, 0.125f, 0}, {G_IQ2XS, 16, 1, 0.125f, 0}, {G_IQ2S, 16, 0, 0.125f, 0},
        {G_IQ3XXS, 32, 1, 0.25f, 0}, {G_IQ3S, 32, 0, 1.0f, 0}, {G_IQ1S, 32, 0, 1.0f, 1},
        {G_IQ1S, 16, 0, 1.0f, 2},
    };
    switch (t) {
    case GGML_TYPE_IQ2_XXS: *bytes = 66; return &T[0];
    case GGML_TYPE_IQ2_XS: *bytes = 74; return &T[1];
    case GGML_TYPE_IQ2_S: *bytes = 82; return &T[2];
    case GGML_TYPE_IQ3_XXS: *bytes = 98; return &T[3];
    case GGML_TYPE_IQ3_S: *bytes = 110; return &T[4];
    case GGML_TYPE_IQ1_S: *bytes = 50; return &T[5];
    case GGML_TYPE_IQ1_M: *bytes = 56; return &T[6];
    default: return NULL;
    }
}

/* ---- MXFP4 ---- */

static const float k_mx[8] = {0, 1, 2, 3, 4, 6, 8, 12}; /* doubled E2M1 magnitudes */

static int mx_nearest(float a) {
    int m = 0;
    for (int i = 1; i < 8; i++)
        if (fabsf(a - k_mx[i]) < fabsf(a - k_mx[m])) m = i;
    return m;
}

static void quantize_mxfp4_block(const float *x, const float *w, uint8_t *b) {
    float amax = 0;
    for (int j = 0; j < 32; j++)
        if (fabsf(x[j]) > amax) amax = fabsf(x[j]);
    memset(b, 0, 17);
    if (!(amax > 0)) return;
    const int e0 = 128 + (int)floorf(log2f(amax / 12.0f));
    float best = INFINITY;
    for (int e = e0 - 2; e <= e0 + 2; e++) {
        if (e < 0 || e > 254) continue;
        const float D = ldexpf(1.0f, e - 128);
        float err = 0;
        for (int j = 0; j < 32; j++) {
            const float q = k_mx[mx_nearest(fabsf(x[j]) / D)] * D;
            err += w[j] * (fabsf(x[j]) - q) * (fabsf(x[j]) - q);
        }
        if (err < best) {
            best = err;
            b[0] = (uint8_t)e;
        }
    }
    const float D = ldexpf(1.0f, b[0] - 128);
    for (int j = 0; j < 32; j++) {
        const int m = mx_nearest(fabsf(x[j]) / D);
        const int code = m | (m && x[j] < 0 ? 8 : 0);
        b[1 + j % 16] |= (uint8_t)(code << 4 * (j / 16));
    }
}

/* ---- IQ4_NL / IQ4_XS ---- */

extern const int8_t sd_kvalues_iq4nl[16];

static int nl_nearest(float v) {
    int m = 0;
    for (int i = 1; i < 16; i++)
        if (fabsf(v - sd_kvalues_iq4nl[i]) < fabsf(v - sd_kvalues_iq4nl[m])) m = i;
    return m;
}

/* Weighted error of 32 values at scale D with nearest levels. */
static float nl_err(const float *x, const float *w, float D) {
    float e = 0;
    for (int j = 0; j < 32; j++) {
        const float q = D != 0 ? D * sd_kvalues_iq4nl[nl_nearest(x[j] / D)] : 0;
        e += w[j] * (x[j] - q) * (x[j] - q);
    }
    return e;
}

/* The signed float scale of least error for 32 values. */
static float nl_fit(const float *x, const float *w) {
    float xm = 0;
    for (int j = 0; j < 32; j++)
        if (fabsf(x[j]) > fabsf(xm)) xm = x[j];
    if (xm == 0) return 0;
    float best_D = xm / -127.0f, best_e = INFINITY;
    for (int side = 0; side < 2; side++) {
        const float base = xm / (side ? 113.0f : -127.0f);
        for (int it = -20; it <= 20; it++) {
            const float D = base * (1.0f + 0.01f * (float)it);
            double num = 0, den = 0, tt = 0;
            for (int j = 0; j < 32; j++) {
                const double q = sd_kvalues_iq4nl[nl_nearest(x[j] / D)];
                num += (double)w[j] * x[j] * q;
                den += (double)w[j] * q * q;
                tt += (double)w[j] * x[j] * x[j];
            }
            if (den <= 0) continue;
            const double err = tt - num * num / den;
            if (err < best_e) {
                best_e = (float)err;
                best_D = (float)(num / den);
            }
        }
    }
    return best_D;
}

static void nl_pack(const float *x, float D, uint8_t *qs) {
    for (int j = 0; j < 16; j++) {
        const int lo = D != 0 ? nl_nearest(x[j] / D) : 8, hi = D != 0 ? nl_nearest(x[j + 16] / D) : 8;
        qs[j] = (uint8_t)(lo | hi << 4);
    }
}

static void quantize_iq4nl_block(const float *x, const float *w, uint8_t *b) {
    const uint16_t d16 = sd_fp32_to_fp16(nl_fit(x, w));
    put16(b, d16);
    nl_pack(x, sd_fp16_to_fp32(d16), b + 2);
}

static void quantize_iq4xs_block(const float *x, const float *w, uint8_t *b) {
    float D[8], amax = 0;
    for (int ib = 0; ib < 8; ib++) {
        D[ib] = nl_fit(x + 32 * ib, w + 32 * ib);
        if (fabsf(D[ib]) > amax) amax = fabsf(D[ib]);
    }
    memset(b, 0, 136);
    if (!(amax > 0)) return; /* d 0: all zero */
    static const float trial[4] = {31.f, 32.f, 30.f, 28.f};
    float best = INFINITY;
    int best_l[8] = {0};
    uint16_t best_d16 = 0;
    for (int tr = 0; tr < 4; tr++) {
        const uint16_t d16 = sd_fp32_to_fp16(amax / trial[tr]);
        const float dq = sd_fp16_to_fp32(d16);
        if (!(dq > 0)) continue;
        float tot = 0;
        int l[8];
        for (int ib = 0; ib < 8; ib++) {
            int l0 = (int)lrintf(D[ib] / dq), lb = 0;
            float be = INFINITY;
            for (int c = l0 - 1; c <= l0 + 1; c++) {
                if (c < -32 || c > 31) continue;
                const float e = nl_err(x + 32 * ib, w + 32 * ib, dq * (float)c);
                if (e < be) {
                    be = e;
                    lb = c;
                }
            }
            l[ib] = lb;
            tot += be;
        }
        if (tot < best) {
            best = tot;
            best_d16 = d16;
            memcpy(best_l, l, sizeof l);
        }
    }
    put16(b, best_d16);
    uint16_t sh = 0;
    for (int ib = 0; ib < 8; ib++) {
        const int ls = best_l[ib] + 32;
        b[4 + ib / 2] |= (uint8_t)((ls & 0xF) << 4 * (ib % 2));
        sh |= (uint16_t)((ls >> 4) << 2 * ib);
        nl_pack(x + 32 * ib, sd_fp16_to_fp32(best_d16) * (float)best_l[ib], b + 8 + 16 * ib);
    }
    put16(b + 2, sh);
}

/* ---- rows ---- */

bool sd_quantize_weighted_has(uint32_t t, bool have_weights) {
    int bytes;
    if (grid_type(t, &bytes) || t == GGML_TYPE_MXFP4) return true;
    return have_weights && (t == GGML_TYPE_IQ4_NL || t == GGML_TYPE_IQ4_XS);
}

bool sd_quantize_row_weighted(uint32_t t, const float *x, void *dst, int64_t n, const float *w) {
    if (!sd_quantize_weighted_has(t, true)) return false;
    int bytes = 0;
    const gtype *gt = grid_type(t, &bytes);
    const grid *g = gt ? get_grid(gt->grid) : NULL;
    if (gt && !g) return false;
    const int blk = gt || t == GGML_TYPE_IQ4_XS ? QKK : 32;
    if (!gt) bytes = t == GGML_TYPE_MXFP4 ? 17 : t == GGML_TYPE_IQ4_NL ? 18 : 136;
    float ones[QKK];
    for (int j = 0; j < QKK; j++) ones[j] = 1.0f;
    uint8_t *out = dst;
    for (int64_t i = 0; i < n / blk; i++, out += bytes) {
        const float *xb = x + i * blk, *wb = w ? w + i * blk : ones;
        if (gt) {
            gres r;
            quantize_grid_block(gt, g, xb, wb, &r);
            pack_grid(t, &r, out);
        } else if (t == GGML_TYPE_MXFP4) {
            quantize_mxfp4_block(xb, wb, out);
        } else if (t == GGML_TYPE_IQ4_NL) {
            quantize_iq4nl_block(xb, wb, out);
        } else {
            quantize_iq4xs_block(xb, wb, out);
        }
    }
    return true;
}
