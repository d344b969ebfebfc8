/* Per-tensor type choice of the quantizer (numerics/quantize/quantize_file.c), after llama.cpp
 * src/llama-quant.cpp (read for the rules, not copied).
 *
 * Which tensors are converted at all (tensor_allows_quantization): 2-D or
 * larger tensors whose name ends in "weight", except norms ("_norm.weight"),
 * ssm_conv1d, ffn_gate_inp (MoE router), pos_embd and token_types. So in a
 * `qwen35` hybrid the GDN tensors ssm_conv1d.weight, ssm_a (1-D, and no
 * ".weight"), ssm_dt.bias, ssm_norm.weight and every norm keep their
 * precision; ssm_alpha, ssm_beta, ssm_out, attn_gate and the GDN attn_qkv are
 * matrices and are converted (attn_qkv counts as an attn_v-like tensor, as in
 * llama.cpp). Everything not converted keeps its type, except that a readable
 * non-F32 type is widened to F32 (norms and biases are F32 for the engine;
 * llama.cpp would copy them as they are).
 *
 * The mixes (llama_tensor_get_type_impl), for a model with n_gqa = head_count
 * / head_count_kv of layer 0 and n_layer = block_count, counting tensors in
 * llama.cpp's order (by layer number, then name):
 *  - output.weight (token_embd.weight when there is no output.weight): Q6_K,
 *    or Q8_0 when the row does not divide into the base type's blocks.
 *  - attn_v / attn_qkv / attn_kv_b: Q2_K -> Q3_K (Q4_K if n_gqa >= 4);
 *    Q3_K_M -> Q5_K for the first two, then Q4_K; Q3_K_L -> Q5_K;
 *    IQ4_NL / IQ4_XS -> Q5_K if n_gqa >= 4; Q4_K_M -> Q6_K on use_more_bits.
 *  - ffn_down (layer i of n): Q2_K -> Q3_K; Q3_K_M -> Q5_K for i < n/16,
 *    else Q4_K; Q3_K_L -> Q5_K; IQ4_NL / IQ4_XS -> Q5_K for i < n/8;
 *    Q4_K_M -> Q6_K on use_more_bits.
 *  - attn_output: Q2_K -> Q3_K, Q3_K_M -> Q4_K, Q3_K_L -> Q5_K.
 *  - everything else: the base type. Q3_K_S is Q3_K with the output rule only.
 * Not reproduced: the Falcon, 70B and 8-expert special cases.
 * Row-length fallbacks (tensor_type_fallback), when the row is not a multiple
 * of the type's block: Q2_K, Q3_K -> Q4_0; Q4_K -> Q5_0; Q5_K -> Q5_1;
 * Q6_K -> Q8_0; IQ4_XS -> IQ4_NL; then F16 if 32 does not divide the row. */
#define _POSIX_C_SOURCE 200809L /* strcasecmp */
#include "numerics/quantize/quantize_mix.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <regex.h>

#include "core/checked.h"
#include "numerics/quant.h"

/* LLAMA_FTYPE_MOSTLY_* (include/llama.h) of the mixes. */
enum {
    FT_Q2_K = 10, FT_Q3_K_S = 11, FT_Q3_K_M = 12, FT_Q3_K_L = 13, FT_Q4_K_M = 15, FT_IQ2_XXS = 19,
    FT_IQ2_XS = 20, FT_IQ3_XS = 22, FT_IQ3_XXS = 23, FT_IQ1_S = 24, FT_IQ4_NL = 25, FT_IQ3_S = 26,
    FT_IQ3_M = 27, FT_IQ2_S = 28, FT_IQ2_M = 29, FT_IQ4_XS = 30, FT_IQ1_M = 31, FT_MXFP4_MOE = 38
};

