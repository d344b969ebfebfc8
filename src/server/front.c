#define _POSIX_C_SOURCE 200809L
#include "server/front.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void usage(FILE *f, bool serve) {
    fprintf(f, "usage: specdec %s [-m MODEL.gguf] [-md DRAFT.gguf] [options]\n\n", serve ? "serve" : "chat");
    if (serve)
        fprintf(f, "An OpenAI-compatible HTTP server (/v1/chat/completions, /v1/completions, /tokenize,\n"
                   "/detokenize, /apply-template, /props, /metrics, /health) with a chat page at /.\n"
                   "Per request, \"speculative\": false turns drafting off; responses carry timings.\n\n");
    else
        fprintf(f, "A conversation in the terminal: type a message, the answer streams; /spec on|off,\n"
                   "/reset, /quit. A status line follows each answer.\n\n");
    fprintf(f,
            "  -m, --model FILE         target model (default " FRONT_DEFAULT_TARGET ")\n"
            "  -md, --model-draft FILE  draft model (default " FRONT_DEFAULT_DRAFT " when -m is not given)\n"
            "  --spec MODE              none | ngram | draft | eagle3 | mtp | auto (default auto)\n"
            "  --draft-max K            most draft tokens per verify round, 1..64 (default 8)\n"
            "  --ngram-min N, --ngram-max N   n-gram lengths looked up (default 1, 3)\n"
            "  --gate G                 zero-accept rounds that stop drafting (0 = never; default 4)\n"
            "  --temp T                 default temperature; 0 = greedy (default 0.8; generate's is 0)\n"
            "  --top-k K, --top-p P, --min-p P, --seed S   default sampling settings\n"
            "  -n, --n-predict N        default most tokens per answer (-1 = until the model ends its turn\n"
            "                           or the context is full; default %s)\n"
            "  -c, --ctx-size N         context size (default: the model's, at most 4096)\n"
            "  -t, --threads N          threads (default: online cores)\n"
            "  --chat-template NAME     override the model's template: chatml, qwen3, qwen35, qwen36,\n"
            "                           llama3, llama31\n",
            serve ? "-1" : FRONT_CHAT_N_PREDICT_TEXT);
    if (serve)
        fprintf(f, "  --host ADDR              IPv4 address to bind (default 127.0.0.1)\n"
                   "  --port N                 port (default 8080; 0 = any free port, printed on stderr)\n"
                   "  --alias NAME             model id in responses (default: general.name, spaces as -)\n"
                   "  --queue N                requests that may wait while one runs (default 8; more: 503)\n"
                   "  --max-body BYTES         largest request body (default 1048576; more: 413)\n"
                   "  --sse-ping SECONDS       keep-alive comment on an idle stream (default 15)\n");
    fprintf(f, "  -h, --help               this help\n");
}

static bool num(const char *s, double lo, double hi, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !(v >= lo && v <= hi)) return false;
    *out = v;
    return true;
}

