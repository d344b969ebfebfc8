/* specdec chat: a conversation in the terminal on the public API. Each line
 * typed is a user message; the answer streams to stdout (reasoning, if the
 * model thinks, dimmed on a terminal); a status line goes to stderr after it.
 * Commands: /spec on|off, /reset, /quit. The context keeps the conversation's
 * KV cache, so each turn prefills only its new tokens. When the conversation
 * and room for an answer no longer fit the context, the oldest turns are
 * dropped (one line says so). Ctrl-C stops an answer and keeps what came so
 * far; at the prompt, a second Ctrl-C in a row quits. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/chat.h"
#include "cli/commands.h"

/* The loaded conversation partner. */
typedef struct chat {
    chat_opts o;
    specdec_model *model, *draft;
    specdec_context *ctx; /* keeps the conversation's KV cache between turns */
    specdec_suffix_cache *suffix; /* the answers so far, for suffix drafting */
    const char *template_family;
    char model_id[256];
} chat;

typedef struct convo {
    specdec_chat_message *m;
    char **owned; /* the strings m points to */
    size_t n, cap;
} convo;

static bool convo_add(convo *c, const char *role, const char *text, size_t len) {
    if (c->n == c->cap) {
        size_t cap = c->cap ? c->cap * 2 : 16;
        specdec_chat_message *m = realloc(c->m, cap * sizeof *m);
        if (!m) return false;
        c->m = m;
        char **o = realloc(c->owned, cap * sizeof *o);
        if (!o) return false;
        c->owned = o;
        c->cap = cap;
    }
    char *s = malloc(len + 1);
    if (!s) return false;
    memcpy(s, text, len);
    s[len] = 0;
    c->owned[c->n] = s;
    c->m[c->n++] = (specdec_chat_message){.role = role, .content = s};
    return true;
}

static void convo_pop(convo *c) {
    if (c->n) free(c->owned[--c->n]);
}

/* Drops the first k messages (the oldest turns). */
static void convo_drop_front(convo *c, size_t k) {
    if (k > c->n) k = c->n;
    for (size_t i = 0; i < k; i++) free(c->owned[i]);
    memmove(c->m, c->m + k, (c->n - k) * sizeof *c->m);
    memmove(c->owned, c->owned + k, (c->n - k) * sizeof *c->owned);
    c->n -= k;
}

/* Set by SIGINT: stops the answer being generated, or (twice at the prompt) the chat. */
static volatile sig_atomic_t interrupted;

static void on_sigint(int sig) {
    (void)sig;
    interrupted = 1;
}

/* No SA_RESTART: a Ctrl-C at the prompt makes getline return (EINTR). */
static void catch_sigint(void) {
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_sigint;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
}

/* Stdout is written with SIGINT held off (this thread; another thread or the
 * unblocking takes it, and the flag is set all the same): with no
 * SA_RESTART a Ctrl-C landing in a write to the terminal would fail it with
 * EINTR, stdio would keep that as an error on stdout, and the exit would
 * then report output that could not be written (status 1). */
static void out_hold(sigset_t *old) {
    sigset_t int_only;
    sigemptyset(&int_only);
    sigaddset(&int_only, SIGINT);
    pthread_sigmask(SIG_BLOCK, &int_only, old);
}

static void out_release(const sigset_t *old) { pthread_sigmask(SIG_SETMASK, old, NULL); }

static bool stop_requested(void *user) {
    (void)user;
    return interrupted != 0;
}

static void convo_free(convo *c) {
    while (c->n) convo_pop(c);
    free(c->m);
    free(c->owned);
    *c = (convo){0};
}

typedef struct turn {
    specdec_reasoning *think;
    char *answer; /* the content so far (not the reasoning) */
    size_t len, cap;
    bool oom; /* the answer could not grow: it is not kept */
    bool tty, in_reasoning;
} turn;

