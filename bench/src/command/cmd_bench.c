/* specdec bench: the tables of ARCHITECTURE.md §8 on a target model (and optionally
 * a draft model): per prompt class, c_v(S) with the roofline, a K sweep, and
 * synthetic acceptance. Markdown on stdout, JSON and SVG on request, a
 * progress line on stderr. The measurements live in bench_tables.c. */
#define _POSIX_C_SOURCE 200809L /* access */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "command/bench.h"
#include "cli/model_args.h"
#include "core/checked.h"
#include "format/ggml_type.h"
#include "numerics/cpu.h"
#include "numerics/pool.h"
#include "specdec.h"

static void usage(FILE *f) {
    fprintf(f,
        "usage: specdec bench [-m TARGET.gguf] [-md DRAFT.gguf] [options]\n"
        "  Speed tables (docs/PERFORMANCE.md): per prompt class greedy vs speculative (ngram, draft, auto),\n"
        "  c_v(S) for S = 1..17 with the roofline, a K sweep 1..16, synthetic acceptance (oracle drafter).\n"
        "options:\n"
        "  -m FILE          target model (GGUF; default " CLI_DEFAULT_TARGET ")\n"
        "  -md FILE         draft model with the same vocabulary (enables the draft and auto drafters;\n"
        "                   default " CLI_DEFAULT_DRAFT " when -m is not given); given twice, or\n"
        "                   a file of architecture eagle3: an EAGLE-3 head (the eagle3 drafter, and auto\n"
        "                   uses it instead of the draft model; default " CLI_DEFAULT_EAGLE3 ")\n"
        "  --draft-b FILE   a second draft model for the ab table (same vocabulary; needs -md and\n"
        "                   --tables ab)\n"
        "  --prompts DIR    prompt files *.txt, first line 'class: NAME' or name prefix (default bench/prompts)\n"
        "  -n N             tokens generated per run (default 128)\n"
        "  --reps R         runs per figure; speeds are medians (default 3)\n"
        "  -t T             threads; 0 = online cores (default 2)\n"
        "  -k K             draft tokens per round (default 8)\n"
        "  --tables LIST    any of classes,cv,ksweep,oracle,rollback,window,gate,ab,experts (default\n"
        "                   classes,cv,ksweep,oracle,rollback). rollback: hybrid targets only, each\n"
        "                   rollback discipline at the --alphas; window: hybrid targets only, the window\n"
        "                   discipline's S/K sweep (--windows x --ks, K < S) at --window-alpha; gate:\n"
        "                   speculation at α = 0 with the decode defaults (gate on) against greedy (the\n"
        "                   oracle, the same at the draft's cost, the draft model, the MTP head);\n"
        "                   ab: draft A (-md) vs draft B (--draft-b), alternated in one run: step ms, r,\n"
        "                   the oracle at the --alphas paying each draft's time, each draft itself;\n"
        "                   experts: MoE targets only, distinct experts per layer u(S), S = 1..17, on\n"
        "                   windows of the prompts' text, the expert bytes read and the c_v(S) they predict\n"
        "  --oracle-gate 0|1 oracle table: 1 = the decode defaults (adaptive K up to -k, gate on)\n"
        "                   instead of a fixed K = -k (default 0)\n"
        "  --windows LIST   window sizes S of the window table, 2..64 (default 9,13,17)\n"
        "  --ks LIST        draft lengths K of the window table, 1..16 (default 4,6,8,12,16)\n"
        "  --window-alpha A the oracle's α in the window table (default 0.7)\n"
        "  --drafters LIST  drafters of the class table: any of ngram,draft,auto,eagle3,mtp, or none (default\n"
        "                   all; mtp: the target's MTP block, qwen35 files with nextn_predict_layers 1)\n"
        "  --gate G         class table: zero-accept rounds that close the hit-rate gate, 0 = never\n"
        "                   (default: the decode default)\n"
        "  --temp T         class table: sample at temperature T instead of greedy (default 0); each\n"
        "                   rep r uses seed r of --seeds for the plain run and every drafter, and\n"
        "                   LOSSLESS compares each speculative output with the plain one of its seed\n"
        "  --seeds LIST     class table at --temp > 0: sampling seeds, one per rep in turn (default 42)\n"
        "  --fixed-k        class table: every round drafts -k tokens (default: adaptive K)\n"
        "  -ctk, --cache-type-k T, -ctv, --cache-type-v T\n"
        "                   the target's KV cache types (f16 | f32 | bf16 | q8_0 | q4_0 | q4_1 | iq4_nl |\n"
        "                   q5_0 | q5_1; default f16)\n"
        "  --no-repack      read every model from its mapped file, no repacked copy (as generate)\n"
        "  --isa NAME       kernels: scalar, avx2, avx512 or neon (default: the best this CPU runs)\n"
        "  --alphas LIST    synthetic acceptance rates (default 0.5,0.7,0.9)\n"
        "  --seed N         seed of the oracle drafter's corruption (default 1)\n"
        "  --membw-mb M     array size of the bandwidth probe in MiB, >> last-level cache (default 256)\n"
        "  --json FILE      the same data as JSON\n"
        "  --plot FILE      SVG: c_v(S) and speedup vs K (needs the cv table in --tables)\n"
        "  --greedy-ids TEXT  only print the greedy token ids of TEXT (n tokens) and exit\n"
        "  --trace FILE     replay an agentic trace (bench/traces/) sharing one suffix memory: greedy,\n"
        "                   ngram, suffix and auto; takes only -m, -md, -n, -k, -t, --reps and\n"
        "                   --suffix-tokens N (the memory's budget, default 16384)\n"
        CLI_DEFAULT_MODELS_HELP);
}

