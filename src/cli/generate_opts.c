/* Flags of `specdec generate`. */
#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/generate.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: specdec generate [-m MODEL.gguf] (-p TEXT | -f FILE) [options]\n"
            "\n"
            "Generates text; with a drafter, by lossless speculative decoding (the output is\n"
            "exactly plain greedy decoding's, or plain sampling's in distribution at --temp > 0).\n"
            "\n"
            "  -m, --model FILE         target model (default " CLI_DEFAULT_TARGET ")\n"
            "  -p, --prompt TEXT        prompt text\n"
            "  -f, --file FILE          read the prompt from FILE ('-' = stdin), bytes as they are\n"
            "  -n, --n-predict N        tokens to generate (default 128)\n"
            "  -c, --ctx-size N         context size in tokens (default: the model's, at most 4096); more\n"
            "                           than the model's trained context is allowed, with a warning\n"
            "  -t, --threads N          threads (default: online cores; more is slower)\n"
            "  --temp T                 temperature; 0 = greedy (default 0)\n"
            "  --top-k K                keep the K most likely tokens (0 = off)\n"
            "  --top-p P                keep the smallest set of mass >= P (1 = off)\n"
            "  --min-p P                drop tokens below P x the top probability (0 = off)\n"
            "  --seed S                 sampling seed (default 42)\n"
            "  --spec MODE              none | ngram | draft | eagle3 | mtp | auto (default auto: n-gram lookup,\n"
            "                           plus the -md file or the target's MTP block, or the draft model\n"
            "                           " CLI_DEFAULT_DRAFT " when -m is not given at all and that file exists)\n"
            "  -md, --model-draft FILE  draft model (same vocabulary as the target), an EAGLE-3 head (--spec\n"
            "                           eagle3), or an MTP sidecar: a qwen35 mtp-*.gguf holding only the\n"
            "                           nextn block (--spec mtp, for a target without its own)\n"
            "  --draft-max K            most draft tokens per verify round, 1..64 (default 8)\n"
            "  --ngram-min N            shortest n-gram looked up (default 1)\n"
            "  --ngram-max N            longest n-gram looked up (default 3)\n"
            "  --fixed-k                every round drafts --draft-max tokens (no adaptive K)\n"
            "  --gate G                 zero-accept rounds in a row that stop drafting (0 = never; default 4)\n"
            "  --tree N                 token trees of at most N draft tokens (0 = off, default; dense\n"
            "                           targets, draft model or EAGLE-3 head): the chain of K plus next-best\n"
            "                           siblings, verified in one forward with a tree attention mask\n"
            "  --tree-width W           candidates per tree level, 1..8 (default 2)\n"
            "  --hybrid-rollback R      hybrid models (qwen35): how rejected drafts leave the recurrent\n"
            "                           state: auto | checkpoint | replay | redecode | window (default\n"
            "                           auto = replay; the output is the same with each, only the cost differs)\n"
            "  --window S               the window discipline's static window, 2..64 (default 9)\n"
            "  --draft-sample           at --temp > 0 the draft model samples its proposals, verified by\n"
            "                           speculative sampling (same law as plain sampling, not the same\n"
            "                           bytes); default: it proposes its argmax, verified against the\n"
            "                           target's own per-position sample (byte-identical to plain sampling)\n"
            "  --check-lossless         also run plain decoding (greedy, or sampling with the same seed)\n"
            "                           and compare token by token, report the speedup (default on for\n"
            "                           --spec other than none, unless --draft-sample)\n"
            "  --no-check               skip that\n"
            "  --isa NAME               kernels: scalar | avx2 | avx512 | neon (default: the best this CPU\n"
            "                           runs, or SPECDEC_ISA; same output with each, only speed differs)\n"
            "  --json                   print one JSON object instead of streaming the text\n"
            "  --chat                   wrap the prompt in the ChatML template (Qwen)\n"
            "  -h, --help               this help\n"
            "\n"
            "At the end one line of statistics goes to stderr: prefill and decode tok/s, rounds,\n"
            "acceptance α, accepted/round, tokens/forward, greedy tok/s, speedup, LOSSLESS n/n.\n"
            "A figure with nothing to measure (decode speed with fewer than 2 tokens, e.g. -n 0)\n"
            "reads n/a, and null in --json.\n");
}

