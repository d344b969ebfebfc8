/* GBNF text -> sd_grammar. A recursive-descent parser (the syntax of
 * llama.cpp's grammars/README.md; our own code) that builds each rule's
 * alternatives as element lists, then flattens them. Groups and repetitions
 * become generated rules: x* is R ::= x R | (empty), x{m,n} is m copies of
 * x then n-m nested optionals, so the recognizer only ever sees rules,
 * bytes and tokens. Every size is bounded (grammar.h) so hostile text fails
 * fast. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar_impl.h"
#include "tokenizer/strmap.h"
#include "tokenizer/utf8.h"

typedef struct elemvec {
    sd_gelem *v;
    int32_t n, cap;
} elemvec;

typedef struct brule {
    elemvec *alts;
    int32_t n_alts, cap_alts;
    int32_t name_off;
    int32_t ref_pos;  /* where it was first referenced (for "undefined rule") */
    int defined;
} brule;

typedef struct parser {
    const char *s;
    size_t len, pos;
    const sd_tokenizer *tok;
    brule *rules;
    int32_t n_rules, cap_rules;
    sd_byteset *sets;
    int32_t n_sets, cap_sets;
    char *names;
    size_t names_len, names_cap;
    sd_strmap by_name;
    int64_t n_elems; /* across all rules, for the bound */
    int32_t n_token_refs;
    int depth;
    sd_err *err;
    sd_status st; /* first error */
} parser;

/* ---- errors with line:col ---- */

static void where(const parser *p, size_t pos, int *line, int *col) {
    *line = 1, *col = 1;
    for (size_t i = 0; i < pos && i < p->len; i++) {
        if (p->s[i] == '\n') (*line)++, *col = 1;
        else if (((unsigned char)p->s[i] & 0xC0) != 0x80) (*col)++; /* columns count characters */
    }
}

static int fail_at(parser *p, size_t pos, sd_status code, const char *what) {
    if (p->st != SD_OK) return -1;
    int line, col;
    where(p, pos, &line, &col);
    p->st = sd_err_set(p->err, code, "grammar %d:%d: %s", line, col, what);
    return -1;
}
static int fail(parser *p, const char *what) { return fail_at(p, p->pos, SD_ERR_FORMAT, what); }
static int nomem(parser *p) {
    if (p->st == SD_OK) p->st = sd_err_set(p->err, SD_ERR_NOMEM, "grammar: out of memory");
    return -1;
}

/* ---- growable arrays ---- */

static int grow(void **v, int32_t *cap, int32_t need, size_t size) {
    if (need <= *cap) return 0;
    int32_t nc = *cap ? *cap : 8;
    while (nc < need) {
        if (nc > INT32_MAX / 2) return -1;
        nc *= 2;
    }
    void *nv = realloc(*v, (size_t)nc * size);
    if (!nv) return -1;
    *v = nv, *cap = nc;
    return 0;
}

static int add_name(parser *p, const char *name, size_t n, int32_t *off) {
    if (p->names_len + n + 1 > p->names_cap) {
        size_t nc = p->names_cap ? p->names_cap : 256;
        while (nc < p->names_len + n + 1) nc *= 2;
        char *nv = realloc(p->names, nc);
        if (!nv) return nomem(p);
        p->names = nv, p->names_cap = nc;
    }
    memcpy(p->names + p->names_len, name, n);
    p->names[p->names_len + n] = 0;
    *off = (int32_t)p->names_len;
    p->names_len += n + 1;
    return 0;
}

static int32_t new_rule(parser *p, const char *name, size_t n) {
    if (p->n_rules >= SD_GRAMMAR_MAX_RULES)
        return fail_at(p, p->pos, SD_ERR_UNSUPPORTED, "grammar has too many rules (after expanding groups and repetitions)");
    if (grow((void **)&p->rules, &p->cap_rules, p->n_rules + 1, sizeof *p->rules)) return nomem(p);
    brule *r = &p->rules[p->n_rules];
    memset(r, 0, sizeof *r);
    if (add_name(p, name, n, &r->name_off)) return -1;
    r->ref_pos = p->pos;
    return p->n_rules++;
}

