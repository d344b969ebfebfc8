/* Internal to the matmul (numerics/matmul.c and the matmul kernels under
 * numerics/kernels/): the activation quantization, the weight types, and
 * the kernels the rows of the kernel table (kernels.h) name, with their
 * repacked weight layouts. Not for use outside src/numerics/.
 *
 * The arithmetic every kernel implements, per output element y[s][o]
 * (the scalar reference in matmul_ref.c is the definition):
 *  - x[s] is quantized per row (sd_act_quantize): blocks of 32 (Q8_0-like,
 *    float scale, int8 in [-127, 127], int block sum) for the 32-element weight
 *    types, blocks of 256 (Q8_K-like, plus sums per 16 and per 32) for K-quants.
 *  - per weight block, an exact integer dot; then float accumulation over the
 *    blocks in order b = 0, 1, ...:  acc = fmaf((float)isum, d_w * d_x, acc)
 *    (plus a second fmaf for the min term of Q4_1/Q5_1/Q2_K/Q4_K/Q5_K).
 *  - float weights: 8 lane accumulators with fmaf and a fixed tree (as sd_dot_f32).
 * Nothing depends on S, on the other rows, on the thread count or the ISA. */
#ifndef SD_NUMERICS_MATMUL_IMPL_H
#define SD_NUMERICS_MATMUL_IMPL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/ggml_type.h"
#include "numerics/matmul.h"
#include "numerics/quant/qtype.h"

#define SD_QK 32   /* block of the 32-element types (QK8_0 in ggml-common.h) */
#define SD_QK_K 256 /* super-block of the K-quants (QK_K) */
#define SD_TILE 8  /* output rows per AVX2 tile: one int32 lane each */
#define SD_TILE16 16 /* output rows per AVX-512 tile */
#define SD_SCHUNK 32 /* activation rows kept in flight per weight tile */

/* One weight type as the kernels see it: its descriptor (block, block_bytes,
 * act256, packed_bytes, decode; quant/qtype.h). */
typedef sd_qtype sd_wtype;

/* NULL if the type is not supported by the matmul (no decode, not float). */
const sd_wtype *sd_wtype_get(uint32_t type);

/* Quantized activations of S rows, structure of arrays:
 * q[s*n_in + i] int8; d[s*nb + b] per-block scale; sum[s*nsum*nb + ...]:
 * 32-blocks: one sum per block (nsum = 1);
 * 256-blocks: sum16[16] then sum32[8] per block (nsum = 24). */
typedef struct sd_act {
    int64_t n_in, nb;
    int S, block, nsum;
    int8_t *q;
    float *d;
    int16_t *sum;
} sd_act;

bool sd_act_init(sd_act *a, int64_t n_in, int S, int block);
void sd_act_free(sd_act *a);
/* Quantizes row s of x (n_in floats); scalar and AVX2 builds agree bitwise. */
/* Integer sums of one quantized activation block qb[block]: sum[0] for a
 * 32-block; for a 256-block, sum[0..15] per 16 and sum[16..23] per 32. */
void sd_act_block_sums(const int8_t *qb, int block, int16_t *sum);
void sd_act_quantize_row(sd_act *a, int s, const float *x);
void sd_act_quantize_row_avx2(sd_act *a, int s, const float *x);

/* Scalar reference: rows [o0, o1) of y for all S rows. y is [S][n_out]. */
void sd_matmul_ref_quant(const sd_matrix *m, const sd_act *a, float *y, int64_t o0, int64_t o1);
void sd_matmul_ref_float(const sd_matrix *m, const float *x, int S, float *y, int64_t o0, int64_t o1);

/* AVX2 layout: for tile t (rows 8t..8t+7, missing rows zero) and block b,
 * packed_bytes at packed + (t * nb + b) * packed_bytes. See matmul_pack.c.
 * sd_matmul_pack fills tiles [t0, t1) of packed (32-byte aligned) from m->data
 * (rows [8 t0, 8 t1) of it). */
