/* Which tensor type the quantizer (numerics/quantize/quantize_file.c) gives each tensor: the TYPE names, and
 * llama.cpp's per-tensor choices for its mixed file types (src/llama-quant.cpp
 * tensor_allows_quantization, llama_tensor_get_type_impl,
 * tensor_type_fallback), without an importance matrix. */
#ifndef SD_NUMERICS_QUANTIZE_MIX_H
#define SD_NUMERICS_QUANTIZE_MIX_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "format/gguf.h"

typedef struct quant_plan {
    const char *name;
    uint32_t type;  /* base type of converted weights */
    uint32_t ftype; /* LLAMA_FTYPE_* for general.file_type (include/llama.h) */
    bool mix;       /* llama.cpp's per-tensor rules for ftype apply */
} quant_plan;

/* The plan for a TYPE name (case-insensitive), or NULL. */
const quant_plan *quant_find_plan(const char *name);

/* Fills types[i] with the output type of every tensor i of in (input order).
 * pure: every converted matrix in the base type (llama-quantize --pure);
 * row-length fallbacks still apply. Errors: SD_ERR_NOMEM. */
sd_status quant_choose_types(const gguf_ctx *in, const quant_plan *plan, bool pure, uint32_t *types,
                             sd_err *err);

#endif
