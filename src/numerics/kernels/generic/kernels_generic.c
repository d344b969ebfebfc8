/* The generic row of the kernel table (kernels.h): portable C, the reference
 * every other row reproduces bit for bit; runs everywhere. Quantized weights
 * are read in their GGUF layout (no repacked copy). */
#include "numerics/kernels/gdn_kernels.h"
#include "numerics/kernels/kernels.h"
#include "numerics/kernels/ops_kernels.h"

/* No streaming-pass grouping: the reference's row chunks. */
static int generic_pass_rows(uint32_t type) {
    (void)type;
    return 8;
}

const sd_kernels sd_kernels_generic = {
    .name = "generic",
    .isa = SD_ISA_SCALAR,
    .usable = NULL,
    .dot_f32 = sd_dot_f32_generic,
    .axpy_f32 = sd_axpy_f32_generic,
    .dot_f32_rows = sd_dot_f32_rows_generic,
    .axpy_f32_rows = sd_axpy_f32_rows_generic,
    .dot_f32_rows_mq = sd_dot_f32_rows_mq_generic,
    .axpy_f32_rows_mq = sd_axpy_f32_rows_mq_generic,
    .dot_f16_rows_mq = sd_dot_f16_rows_mq_generic,
    .axpy_f16_rows_mq = sd_axpy_f16_rows_mq_generic,
    .fp32_to_fp16_row = sd_fp32_to_fp16_row_generic,
    .fp16_to_fp32_row = sd_fp16_to_fp32_row_generic,
    .add = sd_add_generic,
    .scale_mul = sd_scale_mul_generic,
    .softmax = sd_softmax_generic,
    .softmax_mq = sd_softmax_mq_generic,
    .swiglu = sd_swiglu_generic,
    .silu = sd_silu_generic,
    .conv_step = sd_conv_step_generic,
    .gdn_tokens = sd_gdn_tokens_generic,
    .act_quantize_row = sd_act_quantize_row,
    .matmul_float = sd_matmul_ref_float,
    .matmul_quant = sd_matmul_ref_quant,
    .pass_rows = generic_pass_rows,
    .layouts = NULL,
};
