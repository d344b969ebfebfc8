/* IQ1_M: 1.75 bits per weight, 256 per block of 56 bytes, no fp16 field of
 * its own (llama.cpp ggml/src/ggml-common.h block_iq1_m, iq1m_scale_t,
 * IQ1M_DELTA; dequantize_row_iq1_m in ggml-quants.c):
 *   qs      32 bytes from byte 0: low 8 bits of the iq1s_grid index of each
 *           group of 8 values
 *   qh      16 bytes from byte 32, one per pair of groups: bits 0..2 / 4..6
 *           the high 3 bits of the first / second group's index, bit 3 / 7
 *           the sign of its shift delta = +-1/8
 *   scales  4 little-endian u16 from byte 48: 3-bit scales, sub-block ib's
 *           first 16 values at bit 6 (ib % 2) of u16 ib / 2, its last 16 at
 *           bit 6 (ib % 2) + 3; the top nibbles of the four u16 are the
 *           fp16 d (u16 0's in bits 0..3, ..., u16 3's in bits 12..15).
 *   w = d * (2s + 1) * (grid + delta)  =  (d / 8) * (2s + 1) * (8 grid +- 1). */
#include <string.h>

#include "format/ggml_type.h"
#include "numerics/quant.h"
#include "numerics/quant/iq_grids.h"
#include "numerics/quant/qtype.h"

enum { BYTES = 56 };

static float block_d(const uint8_t *b) {
    uint16_t s0 = sd_rd16(b + 48), s1 = sd_rd16(b + 50), s2 = sd_rd16(b + 52), s3 = sd_rd16(b + 54);
    return sd_fp16_to_fp32((uint16_t)((s0 >> 12) | ((s1 >> 8) & 0x00F0) | ((s2 >> 4) & 0x0F00) | (s3 & 0xF000)));
}

/* The 3-bit scale of half k (0, 1) of sub-block ib. */
static int scale(const uint8_t *b, int ib, int k) {
    return (sd_rd16(b + 48 + 2 * (ib / 2)) >> (6 * (ib % 2) + 3 * k)) & 7;
}

/* Group l (0..3) of sub-block ib: its 8 grid values and its delta sign. */
static void group(const uint8_t *b, int ib, int l, int8_t g[8], int *neg) {
    const uint8_t h = b[32 + 2 * ib + l / 2];
    const int hi = l % 2 ? (h >> 4) & 7 : h & 7;
    sd_iq_grid8(sd_iq1s_grid[b[4 * ib + l] | hi << 8], sd_iq1s_levels, g);
    *neg = l % 2 ? h & 0x80 : h & 0x08;
}

static void dequantize(const void *src, float *y, int64_t n) {
    const uint8_t *b = src;
    for (int64_t i = 0; i < n / QK_K; i++, b += BYTES) {
        const float d = block_d(b);
        for (int ib = 0; ib < 8; ib++) {
            const float dl[2] = {d * (float)(2 * scale(b, ib, 0) + 1), d * (float)(2 * scale(b, ib, 1) + 1)};
            for (int l = 0; l < 4; l++, y += 8) {
                int8_t g[8];
                int neg;
                group(b, ib, l, g, &neg);
                const float delta = neg ? -0.125f : 0.125f;
                for (int j = 0; j < 8; j++) y[j] = dl[l / 2] * ((float)g[j] + delta);
            }
        }
    }
}

/* 8 * grid words plus the delta, 8 values at a time (iq_grids.h). */
static void decode(const uint8_t *b, sd_wblock *wb) {
    const sd_iq_expanded *x = sd_iq_expanded_get();
    wb->d = block_d(b) * 0.125f;
    wb->sub = 16;
    for (int ib = 0; ib < 8; ib++) {
        wb->sc[2 * ib] = 2 * scale(b, ib, 0) + 1;
        wb->sc[2 * ib + 1] = 2 * scale(b, ib, 1) + 1;
        for (int l = 0; l < 4; l++) {
            const uint8_t h = b[32 + 2 * ib + l / 2];
            const int hi = l % 2 ? (h >> 4) & 7 : h & 7, neg = l % 2 ? h & 0x80 : h & 0x08;
            uint64_t v = sd_iq_add8(x->iq1s_x8[b[4 * ib + l] | hi << 8], neg ? ~0ull : 0x0101010101010101ull);
            memcpy(wb->q + 32 * ib + 8 * l, &v, 8);
        }
    }
}

/* packed_bytes: the grid types' 4-bit tile (kernels/x86/matmul_pack.c). */
const sd_qtype sd_qtype_iq1_m = {GGML_TYPE_IQ1_M, QK_K, BYTES, 1, 1184, dequantize, NULL, decode};
