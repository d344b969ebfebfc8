#include "core/strbuf.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Makes room for `extra` more bytes plus the NUL; false (and oom) on failure. */
static bool reserve(sd_strbuf *b, size_t extra) {
    if (b->oom) return false;
    if (extra > (size_t)-1 / 2 - b->len) { b->oom = true; return false; }
    size_t need = b->len + extra + 1;
    if (need <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 64;
    while (cap < need) cap *= 2;
    char *s = realloc(b->s, cap);
    if (!s) { b->oom = true; return false; }
    b->s = s;
    b->cap = cap;
    return true;
}

void sd_strbuf_add(sd_strbuf *b, const char *p, size_t n) {
    if (!reserve(b, n)) return;
    if (n) memcpy(b->s + b->len, p, n);
    b->len += n;
    b->s[b->len] = 0;
}

void sd_strbuf_puts(sd_strbuf *b, const char *p) { sd_strbuf_add(b, p, strlen(p)); }

void sd_strbuf_printf(sd_strbuf *b, const char *fmt, ...) {
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n >= 0 && reserve(b, (size_t)n)) {
        vsnprintf(b->s + b->len, (size_t)n + 1, fmt, ap2);
        b->len += (size_t)n;
    } else if (n < 0) {
        b->oom = true;
    }
    va_end(ap2);
}

void sd_strbuf_consume(sd_strbuf *b, size_t n) {
    if (n > b->len) n = b->len;
    if (b->s) memmove(b->s, b->s + n, b->len - n + 1); /* with the NUL */
    b->len -= n;
}

void sd_strbuf_clear(sd_strbuf *b) {
    b->len = 0;
    b->oom = false;
    if (b->s) b->s[0] = 0;
}

const char *sd_strbuf_str(const sd_strbuf *b) { return b->s ? b->s : ""; }

void sd_strbuf_free(sd_strbuf *b) {
    free(b->s);
    *b = (sd_strbuf){0};
}
