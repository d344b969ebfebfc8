/* specdec quantize IN.gguf OUT.gguf TYPE: rewrites a GGUF model with its
 * weight matrices in another tensor type.
 *
 * What gets converted (llama.cpp src/llama-quant.cpp rules, simplified):
 * tensors whose name ends in "weight" with 2 or more dimensions, except norms
 * ("_norm.weight"), ssm_conv1d, ffn_gate_inp (MoE router), pos_embd and
 * token_types. Everything else keeps its type, except that a non-F32 tensor
 * of a type we can read is widened to F32 (norms and biases are F32 for the
 * engine). A tensor already in its target type is copied byte for byte.
 *
 * Types: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k put every
 * converted matrix in that type (like llama-quantize --pure; general.file_type
 * still names the nearest llama.cpp preset, e.g. Q4_K_S for q4_k, whose own
 * mix would differ). q4_k_m is llama.cpp's Q4_K_M mix: Q4_K everywhere except
 * output.weight -> Q6_K (token_embd.weight instead when there is no
 * output.weight, i.e. tied embeddings), attn_v.weight and ffn_down.weight ->
 * Q6_K on the layers llama.cpp's use_more_bits picks (first and last eighth,
 * every third in between), fused attn_qkv.weight -> Q5_K. Not reproduced:
 * llama.cpp's special cases for 70B, 8-expert and Falcon models.
 * Fallbacks when the row length does not fit the block (as llama.cpp):
 * q4_k -> q5_0, q5_k -> q5_1, q6_k -> q8_0; then f16 when the row is not a
 * multiple of 32 either.
 * Checked against llama.cpp's llama_model_quantize (pure for the plain types)
 * with tests/data/quant/compare_llamacpp.py: identical tensors, bytes included.
 * One deliberate difference: llama.cpp keeps unconverted tensors in their
 * type, we widen readable non-F32 ones (e.g. F16 norms) to F32.
 *
 * Metadata is copied in order; general.file_type is set to llama.cpp's
 * LLAMA_FTYPE for TYPE (include/llama.h) and general.quantization_version
 * to 2 (GGML_QNT_VERSION). The output is written to OUT.tmp and renamed, so
 * a failure never leaves a partial OUT. Rows are converted in parallel
 * (OpenMP); every row is independent, so the output does not depend on the
 * thread count. */
#define _POSIX_C_SOURCE 200809L /* strcasecmp, isatty, sysconf */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "cli/commands.h"
#include "core/checked.h"
#include "core/status.h"
#include "format/gguf.h"
#include "numerics/quant.h"

/* ---- the conversion plan ---- */

typedef struct quant_plan {
    const char *name;
    uint32_t type;   /* default type of converted weights */
    uint32_t ftype;  /* LLAMA_FTYPE_* for general.file_type */
    bool q4_k_m;     /* apply the Q4_K_M per-tensor mix */
} quant_plan;

static const quant_plan PLANS[] = {
    {"f32", GGML_TYPE_F32, 0, false},    {"f16", GGML_TYPE_F16, 1, false},
    {"bf16", GGML_TYPE_BF16, 32, false}, {"q8_0", GGML_TYPE_Q8_0, 7, false},
    {"q4_0", GGML_TYPE_Q4_0, 2, false},  {"q4_1", GGML_TYPE_Q4_1, 3, false},
    {"q5_0", GGML_TYPE_Q5_0, 8, false},  {"q5_1", GGML_TYPE_Q5_1, 9, false},
    {"q4_k", GGML_TYPE_Q4_K, 14, false}, /* LLAMA_FTYPE_MOSTLY_Q4_K_S */
    {"q5_k", GGML_TYPE_Q5_K, 16, false}, /* LLAMA_FTYPE_MOSTLY_Q5_K_S */
    {"q6_k", GGML_TYPE_Q6_K, 18, false}, {"q4_k_m", GGML_TYPE_Q4_K, 15, true},
};
#define N_PLANS (sizeof PLANS / sizeof PLANS[0])

