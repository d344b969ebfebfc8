/* Quantizing a whole GGUF file: metadata copied in order with
 * general.file_type set to the plan's LLAMA_FTYPE (llama.cpp include/llama.h)
 * and general.quantization_version to 2 (GGML_QNT_VERSION); each tensor in
 * the type numerics/quantize/quantize_mix.c chooses for it, converted row by row
 * (dequantize to f32, then the reference row quantizer of numerics/quant.h;
 * with an importance matrix entry for the tensor, the weighted searches of
 * iq_quantize.h and kq_weighted.h). Without an importance matrix, checked
 * against llama.cpp's llama_model_quantize with
 * tests/data/quant/compare_llamacpp.py: identical tensors, bytes included. */
#ifndef SD_NUMERICS_QUANTIZE_FILE_H
#define SD_NUMERICS_QUANTIZE_FILE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "numerics/quantize/imatrix.h"
#include "numerics/quantize/quantize_mix.h"

typedef struct sd_quantize_totals {
    int64_t n_tensors, n_converted; /* tensors written; those whose type changed */
    uint64_t bytes_in, bytes_out;   /* tensor data bytes read and written */
    int64_t n_fallback;             /* matrices whose row length forced another type */
    char fallbacks[1024];           /* the first of them: "name (row N) from->to, ..." */
} sd_quantize_totals;

/* Whether the quantizer can write type t without an importance matrix: a
 * reference row quantizer (numerics/quant.h) or a weighted search that takes
 * unit weights (iq_quantize.h: the grid types and MXFP4). */
bool sd_quantize_can_write(uint32_t t);

/* Quantizes one row of n floats (n a multiple of t's block) into t at dst,
 * with the quantizer a file conversion uses: w (n importance weights, or NULL)
 * through the weighted k-quant / legacy search (kq_weighted.h) when given, the
 * weighted grid search (iq_quantize.h) where t has one, else the reference
 * quantizer. Precondition: sd_quantize_can_write(t). Deterministic and
 * thread-safe. */
void sd_quantize_row_any(uint32_t t, const float *x, void *dst, int64_t n, const float *w);

/* Called before tensor i of n is converted, with its name and the ggml type
 * names before and after. */
typedef void (*sd_quantize_progress)(void *user, int64_t i, int64_t n, const char *name, const char *from,
                                     const char *to);

/* Rewrites in_path as out_path under plan and opt (quant_choose_types;
 * opt may be NULL), with the importance matrix of imatrix_path (NULL: none;
 * imatrix.h reads it; an entry whose size does not fit its tensor is an
 * error; tensors without an entry get unit weights),
 * rows converted on n_threads OpenMP threads; every row is independent, so the
 * output does not depend on the thread count. Written to out_path.tmp and
 * renamed: a failure never leaves a partial out_path. progress may be NULL.
 * *tot is filled on success. Errors: those of gguf_open and
 * gguf_writer_write, SD_ERR_UNSUPPORTED (a type that cannot be converted),
 * SD_ERR_FORMAT (a bad row size), SD_ERR_NOMEM. */
sd_status sd_quantize_file(const char *in_path, const char *out_path, const quant_plan *plan,
                           const quant_options *opt, const char *imatrix_path, int n_threads,
                           sd_quantize_progress progress, void *user, sd_quantize_totals *tot, sd_err *err);

#endif
