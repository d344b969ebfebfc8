/* Model files on the command line: the bundled fixture pair that generate,
 * bench and tokenize run when -m / -md are not given, and the warning for a
 * context longer than the model was trained for. */
#ifndef SD_CLI_MODEL_ARGS_H
#define SD_CLI_MODEL_ARGS_H

#include <stdbool.h>
#include <stdint.h>

#include "model/model.h"

/* Relative to the working directory: the repository root (models/README.md). */
#define CLI_DEFAULT_TARGET "models/fixture-target.gguf"
#define CLI_DEFAULT_DRAFT "models/fixture-draft.gguf"

/* The draft model to pair with the target: `given` when not NULL; else, when
 * the target is the default one and CLI_DEFAULT_DRAFT is readable, that file
 * (said on stderr: "specdec: using ... as the draft model"); else NULL. */
const char *cli_default_draft(const char *given, bool target_is_default);

/* sd_model_load, and when a default model path (CLI_DEFAULT_*) cannot be
 * opened, the error says why that happens: the paths are relative to the
 * repository root. Errors as sd_model_load. */
sd_status cli_load_model(const char *path, sd_model **m, sd_err *err);

/* llama.cpp's behaviour for a context beyond {arch}.context_length: allowed
 * (positions past it are out of the training distribution, so quality may
 * drop) with one warning line on stderr. n_ctx <= 0 (the default) never warns. */
void cli_warn_n_ctx(const sd_model *m, int32_t n_ctx);

#endif
