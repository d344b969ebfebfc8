/* IQ3_XXS: 3.0625 bits per weight, 256 per block of 98 bytes (llama.cpp
 * ggml/src/ggml-common.h block_iq3_xxs; dequantize_row_iq3_xxs in
 * ggml-quants.c):
 *   d      fp16 at byte 0
 *   qs     64 bytes from byte 2: indices into iq3xxs_grid (4 values each),
 *          two per group of 8 values, 8 per sub-block of 32
 *   ss     8 little-endian u32 from byte 66, one per sub-block: the 7-bit
 *          sign index (ksigns_iq2xs) of group l at bit 7l, scale s = ss >> 28.
 *   w = d * (0.5 + s) * 0.5 * grid value * sign  =  (d / 4) * (2s + 1) * (+-grid). */
#include <string.h>

#include "format/ggml_type.h"
#include "numerics/quant.h"
#include "numerics/quant/iq_grids.h"
#include "numerics/quant/qtype.h"

enum { BYTES = 98 };

/* The 8 signed values of group l of sub-block ib (signs not yet applied). */
static void group(const uint8_t *b, int ib, int l, int8_t g[8]) {
    sd_iq_grid4(sd_iq3xxs_grid[b[2 + 8 * ib + 2 * l]], sd_iq3xxs_levels, g);
    sd_iq_grid4(sd_iq3xxs_grid[b[2 + 8 * ib + 2 * l + 1]], sd_iq3xxs_levels, g + 4);
}

static void dequantize(const void *src, float *y, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / QK_K; i++, b += BYTES) {
        const float d = sd_fp16_to_fp32(sd_rd16(b));
        for (int ib = 0; ib < 8; ib++) {
            const uint32_t a = sd_rd32(b + 66 + 4 * ib);
            const float db = d * (0.5f + (float)(a >> 28)) * 0.5f;
            for (int l = 0; l < 4; l++, y += 8) {
                int8_t g[8];
                group(b, ib, l, g);
                const uint8_t sg = sd_iq_signs(a >> 7 * l);
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
    wb->d = sd_fp16_to_fp32(sd_rd16(b)) * 0.25f;
    for (int ib = 0; ib < 8; ib++) {
        const uint32_t a = sd_rd32(b + 66 + 4 * ib);
        wb->sc[ib] = 2 * (int)(a >> 28) + 1;
        for (int l = 0; l < 4; l++) {
            const uint8_t *p = b + 2 + 8 * ib + 2 * l;
            uint64_t g = x->iq3xxs[p[0]] | (uint64_t)x->iq3xxs[p[1]] << 32;
            uint64_t v = sd_iq_negate(g, x->sign_mask[sd_iq_signs(a >> 7 * l)]);
            memcpy(wb->q + 32 * ib + 8 * l, &v, 8);
        }
    }
}

/* packed_bytes: the grid types' 4-bit tile (kernels/x86/matmul_pack.c). */
const sd_qtype sd_qtype_iq3_xxs = {GGML_TYPE_IQ3_XXS, QK_K, BYTES, 1, 1120, dequantize, NULL, decode};
