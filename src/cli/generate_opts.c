/* Flags of `specdec generate`. */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/generate.h"

/* The generation options come from the library's option table (the same
 * flags, ranges and help as serve and chat); these are generate's own. */
static void usage(FILE *f, const specdec_options *defaults) {
    char *table = cli_options_help(defaults);
    if (!table) return;
    fprintf(f,
            "usage: specdec generate [-m MODEL.gguf] (-p TEXT | -f FILE) [options]\n"
            "\n"
            "Generates text; with a drafter, by lossless speculative decoding (the output is\n"
            "exactly plain greedy decoding's, or plain sampling's with the same seed at --temp > 0,\n"
            "byte for byte, unless --draft-sample: then the same distribution, not the same bytes).\n"
            "\n"
            "  -p, --prompt TEXT        prompt text\n"
            "  -f, --file FILE          read the prompt from FILE ('-' = stdin), bytes as they are\n"
            "%s"
            "  --check-lossless         also run plain decoding (greedy, or sampling with the same seed)\n"
            "                           and compare token by token, report the speedup (default on for\n"
            "                           --spec other than none, unless --draft-sample)\n"
            "  --no-check               skip that\n"
            "  --grammar-file FILE      constrain the output to a GBNF grammar (llama.cpp's dialect,\n"
            "                           start rule root; docs/GRAMMAR.md); lossless with every --spec\n"
            "  --json-schema FILE       constrain the output to JSON valid against a JSON Schema\n"
            "                           (docs/JSON_SCHEMA.md); --spec auto then also drafts the text\n"
            "                           the grammar forces (--spec grammar: only that)\n"
            "  --isa NAME               kernels: scalar | avx2 | avx512 | neon (default: the best this CPU\n"
            "                           runs, or SPECDEC_ISA; same output with each, only speed differs)\n"
            "  --logprobs N             also give each generated token's log-probability and the N most\n"
            "                           likely tokens of its position (0..20; after bias, penalties and\n"
            "                           grammar, before temperature and filters, as the server's; the\n"
            "                           same with and without speculation): on stderr after the text,\n"
            "                           or as \"logprobs\" in --json\n"
            "  --json                   print one JSON object instead of streaming the text\n"
            "  --chat                   wrap the prompt in the ChatML template (Qwen)\n"
            "  -h, --help               this help\n"
            "\n"
            "Without -m, --spec auto or draft also pairs the draft model " CLI_DEFAULT_DRAFT "\n"
            "when that file exists.\n" CLI_DEFAULT_MODELS_HELP
            "At the end one line of statistics goes to stderr: prefill and decode tok/s, rounds,\n"
            "acceptance α, accepted/round, tokens/forward, greedy tok/s, speedup, LOSSLESS n/n.\n"
            "A figure with nothing to measure (decode speed with fewer than 2 tokens, e.g. -n 0)\n"
            "reads n/a, and null in --json.\n",
            table);
    specdec_free(table);
}

static int bad(const char *fmt, const char *a) {
    fprintf(stderr, "specdec: ");
    fprintf(stderr, fmt, a);
    fprintf(stderr, " (see specdec generate --help)\n");
    return 2;
}

static int check_combination(const gen_opts *o) {
    if (!o->prompt == !o->prompt_file) return bad("%s", "give the prompt with exactly one of -p TEXT or -f FILE");
    if (o->prompt && !*o->prompt) return bad("%s", "the prompt (-p) is empty");
    if (o->run.gen.spec == SPECDEC_SPEC_DRAFT && !o->run.draft_path && !o->model_is_default)
        return bad("%s", "--spec draft needs a draft model (-md FILE)");
    if (o->run.gen.spec == SPECDEC_SPEC_EAGLE3 && !o->run.draft_path && !o->model_is_default)
        return bad("%s", "--spec eagle3 needs an EAGLE-3 head (-md FILE)");
    if (o->run.gen.spec == SPECDEC_SPEC_DFLASH && !o->run.draft_path)
        return bad("%s", "--spec dflash needs a DFlash draft (-md FILE)");
    if (o->grammar_file && o->json_schema_file)
        return bad("%s", "give at most one of --grammar-file and --json-schema");
    if (o->run.gen.spec == SPECDEC_SPEC_GRAMMAR && !o->grammar_file && !o->json_schema_file)
        return bad("%s", "--spec grammar needs --grammar-file or --json-schema");
    if (o->check == 1 && o->run.gen.temperature > 0 && o->run.gen.draft_sample)
        return bad("%s", "--check-lossless at --temp > 0 needs deterministic drafts: drop --draft-sample");
    return -1;
}