static void answer_add(turn *t, const char *c, size_t n) {
    if (t->oom) return;
    if (t->len + n + 1 > t->cap) {
        size_t cap = t->cap ? t->cap : 256;
        while (cap < t->len + n + 1) cap *= 2;
        char *a = realloc(t->answer, cap);
        if (!a) { t->oom = true; return; }
        t->answer = a;
        t->cap = cap;
    }
    memcpy(t->answer + t->len, c, n);
    t->len += n;
    t->answer[t->len] = 0;
}

static void show(turn *t, const char *r, size_t nr, const char *c, size_t nc) {
    sigset_t old;
    out_hold(&old);
    if (nr) {
        if (!t->in_reasoning && t->tty) fputs("\x1b[2m", stdout);
        t->in_reasoning = true;
        fwrite(r, 1, nr, stdout);
    }
    if (nc) {
        if (t->in_reasoning) fputs(t->tty ? "\x1b[0m\n" : "\n", stdout);
        t->in_reasoning = false;
        fwrite(c, 1, nc, stdout);
        answer_add(t, c, nc);
    }
    fflush(stdout);
    out_release(&old);
}

static bool on_piece(const specdec_piece *p, void *user) {
    turn *t = user;
    const char *r = NULL, *c = p->text;
    size_t nr = 0, nc = p->len;
    if (t->think) specdec_reasoning_feed(t->think, p->text, p->len, &r, &nr, &c, &nc);
    show(t, r, nr, c, nc);
    return !interrupted;
}

/* The same figures as the chat page's status line. A rate needs at least 2
 * tokens and 1 ms of decoding (the first token comes with the prefill, so a
 * one-token answer's decode time is next to nothing): else n/a, as generate. */
static void status_line(const specdec_stats *st, bool spec) {
    if (st->n_gen >= 2 && st->t_decode_ms >= 1.0)
        fprintf(stderr, "[ %.1f tok/s | %d tokens", st->n_gen * 1e3 / st->t_decode_ms, st->n_gen);
    else
        fprintf(stderr, "[ n/a tok/s | %d token%s", st->n_gen, st->n_gen == 1 ? "" : "s");
    if (spec)
        fprintf(stderr, " | drafted %lld / accepted %lld (%.1f%%) | accepted/round %.2f | spec %s%s",
                (long long)st->n_drafted, (long long)st->n_accepted,
                st->n_drafted ? 100.0 * (double)st->n_accepted / (double)st->n_drafted : 0.0,
                st->n_rounds ? (double)st->n_accepted / (double)st->n_rounds : 0.0, st->drafter ? st->drafter : "none",
                st->gate_open ? "" : " (gate closed)");
    else
        fprintf(stderr, " | speculation off");
    fprintf(stderr, " | prompt %d new + %d cached ]\n", st->n_prompt - st->n_cached, st->n_cached);
}

/* The conversation rendered with its template and tokenized (*toks malloc'd);
 * typed text stays text even where it spells a control token. */
static bool render(chat *s, const convo *c, const specdec_chat_params *cp, specdec_token **toks, size_t *n,
                   specdec_error *err) {
    return !specdec_chat_tokenize(s->model, c->m, c->n, cp, NULL, NULL, toks, n, err);
}

/* The prompt of the next answer, with room for the answer: the oldest turns
 * (user + assistant pairs) are dropped until it fits; the last message alone
 * needs only to fit the context. False (message printed) if it cannot. */
static bool fit_prompt(chat *s, convo *c, const specdec_chat_params *cp, int32_t room, specdec_token **toks,
                       size_t *n) {
    const size_t n_ctx = (size_t)specdec_context_n_ctx(s->ctx);
    size_t dropped = 0;
    specdec_error err = {0};
    for (;;) {
        if (!render(s, c, cp, toks, n, &err)) {
            fprintf(stderr, "specdec: %s\n", err.message);
            return false;
        }
        bool fits = *n + (size_t)room <= n_ctx || (c->n == 1 && *n < n_ctx);
        if (fits || c->n == 1) break;
        specdec_free(*toks);
        *toks = NULL;
        convo_drop_front(c, c->n >= 3 ? 2 : 1);
        dropped++;
    }
    if (*n >= n_ctx) {
        fprintf(stderr, "specdec: the message (%zu tokens) does not fit the context (%d)\n", *n, (int)n_ctx);
        specdec_free(*toks);
        *toks = NULL;
        return false;
    }
    if (dropped)
        fprintf(stderr, "(context full: dropped the oldest %zu turn%s)\n", dropped, dropped == 1 ? "" : "s");
    return true;
}

