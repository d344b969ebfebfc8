/* UTF-8 scanning for the tokenizer: which bytes form a character, a
 * truncated-but-valid prefix, or an invalid sequence. Validity follows the
 * Unicode Standard, Table 3-7 (no overlong forms, no surrogates, at most
 * U+10FFFF), which is also what PCRE2 accepts as valid UTF. */
#ifndef SD_TOKENIZER_UTF8_H
#define SD_TOKENIZER_UTF8_H

#include <stddef.h>
#include <stdint.h>

typedef enum sd_utf8_kind {
    SD_UTF8_CHAR,      /* *len bytes are one complete, valid character */
    SD_UTF8_TRUNCATED, /* all n bytes are a valid prefix of a longer character */
    SD_UTF8_INVALID,   /* the first *len bytes (>= 1) can never start a character:
                          the "maximal subpart" to replace with one U+FFFD */
} sd_utf8_kind;

/* Classifies the bytes at s (n >= 1 available). */
sd_utf8_kind sd_utf8_scan(const uint8_t *s, size_t n, size_t *len);

/* Length of the character at s: its byte count if valid and complete,
 * otherwise 1 (an invalid or truncated byte is a unit of its own). n >= 1. */
size_t sd_utf8_unit(const uint8_t *s, size_t n);

/* Writes the UTF-8 form of code point cp (< 0x110000) to out; returns 1..4. */
size_t sd_utf8_encode(uint32_t cp, uint8_t out[4]);

/* Decodes the valid character of len bytes at s (from sd_utf8_scan). */
uint32_t sd_utf8_decode(const uint8_t *s, size_t len);

#endif
