/* A growable byte buffer for the server (SSE events, response bodies). The
 * server sees only the public API, so it keeps its own small one. A failed
 * allocation sets oom; later appends are no-ops and the owner checks once. */
#ifndef SD_SERVER_SBUF_H
#define SD_SERVER_SBUF_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct sbuf {
    char *s;    /* owned, NUL-terminated after len bytes once non-empty */
    size_t len;
    size_t cap;
    bool oom;
} sbuf;

void sbuf_add(sbuf *b, const char *p, size_t n);
void sbuf_puts(sbuf *b, const char *p);
void sbuf_printf(sbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Drops the first n bytes. */
void sbuf_consume(sbuf *b, size_t n);
void sbuf_clear(sbuf *b);
void sbuf_free(sbuf *b);
/* The content, "" when empty. */
const char *sbuf_str(const sbuf *b);

#endif
