/* Repacking quantized weights into the AVX-512 VNNI kernels' layout, once at
 * load time (ARCHITECTURE.md §2, "weights repacked 16 rows x 4 bytes per 64-byte
 * line"). Sixteen output rows form a tile; within a vector of 64 bytes, byte
 * 4r+t holds value 4k+t of row r, so one vpdpbusd of a broadcast activation
 * dword adds 4 products to each of the 16 rows' int32 lanes. Values are
 * unsigned (vpdpbusd multiplies u8 by s8): the kernel subtracts off times the
 * activation block sum, as the reference does. Rows past n_out are zero.
 *
 * A tile is nb chunks of ints (ib bytes each, a multiple of 64, so every
 * vector is 64-byte aligned), then nb chunks of scales (the file's f16 bits:
 * d[16], then m[16] or dmin[16] for the types with a min), padded to 64 bytes.
 * Ints per (tile, block), offsets in bytes:
 *   Q8_0 (512):   8 vectors, value 4k+t as q + 128 (u8)
 *   Q4_0, Q4_1, IQ4_NL (256): 4 vectors, low nibble = value 4k+t, high = 16+4k+t
 *                 (IQ4_NL: table indices; the kernel maps them to table value + 128)
 *   Q5_0, Q5_1 (320): as Q4_0, then one vector of 5th bits (bit p of byte 4r+t = value 4p+t)
 *   Q4_K (2304):  [0,2048) 32 vectors, vector 8i+m: low nibble = value 64i+4m+t,
 *                 high = 64i+32+4m+t; [2048,2176) scales u8 [sub j][row];
 *                 [2176,2304) mins u8 [j][row]
 *   Q5_K (2816):  as Q4_K, with [2048,2560) 8 vectors of 5th bits (vector h, bit p =
 *                 value 32p+4h+t) before the scales and mins
 *   Q6_K (3328):  [0,2048) 32 vectors, low nibble of value 4k+t | of 4(k+32)+t << 4;
 *                 [2048,3072) 16 vectors, 2-bit highs of values 4(k+16p)+t at bits 2p;
 *                 [3072,3328) scales i8 [sub j][row]
 * Memory per tile: the GGUF bytes of its 16 rows (1.00x; Q4_K 1.03x, Q5_K
 * 1.02x, Q6_K 1.01x), plus at most 63 bytes of padding. */
#include <stddef.h>
#include <string.h>

#include "numerics/kernels/matmul_impl.h"
#include "numerics/quant/quant_blocks.h"

/* ib: int bytes per block; sb: scale bytes (0 = type not supported); d_at,
 * m_at: offsets of the f16 d and min/dmin in the GGUF block (-1 = none). */
typedef struct pack512 {
    uint32_t type;
    int ib, sb, d_at, m_at;
} pack512;

static const pack512 k_pack[] = {
    {GGML_TYPE_Q8_0, 512, 32, offsetof(block_q8_0, d), -1},
    {GGML_TYPE_Q4_0, 256, 32, offsetof(block_q4_0, d), -1},
    {GGML_TYPE_Q4_1, 256, 64, offsetof(block_q4_1, d), offsetof(block_q4_1, m)},
    {GGML_TYPE_Q5_0, 320, 32, offsetof(block_q5_0, d), -1},
    {GGML_TYPE_Q5_1, 320, 64, offsetof(block_q5_1, d), offsetof(block_q5_1, m)},
    {GGML_TYPE_IQ4_NL, 256, 32, offsetof(block_iq4_nl, d), -1},
    {GGML_TYPE_Q4_K, 2304, 64, offsetof(block_q4_K, d), offsetof(block_q4_K, dmin)},
    {GGML_TYPE_Q5_K, 2816, 64, offsetof(block_q5_K, d), offsetof(block_q5_K, dmin)},
    {GGML_TYPE_Q6_K, 3328, 32, offsetof(block_q6_K, d), -1},
};

static const pack512 *pack_get(uint32_t type) {
    for (size_t i = 0; i < sizeof k_pack / sizeof k_pack[0]; i++)
        if (k_pack[i].type == type) return &k_pack[i];
    return NULL;
}

bool sd_avx512_layout(uint32_t type, int *ib, int *sb) {
    const pack512 *p = pack_get(type);
    if (!p) return false;
    *ib = p->ib;
    *sb = p->sb;
    return true;
}

size_t sd_avx512_tile_bytes(uint32_t type, int64_t nb) {
    const pack512 *p = pack_get(type);
    if (!p) return 0;
    return ((size_t)nb * (size_t)(p->ib + p->sb) + 63) & ~(size_t)63;
}

static uint8_t *at(uint8_t *c, int k, int r, int t) { return c + 64 * k + 4 * r + t; }

