/* Generated tokens to the pieces of text the callback receives: whole UTF-8
 * characters only (sd_detok holds back a split character), and never a stop
 * string, not even its start. The second rule is llama.cpp's server's
 * partial-stop check (tools/server/server-context.cpp, "send_text"): the
 * longest tail of the undelivered text that is a prefix of some stop string
 * waits for the next token; a full match ends the stream there. */
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"

sd_status sd_api_stream_init(sd_api_stream *s, const sd_tokenizer *tok, const char *const *stop, int32_t n_stop,
                             specdec_piece_cb cb, void *user, const specdec_stats *stats, sd_err *err) {
    *s = (sd_api_stream){.tok = tok, .stop = stop, .n_stop = n_stop, .stop_index = -1, .cb = cb, .user = user,
                         .stats = stats, .piece_cap = sd_detok_cap(tok)};
    sd_detok_init(&s->dt);
    s->piece = malloc(s->piece_cap);
    if (!s->piece) {
        sd_api_stream_free(s);
        return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    }
    return SD_OK;
}

void sd_api_stream_free(sd_api_stream *s) {
    free(s->piece);
    s->piece = NULL;
    sd_strbuf_free(&s->text);
}

/* Hands text[0..n) to the callback (NUL-terminated there for it) and
 * drops it from text. */
static void deliver(sd_api_stream *s, size_t n) {
    if (n == 0) return;
    char *t = s->text.s, saved = t[n];
    t[n] = 0;
    specdec_piece p = {.text = t, .len = n, .n_tokens = s->n_tokens, .n_drafted = s->n_drafted, .stats = s->stats};
    if (s->lp) { /* the piece's tokens are the last n_tokens pushed */
        p.logprobs = s->lp + (s->n_pushed - s->n_tokens);
        p.n_logprobs = s->n_tokens;
    }
    bool go_on = !s->cb || s->cb(&p, s->user);
    t[n] = saved;
    sd_strbuf_consume(&s->text, n);
    s->n_tokens = s->n_drafted = 0;
    if (!go_on) s->cancelled = true;
}

/* The earliest full match of any stop string in text: its offset, and which
 * string in *which; -1 if none. */
static long first_match(const sd_api_stream *s, int32_t *which) {
    long best = -1;
    for (int32_t i = 0; i < s->n_stop; i++) {
        size_t m = strlen(s->stop[i]);
        for (size_t at = 0; at + m <= s->text.len && (best < 0 || (long)at < best); at++)
            if (!memcmp(s->text.s + at, s->stop[i], m)) {
                best = (long)at;
                *which = i;
                break;
            }
    }
    return best;
}

/* The longest tail of text that is a proper prefix of some stop string. */
static size_t held_tail(const sd_api_stream *s) {
    size_t hold = 0;
    for (int32_t i = 0; i < s->n_stop; i++) {
        size_t m = strlen(s->stop[i]);
        for (size_t k = m - 1 < s->text.len ? m - 1 : s->text.len; k > hold; k--)
            if (!memcmp(s->text.s + s->text.len - k, s->stop[i], k)) {
                hold = k;
                break;
            }
    }
    return hold;
}

/* Delivers up to a stop string's match and returns true; else delivers
 * text[0..n) and returns false. */
static bool stop_or_deliver(sd_api_stream *s, size_t n) {
    int32_t which = -1;
    long at = first_match(s, &which);
    if (at >= 0) {
        deliver(s, (size_t)at);
        s->stop_index = which;
        return true;
    }
    deliver(s, n);
    return false;
}

bool sd_api_stream_push(sd_api_stream *s, int32_t token, bool from_draft) {
    if (s->cancelled || s->text.oom || s->stop_index >= 0) return false;
    size_t n = sd_detok_push(&s->dt, s->tok, token, s->piece, s->piece_cap);
    s->n_tokens++;
    s->n_pushed++;
    s->n_drafted += from_draft;
    sd_strbuf_add(&s->text, s->piece, n);
    if (s->text.oom) return false; /* end the stream rather than drop text */
    return !stop_or_deliver(s, s->text.len - held_tail(s)) && !s->cancelled;
}

void sd_api_stream_finish(sd_api_stream *s) {
    if (s->cancelled || s->text.oom || s->stop_index >= 0) return;
    char tail[16];
    size_t n = sd_detok_flush(&s->dt, tail, sizeof tail);
    sd_strbuf_add(&s->text, tail, n);
    if (!s->text.oom) stop_or_deliver(s, s->text.len);
}