static const quant_plan PLANS[] = {
    {"f32", GGML_TYPE_F32, 0, false},
    {"f16", GGML_TYPE_F16, 1, false},
    {"bf16", GGML_TYPE_BF16, 32, false},
    {"q8_0", GGML_TYPE_Q8_0, 7, false},
    {"q4_0", GGML_TYPE_Q4_0, 2, false},
    {"q4_1", GGML_TYPE_Q4_1, 3, false},
    {"q5_0", GGML_TYPE_Q5_0, 8, false},
    {"q5_1", GGML_TYPE_Q5_1, 9, false},
    {"q3_k", GGML_TYPE_Q3_K, FT_Q3_K_S, false}, /* pure; file_type names the nearest mix */
    {"q4_k", GGML_TYPE_Q4_K, 14, false},        /* LLAMA_FTYPE_MOSTLY_Q4_K_S */
    {"q5_k", GGML_TYPE_Q5_K, 16, false},        /* LLAMA_FTYPE_MOSTLY_Q5_K_S */
    {"q6_k", GGML_TYPE_Q6_K, 18, false},
    {"q2_k", GGML_TYPE_Q2_K, FT_Q2_K, true},
    {"q3_k_s", GGML_TYPE_Q3_K, FT_Q3_K_S, true},
    {"q3_k_m", GGML_TYPE_Q3_K, FT_Q3_K_M, true},
    {"q3_k_l", GGML_TYPE_Q3_K, FT_Q3_K_L, true},
    {"q4_k_m", GGML_TYPE_Q4_K, FT_Q4_K_M, true},
    {"iq4_nl", GGML_TYPE_IQ4_NL, FT_IQ4_NL, true},
    {"iq4_xs", GGML_TYPE_IQ4_XS, FT_IQ4_XS, true},
    /* the importance-matrix file types (base types as llama.cpp's
     * llama_ftype_get_default_type: IQ2_S is IQ2_XS-based, IQ2_M IQ2_S-based,
     * IQ3_XS / IQ3_M IQ3_S-based) */
    {"iq1_s", GGML_TYPE_IQ1_S, FT_IQ1_S, true},
    {"iq1_m", GGML_TYPE_IQ1_M, FT_IQ1_M, true},
    {"iq2_xxs", GGML_TYPE_IQ2_XXS, FT_IQ2_XXS, true},
    {"iq2_xs", GGML_TYPE_IQ2_XS, FT_IQ2_XS, true},
    {"iq2_s", GGML_TYPE_IQ2_XS, FT_IQ2_S, true},
    {"iq2_m", GGML_TYPE_IQ2_S, FT_IQ2_M, true},
    {"iq3_xxs", GGML_TYPE_IQ3_XXS, FT_IQ3_XXS, true},
    {"iq3_xs", GGML_TYPE_IQ3_S, FT_IQ3_XS, true},
    {"iq3_s", GGML_TYPE_IQ3_S, FT_IQ3_S, true},
    {"iq3_m", GGML_TYPE_IQ3_S, FT_IQ3_M, true},
    {"mxfp4_moe", GGML_TYPE_MXFP4, FT_MXFP4_MOE, true},
};

const quant_plan *quant_find_plan(const char *name) {
    for (size_t i = 0; i < sizeof PLANS / sizeof PLANS[0]; i++)
        if (!strcasecmp(PLANS[i].name, name))
            return &PLANS[i];
    return NULL;
}

static bool ends_with(const char *s, const char *suffix) {
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && !strcmp(s + n - m, suffix);
}

/* Whether llama.cpp's quantizer would touch this tensor at all. */
static bool is_weight_matrix(const gguf_tensor_info *t) {
    return t->n_dims >= 2 && ends_with(t->name, "weight") && !strstr(t->name, "_norm.weight") &&
           !strstr(t->name, "ssm_conv1d") && !strstr(t->name, "ffn_gate_inp") &&
           !strstr(t->name, "pos_embd") && !strstr(t->name, "token_types");
}

/* llama.cpp tensor_get_category, in its order of tests. */
typedef enum {
    CAT_OUTPUT, CAT_TOKEN_EMBD, CAT_ATTN_V, CAT_ATTN_K, CAT_ATTN_Q, CAT_FFN_UP, CAT_FFN_GATE, CAT_FFN_DOWN,
    CAT_ATTN_OUTPUT, CAT_OTHER
} category;

