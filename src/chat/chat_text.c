#include "chat/chat_text.h"

#include <string.h>

sd_slice sd_slice_of(const char *s) { return (sd_slice){s ? s : "", s ? strlen(s) : 0}; }

/* Python's str.isspace() code points (Unicode White_Space minus the ones
 * CPython leaves out, i.e. bidi class WS/B/S or category Zs). */
static bool is_py_space(unsigned cp) {
    return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 ||
           cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 ||
           cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

/* Length of the UTF-8 sequence at p (n bytes available) and its code point;
 * an invalid byte counts as one non-space unit. */
static size_t utf8_at(const unsigned char *p, size_t n, unsigned *cp) {
    if (p[0] < 0x80) { *cp = p[0]; return 1; }
    size_t len = p[0] >= 0xF0 ? 4 : p[0] >= 0xE0 ? 3 : p[0] >= 0xC0 ? 2 : 0;
    if (len == 0 || len > n) { *cp = 0xFFFD; return 1; }
    unsigned v = p[0] & (0x7F >> len);
    for (size_t i = 1; i < len; i++) {
        if ((p[i] & 0xC0) != 0x80) { *cp = 0xFFFD; return 1; }
        v = v << 6 | (p[i] & 0x3F);
    }
    *cp = v;
    return len;
}

sd_slice sd_slice_ltrim(sd_slice s) {
    const unsigned char *p = (const unsigned char *)s.p;
    size_t i = 0;
    while (i < s.n) {
        unsigned cp;
        size_t k = utf8_at(p + i, s.n - i, &cp);
        if (!is_py_space(cp)) break;
        i += k;
    }
    return (sd_slice){s.p + i, s.n - i};
}

sd_slice sd_slice_rtrim(sd_slice s) {
    const unsigned char *p = (const unsigned char *)s.p;
    size_t end = s.n;
    while (end > 0) {
        size_t start = end - 1; /* back up to the lead byte of the last character */
        while (start > 0 && end - start < 4 && (p[start] & 0xC0) == 0x80) start--;
        unsigned cp;
        size_t k = utf8_at(p + start, end - start, &cp);
        if (start + k != end) { start = end - 1; cp = p[start]; } /* not one whole character */
        if (!is_py_space(cp)) break;
        end = start;
    }
    return (sd_slice){s.p, end};
}

sd_slice sd_slice_trim(sd_slice s) { return sd_slice_rtrim(sd_slice_ltrim(s)); }

sd_slice sd_slice_lstrip_char(sd_slice s, char c) {
    while (s.n && s.p[0] == c) { s.p++; s.n--; }
    return s;
}

sd_slice sd_slice_rstrip_char(sd_slice s, char c) {
    while (s.n && s.p[s.n - 1] == c) s.n--;
    return s;
}

long sd_slice_find(sd_slice s, const char *sep) {
    size_t m = strlen(sep);
    if (m > s.n) return -1;
    for (size_t i = 0; i + m <= s.n; i++)
        if (!memcmp(s.p + i, sep, m)) return (long)i;
    return -1;
}

long sd_slice_rfind(sd_slice s, const char *sep) {
    size_t m = strlen(sep);
    if (m > s.n) return -1;
    for (size_t i = s.n - m + 1; i-- > 0;)
        if (!memcmp(s.p + i, sep, m)) return (long)i;
    return -1;
}

sd_slice sd_slice_before_first(sd_slice s, const char *sep) {
    long at = sd_slice_find(s, sep);
    return at < 0 ? s : (sd_slice){s.p, (size_t)at};
}

sd_slice sd_slice_after_last(sd_slice s, const char *sep) {
    long at = sd_slice_rfind(s, sep);
    if (at < 0) return s;
    size_t from = (size_t)at + strlen(sep);
    return (sd_slice){s.p + from, s.n - from};
}

bool sd_slice_starts(sd_slice s, const char *prefix) {
    size_t m = strlen(prefix);
    return m <= s.n && !memcmp(s.p, prefix, m);
}

bool sd_slice_ends(sd_slice s, const char *suffix) {
    size_t m = strlen(suffix);
    return m <= s.n && !memcmp(s.p + s.n - m, suffix, m);
}
