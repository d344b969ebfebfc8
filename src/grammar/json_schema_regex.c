/* "pattern" -> GBNF: a subset of ECMA-262 regular expressions (what JSON
 * Schema specifies) compiled into the language of JSON strings in which a
 * search for the pattern finds a match.
 *
 * Semantics (docs/JSON_SCHEMA.md): as in JSON Schema, a pattern matches
 * anywhere in the string unless anchored. A top-level alternative that
 * starts with ^ and ends with $ must match the whole string; otherwise the
 * grammar allows any characters before (no ^) and after (no $) the match.
 * Where ECMA-262 and Python's re (the reference validator in our tests)
 * differ, the grammar takes the intersection: \d \w \s are ASCII ([0-9],
 * [A-Za-z0-9_], [\t\n\v\f\r ]); their negations and negated classes that
 * contain them stay within ASCII; "." is any character but \n \r U+2028
 * U+2029. Matched characters are spelled canonically (raw, or the short JSON
 * escape), so each accepted string has one spelling for its matched part.
 *
 * Refused, naming the construct: backreferences, lookaround, \b \B, named
 * groups, anchors inside groups, possessive quantifiers, "{" that does not
 * start a quantifier, nested repetition counts whose product exceeds
 * JS_REGEX_MAX_REPEAT. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/json_schema_impl.h"
#include "tokenizer/utf8.h"

#define JS_REGEX_MAX_REPEAT 10000
#define JS_REGEX_MAX_RANGES 4096
#define CP_MAX 0x10FFFFu

typedef struct rx {
    js_conv *c;
    const char *s; /* the pattern, UTF-8 */
    size_t i, n;
    bool bad;
} rx;

static bool rx_fail(rx *p, const char *what) {
    if (!p->bad) js_fail(p->c, SD_ERR_UNSUPPORTED, "pattern: %s at offset %zu is not supported", what, p->i);
    p->bad = true;
    return false;
}

/* Decodes one UTF-8 code point at p->i (advancing); -1 on bad UTF-8. */
static long rx_cp(rx *p) {
    const uint8_t *u = (const uint8_t *)p->s + p->i;
    size_t len;
    if (p->i >= p->n || sd_utf8_scan(u, p->n - p->i, &len) != SD_UTF8_CHAR) return -1;
    p->i += len;
    return (long)sd_utf8_decode(u, len);
}

/* ---- character sets: sorted disjoint ranges ---- */

typedef struct cset {
    uint32_t lo[JS_REGEX_MAX_RANGES], hi[JS_REGEX_MAX_RANGES];
    int n;
    bool overflow;
} cset;

static void cs_add(cset *s, uint32_t lo, uint32_t hi) {
    if (s->n == JS_REGEX_MAX_RANGES) { s->overflow = true; return; }
    s->lo[s->n] = lo;
    s->hi[s->n] = hi;
    s->n++;
}

