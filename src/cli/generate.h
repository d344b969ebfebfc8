/* `specdec generate`: options, the run, and its report, split over
 * generate_opts.c (flags), cmd_generate.c (load, decode, check) and
 * generate_report.c (stats line, JSON). */
#ifndef SD_CLI_GENERATE_H
#define SD_CLI_GENERATE_H

#include <stdbool.h>
#include <stdint.h>

#include "cli/model_args.h"
#include "specdec.h"

typedef struct gen_opts {
    const char *prompt, *prompt_file;
    bool model_is_default;
    /* The options of the library's table (specdec_option_table: model files,
     * threads, context, and the generation parameters, starting from
     * specdec_options_default so the CLI's defaults are the API's).
     * run.gen.check_lossless is decided by `check`. */
    specdec_options run;
    int check; /* -1 = default (on for greedy speculative runs), 0 = off, 1 = on */
    const char *grammar_file, *json_schema_file; /* constrained decoding: at most one */
    bool json, chat;
    int32_t logprobs; /* --logprobs N: -1 = off, else alternatives per token (0..SPECDEC_MAX_TOP_LOGPROBS) */
} gen_opts;

/* Parses argv (argv[0] = "generate"). Returns -1 to go on, else the exit code
 * (0 after --help, 2 after a usage error, already reported on stderr). */
int gen_parse(int argc, char **argv, gen_opts *o);

/* What one run produced, for the report. st.drafter names the drafter
 * ("ngram", "draft", "auto (ngram + draft)", ...); st.lossless_* hold the
 * check's result when it ran. */
typedef struct gen_result {
    const specdec_token *tokens; /* the generated tokens (borrowed from the context) */
    int32_t n_tokens;
    char *text;
    specdec_stats st;
    specdec_model_memory mem; /* target + draft summed, after the run (load_ms: both loads) */
    uint64_t peak_rss;        /* the process's peak resident set (getrusage ru_maxrss), bytes; 0 unknown */
    /* --logprobs: one entry per generated token (n_lp of them, malloc'd), n_top
     * alternatives each; the model gives the tokens' texts. NULL / 0 without. */
    specdec_token_logprob *lp;
    int32_t n_lp, n_top;
    const specdec_model *model;
} gen_result;

/* Decode tokens per second: tokens after the first (which the prefill gives)
 * over the decode time (ms); NAN (shown as n/a) with fewer than 2 tokens. */
double gen_decode_tok_s(int64_t n_gen, double t_decode_ms);
/* The one stats line on stderr. */
void gen_print_stats(const gen_result *r);
/* --logprobs without --json: one line per token on stderr (index, logprob,
 * token text escaped, then the alternatives). */
void gen_print_logprobs(const gen_result *r);
/* The --json object on stdout. Returns false if jansson failed. */
bool gen_print_json(const gen_result *r);

#endif
