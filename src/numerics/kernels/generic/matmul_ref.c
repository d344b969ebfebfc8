/* The scalar reference of the batched matmul: block decoding, activation
 * quantization and the per-element reduction order every other build must
 * reproduce bit for bit (see matmul_impl.h). Block layouts: llama.cpp
 * ggml/src/ggml-common.h (block_q8_0, block_q4_0, ..., block_q6_K). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "numerics/kernels/matmul_impl.h"
#include "numerics/quant.h"

/* packed_bytes: see matmul_pack.c (ints + f32 scales for 8 rows; Q8_0, Q4_K: f16). */
static const sd_wtype k_types[] = {
    {GGML_TYPE_F32, 1, 4, 0, 0},
    {GGML_TYPE_F16, 1, 2, 0, 0},
    {GGML_TYPE_BF16, 1, 2, 0, 0},
    {GGML_TYPE_Q8_0, 32, 34, 0, 8 * 32 + 8 * 2},
    {GGML_TYPE_Q4_0, 32, 18, 0, 8 * 16 + 8 * 4},
    {GGML_TYPE_Q4_1, 32, 20, 0, 8 * 16 + 8 * 4 + 8 * 4},
    {GGML_TYPE_Q5_0, 32, 22, 0, 8 * 16 + 8 * 4 + 8 * 4},
    {GGML_TYPE_Q5_1, 32, 24, 0, 8 * 16 + 8 * 4 + 8 * 4 + 8 * 4},
    {GGML_TYPE_Q4_K, 256, 144, 1, 8 * 128 + 8 * 8 + 8 * 8 + 8 * 2 + 8 * 2},
    {GGML_TYPE_Q5_K, 256, 176, 1, 8 * 128 + 8 * 32 + 8 * 8 + 8 * 8 + 8 * 4 + 8 * 4},
    {GGML_TYPE_Q6_K, 256, 210, 1, 8 * 128 + 8 * 64 + 8 * 16 + 8 * 4},
    {GGML_TYPE_Q2_K, 256, 84, 1, 8 * 64 + 8 * 16 + 8 * 4 + 8 * 4},
    {GGML_TYPE_Q3_K, 256, 110, 1, 8 * 64 + 8 * 32 + 8 * 16 + 8 * 4},
    {GGML_TYPE_IQ4_NL, 32, 18, 0, 8 * 16 + 8 * 4},
    {GGML_TYPE_IQ4_XS, 256, 136, 1, 8 * 128 + 8 * 8 + 8 * 4},
};

const sd_wtype *sd_wtype_get(uint32_t type) {
    for (size_t i = 0; i < sizeof k_types / sizeof k_types[0]; i++)
        if (k_types[i].type == type) return &k_types[i];
    return NULL;
}

static float f16(const uint8_t *p) { return sd_fp16_to_fp32((uint16_t)(p[0] | p[1] << 8)); }

/* ggml-quants.c get_scale_min_k4: 6-bit scale and min j of a Q4_K/Q5_K block. */
static void scale_min_k4(int j, const uint8_t *q, int *sc, int *mn) {
    if (j < 4) {
        *sc = q[j] & 63;
        *mn = q[j + 4] & 63;
    } else {
        *sc = (q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4);
        *mn = (q[j + 4] >> 4) | ((q[j] >> 6) << 4);
    }
}

static void decode_32(const uint8_t *qs, uint32_t qh, int bits5, int8_t *q) {
    for (int i = 0; i < 16; i++) {
        q[i] = (int8_t)((qs[i] & 0xF) | (bits5 ? ((qh >> i) & 1) << 4 : 0));
        q[i + 16] = (int8_t)((qs[i] >> 4) | (bits5 ? ((qh >> (i + 16)) & 1) << 4 : 0));
    }
}

static void decode_k4(const uint8_t *scales, const uint8_t *qs, const uint8_t *qh, sd_wblock *wb) {
    for (int j = 0; j < 8; j++) scale_min_k4(j, scales, &wb->sc[j], &wb->mn[j]);
    for (int i = 0; i < 4; i++)
        for (int l = 0; l < 32; l++) {
            int lo = qs[32 * i + l] & 0xF, hi = qs[32 * i + l] >> 4;
            if (qh) {
                lo |= ((qh[l] >> (2 * i)) & 1) << 4;
                hi |= ((qh[l] >> (2 * i + 1)) & 1) << 4;
            }
            wb->q[64 * i + l] = (int8_t)lo;
            wb->q[64 * i + 32 + l] = (int8_t)hi;
        }
}

