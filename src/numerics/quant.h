/* Block quantization formats: dequantize to f32 and quantize from f32, with the
 * exact block layouts of llama.cpp (ggml/src/ggml-common.h, ggml-quants.c;
 * the structs are in numerics/quant/quant_blocks.h). These scalar routines are the
 * reference every SIMD kernel is tested against.
 *
 * Row lengths n must be a multiple of the type's block size (ggml_type_get:
 * 32 for Q4_0..Q8_1 and IQ4_NL, 256 for the K-quants and IQ4_XS, 1 for
 * F32/F16/BF16). Block data
 * must be 2-byte aligned (4-byte for Q8_K), which GGUF's 32-byte tensor
 * alignment guarantees for every row start.
 *
 * Exactness: dequantization is bit-identical to llama.cpp's dequantize_row_*;
 * the quantizers reproduce llama.cpp's reference quantizers
 * (quantize_row_*_ref; for IQ4_NL / IQ4_XS quantize_iq4_*, which is what
 * ggml_quantize_chunk runs; no importance matrix) operation for operation, so
 * their output is byte-identical to llama.cpp built without FMA contraction. */
#ifndef SD_NUMERICS_QUANT_H
#define SD_NUMERICS_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/ggml_type.h"
#include "numerics/quant/quant_blocks.h"

/* IEEE half <-> float, and bfloat16 <-> float. fp32 -> fp16 rounds to
 * nearest, ties to even (as x86 VCVTPS2PH), overflows to +-inf at >= 65520,
 * produces subnormals, and keeps NaN a (quiet) NaN. fp32 -> bf16 is llama.cpp's
 * ggml_compute_fp32_to_bf16: round to nearest even, subnormals kept, NaN quieted.
 * The widening conversions are exact. */
float sd_fp16_to_fp32(uint16_t h);
uint16_t sd_fp32_to_fp16(float f);
float sd_bf16_to_fp32(uint16_t h);
uint16_t sd_fp32_to_bf16(float f);

/* True if sd_dequantize_row handles type t: F32, F16, BF16, Q4_0, Q4_1, Q5_0,
 * Q5_1, Q8_0, Q8_1, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, Q8_K, IQ4_NL, IQ4_XS. (Whether a matmul
 * kernel exists for t is sd_matrix_init's business.) */
bool sd_type_supported(uint32_t t);
/* True if sd_quantize_row can produce type t: every supported type. */
bool sd_type_quantizable(uint32_t t);

/* Dequantizes n elements (n % block_size == 0) of type t from src into dst[n].
 * Precondition: sd_type_supported(t); otherwise dst is zero-filled. A partial
 * trailing block (n not a multiple) is zero-filled too, never read. */
void sd_dequantize_row(uint32_t t, const void *src, float *dst, int64_t n);

/* Quantizes n floats (n % block_size == 0) into type t at dst
 * (ggml_row_bytes(t, n) bytes). Reference (not importance-weighted)
 * quantizers; see quant_legacy.c / quant_k.c for the algorithms.
 * Precondition: sd_type_quantizable(t); otherwise nothing is written. A
 * partial trailing block is ignored. Non-finite inputs give defined but
 * meaningless blocks (never undefined behaviour). */
void sd_quantize_row(uint32_t t, const float *src, void *dst, int64_t n);

/* Elements per block and bytes per block of t as this module lays them out
 * (0, 0 for unsupported types). The same numbers as the format layer's
 * ggml_type_get; kept here so numerics can size buffers without it. */
uint32_t sd_quant_block_size(uint32_t t);
uint32_t sd_quant_type_size(uint32_t t);

#endif
