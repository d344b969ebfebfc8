/* IQ3_S: 3.4375 bits per weight, 256 per block of 110 bytes (llama.cpp
 * ggml/src/ggml-common.h block_iq3_s; dequantize_row_iq3_s in ggml-quants.c):
 *   d       fp16 at byte 0
 *   qs      64 bytes from byte 2: low 8 bits of indices into iq3s_grid (4
 *           values each), two per group of 8 values
 *   qh      8 bytes from byte 66: bit k of qh[ib] is bit 8 of index k of
 *           sub-block ib
 *   signs   32 bytes from byte 74: the 8 sign bits of each group
 *   scales  4 bytes from byte 106: 4-bit s of sub-block ib in the low (even
 *           ib) or high (odd ib) nibble of scales[ib / 2].
 *   w = d * (1 + 2s) * grid value * sign. */
#include <string.h>

#include "format/ggml_type.h"
#include "numerics/quant.h"
#include "numerics/quant/iq_grids.h"
#include "numerics/quant/qtype.h"

enum { BYTES = 110 };

static int scale(const uint8_t *b, int ib) {
    return 1 + 2 * ((b[106 + ib / 2] >> 4 * (ib % 2)) & 0xF);
}

/* The 8 values of group l of sub-block ib (signs not yet applied). */
static void group(const uint8_t *b, int ib, int l, int8_t g[8]) {
    const int h = b[66 + ib];
    sd_iq_grid4(sd_iq3s_grid[b[2 + 8 * ib + 2 * l] | ((h << (8 - 2 * l)) & 256)], sd_iq3s_levels, g);
    sd_iq_grid4(sd_iq3s_grid[b[2 + 8 * ib + 2 * l + 1] | ((h << (7 - 2 * l)) & 256)], sd_iq3s_levels, g + 4);
}

static void dequantize(const void *src, float *y, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / QK_K; i++, b += BYTES) {
        const float d = sd_fp16_to_fp32(sd_rd16(b));
        for (int ib = 0; ib < 8; ib++) {
            const float db = d * (float)scale(b, ib);
            for (int l = 0; l < 4; l++, y += 8) {
                int8_t g[8];
                group(b, ib, l, g);
                const uint8_t sg = b[74 + 4 * ib + l];
                for (int j = 0; j < 8; j++) {
                    const float v = db * (float)g[j];
                    y[j] = sg >> j & 1 ? -v : v;
                }
            }
        }
    }
}

/* Two grid words per group with the signs applied (iq_grids.h). */
static void decode(const uint8_t *b, sd_wblock *wb) {
    const sd_iq_expanded *x = sd_iq_expanded_get();
    wb->d = sd_fp16_to_fp32(sd_rd16(b));
    for (int ib = 0; ib < 8; ib++) {
        const int h = b[66 + ib];
        wb->sc[ib] = scale(b, ib);
        for (int l = 0; l < 4; l++) {
            const uint8_t *p = b + 2 + 8 * ib + 2 * l;
            uint64_t g = x->iq3s[p[0] | ((h << (8 - 2 * l)) & 256)] |
                         (uint64_t)x->iq3s[p[1] | ((h << (7 - 2 * l)) & 256)] << 32;
            uint64_t v = sd_iq_negate(g, x->sign_mask[b[74 + 4 * ib + l]]);
            memcpy(wb->q + 32 * ib + 8 * l, &v, 8);
        }
    }
}

/* packed_bytes: the grid types' 4-bit tile (kernels/x86/matmul_pack.c). */
const sd_qtype sd_qtype_iq3_s = {GGML_TYPE_IQ3_S, QK_K, BYTES, 1, 1120, dequantize, NULL, decode};
