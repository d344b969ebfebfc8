/* Model defaults and checks shared by the subcommands (see model_args.h). */
#define _POSIX_C_SOURCE 200809L /* access */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli/model_args.h"

static const char *default_file(const char *given, bool target_is_default, const char *path, const char *what) {
    if (given) return given;
    if (!target_is_default || access(path, R_OK) != 0) return NULL;
    fprintf(stderr, "specdec: using %s as the %s\n", path, what);
    return path;
}

const char *cli_default_draft(const char *given, bool target_is_default) {
    return default_file(given, target_is_default, CLI_DEFAULT_DRAFT, "draft model");
}

const char *cli_default_eagle3(const char *given, bool target_is_default) {
    return default_file(given, target_is_default, CLI_DEFAULT_EAGLE3, "EAGLE-3 head");
}

void cli_warn_n_ctx(int32_t n_ctx_train, int32_t n_ctx) {
    if (n_ctx > n_ctx_train)
        fprintf(stderr, "specdec: warning: -c %d exceeds the model's trained context %d\n", n_ctx, n_ctx_train);
}

const char *cli_default_model_hint(const char *path) {
    if (strcmp(path, CLI_DEFAULT_TARGET) && strcmp(path, CLI_DEFAULT_DRAFT)) return NULL;
    return "the default models are found from the repository root: run there, or pass -m";
}

specdec_status cli_load_model(const char *path, const specdec_options *o, specdec_model **m, specdec_error *err) {
    specdec_model_params mp = specdec_model_default_params();
    mp.no_repack = o->no_repack;
    mp.plan_n_ctx = o->n_ctx;
    mp.plan_cache_type_k = o->cache_type_k;
    mp.plan_cache_type_v = o->cache_type_v;
    specdec_status st = specdec_model_load(path, &mp, m, err);
    if (st == SPECDEC_OK && specdec_model_repack_note(*m))
        fprintf(stderr, "specdec: %s: %s\n", path, specdec_model_repack_note(*m));
    const char *hint = cli_default_model_hint(path);
    if (st == SPECDEC_ERR_IO && hint && err) {
        size_t n = strlen(err->message);
        snprintf(err->message + n, sizeof err->message - n, " (%s)", hint);
    }
    return st;
}

char *cli_options_help(const specdec_options *defaults) {
    char *table = NULL;
    size_t len = 0;
    specdec_error err = {0};
    if (specdec_options_help(defaults, &table, &len, &err) != SPECDEC_OK) {
        fprintf(stderr, "specdec: %s\n", err.message);
        return NULL;
    }
    return table;
}
