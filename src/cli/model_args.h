/* Shared by the subcommands: model files on the command line (the bundled
 * fixture pair that generate, bench and tokenize run when -m / -md are not
 * given), the warning for a context longer than the model was trained for,
 * and the --help option table. Public API only
 * (include/specdec.h). */
#ifndef SD_CLI_MODEL_ARGS_H
#define SD_CLI_MODEL_ARGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "specdec.h"

/* Relative to the working directory: the repository root (models/README.md). */
#define CLI_DEFAULT_TARGET "models/fixture-target.gguf"
#define CLI_DEFAULT_DRAFT "models/fixture-draft.gguf"
#define CLI_DEFAULT_EAGLE3 "models/fixture-eagle3.gguf"
/* The end of every --help that has default models: where they are looked for. */
#define CLI_DEFAULT_MODELS_HELP \
    "The default models (models/fixture-*.gguf) are paths relative to the current directory:\n" \
    "run from the repository root, or pass -m.\n"

/* The draft model to pair with the target: `given` when not NULL; else, when
 * no target was given (target_is_default: -m absent, not -m naming the
 * default path) and CLI_DEFAULT_DRAFT is readable, that file (said on stderr:
 * "specdec: using ... as the draft model"); else NULL. */
const char *cli_default_draft(const char *given, bool target_is_default);
/* The same for an EAGLE-3 head (CLI_DEFAULT_EAGLE3, "... as the EAGLE-3 head"). */
const char *cli_default_eagle3(const char *given, bool target_is_default);

/* When a model file at path cannot be opened and path is one of the default
 * models (CLI_DEFAULT_*): why that happens (the paths are relative to the
 * repository root), to append to the error. NULL for any other path. */
const char *cli_default_model_hint(const char *path);

/* specdec_model_load, with cli_default_model_hint appended to an
 * SPECDEC_ERR_IO message. Errors as specdec_model_load. */
specdec_status cli_load_model(const char *path, const specdec_options *o, specdec_model **m, specdec_error *err);

/* llama.cpp's behaviour for a context beyond {arch}.context_length: allowed
 * (positions past it are out of the training distribution, so quality may
 * drop) with one warning line on stderr. n_ctx <= 0 (the default) never warns. */
void cli_warn_n_ctx(int32_t n_ctx_train, int32_t n_ctx);

/* The library's option table as --help text (specdec_options_help with
 * defaults), to free with specdec_free; NULL after a one-line error on stderr. */
char *cli_options_help(const specdec_options *defaults);

#endif