/* Tokens kept free for an answer when the conversation is fitted: its length
 * limit, or a quarter of the context when it has none. Without -n an answer
 * is also at most a quarter of the context: a 256-token answer in a 512-token
 * context left room for no earlier turn, and every message dropped one. */
static int32_t answer_room(const chat *s) {
    const int32_t n_ctx = specdec_context_n_ctx(s->ctx), n = s->o.run.gen.n_predict;
    int32_t room = n < 0 || (!s->o.n_predict_given && n > n_ctx / 4) ? n_ctx / 4 : n;
    return room < n_ctx / 2 ? room : n_ctx / 2;
}

/* One user turn: render, tokenize, generate, remember the answer. */
static void answer(chat *s, convo *c, bool spec, bool tty) {
    specdec_error err = {0};
    specdec_chat_params cp = specdec_chat_default_params();
    cp.template_name = s->o.chat_template;
    size_t n = 0;
    specdec_token *toks = NULL;
    if (!fit_prompt(s, c, &cp, answer_room(s), &toks, &n)) {
        convo_pop(c);
        return;
    }
    specdec_generate_params gp = s->o.run.gen;
    if (!s->o.n_predict_given) gp.n_predict = answer_room(s);
    if (!spec) gp.spec = SPECDEC_SPEC_NONE;
    else if (gp.spec == SPECDEC_SPEC_NONE) gp.spec = s->draft ? SPECDEC_SPEC_AUTO : SPECDEC_SPEC_NGRAM;
    gp.abort = stop_requested;
    gp.suffix_cache = s->suffix;
    turn t = {.tty = tty};
    specdec_reasoning_init(s->model, &cp, &t.think, NULL);
    specdec_stats st;
    interrupted = 0;
    specdec_status rc = specdec_generate(s->ctx, toks, n, &gp, on_piece, &t, &st, &err);
    specdec_free(toks);
    if (t.think) {
        const char *r = NULL, *cc = NULL;
        size_t nr = 0, nc = 0;
        specdec_reasoning_flush(t.think, &r, &nr, &cc, &nc);
        show(&t, r, nr, cc, nc);
        specdec_reasoning_free(t.think);
    }
    sigset_t old;
    out_hold(&old);
    if (t.in_reasoning && tty) fputs("\x1b[0m", stdout);
    fputs("\n", stdout);
    fflush(stdout);
    out_release(&old);
    if (rc) {
        fprintf(stderr, "specdec: %s\n", err.message);
        convo_pop(c);
    } else {
        /* a stopped answer stays in the conversation as far as it went */
        if (!t.oom) convo_add(c, "assistant", t.answer ? t.answer : "", t.len);
        if (interrupted) fprintf(stderr, "(stopped)\n");
        status_line(&st, gp.spec != SPECDEC_SPEC_NONE);
    }
    interrupted = 0;
    free(t.answer);
}

/* The model id the banner shows: the name with every space or control byte
 * made '-', as serve's responses name it. */
static void model_id_of(char *id, size_t cap, const char *name) {
    snprintf(id, cap, "%s", name);
    for (char *p = id; *p; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f) *p = '-';
}

/* Loads the model (and the draft), makes the context and the suffix memory,
 * resolves the chat template. Prints a one-line error and returns false on
 * failure (what was made stays for chat_unload). */
