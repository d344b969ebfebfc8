/* The descriptors (qtype.h) of the float types and of the block types the
 * engine read before the IQ1/IQ2/IQ3/MXFP4 ones: F32, F16, BF16, Q4_0, Q4_1,
 * Q5_0, Q5_1, Q8_0, Q8_1, Q2_K..Q6_K, Q8_K, IQ4_NL, IQ4_XS. Their row
 * converters live in quant_legacy.c, quant_k.c, quant_iq4.c and fp16.c; this
 * file adapts them and holds the decoders into sd_wblock. Block layouts:
 * llama.cpp ggml/src/ggml-common.h (block_q8_0, block_q4_0, ..., block_q6_K),
 * decoding as its ggml-quants.c dequantize_row_*. */
#include <string.h>

#include "format/ggml_type.h"
#include "numerics/quant.h"
#include "numerics/quant/qtype.h"
#include "numerics/quant/quant_internal.h"

/* ---- row converters ---- */

static void dequantize_f32(const void *src, float *dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float));
}
static void dequantize_f16(const void *src, float *dst, int64_t n) {
    const uint16_t *h = src;
    for (int64_t i = 0; i < n; i++)
        dst[i] = sd_fp16_to_fp32(h[i]);
}
static void dequantize_bf16(const void *src, float *dst, int64_t n) {
    const uint16_t *h = src;
    for (int64_t i = 0; i < n; i++)
        dst[i] = sd_bf16_to_fp32(h[i]);
}
static void quantize_f32(const float *src, void *dst, int64_t n) {
    memcpy(dst, src, (size_t)n * sizeof(float));
}
static void quantize_f16(const float *src, void *dst, int64_t n) {
    uint16_t *h = dst;
    for (int64_t i = 0; i < n; i++)
        h[i] = sd_fp32_to_fp16(src[i]);
}
static void quantize_bf16(const float *src, void *dst, int64_t n) {
    uint16_t *h = dst;
    for (int64_t i = 0; i < n; i++)
        h[i] = sd_fp32_to_bf16(src[i]);
}

/* Adapters from the typed row converters to the void * signatures of the
 * descriptor (calling through a cast function pointer would be undefined). */
#define ADAPT_BOTH(name, blk)                                                \
    static void deq_##name(const void *src, float *dst, int64_t n) {        \
        sd_dequantize_row_##name((const blk *)src, dst, n);                  \
    }                                                                        \
    static void q_##name(const float *src, void *dst, int64_t n) {          \
        sd_quantize_row_##name(src, (blk *)dst, n);                          \
    }

ADAPT_BOTH(q4_0, block_q4_0)
ADAPT_BOTH(q4_1, block_q4_1)
ADAPT_BOTH(q5_0, block_q5_0)
ADAPT_BOTH(q5_1, block_q5_1)
ADAPT_BOTH(q8_0, block_q8_0)
ADAPT_BOTH(q8_1, block_q8_1)
ADAPT_BOTH(q2_K, block_q2_K)
ADAPT_BOTH(q3_K, block_q3_K)
ADAPT_BOTH(q4_K, block_q4_K)
ADAPT_BOTH(q5_K, block_q5_K)
ADAPT_BOTH(q6_K, block_q6_K)
ADAPT_BOTH(q8_K, block_q8_K)
ADAPT_BOTH(iq4_nl, block_iq4_nl)
ADAPT_BOTH(iq4_xs, block_iq4_xs)

/* ---- decoders into sd_wblock ---- */

static float f16(const uint8_t *p) { return sd_fp16_to_fp32(sd_rd16(p)); }

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

static void dec_q8_0(const uint8_t *b, sd_wblock *wb) {
    wb->d = f16(b);
    memcpy(wb->q, b + 2, 32);
}

static void dec_q4_0(const uint8_t *b, sd_wblock *wb) {
    wb->d = f16(b);
    wb->off = 8;
    decode_32(b + 2, 0, 0, wb->q);
}

static void dec_q4_1(const uint8_t *b, sd_wblock *wb) {
    wb->d = f16(b);
    wb->m = f16(b + 2);
    wb->has_min = 1;
    decode_32(b + 4, 0, 0, wb->q);
}

static void dec_q5_0(const uint8_t *b, sd_wblock *wb) {
    wb->d = f16(b);
    wb->off = 16;
    decode_32(b + 6, sd_rd32(b + 2), 1, wb->q);
}

static void dec_q5_1(const uint8_t *b, sd_wblock *wb) {
    wb->d = f16(b);
    wb->m = f16(b + 2);
    wb->has_min = 1;
    decode_32(b + 8, sd_rd32(b + 4), 1, wb->q);
}

static void dec_q4_K(const uint8_t *b, sd_wblock *wb) {
    wb->d = f16(b);
    wb->m = f16(b + 2);
    wb->has_min = 1;
    decode_k4(b + 4, b + 16, NULL, wb);
}

static void dec_q5_K(const uint8_t *b, sd_wblock *wb) {
    wb->d = f16(b);
    wb->m = f16(b + 2);
    wb->has_min = 1;
    decode_k4(b + 4, b + 48, b + 16, wb);
}

