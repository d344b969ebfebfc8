/* `specdec generate`: load the target (and a draft), tokenize the prompt,
 * generate with the chosen drafter while streaming text, and — for a greedy
 * speculative run — have the library decode again plainly and compare token
 * by token (LOSSLESS n/n) and time both (speedup). Uses the public API
 * (include/specdec.h) only. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/generate.h"

typedef struct engine {
    specdec_model *target, *draft;
    specdec_context *ctx;
    specdec_grammar *grammar; /* --grammar-file / --json-schema, NULL without */
} engine;

static int fail(const specdec_error *err) {
    fprintf(stderr, "specdec: %s\n", err->message);
    return 1;
}

/* The whole of a file (or of stdin for "-"); NUL-terminated for convenience.
 * what names it in errors ("the prompt file"). */
static specdec_status read_file(const char *path, const char *what, char **text, size_t *len, specdec_error *err) {
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) return specdec_error_set(err, SPECDEC_ERR_IO, "%s: cannot open %s: %s", path, what, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - 1 - n, f)) > 0;) {
        n += got;
        if (n + 1 == cap) {
            char *b = realloc(buf, cap *= 2);
            if (!b) free(buf);
            buf = b;
        }
    }
    int read_errno = ferror(f) ? errno : 0; /* e.g. EISDIR: fopen opens a directory */
    if (f != stdin) fclose(f);
    if (!buf) return specdec_error_set(err, SPECDEC_ERR_NOMEM, "%s: out of memory", path);
    if (read_errno) {
        free(buf);
        return specdec_error_set(err, SPECDEC_ERR_IO, "%s: cannot read %s: %s", path, what, strerror(read_errno));
    }
    buf[n] = 0;
    *text = buf;
    *len = n;
    return SPECDEC_OK;
}

/* The prompt text (owned by the caller), in the ChatML template with --chat.
 * Read before the models load, so a bad -f fails at once. */
static specdec_status read_prompt(const gen_opts *o, char **text, size_t *len, specdec_error *err) {
    static const char pre[] = "<|im_start|>user\n", post[] = "<|im_end|>\n<|im_start|>assistant\n";
    char *raw = NULL;
    size_t n = strlen(o->prompt ? o->prompt : "");
    if (o->prompt_file && read_file(o->prompt_file, "the prompt file", &raw, &n, err) != SPECDEC_OK) return err->code;
    const char *body = raw ? raw : o->prompt;
    size_t n_pre = o->chat ? sizeof pre - 1 : 0, n_post = o->chat ? sizeof post - 1 : 0;
    char *t = malloc(n_pre + n + n_post + 1);
    if (t) {
        memcpy(t, pre, n_pre);
        memcpy(t + n_pre, body, n);
        memcpy(t + n_pre + n, post, n_post);
        t[n_pre + n + n_post] = 0;
    }
    free(raw);
    if (!t) return specdec_error_set(err, SPECDEC_ERR_NOMEM, "out of memory");
    *text = t;
    *len = n_pre + n + n_post;
    return SPECDEC_OK;
}

/* Prompt text -> tokens; with --chat the ChatML markers are special tokens.
 * Any bytes are fine: byte-level BPE covers every byte, so invalid UTF-8
 * becomes byte tokens, losslessly. */
static specdec_status tokenize_prompt(const gen_opts *o, const specdec_model *m, const char *text, size_t len,
                                      specdec_token **ids, size_t *n_ids, specdec_error *err) {
    specdec_status st = specdec_tokenize(m, text, len, true, o->chat, ids, n_ids, err);
    if (st == SPECDEC_OK && *n_ids == 0) st = specdec_error_set(err, SPECDEC_ERR_ARG, "the prompt is empty");
    return st;
}

/* Which -md file to load, if any (NULL = none): a draft model, an EAGLE-3
 * head or an MTP sidecar (its role follows the file; the library checks it
 * fits). --spec mtp takes only a given one: no default sidecar. */
static const char *draft_path(const gen_opts *o) {
    const specdec_spec_mode m = o->run.gen.spec;
    if (m == SPECDEC_SPEC_MTP || m == SPECDEC_SPEC_DFLASH) return o->run.draft_path; /* no default file */
    if (m == SPECDEC_SPEC_NONE || m == SPECDEC_SPEC_NGRAM || m == SPECDEC_SPEC_SUFFIX || m == SPECDEC_SPEC_GRAMMAR)
        return NULL;
    if (m == SPECDEC_SPEC_EAGLE3) return cli_default_eagle3(o->run.draft_path, o->model_is_default);
    return cli_default_draft(o->run.draft_path, o->model_is_default);
}

