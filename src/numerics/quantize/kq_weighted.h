/* Importance-weighted row quantizers for the k-quants Q2_K, Q3_K, Q4_K,
 * Q5_K, Q6_K and the legacy Q4_0, Q4_1, Q5_0, Q5_1 (the types llama.cpp's
 * importance-matrix file types and their row-length fallbacks put beside the
 * IQ types). Each minimises the weighted squared error
 * sum_j w[j] (x[j] - q[j])^2 of a block with our own search (kq_weighted.c
 * describes it; not ggml's, so the bytes may differ from llama-quantize's).
 * The layouts written are llama.cpp's (numerics/quant/quant_blocks.h). The
 * unweighted path of the quantizer (no importance matrix) does not come here:
 * it keeps the reference quantizers of numerics/quant.h, byte for byte. */
#ifndef SD_NUMERICS_QUANTIZE_KQ_WEIGHTED_H
#define SD_NUMERICS_QUANTIZE_KQ_WEIGHTED_H

#include <stdbool.h>
#include <stdint.h>

/* Whether sd_kquant_row_weighted writes type t (a ggml type id). */
bool sd_kquant_weighted_has(uint32_t t);

/* Quantizes n values of x (n a multiple of the type's block: 256 for the
 * k-quants, 32 for the legacy types) into dst (ggml_row_bytes(t, n) bytes).
 * w: n non-negative finite weights (the importance matrix column means of the
 * row's matrix), or NULL for unit weights. Per block the result is the better,
 * under the weighted error, of the search and the reference quantizer, so it
 * is never worse than sd_quantize_row under w. Returns false (dst untouched)
 * if t is not one of sd_kquant_weighted_has's types. Deterministic,
 * thread-safe, no allocation. */
bool sd_kquant_row_weighted(uint32_t t, const float *x, void *dst, int64_t n, const float *w);

#endif
