/* Jinja lexer and parser: template text -> syntax tree (jinja_impl.h).
 *
 * Whitespace follows jinja2's lexer with transformers' settings: one trailing
 * newline of the source is dropped (keep_trailing_newline=False), \r\n and \r
 * become \n; `{%-`/`{{-`/`{#-` strip all whitespace before the tag and `-%}`
 * etc. all after it; trim_blocks drops the newline right after a block or
 * comment tag; lstrip_blocks drops spaces and tabs between a line start and a
 * block or comment tag (not before `{{`, not with `{%+`). Expression grammar
 * and precedence as jinja2's parser: conditional < or < and < not < compare <
 * + - < ~ < * / // % < ** < unary - + < primary with postfix, filters, tests. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/jinja_impl.h"

enum { T_TEXT, T_VAR_BEGIN, T_VAR_END, T_BLOCK_BEGIN, T_BLOCK_END, T_NAME, T_STRING, T_INT, T_FLOAT, T_OP, T_EOF };

typedef struct tok {
    int t;
    int line, col;
    const jstr *s; /* T_TEXT, T_NAME, T_STRING, T_OP: text */
    int64_t i;
    double f;
} tok;

typedef struct parser {
    jarena *a;
    const char *src;
    size_t n, pos;
    tok *toks;
    size_t nt, capt, at;
    sd_err *err;
    jmp_buf fail;
    sd_status code;
    int depth;
    bool keep_nl; /* the last block tag ended with +%} */
    size_t pos_off; /* pos_of's cursor: src[pos_off] is at pos_line:pos_col */
    int pos_line, pos_col;
    /* names the template defines with {% macro %}, checked after parsing */
    jnodes calls;
    const jstr *macros[256];
    size_t n_macros;
} parser;

#define MAX_PARSE_DEPTH 200

