/* `specdec generate`: load the target (and a draft), tokenize the prompt,
 * decode with the chosen drafter while streaming text, then — for a greedy
 * speculative run — decode again plainly and compare token by token
 * (LOSSLESS n/n) and time both (speedup). */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/commands.h"
#include "cli/generate.h"
#include "numerics/pool.h"

typedef struct engine {
    sd_model *target, *draft;
    sd_context *tctx, *dctx;
    sd_lm tlm, dlm;
    sd_drafter drafter;
    bool has_drafter;
    const char *label;
} engine;

static int fail(const sd_err *err) {
    fprintf(stderr, "specdec: %s\n", err->msg);
    return 1;
}

/* The whole of a file (or of stdin for "-"); NUL-terminated for convenience. */
static sd_status read_file(const char *path, char **text, size_t *len, sd_err *err) {
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) return sd_err_set(err, SD_ERR_IO, "%s: cannot open the prompt file: %s", path, strerror(errno));
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
    if (!buf) return sd_err_set(err, SD_ERR_NOMEM, "%s: out of memory", path);
    if (read_errno) {
        free(buf);
        return sd_err_set(err, SD_ERR_IO, "%s: cannot read the prompt file: %s", path, strerror(read_errno));
    }
    buf[n] = 0;
    *text = buf;
    *len = n;
    return SD_OK;
}

/* The prompt text (owned by the caller), in the ChatML template with --chat.
 * Read before the models load, so a bad -f fails at once. */
static sd_status read_prompt(const gen_opts *o, char **text, size_t *len, sd_err *err) {
    static const char pre[] = "<|im_start|>user\n", post[] = "<|im_end|>\n<|im_start|>assistant\n";
    char *raw = NULL;
    size_t n = strlen(o->prompt ? o->prompt : "");
    if (o->prompt_file && read_file(o->prompt_file, &raw, &n, err) != SD_OK) return err->code;
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
    if (!t) return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    *text = t;
    *len = n_pre + n + n_post;
    return SD_OK;
}

/* Prompt text -> tokens; with --chat the ChatML markers are special tokens.
 * Any bytes are fine: byte-level BPE covers every byte, so invalid UTF-8
 * becomes byte tokens, losslessly. */
static sd_status tokenize_prompt(const gen_opts *o, const sd_tokenizer *tok, const char *text, size_t len,
                                 int32_t **ids, size_t *n_ids, sd_err *err) {
    sd_status st = sd_tokenize(tok, text, len, true, o->chat, ids, n_ids, err);
    if (st == SD_OK && *n_ids == 0) st = sd_err_set(err, SD_ERR_ARG, "the prompt is empty");
    return st;
}

/* Which draft model file to load, if any (NULL = none). */
static const char *draft_path(const gen_opts *o) {
    if (o->spec == GEN_SPEC_NONE || o->spec == GEN_SPEC_NGRAM) return NULL;
    return cli_default_draft(o->draft, o->model_is_default);
}

static sd_status load_models(const gen_opts *o, engine *e, sd_err *err) {
    sd_status st = cli_load_model(o->model, &e->target, err);
    if (st != SD_OK) return st;
    cli_warn_n_ctx(e->target, o->n_ctx);
    const char *dp = draft_path(o);
    if (o->spec == GEN_SPEC_DRAFT && !dp)
        return sd_err_set(err, SD_ERR_ARG, "--spec draft needs a draft model (-md FILE)");
    if (!dp) return SD_OK;
    st = cli_load_model(dp, &e->draft, err);
    if (st != SD_OK) return st;
    st = sd_lm_check_same_vocab(e->target, e->draft, err);
    if (st != SD_OK) sd_err_prefix(err, "%s", dp);
    return st;
}