static int cmp_range(const void *a, const void *b) {
    const uint32_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Sorts and merges; drops the surrogates (not characters in JSON text). */
static void cs_norm(cset *s) {
    uint32_t (*pairs)[2] = malloc(sizeof *pairs * (size_t)(s->n ? s->n : 1));
    if (!pairs) { s->overflow = true; return; }
    for (int k = 0; k < s->n; k++) { pairs[k][0] = s->lo[k]; pairs[k][1] = s->hi[k]; }
    qsort(pairs, (size_t)s->n, sizeof *pairs, cmp_range);
    int m = 0;
    for (int k = 0; k < s->n; k++) {
        if (m && pairs[k][0] <= s->hi[m - 1] + 1) {
            if (pairs[k][1] > s->hi[m - 1]) s->hi[m - 1] = pairs[k][1];
        } else {
            s->lo[m] = pairs[k][0];
            s->hi[m] = pairs[k][1];
            m++;
        }
    }
    s->n = m;
    free(pairs);
    cset t = {.n = 0};
    for (int k = 0; k < s->n; k++) {
        uint32_t lo = s->lo[k], hi = s->hi[k];
        if (hi < 0xD800 || lo > 0xDFFF) { cs_add(&t, lo, hi); continue; }
        if (lo < 0xD800) cs_add(&t, lo, 0xD7FF);
        if (hi > 0xDFFF) cs_add(&t, 0xE000, hi);
    }
    t.overflow |= s->overflow;
    *s = t;
}

/* The complement within [0, CP_MAX]; `ascii` keeps it within ASCII. */
static void cs_complement(cset *s, bool ascii) {
    cs_norm(s);
    cset t = {.n = 0};
    uint32_t next = 0, top = ascii ? 0x7F : CP_MAX;
    for (int k = 0; k < s->n && next <= top; k++) {
        if (s->lo[k] > next) cs_add(&t, next, s->lo[k] - 1 < top ? s->lo[k] - 1 : top);
        next = s->hi[k] + 1;
    }
    if (next <= top) cs_add(&t, next, top);
    t.overflow |= s->overflow;
    *s = t;
    cs_norm(s);
}

static void cs_digit(cset *s) { cs_add(s, '0', '9'); }
static void cs_word(cset *s) {
    cs_add(s, '0', '9'); cs_add(s, 'A', 'Z'); cs_add(s, '_', '_'); cs_add(s, 'a', 'z');
}
static void cs_space(cset *s) { cs_add(s, '\t', '\r'); cs_add(s, ' ', ' '); }

/* ---- GBNF output of sets ---- */

static void class_char(sd_strbuf *o, uint32_t cp) {
    if (cp >= 0x21 && cp < 0x7F && !strchr("]\\-^[", (int)cp))
        sd_strbuf_printf(o, "%c", (int)cp);
    else if (cp <= 0xFFFF)
        sd_strbuf_printf(o, "\\u%04X", cp);
    else
        sd_strbuf_printf(o, "\\U%08X", cp);
}

/* JSON's canonical escape of a character that cannot appear raw. */
static const char *short_escape(uint32_t cp) {
    switch (cp) {
    case '"': return "\\\"";
    case '\\': return "\\\\";
    case '\b': return "\\b";
    case '\f': return "\\f";
    case '\n': return "\\n";
    case '\r': return "\\r";
    case '\t': return "\\t";
    default: return NULL;
    }
}

static bool needs_escape(uint32_t cp) { return cp < 0x20 || cp == '"' || cp == '\\'; }

void js_charset_units(sd_strbuf *out, const uint32_t *lo, const uint32_t *hi, int n) {
    sd_strbuf raw = {0};
    int alts = 0;
    sd_strbuf_puts(out, "(");
    for (int k = 0; k < n; k++) { /* the raw part: the ranges minus what must be escaped */
        uint32_t a = lo[k];
        while (a <= hi[k]) {
            while (a <= hi[k] && needs_escape(a)) a++;
            if (a > hi[k]) break;
            uint32_t b = a;
            while (b < hi[k] && !needs_escape(b + 1)) b++;
            class_char(&raw, a);
            if (b > a) { sd_strbuf_puts(&raw, "-"); class_char(&raw, b); }
            a = b + 1;
            if (b == CP_MAX) break;
        }
    }
    if (raw.len) { sd_strbuf_printf(out, "[%s]", sd_strbuf_str(&raw)); alts++; }
    out->oom |= raw.oom;
    sd_strbuf_free(&raw);
    for (int k = 0; k < n; k++)
        for (uint32_t cp = lo[k]; cp <= hi[k] && cp <= '\\'; cp++) {
            if (!needs_escape(cp)) continue;
            char esc[8];
            const char *e = short_escape(cp);
            if (!e) { snprintf(esc, sizeof esc, "\\u%04x", cp); e = esc; }
            if (alts++) sd_strbuf_puts(out, " | ");
            js_gbnf_literal(out, e, strlen(e));
        }
    sd_strbuf_puts(out, ")");
}

static void cs_emit(sd_strbuf *o, cset *s) {
    cs_norm(s);
    js_charset_units(o, s->lo, s->hi, s->n);
}

/* ---- the parser: alternation > sequence > quantified atom ---- */

static bool parse_alt(rx *p, sd_strbuf *o, bool top, long *w);

static int hexval(int ch) {
    if (ch >= '0' && ch <= '9') return ch - '0';
    if (ch >= 'a' && ch <= 'f') return ch - 'a' + 10;
    if (ch >= 'A' && ch <= 'F') return ch - 'A' + 10;
    return -1;
}

static long rx_hex(rx *p, int digits) {
    long v = 0;
    for (int k = 0; k < digits; k++) {
        int h = p->i < p->n ? hexval((unsigned char)p->s[p->i]) : -1;
        if (h < 0) return -1;
        v = v * 16 + h;
        p->i++;
    }
    return v;
}

/* An escape after the backslash: a single character (returned) or a class
 * shorthand added to s (returns -2; *neg set for \D \W \S). -1: refused. */
static long rx_escape(rx *p, cset *s, bool *neg) {
    if (p->i >= p->n) return rx_fail(p, "a trailing backslash"), -1;
    char ch = p->s[p->i++];
    *neg = false;
    switch (ch) {
    case 'd': cs_digit(s); return -2;
    case 'w': cs_word(s); return -2;
    case 's': cs_space(s); return -2;
    case 'D': cs_digit(s); *neg = true; return -2;
    case 'W': cs_word(s); *neg = true; return -2;
    case 'S': cs_space(s); cs_add(s, 0x1C, 0x1F); *neg = true; return -2; /* Python's \s has 1C-1F too */
    case 't': return '\t';
    case 'n': return '\n';
    case 'r': return '\r';
    case 'f': return '\f';
    case 'v': return '\v';
    case 'x': { long v = rx_hex(p, 2); return v < 0 ? (rx_fail(p, "a malformed \\x escape"), -1) : v; }
    case 'u': {
        long v = rx_hex(p, 4);
        if (v < 0) return rx_fail(p, "a malformed \\u escape"), -1;
        if (v >= 0xD800 && v <= 0xDFFF) return rx_fail(p, "a surrogate \\u escape"), -1;
        return v;
    }
    default:
        if (strchr("^$\\.*+?()[]{}|/-", ch)) return (unsigned char)ch;
        p->i--;
        return rx_fail(p, "this escape (backreference, \\b, \\c or other)"), -1;
    }
}

/* A bracketed class, after the "[". */
static bool parse_class(rx *p, sd_strbuf *o) {
    static cset s; /* large; the parser is not reentrant within one class */
    memset(&s, 0, sizeof s);
    bool negated = false, shorthand = false;
    if (p->i < p->n && p->s[p->i] == '^') { negated = true; p->i++; }
    if (p->i < p->n && p->s[p->i] == ']') return rx_fail(p, "an empty class or a leading ]");
    for (;;) {
        if (p->i >= p->n) return rx_fail(p, "an unterminated class");
        if (p->s[p->i] == ']') { p->i++; break; }
        if (p->s[p->i] == '[') return rx_fail(p, "a [ inside a class");
        long lo;
        if (p->s[p->i] == '\\') {
            p->i++;
            cset sh = {.n = 0};
            bool neg;
            lo = rx_escape(p, &sh, &neg);
            if (lo == -1) return false;
            if (lo == -2) {
                if (neg) cs_complement(&sh, true);
                for (int k = 0; k < sh.n; k++) cs_add(&s, sh.lo[k], sh.hi[k]);
                shorthand = true;
                continue;
            }
        } else {
            lo = rx_cp(p);
            if (lo < 0) return rx_fail(p, "bad UTF-8");
        }
        long hi = lo;
        if (p->i + 1 < p->n && p->s[p->i] == '-' && p->s[p->i + 1] != ']') {
            p->i++;
            if (p->s[p->i] == '\\') {
                p->i++;
                cset sh = {.n = 0};
                bool neg;
                hi = rx_escape(p, &sh, &neg);
                if (hi == -2) return rx_fail(p, "a class shorthand as a range end");
                if (hi == -1) return false;
            } else {
                hi = rx_cp(p);
                if (hi < 0) return rx_fail(p, "bad UTF-8");
            }
            if (hi < lo) return rx_fail(p, "a range out of order");
        }
        cs_add(&s, (uint32_t)lo, (uint32_t)hi);
    }
    /* [^\s]: Python's \s also holds 1C-1F, which the complement must leave out */
    if (negated && shorthand) cs_add(&s, 0x1C, 0x1F);
    if (negated) cs_complement(&s, shorthand);
    else cs_norm(&s);
    if (s.overflow) return rx_fail(p, "a class with too many ranges");
    if (s.n == 0) return rx_fail(p, "a class that matches nothing");
    cs_emit(o, &s);
    return true;
}

/* One atom into o; *w: the largest product of repetition counts inside it.
 * False when refused. */
static bool parse_atom(rx *p, sd_strbuf *o, long *w) {
    *w = 1;
    char ch = p->s[p->i];
    if (ch == '(') {
        p->i++;
        if (p->i < p->n && p->s[p->i] == '?') {
            if (p->i + 1 < p->n && p->s[p->i + 1] == ':') p->i += 2;
            else return rx_fail(p, "a lookaround or named group");
        }
        sd_strbuf_puts(o, "(");
        if (!parse_alt(p, o, false, w)) return false;
        if (p->i >= p->n || p->s[p->i] != ')') return rx_fail(p, "an unbalanced (");
        p->i++;
        sd_strbuf_puts(o, ")");
        return true;
    }
    if (ch == '[') { p->i++; return parse_class(p, o); }
    if (ch == '.') {
        p->i++;
        cset s = {.n = 0};
        cs_add(&s, '\n', '\n'); cs_add(&s, '\r', '\r'); cs_add(&s, 0x2028, 0x2029);
        cs_complement(&s, false);
        cs_emit(o, &s);
        return true;
    }
    if (ch == '^' || ch == '$') return rx_fail(p, "an anchor inside the pattern");
    if (strchr("*+?{", ch)) return rx_fail(p, "a quantifier with nothing to repeat or a literal {");
    if (ch == ')' || ch == '|') return rx_fail(p, "an empty group or alternative");
    long cp;
    cset s = {.n = 0};
    if (ch == '\\') {
        p->i++;
        bool neg;
        cp = rx_escape(p, &s, &neg);
        if (cp == -1) return false;
        if (cp == -2) {
            if (neg) cs_complement(&s, true);
            else cs_norm(&s);
            cs_emit(o, &s);
            return true;
        }
    } else {
        cp = rx_cp(p);
        if (cp < 0) return rx_fail(p, "bad UTF-8");
    }
    cs_add(&s, (uint32_t)cp, (uint32_t)cp);
    cs_emit(o, &s);
    return true;
}

static bool parse_count(rx *p, long *v) {
    size_t st = p->i;
    *v = 0;
    while (p->i < p->n && p->s[p->i] >= '0' && p->s[p->i] <= '9') {
        *v = *v * 10 + (p->s[p->i] - '0');
        if (*v > JS_REGEX_MAX_REPEAT) return rx_fail(p, "a repetition count over 10000");
        p->i++;
    }
    return p->i > st;
}

/* Atoms with their quantifiers until | or ) or the end. At the top level a
 * trailing $ is reported through *dollar. */
static bool parse_seq(rx *p, sd_strbuf *o, bool top, long *w, bool *dollar) {
    bool empty = true;
    *w = 1;
    while (p->i < p->n && p->s[p->i] != '|' && p->s[p->i] != ')') {
        if (top && p->s[p->i] == '$' && (p->i + 1 == p->n || p->s[p->i + 1] == '|')) {
            p->i++;
            *dollar = true;
            break;
        }
        sd_strbuf atom = {0};
        long lo = 1, hi = 1, aw = 1; /* hi -1: unbounded */
        bool quant = false;
        bool ok = parse_atom(p, &atom, &aw);
        if (ok && p->i < p->n && strchr("*+?{", p->s[p->i])) {
            quant = true;
            char q = p->s[p->i++];
            if (q == '*') { lo = 0; hi = -1; }
            else if (q == '+') { lo = 1; hi = -1; }
            else if (q == '?') { lo = 0; hi = 1; }
            else {
                if (!parse_count(p, &lo)) ok = p->bad ? false : rx_fail(p, "a literal { (escape it)");
                hi = lo;
                if (ok && p->i < p->n && p->s[p->i] == ',') {
                    p->i++;
                    hi = -1;
                    if (p->i < p->n && p->s[p->i] != '}' && !parse_count(p, &hi)) ok = false;
                }
                if (ok && (p->i >= p->n || p->s[p->i] != '}')) ok = rx_fail(p, "a malformed {m,n}");
                if (ok) p->i++;
                if (ok && hi >= 0 && hi < lo) ok = rx_fail(p, "a {m,n} with n < m");
            }
            if (ok && p->i < p->n && p->s[p->i] == '?') p->i++; /* lazy: same language */
            if (ok && p->i < p->n && strchr("*+?{", p->s[p->i])) ok = rx_fail(p, "a quantifier after a quantifier");
            long f = hi >= 0 ? hi : lo ? lo : 1;
            if (f > 1) aw *= f;
            if (ok && aw > JS_REGEX_MAX_REPEAT) ok = rx_fail(p, "nested repetition beyond 10000");
        }
        if (aw > *w) *w = aw;
        if (!ok) { sd_strbuf_free(&atom); return false; }
        if (!empty) sd_strbuf_puts(o, " ");
        empty = false;
        sd_strbuf_puts(o, sd_strbuf_str(&atom));
        if (quant) {
            if (lo == 0 && hi == -1) sd_strbuf_puts(o, "*");
            else if (lo == 1 && hi == -1) sd_strbuf_puts(o, "+");
            else if (lo == 0 && hi == 1) sd_strbuf_puts(o, "?");
            else if (hi == -1) sd_strbuf_printf(o, "{%ld,}", lo);
            else if (lo == hi) sd_strbuf_printf(o, "{%ld}", lo);
            else sd_strbuf_printf(o, "{%ld,%ld}", lo, hi);
        }
        o->oom |= atom.oom;
        sd_strbuf_free(&atom);
    }
    if (empty) sd_strbuf_puts(o, "\"\"");
    return true;
}

static bool parse_alt(rx *p, sd_strbuf *o, bool top, long *w) {
    *w = 1;
    const char *pad = top ? js_common(p->c, JS_CHAR) : "";
    for (bool first = true;; first = false) {
        if (!first) sd_strbuf_puts(o, " | ");
        bool caret = false, dollar = false;
        if (top && p->i < p->n && p->s[p->i] == '^') { caret = true; p->i++; }
        if (top) sd_strbuf_puts(o, "(");
        if (top && !caret) sd_strbuf_printf(o, "%s* ", pad);
        long sw;
        if (!parse_seq(p, o, top, &sw, &dollar)) return false;
        if (sw > *w) *w = sw;
        if (top && !dollar) sd_strbuf_printf(o, " %s*", pad);
        if (top) sd_strbuf_puts(o, ")");
        if (p->i < p->n && p->s[p->i] == '|') { p->i++; continue; }
        return true;
    }
}

bool js_pattern(js_conv *c, int r, const char *pattern) {
    rx p = {.c = c, .s = pattern, .n = strlen(pattern)};
    sd_strbuf body = {0};
    long w;
    bool ok = parse_alt(&p, &body, true, &w);
    if (ok && p.i < p.n) ok = rx_fail(&p, "an unbalanced )");
    if (ok) {
        js_t(c, r, "\"\\\"\" (");
        js_t(c, r, sd_strbuf_str(&body));
        js_t(c, r, ") \"\\\"\"");
        if (body.oom) js_fail(c, SD_ERR_NOMEM, "out of memory");
    }
    sd_strbuf_free(&body);
    return ok;
}
