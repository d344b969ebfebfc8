/* The expanded grids of iq_grids.h, built once from the compact codes. */
#include <pthread.h>

#include "numerics/quant/iq_grids.h"

static sd_iq_expanded g_x;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static uint64_t word8(uint16_t e, const int8_t lv[4], int mul) {
    int8_t v[8];
    uint64_t w = 0;
    sd_iq_grid8(e, lv, v);
    for (int j = 0; j < 8; j++) w |= (uint64_t)(uint8_t)(int8_t)(mul * v[j]) << 8 * j;
    return w;
}

static uint32_t word4(uint16_t e, const int8_t lv[8]) {
    int8_t v[4];
    uint32_t w = 0;
    sd_iq_grid4(e, lv, v);
    for (int j = 0; j < 4; j++) w |= (uint32_t)(uint8_t)v[j] << 8 * j;
    return w;
}

static void build(void) {
    for (int i = 0; i < 256; i++) g_x.iq2xxs[i] = word8(sd_iq2xxs_grid[i], sd_iq2_levels, 1);
    for (int i = 0; i < 512; i++) g_x.iq2xs[i] = word8(sd_iq2xs_grid[i], sd_iq2_levels, 1);
    for (int i = 0; i < 1024; i++) g_x.iq2s[i] = word8(sd_iq2s_grid[i], sd_iq2_levels, 1);
    for (int i = 0; i < 256; i++) g_x.iq3xxs[i] = word4(sd_iq3xxs_grid[i], sd_iq3xxs_levels);
    for (int i = 0; i < 512; i++) g_x.iq3s[i] = word4(sd_iq3s_grid[i], sd_iq3s_levels);
    for (int i = 0; i < 2048; i++) g_x.iq1s_x8[i] = word8(sd_iq1s_grid[i], sd_iq1s_levels, 8);
    for (int s = 0; s < 256; s++) {
        uint64_t m = 0;
        for (int j = 0; j < 8; j++)
            if (s >> j & 1) m |= 0xFFull << 8 * j;
        g_x.sign_mask[s] = m;
    }
}

const sd_iq_expanded *sd_iq_expanded_get(void) {
    pthread_once(&g_once, build);
    return &g_x;
}
