/* Code-point ranges as UTF-8 byte-range sequences, so a character class can
 * be matched one byte at a time. The splitting is the one RE2 and Go's
 * regexp/syntax use (and Russ Cox describes in "Regular Expression Matching
 * Can Be Simple And Fast"'s follow-ups): cut the range where the encoded
 * length changes, then where a continuation byte would not span 80..BF fully,
 * until each byte position is one contiguous range. Surrogates are skipped. */
#include "grammar/grammar_impl.h"
#include "tokenizer/utf8.h"

int sd_utf8_ranges(uint32_t lo, uint32_t hi, sd_utf8_seq_cb cb, void *ctx) {
    if (lo > hi) return 0;
    if (hi > 0x10FFFF) hi = 0x10FFFF;
    if (lo <= 0xDFFF && hi >= 0xD800) { /* surrogates are not characters */
        int r = lo < 0xD800 ? sd_utf8_ranges(lo, 0xD7FF, cb, ctx) : 0;
        return r ? r : (hi > 0xDFFF ? sd_utf8_ranges(0xE000, hi, cb, ctx) : 0);
    }
    static const uint32_t len_max[3] = {0x7F, 0x7FF, 0xFFFF};
    for (int i = 0; i < 3; i++)
        if (lo <= len_max[i] && hi > len_max[i]) {
            int r = sd_utf8_ranges(lo, len_max[i], cb, ctx);
            return r ? r : sd_utf8_ranges(len_max[i] + 1, hi, cb, ctx);
        }
    uint8_t a[4], b[4];
    int n = (int)sd_utf8_encode(lo, a);
    for (int i = 1; i < n; i++) {
        uint32_t m = (1u << (6 * i)) - 1; /* the low i continuation bytes */
        if ((lo & ~m) != (hi & ~m)) {
            if ((lo & m) != 0) {
                int r = sd_utf8_ranges(lo, lo | m, cb, ctx);
                return r ? r : sd_utf8_ranges((lo | m) + 1, hi, cb, ctx);
            }
            if ((hi & m) != m) {
                int r = sd_utf8_ranges(lo, (hi & ~m) - 1, cb, ctx);
                return r ? r : sd_utf8_ranges(hi & ~m, hi, cb, ctx);
            }
        }
    }
    sd_utf8_encode(hi, b);
    return cb(ctx, a, b, n);
}
