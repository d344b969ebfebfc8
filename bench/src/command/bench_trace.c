/* specdec bench --trace FILE: replays an agentic-style trace (bench/traces/,
 * described in bench/README.md) — a sequence of requests that share one
 * suffix memory, as one server would see them — under plain greedy decoding
 * and under the n-gram, suffix and auto drafters, and prints one markdown
 * row per drafter: tokens per target forward, α, speedup over its own greedy
 * run, LOSSLESS (every request's tokens equal greedy's), and how much of the
 * greedy output loops.
 *
 * Trace format: lines starting with "=== " open a request (the rest of the
 * line is its name); the lines up to the next one are its prompt (the final
 * newline dropped); "{{out:N}}" in a prompt stands for the text generated for
 * request N (1-based, an earlier one), which is how multi-turn chat and
 * rewrites of a generated file are written. Lines before the first request
 * starting with '#' are comments.
 *
 * Timing: each rep runs the whole trace once per drafter, in an order that
 * rotates rep by rep; speedup is the median over reps of the trace's greedy
 * decode time over the drafter's in the same rep (decode time as the stats
 * report it: after the prefill). Uses only the public API. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "specdec.h"

enum { MAX_REQ = 64, N_MODES = 4, MAX_REPS = 15 };

typedef struct trace_req {
    char name[64];
    char *text; /* with {{out:N}} placeholders */
} trace_req;

typedef struct trace_opts {
    const char *trace, *model, *draft;
    int n_predict, reps, threads, k;
    int64_t suffix_tokens;
} trace_opts;

static const specdec_spec_mode MODES[N_MODES] = {SPECDEC_SPEC_NONE, SPECDEC_SPEC_NGRAM, SPECDEC_SPEC_SUFFIX,
                                                 SPECDEC_SPEC_AUTO};

static char *read_all(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 12, n = 0;
    char *b = malloc(cap);
    for (size_t got; b && (got = fread(b + n, 1, cap - n - 1, f)) > 0;) {
        n += got;
        if (n + 1 == cap) {
            char *nb = realloc(b, cap *= 2);
            if (!nb) free(b);
            b = nb;
        }
    }
    fclose(f);
    if (b) b[n] = 0;
    return b;
}

/* Splits the file into requests in place; returns how many, or -1 with a message. */
static int parse_trace(char *s, trace_req *r) {
    int n = 0;
    for (char *line = s; *line;) {
        char *nl = strchr(line, '\n'), *next = nl ? nl + 1 : line + strlen(line);
        if (!strncmp(line, "=== ", 4)) {
            if (n == MAX_REQ) return fprintf(stderr, "specdec: trace: more than %d requests\n", MAX_REQ), -1;
            if (n > 0 && r[n - 1].text == line)
                return fprintf(stderr, "specdec: trace: request '%s' has no prompt\n", r[n - 1].name), -1;
            if (n > 0) line[-1] = 0; /* the previous prompt ends before its last newline */
            if (nl) *nl = 0;
            snprintf(r[n].name, sizeof r[n].name, "%s", line + 4);
            r[n++].text = next;
        } else if (n == 0 && *line != '#' && line != nl)
            return fprintf(stderr, "specdec: trace: text before the first '=== ' line\n"), -1;
        line = next;
    }
    if (n == 0) return fprintf(stderr, "specdec: trace: no request ('=== NAME' line)\n"), -1;
    size_t len = strlen(r[n - 1].text);
    if (len > 0 && r[n - 1].text[len - 1] == '\n') r[n - 1].text[len - 1] = 0;
    return n;
}

/* The generated text of tokens[n]. */
static char *text_of(const specdec_model *m, const specdec_token *t, size_t n) {
    size_t cap = 64, len = 0;
    char *s = malloc(cap);
    for (size_t i = 0; s && i < n; i++) {
        char buf[256];
        int32_t k = specdec_token_to_piece(m, t[i], false, buf, sizeof buf);
        if (k < 0 || k > (int32_t)sizeof buf) k = 0;
        if (len + (size_t)k + 1 > cap) {
            char *ns = realloc(s, cap = 2 * (len + (size_t)k + 1));
            if (!ns) free(s);
            s = ns;
            if (!s) break;
        }
        memcpy(s + len, buf, (size_t)k);
        len += (size_t)k;
    }
    if (s) s[len] = 0;
    return s;
}

/* The prompt of request i with {{out:N}} replaced by the outputs so far. */
static char *expand(const trace_req *r, int i, char *const *outs) {
    size_t cap = strlen(r[i].text) + 1, len = 0;
    for (int j = 0; j < i; j++) cap += outs[j] ? strlen(outs[j]) * 4 : 0; /* each may appear a few times */
    char *s = malloc(cap + 1);
    if (!s) return NULL;
    for (const char *p = r[i].text; *p;) {
        char *end = NULL;
        long k = !strncmp(p, "{{out:", 6) && isdigit((unsigned char)p[6]) ? strtol(p + 6, &end, 10) : 0;
        if (end && !strncmp(end, "}}", 2)) { /* exactly {{out:N}}; anything else is text */
            const char *o = k >= 1 && k <= i && outs[k - 1] ? outs[k - 1] : "";
            size_t ol = strlen(o);
            if (len + ol >= cap) break;
            memcpy(s + len, o, ol);
            len += ol;
            p = end + 2;
        } else if (len + 1 < cap) s[len++] = *p++;
        else break;
    }
    s[len] = 0;
    return s;
}

