/* Flags of `specdec chat`. */
#define _POSIX_C_SOURCE 200809L /* access */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/chat.h"

/* The generation options are the library's option table (the same flags,
 * ranges and help as generate and serve); --chat-template is chat's own. */
static void usage(FILE *f, const specdec_options *defaults) {
    char *table = cli_options_help(defaults);
    if (!table) return;
    fprintf(f,
            "usage: specdec chat [-m MODEL.gguf] [-md DRAFT.gguf] [options]\n\n"
            "A conversation in the terminal: type a message, the answer streams; /spec on|off,\n"
            "/reset, /quit. A status line follows each answer.\n\n"
            "%s"
            "  --chat-template NAME     override the model's template: chatml, qwen3, qwen35, qwen36,\n"
            "                           llama3, llama31\n"
            "  -h, --help               this help\n"
            "\nTemperature defaults to 0.8 here (generate's is 0); an answer is at most " CHAT_N_PREDICT_TEXT
            " tokens and a quarter of the context,\nso a conversation keeps its last turns, unless -n says otherwise.\n"
            "Without -m, the draft model " CLI_DEFAULT_DRAFT " is paired when that file exists.\n"
            CLI_DEFAULT_MODELS_HELP,
            table);
    specdec_free(table);
}

static int usage_error(const char *fmt, const char *a) {
    fprintf(stderr, "specdec: ");
    fprintf(stderr, fmt, a);
    fprintf(stderr, " (see specdec chat --help)\n");
    return 2;
}

int chat_parse(int argc, char **argv, chat_opts *o) {
    *o = (chat_opts){.run = specdec_options_default()};
    specdec_options *so = &o->run;
    so->gen.temperature = 0.8f;
    so->gen.n_predict = CHAT_N_PREDICT; /* an answer is a turn, not a document */
    so->model_path = CLI_DEFAULT_TARGET;
    bool model_given = false;
    specdec_error err = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout, so); return -1; }
        if (!strcmp(a, "--chat-template")) {
            if (i + 1 >= argc) return usage_error("%s needs a value", a);
            o->chat_template = argv[++i];
            continue;
        }
        const specdec_option *opt = a[0] == '-' ? specdec_option_find(a) : NULL;
        if (!opt) return usage_error("unknown option %s", a);
        const char *v = opt->type == SPECDEC_OPTION_FLAG ? NULL : i + 1 < argc ? argv[++i] : NULL;
        if (specdec_option_set(so, opt, a, v, &err) != SPECDEC_OK) return usage_error("%s", err.message);
        if (!strcmp(opt->flag, "--model")) model_given = true;
        if (!strcmp(opt->flag, "--n-predict")) o->n_predict_given = true;
    }
    if (specdec_options_check(so, &err) != SPECDEC_OK) { fprintf(stderr, "specdec: %s\n", err.message); return 2; }
    /* the fixture pair, silently (the banner names the model; --spec says what drafts) */
    if (!model_given && !so->draft_path && access(CLI_DEFAULT_DRAFT, R_OK) == 0) so->draft_path = CLI_DEFAULT_DRAFT;
    if (so->gen.spec == SPECDEC_SPEC_DRAFT && !so->draft_path) {
        fprintf(stderr, "specdec: --spec draft needs -md DRAFT.gguf\n");
        return 2;
    }
    return 0;
}
