/* MXFP4: OCP microscaling FP4, 32 per block of 17 bytes (llama.cpp
 * ggml/src/ggml-common.h block_mxfp4, kvalues_mxfp4; ggml-impl.h
 * ggml_e8m0_to_fp32_half; dequantize_row_mxfp4 in ggml-quants.c):
 *   e   byte 0: an E8M0 exponent; the block scale is 2^(e - 128), half the
 *       OCP scale, because the value table holds doubled E2M1 values
 *   qs  16 bytes from byte 1: 4-bit indices into kvalues_mxfp4, element l in
 *       the low nibble of qs[l], element l + 16 in the high nibble.
 *   w = 2^(e - 128) * kvalues_mxfp4[index]. */
#include <string.h>

#include "format/ggml_type.h"
#include "numerics/quant.h"
#include "numerics/quant/qtype.h"
#include "numerics/quant/quant_blocks.h"

enum { BYTES = 17, QK = 32 };

/* E2M1 values times two: 0, 0.5, 1, 1.5, 2, 3, 4, 6 and their negatives
 * (the OCP MX specification's FP4 code points; sign in bit 3). */
const int8_t sd_kvalues_mxfp4[16] = {0, 1, 2, 3, 4, 6, 8, 12, 0, -1, -2, -3, -4, -6, -8, -12};

/* 2^(e - 128) as a float; e 0 and 1 give the subnormals 2^-128, 2^-127. */
static float e8m0_half(uint8_t e) {
    uint32_t bits = e < 2 ? 0x00200000u << e : (uint32_t)(e - 1) << 23;
    float f;
    memcpy(&f, &bits, sizeof f);
    return f;
}

static void dequantize(const void *src, float *y, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / QK; i++, b += BYTES, y += QK) {
        const float d = e8m0_half(b[0]);
        for (int l = 0; l < 16; l++) {
            y[l] = (float)sd_kvalues_mxfp4[b[1 + l] & 0xF] * d;
            y[l + 16] = (float)sd_kvalues_mxfp4[b[1 + l] >> 4] * d;
        }
    }
}

static void decode(const uint8_t *b, sd_wblock *wb) {
    wb->d = e8m0_half(b[0]);
    for (int l = 0; l < 16; l++) {
        wb->q[l] = sd_kvalues_mxfp4[b[1 + l] & 0xF];
        wb->q[l + 16] = sd_kvalues_mxfp4[b[1 + l] >> 4];
    }
}

/* packed_bytes: the IQ4_NL tile (kernels/x86/matmul_pack.c) with this table. */
const sd_qtype sd_qtype_mxfp4 = {GGML_TYPE_MXFP4, QK, BYTES, 0, 8 * 16 + 8 * 4, dequantize, NULL, decode};