static int iq4_index(int8_t v) {
    int i = 0;
    while (i < 15 && sd_kvalues_iq4nl[i] != v) i++;
    return i;
}

/* Low nibble = value lo(k, t), high nibble = value hi(k, t) of vector k. */
static void pack_nibbles(const sd_wblock *wb, int r, uint8_t *c, int n_vec, int iq4) {
    for (int k = 0; k < n_vec; k++)
        for (int t = 0; t < 4; t++) {
            int lo, hi;
            if (n_vec == 4) { /* 32-element blocks */
                lo = 4 * k + t;
                hi = 16 + 4 * k + t;
            } else { /* Q4_K, Q5_K: vector 8i+m */
                lo = 64 * (k / 8) + 4 * (k % 8) + t;
                hi = lo + 32;
            }
            int a = iq4 ? iq4_index(wb->q[lo]) : wb->q[lo] & 0xF, b = iq4 ? iq4_index(wb->q[hi]) : wb->q[hi] & 0xF;
            *at(c, k, r, t) = (uint8_t)(a | b << 4);
        }
}

static void pack_row(uint32_t type, const sd_wblock *wb, int r, uint8_t *c) {
    switch (type) {
    case GGML_TYPE_Q8_0:
        for (int k = 0; k < 8; k++)
            for (int t = 0; t < 4; t++) *at(c, k, r, t) = (uint8_t)(wb->q[4 * k + t] + 128);
        break;
    case GGML_TYPE_Q4_0:
    case GGML_TYPE_Q4_1:
    case GGML_TYPE_IQ4_NL:
        pack_nibbles(wb, r, c, 4, type == GGML_TYPE_IQ4_NL);
        break;
    case GGML_TYPE_Q5_0:
    case GGML_TYPE_Q5_1:
        pack_nibbles(wb, r, c, 4, 0);
        for (int t = 0; t < 4; t++) {
            int bits = 0;
            for (int p = 0; p < 8; p++) bits |= (wb->q[4 * p + t] >> 4) << p;
            *at(c + 256, 0, r, t) = (uint8_t)bits;
        }
        break;
    case GGML_TYPE_Q4_K:
    case GGML_TYPE_Q5_K: {
        pack_nibbles(wb, r, c, 32, 0);
        int so = 2048;
        if (type == GGML_TYPE_Q5_K) {
            for (int h = 0; h < 8; h++)
                for (int t = 0; t < 4; t++) {
                    int bits = 0;
                    for (int p = 0; p < 8; p++) bits |= (wb->q[32 * p + 4 * h + t] >> 4) << p;
                    *at(c + 2048, h, r, t) = (uint8_t)bits;
                }
            so = 2560;
        }
        for (int j = 0; j < 8; j++) {
            c[so + 16 * j + r] = (uint8_t)wb->sc[j];
            c[so + 128 + 16 * j + r] = (uint8_t)wb->mn[j];
        }
        break;
    }
    case GGML_TYPE_Q6_K:
        sd_pack_q6_k_ints(wb, r, c, 64);
        for (int j = 0; j < 16; j++) c[3072 + 16 * j + r] = (uint8_t)wb->sc[j];
        break;
    }
}

void sd_avx512_pack(const sd_matrix *m, void *packed, int64_t t0, int64_t t1) {
    const sd_wtype *wt = sd_wtype_get(m->type);
    const pack512 *p = pack_get(m->type);
    int64_t nb = m->n_in / wt->block;
    size_t row_bytes = (size_t)nb * (size_t)wt->block_bytes, stride = sd_avx512_tile_bytes(m->type, nb);
#pragma omp parallel for schedule(static)
    for (int64_t t = t0; t < t1; t++) {
        uint8_t *tile = (uint8_t *)packed + (size_t)t * stride;
        memset(tile, 0, stride);
        for (int64_t b = 0; b < nb; b++) {
            sd_wblock wb;
            uint8_t *c = tile + (size_t)b * (size_t)p->ib, *sc = tile + (size_t)nb * (size_t)p->ib + (size_t)b * (size_t)p->sb;
            for (int r = 0; r < SD_TILE16 && t * SD_TILE16 + r < m->n_out; r++) {
                const uint8_t *src = (const uint8_t *)m->data + (size_t)(t * SD_TILE16 + r) * row_bytes +
                                     (size_t)b * (size_t)wt->block_bytes;
                sd_wblock_decode(m->type, src, &wb);
                pack_row(m->type, &wb, r, c);
                memcpy(sc + 2 * r, src + p->d_at, 2); /* little-endian f16, as in the file */
                if (p->m_at >= 0) memcpy(sc + 32 + 2 * r, src + p->m_at, 2);
            }
        }
    }
}