static category get_category(const char *name) {
    if (!strcmp(name, "output.weight"))
        return CAT_OUTPUT;
    if (!strcmp(name, "token_embd.weight") || !strcmp(name, "per_layer_token_embd.weight"))
        return CAT_TOKEN_EMBD;
    if (strstr(name, "attn_qkv.weight") || strstr(name, "attn_kv_b.weight") || strstr(name, "attn_v.weight"))
        return CAT_ATTN_V;
    if (strstr(name, "attn_k.weight"))
        return CAT_ATTN_K;
    if (strstr(name, "attn_q.weight"))
        return CAT_ATTN_Q;
    if (strstr(name, "attn_output.weight"))
        return CAT_ATTN_OUTPUT;
    if (strstr(name, "ffn_up"))
        return CAT_FFN_UP;
    if (strstr(name, "ffn_gate"))
        return CAT_FFN_GATE;
    if (strstr(name, "ffn_down"))
        return CAT_FFN_DOWN;
    return CAT_OTHER;
}

/* llama.cpp use_more_bits: the first and last eighth of the layers, and
 * every third one in between, get the bigger type in the _M mixes. */
static bool use_more_bits(int i, int n) {
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

static int layer_of(const char *name);

typedef struct mix_state {
    int n_attn_v, i_attn_v, n_ffn_down, i_ffn_down, n_layer;
    uint32_t n_gqa, n_expert;
    bool tied;        /* no output.weight: token_embd takes the output's type */
    bool has_imatrix; /* the IQ3_XXS / IQ4 rules change with it, as in llama.cpp */
} mix_state;

static bool is_iq2_family(uint32_t ft) {
    return ft == FT_IQ2_XXS || ft == FT_IQ2_XS || ft == FT_IQ1_S || ft == FT_IQ2_S || ft == FT_IQ2_M ||
           ft == FT_IQ1_M;
}

/* Layer of a tensor for the ffn rules: its blk.N number in an MoE model
 * (experts are not in layer order), else the running count. */
static int ffn_layer(const char *name, int counter, const mix_state *ms) {
    int l = ms->n_expert > 1 ? layer_of(name) : counter;
    return l < 0 ? counter : l;
}

static uint32_t mix_attn_v(uint32_t ft, uint32_t t, mix_state *ms) {
    int i = ms->i_attn_v++;
    if (is_iq2_family(ft))
        return ms->n_gqa >= 4 || ms->n_expert >= 4 ? GGML_TYPE_Q4_K
             : ft == FT_IQ2_S || ft == FT_IQ2_M   ? GGML_TYPE_IQ3_S
                                                   : GGML_TYPE_Q2_K;
    if (ft == FT_Q2_K)
        t = ms->n_gqa >= 4 ? GGML_TYPE_Q4_K : GGML_TYPE_Q3_K;
    else if (ft == FT_IQ3_XXS)
        t = ms->n_gqa >= 4 ? GGML_TYPE_Q4_K : ms->has_imatrix ? GGML_TYPE_IQ3_XXS : GGML_TYPE_IQ3_S;
    else if ((ft == FT_IQ3_XS || ft == FT_IQ3_S) && ms->n_gqa >= 4)
        t = GGML_TYPE_Q4_K;
    else if (ft == FT_IQ3_M)
        t = GGML_TYPE_Q4_K;
    else if (ft == FT_Q3_K_M)
        t = i < 2 ? GGML_TYPE_Q5_K : GGML_TYPE_Q4_K;
    else if (ft == FT_Q3_K_L)
        t = GGML_TYPE_Q5_K;
    else if ((ft == FT_IQ4_NL || ft == FT_IQ4_XS) && ms->n_gqa >= 4)
        t = GGML_TYPE_Q5_K;
    else if (ft == FT_Q4_K_M && use_more_bits(i, ms->n_attn_v))
        t = GGML_TYPE_Q6_K;
    if (ms->n_expert == 8)
        t = GGML_TYPE_Q8_0;
    return t;
}

static uint32_t mix_ffn_down(uint32_t ft, uint32_t t, const char *name, mix_state *ms) {
    int counter = ms->i_ffn_down++, n = ms->n_ffn_down;
    if (is_iq2_family(ft))
        return counter < n / 8 ? (ft == FT_IQ2_S || ft == FT_IQ2_M ? GGML_TYPE_IQ3_S : GGML_TYPE_Q2_K) : t;
    int i = ffn_layer(name, counter, ms);
    if (ft == FT_Q2_K)
        return GGML_TYPE_Q3_K;
    if (ft == FT_IQ3_XXS && !ms->has_imatrix)
        return i < n / 8 ? GGML_TYPE_Q4_K : GGML_TYPE_Q3_K;
    if (ft == FT_Q3_K_M)
        return i < n / 16 ? GGML_TYPE_Q5_K : GGML_TYPE_Q4_K;
    if (ft == FT_IQ3_M && (i < n / 8 || (ms->n_expert == 8 && use_more_bits(i, n))))
        return GGML_TYPE_Q4_K;
    if (ft == FT_Q3_K_L)
        return GGML_TYPE_Q5_K;
    if (ft == FT_Q4_K_M)
        return use_more_bits(i, n) ? GGML_TYPE_Q6_K : t;
    if ((ft == FT_IQ4_NL || ft == FT_IQ4_XS) && i < n / 8 && !ms->has_imatrix)
        return GGML_TYPE_Q5_K;
    return t;
}

static uint32_t mix_attn_output(uint32_t ft, uint32_t t, const mix_state *ms) {
    if (is_iq2_family(ft)) {
        if (ms->n_expert == 8) return GGML_TYPE_Q5_K;
        if (ft == FT_IQ1_S || ft == FT_IQ1_M) return GGML_TYPE_IQ2_XXS;
        if (ft == FT_IQ2_S || ft == FT_IQ2_M) return GGML_TYPE_IQ3_S;
        return t;
    }
    if (ms->n_expert == 8)
        return ft == FT_Q2_K || ft == FT_IQ3_XS || ft == FT_IQ3_XXS || ft == FT_Q3_K_S || ft == FT_Q3_K_M ||
                       ft == FT_IQ4_NL || ft == FT_Q4_K_M || ft == FT_IQ3_S || ft == FT_IQ3_M || ft == FT_IQ4_XS
                   ? GGML_TYPE_Q5_K
                   : t;
    return ft == FT_Q2_K ? GGML_TYPE_Q3_K : ft == FT_IQ3_XXS ? GGML_TYPE_IQ3_S : ft == FT_Q3_K_M ? GGML_TYPE_Q4_K
         : ft == FT_Q3_K_L ? GGML_TYPE_Q5_K : ft == FT_IQ3_M ? GGML_TYPE_Q4_K : t;
}

static uint32_t mix_type(const quant_plan *plan, const gguf_tensor_info *t, mix_state *ms) {
    uint32_t ft = plan->ftype, base = plan->type;
    category cat = get_category(t->name);
    if (cat == CAT_OUTPUT || (ms->tied && cat == CAT_TOKEN_EMBD)) {
        if (ft == FT_MXFP4_MOE || t->ne[0] % ggml_type_get(base)->block_size)
            return GGML_TYPE_Q8_0;
        if (is_iq2_family(ft) || ft == FT_IQ3_XXS)
            return GGML_TYPE_Q5_K;
        return base != GGML_TYPE_Q8_0 ? GGML_TYPE_Q6_K : base;
    }
    if (ft == FT_MXFP4_MOE) /* expert stacks MXFP4, everything else Q8_0 */
        return t->n_dims >= 3 && t->ne[2] > 1 ? GGML_TYPE_MXFP4 : GGML_TYPE_Q8_0;
    if (cat == CAT_TOKEN_EMBD) {
        if (ft == FT_IQ2_XXS || ft == FT_IQ2_XS || ft == FT_IQ1_S || ft == FT_IQ1_M) return GGML_TYPE_Q2_K;
        if (ft == FT_IQ2_S || ft == FT_IQ2_M || ft == FT_IQ3_XXS) return GGML_TYPE_IQ3_S;
        return base;
    }
    if (is_iq2_family(ft) && cat == CAT_ATTN_K && ms->n_expert == 8)
        return GGML_TYPE_Q4_K;
    switch (cat) {
    case CAT_ATTN_V: return mix_attn_v(ft, base, ms);
    case CAT_FFN_DOWN: return mix_ffn_down(ft, base, t->name, ms);
    case CAT_ATTN_OUTPUT: return mix_attn_output(ft, base, ms);
    case CAT_ATTN_K:
        if (is_iq2_family(ft)) return base;
        return ms->n_expert == 8 ? GGML_TYPE_Q8_0 : ft == FT_IQ3_XS ? GGML_TYPE_IQ3_XXS
             : ft == FT_IQ3_XXS ? GGML_TYPE_IQ2_S : base;
    case CAT_ATTN_Q:
        if (is_iq2_family(ft)) return base;
        return ft == FT_IQ3_XS ? GGML_TYPE_IQ3_XXS : ft == FT_IQ3_XXS ? GGML_TYPE_IQ2_S : base;
    case CAT_FFN_GATE:
    case CAT_FFN_UP: {
        if (is_iq2_family(ft) || ft != FT_IQ3_XS) return base;
        int i = layer_of(t->name), n = ms->n_layer;
        return i >= n / 8 && i < 7 * n / 8 ? GGML_TYPE_IQ3_XXS : base;
    }
    default: return base;
    }
}

/* The type the row length allows: llama.cpp's fallbacks, then F16. */
static uint32_t fit_row(uint32_t type, int64_t n_per_row) {
    if (n_per_row % ggml_type_get(type)->block_size == 0)
        return type;
    switch (type) {
    case GGML_TYPE_Q2_K:
    case GGML_TYPE_Q3_K: type = GGML_TYPE_Q4_0; break;
    case GGML_TYPE_Q4_K: type = GGML_TYPE_Q5_0; break;
    case GGML_TYPE_Q5_K: type = GGML_TYPE_Q5_1; break;
    case GGML_TYPE_Q6_K: type = GGML_TYPE_Q8_0; break;
    case GGML_TYPE_IQ1_S:
    case GGML_TYPE_IQ1_M:
    case GGML_TYPE_IQ2_XXS:
    case GGML_TYPE_IQ2_XS:
    case GGML_TYPE_IQ2_S:
    case GGML_TYPE_IQ3_XXS:
    case GGML_TYPE_IQ3_S:
    case GGML_TYPE_IQ4_XS: type = GGML_TYPE_IQ4_NL; break;
    default: break;
    }
    return n_per_row % ggml_type_get(type)->block_size == 0 ? type : GGML_TYPE_F16;
}

/* Layer number of a "blk.N." name, -1 otherwise (llama.cpp's sscanf). */
static int layer_of(const char *name) {
    int layer = -1;
    if (sscanf(name, "blk.%d.", &layer) != 1)
        return -1;
    return layer;
}

/* llama.cpp walks the tensors ordered by (layer, name): weight_name_comparer. */
static const gguf_ctx *g_sort_ctx;
static int by_layer_then_name(const void *pa, const void *pb) {
    const char *a = gguf_tensor(g_sort_ctx, *(const int64_t *)pa)->name;
    const char *b = gguf_tensor(g_sort_ctx, *(const int64_t *)pb)->name;
    int la = layer_of(a), lb = layer_of(b);
    if (la != lb)
        return la < lb ? -1 : 1;
    return strcmp(a, b);
}

/* Element 0 of a scalar-or-array integer key; dflt when absent. */
static uint64_t key_u0(const gguf_ctx *in, const char *key, uint64_t dflt) {
    int64_t k = gguf_find_key(in, key);
    gguf_value v;
    if (k < 0 || !gguf_kv_value(in, k, 0, &v))
        return dflt;
    switch (v.type) {
    case GGUF_TYPE_UINT8: case GGUF_TYPE_UINT16: case GGUF_TYPE_UINT32: case GGUF_TYPE_UINT64: return v.v.u;
    case GGUF_TYPE_INT8: case GGUF_TYPE_INT16: case GGUF_TYPE_INT32: case GGUF_TYPE_INT64:
        return v.v.i >= 0 ? (uint64_t)v.v.i : dflt;
    default: return dflt;
    }
}

static void init_mix_state(const gguf_ctx *in, mix_state *ms) {
    memset(ms, 0, sizeof *ms);
    ms->tied = true;
    int n_down = 0;
    for (int64_t i = 0; i < gguf_n_tensors(in); i++) {
        const char *name = gguf_tensor(in, i)->name;
        ms->n_attn_v += get_category(name) == CAT_ATTN_V;
        n_down += get_category(name) == CAT_FFN_DOWN;
        if (!strcmp(name, "output.weight"))
            ms->tied = false;
    }
    /* llama.cpp: n_ffn_down = n_layer_all = <arch>.block_count; n_gqa of layer 0 */
    char key[128];
    const char *arch = NULL;
    uint64_t len = 0;
    ms->n_ffn_down = n_down;
    if (gguf_get_str(in, "general.architecture", &arch, &len) && len < 64) {
        snprintf(key, sizeof key, "%.*s.block_count", (int)len, arch);
        ms->n_ffn_down = (int)key_u0(in, key, (uint64_t)n_down);
        snprintf(key, sizeof key, "%.*s.attention.head_count", (int)len, arch);
        uint64_t n_head = key_u0(in, key, 0);
        snprintf(key, sizeof key, "%.*s.attention.head_count_kv", (int)len, arch);
        uint64_t n_head_kv = key_u0(in, key, n_head);
        ms->n_gqa = n_head_kv ? (uint32_t)(n_head / n_head_kv) : 0;
        snprintf(key, sizeof key, "%.*s.expert_count", (int)len, arch);
        ms->n_expert = (uint32_t)key_u0(in, key, 0);
    }
    ms->n_layer = ms->n_ffn_down;
}

/* The first --tensor-type pattern that matches name anywhere (regexec, as
 * llama.cpp's std::regex_search), or -1. */
static int match_override(const quant_options *o, const char *name) {
    for (int i = 0; o && i < o->n_overrides; i++)
        if (regexec(&o->overrides[i].re, name, 0, NULL, 0) == 0)
            return i;
    return -1;
}

static bool is_quantized(uint32_t t) {
    return t != GGML_TYPE_F32 && t != GGML_TYPE_F16 && t != GGML_TYPE_BF16;
}

sd_status quant_choose_types(const gguf_ctx *in, const quant_plan *plan, const quant_options *opt,
                             uint32_t *types, uint32_t *wanted, sd_err *err) {
    int64_t n = gguf_n_tensors(in);
    int64_t *order = sd_malloc_array(n ? (size_t)n : 1, sizeof *order);
    if (!order)
        return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; i < n; i++)
        order[i] = i;
    g_sort_ctx = in;
    qsort(order, (size_t)n, sizeof *order, by_layer_then_name);
    mix_state ms;
    init_mix_state(in, &ms);
    const quant_options none = {0}, *o = opt ? opt : &none;
    ms.has_imatrix = o->has_imatrix;
    for (int64_t k = 0; k < n; k++) {
        const gguf_tensor_info *t = gguf_tensor(in, order[k]);
        uint32_t to;
        category cat = get_category(t->name);
        if (wanted)
            wanted[order[k]] = UINT32_MAX;
        if (!is_weight_matrix(t)) {
            to = sd_type_supported(t->type) ? GGML_TYPE_F32 : t->type;
        } else if (o->token_embd_type && cat == CAT_TOKEN_EMBD) {
            to = o->token_embd_type - 1; /* as llama.cpp: no row fallback for the named type */
        } else if (o->output_type && (cat == CAT_OUTPUT || (ms.tied && cat == CAT_TOKEN_EMBD))) {
            to = o->output_type - 1;
        } else {
            to = plan->type;
            int m = is_quantized(to) ? match_override(o, t->name) : -1;
            if (m >= 0)
                to = o->overrides[m].type;
            else if (plan->mix && !o->pure)
                to = mix_type(plan, t, &ms);
            if (wanted)
                wanted[order[k]] = to;
            to = fit_row(to, t->ne[0]);
        }
        types[order[k]] = to;
    }
    free(order);
    return SD_OK;
}
