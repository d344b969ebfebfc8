/* Importance-weighted row quantizers of the quantizer (numerics/quantize/):
 * the lookup-grid types IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S, and MXFP4,
 * IQ4_NL, IQ4_XS, each minimising the weighted squared error
 * sum_j w[j] (x[j] - q[j])^2 of a row with our own search (iq_quantize.c
 * describes it). The layouts written are llama.cpp's (ggml-common.h); the
 * search is not ggml's, so the bytes may differ from llama-quantize's. */
#ifndef SD_NUMERICS_QUANTIZE_IQ_QUANTIZE_H
#define SD_NUMERICS_QUANTIZE_IQ_QUANTIZE_H

#include <stdbool.h>
#include <stdint.h>

/* Whether sd_quantize_row_weighted writes type t (with w != NULL; with
 * w == NULL only the types that have no reference quantizer, see below). */
bool sd_quantize_weighted_has(uint32_t t, bool have_weights);

/* Quantizes n values of x (n a multiple of the type's block) into dst (the
 * row's bytes in type t). w: n non-negative weights (the importance matrix
 * column means of this row's matrix), or NULL for unit weights. Returns false
 * (dst untouched) if t is not one of sd_quantize_weighted_has's types.
 * Deterministic and thread-safe (grid neighbour tables are built once). */
bool sd_quantize_row_weighted(uint32_t t, const float *x, void *dst, int64_t n, const float *w);

#endif