/* Totals of one drafter over all reps. */
typedef struct mode_sum {
    int64_t gen, fwd, drafted, accepted;
    double ms[MAX_REPS];
    bool lossless;
    const char *drafter;
    int64_t mem_tokens;
    uint64_t mem_bytes;
} mode_sum;

/* Share of tokens t[i] (i >= 8) whose 8 tokens ending there appeared earlier in t: looping output. */
static void count_loops(const specdec_token *t, size_t n, int64_t *loop, int64_t *all) {
    for (size_t i = 8; i < n; i++) {
        bool seen = false;
        for (size_t j = 7; j < i && !seen; j++) seen = !memcmp(t + j - 7, t + i - 7, 8 * sizeof *t);
        *loop += seen;
    }
    *all += (int64_t)n;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct replay {
    const trace_opts *o;
    specdec_model *m, *dm;
    specdec_context *c;
    trace_req req[MAX_REQ];
    int n_req;
    char *outs[MAX_REQ];               /* greedy's text per request (for {{out:N}}) */
    specdec_token *ref[MAX_REQ];       /* greedy's tokens */
    size_t n_ref[MAX_REQ];
    int64_t loop, all;
} replay;

/* One pass of the trace with drafter mode k (a fresh suffix memory); adds to s. */
static int run_trace(replay *rp, int k, int rep, mode_sum *s) {
    specdec_error err = {0};
    specdec_suffix_cache *mem = NULL;
    if (specdec_suffix_cache_init(rp->o->suffix_tokens, &mem, &err)) return fprintf(stderr, "specdec: %s\n", err.message), 1;
    double ms = 0;
    int rc = 0;
    for (int i = 0; i < rp->n_req && !rc; i++) {
        char *text = expand(rp->req, i, rp->outs);
        specdec_token *t = NULL;
        size_t n = 0, nh = 0;
        specdec_generate_params gp = specdec_generate_default_params();
        gp.n_predict = rp->o->n_predict;
        gp.spec = MODES[k];
        gp.draft_max = rp->o->k;
        gp.suffix_cache = MODES[k] == SPECDEC_SPEC_NONE ? NULL : mem;
        specdec_stats st;
        specdec_context_reset(rp->c);
        if (!text || specdec_tokenize(rp->m, text, strlen(text), true, false, &t, &n, &err) ||
            specdec_generate(rp->c, t, n, &gp, NULL, NULL, &st, &err)) {
            fprintf(stderr, "specdec: trace request %s: %s\n", rp->req[i].name, text ? err.message : "out of memory");
            rc = 1;
        } else {
            const specdec_token *h = specdec_context_tokens(rp->c, &nh);
            const specdec_token *out = h + n;
            const size_t n_out = nh - n;
            if (!rp->ref[i]) { /* the first greedy pass is the reference */
                rp->ref[i] = malloc((n_out + 1) * sizeof *out);
                if (!rp->ref[i]) {
                    fprintf(stderr, "specdec: trace request %s: out of memory\n", rp->req[i].name);
                    rc = 1;
                } else
                    memcpy(rp->ref[i], out, n_out * sizeof *out);
                rp->n_ref[i] = n_out;
                rp->outs[i] = text_of(rp->m, out, n_out);
                count_loops(out, n_out, &rp->loop, &rp->all);
            } else if (n_out != rp->n_ref[i] || memcmp(out, rp->ref[i], n_out * sizeof *out))
                s->lossless = false;
            s->gen += st.n_gen > 0 ? st.n_gen - 1 : 0;
            s->fwd += st.n_target_forwards;
            s->drafted += st.n_drafted;
            s->accepted += st.n_accepted;
            s->drafter = st.drafter;
            ms += st.t_decode_ms;
        }
        specdec_free(t);
        free(text);
    }
    s->ms[rep] = ms;
    specdec_suffix_cache_info info;
    specdec_suffix_cache_get_info(mem, &info);
    s->mem_tokens = info.n_tokens;
    s->mem_bytes = info.bytes;
    specdec_suffix_cache_free(mem);
    return rc;
}

static void report(const replay *rp, mode_sum *s) {
    printf("## Trace %s (%d requests, -n %d, K %d, %d reps)\n\n", rp->o->trace, rp->n_req, rp->o->n_predict, rp->o->k,
           rp->o->reps);
    printf("greedy output that loops (8-gram seen earlier in the same output): %.0f%% of %lld tokens\n\n",
           rp->all ? 100.0 * (double)rp->loop / (double)rp->all : 0.0, (long long)rp->all);
    printf("| drafter | tokens/target forward | α | speedup vs greedy (median) | LOSSLESS | suffix memory |\n");
    printf("|---|---|---|---|---|---|\n");
    for (int k = 0; k < N_MODES; k++) {
        double ratio[MAX_REPS];
        for (int r = 0; r < rp->o->reps; r++) ratio[r] = s[k].ms[r] > 0 ? s[0].ms[r] / s[k].ms[r] : 0;
        qsort(ratio, (size_t)rp->o->reps, sizeof *ratio, cmp_double);
        char mem[64] = "-";
        if (MODES[k] == SPECDEC_SPEC_SUFFIX || MODES[k] == SPECDEC_SPEC_AUTO)
            snprintf(mem, sizeof mem, "%lld tokens, %.1f MiB", (long long)s[k].mem_tokens,
                     (double)s[k].mem_bytes / (1 << 20));
        char alpha[16] = "n/a"; /* greedy drafts nothing: no acceptance rate to show */
        if (s[k].drafted) snprintf(alpha, sizeof alpha, "%.3f", (double)s[k].accepted / (double)s[k].drafted);
        printf("| %s | %.2f | %s | %.2fx | %s |  %s |\n", k == 0 ? "greedy" : s[k].drafter,
               s[k].fwd ? (double)s[k].gen / (double)s[k].fwd : 0, alpha, ratio[rp->o->reps / 2],
               s[k].lossless ? "yes" : "NO", mem);
    }
}

static int parse(int argc, char **argv, trace_opts *o) {
    *o = (trace_opts){.model = "models/fixture-target.gguf", .n_predict = 64, .reps = 3, .threads = 2, .k = 8,
                      .suffix_tokens = 16384};
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!v) return fprintf(stderr, "specdec: bench --trace: %s needs a value\n", a), 2;
        i++;
        if (!strcmp(a, "--trace")) o->trace = v;
        else if (!strcmp(a, "-m")) o->model = v;
        else if (!strcmp(a, "-md")) o->draft = v;
        else if (!strcmp(a, "-n")) o->n_predict = atoi(v);
        else if (!strcmp(a, "--reps")) o->reps = atoi(v);
        else if (!strcmp(a, "-t")) o->threads = atoi(v);
        else if (!strcmp(a, "-k")) o->k = atoi(v);
        else if (!strcmp(a, "--suffix-tokens")) o->suffix_tokens = atoll(v);
        else return fprintf(stderr, "specdec: bench --trace: unknown option %s\n", a), 2;
    }
    if (o->n_predict < 1 || o->reps < 1 || o->reps > MAX_REPS || o->threads < 0 || o->k < 1 || o->k > 64 ||
        o->suffix_tokens < 1)
        return fprintf(stderr, "specdec: bench --trace: -n >= 1, --reps 1..%d, -k 1..64, --suffix-tokens >= 1\n",
                       MAX_REPS), 2;
    return 0;
}

