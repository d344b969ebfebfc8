/* The avx2 row of the kernel table (kernels.h): AVX2 + FMA + F16C builds of
 * every kernel, and the 8-row tile layout of the quantized weights
 * (matmul_pack.c) that its matmul reads. This file holds only the row and
 * the layout's size rule; the -mavx2 flags it gets (CMakeLists.txt) do not
 * matter to it. */
#include "core/checked.h"
#include "numerics/kernels/gdn_kernels.h"
#include "numerics/kernels/kernels.h"
#include "numerics/kernels/ops_kernels.h"
#include "numerics/kernels/x86/kernels_avx2_ops.h"

/* Every repackable type (sd_wtype.packed_bytes != 0) has an AVX2 tile. */
static bool tile8_has_type(uint32_t type) {
    (void)type;
    return true;
}

static uint64_t tile8_size(const sd_matrix *m, const sd_wtype *wt) {
    uint64_t nb = (uint64_t)(m->n_in / wt->block), bytes;
    uint64_t n_tiles = ((uint64_t)m->n_out + SD_TILE - 1) / SD_TILE;
    if (!sd_mul_u64(n_tiles, nb, &bytes) || !sd_mul_u64(bytes, (uint64_t)wt->packed_bytes, &bytes)) return 0;
    return bytes;
}

const sd_wlayout sd_wlayout_avx2 = {
    .id = SD_ISA_AVX2,
    .tile_rows = SD_TILE,
    .has_type = tile8_has_type,
    .packed_size = tile8_size,
    .pack = sd_matmul_pack,
    .tile = sd_matmul_avx2_tile,
    .pass_rows = sd_matmul_avx2_pass_rows,
};

static const sd_wlayout *const avx2_layouts[] = {&sd_wlayout_avx2, NULL};

const sd_kernels sd_kernels_avx2 = {
    .name = "avx2",
    .isa = SD_ISA_AVX2,
    .usable = sd_cpu_has_avx2,
    SD_KERNELS_AVX2_OPS, /* its matmul_quant, sd_matmul_avx2_decoded: a matrix not in the tile layout */
    .layouts = avx2_layouts,
};
