/* Repacking quantized weights into the AVX2 kernels' layout, once at load time.
 *
 * Eight output rows form a tile; for every weight block the tile's integer
 * values are interleaved so that one 32-byte vector holds 4 consecutive
 * values of each of the 8 rows (byte 4r+t of vector k = row r, value 4k+t).
 * An activation dword broadcast against such a vector gives, after
 * maddubs/madd, the 8 rows' partial sums in the 8 int32 lanes: the per-block
 * scale work is then one float FMA per (block, 8 rows, activation row)
 * (ARCHITECTURE.md §2, "weights repacked 16 rows x 4 bytes", here 8 rows for AVX2).
 * Rows past n_out are zero. Chunk layouts, per (tile, block), offsets in bytes:
 *   Q8_0 (272):  not interleaved: a tile is nb chunks of 256 bytes (8 vectors of
 *                int8 values), then nb x 16 bytes of d f16[8] (the file's bits), so
 *                the copy is exactly the file's size and the int vectors stay
 *                32-byte aligned when nb is even
 *   Q4_0 (160):  [0,128) 4 vectors, nibbles: low = value 4k+t, high = 16+4k+t; [128,160) d[8]
 *   Q4_1 (192):  as Q4_0, then [160,192) m[8]
 *   Q5_0 (192):  nibbles as Q4_0, [128,160) one vector of 5th bits (bit p of byte t =
 *                value 4p+t), [160,192) d[8];  Q5_1 (224): as Q5_0, then [192,224) m[8]
 *   Q4_K (1184): [0,1024) 32 vectors = the block's qs dwords (i = k/8: low nibble
 *                value 64i+4(k%8)+t, high nibble 64i+32+4(k%8)+t);
 *                [1024,1088) scales u8 [sub j][row]; [1088,1152) mins u8 [j][row];
 *                [1152,1168) d f16[8]; [1168,1184) dmin f16[8] (the file's bits)
 *   Q5_K (1472): as Q4_K with the low nibbles, then [1024,1280) 8 vectors of high
 *                bits (vector h, bit p = 5th bit of value 32p+4h+t), then scales,
 *                mins as Q4_K, 256 bytes later, then d f32[8], dmin f32[8]
 *   Q6_K (1696): [0,1024) 32 vectors, low nibble of value 4k+t | low nibble of 4(k+32)+t << 4;
 *                [1024,1536) 16 vectors, 2-bit highs of values 4(k+16p)+t at bits 2p;
 *                [1536,1664) scales i8 [sub j][row]; [1664,1696) d[8]
 *   Q2_K (704):  [0,512) 16 vectors, 2-bit values: bits 2p of byte 4r+t of vector v =
 *                value 4(v+16p)+t; [512,640) the GGUF scale byte (scale | min << 4)
 *                [sub j][row]; [640,672) d[8]; [672,704) dmin[8]
 *   Q3_K (928):  [0,512) the low 2 bits as Q2_K; [512,768) 8 vectors of third bits
 *                (vector h, bit p = bit 2 of value 4(h+8p)+t); [768,896) scales - 32,
 *                i8 [sub j][row]; [896,928) d[8]
 *   IQ4_NL (160): [0,128) 4 vectors of table indices, low nibble = value 4k+t,
 *                high = 16+4k+t; [128,160) d[8]
 *   IQ4_XS (1120): [0,1024) 32 vectors of table indices, vector 4j+i: low nibble =
 *                value 32j+4i+t, high = 32j+16+4i+t; [1024,1088) scales - 32,
 *                i8 [sub j][row]; [1088,1120) d[8]
 *   grid types (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S): the IQ4_XS
 *                tile over the type's level table (sd_grid_tile_table): [0,1024)
 *                32 vectors of 4-bit indices as IQ4_XS; then the odd sub-block
 *                scales i8 [sub j][row] (8 of 32: 1120 bytes, at [1024,1088), d
 *                f32[8] at [1088,1120); 16 of 16 for IQ2_XS, IQ2_S, IQ1_M: 1184
 *                bytes, scales at [1024,1152), d at [1152,1184)); d is the
 *                descriptor's (the file's scale times its power of two)
 * Memory: 272/272 (Q8_0), 160/144 (Q4_0), 192/160 (Q4_1), 192/176 (Q5_0),
 * 224/192 (Q5_1), 1184/1152 (Q4_K), 1472/1408 (Q5_K), 1696/1680 (Q6_K),
 * 704/672 (Q2_K), 928/880 (Q3_K), 160/144 (IQ4_NL), 1120/1088 (IQ4_XS),
 * 160/136 (MXFP4, the IQ4_NL tile with MXFP4's table and f32 scales);
 * grid types 1120/66 (IQ2_XXS, 2.1x), 1184/74 (IQ2_XS, 2.0x), 1184/82
 * (IQ2_S, 1.8x), 1120/98 (IQ3_XXS, 1.43x), 1120/110 (IQ3_S, 1.27x),
 * 1120/50 (IQ1_S, 2.8x), 1184/56 (IQ1_M, 2.6x), per 8 rows for the tile and
 * per row for the block, of the GGUF bytes: 4.375 / 4.625 bits per weight
 * (a 3-bit form would do for the 6-level IQ1/IQ2 types, at a costlier
 * unpack; --no-repack keeps the file's bytes). The loader gives the file pages of a packed matrix back as
 * the slabs are done (sd_matrix_opts.packed_rows, gguf_release), so the copy
 * replaces the mapping's pages rather than doubling them; get_row still reads
 * the mapping (faulting back in only the rows it looks up). */
