/* Byte layouts of the quantized blocks, exactly as llama.cpp stores them in
 * GGUF files (layout: llama.cpp ggml/src/ggml-common.h, block_q4_0 ...
 * block_q8_K). A tensor row of n elements of type T is n / QK_T consecutive
 * blocks with no padding; every field is little-endian, and fp16 fields hold
 * IEEE binary16 bits (convert with sd_fp16_to_fp32).
 *
 * Notation used in the comments: a block dequantizes to x[i] = d * q[i]
 * (symmetric types, "_0") or x[i] = d * q[i] + m (types with a min, "_1").
 * K-quants group 256 elements in a super-block of 8 or 16 sub-blocks whose
 * own scales are quantized against the super-block's fp16 d (and dmin).
 *
 * The structs contain only uint8_t / int8_t / uint16_t / int16_t / float
 * members in an order that needs no padding; the static asserts below pin
 * each size to the one GGUF uses, so memcpy from a file is safe. Pointers into
 * a mapping may be only 1- or 2-byte aligned: read fields through these
 * structs only where the block is suitably aligned (tensor data in GGUF is
 * 32-byte aligned and every block size here is even, so uint16_t fields are
 * always 2-aligned; block_q8_K's float d needs 4-alignment and is only ever
 * produced in memory by the engine itself). */
#ifndef SD_NUMERICS_QUANT_BLOCKS_H
#define SD_NUMERICS_QUANT_BLOCKS_H

#include <stdint.h>

#define QK4_0 32
#define QK4_1 32
#define QK5_0 32
#define QK5_1 32
#define QK8_0 32
#define QK8_1 32
#define QK_K 256          /* K-quant super-block */
#define K_SCALE_SIZE 12   /* packed 6-bit scales+mins of Q4_K / Q5_K */
#define QK4_NL 32         /* IQ4_NL block */

/* Q4_0: x = d * (q - 8), q in 0..15. qs[j] low nibble = element j,
 * high nibble = element j + 16. */
typedef struct block_q4_0 {
    uint16_t d;              /* fp16 delta */
    uint8_t qs[QK4_0 / 2];
} block_q4_0;

/* Q4_1: x = d * q + m, q in 0..15; nibble order as Q4_0. */
typedef struct block_q4_1 {
    uint16_t d;              /* fp16 delta */
    uint16_t m;              /* fp16 min */
    uint8_t qs[QK4_1 / 2];
} block_q4_1;

/* Q5_0: x = d * (q - 16), q in 0..31. Low 4 bits as Q4_0; bit 4 of element j
 * is bit j of the little-endian u32 qh. */
typedef struct block_q5_0 {
    uint16_t d;              /* fp16 delta */
    uint8_t qh[4];
    uint8_t qs[QK5_0 / 2];
} block_q5_0;

/* Q5_1: x = d * q + m, q in 0..31; bits as Q5_0. */
typedef struct block_q5_1 {
    uint16_t d;              /* fp16 delta */
    uint16_t m;              /* fp16 min */
    uint8_t qh[4];
    uint8_t qs[QK5_1 / 2];
} block_q5_1;

/* Q8_0: x = d * q, q in -127..127 (reference quantizer never emits -128). */
typedef struct block_q8_0 {
    uint16_t d;              /* fp16 delta */
    int8_t qs[QK8_0];
} block_q8_0;

/* Q8_1: activation format paired with Q4_1/Q5_1 weights: Q8_0 plus
 * s = d * sum(q) (fp16), so the min term of a dot product costs one multiply. */
typedef struct block_q8_1 {
    uint16_t d;              /* fp16 delta */
    uint16_t s;              /* fp16 d * sum(qs) */
    int8_t qs[QK8_1];
} block_q8_1;

/* Q2_K: 16 sub-blocks of 16. scales[j] low nibble = scale, high nibble = min;
 * x = d * sc * q - dmin * m, q in 0..3. qs: 2 halves of 128 elements; in
 * half h, byte l (0..31) holds elements h*128 + l + 32*s at bit shift 2*s
 * (s = 0..3). */
typedef struct block_q2_K {
    uint8_t scales[QK_K / 16];
    uint8_t qs[QK_K / 4];
    uint16_t d;              /* fp16 super-scale of scales */
    uint16_t dmin;           /* fp16 super-scale of mins */
} block_q2_K;

