/* specdec quantize IN.gguf OUT.gguf TYPE: rewrites a GGUF model with its
 * weight matrices in another tensor type, through specdec_quantize_file
 * (which tensor gets which type, llama.cpp's mixes and the row-length
 * fallbacks are described there and in numerics/quantize/quantize_mix.c). A terminal
 * on stderr sees one progress line, rewritten per tensor. */
#define _POSIX_C_SOURCE 200809L /* isatty */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "specdec.h"

/* The progress line: tensor i + 1 of n, its name and the type change. */
static void show_progress(void *user, int64_t i, int64_t n, const char *name, const char *from, const char *to) {
    *(bool *)user = true;
    fprintf(stderr, "\rquantize: [%" PRId64 "/%" PRId64 "] %-40.40s %-5s -> %-5s", i + 1, n, name, from, to);
}

/* ---- command line ---- */

static void usage(FILE *f) {
    fprintf(f,
            "usage: specdec quantize [--threads N] [--pure] [--imatrix FILE] [--tensor-type REGEX=TYPE]...\n"
            "                        [--token-embedding-type TYPE] [--output-tensor-type TYPE] IN.gguf OUT.gguf TYPE\n"
            "\n"
            "Rewrites IN with its weight matrices in TYPE (metadata copied, general.file_type\n"
            "set, 1-D tensors kept F32). Input tensors may be any supported type.\n"
            "\n"
            "TYPE: f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q3_k q4_k q5_k q6_k\n"
            "          every matrix in TYPE\n"
            "      q2_k q3_k_s q3_k_m q3_k_l q4_k_m iq4_nl iq4_xs\n"
            "      iq1_s iq1_m iq2_xxs iq2_xs iq2_s iq2_m iq3_xxs iq3_xs iq3_s iq3_m mxfp4_moe\n"
            "          llama.cpp's mixed file types of those names: output.weight Q6_K\n"
            "          (Q5_K for the IQ2/IQ3_XXS types, Q8_0 in mxfp4_moe), bigger types for\n"
            "          attn_v / ffn_down / attn_output as llama-quantize picks them; the IQ\n"
            "          types want --imatrix\n"
            "Norms, ssm_conv1d, ssm_a, ssm_dt and other 1-D tensors are never quantized.\n"
            "Rows that a 256-block type does not divide fall back as llama.cpp does\n"
            "(q2_k/q3_k->q4_0, q4_k->q5_0, q5_k->q5_1, q6_k->q8_0, iq1/iq2/iq3/iq4_xs->iq4_nl),\n"
            "then to f16 if 32 does not divide them; each such tensor is named.\n"
            "\n"
            "  --threads N   conversion threads (default: all cores)\n"
            "  --pure        a mixed TYPE puts every matrix in its base type (as llama-quantize --pure)\n"
            "  --imatrix FILE  llama.cpp importance matrix (llama-imatrix's GGUF or legacy .dat);\n"
            "                weights the error the IQ / MXFP4 / IQ4 searches minimise\n"
            "  --tensor-type REGEX=TYPE  tensors whose name matches REGEX (POSIX extended, searched\n"
            "                anywhere in the name) get ggml type TYPE; repeatable, first match wins\n"
            "  --token-embedding-type TYPE, --output-tensor-type TYPE\n"
            "                the type of token_embd.weight / output.weight\n");
}

/* Parses the command line; returns -1 to go on, else the exit code. */
static int run_quantize(int argc, char **argv, const char **tt, int *n_tt, bool *pure_out, int *threads_out,
                        const char **imatrix, const char **tok_type, const char **out_type, const char **pos,
                        int *n_pos_out) {
    int n_pos = 0;
    bool pure = false;
    for (int i = 1; i < argc; i++) {
        const char *val_opts[] = {"--imatrix", "--tensor-type", "--token-embedding-type", "--output-tensor-type"};
        int vo = -1;
        for (int k = 0; k < 4; k++)
            if (!strcmp(argv[i], val_opts[k])) vo = k;
        if (vo >= 0) {
            if (i + 1 >= argc) {
                fprintf(stderr, "specdec: quantize: %s needs a value (see specdec quantize --help)\n", argv[i]);
                return 2;
            }
            const char *v = argv[++i];
            if (vo == 0) *imatrix = v;
            else if (vo == 1) tt[(*n_tt)++] = v;
            else if (vo == 2) *tok_type = v;
            else *out_type = v;
            continue;
        }
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
            *threads_out = (int)v;
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
    *pure_out = pure;
    *n_pos_out = n_pos;
    return -1;
}

static int do_quantize(const char **pos, int n_pos, bool pure, int n_threads, const char *imatrix,
                       const char *tok_type, const char *out_type, const char **tt, int n_tt) {
    if (n_pos != 3) {
        fprintf(stderr, "specdec: quantize: needs IN.gguf OUT.gguf TYPE, got %d argument%s"
                " (see specdec quantize --help)\n", n_pos, n_pos == 1 ? "" : "s");
        return 2;
    }
    const char *type_name;
    uint32_t file_type;
    if (!specdec_quantize_type_find(pos[2], &type_name, &file_type)) {
        fprintf(stderr, "specdec: quantize: unknown type '%s' (see specdec quantize --help)\n", pos[2]);
        return 2;
    }
    const specdec_quantize_params params = {.n_threads = n_threads,
                                            .pure = pure,
                                            .imatrix = imatrix,
                                            .tensor_types = tt,
                                            .n_tensor_types = n_tt,
                                            .token_embedding_type = tok_type,
                                            .output_tensor_type = out_type};
    specdec_quantize_stats tot = {0};
    specdec_error err = {0};
    bool shown = false;
    specdec_status st = specdec_quantize_file(pos[0], pos[1], pos[2], &params,
                                              isatty(STDERR_FILENO) ? show_progress : NULL, &shown, &tot, &err);
    if (shown)
        fputc('\n', stderr);
    if (st != SPECDEC_OK) {
        fprintf(stderr, "specdec: %s\n", err.message);
        return 1;
    }
    if (tot.n_fallback)
        fprintf(stderr, "quantize: %" PRId64 " tensor%s fell back (row not a multiple of the type's block): %s%s\n",
                tot.n_fallback, tot.n_fallback == 1 ? "" : "s", tot.fallbacks,
                strlen(tot.fallbacks) + 100 > sizeof tot.fallbacks ? ", ..." : "");
    printf("quantize: %s -> %s (%s, file_type %u): %" PRId64 " tensors, %" PRId64
           " converted, %" PRIu64 " -> %" PRIu64 " bytes of tensor data\n",
           pos[0], pos[1], type_name, file_type, tot.n_tensors, tot.n_converted, tot.bytes_in,
           tot.bytes_out);
    return 0;
}

int cmd_quantize(int argc, char **argv) {
    const char *pos[3];
    int n_pos = 0, n_threads = 0;
    bool pure = false;
    const char *imatrix = NULL, *tok_type = NULL, *out_type = NULL;
    const char **tt = calloc((size_t)argc, sizeof *tt);
    int n_tt = 0;
    if (!tt) {
        fprintf(stderr, "specdec: quantize: out of memory\n");
        return 1;
    }
    int rc = run_quantize(argc, argv, tt, &n_tt, &pure, &n_threads, &imatrix, &tok_type, &out_type, pos, &n_pos);
    if (rc < 0)
        rc = do_quantize(pos, n_pos, pure, n_threads, imatrix, tok_type, out_type, tt, n_tt);
    free(tt);
    return rc;
}
