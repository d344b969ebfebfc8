/* Token ids -> bytes (llama.cpp src/llama-vocab.cpp token_to_piece,
 * detokenize), and the streaming detokenizer that only ever prints whole
 * UTF-8 characters. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/utf8.h"
#include "tokenizer/vocab.h"

static bool hidden(const sd_tokenizer *tok, int32_t id, bool show_special) {
    return !show_special && (tok->tokens[id].attr & (SD_ATTR_CONTROL | SD_ATTR_UNKNOWN));
}

int sd_token_to_bytes(const sd_tokenizer *tok, int32_t id, bool show_special, char *buf, size_t cap) {
    if (id < 0 || id >= tok->n_vocab) return -1;
    if (hidden(tok, id, show_special)) return 0;
    size_t n = tok->tokens[id].piece_len;
    memcpy(buf, sd_tok_piece(tok, id), n < cap ? n : cap);
    return (int)n;
}

sd_status sd_detokenize(const sd_tokenizer *tok, const int32_t *ids, size_t n_ids, bool show_special,
                        char **text, size_t *len, sd_err *err) {
    *text = NULL;
    *len = 0;
    size_t total = 0;
    for (size_t i = 0; i < n_ids; i++) {
        if (ids[i] < 0 || ids[i] >= tok->n_vocab)
            return sd_err_set(err, SD_ERR_ARG, "token id %d out of range [0, %d)", ids[i], tok->n_vocab);
        if (!hidden(tok, ids[i], show_special)) total += tok->tokens[ids[i]].piece_len;
    }
    char *out = malloc(total + 1);
    if (!out) return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    size_t n = 0;
    for (size_t i = 0; i < n_ids; i++) {
        if (hidden(tok, ids[i], show_special)) continue;
        memcpy(out + n, sd_tok_piece(tok, ids[i]), tok->tokens[ids[i]].piece_len);
        n += tok->tokens[ids[i]].piece_len;
    }
    /* Undo the space SPM put in front of the text (add_space_prefix). */
    if (tok->kind == SD_TOK_SPM && tok->add_space_prefix && n > 0 && out[0] == ' ') memmove(out, out + 1, --n);
    out[n] = '\0';
    *text = out;
    *len = n;
    return SD_OK;
}

/* ---- streaming ---- */

static const char REPLACEMENT[3] = {(char)0xEF, (char)0xBF, (char)0xBD}; /* U+FFFD */

typedef struct sink {
    char *out;
    size_t cap, n;
} sink;

static void put(sink *s, const void *p, size_t k) {
    if (k > s->cap - s->n) { /* never with cap >= sd_detok_cap(): drop the rest */
        s->cap = s->n;
        return;
    }
    memcpy(s->out + s->n, p, k);
    s->n += k;
}

/* Emits what is decidable in pending; leaves a truncated prefix there. */
static void drain_pending(sd_detok *d, sink *s) {
    while (d->n_pending > 0) {
        size_t k;
        sd_utf8_kind kind = sd_utf8_scan((const uint8_t *)d->pending, (size_t)d->n_pending, &k);
        if (kind == SD_UTF8_TRUNCATED) return;
        put(s, kind == SD_UTF8_CHAR ? d->pending : REPLACEMENT, kind == SD_UTF8_CHAR ? k : 3);
        memmove(d->pending, d->pending + k, (size_t)d->n_pending - k);
        d->n_pending -= (int)k;
    }
}

void sd_detok_init(sd_detok *d) { memset(d, 0, sizeof *d); }

size_t sd_detok_push(sd_detok *d, const sd_tokenizer *tok, int32_t id, char *out, size_t cap) {
    if (id < 0 || id >= tok->n_vocab || hidden(tok, id, false)) return 0;
    const uint8_t *p = (const uint8_t *)sd_tok_piece(tok, id);
    size_t n = tok->tokens[id].piece_len, i = 0;
    sink s = {out, cap, 0};
    /* Complete a held sequence one byte at a time (it is at most 3 bytes). */
    while (d->n_pending > 0 && i < n) {
        d->pending[d->n_pending++] = (char)p[i++];
        drain_pending(d, &s);
    }
    while (i < n) {
        size_t k;
        sd_utf8_kind kind = sd_utf8_scan(p + i, n - i, &k);
        if (kind == SD_UTF8_TRUNCATED) { /* only possible at the end of the piece */
            memcpy(d->pending, p + i, k);
            d->n_pending = (int)k;
        } else {
            put(&s, kind == SD_UTF8_CHAR ? (const void *)(p + i) : REPLACEMENT, kind == SD_UTF8_CHAR ? k : 3);
        }
        i += k;
    }
    return s.n;
}

size_t sd_detok_flush(sd_detok *d, char *out, size_t cap) {
    sink s = {out, cap, 0};
    if (d->n_pending > 0) put(&s, REPLACEMENT, 3); /* a truncated sequence is one maximal subpart */
    d->n_pending = 0;
    return s.n;
}

size_t sd_detok_cap(const sd_tokenizer *tok) { return 3 * ((size_t)tok->max_piece + 4); }
