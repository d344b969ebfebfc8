/* Digit-range grammars: the canonical decimal spellings (no leading zeros,
 * no "-0") of the integers in an interval, and of plain decimal numbers
 * between integer bounds. The construction splits [lo, hi] by digit count,
 * then recursively by leading digit, as regex generators for numeric ranges
 * do; each level adds at most two one-sided ranges, so the expression grows
 * with the square of the digit count (at most 19 digits here). */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "grammar/json_schema_impl.h"

static bool all_char(const char *s, size_t n, char ch) {
    for (size_t i = 0; i < n; i++)
        if (s[i] != ch) return false;
    return true;
}

/* Digit strings lo..hi of the same length n (lo <= hi), leading zeros allowed
 * here (the caller fixes the first digit). */
static void same_len(sd_strbuf *out, const char *lo, const char *hi, size_t n) {
    if (n == 0) return;
    if (memcmp(lo, hi, n) == 0) {
        sd_strbuf_printf(out, "\"%.*s\"", (int)n, lo);
        return;
    }
    if (all_char(lo + 1, n - 1, '0') && all_char(hi + 1, n - 1, '9')) {
        sd_strbuf_printf(out, "[%c-%c]", lo[0], hi[0]);
        if (n > 1) sd_strbuf_printf(out, " [0-9]{%zu}", n - 1);
        return;
    }
    if (lo[0] == hi[0]) {
        sd_strbuf_printf(out, "\"%c\" ", lo[0]);
        same_len(out, lo + 1, hi + 1, n - 1);
        return;
    }
    char nines[20], zeros[20];
    memset(nines, '9', n - 1);
    memset(zeros, '0', n - 1);
    sd_strbuf_printf(out, "(\"%c\" ", lo[0]);
    same_len(out, lo + 1, nines, n - 1);
    if (lo[0] + 1 <= hi[0] - 1) {
        sd_strbuf_printf(out, " | [%c-%c]", lo[0] + 1, hi[0] - 1);
        sd_strbuf_printf(out, " [0-9]{%zu}", n - 1);
    }
    sd_strbuf_printf(out, " | \"%c\" ", hi[0]);
    same_len(out, zeros, hi + 1, n - 1);
    sd_strbuf_puts(out, ")");
}

static uint64_t pow10u(int k) {
    uint64_t p = 1;
    while (k-- > 0) p *= 10;
    return p;
}

static int ndigits(uint64_t v) {
    int n = 1;
    while (v >= 10) { v /= 10; n++; }
    return n;
}

/* Unsigned magnitudes in [a, b] (b unbounded when !has_b), canonical. */
static void uint_range(sd_strbuf *out, uint64_t a, bool has_b, uint64_t b) {
    int la = ndigits(a), lb = has_b ? ndigits(b) : 0;
    char s1[24], s2[24];
    bool first = true;
    sd_strbuf_puts(out, "(");
    for (int len = la; has_b ? len <= lb : len <= la; len++) {
        uint64_t lo = len == la ? a : pow10u(len - 1);
        uint64_t top = pow10u(len) - 1;
        uint64_t hi = has_b && len == lb ? b : top;
        snprintf(s1, sizeof s1, "%" PRIu64, lo);
        snprintf(s2, sizeof s2, "%" PRIu64, hi);
        if (!first) sd_strbuf_puts(out, " | ");
        first = false;
        same_len(out, s1, s2, (size_t)len);
    }
    if (!has_b) sd_strbuf_printf(out, " | [1-9] [0-9]{%d,}", la);
    sd_strbuf_puts(out, ")");
}

void js_int_range(sd_strbuf *out, bool has_lo, int64_t lo, bool has_hi, int64_t hi) {
    bool neg = !has_lo || lo < 0, nonneg = !has_hi || hi >= 0;
    sd_strbuf_puts(out, "(");
    if (neg) { /* "-" then magnitudes in [max(1, -hi), -lo] */
        uint64_t a = has_hi && hi < 0 ? (uint64_t)(-hi) : 1;
        sd_strbuf_puts(out, "\"-\" ");
        uint_range(out, a, has_lo, has_lo ? (uint64_t)(-lo) : 0);
    }
    if (nonneg) {
        if (neg) sd_strbuf_puts(out, " | ");
        uint_range(out, has_lo && lo > 0 ? (uint64_t)lo : 0, has_hi, has_hi ? (uint64_t)hi : 0);
    }
    sd_strbuf_puts(out, ")");
}