static int bad(const char *fmt, const char *a) {
    fprintf(stderr, "specdec: ");
    fprintf(stderr, fmt, a);
    fprintf(stderr, " (see specdec generate --help)\n");
    return 2;
}

static bool parse_long(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static bool parse_float(const char *s, float lo, float hi, float *out) {
    char *end;
    errno = 0;
    float v = strtof(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) return false;
    *out = v;
    return true;
}

static void defaults(gen_opts *o) {
    *o = (gen_opts){.model = CLI_DEFAULT_TARGET, .model_is_default = true, .check = -1};
    o->gen = specdec_generate_default_params();
}

/* Options that take an integer: flag, field, bounds. */
typedef struct int_flag {
    const char *flag;
    size_t offset;
    long lo, hi;
} int_flag;
#define OFF(f) offsetof(gen_opts, f)
static const int_flag INT_FLAGS[] = {
    {"-n", OFF(gen.n_predict), 0, 1 << 24},       {"-c", OFF(n_ctx), 1, 1 << 24},
    {"-t", OFF(threads), 1, 1024},                {"--draft-max", OFF(gen.draft_max), 1, 64},
    {"--ngram-min", OFF(gen.ngram_min), 1, 8},    {"--ngram-max", OFF(gen.ngram_max), 1, 8},
    {"--gate", OFF(gen.gate), 0, 1 << 20},        {"--window", OFF(gen.hybrid_window), 2, 64},
    {"--tree", OFF(gen.tree_nodes), 0, 63},       {"--tree-width", OFF(gen.tree_width), 1, 8},
};

static int parse_value(gen_opts *o, const char *flag, const char *v) {
    for (size_t i = 0; i < sizeof INT_FLAGS / sizeof *INT_FLAGS; i++) {
        if (strcmp(flag, INT_FLAGS[i].flag) != 0) continue;
        long x;
        if (!parse_long(v, INT_FLAGS[i].lo, INT_FLAGS[i].hi, &x)) {
            fprintf(stderr, "specdec: %s needs an integer in [%ld, %ld], not '%s' (see specdec generate --help)\n",
                    flag, INT_FLAGS[i].lo, INT_FLAGS[i].hi, v);
            return 2;
        }
        *(int32_t *)((char *)o + INT_FLAGS[i].offset) = (int32_t)x;
        return -1;
    }
    specdec_generate_params *g = &o->gen;
    if (!strcmp(flag, "-m")) o->model = v, o->model_is_default = false;
    else if (!strcmp(flag, "-md")) o->draft = v;
    else if (!strcmp(flag, "-p")) o->prompt = v;
    else if (!strcmp(flag, "-f")) o->prompt_file = v;
    else if (!strcmp(flag, "--temp")) { if (!parse_float(v, 0, 100, &g->temperature)) return bad("bad value for %s", flag); }
    else if (!strcmp(flag, "--top-p")) { if (!parse_float(v, 1e-6f, 1, &g->top_p)) return bad("%s needs a number in (0, 1]", flag); }
    else if (!strcmp(flag, "--min-p")) { if (!parse_float(v, 0, 0.999999f, &g->min_p)) return bad("%s needs a number in [0, 1)", flag); }
    else if (!strcmp(flag, "--top-k")) {
        long x;
        if (!parse_long(v, 0, 1 << 24, &x)) return bad("bad value for %s", flag);
        g->top_k = (int32_t)x;
    } else if (!strcmp(flag, "--seed")) {
        char *end;
        errno = 0;
        unsigned long long x = strtoull(v, &end, 10);
        if (errno || end == v || *end) return bad("bad value for %s", flag);
        g->seed = x;
    } else if (!strcmp(flag, "--spec")) {
        if (!specdec_spec_mode_parse(v, &g->spec)) return bad("--spec must be none, ngram, draft, eagle3, mtp or auto, not '%s'", v);
    } else if (!strcmp(flag, "--isa")) {
        specdec_isa isa;
        specdec_error e;
        if (!specdec_isa_parse(v, &isa)) return bad("--isa must be scalar, avx2, avx512 or neon, not '%s'", v);
        if (specdec_isa_set(isa, &e) != SPECDEC_OK) return bad("--isa: %s", e.message);
    } else if (!strcmp(flag, "--hybrid-rollback")) {
        if (!specdec_rollback_parse(v, &g->hybrid_rollback))
            return bad("--hybrid-rollback must be auto, checkpoint, replay, redecode or window, not '%s'", v);
    } else
        return bad("unknown option '%s'", flag);
    return -1;
}

static bool takes_value(const char *flag) {
    static const char *with_value[] = {"-m", "-md", "-p", "-f", "--temp", "--top-p", "--min-p",
                                       "--top-k", "--seed", "--spec", "--hybrid-rollback", "--isa"};
    for (size_t i = 0; i < sizeof with_value / sizeof *with_value; i++)
        if (!strcmp(flag, with_value[i])) return true;
    for (size_t i = 0; i < sizeof INT_FLAGS / sizeof *INT_FLAGS; i++)
        if (!strcmp(flag, INT_FLAGS[i].flag)) return true;
    return false;
}

static int check_combination(const gen_opts *o) {
    if (!o->prompt == !o->prompt_file) return bad("%s", "give the prompt with exactly one of -p TEXT or -f FILE");
    if (o->prompt && !*o->prompt) return bad("%s", "the prompt (-p) is empty");
    if (o->gen.ngram_min > o->gen.ngram_max) return bad("%s", "--ngram-min must not exceed --ngram-max");
    if (o->gen.spec == SPECDEC_SPEC_DRAFT && !o->draft && !o->model_is_default)
        return bad("%s", "--spec draft needs a draft model (-md FILE)");
    if (o->gen.spec == SPECDEC_SPEC_EAGLE3 && !o->draft && !o->model_is_default)
        return bad("%s", "--spec eagle3 needs an EAGLE-3 head (-md FILE)");
    if (o->check == 1 && o->gen.temperature > 0 && o->gen.draft_sample)
        return bad("%s", "--check-lossless at --temp > 0 needs deterministic drafts: drop --draft-sample");
    return -1;
}

/* llama.cpp's long spellings of the same flags, for users coming from it. */
static const char *canonical(const char *flag) {
    static const char *alias[][2] = {{"--model", "-m"},    {"--model-draft", "-md"}, {"--prompt", "-p"},
                                     {"--file", "-f"},     {"--n-predict", "-n"},    {"--ctx-size", "-c"},
                                     {"--threads", "-t"}};
    for (size_t i = 0; i < sizeof alias / sizeof *alias; i++)
        if (!strcmp(flag, alias[i][0])) return alias[i][1];
    return flag;
}

int gen_parse(int argc, char **argv, gen_opts *o) {
    defaults(o);
    for (int i = 1; i < argc; i++) {
        const char *a = canonical(argv[i]);
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--check-lossless")) o->check = 1;
        else if (!strcmp(a, "--no-check")) o->check = 0;
        else if (!strcmp(a, "--json")) o->json = true;
        else if (!strcmp(a, "--chat")) o->chat = true;
        else if (!strcmp(a, "--fixed-k")) o->gen.fixed_k = true;
        else if (!strcmp(a, "--draft-sample")) o->gen.draft_sample = true;
        else if (a[0] != '-') return bad("unexpected argument '%s'", a);
        else if (!takes_value(a)) return bad("unknown option '%s'", a);
        else if (i + 1 >= argc) return bad("%s needs a value", a);
        else {
            int rc = parse_value(o, a, argv[++i]);
            if (rc >= 0) return rc;
        }
    }
    return check_combination(o);
}
