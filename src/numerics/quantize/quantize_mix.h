/* Which tensor type the quantizer (numerics/quantize/quantize_file.c) gives each tensor: the TYPE names, and
 * llama.cpp's per-tensor choices for its mixed file types (src/llama-quant.cpp
 * tensor_allows_quantization, llama_tensor_get_type_impl,
 * tensor_type_fallback), without an importance matrix. */
#ifndef SD_NUMERICS_QUANTIZE_MIX_H
#define SD_NUMERICS_QUANTIZE_MIX_H

#include <stdbool.h>
#include <stdint.h>
#include <regex.h>

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

/* Per-tensor choices on top of the plan (llama-quantize's --pure,
 * --tensor-type, --token-embedding-type, --output-tensor-type). Types are
 * stored plus one, so 0 means "not given". */
typedef struct quant_override {
    regex_t re;    /* POSIX extended regex, searched anywhere in the name */
    uint32_t type; /* GGML_TYPE_* */
} quant_override;

typedef struct quant_options {
    bool pure;             /* every matrix in the base type (overrides still apply) */
    bool has_imatrix;      /* an importance matrix is given (changes the IQ3_XXS / IQ4 mixes) */
    uint32_t token_embd_type; /* GGML_TYPE_* + 1 for token_embd.weight, or 0 */
    uint32_t output_type;     /* GGML_TYPE_* + 1 for output.weight (and a tied token_embd), or 0 */
    int n_overrides;
    quant_override *overrides; /* first match wins, in order given */
} quant_options;

/* Fills types[i] with the output type of every tensor i of in (input order).
 * opt (NULL = none): the order is llama.cpp's llama_tensor_get_type: not a
 * weight matrix -> kept; --token-embedding-type / --output-tensor-type ->
 * that type as given; else the first matching --tensor-type pattern, or the
 * mix rule (not with pure); then the row-length fallback. wanted (may be
 * NULL) gets each tensor's type before that fallback (UINT32_MAX where no
 * fallback applies), so a caller can say which tensors fell back. Errors: SD_ERR_NOMEM. */
sd_status quant_choose_types(const gguf_ctx *in, const quant_plan *plan, const quant_options *opt,
                             uint32_t *types, uint32_t *wanted, sd_err *err);

#endif
