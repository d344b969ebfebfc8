/* specdec serve's flags, and loading the models, the batch of --parallel
 * slots and the chat template through the public API. */
#ifndef SD_SERVER_FRONT_H
#define SD_SERVER_FRONT_H

#include "server/server.h"

#define FRONT_DEFAULT_TARGET "models/fixture-target.gguf"
#define FRONT_DEFAULT_DRAFT "models/fixture-draft.gguf"
/* The end of --help: where the default models are looked for (as the cli's). */
#define FRONT_DEFAULT_MODELS_HELP \
    "The default models (models/fixture-*.gguf) are paths relative to the current directory:\n" \
    "run from the repository root, or pass -m.\n"
#define FRONT_SUFFIX_TOKENS 16384 /* the suffix memory: a few hundred answers, at most ~44 MiB */

/* Parses argv (argv[0] = the command). Returns 0 to go on, -1 after --help
 * (exit 0), 2 on a usage error (message printed). */
int front_parse(int argc, char **argv, server_opts *o);
/* serve's --parallel default: online cores / 4, in [1, 4]. */
int front_default_parallel(void);

/* Loads the model (and the draft), makes the batch of opts.parallel slots
 * (each a context of opts.n_ctx positions), resolves the chat template
 * (s->template_family, or s->template_error when none fits). Prints a
 * one-line error and returns false on failure. */
bool front_load(server *s);
void front_unload(server *s);

#endif