void sd_matmul_pack(const sd_matrix *m, void *packed, int64_t t0, int64_t t1);
/* The grid types' tile (IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S;
 * matmul_pack.c): every value the type's grids and signs can give is one of
 * at most 16 signed levels, so a block repacks into the IQ4_XS tile's 4-bit
 * indices into that table. Returns the type's table (16 int8, sorted, unused
 * entries 0) and sets *nsub to its sub-blocks per 256 (8 of 32 or 16 of 16);
 * NULL for any other type. */
const int8_t *sd_grid_tile_table(uint32_t type, int *nsub);

/* AVX2: the rows of one streaming pass for a weight type (sd_matmul_pass_rows). */
int sd_matmul_avx2_pass_rows(uint32_t type);
/* AVX2: tile t of y for all S rows; wt = sd_wtype_get(m->type). */
void sd_matmul_avx2_tile(const sd_matrix *m, const sd_wtype *wt, const sd_act *a, float *y, int64_t t);
/* AVX2 on the GGUF layout (x86/matmul_decoded_avx2.c): blocks decoded by
 * their descriptors, int8 dots 32 at a time; bitwise sd_matmul_ref_quant.
 * The avx2 and avx512 rows' matmul_quant (types without a tile, unpacked
 * matrices). */
void sd_matmul_avx2_decoded(const sd_matrix *m, const sd_act *a, float *y, int64_t o0, int64_t o1);
void sd_matmul_avx2_float_rows(const sd_matrix *m, const float *x, int S, float *y, int64_t o0, int64_t o1);

/* AVX-512 VNNI layout (matmul_pack_avx512.c, x86 builds only): tile t (rows
 * 16t..16t+15) at packed + t * sd_avx512_tile_bytes(type, nb).
 * sd_avx512_layout: false if the type has no AVX-512 kernel, else the int and
 * scale bytes per (tile, block). sd_avx512_pack fills tiles [t0, t1) (packed
 * 64-byte aligned). Run only through the avx512 row of the kernel table. */
bool sd_avx512_layout(uint32_t type, int *ib, int *sb);
size_t sd_avx512_tile_bytes(uint32_t type, int64_t nb);
void sd_avx512_pack(const sd_matrix *m, void *packed, int64_t t0, int64_t t1);
/* AVX-512: tile t (16 rows) of y for all S rows; the rows of one streaming pass. */
void sd_matmul_avx512_tile(const sd_matrix *m, const sd_act *a, float *y, int64_t t);
int sd_matmul_avx512_pass_rows(uint32_t type);

/* NEON (arm/matmul_neon.c, aarch64 only): the same arithmetic on the GGUF
 * layout (no repack), blocks decoded with vector ops, integer dots by
 * widening multiplies (the neon row) or SDOT (the neon-dot row,
 * arm/matmul_neon.h). */
void sd_act_quantize_row_neon(sd_act *a, int s, const float *x);
void sd_matmul_neon_quant(const sd_matrix *m, const sd_act *a, float *y, int64_t o0, int64_t o1);
void sd_matmul_neon_float(const sd_matrix *m, const float *x, int S, float *y, int64_t o0, int64_t o1);

/* Decoded weight block: sd_wblock (quant/qtype.h). sd_wblock_decode looks
 * the type up (zeros for a type without a decoder); kernels that already hold
 * the descriptor call sd_qtype_decode. */
void sd_wblock_decode(uint32_t type, const uint8_t *src, sd_wblock *wb);

/* The ints of a Q6_K block for row r of a tile whose vectors are vec bytes
 * (32: AVX2, 64: AVX-512; 4 bytes per row): vectors 0..31 the low nibbles
 * (value 4k+t | value 4(k+32)+t << 4), vectors 32..47 the 2-bit highs of
 * values 4(k+16p)+t at bits 2p. Shared by both layouts (matmul_pack*.c). */
void sd_pack_q6_k_ints(const sd_wblock *wb, int r, uint8_t *c, int vec);

#endif