static int usage_error(const char *msg, const char *arg) {
    fprintf(stderr, "specdec: %s%s%s%s (see specdec bench --help)\n", msg, arg ? " '" : "", arg ? arg : "",
            arg ? "'" : "");
    return 2;
}

static bool parse_tables(bench_opts *o, const char *list) {
    o->t_classes = o->t_cv = o->t_ksweep = o->t_oracle = o->t_rollback = o->t_window = o->t_gate = o->t_ab = false;
    o->t_experts = false;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        if (!strcmp(tok, "classes")) o->t_classes = true;
        else if (!strcmp(tok, "cv")) o->t_cv = true;
        else if (!strcmp(tok, "ksweep")) o->t_ksweep = true;
        else if (!strcmp(tok, "oracle")) o->t_oracle = true;
        else if (!strcmp(tok, "rollback")) o->t_rollback = true;
        else if (!strcmp(tok, "window")) o->t_window = true;
        else if (!strcmp(tok, "gate")) o->t_gate = true;
        else if (!strcmp(tok, "ab")) o->t_ab = true;
        else if (!strcmp(tok, "experts")) o->t_experts = true;
        else return false;
    }
    return true;
}

static bool parse_drafters(bench_opts *o, const char *list) {
    memset(o->drafters, 0, sizeof o->drafters);
    if (!strcmp(list, "none")) return true;
    char buf[128];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        int d = 0;
        while (d < BENCH_N_DRAFTERS && strcmp(tok, BENCH_DRAFTER_NAMES[d])) d++;
        if (d == BENCH_N_DRAFTERS) return false;
        o->drafters[d] = true;
    }
    return true;
}

/* One acceptance rate in [0, 1]. */
static bool parse_alpha(const char *s, double *a) {
    char *end;
    *a = strtod(s, &end);
    return *s && !*end && *a >= 0 && *a <= 1;
}

static bool parse_alphas(bench_opts *o, const char *list) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s", list);
    o->n_alphas = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ","))
        if (o->n_alphas == BENCH_MAX_ALPHAS || !parse_alpha(tok, &o->alphas[o->n_alphas++])) return false;
    return o->n_alphas > 0;
}

static bool parse_int(const char *s, int lo, int hi, int *out) {
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == '\0' || *end || v < lo || v > hi) return false;
    *out = (int)v;
    return true;
}

/* A comma list of at most max integers in lo..hi into out[]. */
static bool parse_ints(const char *list, int lo, int hi, int max, int *out, int *n) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s", list);
    *n = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ","))
        if (*n == max || !parse_int(tok, lo, hi, &out[(*n)++])) return false;
    return *n > 0;
}

static bool parse_u64(const char *s, uint64_t *out) {
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || *s < '0' || *s > '9' || *end) return false;
    *out = v;
    return true;
}

static bool parse_seeds(bench_opts *o, const char *list) {
    char buf[512];
    if (strlen(list) >= sizeof buf) return false;
    snprintf(buf, sizeof buf, "%s", list);
    o->n_seeds = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ","))
        if (o->n_seeds == BENCH_MAX_SEEDS || !parse_u64(tok, &o->seeds[o->n_seeds++])) return false;
    return o->n_seeds > 0;
}

