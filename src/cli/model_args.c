/* Model defaults and checks shared by the subcommands (see model_args.h). */
#define _POSIX_C_SOURCE 200809L /* access */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/model_args.h"

const char *cli_default_draft(const char *given, bool target_is_default) {
    if (given) return given;
    if (!target_is_default || access(CLI_DEFAULT_DRAFT, R_OK) != 0) return NULL;
    fprintf(stderr, "specdec: using %s as the draft model\n", CLI_DEFAULT_DRAFT);
    return CLI_DEFAULT_DRAFT;
}

void cli_warn_n_ctx(const sd_model *m, int32_t n_ctx) {
    if (n_ctx > m->hp.n_ctx_train)
        fprintf(stderr, "specdec: warning: -c %d exceeds the model's trained context %d\n", n_ctx,
                m->hp.n_ctx_train);
}

sd_status cli_load_model(const char *path, sd_model **m, sd_err *err) {
    sd_status st = sd_model_load(path, m, err);
    bool is_default = !strcmp(path, CLI_DEFAULT_TARGET) || !strcmp(path, CLI_DEFAULT_DRAFT);
    if (st == SD_ERR_IO && is_default && err) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        sd_err_set(err, st, "%s (the default models are found from the repository root: run there, or pass -m)", msg);
    }
    return st;
}
