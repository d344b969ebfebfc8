/* The lattice grids of ggml's IQ1/IQ2/IQ3 weight types (llama.cpp
 * ggml/src/ggml-common.h: iq2xxs_grid, iq2xs_grid, iq2s_grid, iq3xxs_grid,
 * iq3s_grid, iq1s_grid), and the sign rule of ksigns_iq2xs. A weight file
 * stores indices into these grids; iq_grids.c holds them, re-encoded by
 * scripts/gen_iq_grids.py as one uint16 per entry (2-bit level codes for the
 * 8-value grids, 3-bit codes for the 4-value grids), and
 * tests/numerics/test_iq_reference.c checks every entry against llama.cpp's
 * own dequantization. Private to numerics/. */
#ifndef SD_NUMERICS_QUANT_IQ_GRIDS_H
#define SD_NUMERICS_QUANT_IQ_GRIDS_H

#include <stdint.h>

extern const uint16_t sd_iq2xxs_grid[256]; /* levels sd_iq2_levels */
extern const uint16_t sd_iq2xs_grid[512];  /* levels sd_iq2_levels */
extern const uint16_t sd_iq2s_grid[1024];  /* levels sd_iq2_levels */
extern const uint16_t sd_iq3xxs_grid[256]; /* levels sd_iq3xxs_levels */
extern const uint16_t sd_iq3s_grid[512];   /* levels sd_iq3s_levels */
extern const uint16_t sd_iq1s_grid[2048];  /* levels sd_iq1s_levels */

/* The values the grids take (ggml's grid bytes), by level code. */
static const int8_t sd_iq2_levels[4] = {8, 25, 43, 0};
static const int8_t sd_iq3xxs_levels[8] = {4, 12, 20, 28, 36, 44, 52, 62};
static const int8_t sd_iq3s_levels[8] = {1, 3, 5, 7, 9, 11, 13, 15};
static const int8_t sd_iq1s_levels[4] = {-1, 0, 1, 0};

/* The 8 values of a 2-bit-coded grid entry. */
static inline void sd_iq_grid8(uint16_t e, const int8_t lv[4], int8_t out[8]) {
    for (int j = 0; j < 8; j++) out[j] = lv[(e >> (2 * j)) & 3];
}

/* The 4 values of a 3-bit-coded grid entry. */
static inline void sd_iq_grid4(uint16_t e, const int8_t lv[8], int8_t out[4]) {
    for (int j = 0; j < 4; j++) out[j] = lv[(e >> (3 * j)) & 7];
}

/* ksigns_iq2xs[i] for a 7-bit i: the 8 sign bits of a group of 8 values, the
 * eighth making the count of minus signs even. Bit j set: value j negative. */
static inline uint8_t sd_iq_signs(uint32_t i7) {
    uint32_t p = i7 & 127, x = p;
    x ^= x >> 4;
    x ^= x >> 2;
    x ^= x >> 1;
    return (uint8_t)(p | (x & 1) << 7);
}

/* The grids expanded for decoding (built once, on first use, from the codes
 * above; iq_expand.c): each entry's values as int8 bytes in a little-endian
 * word (value j in byte j), IQ1_S's times 8; and per sign byte a mask with
 * 0xFF in the lanes it negates. */
typedef struct sd_iq_expanded {
    uint64_t iq2xxs[256], iq2xs[512], iq2s[1024];
    uint32_t iq3xxs[256], iq3s[512];
    uint64_t iq1s_x8[2048];
    uint64_t sign_mask[256];
} sd_iq_expanded;

const sd_iq_expanded *sd_iq_expanded_get(void);

/* The bytes of g (each in 1..127) negated where m has 0xFF: per lane
 * ~g + 1 = 256 - g, which never carries into the next lane. */
static inline uint64_t sd_iq_negate(uint64_t g, uint64_t m) {
    return (g ^ m) + (m & 0x0101010101010101ull);
}

/* Lane-wise a + b of int8 lanes, without carries between lanes. */
static inline uint64_t sd_iq_add8(uint64_t a, uint64_t b) {
    const uint64_t h = 0x8080808080808080ull;
    return ((a & ~h) + (b & ~h)) ^ ((a ^ b) & h);
}

#endif