int front_parse(int argc, char **argv, bool serve, server_opts *o) {
    *o = (server_opts){.host = "127.0.0.1", .port = 8080, .queue_max = 8, .max_body = 1 << 20, .sse_ping_s = 15};
    o->gen = specdec_generate_default_params();
    o->gen.temperature = 0.8f;
    o->gen.n_predict = serve ? -1 : FRONT_CHAT_N_PREDICT; /* a chat answer is a turn, not a document */
    const char *cmd = serve ? "serve" : "chat";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        double x;
#define NEED() do { if (!v) { fprintf(stderr, "specdec: %s needs a value (see specdec %s --help)\n", a, cmd); return 2; } i++; } while (0)
#define NUM(lo, hi) do { NEED(); if (!num(v, lo, hi, &x)) { fprintf(stderr, "specdec: %s %s: not a number in [%g, %g]\n", a, v, (double)(lo), (double)(hi)); return 2; } } while (0)
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout, serve); return -1; }
        else if (!strcmp(a, "-m") || !strcmp(a, "--model")) { NEED(); o->model_path = v; }
        else if (!strcmp(a, "-md") || !strcmp(a, "--model-draft")) { NEED(); o->draft_path = v; }
        else if (!strcmp(a, "--spec")) {
            NEED();
            if (!specdec_spec_mode_parse(v, &o->gen.spec)) { fprintf(stderr, "specdec: --spec %s: not none, ngram, draft, eagle3, mtp or auto\n", v); return 2; }
        }
        else if (!strcmp(a, "--draft-max")) { NUM(1, 64); o->gen.draft_max = (int32_t)x; }
        else if (!strcmp(a, "--ngram-min")) { NUM(1, 8); o->gen.ngram_min = (int32_t)x; }
        else if (!strcmp(a, "--ngram-max")) { NUM(1, 8); o->gen.ngram_max = (int32_t)x; }
        else if (!strcmp(a, "--gate")) { NUM(0, 1e6); o->gen.gate = (int32_t)x; }
        else if (!strcmp(a, "--temp")) { NUM(0, 100); o->gen.temperature = (float)x; }
        else if (!strcmp(a, "--top-k")) { NUM(0, 1 << 20); o->gen.top_k = (int32_t)x; }
        else if (!strcmp(a, "--top-p")) { NUM(1e-6, 1); o->gen.top_p = (float)x; }
        else if (!strcmp(a, "--min-p")) { NUM(0, 0.999999); o->gen.min_p = (float)x; }
        else if (!strcmp(a, "--seed")) { NUM(0, 1.8e19); o->gen.seed = (uint64_t)x; }
        else if (!strcmp(a, "-n") || !strcmp(a, "--n-predict")) { NUM(-1, 1 << 30); o->gen.n_predict = (int32_t)x; }
        else if (!strcmp(a, "-c") || !strcmp(a, "--ctx-size")) { NUM(0, 1 << 24); o->n_ctx = (int)x; }
        else if (!strcmp(a, "-t") || !strcmp(a, "--threads")) { NUM(0, 1024); o->n_threads = (int)x; }
        else if (!strcmp(a, "--chat-template")) { NEED(); o->chat_template = v; }
        else if (serve && !strcmp(a, "--host")) { NEED(); o->host = v; }
        else if (serve && !strcmp(a, "--port")) { NUM(0, 65535); o->port = (int)x; }
        else if (serve && !strcmp(a, "--alias")) { NEED(); o->alias = v; }
        else if (serve && !strcmp(a, "--queue")) { NUM(1, 4096); o->queue_max = (int)x; }
        else if (serve && !strcmp(a, "--max-body")) { NUM(64, 1 << 30); o->max_body = (int)x; }
        else if (serve && !strcmp(a, "--sse-ping")) { NUM(0.05, 3600); o->sse_ping_s = x; }
        else { fprintf(stderr, "specdec: unknown option %s (see specdec %s --help)\n", a, cmd); return 2; }
#undef NUM
#undef NEED
    }
    if (o->gen.ngram_min > o->gen.ngram_max) { fprintf(stderr, "specdec: --ngram-min is above --ngram-max\n"); return 2; }
    if (!o->model_path) {
        o->model_path = FRONT_DEFAULT_TARGET;
        if (!o->draft_path && access(FRONT_DEFAULT_DRAFT, R_OK) == 0) o->draft_path = FRONT_DEFAULT_DRAFT;
    }
    if (o->gen.spec == SPECDEC_SPEC_DRAFT && !o->draft_path) {
        fprintf(stderr, "specdec: --spec draft needs -md DRAFT.gguf\n");
        return 2;
    }
    return 0;
}

/* The model id clients send back: the name with every space or control byte
 * made '-' ("specdec fixture target" -> "specdec-fixture-target"), as ids
 * are tokens in URLs and command lines. */
static void model_id_of(char *id, size_t cap, const char *name) {
    snprintf(id, cap, "%s", name);
    for (char *p = id; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f) *p = '-';
}

bool front_load(server *s) {
    specdec_error err = {0};
    if (specdec_model_load(s->opts.model_path, NULL, &s->model, &err) ||
        (s->opts.draft_path && specdec_model_load(s->opts.draft_path, NULL, &s->draft, &err))) {
        fprintf(stderr, "specdec: %s\n", err.message);
        return false;
    }
    specdec_context_params cp = specdec_context_default_params();
    cp.n_ctx = s->opts.n_ctx;
    cp.n_threads = s->opts.n_threads;
    cp.draft = s->draft;
    if (specdec_context_init(s->model, &cp, &s->ctx, &err)) {
        fprintf(stderr, "specdec: %s\n", err.message);
        return false;
    }
    if (specdec_generate_params_check(s->ctx, &s->opts.gen, &err)) { /* e.g. --spec eagle3 without a head */
        fprintf(stderr, "specdec: %s\n", err.message);
        return false;
    }
    if (specdec_chat_template_resolve(s->model, s->opts.chat_template, &s->template_family, &err)) {
        if (s->opts.chat_template) { /* an explicit bad name is a usage error */
            fprintf(stderr, "specdec: %s\n", err.message);
            return false;
        }
        s->template_family = NULL;
        snprintf(s->template_error, sizeof s->template_error, "%s", err.message);
    }
    if (s->opts.alias) snprintf(s->model_id, sizeof s->model_id, "%s", s->opts.alias);
    else model_id_of(s->model_id, sizeof s->model_id, specdec_model_name(s->model));
    snprintf(s->fingerprint, sizeof s->fingerprint, "specdec-%s", specdec_version());
    return true;
}

void front_unload(server *s) {
    specdec_context_free(s->ctx);
    specdec_model_free(s->draft);
    specdec_model_free(s->model);
    s->ctx = NULL;
    s->draft = s->model = NULL;
}
