/* Type dispatch for the block formats: which types exist here, their block
 * geometry, and the row converters (numerics/quant/quant_legacy.c, quant_k.c,
 * quant_iq4.c, fp16.c). */
#include <string.h>

#include "numerics/quant.h"
#include "numerics/quant/quant_internal.h"

typedef void (*dequantize_fn)(const void *src, float *dst, int64_t n);
typedef void (*quantize_fn)(const float *src, void *dst, int64_t n);

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

typedef struct quant_type {
    uint32_t type;
    uint32_t block_size, type_size;
    dequantize_fn dequantize;
    quantize_fn quantize; /* NULL: dequantize-only */
} quant_type;

/* Adapters from the typed row converters to the void * signatures of the
 * table (calling through a cast function pointer would be undefined). */
#define ADAPT_DEQUANTIZE(name, blk)                                          \
    static void deq_##name(const void *src, float *dst, int64_t n) {        \
        sd_dequantize_row_##name((const blk *)src, dst, n);                  \
    }
#define ADAPT_QUANTIZE(name, blk)                                            \
    static void q_##name(const float *src, void *dst, int64_t n) {          \
        sd_quantize_row_##name(src, (blk *)dst, n);                          \
    }
#define ADAPT_BOTH(name, blk) ADAPT_DEQUANTIZE(name, blk) ADAPT_QUANTIZE(name, blk)

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

#define BLOCK_TYPE(T, QK, name, blk) {T, QK, sizeof(blk), deq_##name, q_##name}

static const quant_type TYPES[] = {
    {GGML_TYPE_F32, 1, 4, dequantize_f32, quantize_f32},
    {GGML_TYPE_F16, 1, 2, dequantize_f16, quantize_f16},
    {GGML_TYPE_BF16, 1, 2, dequantize_bf16, quantize_bf16},
    BLOCK_TYPE(GGML_TYPE_Q4_0, QK4_0, q4_0, block_q4_0),
    BLOCK_TYPE(GGML_TYPE_Q4_1, QK4_1, q4_1, block_q4_1),
    BLOCK_TYPE(GGML_TYPE_Q5_0, QK5_0, q5_0, block_q5_0),
    BLOCK_TYPE(GGML_TYPE_Q5_1, QK5_1, q5_1, block_q5_1),
    BLOCK_TYPE(GGML_TYPE_Q8_0, QK8_0, q8_0, block_q8_0),
    BLOCK_TYPE(GGML_TYPE_Q8_1, QK8_1, q8_1, block_q8_1),
    BLOCK_TYPE(GGML_TYPE_Q2_K, QK_K, q2_K, block_q2_K),
    BLOCK_TYPE(GGML_TYPE_Q3_K, QK_K, q3_K, block_q3_K),
    BLOCK_TYPE(GGML_TYPE_Q4_K, QK_K, q4_K, block_q4_K),
    BLOCK_TYPE(GGML_TYPE_Q5_K, QK_K, q5_K, block_q5_K),
    BLOCK_TYPE(GGML_TYPE_Q6_K, QK_K, q6_K, block_q6_K),
    BLOCK_TYPE(GGML_TYPE_Q8_K, QK_K, q8_K, block_q8_K),
    BLOCK_TYPE(GGML_TYPE_IQ4_NL, QK4_NL, iq4_nl, block_iq4_nl),
    BLOCK_TYPE(GGML_TYPE_IQ4_XS, QK_K, iq4_xs, block_iq4_xs),
};

static const quant_type *find_type(uint32_t t) {
    for (size_t i = 0; i < sizeof TYPES / sizeof TYPES[0]; i++)
        if (TYPES[i].type == t)
            return &TYPES[i];
    return NULL;
}

bool sd_type_supported(uint32_t t) {
    return find_type(t) != NULL;
}

bool sd_type_quantizable(uint32_t t) {
    const quant_type *q = find_type(t);
    return q && q->quantize;
}

uint32_t sd_quant_block_size(uint32_t t) {
    const quant_type *q = find_type(t);
    return q ? q->block_size : 0;
}

uint32_t sd_quant_type_size(uint32_t t) {
    const quant_type *q = find_type(t);
    return q ? q->type_size : 0;
}

void sd_dequantize_row(uint32_t t, const void *src, float *dst, int64_t n) {
    const quant_type *q = find_type(t);
    if (n <= 0)
        return;
    if (!q) {
        memset(dst, 0, (size_t)n * sizeof(float));
        return;
    }
    int64_t whole = n - n % q->block_size;
    q->dequantize(src, dst, whole);
    if (whole < n)
        memset(dst + whole, 0, (size_t)(n - whole) * sizeof(float));
}

void sd_quantize_row(uint32_t t, const float *src, void *dst, int64_t n) {
    const quant_type *q = find_type(t);
    if (n <= 0 || !q || !q->quantize)
        return;
    q->quantize(src, dst, n - n % q->block_size);
}