/* The options bench shares with generate, by their flag in the option table
 * (specdec.h): read by the table, so they take the same spellings, ranges
 * and messages as everywhere else. */
static const char *const SHARED[] = {"--model", "--model-draft", "--n-predict", "--threads",      "--seed",
                                     "--temp",  "--gate",        "--fixed-k",   "--cache-type-k", "--cache-type-v",
                                     "--no-repack"};

static const specdec_option *shared_option(const char *a) {
    const specdec_option *opt = a[0] == '-' ? specdec_option_find(a) : NULL;
    for (size_t i = 0; opt && i < sizeof SHARED / sizeof *SHARED; i++)
        if (!strcmp(opt->flag, SHARED[i])) return opt;
    return NULL;
}

/* The value the table just set in so to its place in o. Returns 0, or the exit code. */
static int take_shared(bench_opts *o, const specdec_options *so, const specdec_option *opt, const char *a,
                       const char *v) {
    const char *f = opt->flag;
    if (!strcmp(f, "--model")) o->target = so->model_path;
    else if (!strcmp(f, "--model-draft")) { /* given twice: the second is the head */
        if (o->draft && o->head) return usage_error("-md at most twice", so->draft_path);
        *(o->draft ? &o->head : &o->draft) = so->draft_path;
    } else if (!strcmp(f, "--n-predict")) {
        if (so->gen.n_predict < 2)
            return fprintf(stderr, "specdec: %s %s: bench needs at least 2 tokens per run\n", a, v), 2;
        o->n_predict = so->gen.n_predict;
    } else if (!strcmp(f, "--threads")) o->threads = so->n_threads > 0 ? so->n_threads : sd_default_threads();
    else if (!strcmp(f, "--seed")) o->seed = so->gen.seed;
    else if (!strcmp(f, "--temp")) o->temp = strtod(v, NULL); /* the table checked it; the report shows it as written */
    else if (!strcmp(f, "--gate")) o->gate = so->gen.gate;
    else if (!strcmp(f, "--fixed-k")) o->fixed_k = so->gen.fixed_k;
    else if (!strcmp(f, "--no-repack")) o->no_repack = so->no_repack;
    else if (!strcmp(f, "--cache-type-k")) o->kv_type_k = (uint32_t)ggml_type_from_name(specdec_cache_type_name(so->cache_type_k));
    else if (!strcmp(f, "--cache-type-v")) o->kv_type_v = (uint32_t)ggml_type_from_name(specdec_cache_type_name(so->cache_type_v));
    return 0;
}

/* bench's own options, each taking a value. */
static bool known_option(const char *a) {
    static const char *const names[] = {"--draft-b", "--prompts", "--json", "--plot", "--greedy-ids", "--reps",
                                        "-k", "--membw-mb", "--tables", "--drafters", "--alphas", "--windows", "--ks",
                                        "--window-alpha", "--oracle-gate", "--seeds", "--isa"};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(a, names[i])) return true;
    return false;
}