static void decode_q6k(const uint8_t *b, sd_wblock *wb) {
    const uint8_t *ql = b, *qh = b + 128;
    for (int n = 0; n < 2; n++, ql += 64, qh += 32)
        for (int l = 0; l < 32; l++) {
            int8_t *q = wb->q + 128 * n + l;
            q[0] = (int8_t)((ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4);
            q[32] = (int8_t)((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4);
            q[64] = (int8_t)((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4);
            q[96] = (int8_t)((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4);
        }
    for (int j = 0; j < 16; j++) wb->sc[j] = (int8_t)b[192 + j];
    wb->d = f16(b + 208);
}

/* Q2_K / Q3_K low 2 bits: in half h, byte l of qs holds elements
 * 128h + 32s + l at bits 2s (block_q2_K in ggml-common.h). */
static void decode_2bit(const uint8_t *qs, int8_t *q) {
    for (int h = 0; h < 2; h++)
        for (int s = 0; s < 4; s++)
            for (int l = 0; l < 32; l++) q[128 * h + 32 * s + l] = (int8_t)((qs[32 * h + l] >> (2 * s)) & 3);
}

static void decode_q2k(const uint8_t *b, sd_wblock *wb) {
    decode_2bit(b + 16, wb->q);
    for (int j = 0; j < 16; j++) {
        wb->sc[j] = b[j] & 0xF;
        wb->mn[j] = b[j] >> 4;
    }
    wb->d = f16(b + 80);
    wb->m = f16(b + 82);
}

/* Q3_K: value = low 2 bits + 4 * (bit e / 32 of hmask[e % 32]), minus off 4;
 * the 6-bit scales minus 32. */
static void decode_q3k(const uint8_t *b, sd_wblock *wb) {
    uint8_t sc[16];
    decode_2bit(b + 32, wb->q);
    for (int e = 0; e < SD_QK_K; e++) wb->q[e] = (int8_t)(wb->q[e] | ((b[e % 32] >> (e / 32)) & 1) << 2);
    sd_q3_K_scales(b + 96, sc);
    for (int j = 0; j < 16; j++) wb->sc[j] = sc[j] - 32;
    wb->d = f16(b + 108);
}

/* IQ4_NL / IQ4_XS: 32 table values from 16 bytes (low nibble l, high l + 16). */
static void decode_iq4(const uint8_t *qs, int8_t *q) {
    for (int l = 0; l < 16; l++) {
        q[l] = sd_kvalues_iq4nl[qs[l] & 0xF];
        q[l + 16] = sd_kvalues_iq4nl[qs[l] >> 4];
    }
}

static void decode_iq4xs(const uint8_t *b, sd_wblock *wb) {
    block_iq4_xs blk;
    memcpy(&blk, b, sizeof blk);
    for (int j = 0; j < 8; j++) {
        decode_iq4(blk.qs + 16 * j, wb->q + 32 * j);
        wb->sc[j] = sd_iq4_xs_scale(&blk, j) - 32;
    }
    wb->d = sd_fp16_to_fp32(blk.d);
}

void sd_wblock_decode(uint32_t type, const uint8_t *b, sd_wblock *wb) {
    wb->m = 0.0f;
    wb->off = 0;
    wb->has_min = 0;
    wb->sub = 32;
    switch (type) {
    case GGML_TYPE_Q8_0:
        wb->d = f16(b);
        memcpy(wb->q, b + 2, 32);
        break;
    case GGML_TYPE_Q4_0:
        wb->d = f16(b);
        wb->off = 8;
        decode_32(b + 2, 0, 0, wb->q);
        break;
    case GGML_TYPE_Q4_1:
        wb->d = f16(b);
        wb->m = f16(b + 2);
        wb->has_min = 1;
        decode_32(b + 4, 0, 0, wb->q);
        break;
    case GGML_TYPE_Q5_0:
        wb->d = f16(b);
        wb->off = 16;
        decode_32(b + 6, (uint32_t)b[2] | (uint32_t)b[3] << 8 | (uint32_t)b[4] << 16 | (uint32_t)b[5] << 24, 1, wb->q);
        break;
    case GGML_TYPE_Q5_1:
        wb->d = f16(b);
        wb->m = f16(b + 2);
        wb->has_min = 1;
        decode_32(b + 8, (uint32_t)b[4] | (uint32_t)b[5] << 8 | (uint32_t)b[6] << 16 | (uint32_t)b[7] << 24, 1, wb->q);
        break;
    case GGML_TYPE_Q4_K:
        wb->d = f16(b);
        wb->m = f16(b + 2);
        wb->has_min = 1;
        decode_k4(b + 4, b + 16, NULL, wb);
        break;
    case GGML_TYPE_Q5_K:
        wb->d = f16(b);
        wb->m = f16(b + 2);
        wb->has_min = 1;
        decode_k4(b + 4, b + 48, b + 16, wb);
        break;
    case GGML_TYPE_Q6_K:
        wb->off = 32;
        wb->sub = 16;
        decode_q6k(b, wb);
        break;
    case GGML_TYPE_Q2_K:
        wb->has_min = 1;
        wb->sub = 16;
        decode_q2k(b, wb);
        break;
    case GGML_TYPE_Q3_K:
        wb->off = 4;
        wb->sub = 16;
        decode_q3k(b, wb);
        break;
    case GGML_TYPE_IQ4_NL:
        wb->d = f16(b);
        decode_iq4(b + 2, wb->q);
        break;
    case GGML_TYPE_IQ4_XS:
        decode_iq4xs(b, wb);
        break;
    default:
        memset(wb, 0, sizeof *wb);
    }
}

/* ---- activations ---- */

bool sd_act_init(sd_act *a, int64_t n_in, int S, int block) {
    memset(a, 0, sizeof *a);
    a->n_in = n_in;
    a->S = S;
    a->block = block;
    a->nb = n_in / block;
    a->nsum = block == SD_QK_K ? 24 : 1;
    size_t rows = (size_t)S, nq, nd, ns;
    if (!sd_mul_size(rows, (size_t)n_in, &nq) || !sd_mul_size(rows, (size_t)a->nb, &nd) ||
        !sd_mul_size(nd, (size_t)a->nsum, &ns))
        return false;
    a->q = malloc(nq + 32); /* +32: vector loads may read a block past the row */
    a->d = sd_malloc_array(nd ? nd : 1, sizeof(float));
    a->sum = sd_malloc_array(ns ? ns : 1, sizeof(int16_t));
    if (!a->q || !a->d || !a->sum) {
        sd_act_free(a);
        return false;
    }
    return true;
}

void sd_act_free(sd_act *a) {
    free(a->q);
    free(a->d);
    free(a->sum);
    memset(a, 0, sizeof *a);
}

/* One block: d = amax / 127, q = round-to-nearest-even(x * (1/d)) clamped to
 * [-127, 127] (never -128: the AVX2 Q8_0 kernel negates activations). */
static float quantize_block(const float *x, int n, int8_t *q) {
    float amax = 0.0f;
    for (int i = 0; i < n; i++) {
        float v = fabsf(x[i]);
        amax = amax > v ? amax : v;
    }
    float d = amax / 127.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int i = 0; i < n; i++) {
        float v = nearbyintf(x[i] * id);
        v = v > 127.0f ? 127.0f : v >= -127.0f ? v : -127.0f; /* NaN -> -127, as the AVX2 pack */
        q[i] = (int8_t)v;
    }
    return d;
}

void sd_act_block_sums(const int8_t *qb, int block, int16_t *sum) {
    if (block == SD_QK) {
        int t = 0;
        for (int i = 0; i < SD_QK; i++) t += qb[i];
        sum[0] = (int16_t)t;
        return;
    }
    for (int j = 0; j < 16; j++) {
        int t = 0;
        for (int i = 0; i < 16; i++) t += qb[16 * j + i];
        sum[j] = (int16_t)t;
    }
    for (int j = 0; j < 8; j++) sum[16 + j] = (int16_t)(sum[2 * j] + sum[2 * j + 1]);
}

void sd_act_quantize_row(sd_act *a, int s, const float *x) {
    int8_t *q = a->q + (size_t)s * a->n_in;
    for (int64_t b = 0; b < a->nb; b++) {
        int8_t *qb = q + b * a->block;
        a->d[(size_t)s * a->nb + b] = quantize_block(x + b * a->block, a->block, qb);
        sd_act_block_sums(qb, a->block, a->sum + ((size_t)s * a->nb + b) * a->nsum);
    }
}

/* ---- reference kernels ---- */

/* One decoded weight block against activation block b of row s. */
static float block_fma(const sd_wblock *wb, const sd_act *a, int s, int64_t b, float acc) {
    const int8_t *xq = a->q + (size_t)s * a->n_in + b * a->block;
    const int16_t *xs = a->sum + ((size_t)s * a->nb + b) * a->nsum;
    float dx = a->d[(size_t)s * a->nb + b];
    if (a->block == SD_QK) {
        int32_t isum = 0;
        for (int i = 0; i < SD_QK; i++) isum += wb->q[i] * xq[i];
        isum -= wb->off * xs[0];
        acc = fmaf((float)isum, wb->d * dx, acc);
        if (wb->has_min) acc = fmaf((float)xs[0], wb->m * dx, acc);
        return acc;
    }
    int32_t sumi = 0;
    for (int j = 0; j < SD_QK_K / wb->sub; j++) {
        int32_t t = 0;
        for (int i = 0; i < wb->sub; i++) t += wb->q[j * wb->sub + i] * xq[j * wb->sub + i];
        t -= wb->off * (wb->sub == 16 ? xs[j] : xs[16 + j]);
        sumi += wb->sc[j] * t;
    }
    acc = fmaf((float)sumi, wb->d * dx, acc);
    if (wb->has_min) {
        int32_t summ = 0;
        for (int j = 0; j < SD_QK_K / wb->sub; j++) summ += wb->mn[j] * (wb->sub == 16 ? xs[j] : xs[16 + j]);
        acc = fmaf((float)summ, -(wb->m * dx), acc);
    }
    return acc;
}

void sd_matmul_ref_quant(const sd_matrix *m, const sd_act *a, float *y, int64_t o0, int64_t o1) {
    const sd_wtype *wt = sd_wtype_get(m->type);
    size_t row_bytes = (size_t)a->nb * (size_t)wt->block_bytes;
    sd_wblock wb;
    for (int64_t o = o0; o < o1; o++) {
        const uint8_t *row = (const uint8_t *)m->data + (size_t)o * row_bytes;
        for (int s0 = 0; s0 < a->S; s0 += SD_SCHUNK) {
            int ns = a->S - s0 < SD_SCHUNK ? a->S - s0 : SD_SCHUNK;
            float acc[SD_SCHUNK] = {0};
            for (int64_t b = 0; b < a->nb; b++) {
                sd_wblock_decode(m->type, row + (size_t)b * wt->block_bytes, &wb);
                for (int s = 0; s < ns; s++) acc[s] = block_fma(&wb, a, s0 + s, b, acc[s]);
            }
            for (int s = 0; s < ns; s++) y[(size_t)(s0 + s) * m->n_out + o] = acc[s];
        }
    }
}

static float load_w(uint32_t type, const void *row, int64_t i) {
    switch (type) {
    case GGML_TYPE_F16: return sd_fp16_to_fp32(((const uint16_t *)row)[i]);
    case GGML_TYPE_BF16: return sd_bf16_to_fp32(((const uint16_t *)row)[i]);
    default: return ((const float *)row)[i];
    }
}

/* The order of sd_dot_f32 (ops.h), with weights widened to float exactly. */
static float dot_w(uint32_t type, const void *row, const float *x, int64_t n) {
    float acc[8] = {0};
    for (int64_t i = 0; i < n; i += 8)
        for (int l = 0; l < 8; l++)
            acc[l] = i + l < n ? fmaf(load_w(type, row, i + l), x[i + l], acc[l]) : fmaf(0.0f, 0.0f, acc[l]);
    return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

void sd_matmul_ref_float(const sd_matrix *m, const float *x, int S, float *y, int64_t o0, int64_t o1) {
    size_t es = m->type == GGML_TYPE_F32 ? 4 : 2;
    for (int64_t o = o0; o < o1; o++) {
        const uint8_t *row = (const uint8_t *)m->data + (size_t)o * (size_t)m->n_in * es;
        for (int s = 0; s < S; s++) y[(size_t)s * m->n_out + o] = dot_w(m->type, row, x + (size_t)s * m->n_in, m->n_in);
    }
}
