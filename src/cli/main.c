/* specdec command-line front end: dispatches to one function per subcommand.
 * Each subcommand lives in its own cmd_*.c file; a command whose file is not
 * linked in reports so instead of failing to build (weak symbols). */
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"

typedef struct command {
    const char *name;
    int (*run)(int argc, char **argv);
    const char *summary;
} command;

static const command COMMANDS[] = {
    {"generate", cmd_generate, "generate text from a prompt, with speculative decoding"},
    {"bench", cmd_bench, "benchmark tables: per prompt class, c_v(S), K sweep, synthetic α"},
    {"inspect", cmd_inspect, "print a GGUF file's metadata and tensors"},
    {"tokenize", cmd_tokenize, "print the token ids of a text"},
    {"quantize", cmd_quantize, "convert a GGUF model to another tensor type"},
};
#define N_COMMANDS (sizeof COMMANDS / sizeof COMMANDS[0])

static void usage(FILE *f) {
    fprintf(f, "usage: specdec COMMAND [options]   (specdec COMMAND --help for its options)\n\ncommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-10s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
}

int main(int argc, char **argv) {
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return argc < 2 ? 2 : 0;
    }
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (strcmp(argv[1], COMMANDS[i].name) != 0) continue;
        if (!COMMANDS[i].run) {
            fprintf(stderr, "specdec: command '%s' is not built into this binary\n", argv[1]);
            return 2;
        }
        return COMMANDS[i].run(argc - 1, argv + 1);
    }
    fprintf(stderr, "specdec: unknown command '%s' (see specdec --help)\n", argv[1]);
    return 2;
}