static void dec_q6_K(const uint8_t *b, sd_wblock *wb) {
    wb->off = 32;
    wb->sub = 16;
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

static void dec_q2_K(const uint8_t *b, sd_wblock *wb) {
    wb->has_min = 1;
    wb->sub = 16;
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
static void dec_q3_K(const uint8_t *b, sd_wblock *wb) {
    uint8_t sc[16];
    wb->off = 4;
    wb->sub = 16;
    decode_2bit(b + 32, wb->q);
    for (int e = 0; e < QK_K; e++) wb->q[e] = (int8_t)(wb->q[e] | ((b[e % 32] >> (e / 32)) & 1) << 2);
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

static void dec_iq4_nl(const uint8_t *b, sd_wblock *wb) {
    wb->d = f16(b);
    decode_iq4(b + 2, wb->q);
}

static void dec_iq4_xs(const uint8_t *b, sd_wblock *wb) {
    block_iq4_xs blk;
    memcpy(&blk, b, sizeof blk);
    for (int j = 0; j < 8; j++) {
        decode_iq4(blk.qs + 16 * j, wb->q + 32 * j);
        wb->sc[j] = sd_iq4_xs_scale(&blk, j) - 32;
    }
    wb->d = sd_fp16_to_fp32(blk.d);
}

/* ---- descriptors: type, block, bytes, act256, packed_bytes (see
 * kernels/x86/matmul_pack.c: ints + f32 scales for 8 rows; Q8_0, Q4_K f16),
 * dequantize, quantize, decode ---- */

const sd_qtype sd_qtype_f32 = {GGML_TYPE_F32, 1, 4, 0, 0, dequantize_f32, quantize_f32, NULL};
const sd_qtype sd_qtype_f16 = {GGML_TYPE_F16, 1, 2, 0, 0, dequantize_f16, quantize_f16, NULL};
const sd_qtype sd_qtype_bf16 = {GGML_TYPE_BF16, 1, 2, 0, 0, dequantize_bf16, quantize_bf16, NULL};
const sd_qtype sd_qtype_q8_0 = {GGML_TYPE_Q8_0, 32, 34, 0, 8 * 32 + 8 * 2, deq_q8_0, q_q8_0, dec_q8_0};
const sd_qtype sd_qtype_q8_1 = {GGML_TYPE_Q8_1, 32, 36, 0, 0, deq_q8_1, q_q8_1, NULL};
const sd_qtype sd_qtype_q4_0 = {GGML_TYPE_Q4_0, 32, 18, 0, 8 * 16 + 8 * 4, deq_q4_0, q_q4_0, dec_q4_0};
const sd_qtype sd_qtype_q4_1 = {GGML_TYPE_Q4_1, 32, 20, 0, 8 * 16 + 8 * 4 + 8 * 4, deq_q4_1, q_q4_1, dec_q4_1};
const sd_qtype sd_qtype_q5_0 = {GGML_TYPE_Q5_0, 32, 22, 0, 8 * 16 + 8 * 4 + 8 * 4, deq_q5_0, q_q5_0, dec_q5_0};
const sd_qtype sd_qtype_q5_1 = {GGML_TYPE_Q5_1, 32, 24, 0, 8 * 16 + 8 * 4 + 8 * 4 + 8 * 4,
                                deq_q5_1, q_q5_1, dec_q5_1};
const sd_qtype sd_qtype_q4_K = {GGML_TYPE_Q4_K, 256, 144, 1, 8 * 128 + 8 * 8 + 8 * 8 + 8 * 2 + 8 * 2,
                                deq_q4_K, q_q4_K, dec_q4_K};
const sd_qtype sd_qtype_q5_K = {GGML_TYPE_Q5_K, 256, 176, 1, 8 * 128 + 8 * 32 + 8 * 8 + 8 * 8 + 8 * 4 + 8 * 4,
                                deq_q5_K, q_q5_K, dec_q5_K};
const sd_qtype sd_qtype_q6_K = {GGML_TYPE_Q6_K, 256, 210, 1, 8 * 128 + 8 * 64 + 8 * 16 + 8 * 4,
                                deq_q6_K, q_q6_K, dec_q6_K};
const sd_qtype sd_qtype_q2_K = {GGML_TYPE_Q2_K, 256, 84, 1, 8 * 64 + 8 * 16 + 8 * 4 + 8 * 4,
                                deq_q2_K, q_q2_K, dec_q2_K};
const sd_qtype sd_qtype_q3_K = {GGML_TYPE_Q3_K, 256, 110, 1, 8 * 64 + 8 * 32 + 8 * 16 + 8 * 4,
                                deq_q3_K, q_q3_K, dec_q3_K};
const sd_qtype sd_qtype_q8_K = {GGML_TYPE_Q8_K, 256, 292, 1, 0, deq_q8_K, q_q8_K, NULL};
const sd_qtype sd_qtype_iq4_nl = {GGML_TYPE_IQ4_NL, 32, 18, 0, 8 * 16 + 8 * 4, deq_iq4_nl, q_iq4_nl, dec_iq4_nl};
const sd_qtype sd_qtype_iq4_xs = {GGML_TYPE_IQ4_XS, 256, 136, 1, 8 * 128 + 8 * 8 + 8 * 4,
                                  deq_iq4_xs, q_iq4_xs, dec_iq4_xs};
