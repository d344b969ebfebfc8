/* Helpers shared by the tokenizer tests: load a vocab GGUF from
 * tests/data/tokenizer, read a whole file. (Header-only: each test is one
 * program.) */
#ifndef SD_TESTS_TOK_UTIL_H
#define SD_TESTS_TOK_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/gguf.h"
#include "tokenizer/tokenizer.h"

/* Reads path into a malloc'd NUL-terminated buffer; NULL on failure. */
static inline char *tok_read_file(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *b = realloc(buf, 2 * cap + 1);
            if (!b) {
                free(buf);
                buf = NULL;
            }
            buf = b;
            cap *= 2;
        }
    }
    fclose(f);
    if (buf) buf[n] = '\0';
    *len = n;
    return buf;
}

/* Loads tests/data/tokenizer/ggml-vocab-NAME.gguf (the GGUF is closed again:
 * the tokenizer must not depend on it). NULL and a message on failure. */
static inline sd_tokenizer *tok_load(const char *name) {
    char path[256];
    snprintf(path, sizeof path, "tests/data/tokenizer/ggml-vocab-%s.gguf", name);
    gguf_ctx *ctx = NULL;
    sd_tokenizer *tok = NULL;
    sd_err err = {0};
    if (gguf_open(path, &ctx, &err) != SD_OK || sd_tokenizer_init(ctx, &tok, &err) != SD_OK)
        fprintf(stderr, "%s: %s\n", path, err.msg);
    gguf_close(ctx);
    return tok;
}

#endif
