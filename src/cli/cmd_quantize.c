/* specdec quantize IN.gguf OUT.gguf TYPE: rewrites a GGUF model with its
 * weight matrices in another tensor type. Which tensor gets which type (the
 * TYPE names, llama.cpp's mixes, the row-length fallbacks, what a qwen35
 * hybrid keeps in higher precision) is cli/quantize_mix.c.
 * Checked against llama.cpp's llama_model_quantize with
 * tests/data/quant/compare_llamacpp.py: identical tensors, bytes included.
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
#include "cli/quantize_mix.h"
#include "numerics/quant.h"

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
static sd_status convert_all(gguf_writer *w, const gguf_ctx *in, const uint32_t *types,
                             int n_threads, void **owned, quantize_totals *tot, sd_err *err) {
    bool progress = isatty(STDERR_FILENO);
    int64_t n = gguf_n_tensors(in);
    for (int64_t i = 0; i < n; i++) {
        const gguf_tensor_info *t = gguf_tensor(in, i);
        uint32_t to = types[i];
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
                               const quant_plan *plan, bool pure, int n_threads, quantize_totals *tot,
                               sd_err *err) {
    gguf_ctx *in = NULL;
    sd_status st = gguf_open(in_path, &in, err);
    if (st != SD_OK)
        return st;
    int64_t n = gguf_n_tensors(in);
    gguf_writer *w = gguf_writer_init();
    void **owned = sd_calloc((size_t)n, sizeof(void *));
    uint32_t *types = sd_calloc(n ? (size_t)n : 1, sizeof(uint32_t));
    if (!w || !owned || !types)
        st = sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    if (st == SD_OK)
        st = quant_choose_types(in, plan, pure, types, err);
    if (st == SD_OK)
        st = copy_metadata(w, in, plan, err);
    if (st == SD_OK)
        st = convert_all(w, in, types, n_threads, owned, tot, err);
    if (st == SD_OK)
        st = gguf_writer_write(w, out_path, err);
    for (int64_t i = 0; owned && i < n; i++)
        free(owned[i]);
    free(owned);
    free(types);
    gguf_writer_free(w);
    gguf_close(in);
    return st;
}

/* ---- command line ---- */

static void usage(FILE *f) {
    fprintf(f,
            "usage: specdec quantize [--threads N] [--pure] IN.gguf OUT.gguf TYPE\n"
            "\n"
            "Rewrites IN with its weight matrices in TYPE (metadata copied, general.file_type\n"
            "set, 1-D tensors kept F32). Input tensors may be any supported type.\n"
            "\n"
            "TYPE: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q3_k q4_k q5_k q6_k\n"
            "          every matrix in TYPE\n"
            "      q2_k q3_k_s q3_k_m q3_k_l q4_k_m iq4_nl iq4_xs\n"
            "          llama.cpp's mixed file types of those names (no importance matrix):\n"
            "          output.weight Q6_K, bigger types for attn_v / ffn_down / attn_output\n"
            "          as llama-quantize picks them\n"
            "Norms, ssm_conv1d, ssm_a, ssm_dt and other 1-D tensors are never quantized.\n"
            "Rows that a 256-block type does not divide fall back as llama.cpp does\n"
            "(q2_k/q3_k->q4_0, q4_k->q5_0, q5_k->q5_1, q6_k->q8_0, iq4_xs->iq4_nl), then to\n"
            "f16 if 32 does not divide them.\n"
            "\n"
            "  --threads N   conversion threads (default: all cores)\n"
            "  --pure        a mixed TYPE puts every matrix in its base type (as llama-quantize --pure)\n");
}

int cmd_quantize(int argc, char **argv) {
    const char *pos[3];
    int n_pos = 0, n_threads = 0;
    bool pure = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        } else if (!strcmp(argv[i], "--pure")) {
            pure = true;
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
    const quant_plan *plan = quant_find_plan(pos[2]);
    if (!plan) {
        fprintf(stderr, "specdec: quantize: unknown type '%s' (see specdec quantize --help)\n", pos[2]);
        return 2;
    }
    if (n_threads == 0)
        n_threads = (int)sysconf(_SC_NPROCESSORS_ONLN) > 0 ? (int)sysconf(_SC_NPROCESSORS_ONLN) : 1;
    quantize_totals tot = {0};
    sd_err err = {0};
    if (quantize_file(pos[0], pos[1], plan, pure, n_threads, &tot, &err) != SD_OK) {
        fprintf(stderr, "specdec: %s\n", err.msg);
        return 1;
    }
    printf("quantize: %s -> %s (%s, file_type %u): %" PRId64 " tensors, %" PRId64
           " converted, %" PRIu64 " -> %" PRIu64 " bytes of tensor data\n",
           pos[0], pos[1], plan->name, plan->ftype, tot.n_tensors, tot.n_converted, tot.bytes_in,
           tot.bytes_out);
    return 0;
}
