/* IQ2_XS: 2.3125 bits per weight, 256 per block of 74 bytes (llama.cpp
 * ggml/src/ggml-common.h block_iq2_xs; dequantize_row_iq2_xs in
 * ggml-quants.c):
 *   d       fp16 at byte 0
 *   qs      32 little-endian u16 from byte 2, one per group of 8 values:
 *           bits 0..8 an index into iq2xs_grid, bits 9..15 the sign index
 *           (ksigns_iq2xs)
 *   scales  8 bytes from byte 66: sub-block ib of 32 has scale s = low nibble
 *           for its first 16 values, high nibble for its last 16.
 *   w = d * (0.5 + s) * 0.25 * grid value * sign  =  (d / 8) * (2s + 1) * (+-grid). */
#include <string.h>

#include "format/ggml_type.h"
#include "numerics/quant.h"
#include "numerics/quant/iq_grids.h"
#include "numerics/quant/qtype.h"

enum { BYTES = 74 };

static void dequantize(const void *src, float *y, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / QK_K; i++, b += BYTES) {
        const float d = sd_fp16_to_fp32(sd_rd16(b));
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t s = b[66 + ib];
            const float db[2] = {d * (0.5f + (float)(s & 0xF)) * 0.25f, d * (0.5f + (float)(s >> 4)) * 0.25f};
            for (int l = 0; l < 4; l++, y += 8) {
                const uint16_t qv = sd_rd16(b + 2 + 2 * (4 * ib + l));
                int8_t g[8];
                sd_iq_grid8(sd_iq2xs_grid[qv & 511], sd_iq2_levels, g);
                const uint8_t sg = sd_iq_signs(qv >> 9);
                for (int j = 0; j < 8; j++) {
                    const float v = db[l / 2] * (float)g[j];
                    y[j] = sg >> j & 1 ? -v : v;
                }
            }
        }
    }
}

/* Grid words with their signs applied, 8 values at a time (iq_grids.h). */
static void decode(const uint8_t *b, sd_wblock *wb) {
    const sd_iq_expanded *x = sd_iq_expanded_get();
    wb->d = sd_fp16_to_fp32(sd_rd16(b)) * 0.125f;
    wb->sub = 16;
    for (int ib = 0; ib < 8; ib++) {
        wb->sc[2 * ib] = 2 * (b[66 + ib] & 0xF) + 1;
        wb->sc[2 * ib + 1] = 2 * (b[66 + ib] >> 4) + 1;
        for (int l = 0; l < 4; l++) {
            const uint16_t qv = sd_rd16(b + 2 + 2 * (4 * ib + l));
            uint64_t v = sd_iq_negate(x->iq2xs[qv & 511], x->sign_mask[sd_iq_signs(qv >> 9)]);
            memcpy(wb->q + 32 * ib + 8 * l, &v, 8);
        }
    }
}

/* packed_bytes: the grid types' 4-bit tile (kernels/x86/matmul_pack.c). */
const sd_qtype sd_qtype_iq2_xs = {GGML_TYPE_IQ2_XS, QK_K, BYTES, 1, 1184, dequantize, NULL, decode};
