#define _POSIX_C_SOURCE 200809L
#include "server/front.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The generation options are the library's option table (the same flags,
 * ranges and help as generate and chat); the template and HTTP flags are ours. */
static void usage(FILE *f, const specdec_options *defaults) {
    char *table = NULL;
    size_t len = 0;
    specdec_error err = {0};
    if (specdec_options_help(defaults, &table, &len, &err) != SPECDEC_OK) {
        fprintf(stderr, "specdec: %s\n", err.message);
        return;
    }
    fprintf(f, "usage: specdec serve [-m MODEL.gguf] [-md DRAFT.gguf] [options]\n\n"
               "An OpenAI-compatible HTTP server (/v1/chat/completions, /v1/completions, /tokenize,\n"
               "/detokenize, /apply-template, /props, /metrics, /health) with a chat page at /.\n"
               "Per request, \"speculative\": false turns drafting off; responses carry timings.\n"
               "The sampling settings and -n below are each request's defaults.\n\n");
    fprintf(f, "%s", table);
    specdec_free(table);
    fprintf(f, "  --chat-template NAME     override the model's template: chatml, qwen3, qwen35, qwen36,\n"
               "                           llama3, llama31\n"
               "  --host ADDR              IPv4 address to bind (default 127.0.0.1)\n"
               "  --port N                 port, [0, 65535] (default 8080; 0 = any free port, printed on stderr)\n"
               "  --alias NAME             model id in responses (default: general.name, spaces as -)\n"
               "  --queue N                requests that may wait while every slot runs, [1, 4096] (default 8; more: 503)\n"
               "  --parallel N             requests served at once, batched into one forward per step, [1, 64]\n"
               "                           (default from the machine: online cores / 4 in [1, 4]; here %d).\n"
               "                           Each slot holds its own context (-c positions); answers are the same\n"
               "                           as served one at a time. Token trees (--tree) are not batched: a\n"
               "                           request verifies chains (the same text)\n"
               "  --max-body BYTES         largest request body, [64, 1073741824] (default 1048576; more: 413)\n"
               "  --sse-ping SECONDS       keep-alive comment on an idle stream, [0.05, 3600] (default 15)\n"
               "  --cache-ram MIB          prefix cache over many conversations: states kept per token prefix,\n"
               "                           least recently used evicted, [0, 1048576] (default 2048; 0 = off);\n"
               "                           shared by the --parallel slots\n"
               "  --drain-timeout SECONDS  on SIGTERM, stop accepting and let in-flight requests finish for up\n"
               "                           to this long, then exit 0, [0, 86400] (default 30; SIGINT: at once)\n"
               "  --no-commit-memory       do not make the slots' KV caches, hidden rows and step buffers\n"
               "                           resident at start (default: they are, so the RSS starts at its\n"
               "                           working size instead of creeping up to it as requests grow)\n"
               "  --suffix-tokens N        memory of earlier outputs for suffix drafting (--spec suffix, auto),\n"
               "                           in tokens, LRU; [0, 2147483647] (default 16384; 0 = none);\n"
               "                           shared by the --parallel slots\n"
               "Exposure (docs/SECURITY.md):\n"
               "  --api-key KEY            require Authorization: Bearer KEY on the API routes (repeatable)\n"
               "  --api-key-file FILE      keys, one per line (# comments and blank lines skipped)\n"
               "  --metrics-public         GET /metrics without a key (default: it needs one when keys are set)\n"
               "  --cors-origin ORIGIN     a browser origin allowed to call the API (repeatable; * = any;\n"
               "                           default none: preflights are refused)\n"
               "  --max-prompt N           prompt tokens a request may bring, [1, 2147483647] (default: the context)\n"
               "  --max-tokens N           cap on a request's max_tokens, [1, 2147483647] (default none; more: 400)\n"
               "  --request-timeout S      a request's headers and body must arrive within S seconds,\n"
               "                           [0.1, 86400] (default 30; slower: closed)\n"
               "  --write-timeout S        a stream whose client reads nothing for S seconds is cancelled and\n"
               "                           closed, [0.1, 86400] (default 60)\n"
               "  --max-conns N            open connections, [1, 65536] (default 256; more: refused)\n"
               "  --max-conns-per-ip N     open connections from one address, [1, 65536] (default 64)\n",
            front_default_parallel());
    fprintf(f, "  -h, --help               this help\n"
               "\nTemperature defaults to 0.8 here (generate's is 0).\n"
               "Without -m, the draft model " FRONT_DEFAULT_DRAFT " is paired when that file exists.\n"
               FRONT_DEFAULT_MODELS_HELP);
}

