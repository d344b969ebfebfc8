/* The ggml tensor type table. Block sizes and bytes per block are llama.cpp's
 * (ggml/src/ggml.c type_traits; block structs and their static_asserts in
 * ggml/src/ggml-common.h). Ids 4, 5 (removed Q4_2/Q4_3), 31-33 (removed
 * Q4_0_4_4 etc.), 36-38 (removed IQ4_NL_4_4 etc.) are not valid in files. */
#include "format/ggml_type.h"

#include <ctype.h>
#include <string.h>

#include "core/checked.h"

#define QK_K 256

static const ggml_type_info TYPES[GGML_TYPE_COUNT] = {
    [GGML_TYPE_F32] = {"f32", 1, 4, true},
    [GGML_TYPE_F16] = {"f16", 1, 2, true},
    [GGML_TYPE_Q4_0] = {"q4_0", 32, 2 + 16, true},           /* d, qs[16] */
    [GGML_TYPE_Q4_1] = {"q4_1", 32, 2 + 2 + 16, true},       /* d, m, qs[16] */
    [GGML_TYPE_Q5_0] = {"q5_0", 32, 2 + 4 + 16, true},       /* d, qh[4], qs[16] */
    [GGML_TYPE_Q5_1] = {"q5_1", 32, 2 + 2 + 4 + 16, true},   /* d, m, qh[4], qs[16] */
    [GGML_TYPE_Q8_0] = {"q8_0", 32, 2 + 32, true},           /* d, qs[32] */
    [GGML_TYPE_Q8_1] = {"q8_1", 32, 2 + 2 + 32, true},       /* d, s, qs[32] */
    [GGML_TYPE_Q2_K] = {"q2_K", QK_K, 16 + 64 + 2 + 2, true},      /* scales, qs, d, dmin */
    [GGML_TYPE_Q3_K] = {"q3_K", QK_K, 32 + 64 + 12 + 2, true},     /* hmask, qs, scales, d */
    [GGML_TYPE_Q4_K] = {"q4_K", QK_K, 2 + 2 + 12 + 128, true},     /* d, dmin, scales, qs */
    [GGML_TYPE_Q5_K] = {"q5_K", QK_K, 2 + 2 + 12 + 32 + 128, true},/* d, dmin, scales, qh, qs */
    [GGML_TYPE_Q6_K] = {"q6_K", QK_K, 128 + 64 + 16 + 2, true},    /* ql, qh, scales, d */
    [GGML_TYPE_Q8_K] = {"q8_K", QK_K, 4 + 256 + 32, true},         /* d (f32), qs, bsums[16] */
    [GGML_TYPE_IQ2_XXS] = {"iq2_xxs", QK_K, 66, true},
    [GGML_TYPE_IQ2_XS] = {"iq2_xs", QK_K, 74, true},
    [GGML_TYPE_IQ3_XXS] = {"iq3_xxs", QK_K, 98, true},
    [GGML_TYPE_IQ1_S] = {"iq1_s", QK_K, 50, true},
    [GGML_TYPE_IQ4_NL] = {"iq4_nl", 32, 18, true},
    [GGML_TYPE_IQ3_S] = {"iq3_s", QK_K, 110, true},
    [GGML_TYPE_IQ2_S] = {"iq2_s", QK_K, 82, true},
    [GGML_TYPE_IQ4_XS] = {"iq4_xs", QK_K, 136, true},
    [GGML_TYPE_I8] = {"i8", 1, 1, true},
    [GGML_TYPE_I16] = {"i16", 1, 2, true},
    [GGML_TYPE_I32] = {"i32", 1, 4, true},
    [GGML_TYPE_I64] = {"i64", 1, 8, true},
    [GGML_TYPE_F64] = {"f64", 1, 8, true},
    [GGML_TYPE_IQ1_M] = {"iq1_m", QK_K, 56, true},
    [GGML_TYPE_BF16] = {"bf16", 1, 2, true},
    [GGML_TYPE_TQ1_0] = {"tq1_0", QK_K, 54, true},
    [GGML_TYPE_TQ2_0] = {"tq2_0", QK_K, 66, true},
    [GGML_TYPE_MXFP4] = {"mxfp4", 32, 17, true},             /* e (E8M0), qs[16] */
};

static const ggml_type_info UNKNOWN = {"unknown", 1, 0, false};

const ggml_type_info *ggml_type_get(uint32_t t) {
    if (t >= GGML_TYPE_COUNT || !TYPES[t].known) return &UNKNOWN;
    return &TYPES[t];
}

bool ggml_row_bytes(uint32_t t, uint64_t n_elems, uint64_t *out) {
    const ggml_type_info *ti = ggml_type_get(t);
    if (!ti->known || n_elems % ti->block_size != 0) return false;
    return sd_mul_u64(n_elems / ti->block_size, ti->type_size, out);
}

int ggml_type_from_name(const char *name) {
    if (!name) return -1;
    for (int t = 0; t < GGML_TYPE_COUNT; t++) {
        if (!TYPES[t].known) continue;
        const char *a = TYPES[t].name, *b = name;
        while (*a && *b && tolower((unsigned char)*a) == tolower((unsigned char)*b)) a++, b++;
        if (!*a && !*b) return t;
    }
    return -1;
}