/* Returns 0 to go on, else the exit code (2 usage, or 0 after --help). */
static int parse_args(int argc, char **argv, bench_opts *o, const char **greedy_text) {
    *o = (bench_opts){.prompts_dir = "bench/prompts", .n_predict = 128, .reps = 3, .threads = 2, .k = 8, .seed = 1,
                        .kv_type_k = GGML_TYPE_F16, .kv_type_v = GGML_TYPE_F16,
                        .membw_mb = 256, .window_alpha = 0.7, .gate = -1,
                        .n_seeds = 1, .seeds = {42}};
    parse_tables(o, "classes,cv,ksweep,oracle,rollback");
    parse_alphas(o, "0.5,0.7,0.9");
    parse_ints("9,13,17", 2, 64, BENCH_MAX_WINDOWS, o->windows, &o->n_windows);
    parse_ints("4,6,8,12,16", 1, BENCH_MAX_K, BENCH_MAX_KS, o->ks, &o->n_ks);
    parse_drafters(o, "ngram,draft,auto,eagle3,mtp");
    specdec_options so = specdec_options_default();
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) { usage(stdout); return -1; }
        const specdec_option *opt = shared_option(a);
        if (opt) {
            specdec_error err = {0};
            const char *v = opt->type == SPECDEC_OPTION_FLAG ? NULL : i + 1 < argc ? argv[++i] : NULL;
            if (specdec_option_set(&so, opt, a, v, &err) != SPECDEC_OK) return usage_error(err.message, NULL);
            int rc = take_shared(o, &so, opt, a, v);
            if (rc) return rc;
            continue;
        }
        if (!known_option(a)) return usage_error("unknown option", a);
        if (i + 1 >= argc) return usage_error("missing value for", a);
        const char *v = argv[++i];
        if (!strcmp(a, "--draft-b")) o->draft_b = v;
        else if (!strcmp(a, "--prompts")) o->prompts_dir = v;
        else if (!strcmp(a, "--json")) o->json = v;
        else if (!strcmp(a, "--plot")) o->plot = v;
        else if (!strcmp(a, "--greedy-ids")) *greedy_text = v;
        else if (!strcmp(a, "--reps")) { if (!parse_int(v, 1, 64, &o->reps)) return usage_error("bad --reps (1..64)", v); }
        else if (!strcmp(a, "-k")) { if (!parse_int(v, 1, BENCH_MAX_K, &o->k)) return usage_error("bad -k (1..16)", v); }
        else if (!strcmp(a, "--membw-mb")) { if (!parse_int(v, 1, 1 << 16, &o->membw_mb)) return usage_error("bad --membw-mb", v); }
        else if (!strcmp(a, "--tables")) { if (!parse_tables(o, v)) return usage_error("bad --tables (any of classes,cv,ksweep,oracle,rollback,window,gate,ab)", v); }
        else if (!strcmp(a, "--windows")) { if (!parse_ints(v, 2, 64, BENCH_MAX_WINDOWS, o->windows, &o->n_windows)) return usage_error("bad --windows (at most 4 of 2..64)", v); }
        else if (!strcmp(a, "--ks")) { if (!parse_ints(v, 1, BENCH_MAX_K, BENCH_MAX_KS, o->ks, &o->n_ks)) return usage_error("bad --ks (at most 8 of 1..16)", v); }
        else if (!strcmp(a, "--window-alpha")) { if (!parse_alpha(v, &o->window_alpha)) return usage_error("bad --window-alpha (in [0, 1])", v); }
        else if (!strcmp(a, "--drafters")) { if (!parse_drafters(o, v)) return usage_error("bad --drafters (any of ngram,draft,auto,eagle3,mtp, or none)", v); }
        else if (!strcmp(a, "--oracle-gate")) {
            int f;
            if (!parse_int(v, 0, 1, &f)) return usage_error("bad --oracle-gate (0 or 1)", v);
            o->oracle_gate = f;
        }
        else if (!strcmp(a, "--seeds")) { if (!parse_seeds(o, v)) return usage_error("bad --seeds (at most 16 comma-separated integers)", v); }
        else if (!strcmp(a, "--alphas")) { if (!parse_alphas(o, v)) return usage_error("bad --alphas", v); }
        else if (!strcmp(a, "--isa")) {
            sd_isa isa;
            sd_err e = {0};
            if (!sd_isa_parse(v, &isa)) return usage_error("bad --isa (scalar, avx2, avx512 or neon)", v);
            if (sd_cpu_force_isa(isa, &e) != SD_OK) return usage_error(e.msg, NULL);
        }
        else return usage_error("unknown option", a);
    }
    if (o->plot && !o->t_cv && !o->t_ksweep && !o->t_oracle) return usage_error("--plot needs the cv table", NULL);
    if (o->draft_b && !o->t_ab) return usage_error("--draft-b needs --tables ab", NULL);
    return 0;
}

/* 0 if path can be written, else the errno. Checked before the run, since
 * writing only happens (and would only fail) after the whole run. Opening for
 * append leaves an existing file as it is; a new one is removed again. */
static int output_errno(const char *path) {
    bool existed = access(path, F_OK) == 0;
    FILE *f = fopen(path, "a");
    if (!f) return errno;
    fclose(f);
    if (!existed) remove(path);
    return 0;
}

static int check_outputs(const bench_opts *o) {
    const char *paths[] = {o->json, o->plot};
    for (int i = 0; i < 2; i++) {
        int e = paths[i] ? output_errno(paths[i]) : 0;
        if (e) return fprintf(stderr, "specdec: %s: cannot write: %s\n", paths[i], strerror(e)), 1;
    }
    return 0;
}

static int32_t needed_ctx(const bench_env *e) {
    int32_t m = 0;
    for (int i = 0; i < e->n_prompts; i++)
        if (e->prompts[i].n_ids > m) m = e->prompts[i].n_ids;
    return m + e->o->n_predict + BENCH_MAX_S + 8;
}

