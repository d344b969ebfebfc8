/* IQ2_S: 2.5625 bits per weight, 256 per block of 82 bytes (llama.cpp
 * ggml/src/ggml-common.h block_iq2_s; dequantize_row_iq2_s in ggml-quants.c):
 *   d       fp16 at byte 0
 *   qs      32 bytes from byte 2: the low 8 bits of the iq2s_grid index of
 *           each group of 8 values
 *   signs   32 bytes from byte 34: the 8 sign bits of each group (bit j set:
 *           value j negative)
 *   qh      8 bytes from byte 66: bits 2l..2l+1 of qh[ib] are bits 8..9 of
 *           the index of group l of sub-block ib
 *   scales  8 bytes from byte 74, as IQ2_XS (nibble per 16 values).
 *   w = d * (0.5 + s) * 0.25 * grid value * sign  =  (d / 8) * (2s + 1) * (+-grid). */
#include <string.h>

#include "format/ggml_type.h"
#include "numerics/quant.h"
#include "numerics/quant/iq_grids.h"
#include "numerics/quant/qtype.h"

enum { BYTES = 82 };

static int grid_index(const uint8_t *b, int ib, int l) {
    return b[2 + 4 * ib + l] | ((b[66 + ib] << (8 - 2 * l)) & 0x300);
}

static void dequantize(const void *src, float *y, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / QK_K; i++, b += BYTES) {
        const float d = sd_fp16_to_fp32(sd_rd16(b));
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t s = b[74 + ib];
            const float db[2] = {d * (0.5f + (float)(s & 0xF)) * 0.25f, d * (0.5f + (float)(s >> 4)) * 0.25f};
            for (int l = 0; l < 4; l++, y += 8) {
                int8_t g[8];
                sd_iq_grid8(sd_iq2s_grid[grid_index(b, ib, l)], sd_iq2_levels, g);
                const uint8_t sg = b[34 + 4 * ib + l];
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
        wb->sc[2 * ib] = 2 * (b[74 + ib] & 0xF) + 1;
        wb->sc[2 * ib + 1] = 2 * (b[74 + ib] >> 4) + 1;
        for (int l = 0; l < 4; l++) {
            uint64_t v = sd_iq_negate(x->iq2s[grid_index(b, ib, l)], x->sign_mask[b[34 + 4 * ib + l]]);
            memcpy(wb->q + 32 * ib + 8 * l, &v, 8);
        }
    }
}

/* packed_bytes: the grid types' 4-bit tile (kernels/x86/matmul_pack.c). */
const sd_qtype sd_qtype_iq2_s = {GGML_TYPE_IQ2_S, QK_K, BYTES, 1, 1184, dequantize, NULL, decode};