#include <string.h>

#include "numerics/kernels/matmul_impl.h"
#include "numerics/quant/quant_blocks.h"

static uint8_t *at(uint8_t *c, int k, int r, int t) { return c + 32 * k + 4 * r + t; }

/* The table index (0..15) of a value decoded by sd_wblock_decode from an
 * IQ4 or MXFP4 block (MXFP4's two zeros: either index gives 0). */
static int iq4_index(const int8_t *table, int8_t v) {
    int i = 0;
    while (i < 15 && table[i] != v) i++;
    return i;
}

/* The level tables of the grid types: every value sd_wblock_decode gives
 * (grid level times sign; IQ1: 8 * level + delta). Sorted; 0 pads. */
static const int8_t k_grid_iq2[16] = {-43, -25, -8, 0, 8, 25, 43};
static const int8_t k_grid_iq3xxs[16] = {-62, -52, -44, -36, -28, -20, -12, -4, 4, 12, 20, 28, 36, 44, 52, 62};
static const int8_t k_grid_iq3s[16] = {-15, -13, -11, -9, -7, -5, -3, -1, 1, 3, 5, 7, 9, 11, 13, 15};
static const int8_t k_grid_iq1[16] = {-9, -7, -1, 1, 7, 9};

const int8_t *sd_grid_tile_table(uint32_t type, int *nsub) {
    *nsub = 8;
    switch (type) {
    case GGML_TYPE_IQ2_XXS: return k_grid_iq2;
    case GGML_TYPE_IQ3_XXS: return k_grid_iq3xxs;
    case GGML_TYPE_IQ3_S: return k_grid_iq3s;
    case GGML_TYPE_IQ1_S: return k_grid_iq1;
    default: break;
    }
    *nsub = 16;
    switch (type) {
    case GGML_TYPE_IQ2_XS:
    case GGML_TYPE_IQ2_S: return k_grid_iq2;
    case GGML_TYPE_IQ1_M: return k_grid_iq1;
    default: return NULL;
    }
}

/* A grid type's block: indices as IQ4_XS, then scales and d (the layout above). */
static void pack_row_grid(uint32_t type, const sd_wblock *wb, int r, uint8_t *c) {
    int nsub;
    const int8_t *tb = sd_grid_tile_table(type, &nsub);
    uint8_t inv[256] = {0}; /* value -> index; each value decode gives is in tb */
    for (int i = 15; i >= 0; i--) inv[(uint8_t)tb[i]] = (uint8_t)i;
    for (int j = 0; j < 8; j++)
        for (int i = 0; i < 4; i++)
            for (int t = 0; t < 4; t++)
                *at(c, 4 * j + i, r, t) = (uint8_t)(inv[(uint8_t)wb->q[32 * j + 4 * i + t]] |
                                                    inv[(uint8_t)wb->q[32 * j + 16 + 4 * i + t]] << 4);
    for (int j = 0; j < nsub; j++) c[1024 + 8 * j + r] = (uint8_t)(int8_t)wb->sc[j];
    ((float *)(c + 1024 + 8 * nsub))[r] = wb->d;
}

