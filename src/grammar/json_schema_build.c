/* The grammar under construction for the JSON Schema converter: rules,
 * their alternatives and what each alternative must pass through, the
 * shared rules (any JSON value, strings, numbers, formats), and the canonical
 * spellings of JSON strings and numbers. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/json_schema_impl.h"

int js_fail(js_conv *c, sd_status code, const char *fmt, ...) {
    if (c->status != SD_OK) return -1;
    c->status = code;
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    const char *where = c->path.len ? sd_strbuf_str(&c->path) : "";
    sd_err_set(c->err, code, "json schema: %s (at #%s)", msg, where);
    return -1;
}

bool js_ok(const js_conv *c) { return c->status == SD_OK; }

static char *dup(const char *s) {
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

static bool ints_push(js_ints *v, int x) {
    if (v->n == v->cap) {
        int cap = v->cap ? v->cap * 2 : 4;
        int *p = realloc(v->v, sizeof *p * (size_t)cap);
        if (!p) return false;
        v->v = p;
        v->cap = cap;
    }
    v->v[v->n++] = x;
    return true;
}

int js_rule_new(js_conv *c, const char *hint) {
    if (!js_ok(c)) return -1;
    if (c->nrules >= SD_JSON_SCHEMA_MAX_RULES)
        return js_fail(c, SD_ERR_FORMAT, "the grammar would need more than %d rules", SD_JSON_SCHEMA_MAX_RULES);
    if (c->nrules == c->caprules) {
        int cap = c->caprules ? c->caprules * 2 : 64;
        js_rule *p = realloc(c->rules, sizeof *p * (size_t)cap);
        if (!p) return js_fail(c, SD_ERR_NOMEM, "out of memory");
        c->rules = p;
        c->caprules = cap;
    }
    /* A name of [a-z0-9-] from the hint, made unique by the rule's index. */
    char base[48];
    size_t k = 0;
    for (const char *h = hint; *h && k < 32; h++) {
        char ch = *h;
        if (ch >= 'A' && ch <= 'Z') ch = (char)(ch - 'A' + 'a');
        if ((ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9')) base[k++] = ch;
        else if (k && base[k - 1] != '-') base[k++] = '-';
    }
    while (k && base[k - 1] == '-') k--;
    base[k] = 0;
    int id = c->nrules;
    char name[64];
    if (id == 0) snprintf(name, sizeof name, "root");
    else snprintf(name, sizeof name, "%s-%d", k ? base : "r", id);
    js_rule *r = &c->rules[id];
    memset(r, 0, sizeof *r);
    r->name = dup(name);
    r->where = dup(sd_strbuf_str(&c->path));
    c->nrules++;
    if (!r->name || !r->where) return js_fail(c, SD_ERR_NOMEM, "out of memory");
    return id;
}

void js_alt_open(js_conv *c, int r) {
    if (!js_ok(c) || r < 0) return;
    js_rule *R = &c->rules[r];
    if (R->nalts == R->capalts) {
        int cap = R->capalts ? R->capalts * 2 : 2;
        js_alt *p = realloc(R->alts, sizeof *p * (size_t)cap);
        if (!p) { js_fail(c, SD_ERR_NOMEM, "out of memory"); return; }
        R->alts = p;
        R->capalts = cap;
    }
    if (R->nalts) sd_strbuf_puts(&R->body, " | ");
    R->alts[R->nalts++] = (js_alt){.open = true};
}

static js_alt *cur_alt(js_conv *c, int r) {
    if (!js_ok(c) || r < 0) return NULL;
    if (!c->rules[r].nalts) js_alt_open(c, r);
    return js_ok(c) ? &c->rules[r].alts[c->rules[r].nalts - 1] : NULL;
}

static void body_add(js_conv *c, int r, const char *text) {
    js_rule *R = &c->rules[r];
    if (R->body.len && R->body.s[R->body.len - 1] != ' ' && R->body.s[R->body.len - 1] != '(') sd_strbuf_puts(&R->body, " ");
    sd_strbuf_puts(&R->body, text);
    if (R->body.oom) js_fail(c, SD_ERR_NOMEM, "out of memory");
    else if (R->body.len > SD_JSON_SCHEMA_MAX_GBNF)
        js_fail(c, SD_ERR_FORMAT, "the grammar would exceed %d bytes", SD_JSON_SCHEMA_MAX_GBNF);
}

void js_t(js_conv *c, int r, const char *text) {
    js_alt *a = cur_alt(c, r);
    if (!a) return;
    a->open = false;
    body_add(c, r, text);
}

void js_o(js_conv *c, int r, const char *text) {
    if (!cur_alt(c, r)) return;
    body_add(c, r, text);
}

void js_ref(js_conv *c, int r, int target, bool mandatory) {
    js_alt *a = cur_alt(c, r);
    if (!a || target < 0) return;
    bool ok = true;
    if (a->open) ok = ints_push(&a->left, target);
    if (mandatory) { ok = ok && ints_push(&a->mand, target); a->open = false; }
    if (!ok) { js_fail(c, SD_ERR_NOMEM, "out of memory"); return; }
    body_add(c, r, c->rules[target].name);
}

void js_need(js_conv *c, int r, int target) {
    js_alt *a = cur_alt(c, r);
    if (a && target >= 0 && !ints_push(&a->mand, target)) js_fail(c, SD_ERR_NOMEM, "out of memory");
}

void js_gbnf_literal(sd_strbuf *out, const char *bytes, size_t n) {
    sd_strbuf_puts(out, "\"");
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)bytes[i];
        if (ch == '"' || ch == '\\') sd_strbuf_printf(out, "\\%c", ch);
        else if (ch == '\n') sd_strbuf_puts(out, "\\n");
        else if (ch == '\r') sd_strbuf_puts(out, "\\r");
        else if (ch == '\t') sd_strbuf_puts(out, "\\t");
        else if (ch < 0x20 || ch == 0x7F) sd_strbuf_printf(out, "\\x%02X", ch);
        else sd_strbuf_add(out, (const char *)&bytes[i], 1);
    }
    sd_strbuf_puts(out, "\"");
}