/* Q3_K: 16 sub-blocks of 16, x = d * (sc - 32) * (q - 4), q in 0..7. Low 2
 * bits in qs as Q2_K; bit 2 of element e is bit (e / 32) of hmask[e % 32].
 * The 16 six-bit scales are packed in 12 bytes (see sd_q3_K_scales). */
typedef struct block_q3_K {
    uint8_t hmask[QK_K / 8];
    uint8_t qs[QK_K / 4];
    uint8_t scales[12];
    uint16_t d;              /* fp16 super-scale */
} block_q3_K;

/* Q4_K: 8 sub-blocks of 32, x = d * sc * q - dmin * m, q in 0..15, sc and m
 * 6-bit, packed in scales[12] (see sd_get_scale_min_k4). qs: 4 chunks of 32
 * bytes; chunk c byte l low nibble = element 64c + l, high = 64c + 32 + l. */
typedef struct block_q4_K {
    uint16_t d;              /* fp16 super-scale of scales */
    uint16_t dmin;           /* fp16 super-scale of mins */
    uint8_t scales[K_SCALE_SIZE];
    uint8_t qs[QK_K / 2];
} block_q4_K;

/* Q5_K: Q4_K plus a fifth bit: bit 4 of element 64c + l is bit 2c of qh[l],
 * of element 64c + 32 + l bit 2c + 1. q in 0..31. */
typedef struct block_q5_K {
    uint16_t d;              /* fp16 super-scale of scales */
    uint16_t dmin;           /* fp16 super-scale of mins */
    uint8_t scales[K_SCALE_SIZE];
    uint8_t qh[QK_K / 8];
    uint8_t qs[QK_K / 2];
} block_q5_K;

/* Q6_K: 16 sub-blocks of 16, x = d * scales[e / 16] * (q - 32), q in 0..63.
 * Two halves of 128; in half h, for l in 0..31: ql[64h + l] low/high nibble =
 * elements l / l + 64, ql[64h + 32 + l] = l + 32 / l + 96 (relative to 128h),
 * qh[32h + l] bits 2s..2s+1 = high 2 bits of element 128h + l + 32s. */
typedef struct block_q6_K {
    uint8_t ql[QK_K / 2];
    uint8_t qh[QK_K / 4];
    int8_t scales[QK_K / 16];
    uint16_t d;              /* fp16 super-scale */
} block_q6_K;

/* Q8_K: activation format paired with K-quant weights. x = d * q with a float
 * d, and bsums[j] = sum of qs[16j .. 16j+15] (the min terms of Q4_K / Q5_K /
 * Q2_K dot products need per-sub-block sums of the activations). */
typedef struct block_q8_K {
    float d;
    int8_t qs[QK_K];
    int16_t bsums[QK_K / 16];
} block_q8_K;

/* IQ4_NL: x = d * kvalues_iq4nl[q], q in 0..15 an index into the fixed
 * non-linear table (sd_kvalues_iq4nl); nibble order as Q4_0. */
typedef struct block_iq4_nl {
    uint16_t d;              /* fp16 delta */
    uint8_t qs[QK4_NL / 2];
} block_iq4_nl;

/* IQ4_XS: 8 sub-blocks of 32, x = d * (ls - 32) * kvalues_iq4nl[q], ls a
 * 6-bit scale: low 4 bits in scales_l[j / 2] (low nibble for even j), top 2
 * bits at bit 2j of scales_h. qs: per sub-block 16 bytes, nibble order as
 * Q4_0 (low = element l, high = element l + 16). */
typedef struct block_iq4_xs {
    uint16_t d;              /* fp16 super-scale */
    uint16_t scales_h;
    uint8_t scales_l[QK_K / 64];
    uint8_t qs[QK_K / 2];
} block_iq4_xs;

/* The 16 levels of IQ4_NL / IQ4_XS (llama.cpp ggml-common.h kvalues_iq4nl),
 * ascending; defined in numerics/quant/quant_iq4.c. */
extern const int8_t sd_kvalues_iq4nl[16];
/* The 16 levels of MXFP4 (llama.cpp ggml-common.h kvalues_mxfp4: E2M1 values
 * doubled); defined in numerics/quant/mxfp4.c. */
extern const int8_t sd_kvalues_mxfp4[16];

