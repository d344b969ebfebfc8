/* The avx512 row of the kernel table (kernels.h): the AVX-512 VNNI matmul on
 * its 16-row tile layout (matmul_pack_avx512.c) for the types that layout
 * holds, the avx2 row's 8-row tiles for the others, and the avx2 row's
 * builds of every other kernel. This file holds only the row and the
 * layout's size rule. */
#include "core/checked.h"
#include "numerics/kernels/gdn_kernels.h"
#include "numerics/kernels/kernels.h"
#include "numerics/kernels/ops_kernels.h"

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
    .dot_f32 = sd_dot_f32_avx2,
    .axpy_f32 = sd_axpy_f32_avx2,
    .dot_f32_rows = sd_dot_f32_rows_avx2,
    .axpy_f32_rows = sd_axpy_f32_rows_avx2,
    .dot_f32_rows_mq = sd_dot_f32_rows_mq_avx2,
    .axpy_f32_rows_mq = sd_axpy_f32_rows_mq_avx2,
    .dot_f16_rows_mq = sd_dot_f16_rows_mq_avx2,
    .axpy_f16_rows_mq = sd_axpy_f16_rows_mq_avx2,
    .fp32_to_fp16_row = sd_fp32_to_fp16_row_avx2,
    .fp16_to_fp32_row = sd_fp16_to_fp32_row_avx2,
    .add = sd_add_avx2,
    .scale_mul = sd_scale_mul_avx2,
    .softmax = sd_softmax_avx2,
    .softmax_mq = sd_softmax_mq_avx2,
    .swiglu = sd_swiglu_avx2,
    .silu = sd_silu_avx2,
    .conv_step = sd_conv_step_avx2,
    .gdn_tokens = sd_gdn_tokens_avx2,
    .act_quantize_row = sd_act_quantize_row_avx2,
    .matmul_float = sd_matmul_avx2_float_rows,
    .matmul_quant = sd_matmul_ref_quant, /* a matrix in neither tile layout */
    .pass_rows = sd_matmul_avx2_pass_rows,
    .layouts = avx512_layouts,
};