static specdec_status load_models(const gen_opts *o, engine *e, specdec_error *err) {
    specdec_status st = cli_load_model(o->run.model_path, &o->run, &e->target, err);
    if (st != SPECDEC_OK) return st;
    cli_warn_n_ctx(specdec_model_n_ctx_train(e->target), o->run.n_ctx);
    const char *dp = draft_path(o);
    if (o->run.gen.spec == SPECDEC_SPEC_DRAFT && !dp)
        return specdec_error_set(err, SPECDEC_ERR_ARG, "--spec draft needs a draft model (-md FILE)");
    if (o->run.gen.spec == SPECDEC_SPEC_EAGLE3 && !dp)
        return specdec_error_set(err, SPECDEC_ERR_ARG, "--spec eagle3 needs an EAGLE-3 head (-md FILE)");
    if (o->run.gen.spec == SPECDEC_SPEC_DFLASH && !dp)
        return specdec_error_set(err, SPECDEC_ERR_ARG, "--spec dflash needs a DFlash draft (-md FILE)");
    st = dp ? cli_load_model(dp, &o->run, &e->draft, err) : SPECDEC_OK;
    if (st != SPECDEC_OK || !dp) return st;
    bool head = !strcmp(specdec_model_arch(e->draft), "eagle3");
    if (o->run.gen.spec == SPECDEC_SPEC_EAGLE3 && !head)
        return specdec_error_set(err, SPECDEC_ERR_ARG, "%s: not an EAGLE-3 head (architecture '%s'; --spec eagle3 needs eagle3)",
                                 dp, specdec_model_arch(e->draft));
    const bool dflash = !strcmp(specdec_model_arch(e->draft), "dflash");
    if (o->run.gen.spec == SPECDEC_SPEC_DFLASH && !dflash)
        return specdec_error_set(err, SPECDEC_ERR_ARG, "%s: not a DFlash draft (architecture '%s'; --spec dflash needs dflash)",
                                 dp, specdec_model_arch(e->draft));
    if (o->run.gen.spec != SPECDEC_SPEC_DFLASH && o->run.gen.spec != SPECDEC_SPEC_AUTO && dflash)
        return specdec_error_set(err, SPECDEC_ERR_ARG, "%s: a DFlash draft: use --spec dflash or auto", dp);
    if (o->run.gen.spec == SPECDEC_SPEC_DRAFT && head)
        return specdec_error_set(err, SPECDEC_ERR_ARG, "%s: an EAGLE-3 head, not a draft model: use --spec eagle3", dp);
    return SPECDEC_OK;
}

/* The context: the target's KV cache, and the draft's (the library checks
 * the vocabularies match). A verify forward has draft_max + 1 rows. */
static specdec_status make_context(const gen_opts *o, engine *e, specdec_error *err) {
    const int cores = specdec_default_threads(), threads = o->run.n_threads ? o->run.n_threads : cores;
    if (threads > cores) /* oversubscribed: each barrier waits for a descheduled thread */
        fprintf(stderr, "specdec: warning: %d threads on %d online cores is slower than -t %d\n", threads, cores,
                cores);
    specdec_context_params cp = specdec_context_default_params();
    cp.n_ctx = o->run.n_ctx;
    cp.cache_type_k = o->run.cache_type_k;
    cp.cache_type_v = o->run.cache_type_v;
    cp.n_batch = o->run.gen.draft_max + 1 > 64 ? o->run.gen.draft_max + 1 : 64;
    cp.n_threads = threads;
    cp.draft = e->draft;
    return specdec_context_init(e->target, &cp, &e->ctx, err);
}

/* --grammar-file F (GBNF, root rule "root") or --json-schema F (a JSON
 * Schema, converted to a grammar; additionalProperties as the schema says,
 * else JSON Schema's default true), compiled for the target's vocabulary. */
