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

#include "server/front.h"

int cmd_chat(int argc, char **argv);

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
    sd_strbuf answer;
    bool tty, in_reasoning;
} turn;

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
        sd_strbuf_add(&t->answer, c, nc);
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

/* The conversation rendered with its template and tokenized (*toks malloc'd). */
static bool render(server *s, const convo *c, const specdec_chat_params *cp, specdec_token **toks, size_t *n,
                   specdec_error *err) {
    char *text = NULL;
    size_t len = 0;
    bool ok = !specdec_chat_apply_template(s->model, c->m, c->n, cp, &text, &len, err) &&
              !specdec_tokenize(s->model, text, len, true, true, toks, n, err);
    specdec_free(text);
    return ok;
}

/* The prompt of the next answer, with room for the answer: the oldest turns
 * (user + assistant pairs) are dropped until it fits; the last message alone
 * needs only to fit the context. False (message printed) if it cannot. */
static bool fit_prompt(server *s, convo *c, const specdec_chat_params *cp, int32_t room, specdec_token **toks,
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
static int32_t answer_room(const server *s) {
    const int32_t n_ctx = specdec_context_n_ctx(s->ctx), n = s->opts.gen.n_predict;
    int32_t room = n < 0 || (!s->opts.n_predict_given && n > n_ctx / 4) ? n_ctx / 4 : n;
    return room < n_ctx / 2 ? room : n_ctx / 2;
}

/* One user turn: render, tokenize, generate, remember the answer. */
static void answer(server *s, convo *c, bool spec, bool tty) {
    specdec_error err = {0};
    specdec_chat_params cp = specdec_chat_default_params();
    cp.template_name = s->opts.chat_template;
    size_t n = 0;
    specdec_token *toks = NULL;
    if (!fit_prompt(s, c, &cp, answer_room(s), &toks, &n)) {
        convo_pop(c);
        return;
    }
    specdec_generate_params gp = s->opts.gen;
    if (!s->opts.n_predict_given) gp.n_predict = answer_room(s);
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
        convo_add(c, "assistant", sd_strbuf_str(&t.answer), t.answer.len);
        if (interrupted) fprintf(stderr, "(stopped)\n");
        status_line(&st, gp.spec != SPECDEC_SPEC_NONE);
    }
    interrupted = 0;
    sd_strbuf_free(&t.answer);
}

int cmd_chat(int argc, char **argv) {
    static server s;
    memset(&s, 0, sizeof s);
    int rc = front_parse(argc, argv, false, &s.opts);
    if (rc) return rc < 0 ? 0 : rc;
    if (!front_load(&s)) { front_unload(&s); return 1; }
    if (!s.template_family) {
        fprintf(stderr, "specdec: %s\n", s.template_error);
        front_unload(&s);
        return 1;
    }
    bool tty = isatty(STDIN_FILENO) && isatty(STDOUT_FILENO);
    bool spec = s.opts.gen.spec != SPECDEC_SPEC_NONE;
    fprintf(stderr, "specdec chat: %s (template %s, spec %s) — /spec on|off, /reset, /quit\n", s.model_id,
            s.template_family, spec ? specdec_spec_mode_name(s.opts.gen.spec) : "off");
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
    front_unload(&s);
    return 0;
}
