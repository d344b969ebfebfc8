/* The weight types the engine reads: one row per type (qtype.h). A row names
 * the type's id and its descriptor, sd_qtype_<name>, defined in the type's
 * own file (quant/iq2_xxs.c, ...; the float, legacy, K and IQ4 types share
 * quant/qtypes_builtin.c). */
#include "format/ggml_type.h"
#include "numerics/quant/qtype.h"

#define SD_QTYPES(X)                                                                                       \
    X(GGML_TYPE_F32, f32)                                                                                  \
    X(GGML_TYPE_F16, f16)                                                                                  \
    X(GGML_TYPE_BF16, bf16)                                                                                \
    X(GGML_TYPE_Q4_0, q4_0)                                                                                \
    X(GGML_TYPE_Q4_1, q4_1)                                                                                \
    X(GGML_TYPE_Q5_0, q5_0)                                                                                \
    X(GGML_TYPE_Q5_1, q5_1)                                                                                \
    X(GGML_TYPE_Q8_0, q8_0)                                                                                \
    X(GGML_TYPE_Q8_1, q8_1)                                                                                \
    X(GGML_TYPE_Q2_K, q2_K)                                                                                \
    X(GGML_TYPE_Q3_K, q3_K)                                                                                \
    X(GGML_TYPE_Q4_K, q4_K)                                                                                \
    X(GGML_TYPE_Q5_K, q5_K)                                                                                \
    X(GGML_TYPE_Q6_K, q6_K)                                                                                \
    X(GGML_TYPE_Q8_K, q8_K)                                                                                \
    X(GGML_TYPE_IQ4_NL, iq4_nl)                                                                            \
    X(GGML_TYPE_IQ4_XS, iq4_xs)                                                                            \
    X(GGML_TYPE_IQ1_S, iq1_s)                                                                              \
    X(GGML_TYPE_IQ1_M, iq1_m)                                                                              \
    X(GGML_TYPE_IQ2_XXS, iq2_xxs)                                                                          \
    X(GGML_TYPE_IQ2_XS, iq2_xs)                                                                            \
    X(GGML_TYPE_IQ2_S, iq2_s)                                                                              \
    X(GGML_TYPE_IQ3_XXS, iq3_xxs)                                                                          \
    X(GGML_TYPE_IQ3_S, iq3_s)                                                                              \
    X(GGML_TYPE_MXFP4, mxfp4)

#define DECLARE(id, name) extern const sd_qtype sd_qtype_##name;
SD_QTYPES(DECLARE)

#define ROW(id, name) [id] = &sd_qtype_##name,
static const sd_qtype *const k_qtypes[GGML_TYPE_COUNT] = {SD_QTYPES(ROW)};

const sd_qtype *sd_qtype_get(uint32_t t) {
    return t < GGML_TYPE_COUNT ? k_qtypes[t] : NULL;
}