#define FRAC_ANY "(\".\" [0-9]+)?"
#define FRAC_ZERO "(\".\" \"0\"+)?"
#define FRAC_POS "\".\" [0-9]* [1-9] [0-9]*"

/* Magnitudes m = I.F written without a sign, lo <(=) m <(=) hi with
 * 0 <= lo; appends alternatives (each prefixed by " | " after the first).
 * Returns whether any was written. */
static bool magnitudes(sd_strbuf *out, bool first, int64_t lo, bool lo_excl, bool has_hi, int64_t hi,
                       bool hi_excl) {
    if (has_hi && (hi < lo || (hi == lo && (lo_excl || hi_excl)))) return false;
#define SEP() do { if (!first) sd_strbuf_puts(out, " | "); first = false; } while (0)
    if (has_hi && hi == lo) { /* exactly lo */
        SEP();
        uint_range(out, (uint64_t)lo, true, (uint64_t)lo);
        sd_strbuf_puts(out, " " FRAC_ZERO);
        return true;
    }
    SEP(); /* I = lo: any fraction, or a nonzero one when lo is excluded */
    uint_range(out, (uint64_t)lo, true, (uint64_t)lo);
    sd_strbuf_puts(out, lo_excl ? " " FRAC_POS : " " FRAC_ANY);
    if (!has_hi || hi - lo >= 2) { /* lo < I < hi: any fraction */
        SEP();
        uint_range(out, (uint64_t)lo + 1, has_hi, has_hi ? (uint64_t)hi - 1 : 0);
        sd_strbuf_puts(out, " " FRAC_ANY);
    }
    if (has_hi && !hi_excl) { /* I = hi: only a zero fraction */
        SEP();
        uint_range(out, (uint64_t)hi, true, (uint64_t)hi);
        sd_strbuf_puts(out, " " FRAC_ZERO);
    }
#undef SEP
    return true;
}

bool js_num_range(sd_strbuf *out, bool has_lo, int64_t lo, bool lo_excl, bool has_hi, int64_t hi, bool hi_excl) {
    sd_strbuf body = {0};
    bool any = false;
    /* x < 0, written "-" m with m > 0: -hi <(=) m <(=) -lo. */
    {
        if (!has_lo || lo < 0) {
            int64_t mlo = 0;
            bool mlo_excl = true;
            if (has_hi && hi < 0) { mlo = -hi; mlo_excl = hi_excl; }
            sd_strbuf neg = {0};
            if (magnitudes(&neg, true, mlo, mlo_excl, has_lo, has_lo ? -lo : 0, lo_excl)) {
                sd_strbuf_printf(&body, "\"-\" (%s)", sd_strbuf_str(&neg));
                any = true;
            }
            body.oom |= neg.oom;
            sd_strbuf_free(&neg);
        }
    }
    /* x >= 0, no sign. */
    if (!has_hi || hi > 0 || (hi == 0 && !hi_excl)) {
        int64_t plo = 0;
        bool plo_excl = false;
        if (has_lo && lo >= 0) { plo = lo; plo_excl = lo_excl; }
        sd_strbuf pos = {0};
        if (magnitudes(&pos, true, plo, plo_excl, has_hi, hi, hi_excl)) {
            sd_strbuf_printf(&body, "%s(%s)", any ? " | " : "", sd_strbuf_str(&pos));
            any = true;
        }
        body.oom |= pos.oom;
        sd_strbuf_free(&pos);
    }
    if (any) sd_strbuf_printf(out, "(%s)", sd_strbuf_str(&body));
    out->oom |= body.oom;
    sd_strbuf_free(&body);
    return any;
}