/* Q2_K / Q3_K: bits 2p of vector v = bits `bit`, `bit` + 1 of value 4(v+16p)+t. */
static void pack_2bit(const sd_wblock *wb, int r, uint8_t *c) {
    for (int v = 0; v < 16; v++)
        for (int t = 0; t < 4; t++) {
            int bits = 0;
            for (int p = 0; p < 4; p++) bits |= (wb->q[4 * (v + 16 * p) + t] & 3) << (2 * p);
            *at(c, v, r, t) = (uint8_t)bits;
        }
}

static void pack_row_k23(uint32_t type, const sd_wblock *wb, int r, uint8_t *c) {
    pack_2bit(wb, r, c);
    if (type == GGML_TYPE_Q2_K) {
        for (int j = 0; j < 16; j++) c[512 + 8 * j + r] = (uint8_t)(wb->sc[j] | wb->mn[j] << 4);
        ((float *)(c + 640))[r] = wb->d;
        ((float *)(c + 672))[r] = wb->m;
        return;
    }
    for (int h = 0; h < 8; h++)
        for (int t = 0; t < 4; t++) {
            int bits = 0;
            for (int p = 0; p < 8; p++) bits |= ((wb->q[4 * (h + 8 * p) + t] >> 2) & 1) << p;
            *at(c + 512, h, r, t) = (uint8_t)bits;
        }
    for (int j = 0; j < 16; j++) c[768 + 8 * j + r] = (uint8_t)(int8_t)wb->sc[j];
    ((float *)(c + 896))[r] = wb->d;
}

/* IQ4_NL, IQ4_XS and MXFP4 (the IQ4_NL tile over MXFP4's table). */
static void pack_row_iq4(uint32_t type, const sd_wblock *wb, int r, uint8_t *c) {
    int nsub = type == GGML_TYPE_IQ4_XS ? 8 : 1;
    const int8_t *tb = type == GGML_TYPE_MXFP4 ? sd_kvalues_mxfp4 : sd_kvalues_iq4nl;
    for (int j = 0; j < nsub; j++)
        for (int i = 0; i < 4; i++)
            for (int t = 0; t < 4; t++)
                *at(c, 4 * j + i, r, t) = (uint8_t)(iq4_index(tb, wb->q[32 * j + 4 * i + t]) |
                                                    iq4_index(tb, wb->q[32 * j + 16 + 4 * i + t]) << 4);
    if (type != GGML_TYPE_IQ4_XS) {
        ((float *)(c + 128))[r] = wb->d;
        return;
    }
    for (int j = 0; j < 8; j++) c[1024 + 8 * j + r] = (uint8_t)(int8_t)wb->sc[j];
    ((float *)(c + 1088))[r] = wb->d;
}

void sd_pack_q6_k_ints(const sd_wblock *wb, int r, uint8_t *c, int vec) {
    for (int k = 0; k < 32; k++)
        for (int t = 0; t < 4; t++)
            c[vec * k + 4 * r + t] = (uint8_t)((wb->q[4 * k + t] & 0xF) | (wb->q[4 * (k + 32) + t] & 0xF) << 4);
    for (int k = 0; k < 16; k++)
        for (int t = 0; t < 4; t++) {
            int h = 0;
            for (int p = 0; p < 4; p++) h |= (wb->q[4 * (k + 16 * p) + t] >> 4) << (2 * p);
            c[vec * (32 + k) + 4 * r + t] = (uint8_t)h;
        }
}