/* A slot costs a context (n_ctx positions of KV cache), so the default stays
 * at 4 however many cores there are; --parallel asks for more. */
int front_default_parallel(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN) / 4;
    return n < 1 ? 1 : n > 4 ? 4 : (int)n;
}

/* A number of the HTTP flags in [lo, hi]; the message names the range as
 * --help does (whole numbers in full, not 1.04858e+06). */
static bool num_in(const char *flag, const char *s, double lo, double hi, bool whole, double *out) {
    char *end;
    double v = strtod(s, &end);
    const char *what = end == s || *end || isnan(v) ? "not a number in"
                       : !(v >= lo && v <= hi)      ? "out of range"
                       : whole && v != floor(v)     ? "not a whole number in"
                                                    : NULL;
    if (what) {
        fprintf(stderr, "specdec: %s %s: %s [%.10g, %.10g]\n", flag, s, what, lo, hi);
        return false;
    }
    *out = v;
    return true;
}
static bool num(const char *flag, const char *s, double lo, double hi, double *out) {
    return num_in(flag, s, lo, hi, false, out);
}
/* A count (ports, slots, bytes, tokens): a fraction is refused, not cut off. */
static bool count(const char *flag, const char *s, double lo, double hi, double *out) {
    return num_in(flag, s, lo, hi, true, out);
}

/* serve's own flags (template, HTTP); 0 handled, 1 not ours, 2 usage error. */
static int own_flag(server_opts *o, const char *a, const char *v) {
    double x;
    if (!strcmp(a, "--chat-template")) o->chat_template = v;
    else if (!strcmp(a, "--host")) o->host = v;
    else if (!strcmp(a, "--alias")) o->alias = v;
    else if (!strcmp(a, "--port")) { if (!count(a, v, 0, 65535, &x)) return 2; o->port = (int)x; }
    else if (!strcmp(a, "--queue")) { if (!count(a, v, 1, 4096, &x)) return 2; o->queue_max = (int)x; }
    else if (!strcmp(a, "--parallel")) { if (!count(a, v, 1, 64, &x)) return 2; o->parallel = (int)x; }
    else if (!strcmp(a, "--max-body")) { if (!count(a, v, 64, 1 << 30, &x)) return 2; o->max_body = (int)x; }
    else if (!strcmp(a, "--sse-ping")) { if (!num(a, v, 0.05, 3600, &x)) return 2; o->sse_ping_s = x; }
    else if (!strcmp(a, "--cache-ram")) { if (!num(a, v, 0, 1 << 20, &x)) return 2; o->cache_ram_mib = x; }
    else if (!strcmp(a, "--drain-timeout")) { if (!num(a, v, 0, 86400, &x)) return 2; o->drain_timeout_s = x; }
    else if (!strcmp(a, "--suffix-tokens")) { if (!count(a, v, 0, 2147483647.0, &x)) return 2; o->suffix_tokens = (int64_t)x; }
    else if (!strcmp(a, "--api-key")) { if (!auth_add_key(&o->auth, v, "--api-key")) return 2; }
    else if (!strcmp(a, "--api-key-file")) { if (!auth_add_key_file(&o->auth, v)) return 2; }
    else if (!strcmp(a, "--cors-origin")) { if (!auth_add_origin(&o->auth, v)) return 2; }
    else if (!strcmp(a, "--max-prompt")) { if (!count(a, v, 1, 2147483647.0, &x)) return 2; o->max_prompt = (int)x; }
    else if (!strcmp(a, "--max-tokens")) { if (!count(a, v, 1, 2147483647.0, &x)) return 2; o->max_tokens = (int)x; }
    else if (!strcmp(a, "--request-timeout")) { if (!num(a, v, 0.1, 86400, &x)) return 2; o->request_timeout_s = x; }
    else if (!strcmp(a, "--write-timeout")) { if (!num(a, v, 0.1, 86400, &x)) return 2; o->write_timeout_s = x; }
    else if (!strcmp(a, "--max-conns")) { if (!count(a, v, 1, 65536, &x)) return 2; o->max_conns = (int)x; }
    else if (!strcmp(a, "--max-conns-per-ip")) { if (!count(a, v, 1, 65536, &x)) return 2; o->max_conns_per_ip = (int)x; }
    else return 1;
    return 0;
}