static specdec_status load_grammar(const gen_opts *o, engine *e, specdec_error *err) {
    const char *path = o->grammar_file ? o->grammar_file : o->json_schema_file;
    if (!path) return SPECDEC_OK;
    char *text = NULL;
    size_t len = 0;
    specdec_status st = read_file(path, o->grammar_file ? "the grammar file" : "the schema file", &text, &len, err);
    if (st == SPECDEC_OK)
        st = o->grammar_file ? specdec_grammar_init(e->target, text, len, NULL, &e->grammar, err)
                             : specdec_grammar_from_json_schema(e->target, text, len, false, false, &e->grammar, err);
    free(text);
    if (st != SPECDEC_OK && st != SPECDEC_ERR_IO) { /* name the file: "F: grammar 3:7: ..." */
        char msg[sizeof err->message];
        snprintf(msg, sizeof msg, "%.100s: %.400s", path, err->message);
        memcpy(err->message, msg, sizeof msg);
    }
    return st;
}

static void engine_free(engine *e) {
    specdec_grammar_free(e->grammar);
    specdec_context_free(e->ctx);
    specdec_model_free(e->draft);
    specdec_model_free(e->target);
}

/* Streaming: each piece of whole UTF-8 the library hands over, printed
 * (unless --json) and kept for the report. */
typedef struct stream {
    bool print;
    char *text;
    size_t len, cap;
    specdec_token_logprob *lp; /* --logprobs: those of every piece so far */
    int32_t n_lp, cap_lp;
} stream;

/* Keeps a piece's log-probabilities (false when out of memory). */
static bool keep_logprobs(stream *s, const specdec_piece *p) {
    if (p->n_logprobs <= 0) return true;
    if (s->n_lp + p->n_logprobs > s->cap_lp) {
        int32_t cap = 2 * (s->n_lp + p->n_logprobs) + 64;
        specdec_token_logprob *n = realloc(s->lp, (size_t)cap * sizeof *n);
        if (!n) return false;
        s->lp = n;
        s->cap_lp = cap;
    }
    memcpy(s->lp + s->n_lp, p->logprobs, (size_t)p->n_logprobs * sizeof *p->logprobs);
    s->n_lp += p->n_logprobs;
    return true;
}

static bool on_piece(const specdec_piece *p, void *user) {
    stream *s = user;
    if (!keep_logprobs(s, p)) return false;
    if (s->print) {
        fwrite(p->text, 1, p->len, stdout);
        fflush(stdout);
    }
    if (s->len + p->len + 1 > s->cap) {
        size_t cap = 2 * (s->len + p->len + 1) + 256;
        char *t = realloc(s->text, cap);
        if (!t) return false;
        s->text = t;
        s->cap = cap;
    }
    memcpy(s->text + s->len, p->text, p->len);
    s->len += p->len;
    s->text[s->len] = 0;
    return true;
}

static specdec_generate_params generate_params(const gen_opts *o) {
    specdec_generate_params gp = o->run.gen;
    gp.logprobs = o->logprobs;
    /* at temperature > 0 deterministic drafts give plain sampling's bytes: checked too */
    gp.check_lossless = o->check == 1 || (o->check == -1 && gp.spec != SPECDEC_SPEC_NONE &&
                                           (gp.temperature <= 0 || !gp.draft_sample));
    return gp;
}

/* Prompt text, models, context, prompt tokens: everything before decoding. */
static specdec_status prepare(const gen_opts *o, engine *e, specdec_token **prompt, size_t *n_prompt,
                              specdec_error *err) {
    char *text = NULL;
    size_t len = 0;
    specdec_status st = read_prompt(o, &text, &len, err);
    if (st == SPECDEC_OK) st = load_models(o, e, err);
    if (st == SPECDEC_OK) st = load_grammar(o, e, err);
    if (st == SPECDEC_OK) st = make_context(o, e, err);
    if (st == SPECDEC_OK) st = tokenize_prompt(o, e->target, text, len, prompt, n_prompt, err);
    free(text);
    return st;
}

/* A -p prompt must be text: invalid UTF-8 is refused as `specdec serve`
 * refuses it (specdec_utf8_check); a -f file's bytes are taken as they are. */
static int check_prompt_text(const gen_opts *o) {
    specdec_error err = {0};
    if (o->prompt_file || !o->prompt || specdec_utf8_check(o->prompt, strlen(o->prompt), &err) == SPECDEC_OK) return 0;
    fprintf(stderr, "specdec: the prompt (-p) is %s (-f FILE takes any bytes)\n", err.message);
    return 2;
}

