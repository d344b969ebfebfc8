/* A growable byte string: text assembled piece by piece (chat prompts, JSON
 * bodies, SSE events). Always NUL-terminated after its len bytes, so s can be
 * passed to C string functions when the content has no NUL.
 *
 * Appends never fail silently: a failed allocation sets `oom`, later appends
 * become no-ops, and the owner checks `oom` once at the end. */
#ifndef SD_CORE_STRBUF_H
#define SD_CORE_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sd_strbuf {
    char *s;    /* owned; NULL until the first append */
    size_t len; /* bytes used, not counting the terminating NUL */
    size_t cap; /* bytes allocated */
    bool oom;   /* an append failed; the content is incomplete */
} sd_strbuf;

/* Appends n bytes of p (may contain NULs). */
void sd_strbuf_add(sd_strbuf *b, const char *p, size_t n);
/* Appends a NUL-terminated string. */
void sd_strbuf_puts(sd_strbuf *b, const char *p);
/* Appends printf-formatted text. */
void sd_strbuf_printf(sd_strbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Drops the first n bytes (all of them when n >= len), keeping the
 * allocation: what a writer has sent leaves the front of its queue. oom is
 * left as it was, since what remains is still incomplete. */
void sd_strbuf_consume(sd_strbuf *b, size_t n);
/* Empties the buffer, keeping its allocation (and clearing oom). */
void sd_strbuf_clear(sd_strbuf *b);
/* The text, "" when nothing was appended; valid until the next append. */
const char *sd_strbuf_str(const sd_strbuf *b);
/* Frees the allocation; the buffer is empty and reusable afterwards. */
void sd_strbuf_free(sd_strbuf *b);

#endif
