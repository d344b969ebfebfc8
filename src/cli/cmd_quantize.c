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
    const char *type_name;
    uint32_t file_type;
    if (!specdec_quantize_type_find(pos[2], &type_name, &file_type)) {
        fprintf(stderr, "specdec: quantize: unknown type '%s' (see specdec quantize --help)\n", pos[2]);
        return 2;
    }
    const specdec_quantize_params params = {.n_threads = n_threads, .pure = pure};
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
    printf("quantize: %s -> %s (%s, file_type %u): %" PRId64 " tensors, %" PRId64
           " converted, %" PRIu64 " -> %" PRIu64 " bytes of tensor data\n",
           pos[0], pos[1], type_name, file_type, tot.n_tensors, tot.n_converted, tot.bytes_in,
           tot.bytes_out);
    return 0;
}