/* The model's context and its lm (decode/compose.h): a hybrid model's
 * discipline is replay, the default (the rollback table switches it), with
 * a ring for the largest K. */
static sd_status env_open(sd_model *m, int32_t n_ctx, int threads, sd_context **c, sd_model_lm *lm, sd_lm_role role,
                          const bench_opts *o, sd_err *err) {
    const bool tgt = role == SD_LM_TARGET; /* a draft's cache stays f16, as in the API */
    sd_status st = sd_context_init_kv(m, n_ctx, 64, threads, tgt ? o->kv_type_k : GGML_TYPE_F16,
                                      tgt ? o->kv_type_v : GGML_TYPE_F16, c, err);
    return st ? st : sd_compose_lm(lm, *c, m, SD_ROLLBACK_REPLAY, BENCH_MAX_K + 1, role, err);
}

/* The benchmark measures the internals directly (model/model.h), not
 * through the public API; a default model path that cannot be opened gets
 * the same hint as in generate. */
static sd_status load_model(const char *path, bool no_repack, sd_model **m, sd_err *err) {
    const sd_load_opts lo = {.no_repack = no_repack};
    sd_status st = sd_model_load_opts(path, &lo, m, err);
    const char *hint = cli_default_model_hint(path);
    if (st == SD_ERR_IO && hint && err) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        sd_err_set(err, st, "%s (%s)", msg, hint);
    }
    return st;
}

/* The ab table's draft B: a draft model (not a head) with the target's vocabulary. */
static sd_status load_draft_b(bench_env *e, const char *path, sd_err *err) {
    sd_status st = load_model(path, e->o->no_repack, &e->bm, err);
    if (!st && e->bm->hp.arch == SD_ARCH_EAGLE3)
        st = sd_err_set(err, SD_ERR_ARG, "--draft-b %s: an EAGLE-3 head, not a draft model", path);
    if (!st) st = sd_lm_check_same_vocab(e->tm, e->bm, err);
    return st;
}

/* Loads the models, the prompts (or the one --greedy-ids text), the contexts. */
static sd_status env_init(bench_env *e, const bench_opts *o, const char *greedy_text, sd_err *err) {
    memset(e, 0, sizeof *e);
    e->o = o;
    sd_status st = load_model(o->target, o->no_repack, &e->tm, err);
    if (!st && o->draft) st = load_model(o->draft, o->no_repack, &e->dm, err);
    if (!st && o->head) st = load_model(o->head, o->no_repack, &e->hm, err);
    e->dm_path = o->draft;
    if (!st && e->dm && e->dm->hp.arch == SD_ARCH_EAGLE3) { /* the -md file was the head */
        sd_model *t = e->hm;
        e->hm = e->dm, e->dm = t, e->dm_path = o->head;
    }
    if (!st && e->hm && e->hm->hp.arch != SD_ARCH_EAGLE3)
        st = sd_err_set(err, SD_ERR_ARG, "two draft models given (-md twice): the second must be an EAGLE-3 head");
    if (!st && e->dm && e->dm->hp.arch == SD_ARCH_EAGLE3)
        st = sd_err_set(err, SD_ERR_ARG, "two EAGLE-3 heads given (-md twice)");
    if (!st && e->dm) st = sd_lm_check_same_vocab(e->tm, e->dm, err);
    if (!st && e->hm) st = sd_eagle3_check(e->hm, e->tm, err);
    if (!st && o->draft_b) st = load_draft_b(e, o->draft_b, err);
    if (!st && greedy_text) {
        e->prompts = sd_calloc(1, sizeof *e->prompts);
        if (!e->prompts) return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
        e->n_prompts = 1;
        size_t n = 0;
        snprintf(e->prompts[0].name, sizeof e->prompts[0].name, "greedy-ids");
        st = sd_tokenize(e->tm->tok, greedy_text, strlen(greedy_text), true, false, &e->prompts[0].ids, &n, err);
        e->prompts[0].n_ids = (int32_t)n;
        if (!st && n < 1) st = sd_err_set(err, SD_ERR_ARG, "--greedy-ids: empty prompt");
    } else if (!st) {
        st = bench_prompts_load(e, o->prompts_dir, err);
    }
    if (st) return st;
    int32_t n_ctx = needed_ctx(e);
    st = env_open(e->tm, n_ctx, o->threads, &e->tc, &e->tl, SD_LM_TARGET, o, err);
    if (!st && e->dm) st = env_open(e->dm, n_ctx, o->threads, &e->dc, &e->dl, SD_LM_DRAFT, o, err);
    if (!st && e->bm) st = env_open(e->bm, n_ctx, o->threads, &e->bc, &e->bl, SD_LM_DRAFT, o, err);
    if (st) return st;
    e->scratch_ids = sd_malloc_array((size_t)o->n_predict, sizeof *e->scratch_ids);
    e->logits = sd_malloc_array(BENCH_MAX_S, (size_t)e->tm->hp.n_vocab * sizeof *e->logits);
    if (!e->scratch_ids || !e->logits) return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    return SD_OK;
}