/* A generated rule, named after the rule being defined: "value_3". */
static int32_t new_anon(parser *p, int32_t parent) {
    char buf[96];
    int n = snprintf(buf, sizeof buf, "%.80s_%d", p->names + p->rules[parent].name_off, p->n_rules);
    int32_t id = new_rule(p, buf, (size_t)n);
    if (id >= 0) p->rules[id].defined = 1;
    return id;
}

static int32_t rule_by_name(parser *p, const char *name, size_t n) {
    int32_t id;
    if (sd_strmap_get(&p->by_name, name, n, &id)) return id;
    id = new_rule(p, name, n);
    if (id < 0) return -1;
    if (sd_strmap_put(&p->by_name, name, n, id, NULL) < 0) return nomem(p);
    return id;
}

static int32_t add_alt(parser *p, int32_t r) {
    brule *rr = &p->rules[r];
    if (grow((void **)&rr->alts, &rr->cap_alts, rr->n_alts + 1, sizeof *rr->alts)) return nomem(p);
    memset(&rr->alts[rr->n_alts], 0, sizeof rr->alts[0]);
    return rr->n_alts++;
}

static int push_elem(parser *p, int32_t r, int32_t a, uint8_t kind, int32_t arg) {
    if (++p->n_elems > SD_GRAMMAR_MAX_ELEMS)
        return fail_at(p, p->pos, SD_ERR_UNSUPPORTED, "grammar expands past the element limit (repetition counts too large?)");
    elemvec *v = &p->rules[r].alts[a];
    if (grow((void **)&v->v, &v->cap, v->n + 1, sizeof *v->v)) return nomem(p);
    v->v[v->n++] = (sd_gelem){kind, arg};
    return 0;
}

static int32_t new_set(parser *p) {
    if (grow((void **)&p->sets, &p->cap_sets, p->n_sets + 1, sizeof *p->sets)) return nomem(p);
    memset(&p->sets[p->n_sets], 0, sizeof p->sets[0]);
    return p->n_sets++;
}

static int push_byte_range(parser *p, int32_t r, int32_t a, uint8_t lo, uint8_t hi) {
    int32_t s = new_set(p);
    if (s < 0) return -1;
    for (unsigned b = lo; b <= hi; b++) p->sets[s].bits[b >> 5] |= 1u << (b & 31);
    return push_elem(p, r, a, G_BYTES, s);
}

/* ---- lexical helpers ---- */

static int at(const parser *p, size_t k) { return p->pos + k < p->len ? (unsigned char)p->s[p->pos + k] : -1; }

