/* One weight type, one descriptor (docs/KERNELS.md, "Adding a weight type").
 * Every block format the engine reads is an sd_qtype: its block geometry, its
 * row converters to and from f32, and its decoding into the integer form the
 * matmul kernels read (sd_wblock). The descriptors are listed once, in
 * quant/qtype_table.c; sd_type_supported (quant.h), the matmul's type lookup
 * (sd_wtype_get, kernels/matmul_impl.h) and every kernel path read them from
 * there. A type with no repacked layout (packed_bytes 0) runs on every path
 * through its decode, so a new type is one file (its block, converters,
 * decode and descriptor) plus one row of the table. Private to numerics/. */
#ifndef SD_NUMERICS_QUANT_QTYPE_H
#define SD_NUMERICS_QUANT_QTYPE_H

#include <stdint.h>

/* Decoded weight block: integer values plus the scales, exactly as the GGUF
 * block defines them (llama.cpp ggml-quants.c dequantize_row_*):
 * w[i] = d * sc[i/sub] * (q[i] - off) - m * mn[i/sub] for the 256-element
 * types, w[i] = d * (q[i] - off) + m for the 32-element types.
 * Q2_K has 16 sub-blocks of 16 with a min each; Q3_K signed scales (sc - 32)
 * and off 4; IQ4_NL / IQ4_XS / MXFP4 carry the table value in q (signed, off
 * 0), IQ4_XS a signed scale (ls - 32) per 32; the IQ1/IQ2/IQ3 types carry the
 * signed grid value (IQ1: 8 * grid +- 1, the delta folded in) with odd scales
 * and d the file's scale times a power of two (see each type's file). */
typedef struct sd_wblock {
    int8_t q[256];
    float d, m;         /* m: min (Q4_1/Q5_1) or dmin (Q2_K/Q4_K/Q5_K) */
    int off;            /* 0, 4, 8, 16 or 32 */
    int has_min;
    int sub;            /* 256-element types: sub-block length 32 or 16 */
    int sc[16], mn[16]; /* per sub-block: scale, min */
} sd_wblock;

typedef struct sd_qtype {
    uint32_t type;    /* GGML_TYPE_* */
    int block;        /* elements per block: 1 (float), 32 or 256 */
    int block_bytes;  /* bytes per block in the GGUF layout */
    int act256;       /* matmul activations quantized per 256 (else per 32) */
    int packed_bytes; /* bytes per (block, tile of 8 rows) in the AVX2 layout
                       * (kernels/x86/matmul_pack.c); 0 = no repack */
    /* Row converters (n a multiple of block): dequantize is bit-identical to
     * llama.cpp's dequantize_row_*; quantize NULL = this type is read only. */
    void (*dequantize)(const void *src, float *dst, int64_t n);
    void (*quantize)(const float *src, void *dst, int64_t n);
    /* One block at src (block_bytes) into wb; the fields it does not set keep
     * the defaults of sd_qtype_decode. NULL: no matmul (float types use the
     * float kernels; Q8_1 / Q8_K are activation formats). */
    void (*decode)(const uint8_t *src, sd_wblock *wb);
} sd_qtype;

/* The descriptor of type t; NULL if the engine does not read t. */
const sd_qtype *sd_qtype_get(uint32_t t);

/* Decodes one block of type q (q->decode != NULL). */
static inline void sd_qtype_decode(const sd_qtype *q, const uint8_t *src, sd_wblock *wb) {
    wb->m = 0.0f;
    wb->off = 0;
    wb->has_min = 0;
    wb->sub = 32;
    q->decode(src, wb);
}

/* Little-endian reads of a block's fields (blocks in a mapping may be only
 * 2-byte aligned). */
static inline uint16_t sd_rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t sd_rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

#endif
