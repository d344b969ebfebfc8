/* specdec command-line front end: dispatches to one function per subcommand.
 * Each subcommand lives in its own cmd_*.c file; a command whose file is not
 * linked in reports so instead of failing to build (weak symbols). */
#define _POSIX_C_SOURCE 200809L /* setenv, execv */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/sigbus.h"
#include "specdec.h"

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
    {"serve", cmd_serve, "OpenAI-compatible HTTP server with a chat page (per-request speculation)"},
    {"chat", cmd_chat, "a conversation in the terminal (/spec on|off)"},
};
#define N_COMMANDS (sizeof COMMANDS / sizeof COMMANDS[0])

static void usage(FILE *f) {
    fprintf(f, "usage: specdec COMMAND [options]   (specdec COMMAND --help for its options)\n"
               "       specdec --version            (also: specdec COMMAND --version)\n\ncommands:\n");
    for (size_t i = 0; i < N_COMMANDS; i++)
        fprintf(f, "  %-10s %s\n", COMMANDS[i].name, COMMANDS[i].summary);
}

/* libgomp (our thread pool, via OpenMP) makes an idle worker spin for about
 * 300k iterations at every barrier before it sleeps. A forward has dozens of
 * barriers, and when the cores are also busy with other work, the spinning
 * workers take the time slices the working threads need, and a decode on a
 * loaded machine runs several times slower than with one thread. Too short a
 * spin costs on a quiet machine instead: every barrier then sleeps and wakes
 * through the kernel. A spin of 1000 keeps most of the quiet machine's speed
 * without the collapse under load (to compare settings, set GOMP_SPINCOUNT
 * yourself: it is then left alone).
 * libgomp has a second, shorter spin: when the process holds more OpenMP
 * threads than there are cores, it spins only 100 iterations unless a wait
 * policy is set (libgomp/env.c, gomp_throttled_spin_count_var). `serve`
 * holds two thread pools (the main thread's, from loading, and the
 * inference thread's), so on 2 cores every barrier of its forwards slept in
 * the kernel: ~600 context switches per token against ~140 in `generate`,
 * and a plain decode 0.8x as fast as the same decode in `generate`.
 * OMP_WAIT_POLICY=active with GOMP_SPINCOUNT=1000 makes both spins 1000.
 * libgomp reads its settings from the environment when it is loaded, before
 * main, so unless the user chose a policy (OMP_WAIT_POLICY or GOMP_SPINCOUNT)
 * we set both and re-execute ourselves once. */
static void bound_openmp_spinning(char **argv) {
    if (getenv("OMP_WAIT_POLICY") || getenv("GOMP_SPINCOUNT")) return;
    if (setenv("GOMP_SPINCOUNT", "1000", 1) != 0 || setenv("OMP_WAIT_POLICY", "active", 1) != 0) return;
    execv("/proc/self/exe", argv);
    /* exec failed (no /proc): carry on with libgomp's defaults */
}

/* Output that could not be written (a full disk, a closed pipe) is an error
 * too: one line and a non-zero exit, not a silent success. */
static int check_stdout(int rc) {
    int earlier = errno; /* a write that failed before (a help longer than stdio's buffer) left its reason here */
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout)) return rc;
    int e = errno ? errno : earlier;
    fprintf(stderr, "specdec: cannot write the output%s%s\n", e ? ": " : "", e ? strerror(e) : "");
    return rc ? rc : 1;
}

static int print_version(void) {
    printf("specdec %s\n", specdec_version());
    return check_stdout(0);
}

int main(int argc, char **argv) {
    bound_openmp_spinning(argv);
    cli_catch_sigbus();
    if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
        usage(argc < 2 ? stderr : stdout);
        return check_stdout(argc < 2 ? 2 : 0);
    }
    if (!strcmp(argv[1], "--version")) return print_version();
    for (size_t i = 0; i < N_COMMANDS; i++) {
        if (strcmp(argv[1], COMMANDS[i].name) != 0) continue;
        /* COMMAND --version as its only argument (a later --version could be
         * an option's value, e.g. a prompt) */
        if (argc == 3 && !strcmp(argv[2], "--version")) return print_version();
        if (!COMMANDS[i].run) {
            fprintf(stderr, "specdec: command '%s' is not built into this binary\n", argv[1]);
            return 2;
        }
        return check_stdout(COMMANDS[i].run(argc - 1, argv + 1));
    }
    fprintf(stderr, "specdec: unknown command '%s' (see specdec --help)\n", argv[1]);
    return 2;
}