static int is_name_char(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Skips blanks and comments; newlines too when newline_ok. */
static void skip_space(parser *p, int newline_ok) {
    for (;;) {
        int c = at(p, 0);
        if (c == ' ' || c == '\t') p->pos++;
        else if (c == '#') {
            while (at(p, 0) != -1 && at(p, 0) != '\n') p->pos++;
        } else if (newline_ok && (c == '\n' || c == '\r')) p->pos++;
        else if (c == '\r' && at(p, 1) == '\n' && newline_ok) p->pos += 2;
        else return;
    }
}

static int hex_value(int c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* One character of a literal or class (an escape or a UTF-8 character). */
static int parse_char(parser *p, uint32_t *cp) {
    int c = at(p, 0);
    if (c < 0) return fail(p, "unexpected end of grammar");
    if (c == '\\') {
        int e = at(p, 1);
        int digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
        if (digits) {
            uint32_t v = 0;
            for (int i = 0; i < digits; i++) {
                int h = hex_value(at(p, 2 + (size_t)i));
                if (h < 0) {
                    p->pos += 2 + (size_t)i;
                    return fail(p, "expected a hex digit in the escape");
                }
                v = v * 16 + (uint32_t)h;
            }
            if (v > 0x10FFFF || (v >= 0xD800 && v <= 0xDFFF)) return fail(p, "escape names no Unicode character");
            *cp = v;
            p->pos += 2 + (size_t)digits;
            return 0;
        }
        static const char from[] = "tnr\\\"[]-/", to[] = "\t\n\r\\\"[]-/";
        const char *f = e > 0 ? strchr(from, e) : NULL;
        if (!f || !*f) {
            return fail(p, "unknown escape (known: \\x \\u \\U \\t \\n \\r \\\\ \\\" \\[ \\] \\-)");
        }
        *cp = (unsigned char)to[f - from];
        p->pos += 2;
        return 0;
    }
    size_t n;
    if (sd_utf8_scan((const uint8_t *)p->s + p->pos, p->len - p->pos, &n) != SD_UTF8_CHAR)
        return fail(p, "invalid UTF-8 in grammar");
    *cp = sd_utf8_decode((const uint8_t *)p->s + p->pos, n);
    p->pos += n;
    return 0;
}

/* ---- character classes ---- */

typedef struct cprange {
    uint32_t lo, hi;
} cprange;

static int cmp_range(const void *a, const void *b) {
    const cprange *x = a, *y = b;
    return x->lo < y->lo ? -1 : x->lo > y->lo;
}

typedef struct class_out {
    parser *p;
    int32_t rule;
} class_out;

static int emit_seq(void *ctx, const uint8_t *lo, const uint8_t *hi, int n) {
    class_out *o = ctx;
    int32_t a = add_alt(o->p, o->rule);
    if (a < 0) return -1;
    for (int i = 0; i < n; i++)
        if (push_byte_range(o->p, o->rule, a, lo[i], hi[i])) return -1;
    return 0;
}

/* Emits ranges (sorted and merged here; negated over all code points) as
 * one byte set when every range is ASCII, else as a generated rule with one
 * alternative per UTF-8 byte-range sequence. */
static int emit_class(parser *p, int32_t r, int32_t a, cprange *rg, int n, int negate) {
    qsort(rg, (size_t)n, sizeof *rg, cmp_range);
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (m && rg[i].lo <= rg[m - 1].hi + 1) {
            if (rg[i].hi > rg[m - 1].hi) rg[m - 1].hi = rg[i].hi;
        } else rg[m++] = rg[i];
    }
    cprange *use = rg;
    cprange *neg = NULL;
    if (negate) {
        neg = malloc(sizeof *neg * (size_t)(m + 1));
        if (!neg) return nomem(p);
        int k = 0;
        uint32_t next = 0;
        for (int i = 0; i < m; i++) {
            if (rg[i].lo > next) neg[k++] = (cprange){next, rg[i].lo - 1};
            next = rg[i].hi + 1;
        }
        if (next <= 0x10FFFF) neg[k++] = (cprange){next, 0x10FFFF};
        use = neg, m = k;
    }
    int rc = 0;
    if (m == 0) {
        rc = fail(p, "character class matches nothing");
    } else if (use[m - 1].hi < 0x80) {
        int32_t s = new_set(p);
        if (s < 0) rc = -1;
        else {
            for (int i = 0; i < m; i++)
                for (uint32_t b = use[i].lo; b <= use[i].hi; b++) p->sets[s].bits[b >> 5] |= 1u << (b & 31);
            rc = push_elem(p, r, a, G_BYTES, s);
        }
    } else {
        class_out o = {p, new_anon(p, r)};
        if (o.rule < 0) rc = -1;
        for (int i = 0; i < m && !rc; i++) rc = sd_utf8_ranges(use[i].lo, use[i].hi, emit_seq, &o);
        if (!rc) rc = push_elem(p, r, a, G_RULE, o.rule);
        else if (p->st == SD_OK) rc = nomem(p);
    }
    free(neg);
    return rc;
}

static int parse_class(parser *p, int32_t r, int32_t a) {
    size_t start = p->pos;
    p->pos++; /* [ */
    int negate = 0;
    if (at(p, 0) == '^') negate = 1, p->pos++;
    cprange *rg = NULL;
    int32_t n = 0, cap = 0;
    int rc = 0;
    while (!rc && at(p, 0) != ']') {
        if (at(p, 0) < 0) {
            rc = fail_at(p, start, SD_ERR_FORMAT, "unterminated character class");
            break;
        }
        uint32_t lo, hi;
        if (parse_char(p, &lo)) rc = -1;
        else {
            hi = lo;
            if (at(p, 0) == '-' && at(p, 1) != ']' && at(p, 1) >= 0) {
                p->pos++;
                if (parse_char(p, &hi)) rc = -1;
                else if (hi < lo) rc = fail(p, "character range is reversed");
            }
            if (!rc && grow((void **)&rg, &cap, n + 1, sizeof *rg)) rc = nomem(p);
            if (!rc) rg[n++] = (cprange){lo, hi};
        }
        if (!rc && n > SD_GRAMMAR_MAX_REPEAT) rc = fail(p, "character class too long");
    }
    if (!rc) {
        p->pos++; /* ] */
        rc = emit_class(p, r, a, rg, n, negate);
    }
    free(rg);
    return rc;
}

/* ---- literals, tokens, repetition ---- */

static int parse_literal(parser *p, int32_t r, int32_t a) {
    size_t start = p->pos;
    p->pos++;
    while (at(p, 0) != '"') {
        if (at(p, 0) < 0) return fail_at(p, start, SD_ERR_FORMAT, "unterminated string literal");
        uint32_t cp;
        if (parse_char(p, &cp)) return -1;
        uint8_t u[4];
        size_t n = sd_utf8_encode(cp, u);
        for (size_t i = 0; i < n; i++)
            if (push_byte_range(p, r, a, u[i], u[i])) return -1;
    }
    p->pos++;
    return 0;
}

/* <[id]> or <text> (the token whose text, including the angle brackets, is
 * exactly that), with the caller having consumed a leading '!' if any. */
static int parse_token(parser *p, int32_t r, int32_t a, int negate) {
    size_t start = p->pos;
    int32_t id = -1;
    int32_t n_vocab = p->tok ? sd_tokenizer_n_vocab(p->tok) : -1;
    if (at(p, 1) == '[') {
        p->pos += 2;
        int64_t v = 0;
        int digits = 0;
        while (at(p, 0) >= '0' && at(p, 0) <= '9') {
            v = v * 10 + (at(p, 0) - '0');
            if (v > INT32_MAX) return fail(p, "token id too large");
            p->pos++, digits++;
        }
        if (!digits || at(p, 0) != ']' || at(p, 1) != '>') return fail(p, "expected <[number]>");
        p->pos += 2;
        if (n_vocab >= 0 && v >= n_vocab) return fail_at(p, start, SD_ERR_FORMAT, "token id out of the vocabulary");
        id = (int32_t)v;
    } else {
        size_t end = p->pos + 1;
        while (end < p->len && p->s[end] != '>' && p->s[end] != '\n') end++;
        if (end >= p->len || p->s[end] != '>') return fail(p, "unterminated token reference <...>");
        size_t tl = end + 1 - p->pos;
        if (!p->tok) return fail(p, "token reference <text> needs a vocabulary");
        for (int32_t t = 0; t < n_vocab && id < 0; t++) {
            const char *tx = sd_token_text(p->tok, t);
            if (strlen(tx) == tl && !memcmp(tx, p->s + p->pos, tl)) id = t;
        }
        if (id < 0) return fail(p, "no token has this text");
        p->pos = end + 1;
    }
    p->n_token_refs++;
    return push_elem(p, r, a, negate ? G_NOT_TOKEN : G_TOKEN, id);
}

static int parse_count(parser *p, int32_t *v) {
    int64_t x = 0;
    int digits = 0;
    while (at(p, 0) >= '0' && at(p, 0) <= '9') {
        x = x * 10 + (at(p, 0) - '0');
        if (x > SD_GRAMMAR_MAX_REPEAT) return fail_at(p, p->pos, SD_ERR_UNSUPPORTED, "repetition count too large (limit 65536)");
        p->pos++, digits++;
    }
    *v = digits ? (int32_t)x : -1;
    return 0;
}

/* Replaces the last symbol of alternative a (elements [sym, n)) by min..max
 * repetitions of it (max < 0: unbounded). */
static int repeat(parser *p, int32_t r, int32_t a, int32_t sym, int32_t min, int32_t max) {
    elemvec *v = &p->rules[r].alts[a];
    sd_gelem x;
    if (v->n - sym == 1) {
        x = v->v[sym];
    } else { /* wrap a multi-element symbol (a literal) in a rule of its own */
        int32_t w = new_anon(p, r);
        if (w < 0) return -1;
        int32_t wa = add_alt(p, w);
        if (wa < 0) return -1;
        v = &p->rules[r].alts[a];
        for (int32_t i = sym; i < v->n; i++) {
            sd_gelem e = p->rules[r].alts[a].v[i];
            if (push_elem(p, w, wa, e.kind, e.arg)) return -1;
        }
        x = (sd_gelem){G_RULE, w};
    }
    p->n_elems -= p->rules[r].alts[a].n - sym;
    p->rules[r].alts[a].n = sym;
    for (int32_t i = 0; i < min; i++)
        if (push_elem(p, r, a, x.kind, x.arg)) return -1;
    if (max < 0) { /* R ::= x R | (empty) */
        int32_t rr = new_anon(p, r);
        if (rr < 0) return -1;
        int32_t a0 = add_alt(p, rr);
        if (a0 < 0 || push_elem(p, rr, a0, x.kind, x.arg) || push_elem(p, rr, a0, G_RULE, rr)) return -1;
        if (add_alt(p, rr) < 0) return -1;
        return push_elem(p, r, a, G_RULE, rr);
    }
    int32_t prev = -1; /* O_k ::= x O_{k-1} | (empty) */
    for (int32_t k = 0; k < max - min; k++) {
        int32_t o = new_anon(p, r);
        if (o < 0) return -1;
        int32_t a0 = add_alt(p, o);
        if (a0 < 0 || push_elem(p, o, a0, x.kind, x.arg)) return -1;
        if (prev >= 0 && push_elem(p, o, a0, G_RULE, prev)) return -1;
        if (add_alt(p, o) < 0) return -1;
        prev = o;
    }
    return prev >= 0 ? push_elem(p, r, a, G_RULE, prev) : 0;
}

static int parse_alternates(parser *p, int32_t r, int nested);

static int parse_sequence(parser *p, int32_t r, int32_t a, int nested) {
    int32_t sym = -1; /* start of the last symbol, for a repetition */
    for (;;) {
        int c = at(p, 0);
        int32_t here = p->rules[r].alts[a].n;
        int rc;
        if (c == '"') rc = parse_literal(p, r, a);
        else if (c == '[') rc = parse_class(p, r, a);
        else if (c == '.') {
            cprange all = {0, 0x10FFFF};
            p->pos++;
            rc = emit_class(p, r, a, &all, 1, 0);
        } else if (c == '<' || (c == '!' && at(p, 1) == '<')) {
            int neg = c == '!';
            p->pos += (size_t)neg;
            rc = parse_token(p, r, a, neg);
        } else if (c == '(') {
            size_t open = p->pos;
            if (++p->depth > SD_GRAMMAR_MAX_NEST)
                return fail_at(p, open, SD_ERR_UNSUPPORTED, "groups nested too deeply (limit 256)");
            p->pos++;
            skip_space(p, 1);
            int32_t g = new_anon(p, r);
            rc = g < 0 ? -1 : parse_alternates(p, g, 1);
            if (!rc && at(p, 0) != ')') rc = fail_at(p, open, SD_ERR_FORMAT, "unclosed '(' (expected ')')");
            if (!rc) p->pos++, rc = push_elem(p, r, a, G_RULE, g);
            p->depth--;
        } else if (is_name_char(c)) {
            size_t s0 = p->pos;
            while (is_name_char(at(p, 0))) p->pos++;
            size_t save = p->pos;
            skip_space(p, 0);
            if (at(p, 0) == ':' && at(p, 1) == ':' && at(p, 2) == '=') {
                if (nested) return fail_at(p, s0, SD_ERR_FORMAT, "rule definition inside a group (missing ')'?)");
                p->pos = s0; /* the next rule starts here: this sequence ended */
                return fail_at(p, s0, SD_ERR_FORMAT, "expected a newline before the next rule");
            }
            p->pos = save;
            int32_t id = rule_by_name(p, p->s + s0, save - s0);
            if (id >= 0 && !p->rules[id].defined && p->rules[id].ref_pos == (int32_t)save)
                p->rules[id].ref_pos = (int32_t)s0; /* first reference: point at the name's start */
            rc = id < 0 ? -1 : push_elem(p, r, a, G_RULE, id);
        } else if (c == '*' || c == '+' || c == '?' || c == '{') {
            if (sym < 0) return fail(p, "repetition with nothing before it");
            int32_t min = 0, max = -1;
            if (c == '+') min = 1;
            else if (c == '?') max = 1;
            p->pos++;
            if (c == '{') {
                skip_space(p, 0);
                if (parse_count(p, &min)) return -1;
                skip_space(p, 0);
                if (at(p, 0) == ',') {
                    p->pos++;
                    skip_space(p, 0);
                    if (parse_count(p, &max)) return -1;
                    skip_space(p, 0);
                    if (min < 0 && max < 0) return fail(p, "expected a count in { }");
                } else {
                    if (min < 0) return fail(p, "expected a count in { }");
                    max = min;
                }
                if (min < 0) min = 0;
                if (at(p, 0) != '}') return fail(p, "expected '}'");
                p->pos++;
                if (max >= 0 && max < min) return fail(p, "repetition {m,n} with n < m");
            }
            rc = repeat(p, r, a, sym, min, max);
            here = -1; /* a repeated symbol cannot be repeated again without a group */
        } else {
            return 0;
        }
        if (rc) return -1;
        sym = here;
        skip_space(p, nested);
    }
}

static int parse_alternates(parser *p, int32_t r, int nested) {
    for (;;) {
        int32_t a = add_alt(p, r);
        if (a < 0 || parse_sequence(p, r, a, nested)) return -1;
        if (at(p, 0) != '|') return 0;
        p->pos++;
        skip_space(p, 1);
    }
}

static int parse_rule(parser *p) {
    size_t s0 = p->pos;
    if (!is_name_char(at(p, 0))) return fail(p, "expected a rule name");
    while (is_name_char(at(p, 0))) p->pos++;
    int32_t id = rule_by_name(p, p->s + s0, p->pos - s0);
    if (id < 0) return -1;
    if (p->rules[id].defined) return fail_at(p, s0, SD_ERR_FORMAT, "rule defined twice");
    p->rules[id].defined = 1;
    skip_space(p, 0);
    if (!(at(p, 0) == ':' && at(p, 1) == ':' && at(p, 2) == '=')) return fail(p, "expected '::='");
    p->pos += 3;
    skip_space(p, 1);
    if (parse_alternates(p, id, 0)) return -1;
    int c = at(p, 0);
    if (c == ')') return fail(p, "unmatched ')'");
    if (c != -1 && c != '\n' && c != '\r') return fail(p, "unexpected character");
    return 0;
}

/* ---- flatten ---- */

static sd_status flatten(parser *p, const char *root, sd_grammar **out) {
    sd_grammar *g = calloc(1, sizeof *g);
    if (!g) return nomem(p), p->st;
    int64_t n_alts = 0, n_elems = 0;
    for (int32_t r = 0; r < p->n_rules; r++) {
        n_alts += p->rules[r].n_alts;
        for (int32_t a = 0; a < p->rules[r].n_alts; a++) n_elems += p->rules[r].alts[a].n + 1;
    }
    if (n_elems > INT32_MAX / 2) {
        free(g);
        return fail_at(p, 0, SD_ERR_UNSUPPORTED, "grammar too large"), p->st;
    }
    g->rules = calloc((size_t)p->n_rules + 1, sizeof *g->rules);
    g->alts = calloc((size_t)n_alts + 1, sizeof *g->alts);
    g->elems = calloc((size_t)n_elems + 1, sizeof *g->elems);
    g->bytesets = calloc((size_t)p->n_sets + 1, sizeof *g->bytesets);
    if (!g->rules || !g->alts || !g->elems || !g->bytesets) {
        sd_grammar_free(g);
        return nomem(p), p->st;
    }
    if (p->n_sets) memcpy(g->bytesets, p->sets, sizeof *p->sets * (size_t)p->n_sets);
    g->n_bytesets = p->n_sets;
    for (int32_t r = 0; r < p->n_rules; r++) {
        brule *br = &p->rules[r];
        g->rules[r] = (sd_grule){g->n_alts, br->n_alts, br->name_off};
        for (int32_t a = 0; a < br->n_alts; a++) {
            g->alts[g->n_alts++] = g->n_elems;
            for (int32_t i = 0; i < br->alts[a].n; i++) g->elems[g->n_elems++] = br->alts[a].v[i];
            g->elems[g->n_elems++] = (sd_gelem){G_END, 0};
        }
    }
    g->n_rules = p->n_rules;
    g->names = p->names, p->names = NULL;
    g->n_tokens = p->n_token_refs;
    if (!sd_strmap_get(&p->by_name, root, strlen(root), &g->root) || !p->rules[g->root].defined) {
        sd_err_set(p->err, SD_ERR_FORMAT, "grammar: no rule named '%s' (the root)", root);
        p->st = SD_ERR_FORMAT;
        sd_grammar_free(g);
        return p->st;
    }
    *out = g;
    return SD_OK;
}

static void parser_free(parser *p) {
    for (int32_t r = 0; r < p->n_rules; r++) {
        for (int32_t a = 0; a < p->rules[r].n_alts; a++) free(p->rules[r].alts[a].v);
        free(p->rules[r].alts);
    }
    free(p->rules);
    free(p->sets);
    free(p->names);
    sd_strmap_free(&p->by_name);
}

sd_status sd_grammar_compile(const char *text, size_t len, const char *root, const sd_tokenizer *tok,
                             sd_grammar **out, sd_err *err) {
    *out = NULL;
    if (!text && len) return sd_err_set(err, SD_ERR_ARG, "grammar: NULL text");
    if (len > SD_GRAMMAR_MAX_TEXT) return sd_err_set(err, SD_ERR_UNSUPPORTED, "grammar: text over 16 MiB");
    if (!root) root = "root";
    parser p = {.s = text, .len = len, .tok = tok, .err = err};
    if (!sd_strmap_init(&p.by_name, 64)) return sd_err_set(err, SD_ERR_NOMEM, "grammar: out of memory");
    skip_space(&p, 1);
    while (p.st == SD_OK && p.pos < p.len) {
        if (parse_rule(&p)) break;
        skip_space(&p, 1);
    }
    for (int32_t r = 0; p.st == SD_OK && r < p.n_rules; r++)
        if (!p.rules[r].defined) {
            char what[160];
            snprintf(what, sizeof what, "undefined rule '%.100s'", p.names + p.rules[r].name_off);
            fail_at(&p, (size_t)p.rules[r].ref_pos, SD_ERR_FORMAT, what);
        }
    sd_grammar *g = NULL;
    if (p.st == SD_OK && flatten(&p, root, &g) == SD_OK) {
        sd_status cs = sd_grammar_check(g, err);
        if (cs != SD_OK) {
            sd_grammar_free(g);
            g = NULL;
            p.st = cs;
        }
    }
    parser_free(&p);
    if (p.st != SD_OK) return p.st;
    *out = g;
    return SD_OK;
}

void sd_grammar_free(sd_grammar *g) {
    if (!g) return;
    free(g->elems);
    free(g->alts);
    free(g->rules);
    free(g->bytesets);
    free(g->names);
    free(g);
}

int32_t sd_grammar_n_rules(const sd_grammar *g) { return g->n_rules; }
int32_t sd_grammar_n_elems(const sd_grammar *g) { return g->n_elems; }
