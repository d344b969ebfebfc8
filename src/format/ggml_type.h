/* Tensor element types as GGUF stores them: the numeric ids, block sizes and
 * bytes per block are llama.cpp's (ggml/include/ggml.h `enum ggml_type`,
 * ggml/src/ggml-common.h block structs). This is format knowledge only: the
 * arithmetic on blocks lives in numerics/. */
#ifndef SD_FORMAT_GGML_TYPE_H
#define SD_FORMAT_GGML_TYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum ggml_type {
    GGML_TYPE_F32 = 0,
    GGML_TYPE_F16 = 1,
    GGML_TYPE_Q4_0 = 2,
    GGML_TYPE_Q4_1 = 3,
    GGML_TYPE_Q5_0 = 6,
    GGML_TYPE_Q5_1 = 7,
    GGML_TYPE_Q8_0 = 8,
    GGML_TYPE_Q8_1 = 9,
    GGML_TYPE_Q2_K = 10,
    GGML_TYPE_Q3_K = 11,
    GGML_TYPE_Q4_K = 12,
    GGML_TYPE_Q5_K = 13,
    GGML_TYPE_Q6_K = 14,
    GGML_TYPE_Q8_K = 15,
    GGML_TYPE_IQ2_XXS = 16, /* IQ*, TQ*, MXFP4: sizes known so files using them */
    GGML_TYPE_IQ2_XS = 17,  /* can be read and inspected; numerics/ decides    */
    GGML_TYPE_IQ3_XXS = 18, /* which types it can compute with.                */
    GGML_TYPE_IQ1_S = 19,
    GGML_TYPE_IQ4_NL = 20,
    GGML_TYPE_IQ3_S = 21,
    GGML_TYPE_IQ2_S = 22,
    GGML_TYPE_IQ4_XS = 23,
    GGML_TYPE_I8 = 24,
    GGML_TYPE_I16 = 25,
    GGML_TYPE_I32 = 26,
    GGML_TYPE_I64 = 27,
    GGML_TYPE_F64 = 28,
    GGML_TYPE_IQ1_M = 29,
    GGML_TYPE_BF16 = 30,
    GGML_TYPE_TQ1_0 = 34,
    GGML_TYPE_TQ2_0 = 35,
    GGML_TYPE_MXFP4 = 39,
    GGML_TYPE_COUNT = 40, /* ids below this may appear in files; unknown ones are rejected */
} ggml_type;

/* Static facts about one type. */
typedef struct ggml_type_info {
    const char *name;    /* "q8_0", as llama.cpp names it */
    uint32_t block_size; /* elements per block (1 for scalar types) */
    uint32_t type_size;  /* bytes per block */
    bool known;          /* false for ids this engine does not know */
} ggml_type_info;

/* Info for type id t; for an unknown id returns an entry with known == false
 * and name "unknown". Never NULL. */
const ggml_type_info *ggml_type_get(uint32_t t);

/* Bytes taken by n_elems elements of type t, in *out. False if the type is
 * unknown, n_elems is not a multiple of the block size, or the size overflows. */
bool ggml_row_bytes(uint32_t t, uint64_t n_elems, uint64_t *out);

/* Type id for a name like "q4_k" or "Q4_K" (case-insensitive); -1 if unknown. */
int ggml_type_from_name(const char *name);

#endif
