#include "server/sbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool reserve(sbuf *b, size_t extra) {
    if (b->oom) return false;
    if (extra > ((size_t)-1) / 4 - b->len) { b->oom = true; return false; }
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < need) cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) { b->oom = true; return false; }
    b->s = s;
    b->cap = cap;
    return true;
}

void sbuf_add(sbuf *b, const char *p, size_t n) {
    if (!reserve(b, n)) return;
    if (n) memcpy(b->s + b->len, p, n);
    b->len += n;
    b->s[b->len] = 0;
}

void sbuf_puts(sbuf *b, const char *p) { sbuf_add(b, p, strlen(p)); }

void sbuf_printf(sbuf *b, const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n < 0) b->oom = true;
    else if (reserve(b, (size_t)n)) {
        vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    }
    va_end(ap2);
}

void sbuf_consume(sbuf *b, size_t n) {
    if (n >= b->len) { sbuf_clear(b); return; }
    memmove(b->s, b->s + n, b->len - n + 1);
    b->len -= n;
}

void sbuf_clear(sbuf *b) {
    b->len = 0;
    if (b->s) b->s[0] = 0;
}

void sbuf_free(sbuf *b) {
    free(b->s);
    *b = (sbuf){0};
}

const char *sbuf_str(const sbuf *b) { return b->s ? b->s : ""; }
