#include "tokenizer/byte_level.h"

#include "tokenizer/utf8.h"

/* The 68 bytes that are not printable as themselves are 0x00..0x20 (ranks
 * 0..32), 0x7F..0xA0 (ranks 33..66) and 0xAD (rank 67); byte of rank r is
 * spelled U+0100 + r. Closed forms of that table: */
static bool printable_as_itself(unsigned b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

int sd_byte_level_byte(uint32_t cp) {
    if (cp < 256) return printable_as_itself(cp) ? (int)cp : -1;
    if (cp < 256 + 33) return (int)(cp - 256);
    if (cp < 256 + 67) return (int)(0x7F + (cp - 256 - 33));
    if (cp == 256 + 67) return 0xAD;
    return -1;
}

long sd_byte_level_decode(const char *s, size_t len, uint8_t *out) {
    const uint8_t *p = (const uint8_t *)s;
    size_t i = 0, n = 0;
    while (i < len) {
        size_t cl;
        if (sd_utf8_scan(p + i, len - i, &cl) != SD_UTF8_CHAR) return -1;
        int b = sd_byte_level_byte(sd_utf8_decode(p + i, cl));
        if (b < 0) return -1;
        out[n++] = (uint8_t)b;
        i += cl;
    }
    return (long)n;
}