static bool is_own_flag(const char *a) {
    static const char *const own[] = {"--chat-template", "--host", "--alias", "--port", "--queue", "--max-body",
                                      "--sse-ping", "--parallel", "--cache-ram", "--drain-timeout", "--suffix-tokens",
                                      "--api-key", "--api-key-file", "--cors-origin", "--max-prompt",
                                      "--max-tokens", "--request-timeout", "--write-timeout", "--max-conns",
                                      "--max-conns-per-ip", "--metrics-public", "--no-commit-memory"};
    for (size_t i = 0; i < sizeof own / sizeof *own; i++)
        if (!strcmp(a, own[i])) return true;
    return false;
}

/* The table's options into o's fields. */
static void take_options(server_opts *o, const specdec_options *so) {
    o->gen = so->gen;
    o->model_path = so->model_path;
    o->draft_path = so->draft_path;
    o->n_ctx = so->n_ctx;
    o->n_threads = so->n_threads;
    o->cache_type_k = so->cache_type_k;
    o->cache_type_v = so->cache_type_v;
    o->no_repack = so->no_repack;
}

int front_parse(int argc, char **argv, server_opts *o) {
    *o = (server_opts){.host = "127.0.0.1", .port = 8080, .queue_max = 8, .max_body = 1 << 20, .sse_ping_s = 15,
                      .cache_ram_mib = 2048, .drain_timeout_s = 30, .suffix_tokens = FRONT_SUFFIX_TOKENS,
                      .request_timeout_s = 30, .write_timeout_s = 60, .max_conns = 256, .max_conns_per_ip = 64};
    specdec_options so = specdec_options_default();
    so.gen.temperature = 0.8f;
    so.gen.n_predict = -1; /* until the end of turn or a full context */
    so.model_path = FRONT_DEFAULT_TARGET;
    bool model_given = false;
    specdec_error err = {0};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) { usage(stdout, &so); return -1; }
        const specdec_option *opt = a[0] == '-' ? specdec_option_find(a) : NULL;
        bool own = !opt && is_own_flag(a);
        if (!opt && !own) { fprintf(stderr, "specdec: unknown option %s (see specdec serve --help)\n", a); return 2; }
        if (own && !strcmp(a, "--metrics-public")) { o->auth.metrics_public = true; continue; } /* takes no value */
        if (own && !strcmp(a, "--no-commit-memory")) { o->no_commit_memory = true; continue; }
        const char *v = opt && opt->type == SPECDEC_OPTION_FLAG ? NULL : i + 1 < argc ? argv[++i] : NULL;
        if (own && !v) { fprintf(stderr, "specdec: %s needs a value (see specdec serve --help)\n", a); return 2; }
        if (own && own_flag(o, a, v) != 0) return 2;
        if (opt && specdec_option_set(&so, opt, a, v, &err) != SPECDEC_OK) {
            fprintf(stderr, "specdec: %s (see specdec serve --help)\n", err.message);
            return 2;
        }
        if (opt && !strcmp(opt->flag, "--model")) model_given = true;
    }
    if (specdec_options_check(&so, &err) != SPECDEC_OK) { fprintf(stderr, "specdec: %s\n", err.message); return 2; }
    take_options(o, &so);
    if (o->parallel <= 0) o->parallel = front_default_parallel();
    if (!model_given && !o->draft_path && access(FRONT_DEFAULT_DRAFT, R_OK) == 0) o->draft_path = FRONT_DEFAULT_DRAFT;
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
    specdec_model_params mp = specdec_model_default_params();
    mp.no_repack = s->opts.no_repack;
    mp.plan_n_ctx = s->opts.n_ctx; /* one slot's cache: the rule is a floor, not the --parallel total */
    mp.plan_cache_type_k = s->opts.cache_type_k;
    mp.plan_cache_type_v = s->opts.cache_type_v;
    if (specdec_model_load(s->opts.model_path, &mp, &s->model, &err) ||
        (s->opts.draft_path && specdec_model_load(s->opts.draft_path, &mp, &s->draft, &err))) {
        fprintf(stderr, "specdec: %s\n", err.message);
        return false;
    }
    if (specdec_model_repack_note(s->model))
        fprintf(stderr, "specdec: %s: %s\n", s->opts.model_path, specdec_model_repack_note(s->model));
    /* The slots of the inference thread: --parallel contexts (one for --parallel 1). */
    specdec_batch_params bp = specdec_batch_default_params();
    bp.n_slots = s->opts.parallel;
    bp.ctx.n_ctx = s->opts.n_ctx;
    bp.ctx.n_threads = s->opts.n_threads;
    bp.ctx.cache_type_k = s->opts.cache_type_k;
    bp.ctx.cache_type_v = s->opts.cache_type_v;
    bp.ctx.draft = s->draft;
    if (specdec_batch_init(s->model, &bp, &s->batch, &err)) {
        fprintf(stderr, "specdec: --parallel %d: %s\n", s->opts.parallel, err.message);
        return false;
    }
    specdec_context *c0 = specdec_batch_slot_context(s->batch, 0);
    s->n_ctx = specdec_context_n_ctx(c0);
    if (s->opts.n_ctx > specdec_model_n_ctx_train(s->model)) /* as generate warns */
        fprintf(stderr, "specdec: warning: -c %d exceeds the model's trained context %d\n", s->opts.n_ctx,
                specdec_model_n_ctx_train(s->model));
    /* --spec grammar drafts what each request's own grammar forces
     * (response_format, tools): none is needed here. */
    specdec_generate_params g0 = s->opts.gen;
    if (g0.spec == SPECDEC_SPEC_GRAMMAR && !g0.grammar) g0.spec = SPECDEC_SPEC_NONE;
    if (specdec_generate_params_check(c0, &g0, &err)) { /* e.g. --spec eagle3 without a head */
        fprintf(stderr, "specdec: %s\n", err.message);
        return false;
    }
    /* Every slot's KV cache, the hidden rows its default drafter reads (an
     * EAGLE-3 head, MTP) and the step's buffers resident from the start: a
     * slot's pages would otherwise come in as its longest request so far grows,
     * and the RSS creep up for hours to the same bound (docs/SERVER.md).
     * --no-commit-memory leaves them to come in as they are first written. */
    if (!s->opts.no_commit_memory) {
        for (int i = 0; i < s->opts.parallel; i++)
            if (specdec_context_reserve_hidden(specdec_batch_slot_context(s->batch, i), &g0, &err)) {
                fprintf(stderr, "specdec: --parallel %d: %s\n", s->opts.parallel, err.message);
                return false;
            }
        if (specdec_batch_commit_memory(s->batch, &err)) {
            fprintf(stderr, "specdec: --parallel %d: %s\n", s->opts.parallel, err.message);
            return false;
        }
    }
    if (s->opts.suffix_tokens > 0 && specdec_suffix_cache_init(s->opts.suffix_tokens, &s->suffix, &err)) {
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
    if (!s->opts.chat_template && specdec_chat_template_refusal(s->model)) /* say which renders, and why */
        fprintf(stderr, "specdec: the model's chat template cannot run (%s); using %s\n",
                specdec_chat_template_refusal(s->model), s->template_family ? s->template_family : "no template");
    if (s->opts.alias) snprintf(s->model_id, sizeof s->model_id, "%s", s->opts.alias);
    else model_id_of(s->model_id, sizeof s->model_id, specdec_model_name(s->model));
    snprintf(s->fingerprint, sizeof s->fingerprint, "specdec-%s", specdec_version());
    return true;
}

void front_unload(server *s) {
    specdec_batch_free(s->batch);
    s->batch = NULL;
    specdec_suffix_cache_free(s->suffix);
    s->suffix = NULL;
    specdec_model_free(s->draft);
    specdec_model_free(s->model);
    s->draft = s->model = NULL;
}
