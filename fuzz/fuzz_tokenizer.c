/* libFuzzer target: encode and decode arbitrary bytes with the qwen2 (byte-level
 * BPE) and llama-spm (SentencePiece) vocabularies of tests/data/tokenizer.
 * First byte: bit 0 vocab (0 qwen2, 1 llama-spm), bit 1 add_special, bit 2
 * parse_special, bit 3 "ids mode" (the rest is read as int32 ids, in range
 * or not, and decoded). Checks: ids in range, byte-level BPE round-trips
 * exactly, SPM too when it is lossless, the streaming detokenizer writes
 * valid UTF-8 that equals the one-shot decode once repaired.
 * Build and run (from the repo root): bash fuzz/run.sh SECONDS fuzz_tokenizer */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

#define CHECK(c)                                                               \
    do {                                                                       \
        if (!(c)) {                                                            \
            fprintf(stderr, "fuzz_tokenizer: check failed: %s (line %d)\n", #c, __LINE__); \
            abort();                                                           \
        }                                                                      \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sd_tokenizer *g_tok[2];

static sd_tokenizer *load(const char *name) {
    char path[512];
    const char *root = getenv("SD_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/data/tokenizer/ggml-vocab-%s.gguf", root ? root : ".", name);
    gguf_ctx *ctx;
    sd_tokenizer *tok = NULL;
    sd_err err = {0};
    if (gguf_open(path, &ctx, &err) || sd_tokenizer_init(ctx, &tok, &err)) {
        fprintf(stderr, "fuzz_tokenizer: %s\n", err.msg);
        abort();
    }
    gguf_close(ctx);
    return tok;
}

static bool contains(const uint8_t *s, size_t n, const char *needle) {
    size_t m = strlen(needle);
    for (size_t i = 0; i + m <= n; i++)
        if (!memcmp(s + i, needle, m)) return true;
    return false;
}

/* Streams ids through sd_detok; the output must be valid UTF-8 and as long as
 * the one-shot text with its invalid parts replaced (checked by length of
 * the valid characters: every valid character of text appears in order). */
static void check_stream(const sd_tokenizer *tok, const int32_t *ids, size_t n) {
    size_t cap = sd_detok_cap(tok), w = 0, out_cap = cap * (n + 1) + 8;
    char *out = malloc(out_cap);
    CHECK(out);
    sd_detok d;
    sd_detok_init(&d);
    for (size_t i = 0; i < n; i++) {
        size_t got = sd_detok_push(&d, tok, ids[i], out + w, cap);
        CHECK(got <= cap);
        w += got;
    }
    w += sd_detok_flush(&d, out + w, 3);
    for (size_t i = 0; i < w;) {
        size_t k;
        CHECK(sd_utf8_scan((const uint8_t *)out + i, w - i, &k) == SD_UTF8_CHAR);
        i += k;
    }
    free(out);
}

static void fuzz_text(const sd_tokenizer *tok, const uint8_t *text, size_t len, bool add_special, bool parse_special) {
    int32_t *ids;
    size_t n;
    sd_err err = {0};
    CHECK(sd_tokenize(tok, (const char *)text, len, add_special, parse_special, &ids, &n, &err) == SD_OK);
    for (size_t i = 0; i < n; i++) CHECK(ids[i] >= 0 && ids[i] < sd_tokenizer_n_vocab(tok));
    if (add_special && sd_tokenizer_add_bos(tok)) CHECK(n >= 1 && ids[0] == sd_tokenizer_bos(tok));
    char *back;
    size_t back_len;
    /* Without BOS/EOS, a decode showing what was parsed as special is the input. */
    CHECK(sd_detokenize(tok, ids, n, parse_special, &back, &back_len, &err) == SD_OK);
    bool lossless = !add_special && (sd_tokenizer_type(tok) == SD_TOK_BPE ||
                                     (!parse_special && !contains(text, len, "\xE2\x96\x81")));
    if (lossless) CHECK(back_len == len && memcmp(back, text, len) == 0);
    free(back);
    check_stream(tok, ids, n);
    free(ids);
}

static void fuzz_ids(const sd_tokenizer *tok, const uint8_t *data, size_t size) {
    size_t n = size / 4;
    int32_t *ids = malloc(n ? n * sizeof *ids : 1);
    CHECK(ids);
    bool in_range = true;
    for (size_t i = 0; i < n; i++) {
        uint32_t v;
        memcpy(&v, data + 4 * i, 4);
        /* mostly valid ids, sometimes anything */
        ids[i] = (v >> 31) ? (int32_t)v : (int32_t)(v % (uint32_t)sd_tokenizer_n_vocab(tok));
        in_range &= ids[i] >= 0 && ids[i] < sd_tokenizer_n_vocab(tok);
        char piece[8];
        int r = sd_token_to_bytes(tok, ids[i], (v >> 30) & 1, piece, sizeof piece);
        CHECK(r >= -1 && (r >= 0) == (ids[i] >= 0 && ids[i] < sd_tokenizer_n_vocab(tok)));
        (void)sd_tokenizer_is_eog(tok, ids[i]);
        (void)sd_token_text(tok, ids[i]);
    }
    char *text;
    size_t len;
    sd_err err = {0};
    sd_status st = sd_detokenize(tok, ids, n, true, &text, &len, &err);
    CHECK(in_range ? st == SD_OK : st == SD_ERR_ARG);
    if (st == SD_OK) free(text);
    check_stream(tok, ids, n); /* out-of-range ids are ignored there */
    free(ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (!g_tok[0]) {
        g_tok[0] = load("qwen2");
        g_tok[1] = load("llama-spm");
    }
    if (size == 0) return 0;
    uint8_t mode = data[0];
    const sd_tokenizer *tok = g_tok[mode & 1];
    if (mode & 8) fuzz_ids(tok, data + 1, size - 1);
    else fuzz_text(tok, data + 1, size - 1, mode & 2, mode & 4);
    return 0;
}