void js_lit(js_conv *c, int r, const char *bytes, size_t n) {
    sd_strbuf lit = {0};
    js_gbnf_literal(&lit, bytes, n);
    if (lit.oom) js_fail(c, SD_ERR_NOMEM, "out of memory");
    else if (n) js_t(c, r, lit.s);
    else js_o(c, r, lit.s);
    sd_strbuf_free(&lit);
}

void js_json_string(sd_strbuf *out, const char *s, size_t n) {
    sd_strbuf_puts(out, "\"");
    for (size_t i = 0; i < n; i++) {
        unsigned char ch = (unsigned char)s[i];
        switch (ch) {
        case '"': sd_strbuf_puts(out, "\\\""); break;
        case '\\': sd_strbuf_puts(out, "\\\\"); break;
        case '\b': sd_strbuf_puts(out, "\\b"); break;
        case '\f': sd_strbuf_puts(out, "\\f"); break;
        case '\n': sd_strbuf_puts(out, "\\n"); break;
        case '\r': sd_strbuf_puts(out, "\\r"); break;
        case '\t': sd_strbuf_puts(out, "\\t"); break;
        default:
            if (ch < 0x20) sd_strbuf_printf(out, "\\u%04x", ch);
            else sd_strbuf_add(out, (const char *)&s[i], 1);
        }
    }
    sd_strbuf_puts(out, "\"");
}

/* Python's float repr: the shortest digits that round-trip; positional
 * for decimal exponents -4..15 (with ".0" when integral), else d.ddde+XX. */
void js_json_real(sd_strbuf *out, double v) {
    char buf[40];
    int prec = 0;
    for (prec = 0; prec < 17; prec++) {
        snprintf(buf, sizeof buf, "%.*e", prec, v);
        if (strtod(buf, NULL) == v) break;
    }
    /* buf: [-]d[.ddd]e[+-]XX */
    char digits[24];
    int nd = 0;
    const char *p = buf;
    bool neg = *p == '-';
    if (neg) p++;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[nd++] = *p;
    int exp = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0') nd--;
    if (neg) sd_strbuf_puts(out, "-");
    if (exp >= -4 && exp < 16) {
        if (exp < 0) {
            sd_strbuf_puts(out, "0.");
            for (int k = -1; k > exp; k--) sd_strbuf_puts(out, "0");
            sd_strbuf_add(out, digits, (size_t)nd);
        } else {
            for (int k = 0; k <= exp; k++) sd_strbuf_add(out, k < nd ? &digits[k] : "0", 1);
            sd_strbuf_puts(out, ".");
            if (nd > exp + 1) sd_strbuf_add(out, digits + exp + 1, (size_t)(nd - exp - 1));
            else sd_strbuf_puts(out, "0");
        }
    } else {
        sd_strbuf_add(out, digits, 1);
        if (nd > 1) { sd_strbuf_puts(out, "."); sd_strbuf_add(out, digits + 1, (size_t)(nd - 1)); }
        sd_strbuf_printf(out, "e%c%02d", exp < 0 ? '-' : '+', exp < 0 ? -exp : exp);
    }
}

