/* IQ1_S: 1.5625 bits per weight, 256 per block of 50 bytes (llama.cpp
 * ggml/src/ggml-common.h block_iq1_s, IQ1S_DELTA; dequantize_row_iq1_s in
 * ggml-quants.c):
 *   d    fp16 at byte 0
 *   qs   32 bytes from byte 2: low 8 bits of the iq1s_grid index (8 values
 *        in -1, 0, 1) of each group of 8
 *   qh   8 little-endian u16 from byte 34, one per sub-block of 32: bits
 *        3l..3l+2 the high 3 bits of group l's index, bits 12..14 the scale
 *        s, bit 15 the sign of the shift delta = +-1/8.
 *   w = d * (2s + 1) * (grid + delta)  =  (d / 8) * (2s + 1) * (8 grid +- 1). */
#include <string.h>

#include "format/ggml_type.h"
#include "numerics/quant.h"
#include "numerics/quant/iq_grids.h"
#include "numerics/quant/qtype.h"

enum { BYTES = 50 };

static void dequantize(const void *src, float *y, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / QK_K; i++, b += BYTES) {
        const float d = sd_fp16_to_fp32(sd_rd16(b));
        for (int ib = 0; ib < 8; ib++) {
            const uint16_t h = sd_rd16(b + 34 + 2 * ib);
            const float dl = d * (float)(2 * ((h >> 12) & 7) + 1);
            const float delta = h & 0x8000 ? -0.125f : 0.125f;
            for (int l = 0; l < 4; l++, y += 8) {
                int8_t g[8];
                sd_iq_grid8(sd_iq1s_grid[b[2 + 4 * ib + l] | ((h >> 3 * l) & 7) << 8], sd_iq1s_levels, g);
                for (int j = 0; j < 8; j++) y[j] = dl * ((float)g[j] + delta);
            }
        }
    }
}

/* 8 * grid words plus the delta, 8 values at a time (iq_grids.h). */
static void decode(const uint8_t *b, sd_wblock *wb) {
    const sd_iq_expanded *x = sd_iq_expanded_get();
    wb->d = sd_fp16_to_fp32(sd_rd16(b)) * 0.125f;
    for (int ib = 0; ib < 8; ib++) {
        const uint16_t h = sd_rd16(b + 34 + 2 * ib);
        const uint64_t delta = h & 0x8000 ? ~0ull : 0x0101010101010101ull; /* -1 or +1 per lane */
        wb->sc[ib] = 2 * ((h >> 12) & 7) + 1;
        for (int l = 0; l < 4; l++) {
            uint64_t v = sd_iq_add8(x->iq1s_x8[b[2 + 4 * ib + l] | ((h >> 3 * l) & 7) << 8], delta);
            memcpy(wb->q + 32 * ib + 8 * l, &v, 8);
        }
    }
}

/* packed_bytes: the grid types' 4-bit tile (kernels/x86/matmul_pack.c). */
const sd_qtype sd_qtype_iq1_s = {GGML_TYPE_IQ1_S, QK_K, BYTES, 1, 1120, dequantize, NULL, decode};