static void pack_row(uint32_t type, const sd_wblock *wb, int r, uint8_t *c) {
    float *fd;
    switch (type) {
    case GGML_TYPE_Q8_0: /* d: sd_matmul_pack copies the f16 bits */
        for (int k = 0; k < 8; k++)
            for (int t = 0; t < 4; t++) *at(c, k, r, t) = (uint8_t)wb->q[4 * k + t];
        break;
    case GGML_TYPE_Q4_0:
    case GGML_TYPE_Q4_1:
    case GGML_TYPE_Q5_0:
    case GGML_TYPE_Q5_1: {
        int bits5 = type == GGML_TYPE_Q5_0 || type == GGML_TYPE_Q5_1;
        for (int k = 0; k < 4; k++)
            for (int t = 0; t < 4; t++)
                *at(c, k, r, t) = (uint8_t)((wb->q[4 * k + t] & 0xF) | (wb->q[16 + 4 * k + t] & 0xF) << 4);
        if (bits5)
            for (int t = 0; t < 4; t++) {
                int bits = 0;
                for (int p = 0; p < 8; p++) bits |= (wb->q[4 * p + t] >> 4) << p;
                *at(c + 128, 0, r, t) = (uint8_t)bits;
            }
        fd = (float *)(c + (bits5 ? 160 : 128));
        fd[r] = wb->d;
        if (wb->has_min) fd[8 + r] = wb->m;
        break;
    }
    case GGML_TYPE_Q4_K:
    case GGML_TYPE_Q5_K: {
        for (int k = 0; k < 32; k++) {
            int i = k / 8, m = k % 8;
            for (int t = 0; t < 4; t++)
                *at(c, k, r, t) = (uint8_t)((wb->q[64 * i + 4 * m + t] & 0xF) | (wb->q[64 * i + 32 + 4 * m + t] & 0xF) << 4);
        }
        int so = 1024; /* scales offset */
        if (type == GGML_TYPE_Q5_K) {
            for (int h = 0; h < 8; h++)
                for (int t = 0; t < 4; t++) {
                    int bits = 0;
                    for (int p = 0; p < 8; p++) bits |= (wb->q[32 * p + 4 * h + t] >> 4) << p;
                    *at(c + 1024, h, r, t) = (uint8_t)bits;
                }
            so = 1280;
        }
        for (int j = 0; j < 8; j++) {
            c[so + 8 * j + r] = (uint8_t)wb->sc[j];
            c[so + 64 + 8 * j + r] = (uint8_t)wb->mn[j];
        }
        if (type == GGML_TYPE_Q5_K) { /* Q4_K: sd_matmul_pack copies the f16 bits */
            ((float *)(c + so + 128))[r] = wb->d;
            ((float *)(c + so + 160))[r] = wb->m;
        }
        break;
    }
    case GGML_TYPE_Q6_K:
        sd_pack_q6_k_ints(wb, r, c, 32);
        for (int j = 0; j < 16; j++) c[1536 + 8 * j + r] = (uint8_t)wb->sc[j];
        ((float *)(c + 1664))[r] = wb->d;
        break;
    case GGML_TYPE_Q2_K:
    case GGML_TYPE_Q3_K:
        pack_row_k23(type, wb, r, c);
        break;
    case GGML_TYPE_IQ4_NL:
    case GGML_TYPE_IQ4_XS:
    case GGML_TYPE_MXFP4:
        pack_row_iq4(type, wb, r, c);
        break;
    default: { /* the grid types: the one list of them is sd_grid_tile_table */
        int nsub;
        if (sd_grid_tile_table(type, &nsub)) pack_row_grid(type, wb, r, c);
        break;
    }
    }
}

void sd_matmul_pack(const sd_matrix *m, void *packed, int64_t t0, int64_t t1) {
    const sd_wtype *wt = sd_wtype_get(m->type);
    int64_t nb = m->n_in / wt->block;
    size_t row_bytes = (size_t)nb * (size_t)wt->block_bytes;
#pragma omp parallel for schedule(static)
    for (int64_t t = t0; t < t1; t++)
        for (int64_t b = 0; b < nb; b++) {
            sd_wblock wb;
            uint8_t *tile = (uint8_t *)packed + (size_t)t * (size_t)nb * (size_t)wt->packed_bytes;
            uint8_t *c = tile + (size_t)b * (size_t)wt->packed_bytes, *d16 = NULL;
            if (m->type == GGML_TYPE_Q8_0) {
                c = tile + (size_t)b * 256;
                d16 = tile + (size_t)nb * 256 + (size_t)b * 16;
                memset(d16, 0, 16);
            }
            memset(c, 0, d16 ? 256 : (size_t)wt->packed_bytes);
            for (int r = 0; r < SD_TILE && t * SD_TILE + r < m->n_out; r++) {
                const uint8_t *src = (const uint8_t *)m->data + (size_t)(t * SD_TILE + r) * row_bytes +
                                     (size_t)b * (size_t)wt->block_bytes;
                sd_wblock_decode(m->type, src, &wb);
                pack_row(m->type, &wb, r, c);
                if (d16) memcpy(d16 + 2 * r, src, 2); /* block_q8_0.d, little-endian f16 */
                if (m->type == GGML_TYPE_Q4_K) { /* block_q4_K.d, .dmin */
                    memcpy(c + 1152 + 2 * r, src, 2);
                    memcpy(c + 1168 + 2 * r, src + 2, 2);
                }
            }
        }
}
