/* Byte-level BPE tables: tokens and merges re-spelled as raw bytes.
 * `tokenizer.ggml.merges` holds "LEFT RIGHT" strings in the byte-level
 * alphabet, in priority order (rank = index); llama.cpp splits each at the
 * first space after position 0 and keeps the first rank of a repeated pair
 * (llama_vocab::impl::load, bpe_ranks). */
#include <stdlib.h>
#include <string.h>

#include "tokenizer/byte_level.h"
#include "tokenizer/vocab.h"

#define KEY_MERGES "tokenizer.ggml.merges"

static sd_status load_bytes_to_id(sd_tokenizer *tok, sd_err *err) {
    bool ok = sd_strmap_init(&tok->bytes_to_id, (size_t)tok->n_vocab);
    uint8_t *buf = NULL;
    size_t cap = 0;
    for (int32_t id = 0; ok && id < tok->n_vocab; id++) {
        size_t n = tok->tokens[id].text_len;
        if (n > cap) {
            uint8_t *b = realloc(buf, n);
            if (!(ok = b != NULL)) break;
            buf = b, cap = n;
        }
        long m = sd_byte_level_decode(sd_tok_text(tok, id), n, buf);
        /* A spelling outside the alphabet can never be produced from input bytes. */
        if (m >= 0) ok = sd_strmap_put(&tok->bytes_to_id, buf, (size_t)m, id, NULL) >= 0;
    }
    free(buf);
    return ok ? SD_OK : sd_err_set(err, SD_ERR_NOMEM, "out of memory");
}

/* Adds merge string s (len bytes) with rank i; malformed ones are skipped,
 * as they can never apply. key has room for 4 + len bytes. */
static bool add_merge(sd_tokenizer *tok, const char *s, size_t len, int32_t rank, uint8_t *key) {
    const char *sp = len > 1 ? memchr(s + 1, ' ', len - 1) : NULL;
    if (!sp) return true;
    size_t left_len = (size_t)(sp - s);
    long l = sd_byte_level_decode(s, left_len, key + 4);
    if (l <= 0) return true;
    long r = sd_byte_level_decode(sp + 1, len - left_len - 1, key + 4 + l);
    if (r <= 0) return true;
    uint32_t ln = (uint32_t)l;
    memcpy(key, &ln, 4); /* host order: only ever compared with keys built the same way */
    if ((size_t)(l + r) > tok->max_merge_len) tok->max_merge_len = (size_t)(l + r);
    return sd_strmap_put(&tok->merges, key, 4 + (size_t)(l + r), rank, NULL) >= 0;
}

sd_status sd_vocab_load_merges(sd_tokenizer *tok, const gguf_ctx *ctx, sd_err *err) {
    sd_status st = load_bytes_to_id(tok, err);
    if (st) return st;
    uint64_t n;
    if (!gguf_get_arr_str_n(ctx, KEY_MERGES, &n)) return sd_err_set(err, SD_ERR_FORMAT, "missing string array %s", KEY_MERGES);
    if (n > INT32_MAX) return sd_err_set(err, SD_ERR_FORMAT, "%s: too many merges", KEY_MERGES);
    if (!sd_strmap_init(&tok->merges, n)) return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    uint8_t *key = NULL;
    size_t cap = 0;
    for (uint64_t i = 0; i < n; i++) {
        const char *s;
        uint64_t len;
        if (!gguf_get_arr_str(ctx, KEY_MERGES, i, &s, &len)) {
            free(key);
            return sd_err_set(err, SD_ERR_FORMAT, "%s[%llu] unreadable", KEY_MERGES, (unsigned long long)i);
        }
        bool ok = len < SIZE_MAX - 4;
        if (ok && len + 4 > cap) {
            uint8_t *k = realloc(key, (size_t)len + 4);
            if ((ok = k != NULL)) key = k, cap = (size_t)len + 4;
        }
        if (!ok || !add_merge(tok, s, (size_t)len, (int32_t)i, key)) {
            free(key);
            return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
        }
    }
    free(key);
    return SD_OK;
}