static sd_status build_drafter(const gen_opts *o, engine *e, int32_t n_batch, sd_err *err) {
    const int cores = sd_default_threads(), threads = o->threads ? o->threads : cores;
    if (threads > cores) /* oversubscribed: each barrier waits for a descheduled thread */
        fprintf(stderr, "specdec: warning: %d threads on %d online cores is slower than -t %d\n", threads, cores,
                cores);
    sd_status st = sd_context_init(e->target, o->n_ctx, n_batch, threads, &e->tctx, err);
    if (st != SD_OK) return st;
    sd_lm_from_context(&e->tlm, e->tctx, e->target);
    e->label = "none";
    if (o->spec == GEN_SPEC_NONE) return SD_OK;
    sd_drafter ng = {0}, dm = {0};
    if (e->draft) {
        st = sd_context_init(e->draft, sd_context_n_ctx(e->tctx), n_batch, threads, &e->dctx, err);
        if (st == SD_OK) sd_lm_from_context(&e->dlm, e->dctx, e->draft);
        if (st == SD_OK) st = sd_drafter_model_init(&dm, &e->dlm, &o->sampling, n_batch, err);
    }
    if (st == SD_OK && o->spec != GEN_SPEC_DRAFT)
        st = sd_drafter_ngram_init(&ng, o->ngram_min, o->ngram_max, err);
    if (st != SD_OK) {
        sd_drafter_free(&dm);
        return st;
    }
    e->has_drafter = true;
    if (o->spec == GEN_SPEC_NGRAM) e->drafter = ng, e->label = "ngram";
    else if (o->spec == GEN_SPEC_DRAFT) e->drafter = dm, e->label = "draft";
    else {
        e->label = e->draft ? "auto (ngram + draft)" : "auto (ngram)";
        st = sd_drafter_auto_init(&e->drafter, &ng, e->draft ? &dm : NULL, e->target->hp.n_vocab, err);
    }
    return st;
}

static void engine_free(engine *e) {
    sd_drafter_free(&e->drafter);
    sd_context_free(e->dctx);
    sd_context_free(e->tctx);
    sd_model_free(e->draft);
    sd_model_free(e->target);
}

/* Streaming: each committed token's bytes, once they form whole UTF-8. */
typedef struct stream {
    const sd_tokenizer *tok;
    sd_detok dt;
    bool print;
    char *text;
    size_t len, cap;
    char *piece; /* one token's bytes: sd_detok_cap() so nothing is dropped */
    size_t piece_cap;
} stream;

static bool stream_bytes(stream *s, const char *b, size_t n) {
    if (s->print) {
        fwrite(b, 1, n, stdout);
        fflush(stdout);
    }
    if (s->len + n + 1 > s->cap) {
        size_t cap = 2 * (s->len + n + 1) + 256;
        char *t = realloc(s->text, cap);
        if (!t) return false;
        s->text = t;
        s->cap = cap;
    }
    memcpy(s->text + s->len, b, n);
    s->len += n;
    s->text[s->len] = 0;
    return true;
}

static bool on_token(void *user, int32_t token) {
    stream *s = user;
    size_t n = sd_detok_push(&s->dt, s->tok, token, s->piece, s->piece_cap);
    return stream_bytes(s, s->piece, n);
}

static bool is_eog(void *user, int32_t token) {
    stream *s = user;
    return sd_tokenizer_is_eog(s->tok, token);
}

static bool quiet_token(void *user, int32_t token) {
    (void)user, (void)token;
    return true;
}

static bool quiet_eog(void *user, int32_t token) { return sd_tokenizer_is_eog(user, token); }

/* The same prompt through plain greedy decoding, compared token by token. */
static sd_status check_lossless(engine *e, const int32_t *prompt, int32_t n_prompt,
                                sd_spec_params p, gen_result *r, sd_err *err) {
    int32_t *plain = malloc(((size_t)p.n_predict + 1) * sizeof *plain);
    if (!plain) return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    sd_context_truncate(e->tctx, 0);
    p.is_eog = quiet_eog;
    sd_status st = sd_spec_generate(&e->tlm, NULL, prompt, n_prompt, &p, quiet_token,
                                    e->target->tok, plain, &r->n_greedy, &r->greedy, err);
    if (st == SD_OK) {
        r->checked = true;
        int32_t n = r->n_greedy < r->n_tokens ? r->n_greedy : r->n_tokens, i = 0;
        while (i < n && plain[i] == r->tokens[i]) i++;
        r->lossless = i == n && r->n_greedy == r->n_tokens;
        r->first_diff = i;
    }
    free(plain);
    return st;
}