static _Noreturn void perr(parser *p, sd_status code, int line, int col, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static _Noreturn void perr(parser *p, sd_status code, int line, int col, const char *fmt, ...) {
    char m[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    sd_err_set(p->err, code, "jinja %d:%d: %s", line, col, m);
    p->code = code;
    longjmp(p->fail, 1);
}

/* Line and column (1-based, columns in code points) of src[off]. Tokens come
 * in increasing order, so the scan resumes from the last answer: linear, not
 * quadratic, in the template's length. */
static void pos_of(parser *p, size_t off, int *line, int *col) {
    if (off < p->pos_off) p->pos_off = 0, p->pos_line = 1, p->pos_col = 1;
    for (size_t i = p->pos_off; i < off && i < p->n; i++) {
        if (p->src[i] == '\n') p->pos_line++, p->pos_col = 1;
        else if (((unsigned char)p->src[i] & 0xC0) != 0x80) p->pos_col++;
    }
    p->pos_off = off < p->n ? off : p->n;
    *line = p->pos_line;
    *col = p->pos_col;
}

static tok *push_tok(parser *p, int t, size_t off) {
    if (p->nt == p->capt) {
        size_t cap = p->capt ? p->capt * 2 : 256;
        tok *v = ja_alloc(p->a, cap * sizeof *v);
        if (p->nt) memcpy(v, p->toks, p->nt * sizeof *v);
        p->toks = v;
        p->capt = cap;
    }
    tok *k = &p->toks[p->nt++];
    memset(k, 0, sizeof *k);
    k->t = t;
    pos_of(p, off, &k->line, &k->col);
    return k;
}

static bool is_ws(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; }
static bool is_id0(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
static bool is_id(char c) { return is_id0(c) || (c >= '0' && c <= '9'); }

/* Appends one UTF-8 encoded code point. */
static size_t put_utf8(char *o, unsigned cp) {
    if (cp < 0x80) return o[0] = (char)cp, 1;
    if (cp < 0x800) return o[0] = (char)(0xC0 | cp >> 6), o[1] = (char)(0x80 | (cp & 63)), 2;
    if (cp < 0x10000)
        return o[0] = (char)(0xE0 | cp >> 12), o[1] = (char)(0x80 | ((cp >> 6) & 63)), o[2] = (char)(0x80 | (cp & 63)), 3;
    o[0] = (char)(0xF0 | cp >> 18), o[1] = (char)(0x80 | ((cp >> 12) & 63));
    o[2] = (char)(0x80 | ((cp >> 6) & 63)), o[3] = (char)(0x80 | (cp & 63));
    return 4;
}

static int hexv(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* A string literal at p->pos (quote char q): Python unicode-escape rules for
 * the escapes templates use (\n \t \r \\ \' \" \xHH \uXXXX \UXXXXXXXX, octal);
 * any other backslash stays as written. */
static void lex_string(parser *p, size_t start) {
    char q = p->src[p->pos++];
    size_t end = p->pos; /* the closing quote bounds the decoded length */
    while (end < p->n && p->src[end] != q) end += p->src[end] == '\\' ? 2 : 1;
    char *o = ja_alloc(p->a, (end < p->n ? end : p->n) - p->pos + 1);
    size_t k = 0;
    for (;;) {
        if (p->pos >= p->n) {
            int l, c;
            pos_of(p, start, &l, &c);
            perr(p, SD_ERR_FORMAT, l, c, "unterminated string");
        }
        char ch = p->src[p->pos];
        if (ch == q) {
            p->pos++;
            break;
        }
        if (ch != '\\' || p->pos + 1 >= p->n) {
            o[k++] = ch;
            p->pos++;
            continue;
        }
        char e = p->src[p->pos + 1];
        const char *simple = strchr("ntr\\'\"abfv", e);
        if (simple && e) {
            static const char map[] = "\n\t\r\\'\"\a\b\f\v";
            o[k++] = map[simple - "ntr\\'\"abfv"];
            p->pos += 2;
        } else if (e == 'x' || e == 'u' || e == 'U') {
            int digits = e == 'x' ? 2 : e == 'u' ? 4 : 8;
            unsigned cp = 0;
            int d;
            for (d = 0; d < digits && p->pos + 2 + d < p->n && hexv(p->src[p->pos + 2 + d]) >= 0; d++)
                cp = cp * 16 + (unsigned)hexv(p->src[p->pos + 2 + d]);
            if (d < digits || cp > 0x10FFFF) {
                int l, c;
                pos_of(p, p->pos, &l, &c);
                perr(p, SD_ERR_FORMAT, l, c, "bad escape in string");
            }
            k += put_utf8(o + k, cp);
            p->pos += 2 + (size_t)digits;
        } else if (e >= '0' && e <= '7') {
            unsigned cp = 0;
            int d;
            for (d = 0; d < 3 && p->pos + 1 + d < p->n && p->src[p->pos + 1 + d] >= '0' && p->src[p->pos + 1 + d] <= '7'; d++)
                cp = cp * 8 + (unsigned)(p->src[p->pos + 1 + d] - '0');
            k += put_utf8(o + k, cp);
            p->pos += 1 + (size_t)d;
        } else if (e == '\n') { /* line continuation */
            p->pos += 2;
        } else {
            o[k++] = '\\';
            p->pos++;
        }
    }
    tok *t = push_tok(p, T_STRING, start);
    t->s = js_new(p->a, o, k, PROV_TEMPLATE);
}

/* Tokens inside {{ }} or {% %} up to the closing delimiter. Returns the
 * offset right after the closing delimiter and whether it had '-'. */
static size_t lex_tag(parser *p, bool block, bool *strip_after) {
    int open = 0; /* brackets open: "}}" inside {'a': {}} closes a dict, not the tag (jinja2 balances too) */
    for (;;) {
        while (p->pos < p->n && is_ws(p->src[p->pos])) p->pos++;
        size_t s = p->pos;
        if (s >= p->n) {
            int l, c;
            pos_of(p, s, &l, &c);
            perr(p, SD_ERR_FORMAT, l, c, "unclosed %s", block ? "'{%'" : "'{{'");
        }
        const char *q = p->src + s;
        size_t left = p->n - s;
        const char *close = block ? "%}" : "}}";
        if (open > 0) goto token;
        if (left >= 3 && q[0] == '-' && !memcmp(q + 1, close, 2)) {
            push_tok(p, block ? T_BLOCK_END : T_VAR_END, s);
            *strip_after = true;
            return s + 3;
        }
        if (left >= 2 && !memcmp(q, close, 2)) {
            push_tok(p, block ? T_BLOCK_END : T_VAR_END, s);
            *strip_after = false;
            return s + 2;
        }
        if (block && left >= 3 && q[0] == '+' && !memcmp(q + 1, close, 2)) { /* +%}: no trim_blocks */
            push_tok(p, T_BLOCK_END, s);
            *strip_after = false;
            p->keep_nl = true;
            return s + 3;
        }
    token:
        if (is_id0(*q)) {
            while (p->pos < p->n && is_id(p->src[p->pos])) p->pos++;
            push_tok(p, T_NAME, s)->s = js_new(p->a, q, p->pos - s, PROV_TEMPLATE);
        } else if (*q >= '0' && *q <= '9') {
            bool fl = false;
            while (p->pos < p->n && ((p->src[p->pos] >= '0' && p->src[p->pos] <= '9') || p->src[p->pos] == '_')) p->pos++;
            if (p->pos + 1 < p->n && p->src[p->pos] == '.' && p->src[p->pos + 1] >= '0' && p->src[p->pos + 1] <= '9') {
                fl = true;
                p->pos++;
                while (p->pos < p->n && p->src[p->pos] >= '0' && p->src[p->pos] <= '9') p->pos++;
            }
            if (p->pos < p->n && (p->src[p->pos] == 'e' || p->src[p->pos] == 'E')) {
                size_t e = p->pos + 1;
                if (e < p->n && (p->src[e] == '+' || p->src[e] == '-')) e++;
                if (e < p->n && p->src[e] >= '0' && p->src[e] <= '9') {
                    fl = true;
                    p->pos = e;
                    while (p->pos < p->n && p->src[p->pos] >= '0' && p->src[p->pos] <= '9') p->pos++;
                }
            }
            char buf[64];
            size_t k = 0;
            for (size_t i = s; i < p->pos && k + 1 < sizeof buf; i++)
                if (p->src[i] != '_') buf[k++] = p->src[i];
            buf[k] = 0;
            tok *t = push_tok(p, fl ? T_FLOAT : T_INT, s);
            if (fl) t->f = strtod(buf, NULL);
            else {
                char *end;
                unsigned long long v = strtoull(buf, &end, 10);
                if (v > INT64_MAX) perr(p, SD_ERR_UNSUPPORTED, t->line, t->col, "integer literal too large");
                t->i = (int64_t)v;
            }
        } else if (*q == '\'' || *q == '"') {
            lex_string(p, s);
        } else {
            static const char *const ops2[] = {"//", "**", "==", "!=", "<=", ">="};
            size_t len = 0;
            for (size_t i = 0; i < sizeof ops2 / sizeof *ops2; i++)
                if (left >= 2 && !memcmp(q, ops2[i], 2)) len = 2;
            if (!len && strchr("+-*/%~<>=()[]{},.:|", *q)) len = 1;
            if (!len) {
                int l, c;
                pos_of(p, s, &l, &c);
                perr(p, SD_ERR_FORMAT, l, c, "unexpected character '%c'", *q);
            }
            p->pos += len;
            push_tok(p, T_OP, s)->s = js_new(p->a, q, len, PROV_TEMPLATE);
            if (len == 1 && strchr("([{", *q)) open++;
            else if (len == 1 && strchr(")]}", *q) && open > 0) open--;
        }
    }
}

/* Whether src[from..] starts "{%" [-+]? ws* word ws* [-]? "%}" for word; sets end. */
static bool match_block_word(parser *p, size_t from, const char *word, size_t *end, bool *strip_before,
                             bool *strip_after) {
    size_t i = from, n = p->n, wl = strlen(word);
    if (i + 2 > n || memcmp(p->src + i, "{%", 2)) return false;
    i += 2;
    *strip_before = i < n && p->src[i] == '-';
    if (i < n && (p->src[i] == '-' || p->src[i] == '+')) i++;
    while (i < n && is_ws(p->src[i])) i++;
    if (i + wl > n || memcmp(p->src + i, word, wl) || (i + wl < n && is_id(p->src[i + wl]))) return false;
    i += wl;
    while (i < n && is_ws(p->src[i])) i++;
    *strip_after = i < n && p->src[i] == '-';
    if (*strip_after) i++;
    if (i + 2 > n || memcmp(p->src + i, "%}", 2)) return false;
    *end = i + 2;
    return true;
}

static void push_text(parser *p, size_t off, const char *s, size_t n) {
    if (!n) return;
    push_tok(p, T_TEXT, off)->s = js_new(p->a, s, n, PROV_TEMPLATE);
}

/* Splits the source into text and tag tokens, applying the whitespace rules. */
static void lex(parser *p) {
    bool line_starting = true, strip_next = false, trim_nl = false;
    while (p->pos <= p->n) {
        size_t start = p->pos;
        if (strip_next)
            while (start < p->n && is_ws(p->src[start])) start++;
        else if (trim_nl && start < p->n && p->src[start] == '\n')
            start++;
        if (start > p->pos) line_starting = p->src[start - 1] == '\n';
        /* find the next tag opener */
        size_t i = start;
        while (i + 1 < p->n && !(p->src[i] == '{' && (p->src[i + 1] == '{' || p->src[i + 1] == '%' || p->src[i + 1] == '#'))) i++;
        if (i + 1 >= p->n) {
            push_text(p, start, p->src + start, p->n - start);
            break;
        }
        char kind = p->src[i + 1];
        char sign = i + 2 < p->n ? p->src[i + 2] : 0;
        size_t text_end = i;
        if (sign == '-') {
            while (text_end > start && is_ws(p->src[text_end - 1])) text_end--;
        } else if (sign != '+' && kind != '{') { /* lstrip_blocks */
            size_t l = text_end;
            while (l > start && (p->src[l - 1] == ' ' || p->src[l - 1] == '\t')) l--;
            if ((l > start && p->src[l - 1] == '\n') || (l == start && line_starting)) text_end = l;
        }
        push_text(p, start, p->src + start, text_end - start);
        p->pos = i + 2 + (sign == '-' || sign == '+');
        if (kind == '#') {
            size_t j = p->pos;
            while (j + 1 < p->n && !(p->src[j] == '#' && p->src[j + 1] == '}')) j++;
            if (j + 1 >= p->n) {
                int l, c;
                pos_of(p, i, &l, &c);
                perr(p, SD_ERR_FORMAT, l, c, "unclosed comment");
            }
            strip_next = j > p->pos && p->src[j - 1] == '-';
            trim_nl = true;
            p->pos = j + 2;
            line_starting = false;
            continue;
        }
        size_t raw_end, body_start;
        bool sb, sa;
        if (kind == '%' && match_block_word(p, i, "raw", &body_start, &sb, &sa)) {
            size_t j = body_start; /* no trim_blocks after {% raw %} (jinja2's raw_begin rule) */
            if (sa)
                while (j < p->n && is_ws(p->src[j])) j++;
            size_t k = j;
            bool esb = false, esa = false;
            while (k < p->n && !(p->src[k] == '{' && match_block_word(p, k, "endraw", &raw_end, &esb, &esa))) k++;
            if (k >= p->n) {
                int l, c;
                pos_of(p, i, &l, &c);
                perr(p, SD_ERR_FORMAT, l, c, "'raw' without 'endraw'");
            }
            size_t e = k;
            if (esb)
                while (e > j && is_ws(p->src[e - 1])) e--;
            else if (p->src[k + 2] != '+') { /* lstrip_blocks before {% endraw %} at a line start */
                size_t l = e;
                while (l > j && (p->src[l - 1] == ' ' || p->src[l - 1] == '\t')) l--;
                if (l > j && p->src[l - 1] == '\n') e = l;
            }
            push_text(p, j, p->src + j, e - j);
            p->pos = raw_end;
            strip_next = esa;
            trim_nl = true;
            line_starting = false;
            continue;
        }
        bool block = kind == '%';
        push_tok(p, block ? T_BLOCK_BEGIN : T_VAR_BEGIN, i);
        p->keep_nl = false;
        p->pos = lex_tag(p, block, &strip_next);
        trim_nl = block && !p->keep_nl;
        line_starting = false;
    }
    push_tok(p, T_EOF, p->n);
}

/* ---- parser ---- */

static tok *peek(parser *p) { return &p->toks[p->at]; }
static tok *next(parser *p) {
    tok *t = &p->toks[p->at];
    if (t->t != T_EOF) p->at++;
    return t;
}
static bool is_op(const tok *t, const char *op) { return t->t == T_OP && !strcmp(t->s->s, op); }
static bool is_name(const tok *t, const char *nm) { return t->t == T_NAME && !strcmp(t->s->s, nm); }
static bool accept_op(parser *p, const char *op) {
    if (!is_op(peek(p), op)) return false;
    p->at++;
    return true;
}
static bool accept_name(parser *p, const char *nm) {
    if (!is_name(peek(p), nm)) return false;
    p->at++;
    return true;
}
static const char *tok_desc(const tok *t) {
    switch (t->t) {
    case T_EOF: return "end of template";
    case T_BLOCK_END: return "'%}'";
    case T_VAR_END: return "'}}'";
    case T_TEXT: return "text";
    default: return t->s ? t->s->s : "literal";
    }
}
static void expect_op(parser *p, const char *op) {
    tok *t = peek(p);
    if (!accept_op(p, op)) perr(p, SD_ERR_FORMAT, t->line, t->col, "expected '%s', found %s", op, tok_desc(t));
}
static void expect(parser *p, int type, const char *what) {
    tok *t = peek(p);
    if (t->t != type) perr(p, SD_ERR_FORMAT, t->line, t->col, "expected %s, found %s", what, tok_desc(t));
    p->at++;
}

static jnode *mk(parser *p, jkind k, const tok *at) {
    jnode *n = ja_alloc(p->a, sizeof *n);
    n->k = k;
    n->line = at->line;
    n->col = at->col;
    return n;
}

static void nodes_push(jarena *a, jnodes *l, jnode *n) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        jnode **v = ja_alloc(a, cap * sizeof *v);
        if (l->n) memcpy(v, l->v, l->n * sizeof *v);
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = n;
}

static jnode *parse_expr(parser *p);
static jnode *parse_or(parser *p);
static jnode *parse_unary(parser *p, bool with_filter);

static void enter(parser *p) {
    if (++p->depth > MAX_PARSE_DEPTH) {
        tok *t = peek(p);
        perr(p, SD_ERR_UNSUPPORTED, t->line, t->col, "nesting deeper than %d", MAX_PARSE_DEPTH);
    }
}

/* (args) after a callee, filter or test name: positional then name=value. */
static void parse_args(parser *p, jnode *n) {
    size_t nk = 0, capk = 0;
    const jstr **names = NULL;
    while (!accept_op(p, ")")) {
        if (n->args.n + n->kwv.n) expect_op(p, ",");
        if (accept_op(p, ")")) break;
        tok *t = peek(p);
        if (t->t == T_NAME && is_op(&p->toks[p->at + 1], "=")) {
            p->at += 2;
            if (nk == capk) {
                capk = capk ? capk * 2 : 4;
                const jstr **v = ja_alloc(p->a, capk * sizeof *v);
                if (nk) memcpy(v, names, nk * sizeof *v);
                names = v;
            }
            names[nk++] = t->s;
            nodes_push(p->a, &n->kwv, parse_expr(p));
        } else {
            if (n->kwv.n) perr(p, SD_ERR_FORMAT, t->line, t->col, "positional argument after keyword argument");
            nodes_push(p->a, &n->args, parse_expr(p));
        }
    }
    n->kwn = names;
}

static jnode *parse_primary(parser *p) {
    tok *t = next(p);
    jnode *n;
    switch (t->t) {
    case T_NAME: {
        const char *s = t->s->s;
        n = mk(p, N_LIT, t);
        if (!strcmp(s, "true") || !strcmp(s, "True")) n->lit = jv_bool(true);
        else if (!strcmp(s, "false") || !strcmp(s, "False")) n->lit = jv_bool(false);
        else if (!strcmp(s, "none") || !strcmp(s, "None")) n->lit = jv_none();
        else {
            n->k = N_NAME;
            n->name = t->s;
        }
        return n;
    }
    case T_STRING: {
        jbuf b = {0};
        jb_str(p->a, &b, t->s);
        while (peek(p)->t == T_STRING) jb_str(p->a, &b, next(p)->s); /* adjacent literals join */
        n = mk(p, N_LIT, t);
        n->lit = jv_str(jb_done(p->a, &b));
        return n;
    }
    case T_INT:
        n = mk(p, N_LIT, t);
        n->lit = jv_int(t->i);
        return n;
    case T_FLOAT:
        n = mk(p, N_LIT, t);
        n->lit = (jv){.t = JV_FLOAT, .u.f = t->f};
        return n;
    case T_OP:
        if (is_op(t, "(")) {
            enter(p);
            if (accept_op(p, ")")) { /* empty tuple */
                p->depth--;
                n = mk(p, N_LIST, t);
                n->op = 1;
                return n;
            }
            jnode *e = parse_expr(p);
            if (is_op(peek(p), ",")) { /* a tuple: a list marked as one */
                n = mk(p, N_LIST, t);
                n->op = 1;
                nodes_push(p->a, &n->args, e);
                while (accept_op(p, ",") && !is_op(peek(p), ")")) nodes_push(p->a, &n->args, parse_expr(p));
                e = n;
            }
            expect_op(p, ")");
            p->depth--;
            return e;
        }
        if (is_op(t, "[")) {
            enter(p);
            n = mk(p, N_LIST, t);
            while (!accept_op(p, "]")) {
                if (n->args.n) expect_op(p, ",");
                if (accept_op(p, "]")) break;
                nodes_push(p->a, &n->args, parse_expr(p));
            }
            p->depth--;
            return n;
        }
        if (is_op(t, "{")) {
            enter(p);
            n = mk(p, N_DICT, t);
            while (!accept_op(p, "}")) {
                if (n->args.n) expect_op(p, ",");
                if (accept_op(p, "}")) break;
                nodes_push(p->a, &n->args, parse_expr(p));
                expect_op(p, ":");
                nodes_push(p->a, &n->kwv, parse_expr(p));
            }
            p->depth--;
            return n;
        }
        /* fall through */
    default: perr(p, SD_ERR_FORMAT, t->line, t->col, "unexpected %s", tok_desc(t));
    }
}

static void check_call_name(parser *p, jnode *call) {
    if (call->a->k == N_NAME) {
        if (!jb_global_known(call->a->name->s)) nodes_push(p->a, &p->calls, call); /* a macro? checked at the end */
    } else if (call->a->k == N_ATTR) {
        if (!jb_method_known(call->a->name->s))
            perr(p, SD_ERR_UNSUPPORTED, call->a->line, call->a->col, "unsupported method '%s'", call->a->name->s);
    }
}

static jnode *parse_postfix(parser *p, jnode *n) {
    for (;;) {
        tok *t = peek(p);
        if (is_op(t, ".")) {
            next(p);
            tok *nm = next(p);
            jnode *a = mk(p, N_ATTR, t);
            a->a = n;
            if (nm->t == T_NAME) a->name = nm->s;
            else if (nm->t == T_INT) { /* x.0 = x[0] */
                a->k = N_ITEM;
                a->b = mk(p, N_LIT, nm);
                a->b->lit = jv_int(nm->i);
            } else perr(p, SD_ERR_FORMAT, nm->line, nm->col, "expected an attribute name after '.'");
            n = a;
        } else if (is_op(t, "[")) {
            next(p);
            enter(p);
            jnode *parts[3] = {0};
            int colons = 0;
            for (;;) {
                if (is_op(peek(p), ":")) {
                    if (++colons > 2) perr(p, SD_ERR_FORMAT, peek(p)->line, peek(p)->col, "bad slice");
                    next(p);
                    continue;
                }
                if (is_op(peek(p), "]")) break;
                if (parts[colons]) perr(p, SD_ERR_FORMAT, peek(p)->line, peek(p)->col, "bad subscript");
                parts[colons] = parse_expr(p);
            }
            expect_op(p, "]");
            p->depth--;
            jnode *s = mk(p, colons ? N_SLICE : N_ITEM, t);
            s->a = n;
            if (colons) {
                s->args.n = 0;
                s->b = parts[0];
                s->c = parts[1];
                s->kwv.n = 0;
                if (parts[2]) nodes_push(p->a, &s->kwv, parts[2]);
            } else {
                if (!parts[0]) perr(p, SD_ERR_FORMAT, t->line, t->col, "empty subscript");
                s->b = parts[0];
            }
            n = s;
        } else if (is_op(t, "(")) {
            next(p);
            enter(p);
            jnode *c = mk(p, N_CALL, t);
            c->a = n;
            if (n->k == N_ATTR) c->name = n->name;
            parse_args(p, c);
            p->depth--;
            check_call_name(p, c);
            n = c;
        } else return n;
    }
}

static jnode *parse_filters_tests(parser *p, jnode *n) {
    for (;;) {
        tok *t = peek(p);
        if (is_op(t, "|")) {
            next(p);
            tok *nm = next(p);
            if (nm->t != T_NAME) perr(p, SD_ERR_FORMAT, nm->line, nm->col, "expected a filter name");
            if (!jb_filter_known(nm->s->s)) perr(p, SD_ERR_UNSUPPORTED, nm->line, nm->col, "unsupported filter '%s'", nm->s->s);
            jnode *f = mk(p, N_FILTER, nm);
            f->a = n;
            f->name = nm->s;
            if (accept_op(p, "(")) {
                enter(p);
                parse_args(p, f);
                p->depth--;
            }
            n = f;
        } else if (is_name(t, "is")) {
            next(p);
            bool neg = accept_name(p, "not");
            tok *nm = next(p);
            if (nm->t != T_NAME && !(nm->t == T_OP && (is_op(nm, "==") || is_op(nm, "!=") || is_op(nm, "<") || is_op(nm, ">") || is_op(nm, "<=") || is_op(nm, ">="))))
                perr(p, SD_ERR_FORMAT, nm->line, nm->col, "expected a test name");
            const char *tn = nm->t == T_NAME ? nm->s->s : nm->s->s;
            if (nm->t == T_NAME && !strcmp(tn, "none")) tn = "none";
            if (!jb_test_known(tn)) perr(p, SD_ERR_UNSUPPORTED, nm->line, nm->col, "unsupported test '%s'", tn);
            jnode *x = mk(p, N_TEST, nm);
            x->a = n;
            x->name = nm->s;
            x->op = neg;
            tok *q = peek(p);
            if (accept_op(p, "(")) {
                enter(p);
                parse_args(p, x);
                p->depth--;
            } else if ((q->t == T_NAME && !is_name(q, "else") && !is_name(q, "or") && !is_name(q, "and") &&
                        !is_name(q, "if") && !is_name(q, "is") && !is_name(q, "in") && !is_name(q, "not")) ||
                       q->t == T_STRING || q->t == T_INT || q->t == T_FLOAT || is_op(q, "[") || is_op(q, "{")) {
                /* one argument without parentheses: a primary with postfix, as jinja2's parse_test */
                nodes_push(p->a, &x->args, parse_postfix(p, parse_primary(p)));
            }
            n = x;
        } else return n;
    }
}

static jnode *parse_unary(parser *p, bool with_filter) {
    tok *t = peek(p);
    enter(p);
    jnode *n;
    if (is_op(t, "-") || is_op(t, "+")) {
        next(p);
        n = mk(p, is_op(t, "-") ? N_NEG : N_POS, t);
        n->a = parse_unary(p, false);
    } else {
        n = parse_postfix(p, parse_primary(p));
    }
    if (with_filter) n = parse_filters_tests(p, n);
    p->depth--;
    return n;
}

static jnode *bin(parser *p, const tok *t, int op, jnode *l, jnode *r) {
    jnode *n = mk(p, N_BIN, t);
    n->op = op;
    n->a = l;
    n->b = r;
    return n;
}

static jnode *parse_pow(parser *p) {
    jnode *l = parse_unary(p, true);
    while (is_op(peek(p), "**")) {
        tok *t = next(p);
        l = bin(p, t, OP_POW, l, parse_unary(p, true));
    }
    return l;
}

static jnode *parse_math2(parser *p) {
    jnode *l = parse_pow(p);
    for (;;) {
        tok *t = peek(p);
        int op = is_op(t, "*") ? OP_MUL : is_op(t, "/") ? OP_DIV : is_op(t, "//") ? OP_FDIV : is_op(t, "%") ? OP_MOD : -1;
        if (op < 0) return l;
        next(p);
        l = bin(p, t, op, l, parse_pow(p));
    }
}

static jnode *parse_concat(parser *p) {
    jnode *l = parse_math2(p);
    while (is_op(peek(p), "~")) {
        tok *t = next(p);
        l = bin(p, t, OP_CAT, l, parse_math2(p));
    }
    return l;
}

static jnode *parse_math1(parser *p) {
    jnode *l = parse_concat(p);
    for (;;) {
        tok *t = peek(p);
        int op = is_op(t, "+") ? OP_ADD : is_op(t, "-") ? OP_SUB : -1;
        if (op < 0) return l;
        next(p);
        l = bin(p, t, op, l, parse_concat(p));
    }
}

/* a < b < c is (a < b) and (b < c), b evaluated twice (expressions have no side effects). */
static jnode *parse_compare(parser *p) {
    jnode *l = parse_math1(p), *chain = NULL, *prev_right = NULL;
    for (;;) {
        tok *t = peek(p);
        int op = is_op(t, "==") ? OP_EQ : is_op(t, "!=") ? OP_NE : is_op(t, "<") ? OP_LT : is_op(t, "<=") ? OP_LE
               : is_op(t, ">") ? OP_GT : is_op(t, ">=") ? OP_GE : is_name(t, "in") ? OP_IN : -1;
        if (op < 0 && is_name(t, "not") && is_name(&p->toks[p->at + 1], "in")) {
            next(p);
            op = OP_NOTIN;
        }
        if (op < 0) return chain ? chain : l;
        next(p);
        jnode *r = parse_math1(p);
        jnode *cmp = bin(p, t, op, prev_right ? prev_right : l, r);
        if (!prev_right) chain = cmp;
        else {
            jnode *and = mk(p, N_AND, t);
            and->a = chain;
            and->b = cmp;
            chain = and;
        }
        prev_right = r;
    }
}

static jnode *parse_not(parser *p) {
    tok *t = peek(p);
    if (accept_name(p, "not")) {
        enter(p);
        jnode *n = mk(p, N_NOT, t);
        n->a = parse_not(p);
        p->depth--;
        return n;
    }
    return parse_compare(p);
}

/* A left-associative chain of the keyword operator kw (node k) over sub. */
static jnode *parse_keyword_chain(parser *p, const char *kw, jkind k, jnode *(*sub)(parser *)) {
    jnode *l = sub(p);
    while (is_name(peek(p), kw)) {
        tok *t = next(p);
        jnode *n = mk(p, k, t);
        n->a = l;
        n->b = sub(p);
        l = n;
    }
    return l;
}

static jnode *parse_and(parser *p) { return parse_keyword_chain(p, "and", N_AND, parse_not); }
static jnode *parse_or(parser *p) { return parse_keyword_chain(p, "or", N_OR, parse_and); }

static jnode *parse_expr(parser *p) {
    enter(p);
    jnode *e = parse_or(p);
    while (is_name(peek(p), "if")) {
        tok *t = next(p);
        jnode *n = mk(p, N_COND, t);
        n->a = parse_or(p);
        n->b = e;
        if (accept_name(p, "else")) n->c = parse_expr(p);
        e = n;
    }
    p->depth--;
    return e;
}

/* ---- statements ---- */

static void parse_body(parser *p, jnodes *out, const char *const *ends, const char **which);

static void end_tag(parser *p) { expect(p, T_BLOCK_END, "'%}'"); }

static jnode *parse_if(parser *p, tok *t) {
    jnode *n = mk(p, N_IF, t);
    n->a = parse_expr(p);
    end_tag(p);
    static const char *const ends[] = {"elif", "else", "endif", NULL};
    const char *w;
    parse_body(p, &n->body, ends, &w);
    if (!strcmp(w, "elif")) {
        tok *e = &p->toks[p->at - 1];
        nodes_push(p->a, &n->orelse, parse_if(p, e));
        return n;
    }
    if (!strcmp(w, "else")) {
        end_tag(p);
        static const char *const ends2[] = {"endif", NULL};
        parse_body(p, &n->orelse, ends2, &w);
    }
    end_tag(p);
    return n;
}

static jnode *target_name(parser *p) {
    tok *t = next(p);
    if (t->t != T_NAME) perr(p, SD_ERR_FORMAT, t->line, t->col, "expected a variable name, found %s", tok_desc(t));
    jnode *n = mk(p, N_NAME, t);
    n->name = t->s;
    return n;
}

static jnode *parse_for(parser *p, tok *t) {
    jnode *n = mk(p, N_FOR, t);
    bool paren = accept_op(p, "(");
    do nodes_push(p->a, &n->args, target_name(p));
    while (accept_op(p, ","));
    if (paren) expect_op(p, ")");
    if (!accept_name(p, "in")) perr(p, SD_ERR_FORMAT, peek(p)->line, peek(p)->col, "expected 'in' in for");
    n->a = parse_or(p); /* jinja2 parses the iterable without a conditional */
    if (accept_name(p, "if")) n->b = parse_or(p);
    if (is_name(peek(p), "recursive")) perr(p, SD_ERR_UNSUPPORTED, peek(p)->line, peek(p)->col, "unsupported 'recursive' loop");
    end_tag(p);
    static const char *const ends[] = {"else", "endfor", NULL};
    const char *w;
    parse_body(p, &n->body, ends, &w);
    if (!strcmp(w, "else")) {
        end_tag(p);
        static const char *const ends2[] = {"endfor", NULL};
        parse_body(p, &n->orelse, ends2, &w);
    }
    end_tag(p);
    return n;
}

static jnode *parse_set(parser *p, tok *t) {
    tok *nm = next(p);
    if (nm->t != T_NAME) perr(p, SD_ERR_FORMAT, nm->line, nm->col, "expected a name after 'set'");
    jnode *n = mk(p, N_SET, t);
    n->name = nm->s;
    if (accept_op(p, ".")) {
        tok *at = next(p);
        if (at->t != T_NAME) perr(p, SD_ERR_FORMAT, at->line, at->col, "expected an attribute name");
        n->attr = at->s;
    }
    if (is_op(peek(p), ",")) perr(p, SD_ERR_UNSUPPORTED, peek(p)->line, peek(p)->col, "unsupported tuple assignment in 'set'");
    if (peek(p)->t == T_BLOCK_END && !n->attr) { /* {% set x %}...{% endset %} */
        end_tag(p);
        n->k = N_SETBLOCK;
        static const char *const ends[] = {"endset", NULL};
        const char *w;
        parse_body(p, &n->body, ends, &w);
        end_tag(p);
        return n;
    }
    expect_op(p, "=");
    n->a = parse_expr(p);
    end_tag(p);
    return n;
}

static jnode *parse_macro(parser *p, tok *t) {
    tok *nm = next(p);
    if (nm->t != T_NAME) perr(p, SD_ERR_FORMAT, nm->line, nm->col, "expected a macro name");
    jnode *n = mk(p, N_MACRO, t);
    n->name = nm->s;
    expect_op(p, "(");
    const jstr **names = ja_alloc(p->a, 64 * sizeof *names);
    while (!accept_op(p, ")")) {
        if (n->args.n) expect_op(p, ",");
        if (n->args.n >= 64) perr(p, SD_ERR_UNSUPPORTED, nm->line, nm->col, "too many macro parameters");
        jnode *param = target_name(p);
        names[n->args.n] = param->name;
        nodes_push(p->a, &n->args, param);
        nodes_push(p->a, &n->kwv, accept_op(p, "=") ? parse_expr(p) : NULL);
    }
    n->kwn = names;
    end_tag(p);
    static const char *const ends[] = {"endmacro", NULL};
    const char *w;
    parse_body(p, &n->body, ends, &w);
    end_tag(p);
    if (p->n_macros < sizeof p->macros / sizeof *p->macros) p->macros[p->n_macros++] = n->name;
    return n;
}

/* Statements until one of ends (NULL: end of template); *which = the end word. */
static void parse_body(parser *p, jnodes *out, const char *const *ends, const char **which) {
    enter(p);
    for (;;) {
        tok *t = next(p);
        if (t->t == T_EOF) {
            if (!ends) {
                *which = "";
                p->depth--;
                return;
            }
            size_t last = 0;
            while (ends[last + 1]) last++;
            perr(p, SD_ERR_FORMAT, t->line, t->col, "missing '%s'", ends[last]);
        }
        if (t->t == T_TEXT) {
            jnode *n = mk(p, N_TEXT, t);
            n->lit = jv_str(t->s);
            nodes_push(p->a, out, n);
            continue;
        }
        if (t->t == T_VAR_BEGIN) {
            jnode *n = mk(p, N_OUT, t);
            n->a = parse_expr(p);
            expect(p, T_VAR_END, "'}}'");
            nodes_push(p->a, out, n);
            continue;
        }
        if (t->t != T_BLOCK_BEGIN) perr(p, SD_ERR_FORMAT, t->line, t->col, "unexpected %s", tok_desc(t));
        tok *kw = next(p);
        if (kw->t != T_NAME) perr(p, SD_ERR_FORMAT, kw->line, kw->col, "expected a statement name");
        const char *w = kw->s->s;
        for (size_t i = 0; ends && ends[i]; i++)
            if (!strcmp(w, ends[i])) {
                *which = ends[i];
                p->depth--;
                return;
            }
        jnode *n;
        if (!strcmp(w, "if")) n = parse_if(p, kw);
        else if (!strcmp(w, "for")) n = parse_for(p, kw);
        else if (!strcmp(w, "set")) n = parse_set(p, kw);
        else if (!strcmp(w, "macro")) n = parse_macro(p, kw);
        else if (!strcmp(w, "break") || !strcmp(w, "continue")) {
            n = mk(p, w[0] == 'b' ? N_BREAK : N_CONTINUE, kw);
            end_tag(p);
        } else if (!strcmp(w, "elif") || !strcmp(w, "else") || !strncmp(w, "end", 3))
            perr(p, SD_ERR_FORMAT, kw->line, kw->col, "unexpected '%s'", w);
        else perr(p, SD_ERR_UNSUPPORTED, kw->line, kw->col, "unsupported statement '%s'", w);
        nodes_push(p->a, out, n);
    }
}

/* Every call of a bare name must be a macro the template defines. */
static void check_calls(parser *p) {
    for (size_t i = 0; i < p->calls.n; i++) {
        const jnode *c = p->calls.v[i];
        bool ok = false;
        for (size_t m = 0; m < p->n_macros && !ok; m++) ok = !strcmp(p->macros[m]->s, c->a->name->s);
        if (!ok) perr(p, SD_ERR_UNSUPPORTED, c->a->line, c->a->col, "unsupported function '%s'", c->a->name->s);
    }
}

sd_status sd_jinja_parse(const char *src, size_t len, sd_jinja **out, sd_err *err) {
    *out = NULL;
    if (!src) return sd_err_set(err, SD_ERR_ARG, "jinja: no template");
    sd_jinja *t = calloc(1, sizeof *t);
    if (!t) return sd_err_set(err, SD_ERR_NOMEM, "jinja: out of memory");
    parser *p = calloc(1, sizeof *p);
    if (!p) {
        free(t);
        return sd_err_set(err, SD_ERR_NOMEM, "jinja: out of memory");
    }
    jmp_buf oom;
    t->arena.cap = (size_t)64 << 20 < len * 64 + (1 << 20) ? len * 64 + (1 << 20) : (size_t)64 << 20;
    t->arena.oom = &oom;
    p->a = &t->arena;
    p->err = err;
    if (setjmp(oom)) {
        ja_free(&t->arena);
        free(t);
        free(p);
        return sd_err_set(err, SD_ERR_NOMEM, "jinja: out of memory parsing the template");
    }
    if (setjmp(p->fail)) {
        sd_status code = p->code;
        ja_free(&t->arena);
        free(t);
        free(p);
        return code;
    }
    /* normalise newlines, drop one trailing newline */
    char *s = ja_alloc(p->a, len + 1);
    size_t k = 0;
    for (size_t i = 0; i < len; i++) {
        if (src[i] == '\r') {
            s[k++] = '\n';
            if (i + 1 < len && src[i + 1] == '\n') i++;
        } else s[k++] = src[i];
    }
    if (k && s[k - 1] == '\n') k--;
    s[k] = 0;
    p->src = s;
    p->n = k;
    p->pos_line = p->pos_col = 1;
    lex(p);
    const char *w;
    parse_body(p, &t->body, NULL, &w);
    check_calls(p);
    t->arena.oom = NULL;
    free(p);
    *out = t;
    return SD_OK;
}

void sd_jinja_free(sd_jinja *t) {
    if (!t) return;
    ja_free(&t->arena);
    free(t);
}