int bench_trace_main(int argc, char **argv);

int bench_trace_main(int argc, char **argv) {
    trace_opts o;
    int rc = parse(argc, argv, &o);
    if (rc) return rc;
    static replay rp;
    memset(&rp, 0, sizeof rp);
    rp.o = &o;
    char *file = read_all(o.trace);
    if (!file) return fprintf(stderr, "specdec: cannot read %s\n", o.trace), 1;
    rp.n_req = parse_trace(file, rp.req);
    specdec_error err = {0};
    specdec_context_params cp = specdec_context_default_params();
    cp.n_threads = o.threads;
    cp.n_ctx = 4096;
    rc = rp.n_req < 0;
    if (!rc && (specdec_model_load(o.model, NULL, &rp.m, &err) ||
                (o.draft && specdec_model_load(o.draft, NULL, &rp.dm, &err)))) {
        fprintf(stderr, "specdec: %s\n", err.message);
        rc = 1;
    }
    cp.draft = rp.dm;
    if (!rc && specdec_context_init(rp.m, &cp, &rp.c, &err)) {
        fprintf(stderr, "specdec: %s\n", err.message);
        rc = 1;
    }
    static mode_sum s[N_MODES];
    for (int k = 0; k < N_MODES; k++) s[k] = (mode_sum){.lossless = true};
    for (int r = 0; r < o.reps && !rc; r++) {
        if (r == 0) rc = run_trace(&rp, 0, 0, &s[0]); /* greedy first: the reference and {{out:N}} */
        for (int j = r == 0 ? 1 : 0; j < N_MODES && !rc; j++) rc = run_trace(&rp, (j + r) % N_MODES, r, &s[(j + r) % N_MODES]);
        fprintf(stderr, "\rtrace rep %d/%d", r + 1, o.reps);
    }
    fprintf(stderr, "\n");
    if (!rc) report(&rp, s);
    for (int i = 0; i < MAX_REQ; i++) free(rp.outs[i]), free(rp.ref[i]);
    specdec_context_free(rp.c);
    specdec_model_free(rp.dm);
    specdec_model_free(rp.m);
    free(file);
    return rc;
}
