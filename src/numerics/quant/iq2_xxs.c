/* IQ2_XXS: 2.0625 bits per weight, 256 per block of 66 bytes (llama.cpp
 * ggml/src/ggml-common.h block_iq2_xxs; dequantize_row_iq2_xxs in
 * ggml-quants.c):
 *   d      fp16 at byte 0
 *   qs     8 sub-blocks of 32 values, 8 bytes each from byte 2: bytes 0..3 are
 *          4 indices into iq2xxs_grid (8 values each), bytes 4..7 a
 *          little-endian u32 a: 7-bit sign index (ksigns_iq2xs) of group l at
 *          bit 7l, l = 0..3, and the 4-bit scale s = a >> 28.
 *   w = d * (0.5 + s) * 0.25 * grid value * sign  =  (d / 8) * (2s + 1) * (+-grid). */
#include <string.h>

#include "format/ggml_type.h"
#include "numerics/quant.h"
#include "numerics/quant/iq_grids.h"
#include "numerics/quant/qtype.h"

enum { BYTES = 66 };

static void dequantize(const void *src, float *y, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / QK_K; i++, b += BYTES) {
        const float d = sd_fp16_to_fp32(sd_rd16(b));
        for (int ib = 0; ib < 8; ib++) {
            const uint8_t *p = b + 2 + 8 * ib;
            const uint32_t a = sd_rd32(p + 4);
            const float db = d * (0.5f + (float)(a >> 28)) * 0.25f;
            for (int l = 0; l < 4; l++, y += 8) {
                int8_t g[8];
                sd_iq_grid8(sd_iq2xxs_grid[p[l]], sd_iq2_levels, g);
                const uint8_t sg = sd_iq_signs(a >> 7 * l);
                for (int j = 0; j < 8; j++) {
                    const float v = db * (float)g[j];
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
    for (int ib = 0; ib < 8; ib++) {
        const uint8_t *p = b + 2 + 8 * ib;
        const uint32_t a = sd_rd32(p + 4);
        wb->sc[ib] = 2 * (int)(a >> 28) + 1;
        for (int l = 0; l < 4; l++) {
            uint64_t v = sd_iq_negate(x->iq2xxs[p[l]], x->sign_mask[sd_iq_signs(a >> 7 * l)]);
            memcpy(wb->q + 32 * ib + 8 * l, &v, 8);
        }
    }
}

/* packed_bytes: the grid types' 4-bit tile (kernels/x86/matmul_pack.c). */
const sd_qtype sd_qtype_iq2_xxs = {GGML_TYPE_IQ2_XXS, QK_K, BYTES, 1, 1120, dequantize, NULL, decode};
