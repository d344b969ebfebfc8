/* Block quantization formats: dequantize to f32 and quantize from f32, with the
 * exact block layouts of llama.cpp (ggml/src/ggml-common.h, ggml-quants.c).
 * These scalar routines are the reference every SIMD kernel is tested against.
 * Row lengths must be a multiple of the type's block size (ggml_type_get). */
#ifndef SD_NUMERICS_QUANT_H
#define SD_NUMERICS_QUANT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "format/ggml_type.h"

/* IEEE half <-> float (round-to-nearest-even), and bfloat16 <-> float. */
float sd_fp16_to_fp32(uint16_t h);
uint16_t sd_fp32_to_fp16(float f);
float sd_bf16_to_fp32(uint16_t h);
uint16_t sd_fp32_to_bf16(float f);

/* True if this engine can dequantize (and run matmuls on) type t. */
bool sd_type_supported(uint32_t t);
/* True if sd_quantize_row can produce type t. */
bool sd_type_quantizable(uint32_t t);

/* Dequantizes n elements (n % block_size == 0) of type t from src into dst[n]. */
void sd_dequantize_row(uint32_t t, const void *src, float *dst, int64_t n);

/* Quantizes n floats (n % block_size == 0) into type t at dst
 * (ggml_row_bytes(t, n) bytes). Reference (not importance-weighted) quantizers. */
void sd_quantize_row(uint32_t t, const float *src, void *dst, int64_t n);

#endif
