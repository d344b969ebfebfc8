/* The avx512 row of the kernel table (kernels.h): the AVX-512 VNNI matmul on
 * its 16-row tile layout (matmul_pack_avx512.c) for the types that layout
 * holds, the avx2 row's 8-row tiles for the others, and the avx2 row's
 * builds of every other kernel. This file holds only the row and the
 * layout's size rule. */
#include "core/checked.h"
#include "numerics/kernels/gdn_kernels.h"
#include "numerics/kernels/kernels.h"
#include "numerics/kernels/ops_kernels.h"
#include "numerics/kernels/x86/kernels_avx2_ops.h"

static bool tile16_has_type(uint32_t type) {
    int ib, sb;
    return sd_avx512_layout(type, &ib, &sb);
}

static uint64_t tile16_size(const sd_matrix *m, const sd_wtype *wt) {
    uint64_t nb = (uint64_t)(m->n_in / wt->block), bytes;
    uint64_t tiles = ((uint64_t)m->n_out + SD_TILE16 - 1) / SD_TILE16;
    if (!sd_mul_u64(tiles, (uint64_t)sd_avx512_tile_bytes(m->type, (int64_t)nb), &bytes)) return 0;
    return bytes;
}

static void tile16(const sd_matrix *m, const sd_wtype *wt, const sd_act *a, float *y, int64_t t) {
    (void)wt;
    sd_matmul_avx512_tile(m, a, y, t);
}

const sd_wlayout sd_wlayout_avx512 = {
    .id = SD_ISA_AVX512,
    .tile_rows = SD_TILE16,
    .has_type = tile16_has_type,
    .packed_size = tile16_size,
    .pack = sd_avx512_pack,
    .tile = tile16,
    .pass_rows = sd_matmul_avx512_pass_rows,
};

static const sd_wlayout *const avx512_layouts[] = {&sd_wlayout_avx512, &sd_wlayout_avx2, NULL};

const sd_kernels sd_kernels_avx512 = {
    .name = "avx512",
    .isa = SD_ISA_AVX512,
    .usable = sd_cpu_has_avx512,
    SD_KERNELS_AVX2_OPS, /* its matmul_quant, sd_matmul_avx2_decoded: a matrix in neither tile layout */
    .layouts = avx512_layouts,
};
