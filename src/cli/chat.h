/* `specdec chat`: a conversation in the terminal, split over chat_opts.c
 * (flags) and cmd_chat.c (the conversation). Public API only
 * (include/specdec.h). */
#ifndef SD_CLI_CHAT_H
#define SD_CLI_CHAT_H

#include <stdbool.h>
#include <stdint.h>

#include "cli/model_args.h"
#include "specdec.h"

/* An answer's default length (serve's is -1: until the end of turn or a full
 * context): long enough for a paragraph or a function, short enough that a
 * few turns fit a small context. */
#define CHAT_N_PREDICT 256
#define CHAT_N_PREDICT_TEXT "256"
/* The suffix memory of the conversation's answers (--spec suffix, auto), in
 * tokens: a few hundred answers, at most ~44 MiB; as serve's default. */
#define CHAT_SUFFIX_TOKENS 16384

typedef struct chat_opts {
    /* The options of the library's table, from specdec_options_default with
     * temperature 0.8 and n_predict CHAT_N_PREDICT; draft_path is
     * CLI_DEFAULT_DRAFT when -m is absent and that file is readable. */
    specdec_options run;
    const char *chat_template; /* --chat-template NAME, NULL: the model's */
    bool n_predict_given;      /* -n given: else an answer also fits a quarter of the context */
} chat_opts;

/* Parses argv (argv[0] = "chat"). Returns 0 to go on, -1 after --help (exit
 * 0), 2 on a usage error (a one-line message on stderr). */
int chat_parse(int argc, char **argv, chat_opts *o);

#endif
