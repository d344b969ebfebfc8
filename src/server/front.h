/* What `specdec serve` and `specdec chat` share: their flags and loading the
 * models, the context and the chat template through the public API. */
#ifndef SD_SERVER_FRONT_H
#define SD_SERVER_FRONT_H

#include "server/server.h"

#define FRONT_DEFAULT_TARGET "models/fixture-target.gguf"
#define FRONT_DEFAULT_DRAFT "models/fixture-draft.gguf"

/* Parses argv (argv[0] = the command). Returns 0 to go on, -1 after --help
 * (exit 0), 2 on a usage error (message printed). serve: whether the HTTP
 * flags are accepted. */
int front_parse(int argc, char **argv, bool serve, server_opts *o);

/* Loads the model (and the draft), makes the context, resolves the chat
 * template (s->template_family, or s->template_error when none fits). Prints
 * a one-line error and returns false on failure. */
bool front_load(server *s);
void front_unload(server *s);

#endif
