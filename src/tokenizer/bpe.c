/* Byte-level BPE of one word (llama.cpp src/llama-vocab.cpp
 * llm_tokenizer_bpe_session::tokenize): start from single bytes, repeatedly
 * merge the adjacent pair with the lowest merge rank (leftmost on ties),
 * then map each symbol to its token, falling back to one token per byte.
 * Works on raw bytes: tokens and merges were re-spelled at load (merges.c). */
#include <string.h>

#include "tokenizer/encoders.h"

static bool queue_pair(const sd_tokenizer *tok, const uint8_t *w, sd_bpe_scratch *s, int32_t left,
                       int32_t right) {
    if (left < 0 || right < 0) return true;
    const sd_symbol *l = &s->sym[left], *r = &s->sym[right];
    if ((size_t)l->n + r->n > tok->max_merge_len) return true;
    uint32_t prefix = l->n; /* merge key: u32 left length || left || right */
    int32_t rank;
    if (!sd_strmap_get2(&tok->merges, &prefix, 4, w + l->off, (size_t)l->n + r->n, &rank)) return true;
    return sd_merge_heap_push(&s->heap, (sd_merge){(double)rank, left, right, l->n, r->n});
}

static bool emit_symbol(const sd_tokenizer *tok, const uint8_t *bytes, size_t n, sd_ids *out) {
    int32_t id;
    if (sd_strmap_get(&tok->bytes_to_id, bytes, n, &id)) return sd_ids_push(out, id);
    for (size_t i = 0; i < n; i++) /* a byte without a token is dropped, as in llama.cpp */
        if (tok->byte_to_id[bytes[i]] >= 0 && !sd_ids_push(out, tok->byte_to_id[bytes[i]])) return false;
    return true;
}

static bool bpe_word(const sd_tokenizer *tok, const uint8_t *w, size_t n, sd_bpe_scratch *s, sd_ids *out) {
    int32_t id;
    if (tok->ignore_merges && sd_strmap_get(&tok->bytes_to_id, w, n, &id)) return sd_ids_push(out, id);
    if (n > INT32_MAX || !sd_bpe_scratch_reserve(s, n)) return false;
    sd_symbol *sym = s->sym;
    for (size_t i = 0; i < n; i++) sym[i].off = (uint32_t)i, sym[i].n = 1;
    sd_symbols_link(sym, n);
    for (size_t i = 1; i < n; i++)
        if (!queue_pair(tok, w, s, (int32_t)i - 1, (int32_t)i)) return false;
    sd_merge m;
    while (sd_merge_heap_pop(&s->heap, &m)) {
        if (!sd_symbols_apply(sym, &m)) continue; /* stale */
        if (!queue_pair(tok, w, s, sym[m.left].prev, m.left) || !queue_pair(tok, w, s, m.left, sym[m.left].next))
            return false;
    }
    for (int32_t i = 0; i >= 0; i = sym[i].next)
        if (!emit_symbol(tok, w + sym[i].off, sym[i].n, out)) return false;
    return true;
}

sd_status sd_bpe_encode(const sd_tokenizer *tok, const char *text, size_t len, sd_bpe_scratch *s,
                        sd_spans *words, sd_ids *out, sd_err *err) {
    sd_status st = sd_pretok_split(tok->pretok, text, len, words, err);
    if (st) return st;
    for (size_t i = 0; i < words->n; i++)
        if (!bpe_word(tok, (const uint8_t *)text + words->v[i].off, words->v[i].len, s, out))
            return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    return SD_OK;
}