/* stdout and stderr are one file (`>out 2>&1`, a terminal): the stats line
 * must then start on a line of its own. */
static bool one_output(void) {
    struct stat a, b;
    return fstat(STDOUT_FILENO, &a) == 0 && fstat(STDERR_FILENO, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

static int run(const gen_opts *o, engine *e, gen_result *r, specdec_error *err) {
    int bad = check_prompt_text(o);
    if (bad) return bad;
    specdec_token *prompt = NULL;
    size_t n_prompt = 0;
    specdec_status st = prepare(o, e, &prompt, &n_prompt, err);
    if (st != SPECDEC_OK) return specdec_free(prompt), fail(err);
    specdec_generate_params gp = generate_params(o);
    gp.grammar = e->grammar;
    stream s = {.print = !o->json};
    st = specdec_generate(e->ctx, prompt, n_prompt, &gp, on_piece, &s, &r->st, err);
    specdec_free(prompt);
    /* A newline after the text on a terminal keeps the prompt tidy, and where
     * stderr shares the file it keeps the stats line apart; piped or redirected
     * alone, stdout holds exactly the generated bytes. */
    if (!o->json && (st == SPECDEC_OK || s.len) &&
        (isatty(STDOUT_FILENO) || (s.len && s.text[s.len - 1] != '\n' && one_output())))
        printf("\n");
    fflush(stdout); /* the text ends before the stats line on stderr */
    r->text = s.text;
    r->lp = s.lp;
    r->n_lp = s.n_lp;
    r->n_top = o->logprobs;
    r->model = e->target;
    if (st == SPECDEC_ERR_CONTEXT) { /* the prompt is longer than -c */
        size_t n = strlen(err->message);
        snprintf(err->message + n, sizeof err->message - n, " (raise -c)");
    }
    if (st != SPECDEC_OK) return fail(err);
    size_t n_hist = 0;
    const specdec_token *hist = specdec_context_tokens(e->ctx, &n_hist);
    r->tokens = hist + n_prompt;
    r->n_tokens = r->st.n_gen;
    if (r->st.stop_reason == SPECDEC_STOP_CONTEXT)
        fprintf(stderr, "specdec: stopped after %d tokens: the context (-c %d) is full\n", r->st.n_gen,
                specdec_context_n_ctx(e->ctx));
    return 0;
}

/* The weights' memory of the target and the draft, summed, and the process's
 * peak RSS (which includes the KV caches and scratch), after the run. */
static void measure_memory(const engine *e, gen_result *r) {
    const specdec_model *models[] = {e->target, e->draft};
    r->mem.file_measured = true;
    for (size_t i = 0; i < 2; i++) {
        specdec_model_memory w;
        if (!models[i] || specdec_model_memory_get(models[i], &w, NULL) != SPECDEC_OK) continue;
        r->mem.packed_bytes += w.packed_bytes;
        r->mem.f32_bytes += w.f32_bytes;
        r->mem.file_bytes += w.file_bytes;
        r->mem.file_measured = r->mem.file_measured && w.file_measured;
        r->mem.load_ms += w.load_ms;
    }
    struct rusage ru;
    r->peak_rss = getrusage(RUSAGE_SELF, &ru) == 0 ? (uint64_t)ru.ru_maxrss * 1024 : 0; /* Linux: KiB */
}

int cmd_generate(int argc, char **argv) {
    gen_opts o;
    int rc = gen_parse(argc, argv, &o);
    if (rc >= 0) return rc;
    engine e = {0};
    gen_result r = {0};
    specdec_error err = {0};
    rc = run(&o, &e, &r, &err);
    if (rc == 0) {
        measure_memory(&e, &r);
        if (o.logprobs >= 0 && !o.json) gen_print_logprobs(&r);
        gen_print_stats(&r);
        if (o.json && !gen_print_json(&r)) rc = 1;
        if (r.st.lossless_checked && !r.st.lossless) {
            fprintf(stderr, "specdec: speculative output differs from plain %s at token %d\n",
                    o.run.gen.temperature > 0 ? "sampling" : "greedy", r.st.lossless_first_diff);
            rc = 1;
        }
    }
    free(r.text);
    free(r.lp);
    engine_free(&e);
    return rc;
}