static bool chat_load(chat *s) {
    specdec_error err = {0};
    const specdec_options *r = &s->o.run;
    if (cli_load_model(r->model_path, r, &s->model, &err) ||
        (r->draft_path && cli_load_model(r->draft_path, r, &s->draft, &err))) {
        fprintf(stderr, "specdec: %s\n", err.message);
        return false;
    }
    specdec_context_params cp = specdec_context_default_params();
    cp.n_ctx = r->n_ctx;
    cp.cache_type_k = r->cache_type_k;
    cp.cache_type_v = r->cache_type_v;
    cp.n_threads = r->n_threads;
    cp.draft = s->draft;
    if (specdec_context_init(s->model, &cp, &s->ctx, &err) ||
        specdec_generate_params_check(s->ctx, &r->gen, &err) || /* e.g. --spec eagle3 without a head */
        specdec_suffix_cache_init(CHAT_SUFFIX_TOKENS, &s->suffix, &err) ||
        specdec_chat_template_resolve(s->model, s->o.chat_template, &s->template_family, &err)) {
        fprintf(stderr, "specdec: %s\n", err.message);
        return false;
    }
    cli_warn_n_ctx(specdec_model_n_ctx_train(s->model), r->n_ctx); /* as generate warns */
    if (!s->o.chat_template && specdec_chat_template_refusal(s->model)) /* say which renders, and why */
        fprintf(stderr, "specdec: the model's chat template cannot run (%s); using %s\n",
                specdec_chat_template_refusal(s->model), s->template_family ? s->template_family : "no template");
    model_id_of(s->model_id, sizeof s->model_id, specdec_model_name(s->model));
    return true;
}

static void chat_unload(chat *s) {
    specdec_suffix_cache_free(s->suffix);
    specdec_context_free(s->ctx);
    specdec_model_free(s->draft);
    specdec_model_free(s->model);
    *s = (chat){0};
}

int cmd_chat(int argc, char **argv) {
    static chat s;
    memset(&s, 0, sizeof s);
    int rc = chat_parse(argc, argv, &s.o);
    if (rc) return rc < 0 ? 0 : rc;
    if (!chat_load(&s)) { chat_unload(&s); return 1; }
    bool tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    bool spec = s.o.run.gen.spec != SPECDEC_SPEC_NONE;
    fprintf(stderr, "specdec chat: %s (template %s, spec %s) — /spec on|off, /reset, /quit\n", s.model_id,
            s.template_family, spec ? specdec_spec_mode_name(s.o.run.gen.spec) : "off");
    convo c = {0};
    char *line = NULL;
    size_t cap = 0;
    catch_sigint();
    bool warned = false; /* a Ctrl-C at the prompt: the next one quits */
    for (;;) {
        if (tty) {
            sigset_t old;
            out_hold(&old);
            fputs("> ", stdout);
            fflush(stdout);
            out_release(&old); /* a Ctrl-C held off meanwhile has set the flag now */
        }
        /* Ctrl-C: getline fails with EINTR, or the flag was set before it ran */
        ssize_t n = interrupted ? -1 : getline(&line, &cap, stdin);
        if (n < 0 && interrupted) {
            interrupted = 0;
            clearerr(stdin);
            if (warned) { fputs("\n", stdout); break; }
            fprintf(stderr, "\n(Ctrl-C again or /quit to leave)\n");
            warned = true;
            continue;
        }
        if (n < 0) break;
        warned = false;
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r')) line[--n] = 0;
        if (n == 0) continue;
        if (!strcmp(line, "/quit") || !strcmp(line, "/exit")) break;
        if (!strcmp(line, "/spec on") || !strcmp(line, "/spec off")) {
            spec = !strcmp(line, "/spec on");
            fprintf(stderr, "speculation %s\n", spec ? "on" : "off");
        } else if (!strcmp(line, "/reset")) {
            convo_free(&c);
            specdec_context_reset(s.ctx);
            fprintf(stderr, "new conversation\n");
        } else if (line[0] == '/') {
            fprintf(stderr, "commands: /spec on|off, /reset, /quit\n");
        } else if (convo_add(&c, "user", line, (size_t)n)) {
            answer(&s, &c, spec, tty);
        }
    }
    free(line);
    convo_free(&c);
    chat_unload(&s);
    return 0;
}
