/* Digit-range grammars: the canonical decimal spellings (no leading zeros,
 * no "-0") of the integers in an interval, and of plain decimal numbers
 * between integer bounds. The construction splits [lo, hi] by digit count,
 * then recursively by leading digit, as regex generators for numeric ranges
 * do; each level adds at most two one-sided ranges, so the expression grows
 * with the square of the digit count (at most 19 digits here). */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "grammar/json_schema_impl.h"

/* Digits the integer part of a number may have where no bound limits it:
 * what keeps a model from writing digits forever, and every integer a signed
 * 64-bit one, as JSON readers read it (the unbounded `integer` of
 * json_schema_build.c has the same limit). */
#define INT_DIGITS 18
#define INT_UNBOUNDED_MAX 999999999999999999LL /* the largest of INT_DIGITS digits */

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
    if (!has_b && la < INT_DIGITS) sd_strbuf_printf(out, " | [1-9] [0-9]{%d,%d}", la, INT_DIGITS - 1);
    sd_strbuf_puts(out, ")");
}

void js_int_range(sd_strbuf *out, bool has_lo, int64_t lo, bool has_hi, int64_t hi) {
    /* an open side past INT_DIGITS digits ends at the 64-bit limit instead */
    if (!has_hi && has_lo && lo > INT_UNBOUNDED_MAX) { has_hi = true; hi = INT64_MAX; }
    if (!has_lo && has_hi && hi < -INT_UNBOUNDED_MAX) { has_lo = true; lo = -INT64_MAX; }
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

#define FRAC_ANY "(\".\" [0-9]{1,20})?"
#define FRAC_ZERO "(\".\" \"0\"{1,20})?"

/* A nonzero fraction of at most k digits: k alternatives by the position of
 * the first nonzero digit. */
static void frac_pos(sd_strbuf *out, int k) {
    sd_strbuf_puts(out, " \".\" (");
    for (int a = 0; a < k; a++) {
        if (a) sd_strbuf_puts(out, " | ");
        if (a) sd_strbuf_printf(out, "\"0\"{%d} ", a);
        sd_strbuf_puts(out, "[1-9]");
        if (k - 1 - a > 0) sd_strbuf_printf(out, " [0-9]{0,%d}", k - 1 - a);
    }
    sd_strbuf_puts(out, ")");
}

/* Digits after the point of 2^-j (exactly j of them, 5^j zero-padded), or of
 * 1 - 2^-j; for j > 70 the first 21 digits and one more that stands for the
 * nonzero rest (enough to compare fractions of at most 20 digits). */
static int pow2_frac(int j, bool one_minus, char *out /* >= 80 */) {
    if (j > 70) {
        memset(out, one_minus ? '9' : '0', 21);
        out[21] = one_minus ? '8' : '1';
        return 22;
    }
    unsigned char d[80] = {0}; /* 5^j, least significant digit first */
    d[0] = 1;
    for (int k = 0; k < j; k++) {
        int carry = 0;
        for (int t = 0; t < j; t++) {
            int v = d[t] * 5 + carry;
            d[t] = (unsigned char)(v % 10);
            carry = v / 10;
        }
    }
    for (int t = 0; t < j; t++) out[t] = (char)('0' + d[j - 1 - t]);
    if (one_minus) { /* 10^j - 5^j, digit by digit with borrow */
        int borrow = 0;
        for (int t = j - 1; t >= 0; t--) {
            int v = (t == j - 1 ? 10 : 9) - (out[t] - '0') - borrow + (t == j - 1 ? 0 : 0);
            borrow = 0;
            if (v < 0) { v += 10; borrow = 1; }
            out[t] = (char)('0' + v);
        }
    }
    return j;
}

/* Digit strings D of 1 to cap digits whose value 0.D is strictly above
 * (greater) or below 0.P, as one GBNF group. Returns false when none is. */
static bool digits_cmp(sd_strbuf *out, const char *p, int n, bool greater, int cap) {
    int m = n < cap ? n : cap;
    bool first = true;
#define ALT() do { sd_strbuf_puts(out, first ? "(" : " | "); first = false; } while (0)
    for (int i = 0; i < m; i++) { /* first difference at digit i */
        char lo = greater ? (char)(p[i] + 1) : '0', hi = greater ? '9' : (char)(p[i] - 1);
        if (lo > hi) continue;
        ALT();
        if (i) sd_strbuf_printf(out, "\"%.*s\" ", i, p);
        sd_strbuf_printf(out, "[%c-%c]", lo, hi);
        if (cap - 1 - i > 0) sd_strbuf_printf(out, " [0-9]{0,%d}", cap - 1 - i);
    }
    if (!greater) { /* a proper prefix of P, when P has a nonzero digit after it */
        for (int j = 1; j <= m; j++) {
            bool rest = false;
            for (int t = j; t < n; t++) rest |= p[t] != '0';
            if (!rest) continue;
            ALT();
            sd_strbuf_printf(out, "\"%.*s\"", j, p);
        }
    } else if (n < cap) { /* P, then zeros, then a nonzero digit */
        for (int a = 0; a <= cap - 1 - n; a++) {
            ALT();
            sd_strbuf_printf(out, "\"%.*s\" ", n, p);
            if (a) sd_strbuf_printf(out, "\"0\"{%d} ", a);
            sd_strbuf_puts(out, "[1-9]");
            if (cap - 1 - n - a > 0) sd_strbuf_printf(out, " [0-9]{0,%d}", cap - 1 - n - a);
        }
    }
#undef ALT
    if (!first) sd_strbuf_puts(out, ")");
    return !first;
}

static bool any_nonzero(const char *p, int n) {
    for (int t = 0; t < n; t++)
        if (p[t] != '0') return true;
    return false;
}

/* The fraction of a number (".digits", 1 to 20 digits, or none) whose value
 * is strictly above (greater) or below the decimal fraction 0.P. */
static void frac_cmp(sd_strbuf *out, const char *p, int n, bool greater) {
    sd_strbuf_puts(out, " (\".\" ");
    if (!digits_cmp(out, p, n, greater, 20)) sd_strbuf_puts(out, "[^\\x00-\\U0010FFFF]"); /* cannot happen: P < 1 */
    /* no fraction at all: value 0, below P when P is nonzero */
    sd_strbuf_puts(out, !greater && any_nonzero(p, n) ? ")?" : ")");
}

/* A fraction strictly between 0.A and 0.B, where A starts with 0 and B
 * with 9 (thresholds half a double's spacing inside a cell's two ends). */
static void frac_between(sd_strbuf *out, const char *a, int na, const char *b, int nb) {
    sd_strbuf_puts(out, " \".\" ([1-8] [0-9]{0,19}");
    sd_strbuf_puts(out, " | \"0\" ");
    if (!digits_cmp(out, a + 1, na - 1, true, 19)) sd_strbuf_puts(out, "[^\\x00-\\U0010FFFF]");
    sd_strbuf_puts(out, " | \"9\" ");
    if (digits_cmp(out, b + 1, nb - 1, false, 19)) sd_strbuf_puts(out, any_nonzero(b + 1, nb - 1) ? "?" : "");
    else sd_strbuf_puts(out, any_nonzero(b + 1, nb - 1) ? "\"\"" : "[^\\x00-\\U0010FFFF]");
    sd_strbuf_puts(out, ")");
}

static int floor_log2(uint64_t v) {
    int e = 0;
    while (v >>= 1) e++;
    return e;
}

/* Above an exclusive bound lo >= 0, the double nearest lo + 0.F must be
 * above lo: 0.F must exceed half the spacing of doubles above lo (a tie
 * rounds to lo, whose mantissa is even). Writes that threshold's digits. */
static int thresh_above(int64_t lo, char *p) {
    return pow2_frac(lo ? 53 - floor_log2((uint64_t)lo) : 1075, false, p);
}

/* Below an exclusive bound hi >= 1: 0.F < 1 - half the spacing below hi. */
static int thresh_below(int64_t hi, char *p) {
    int e = floor_log2((uint64_t)hi);
    return pow2_frac(((uint64_t)hi == (uint64_t)1 << e ? 54 : 53) - e, true, p);
}

static void frac_above(sd_strbuf *out, int64_t lo) {
    char p[80];
    frac_cmp(out, p, thresh_above(lo, p), true);
}

static void frac_below(sd_strbuf *out, int64_t hi) {
    char p[80];
    frac_cmp(out, p, thresh_below(hi, p), false);
}

/* Magnitudes m = I.F written without a sign, lo <(=) m <(=) hi with
 * 0 <= lo; appends alternatives (each prefixed by " | " after the first).
 * Next to a real exclusive bound (not the sign split at 0) the fraction is
 * cut where the number would round onto the bound as a double, so a
 * document is valid read exactly and read as doubles. Returns whether any
 * was written. */
static bool magnitudes(sd_strbuf *out, bool first, int64_t lo, bool lo_excl, bool lo_real, bool has_hi, int64_t hi,
                       bool hi_excl) {
    if (has_hi && (hi < lo || (hi == lo && (lo_excl || hi_excl)))) return false;
#define SEP() do { if (!first) sd_strbuf_puts(out, " | "); first = false; } while (0)
#define CELL(a, b) uint_range(out, (uint64_t)(a), true, (uint64_t)(b))
    if (has_hi && hi == lo) { /* exactly lo */
        SEP();
        CELL(lo, lo);
        sd_strbuf_puts(out, " " FRAC_ZERO);
        return true;
    }
    /* I = lo: any fraction; a nonzero one when lo is excluded */
    bool near_hi = has_hi && hi_excl && hi == lo + 1;
    SEP();
    CELL(lo, lo);
    if (lo_excl && near_hi) { /* both ends of the cell exclusive */
        char a[80], b[80];
        int na = lo_real ? thresh_above(lo, a) : 1;
        if (!lo_real) a[0] = '0';
        int nb = thresh_below(hi, b);
        frac_between(out, a, na, b, nb);
    } else if (lo_excl && lo_real) frac_above(out, lo);
    else if (near_hi) frac_below(out, hi);
    else if (lo_excl) frac_pos(out, 20);
    else sd_strbuf_puts(out, " " FRAC_ANY);
    /* lo < I < hi: any fraction, except next to an exclusive hi */
    int64_t mid_hi = has_hi ? (hi_excl ? hi - 2 : hi - 1) : 0;
    if (!has_hi || mid_hi >= lo + 1) {
        SEP();
        uint_range(out, (uint64_t)lo + 1, has_hi, (uint64_t)mid_hi);
        sd_strbuf_puts(out, " " FRAC_ANY);
    }
    if (has_hi && hi_excl && hi - 1 > lo) { /* I = hi - 1 below an exclusive hi */
        SEP();
        CELL(hi - 1, hi - 1);
        frac_below(out, hi);
    }
    if (has_hi && !hi_excl) { /* I = hi: only a zero fraction */
        SEP();
        CELL(hi, hi);
        sd_strbuf_puts(out, " " FRAC_ZERO);
    }
#undef CELL
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
            bool mlo_excl = true, mlo_real = has_hi && hi == 0 && hi_excl; /* else the split at 0 */
            if (has_hi && hi < 0) { mlo = -hi; mlo_excl = hi_excl; mlo_real = true; }
            sd_strbuf neg = {0};
            if (magnitudes(&neg, true, mlo, mlo_excl, mlo_real, has_lo, has_lo ? -lo : 0, lo_excl)) {
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
        if (magnitudes(&pos, true, plo, plo_excl, true, has_hi, hi, hi_excl)) {
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