static const quant_plan *find_plan(const char *name) {
    for (size_t i = 0; i < N_PLANS; i++)
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

/* llama.cpp use_more_bits: the first and last eighth of the layers, and
 * every third one in between, get the bigger type in the _M mixes. */
static bool use_more_bits(int i, int n) {
    return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

/* Counters for the Q4_K_M mix, in file order as llama.cpp counts them. */
typedef struct mix_state {
    int n_attn_v, i_attn_v, n_ffn_down, i_ffn_down;
    bool has_output;
} mix_state;

static uint32_t mix_type(const quant_plan *plan, const char *name, mix_state *ms) {
    if (!plan->q4_k_m)
        return plan->type;
    if (!strcmp(name, "output.weight") || (!ms->has_output && !strcmp(name, "token_embd.weight")))
        return GGML_TYPE_Q6_K;
    if (ends_with(name, "attn_v.weight"))
        return use_more_bits(ms->i_attn_v++, ms->n_attn_v) ? GGML_TYPE_Q6_K : GGML_TYPE_Q4_K;
    if (ends_with(name, "ffn_down.weight"))
        return use_more_bits(ms->i_ffn_down++, ms->n_ffn_down) ? GGML_TYPE_Q6_K : GGML_TYPE_Q4_K;
    if (ends_with(name, "attn_qkv.weight"))
        return GGML_TYPE_Q5_K;
    return GGML_TYPE_Q4_K;
}

/* The type the row length allows: llama.cpp's fallbacks, then f16. */
static uint32_t fit_row(uint32_t type, int64_t n_per_row) {
    if (n_per_row % ggml_type_get(type)->block_size == 0)
        return type;
    if (type == GGML_TYPE_Q4_K)
        type = GGML_TYPE_Q5_0;
    else if (type == GGML_TYPE_Q5_K)
        type = GGML_TYPE_Q5_1;
    else if (type == GGML_TYPE_Q6_K)
        type = GGML_TYPE_Q8_0;
    return n_per_row % ggml_type_get(type)->block_size == 0 ? type : GGML_TYPE_F16;
}

/* Output type of tensor t under the plan. */
static uint32_t target_type(const quant_plan *plan, const gguf_tensor_info *t, mix_state *ms) {
    if (!is_weight_matrix(t))
        return sd_type_supported(t->type) ? GGML_TYPE_F32 : t->type;
    return fit_row(mix_type(plan, t->name, ms), t->ne[0]);
}

static void init_mix_state(const gguf_ctx *in, mix_state *ms) {
    memset(ms, 0, sizeof *ms);
    for (int64_t i = 0; i < gguf_n_tensors(in); i++) {
        const char *name = gguf_tensor(in, i)->name;
        ms->n_attn_v += ends_with(name, "attn_v.weight");
        ms->n_ffn_down += ends_with(name, "ffn_down.weight");
        ms->has_output |= !strcmp(name, "output.weight");
    }
}

/* ---- converting one tensor ---- */

/* Converts the n_rows rows of t into type `to` at out (row_out bytes each),
 * rows in parallel. Returns false if a row buffer could not be allocated. */
static bool convert_rows(const gguf_tensor_info *t, uint32_t to, uint8_t *out, int64_t n_rows,
                         uint64_t row_in, uint64_t row_out, int n_threads) {
    const int64_t n = t->ne[0];
    bool ok = true;
#pragma omp parallel num_threads(n_threads) reduction(&& : ok)
    {
        float *row = sd_malloc_array((size_t)n, sizeof(float));
        if (!row)
            ok = false;
#pragma omp for schedule(static)
        for (int64_t r = 0; r < n_rows; r++) {
            if (!row)
                continue;
            sd_dequantize_row(t->type, (const uint8_t *)t->data + r * row_in, row, n);
            sd_quantize_row(to, row, out + r * row_out, n);
        }
        free(row);
    }
    return ok;
}

/* Produces tensor t in type `to`: *data borrows t's bytes when the type is
 * unchanged, else points at a new buffer (*owned, free it after writing). */
static sd_status convert_tensor(const gguf_tensor_info *t, uint32_t to, int n_threads,
                                const void **data, void **owned, uint64_t *nbytes, sd_err *err) {
    *owned = NULL;
    if (to == t->type) {
        *data = t->data;
        *nbytes = t->nbytes;
        return SD_OK;
    }
    if (!sd_type_supported(t->type) || !sd_type_quantizable(to))
        return sd_err_set(err, SD_ERR_UNSUPPORTED, "tensor %s: cannot convert %s to %s", t->name,
                          ggml_type_get(t->type)->name, ggml_type_get(to)->name);
    uint64_t n_elems = 1, row_in, row_out, n_rows;
    for (uint32_t d = 0; d < t->n_dims; d++)
        if (!sd_mul_u64(n_elems, (uint64_t)t->ne[d], &n_elems))
            return sd_err_set(err, SD_ERR_FORMAT, "tensor %s: size overflows", t->name);
    n_rows = t->ne[0] ? n_elems / (uint64_t)t->ne[0] : 0;
    if (!ggml_row_bytes(t->type, (uint64_t)t->ne[0], &row_in) ||
        !ggml_row_bytes(to, (uint64_t)t->ne[0], &row_out) ||
        !sd_mul_u64(row_out, n_rows, nbytes) || *nbytes > SIZE_MAX)
        return sd_err_set(err, SD_ERR_FORMAT, "tensor %s: bad row size for %s", t->name,
                          ggml_type_get(to)->name);
    uint8_t *out = malloc(*nbytes ? (size_t)*nbytes : 1);
    if (!out || !convert_rows(t, to, out, (int64_t)n_rows, row_in, row_out, n_threads)) {
        free(out);
        return sd_err_set(err, SD_ERR_NOMEM, "tensor %s: out of memory", t->name);
    }
    *data = out;
    *owned = out;
    return SD_OK;
}

/* ---- the whole file ---- */

/* Copies metadata in order, replacing general.file_type and
 * general.quantization_version, adding them when absent. */
static sd_status copy_metadata(gguf_writer *w, const gguf_ctx *in, const quant_plan *plan,
                               sd_err *err) {
    bool have_ftype = false, have_qv = false;
    sd_status st = SD_OK;
    for (int64_t i = 0; i < gguf_n_kv(in) && st == SD_OK; i++) {
        const char *key = gguf_kv_key(in, i);
        if (!strcmp(key, "general.file_type")) {
            st = gguf_writer_set_u32(w, key, plan->ftype);
            have_ftype = true;
        } else if (!strcmp(key, "general.quantization_version")) {
            st = gguf_writer_set_u32(w, key, 2);
            have_qv = true;
        } else {
            st = gguf_writer_copy_kv(w, in, i);
        }
    }
    if (st == SD_OK && !have_qv)
        st = gguf_writer_set_u32(w, "general.quantization_version", 2);
    if (st == SD_OK && !have_ftype)
        st = gguf_writer_set_u32(w, "general.file_type", plan->ftype);
    return st == SD_OK ? SD_OK : sd_err_set(err, st, "copying metadata: %s", sd_status_name(st));
}

typedef struct quantize_totals {
    int64_t n_tensors, n_converted;
    uint64_t bytes_in, bytes_out;
} quantize_totals;

/* Converts every tensor and adds it to w; buffers go to owned[] (one slot per
 * tensor) and stay alive until the file is written. */
static sd_status convert_all(gguf_writer *w, const gguf_ctx *in, const quant_plan *plan,
                             int n_threads, void **owned, quantize_totals *tot, sd_err *err) {
    mix_state ms;
    init_mix_state(in, &ms);
    bool progress = isatty(STDERR_FILENO);
    int64_t n = gguf_n_tensors(in);
    for (int64_t i = 0; i < n; i++) {
        const gguf_tensor_info *t = gguf_tensor(in, i);
        uint32_t to = target_type(plan, t, &ms);
        if (progress)
            fprintf(stderr, "\rquantize: [%" PRId64 "/%" PRId64 "] %-40.40s %-5s -> %-5s", i + 1, n,
                    t->name, ggml_type_get(t->type)->name, ggml_type_get(to)->name);
        const void *data = NULL;
        uint64_t nbytes = 0;
        sd_status st = convert_tensor(t, to, n_threads, &data, &owned[i], &nbytes, err);
        if (st == SD_OK && (st = gguf_writer_add_tensor(w, t->name, to, t->n_dims, t->ne, data,
                                                        nbytes)) != SD_OK)
            sd_err_set(err, st, "adding tensor %s: %s", t->name, sd_status_name(st));
        if (st != SD_OK) {
            if (progress)
                fputc('\n', stderr);
            return st;
        }
        tot->n_converted += to != t->type;
        tot->bytes_in += t->nbytes;
        tot->bytes_out += nbytes;
    }
    if (progress)
        fputc('\n', stderr);
    tot->n_tensors = n;
    return SD_OK;
}

static sd_status quantize_file(const char *in_path, const char *out_path,
                               const quant_plan *plan, int n_threads, quantize_totals *tot,
                               sd_err *err) {
    gguf_ctx *in = NULL;
    sd_status st = gguf_open(in_path, &in, err);
    if (st != SD_OK)
        return st;
    int64_t n = gguf_n_tensors(in);
    gguf_writer *w = gguf_writer_init();
    void **owned = sd_calloc((size_t)n, sizeof(void *));
    if (!w || !owned)
        st = sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    if (st == SD_OK)
        st = copy_metadata(w, in, plan, err);
    if (st == SD_OK)
        st = convert_all(w, in, plan, n_threads, owned, tot, err);
    if (st == SD_OK)
        st = gguf_writer_write(w, out_path, err);
    for (int64_t i = 0; owned && i < n; i++)
        free(owned[i]);
    free(owned);
    gguf_writer_free(w);
    gguf_close(in);
    return st;
}

/* ---- command line ---- */

static void usage(FILE *f) {
    fprintf(f,
            "usage: specdec quantize [--threads N] IN.gguf OUT.gguf TYPE\n"
            "\n"
            "Rewrites IN with its weight matrices in TYPE (metadata copied, general.file_type\n"
            "set, 1-D tensors kept F32). Input tensors may be any supported type.\n"
            "\n"
            "TYPE: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q4_k q5_k q6_k  (every matrix in TYPE)\n"
            "      q4_k_m  Q4_K with Q6_K for output.weight (token_embd.weight when tied) and\n"
            "              for attn_v / ffn_down on llama.cpp's use_more_bits layers\n"
            "Rows that a 256-block K-quant does not divide fall back as llama.cpp does\n"
            "(q4_k->q5_0, q5_k->q5_1, q6_k->q8_0), then to f16 if 32 does not divide them.\n"
            "\n"
            "  --threads N   conversion threads (default: all cores)\n");
}

int cmd_quantize(int argc, char **argv) {
    const char *pos[3];
    int n_pos = 0, n_threads = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--threads")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "specdec: quantize: --threads needs a value (see specdec quantize --help)\n");
                return 2;
            }
            char *end;
            long v = strtol(argv[++i], &end, 10);
            if (*end || v < 1 || v > 1024) {
                fprintf(stderr, "specdec: quantize: --threads needs a number from 1 to 1024\n");
                return 2;
            }
            n_threads = (int)v;
        } else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "specdec: quantize: unknown option '%s' (see specdec quantize --help)\n", argv[i]);
            return 2;
        } else if (n_pos < 3) {
            pos[n_pos++] = argv[i];
        } else {
            fprintf(stderr, "specdec: quantize: too many arguments (see specdec quantize --help)\n");
            return 2;
        }
    }
    if (n_pos != 3) {
        fprintf(stderr, "specdec: quantize: needs IN.gguf OUT.gguf TYPE, got %d argument%s"
                " (see specdec quantize --help)\n", n_pos, n_pos == 1 ? "" : "s");
        return 2;
    }
    const quant_plan *plan = find_plan(pos[2]);
    if (!plan) {
        fprintf(stderr, "specdec: quantize: unknown type '%s' (see specdec quantize --help)\n", pos[2]);
        return 2;
    }
    if (n_threads == 0)
        n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN) > 0 ? (int)sysconf(_SC_NPROCESSORS_ONLN) : 1;
    quantize_totals tot = {0};
    sd_err err = {0};
    if (quantize_file(pos[0], pos[1], plan, n_threads, &tot, &err) != SD_OK) {
        fprintf(stderr, "specdec: %s\n", err.msg);
        return 1;
    }
    printf("quantize: %s -> %s (%s, file_type %u): %" PRId64 " tensors, %" PRId64
           " converted, %" PRIu64 " -> %" PRIu64 " bytes of tensor data\n",
           pos[0], pos[1], plan->name, plan->ftype, tot.n_tensors, tot.n_converted, tot.bytes_in,
           tot.bytes_out);
    return 0;
}