/* 6-bit scale (0..63; the dequantizer subtracts 32) of IQ4_XS sub-block j. */
static inline int sd_iq4_xs_scale(const block_iq4_xs *b, int j) {
    return ((b->scales_l[j / 2] >> 4 * (j % 2)) & 0xF) | (((b->scales_h >> 2 * j) & 3) << 4);
}

_Static_assert(sizeof(block_q4_0) == 18, "block_q4_0 size");
_Static_assert(sizeof(block_q4_1) == 20, "block_q4_1 size");
_Static_assert(sizeof(block_q5_0) == 22, "block_q5_0 size");
_Static_assert(sizeof(block_q5_1) == 24, "block_q5_1 size");
_Static_assert(sizeof(block_q8_0) == 34, "block_q8_0 size");
_Static_assert(sizeof(block_q8_1) == 36, "block_q8_1 size");
_Static_assert(sizeof(block_q2_K) == 84, "block_q2_K size");
_Static_assert(sizeof(block_q3_K) == 110, "block_q3_K size");
_Static_assert(sizeof(block_q4_K) == 144, "block_q4_K size");
_Static_assert(sizeof(block_q5_K) == 176, "block_q5_K size");
_Static_assert(sizeof(block_q6_K) == 210, "block_q6_K size");
_Static_assert(sizeof(block_q8_K) == 292, "block_q8_K size");
_Static_assert(sizeof(block_iq4_nl) == 18, "block_iq4_nl size");
_Static_assert(sizeof(block_iq4_xs) == 136, "block_iq4_xs size");

/* Unpacks sub-block j (0..7) scale and min of a Q4_K / Q5_K block from the 12
 * packed bytes: sub-blocks 0..3 keep their 6 bits in the low bits of bytes
 * j (scale) and j+4 (min); sub-blocks 4..7 keep the low 4 bits in byte j+4
 * (scale low nibble, min high nibble) and the top 2 bits in the top 2 bits of
 * bytes j-4 (scale) and j (min). Source: llama.cpp get_scale_min_k4. */
static inline void sd_get_scale_min_k4(int j, const uint8_t *q, uint8_t *sc, uint8_t *m) {
    if (j < 4) {
        *sc = q[j] & 63;
        *m = q[j + 4] & 63;
    } else {
        *sc = (uint8_t)((q[j + 4] & 0xF) | ((q[j - 4] >> 6) << 4));
        *m = (uint8_t)((q[j + 4] >> 4) | ((q[j] >> 6) << 4));
    }
}

/* The inverse of sd_get_scale_min_k4: ORs sub-block j's 6-bit scale and min
 * into the 12 packed bytes, which the caller zeroes first. */
static inline void sd_set_scale_min_k4(int j, uint8_t sc, uint8_t m, uint8_t *q) {
    if (j < 4) {
        q[j] |= sc;
        q[j + 4] |= m;
    } else {
        q[j + 4] = (uint8_t)((sc & 0xF) | ((m & 0xF) << 4));
        q[j - 4] |= (uint8_t)((sc >> 4) << 6);
        q[j] |= (uint8_t)((m >> 4) << 6);
    }
}

/* Packs 2-bit values L[256] (0..3) into Q2_K / Q3_K qs: in each half of 128,
 * byte l holds elements l, l+32, l+64, l+96 at bits 0, 2, 4, 6. */
static inline void sd_pack_2bit(const uint8_t *L, uint8_t *qs) {
    for (int j = 0; j < QK_K; j += 128)
        for (int l = 0; l < 32; l++)
            qs[j / 4 + l] = (uint8_t)(L[j + l] | (L[j + l + 32] << 2) | (L[j + l + 64] << 4) | (L[j + l + 96] << 6));
}

/* Unpacks the 16 six-bit scales of a Q3_K block into sc[16] (0..63; the
 * dequantizer subtracts 32). Sub-block j keeps its low 4 bits in byte j % 8
 * (low nibble for j < 8, high nibble for j >= 8) and its top 2 bits in byte
 * 8 + j % 4 at bit 2 * (j / 4). Source: llama.cpp quantize_row_q3_K_ref. */
static inline void sd_q3_K_scales(const uint8_t *packed, uint8_t sc[16]) {
    for (int j = 0; j < 16; j++) {
        uint8_t lo = j < 8 ? (packed[j] & 0xF) : (packed[j - 8] >> 4);
        uint8_t hi = (packed[8 + j % 4] >> (2 * (j / 4))) & 3;
        sc[j] = (uint8_t)(lo | (hi << 4));
    }
}

#endif