/* ---- shared rules ---- */

#define HEX "[0-9a-fA-F]"
#define D2 "[0-9] [0-9]"

static void def_common(js_conv *c, int r, enum js_common which) {
    switch (which) {
    case JS_WS: /* one space, or a newline and up to 20 spaces/tabs of indentation */
        js_o(c, r, "(\" \" | \"\\n\" [ \\t]{0,20})?");
        break;
    case JS_VALUE: {
        enum js_common kinds[] = {JS_OBJECT, JS_ARRAY, JS_STRING, JS_NUMBER, JS_BOOLEAN, JS_NULL};
        for (int k = 0; k < 6; k++) {
            js_common(c, kinds[k]);
            js_alt_open(c, r);
            js_ref(c, r, c->common[kinds[k]], true);
        }
        break;
    }
    case JS_OBJECT: {
        const char *ws = js_common(c, JS_WS), *str = js_common(c, JS_STRING);
        char t[256];
        js_t(c, r, "\"{\"");
        snprintf(t, sizeof t, "%s (%s \":\" %s", ws, str, ws);
        js_o(c, r, t);
        js_ref(c, r, c->common[JS_VALUE] >= 0 ? c->common[JS_VALUE] : (js_common(c, JS_VALUE), c->common[JS_VALUE]), false);
        snprintf(t, sizeof t, "%s (\",\" %s %s \":\" %s", ws, ws, str, ws);
        js_o(c, r, t);
        js_ref(c, r, c->common[JS_VALUE], false);
        snprintf(t, sizeof t, "%s)*)? \"}\"", ws);
        js_o(c, r, t);
        break;
    }
    case JS_ARRAY: {
        const char *ws = js_common(c, JS_WS);
        char t[128];
        js_t(c, r, "\"[\"");
        snprintf(t, sizeof t, "%s (", ws);
        js_o(c, r, t);
        js_common(c, JS_VALUE);
        js_ref(c, r, c->common[JS_VALUE], false);
        snprintf(t, sizeof t, "%s (\",\" %s", ws, ws);
        js_o(c, r, t);
        js_ref(c, r, c->common[JS_VALUE], false);
        snprintf(t, sizeof t, "%s)*)? \"]\"", ws);
        js_o(c, r, t);
        break;
    }
    case JS_STRING: {
        char t[96];
        snprintf(t, sizeof t, "\"\\\"\" %s* \"\\\"\"", js_common(c, JS_CHAR));
        js_t(c, r, t);
        break;
    }
    case JS_CHAR: /* any character; \u escapes pair their surrogates */
        js_t(c, r, "[^\"\\\\\\u0000-\\u001F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" ([0-9a-cA-Ce-fE-F] " HEX " " HEX " " HEX
                   " | [dD] [0-7] " HEX " " HEX " | [dD] [89abAB] " HEX " " HEX " \"\\\\u\" [dD] [c-fC-F] " HEX " " HEX
                   "))");
        break;
    case JS_KEYCHAR: /* one spelling per character: raw, or JSON's short escape, or \u00xx for the other controls */
        js_t(c, r, "[^\"\\\\\\u0000-\\u001F] | \"\\\\\" ([\"\\\\bfnrt] | \"u00\" (\"0\" [0-7bef] | \"1\" [0-9a-f]))");
        break;
    case JS_NUMBER:
        /* at most 18 integer and 20 fraction digits, positive exponents up
         * to 287: every accepted number is finite as a double, and one
         * without a fraction or exponent fits a signed 64-bit integer, which
         * is how JSON readers (jansson among them) read it: a 20-digit
         * integer made the reader refuse the whole document */
        js_t(c, r, "\"-\"? (\"0\" | [1-9] [0-9]{0,17}) (\".\" [0-9]{1,20})? ([eE] (\"-\" [0-9]{1,3} | \"+\"? ([0-9]{1,2} | \"1\" [0-9] [0-9] | \"2\" [0-7] [0-9] | \"28\" [0-7])))?");
        break;
    case JS_INTEGER: /* at most 18 digits: every one fits a signed 64-bit integer */
        js_t(c, r, "\"-\"? (\"0\" | [1-9] [0-9]{0,17})");
        break;
    case JS_BOOLEAN: js_t(c, r, "\"true\" | \"false\""); break;
    case JS_NULL: js_t(c, r, "\"null\""); break;
    case JS_HEX: js_t(c, r, HEX); break;
    case JS_DATEBODY:
        /* YYYY-MM-DD, years 0001-9999, the days each month has; 02-29 only in
         * leap years (divisible by 4, centuries only when divisible by 400). */
        js_t(c, r,
             "([0-9] [0-9] [0-9] [1-9] | [0-9] [0-9] [1-9] [0-9] | [0-9] [1-9] [0-9] [0-9] | [1-9] [0-9] [0-9] [0-9]) \"-\" ("
             "(\"0\" [13578] | \"1\" [02]) \"-\" (\"0\" [1-9] | [12] [0-9] | \"3\" [01]) | "
             "(\"0\" [469] | \"11\") \"-\" (\"0\" [1-9] | [12] [0-9] | \"30\") | "
             "\"02-\" (\"0\" [1-9] | \"1\" [0-9] | \"2\" [0-8])) | "
             "([0-9] [0-9] ([02468] [48] | [13579] [26] | [2468] \"0\") | ([02468] [48] | [13579] [26] | [2468] \"0\") \"00\") "
             "\"-02-29\"");
        break;
    case JS_TIMEBODY: /* RFC 3339 full-time, without leap seconds */
        js_t(c, r,
             "([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9] \":\" [0-5] [0-9] (\".\" [0-9]{1,9})? "
             "(\"Z\" | [-+] ([01] [0-9] | \"2\" [0-3]) \":\" [0-5] [0-9])");
        break;
    case JS_DATE: case JS_TIME: case JS_DATETIME: {
        char t[160];
        if (which == JS_DATE) snprintf(t, sizeof t, "\"\\\"\" %s \"\\\"\"", js_common(c, JS_DATEBODY));
        else if (which == JS_TIME) snprintf(t, sizeof t, "\"\\\"\" %s \"\\\"\"", js_common(c, JS_TIMEBODY));
        else {
            const char *d = js_common(c, JS_DATEBODY);
            snprintf(t, sizeof t, "\"\\\"\" %s \"T\" %s \"\\\"\"", d, js_common(c, JS_TIMEBODY));
        }
        js_t(c, r, t);
        break;
    }
    case JS_UUID: {
        const char *h = js_common(c, JS_HEX);
        char t[256];
        snprintf(t, sizeof t, "\"\\\"\" %s{8} \"-\" %s{4} \"-\" %s{4} \"-\" %s{4} \"-\" %s{12} \"\\\"\"", h, h, h, h, h);
        js_t(c, r, t);
        break;
    }
    case JS_NCOMMON: break;
    }
}

static const char *common_names[JS_NCOMMON] = {
    "ws", "value", "object", "array", "string", "char", "key-char", "number", "integer", "boolean", "null",
    "hex", "date-body", "time-body", "date", "time", "date-time", "uuid"};

const char *js_common(js_conv *c, enum js_common which) {
    if (c->common[which] >= 0) return c->rules[c->common[which]].name;
    if (!js_ok(c)) return "x";
    int r = js_rule_new(c, "x");
    if (r < 0) return "x";
    free(c->rules[r].name);
    c->rules[r].name = dup(common_names[which]);
    if (!c->rules[r].name) { js_fail(c, SD_ERR_NOMEM, "out of memory"); return "x"; }
    c->common[which] = r;
    def_common(c, r, which);
    return c->rules[r].name;
}
