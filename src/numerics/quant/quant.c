/* Type dispatch for the block formats: the row converters and block geometry
 * of each type come from its descriptor (quant/qtype.h, listed in
 * quant/qtype_table.c). */
#include <string.h>

#include "numerics/quant.h"
#include "numerics/quant/qtype.h"

bool sd_type_supported(uint32_t t) {
    return sd_qtype_get(t) != NULL;
}

bool sd_type_quantizable(uint32_t t) {
    const sd_qtype *q = sd_qtype_get(t);
    return q && q->quantize;
}

uint32_t sd_quant_block_size(uint32_t t) {
    const sd_qtype *q = sd_qtype_get(t);
    return q ? (uint32_t)q->block : 0;
}

uint32_t sd_quant_type_size(uint32_t t) {
    const sd_qtype *q = sd_qtype_get(t);
    return q ? (uint32_t)q->block_bytes : 0;
}

void sd_dequantize_row(uint32_t t, const void *src, float *dst, int64_t n) {
    const sd_qtype *q = sd_qtype_get(t);
    if (n <= 0)
        return;
    if (!q) {
        memset(dst, 0, (size_t)n * sizeof(float));
        return;
    }
    int64_t whole = n - n % q->block;
    q->dequantize(src, dst, whole);
    if (whole < n)
        memset(dst + whole, 0, (size_t)(n - whole) * sizeof(float));
}

void sd_quantize_row(uint32_t t, const float *src, void *dst, int64_t n) {
    const sd_qtype *q = sd_qtype_get(t);
    if (n <= 0 || !q || !q->quantize)
        return;
    q->quantize(src, dst, n - n % q->block);
}
