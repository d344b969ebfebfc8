/* SentencePiece BPE with byte fallback (llama.cpp src/llama-vocab.cpp
 * llm_tokenizer_spm_session, the "llama" tokenizer model): spaces become
 * U+2581 "▁", the text is cut into characters, and adjacent symbols whose
 * concatenation is a token merge, highest `tokenizer.ggml.scores` first
 * (leftmost on ties). A symbol that is no token is emitted as its bytes'
 * <0xNN> tokens. */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/encoders.h"
#include "tokenizer/utf8.h"

#define ESCAPED_SPACE "\xE2\x96\x81"

static bool queue_pair(const sd_tokenizer *tok, const char *w, sd_bpe_scratch *s, int32_t left, int32_t right) {
    if (left < 0 || right < 0) return true;
    const sd_symbol *l = &s->sym[left], *r = &s->sym[right];
    int32_t id;
    if (!sd_strmap_get(&tok->text_to_id, w + l->off, (size_t)l->n + r->n, &id)) return true;
    return sd_merge_heap_push(&s->heap, (sd_merge){-(double)tok->tokens[id].score, left, right, l->n, r->n});
}

static bool emit_symbol(const sd_tokenizer *tok, const char *text, size_t n, sd_ids *out) {
    int32_t id;
    if (sd_strmap_get(&tok->text_to_id, text, n, &id)) return sd_ids_push(out, id);
    for (size_t i = 0; i < n; i++) {
        id = tok->byte_to_id[(uint8_t)text[i]];
        if (id < 0) id = tok->unk;
        if (id >= 0 && !sd_ids_push(out, id)) return false;
    }
    return true;
}

/* s->buf = optional "▁" + text with every ' ' replaced by "▁"; returns length. */
static bool escape_spaces(const char *text, size_t len, bool space_prefix, sd_bpe_scratch *s, size_t *n_out) {
    if (len > (SIZE_MAX - 3) / 3) return false;
    size_t need = 3 * (len + 1);
    if (need > s->buf_cap) {
        char *b = realloc(s->buf, need);
        if (!b) return false;
        s->buf = b, s->buf_cap = need;
    }
    size_t n = 0;
    if (space_prefix) memcpy(s->buf, ESCAPED_SPACE, 3), n = 3;
    for (size_t i = 0; i < len; i++) {
        if (text[i] == ' ') memcpy(s->buf + n, ESCAPED_SPACE, 3), n += 3;
        else s->buf[n++] = text[i];
    }
    *n_out = n;
    return true;
}

sd_status sd_spm_encode(const sd_tokenizer *tok, const char *text, size_t len, bool space_prefix,
                        sd_bpe_scratch *s, sd_ids *out, sd_err *err) {
    size_t n;
    if (!escape_spaces(text, len, space_prefix, s, &n) || n > INT32_MAX || !sd_bpe_scratch_reserve(s, n))
        return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    if (n == 0) return SD_OK;
    const char *w = s->buf;
    sd_symbol *sym = s->sym;
    size_t n_sym = 0;
    for (size_t i = 0; i < n; n_sym++) { /* characters; an invalid byte is its own symbol */
        uint32_t cl = (uint32_t)sd_utf8_unit((const uint8_t *)w + i, n - i);
        sym[n_sym].off = (uint32_t)i, sym[n_sym].n = cl;
        i += cl;
    }
    sd_symbols_link(sym, n_sym);
    for (size_t i = 1; i < n_sym; i++)
        if (!queue_pair(tok, w, s, (int32_t)i - 1, (int32_t)i)) return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    sd_merge m;
    while (sd_merge_heap_pop(&s->heap, &m)) {
        if (!sd_symbols_apply(sym, &m)) continue; /* stale */
        if (!queue_pair(tok, w, s, sym[m.left].prev, m.left) || !queue_pair(tok, w, s, m.left, sym[m.left].next))
            return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    }
    for (int32_t i = 0; i >= 0; i = sym[i].next)
        if (!emit_symbol(tok, w + sym[i].off, sym[i].n, out)) return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    return SD_OK;
}