static void env_free(bench_env *e) {
    bench_prompts_free(e);
    free(e->scratch_ids);
    free(e->logits);
    sd_model_lm_free(&e->tl);
    sd_model_lm_free(&e->dl);
    sd_model_lm_free(&e->bl);
    sd_context_free(e->bc);
    sd_context_free(e->dc);
    sd_context_free(e->tc);
    sd_model_free(e->bm);
    sd_model_free(e->dm);
    sd_model_free(e->hm);
    sd_model_free(e->tm);
}

static sd_status print_greedy_ids(bench_env *e, sd_err *err) {
    sd_spec_params sp = bench_params(e->o, e->o->k, false, false);
    bench_run run;
    sd_status st = bench_generate(e, &e->prompts[0], NULL, &sp, NULL, 0, &run, err);
    if (st) return st;
    for (int32_t i = 0; i < run.n; i++) printf("%s%d", i ? " " : "", e->scratch_ids[i]);
    printf("\n");
    return SD_OK;
}

static sd_status run_tables(bench_env *e, bench_results *r, sd_err *err) {
    const bench_opts *o = e->o;
    sd_status st = SD_OK;
    /* c_v is measured whenever a later table needs it for its prediction. */
    bool need_cv = o->t_cv || o->t_ksweep || o->t_oracle;
    if (o->t_classes) st = bench_classes(e, r, err);
    if (!st && need_cv) st = bench_cv_measure(e, r, err);
    if (!st && o->t_ksweep) st = bench_ksweep(e, r, err);
    if (!st && o->t_oracle) st = bench_oracle(e, r, err);
    if (!st && o->t_rollback) st = bench_rollback(e, r, err);
    if (!st && o->t_window) st = bench_window(e, r, err);
    if (!st && o->t_gate) st = bench_gate(e, r, err);
    if (!st && o->t_ab) st = bench_ab(e, r, err);
    if (!st && o->t_experts) st = bench_experts(e, r, err);
    bench_progress("done");
    if (isatty(STDERR_FILENO)) fprintf(stderr, "\n");
    return st;
}

int bench_trace_main(int argc, char **argv); /* bench_trace.c */

int cmd_bench(int argc, char **argv) {
    for (int i = 1; i < argc; i++) /* the trace replay has options of its own */
        if (!strcmp(argv[i], "--trace")) return bench_trace_main(argc, argv);
    bench_opts o;
    const char *greedy_text = NULL;
    int rc = parse_args(argc, argv, &o, &greedy_text);
    if (rc) return rc < 0 ? 0 : rc;
    if (sd_cpu_env_error()) return usage_error(sd_cpu_env_error(), NULL);
    if ((rc = check_outputs(&o))) return rc;
    if (!o.target) { /* the bundled fixtures; their draft model and EAGLE-3 head unless -md says otherwise */
        o.target = CLI_DEFAULT_TARGET;
        if (!o.draft) o.draft = cli_default_draft(NULL, true), o.head = cli_default_eagle3(NULL, true);
    }
    if (o.t_ab && (!o.draft || !o.draft_b)) return usage_error("--tables ab needs -md and --draft-b", NULL);
    if (o.threads <= 0) o.threads = sd_default_threads();
    bench_env e;
    bench_results r;
    memset(&r, 0, sizeof r);
    sd_err err = {0};
    sd_status st = env_init(&e, &o, greedy_text, &err);
    if (!st && greedy_text) st = print_greedy_ids(&e, &err);
    else if (!st) {
        st = run_tables(&e, &r, &err);
        if (!st) bench_print_markdown(&e, &r);
        if (!st && o.json) st = bench_write_json(&e, &r, o.json, &err);
        if (!st && o.plot) st = bench_write_svg(&r, o.plot, &err);
    }
    free(r.rows);
    env_free(&e);
    if (st) {
        fprintf(stderr, "specdec: %s\n", err.msg);
        return 1;
    }
    return 0;
}
