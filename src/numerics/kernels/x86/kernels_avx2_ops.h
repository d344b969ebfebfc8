/* Internal: the kernels of the avx2 row (kernels_avx2.c) that the avx512 row
 * (kernels_avx512.c) runs too, as designated initializers of an sd_kernels:
 * every kernel but the matmul and its layouts. One list, so the two rows
 * cannot drift apart. The row file includes ops_kernels.h, gdn_kernels.h and
 * kernels.h for the names. */
#ifndef SD_NUMERICS_KERNELS_X86_KERNELS_AVX2_OPS_H
#define SD_NUMERICS_KERNELS_X86_KERNELS_AVX2_OPS_H

#define SD_KERNELS_AVX2_OPS                             \
    .dot_f32 = sd_dot_f32_avx2,                         \
    .axpy_f32 = sd_axpy_f32_avx2,                       \
    .dot_f32_rows = sd_dot_f32_rows_avx2,               \
    .axpy_f32_rows = sd_axpy_f32_rows_avx2,             \
    .dot_f32_rows_mq = sd_dot_f32_rows_mq_avx2,         \
    .axpy_f32_rows_mq = sd_axpy_f32_rows_mq_avx2,       \
    .dot_f16_rows_mq = sd_dot_f16_rows_mq_avx2,         \
    .axpy_f16_rows_mq = sd_axpy_f16_rows_mq_avx2,       \
    .fp32_to_fp16_row = sd_fp32_to_fp16_row_avx2,       \
    .fp16_to_fp32_row = sd_fp16_to_fp32_row_avx2,       \
    .add = sd_add_avx2,                                 \
    .scale_mul = sd_scale_mul_avx2,                     \
    .softmax = sd_softmax_avx2,                         \
    .softmax_mq = sd_softmax_mq_avx2,                   \
    .swiglu = sd_swiglu_avx2,                           \
    .silu = sd_silu_avx2,                               \
    .conv_step = sd_conv_step_avx2,                     \
    .gdn_tokens = sd_gdn_tokens_avx2,                   \
    .act_quantize_row = sd_act_quantize_row_avx2,       \
    .matmul_float = sd_matmul_avx2_float_rows,          \
    .matmul_quant = sd_matmul_avx2_decoded,             \
    .pass_rows = sd_matmul_avx2_pass_rows

#endif
