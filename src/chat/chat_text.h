/* Python string operations on byte slices, as the Jinja templates use them:
 * `|trim` and `.strip()` (Python str.strip: Unicode whitespace), `.strip('\n')`,
 * `.split(sep)[0]` / `[-1]`, `in`, `startswith` / `endswith`. */
#ifndef SD_CHAT_CHAT_TEXT_H
#define SD_CHAT_CHAT_TEXT_H

#include <stdbool.h>
#include <stddef.h>

typedef struct sd_slice {
    const char *p;
    size_t n;
} sd_slice;

/* The slice of a NUL-terminated string (NULL gives the empty slice). */
sd_slice sd_slice_of(const char *s);
/* Python str.strip() / .lstrip() / .rstrip() with no argument: whitespace as str.isspace(). */
sd_slice sd_slice_trim(sd_slice s);
sd_slice sd_slice_ltrim(sd_slice s);
sd_slice sd_slice_rtrim(sd_slice s);
/* .lstrip(c) / .rstrip(c) for one ASCII character c. */
sd_slice sd_slice_lstrip_char(sd_slice s, char c);
sd_slice sd_slice_rstrip_char(sd_slice s, char c);
/* Offset of the first / last occurrence of sep, or -1. */
long sd_slice_find(sd_slice s, const char *sep);
long sd_slice_rfind(sd_slice s, const char *sep);
/* s.split(sep)[0] and s.split(sep)[-1]. */
sd_slice sd_slice_before_first(sd_slice s, const char *sep);
sd_slice sd_slice_after_last(sd_slice s, const char *sep);
bool sd_slice_starts(sd_slice s, const char *prefix);
bool sd_slice_ends(sd_slice s, const char *suffix);

#endif
