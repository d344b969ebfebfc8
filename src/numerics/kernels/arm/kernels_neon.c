/* The neon and neon-dot rows of the kernel table (kernels.h), aarch64 only
 * (NEON is baseline there). NEON builds of the row ops and the matmul on the
 * GGUF layout (no repacked copy); softmax, SiLU, f16 rows and Gated DeltaNet
 * run the generic builds. The two rows differ only in the integer dots of
 * the quantized matmul: neon-dot uses SDOT (Armv8.2, HWCAP_ASIMDDP), neon the
 * widening multiplies of any Armv8-A; both give the same exact sums. */
#include "numerics/kernels/arm/matmul_neon.h"
#include "numerics/kernels/gdn_kernels.h"
#include "numerics/kernels/kernels.h"
#include "numerics/kernels/ops_kernels.h"

static int neon_pass_rows(uint32_t type) {
    (void)type;
    return 8;
}

#define SD_NEON_ROW(row_name, probe, quant)                                                                        \
    {                                                                                                              \
        .name = row_name, .isa = SD_ISA_NEON, .usable = probe, .dot_f32 = sd_dot_f32_neon,                         \
        .axpy_f32 = sd_axpy_f32_neon, .dot_f32_rows = sd_dot_f32_rows_neon, .axpy_f32_rows = sd_axpy_f32_rows_neon, \
        .dot_f32_rows_mq = sd_dot_f32_rows_mq_neon, .axpy_f32_rows_mq = sd_axpy_f32_rows_mq_neon,                  \
        .dot_f16_rows_mq = sd_dot_f16_rows_mq_neon, .axpy_f16_rows_mq = sd_axpy_f16_rows_mq_neon,                  \
        .fp32_to_fp16_row = sd_fp32_to_fp16_row_generic, .fp16_to_fp32_row = sd_fp16_to_fp32_row_generic,         \
        .add = sd_add_neon, .scale_mul = sd_scale_mul_neon, .softmax = sd_softmax_generic,                        \
        .softmax_mq = sd_softmax_mq_generic, .swiglu = sd_swiglu_generic, .silu = sd_silu_generic,                \
        .conv_step = sd_conv_step_generic, .gdn_tokens = sd_gdn_tokens_generic,                                    \
        .act_quantize_row = sd_act_quantize_row_neon, .matmul_float = sd_matmul_neon_float, .matmul_quant = quant, \
        .pass_rows = neon_pass_rows, .layouts = NULL,                                                              \
    }

const sd_kernels sd_kernels_neon_dot = SD_NEON_ROW("neon-dot", sd_cpu_neon_dotprod, sd_matmul_neon_quant_dot);
const sd_kernels sd_kernels_neon = SD_NEON_ROW("neon", NULL, sd_matmul_neon_quant);
