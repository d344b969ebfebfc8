/* GPT-2 byte-level alphabet (OpenAI gpt-2 encoder.py bytes_to_unicode, also
 * llama.cpp src/unicode.cpp): every byte b is spelled as one printable code
 * point. The printable bytes '!'..'~', 0xA1..0xAC and 0xAE..0xFF stand for
 * themselves; the other 68 bytes, in increasing order, become U+0100..U+0143
 * (so the space 0x20 is 'Ġ' U+0120, '\n' is 'Ċ' U+010A). Byte-level BPE
 * vocabularies and merges are written in this alphabet. */
#ifndef SD_TOKENIZER_BYTE_LEVEL_H
#define SD_TOKENIZER_BYTE_LEVEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Byte spelled by code point cp, or -1 if cp is not in the alphabet. */
int sd_byte_level_byte(uint32_t cp);

/* Decodes a byte-level spelling (len bytes of UTF-8) into raw bytes at out
 * (room for len bytes is always enough: every character gives one byte).
 * Returns the byte count, or -1 if some character is not in the alphabet
 * or the UTF-8 is invalid. */
long sd_byte_level_decode(const char *s, size_t len, uint8_t *out);

#endif