/* Prompt text, models, drafter, prompt tokens: everything before decoding. */
static sd_status prepare(const gen_opts *o, engine *e, int32_t n_batch, int32_t **prompt, size_t *n_prompt,
                         sd_err *err) {
    char *text = NULL;
    size_t len = 0;
    sd_status st = read_prompt(o, &text, &len, err);
    if (st == SD_OK) st = load_models(o, e, err);
    if (st == SD_OK) st = build_drafter(o, e, n_batch, err);
    if (st == SD_OK) st = tokenize_prompt(o, e->target->tok, text, len, prompt, n_prompt, err);
    free(text);
    return st;
}

static int run(const gen_opts *o, engine *e, gen_result *r, sd_err *err) {
    int32_t *prompt = NULL;
    size_t n_prompt = 0;
    int32_t n_batch = o->draft_max + 1 > 64 ? o->draft_max + 1 : 64;
    sd_status st = prepare(o, e, n_batch, &prompt, &n_prompt, err);
    if (st != SD_OK) return free(prompt), fail(err);
    sd_spec_params p = sd_spec_default_params();
    p.n_predict = o->n_predict;
    p.draft_max = o->draft_max;
    p.gate_misses = o->gate;
    p.n_batch = n_batch;
    p.sampling = o->sampling;
    p.is_eog = is_eog;
    stream s = {.tok = e->target->tok, .print = !o->json, .piece_cap = sd_detok_cap(e->target->tok)};
    s.piece = malloc(s.piece_cap);
    if (!s.piece) return free(prompt), fprintf(stderr, "specdec: out of memory\n"), 1;
    sd_detok_init(&s.dt);
    r->spec_label = e->label;
    r->tokens = malloc(((size_t)o->n_predict + 1) * sizeof *r->tokens);
    if (!r->tokens) return free(prompt), free(s.piece), fprintf(stderr, "specdec: out of memory\n"), 1;
    st = sd_spec_generate(&e->tlm, e->has_drafter ? &e->drafter : NULL, prompt, (int32_t)n_prompt, &p,
                          on_token, &s, r->tokens, &r->n_tokens, &r->st, err);
    char tail[16];
    stream_bytes(&s, tail, sd_detok_flush(&s.dt, tail, sizeof tail));
    /* A newline after the text on a terminal keeps the prompt tidy; piped or
     * redirected, stdout holds exactly the generated bytes. */
    if (!o->json && (st == SD_OK || s.len) && isatty(STDOUT_FILENO)) printf("\n");
    fflush(stdout); /* the text ends before the stats line on stderr */
    free(s.piece);
    r->text = s.text;
    if (st == SD_OK && r->n_tokens < o->n_predict &&
        sd_context_len(e->tctx) >= sd_context_n_ctx(e->tctx))
        fprintf(stderr, "specdec: stopped after %d tokens: the context (-c %d) is full\n",
                r->n_tokens, sd_context_n_ctx(e->tctx));
    bool want_check = o->check == 1 || (o->check == -1 && e->has_drafter && o->sampling.temp <= 0);
    if (st == SD_OK && want_check) st = check_lossless(e, prompt, (int32_t)n_prompt, p, r, err);
    free(prompt);
    if (st != SD_OK) return fail(err);
    return 0;
}

int cmd_generate(int argc, char **argv) {
    gen_opts o;
    int rc = gen_parse(argc, argv, &o);
    if (rc >= 0) return rc;
    engine e = {0};
    gen_result r = {0};
    sd_err err = {0};
    rc = run(&o, &e, &r, &err);
    if (rc == 0) {
        gen_print_stats(&r);
        if (o.json && !gen_print_json(&r)) rc = 1;
        if (r.checked && !r.lossless) {
            fprintf(stderr, "specdec: speculative output differs from greedy at token %d\n",
                    r.first_diff);
            rc = 1;
        }
    }
    free(r.tokens);
    free(r.text);
    engine_free(&e);
    return rc;
}