/* --isa NAME: the kernels' instruction set for this process; -1 when set, else a usage error. */
static int set_isa(const char *v) {
    specdec_isa isa;
    specdec_error e = {0};
    if (!specdec_isa_parse(v, &isa)) return bad("--isa must be scalar, avx2, avx512 or neon, not '%s'", v);
    if (specdec_isa_set(isa, &e) != SPECDEC_OK) return bad("--isa: %s", e.message);
    return -1;
}

/* --logprobs N: an integer in [0, SPECDEC_MAX_TOP_LOGPROBS]; -1 when set, else a usage error. */
static int set_logprobs(gen_opts *o, const char *v) {
    char *end = NULL;
    long n = strtol(v, &end, 10);
    if (!*v || *end || n < 0 || n > SPECDEC_MAX_TOP_LOGPROBS)
        return bad("--logprobs %s: out of range [0, 20]", v);
    o->logprobs = (int32_t)n;
    return -1;
}

/* generate's own flags; false for any other. */
static bool own_flag(gen_opts *o, const char *a, int argc, char **argv, int *i, int *rc) {
    if (!strcmp(a, "--check-lossless")) o->check = 1;
    else if (!strcmp(a, "--no-check")) o->check = 0;
    else if (!strcmp(a, "--json")) o->json = true;
    else if (!strcmp(a, "--chat")) o->chat = true;
    else {
        bool text = !strcmp(a, "-p") || !strcmp(a, "--prompt"), file = !strcmp(a, "-f") || !strcmp(a, "--file");
        bool isa = !strcmp(a, "--isa");
        bool grammar = !strcmp(a, "--grammar-file"), schema = !strcmp(a, "--json-schema");
        bool logprobs = !strcmp(a, "--logprobs");
        if (!text && !file && !isa && !grammar && !schema && !logprobs) return false;
        if (*i + 1 >= argc) *rc = bad("%s needs a value", a);
        else if (text) o->prompt = argv[++*i];
        else if (file) o->prompt_file = argv[++*i];
        else if (grammar) o->grammar_file = argv[++*i];
        else if (schema) o->json_schema_file = argv[++*i];
        else if (logprobs) *rc = set_logprobs(o, argv[++*i]);
        else *rc = set_isa(argv[++*i]);
    }
    return true;
}

int gen_parse(int argc, char **argv, gen_opts *o) {
    *o = (gen_opts){.model_is_default = true, .check = -1, .logprobs = -1, .run = specdec_options_default()};
    specdec_options *so = &o->run;
    so->model_path = CLI_DEFAULT_TARGET;
    specdec_error err = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int rc = -1;
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout, so);
            return 0;
        }
        if (own_flag(o, a, argc, argv, &i, &rc)) {
            if (rc >= 0) return rc;
            continue;
        }
        const specdec_option *opt = a[0] == '-' ? specdec_option_find(a) : NULL;
        if (!opt) return bad(a[0] == '-' ? "unknown option '%s'" : "unexpected argument '%s'", a);
        const char *v = opt->type == SPECDEC_OPTION_FLAG ? NULL : i + 1 < argc ? argv[++i] : NULL;
        if (specdec_option_set(so, opt, a, v, &err) != SPECDEC_OK) return bad("%s", err.message);
        if (!strcmp(opt->flag, "--model")) o->model_is_default = false;
    }
    if (specdec_options_check(so, &err) != SPECDEC_OK) return bad("%s", err.message);
    return check_combination(o);
}
