/* JSON Schema -> GBNF (see json_schema.h and docs/JSON_SCHEMA.md).
 *
 * One rule per schema node (memoized by node, so $ref recursion becomes rule
 * recursion); combinators are rewritten before conversion: allOf by merging
 * its branches into one schema, siblings of anyOf/oneOf by merging them into
 * each branch, $ref with siblings as allOf. After building, two checks guard
 * against schemas that describe nothing finite: every rule must derive a
 * finite string, and no rule may reach itself before consuming a byte. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/json_schema_impl.h"

#define JS_MAX_ENUM 10000
#define JS_MAX_COUNT 10000 /* minLength / maxLength / minItems / maxItems */

/* ---- paths for messages ---- */

static size_t path_push(js_conv *c, const char *a, const char *b) {
    size_t old = c->path.len;
    sd_strbuf_printf(&c->path, "/%s", a);
    if (b) {
        sd_strbuf_puts(&c->path, "/");
        for (const char *p = b; *p; p++) { /* JSON pointer escapes */
            if (*p == '~') sd_strbuf_puts(&c->path, "~0");
            else if (*p == '/') sd_strbuf_puts(&c->path, "~1");
            else sd_strbuf_add(&c->path, p, 1);
        }
    }
    return old;
}

static void path_pop(js_conv *c, size_t old) {
    c->path.len = old;
    if (c->path.s) c->path.s[old] = 0;
}

/* ---- conversion ---- */

static int gen(js_conv *c, json_t *s, const char *hint);

static int memo_get(js_conv *c, const json_t *s) {
    for (int i = c->nmemo - 1; i >= 0; i--)
        if (c->memo[i].schema == s) return c->memo[i].rule;
    return -1;
}

static void memo_put(js_conv *c, const json_t *s, int r) {
    if (c->nmemo == c->capmemo) {
        int cap = c->capmemo ? c->capmemo * 2 : 64;
        js_memo *p = realloc(c->memo, sizeof *p * (size_t)cap);
        if (!p) { js_fail(c, SD_ERR_NOMEM, "out of memory"); return; }
        c->memo = p;
        c->capmemo = cap;
    }
    c->memo[c->nmemo++] = (js_memo){s, r};
}

/* A const/enum value as grammar text (whitespace allowed where the
 * canonical form allows it; objects keep the value's key order). */
static void value_text(js_conv *c, sd_strbuf *o, json_t *v, int depth) {
    if (depth > SD_JSON_SCHEMA_MAX_DEPTH) { js_fail(c, SD_ERR_FORMAT, "enum/const: a value nested deeper than %d", SD_JSON_SCHEMA_MAX_DEPTH); return; }
    const char *ws = js_common(c, JS_WS);
    sd_strbuf t = {0};
    switch (json_typeof(v)) {
    case JSON_OBJECT: {
        const char *k;
        json_t *x;
        bool first = true;
        sd_strbuf_printf(o, "\"{\" %s", ws);
        json_object_foreach(v, k, x) {
            if (!first) sd_strbuf_printf(o, " \",\" %s", ws);
            first = false;
            sd_strbuf_clear(&t);
            js_json_string(&t, k, strlen(k));
            sd_strbuf_puts(o, " ");
            js_gbnf_literal(o, t.s, t.len);
            sd_strbuf_printf(o, " \":\" %s ", ws);
            value_text(c, o, x, depth + 1);
            sd_strbuf_printf(o, " %s", ws);
        }
        sd_strbuf_puts(o, " \"}\"");
        break;
    }
    case JSON_ARRAY: {
        size_t i;
        json_t *x;
        sd_strbuf_printf(o, "\"[\" %s", ws);
        json_array_foreach(v, i, x) {
            if (i) sd_strbuf_printf(o, " \",\" %s", ws);
            sd_strbuf_puts(o, " ");
            value_text(c, o, x, depth + 1);
            sd_strbuf_printf(o, " %s", ws);
        }
        sd_strbuf_puts(o, " \"]\"");
        break;
    }
    case JSON_STRING: js_json_string(&t, json_string_value(v), json_string_length(v)); break;
    case JSON_INTEGER: sd_strbuf_printf(&t, "%" JSON_INTEGER_FORMAT, json_integer_value(v)); break;
    case JSON_REAL: js_json_real(&t, json_real_value(v)); break;
    case JSON_TRUE: sd_strbuf_puts(&t, "true"); break;
    case JSON_FALSE: sd_strbuf_puts(&t, "false"); break;
    case JSON_NULL: sd_strbuf_puts(&t, "null"); break;
    }
    if (t.len && json_typeof(v) != JSON_OBJECT && json_typeof(v) != JSON_ARRAY) js_gbnf_literal(o, t.s, t.len);
    if (t.oom) js_fail(c, SD_ERR_NOMEM, "out of memory");
    sd_strbuf_free(&t);
}

static int gen_enum(js_conv *c, int r, json_t *s) {
    json_t *e = json_object_get(s, "enum"), *k = json_object_get(s, "const");
    if (e && k) return js_fail(c, SD_ERR_UNSUPPORTED, "enum together with const is not supported");
    if (e && (!json_is_array(e) || !json_array_size(e))) return js_fail(c, SD_ERR_FORMAT, "enum: not a non-empty array");
    if (e && json_array_size(e) > JS_MAX_ENUM) return js_fail(c, SD_ERR_FORMAT, "enum: %zu values (at most %d)", json_array_size(e), JS_MAX_ENUM);
    const char *kw;
    json_t *v;
    json_object_foreach(s, kw, v) {
        if (!js_is_annotation(kw) && strcmp(kw, "enum") && strcmp(kw, "const") && strcmp(kw, "type"))
            return js_fail(c, SD_ERR_UNSUPPORTED, "\"%s\" beside enum/const is not supported", kw);
    }
    int mask = js_type_mask(c, json_object_get(s, "type"));
    if (mask & T_NUM) mask |= T_INT;
    size_t n = e ? json_array_size(e) : 1, kept = 0;
    for (size_t i = 0; i < n && js_ok(c); i++) {
        json_t *x = e ? json_array_get(e, i) : k;
        if (!(js_value_type(x) & mask)) continue; /* an integral real counts as an integer */
        sd_strbuf t = {0};
        value_text(c, &t, x, 0);
        js_alt_open(c, r);
        js_t(c, r, sd_strbuf_str(&t));
        sd_strbuf_free(&t);
        kept++;
        if (!js_bump(c)) return -1;
    }
    if (js_ok(c) && !kept) return js_fail(c, SD_ERR_UNSUPPORTED, "enum/const: no value has the schema's type");
    return js_ok(c) ? r : -1;
}

static bool get_count(js_conv *c, json_t *s, const char *k, long *out) {
    json_t *v = json_object_get(s, k);
    if (!v) return false;
    double d;
    if (!js_num_of(v, &d) || d < 0 || d != floor(d)) { js_fail(c, SD_ERR_FORMAT, "%s: not a non-negative integer", k); return false; }
    if (d > JS_MAX_COUNT) { js_fail(c, SD_ERR_UNSUPPORTED, "%s: %.0f is beyond the supported %d", k, d, JS_MAX_COUNT); return false; }
    *out = (long)d;
    return true;
}

static void gen_string(js_conv *c, int r, json_t *s, const char *hint) {
    json_t *fmt = json_object_get(s, "format"), *pat = json_object_get(s, "pattern");
    long lo = 0, hi = -1;
    bool has_lo = get_count(c, s, "minLength", &lo), has_hi = get_count(c, s, "maxLength", &hi);
    if (!js_ok(c)) return;
    if ((fmt || pat) && (has_lo || has_hi)) { js_fail(c, SD_ERR_UNSUPPORTED, "minLength/maxLength together with %s is not supported", fmt ? "format" : "pattern"); return; }
    if (fmt && pat) { js_fail(c, SD_ERR_UNSUPPORTED, "format together with pattern is not supported"); return; }
    if (fmt) {
        const char *f = json_string_value(fmt);
        enum js_common w = JS_NCOMMON;
        if (f && !strcmp(f, "date")) w = JS_DATE;
        else if (f && !strcmp(f, "time")) w = JS_TIME;
        else if (f && !strcmp(f, "date-time")) w = JS_DATETIME;
        else if (f && !strcmp(f, "uuid")) w = JS_UUID;
        if (w == JS_NCOMMON) { js_fail(c, SD_ERR_UNSUPPORTED, "format: \"%.40s\" is not supported (date, time, date-time, uuid are)", f ? f : "?"); return; }
        js_common(c, w);
        js_ref(c, r, c->common[w], true);
        return;
    }
    if (pat) {
        if (!json_is_string(pat)) { js_fail(c, SD_ERR_FORMAT, "pattern: not a string"); return; }
        int p = js_rule_new(c, hint);
        if (p >= 0 && js_pattern(c, p, json_string_value(pat))) js_ref(c, r, p, true);
        return;
    }
    if (has_hi && hi < lo) { js_fail(c, SD_ERR_UNSUPPORTED, "minLength > maxLength: no string fits"); return; }
    char t[128];
    const char *ch = js_common(c, JS_CHAR);
    if (!has_lo && !has_hi) { js_t(c, r, js_common(c, JS_STRING)); return; }
    if (has_hi) snprintf(t, sizeof t, "\"\\\"\" %s{%ld,%ld} \"\\\"\"", ch, lo, hi);
    else snprintf(t, sizeof t, "\"\\\"\" %s{%ld,} \"\\\"\"", ch, lo);
    js_t(c, r, t);
}

/* A bound: its value, and whether it is an integer (then exact in i, also
 * beyond 2^53, where a double would round). */
typedef struct bound {
    double d;
    int64_t i;
    bool is_int;
} bound;

/* The bound of keyword kw: false when absent. */
static bool get_bound(js_conv *c, json_t *s, const char *kw, bound *b) {
    json_t *x = json_object_get(s, kw);
    if (!x) return false;
    if (!js_num_of(x, &b->d)) { js_fail(c, SD_ERR_FORMAT, "%s: not a number", kw); return false; }
    if (fabs(b->d) > (double)JS_INT_BOUND) { js_fail(c, SD_ERR_UNSUPPORTED, "%s: bounds beyond +-10^18 are not supported", kw); return false; }
    if (json_is_integer(x)) {
        b->i = json_integer_value(x);
        if (b->i > JS_INT_BOUND || b->i < -JS_INT_BOUND) { js_fail(c, SD_ERR_UNSUPPORTED, "%s: bounds beyond +-10^18 are not supported", kw); return false; }
        b->is_int = true;
    } else {
        b->is_int = b->d == floor(b->d);
        b->i = (int64_t)b->d;
    }
    return true;
}

/* Compares bounds exactly when both are integers. */
static int bound_cmp(bound a, bound b) {
    if (a.is_int && b.is_int) return a.i < b.i ? -1 : a.i > b.i;
    return a.d < b.d ? -1 : a.d > b.d;
}

static void gen_number(js_conv *c, int r, json_t *s, bool integer) {
    bound mn, mx, xmn, xmx;
    bool hmn = get_bound(c, s, "minimum", &mn), hmx = get_bound(c, s, "maximum", &mx);
    bool hxmn = get_bound(c, s, "exclusiveMinimum", &xmn), hxmx = get_bound(c, s, "exclusiveMaximum", &xmx);
    if (!js_ok(c)) return;
    /* one lower and one upper bound: the tighter */
    bool lo_excl = false, hi_excl = false;
    bound lo = mn, hi = mx;
    if (hxmn && (!hmn || bound_cmp(xmn, mn) >= 0)) { lo = xmn; lo_excl = true; }
    if (hxmx && (!hmx || bound_cmp(xmx, mx) <= 0)) { hi = xmx; hi_excl = true; }
    bool has_lo = hmn || hxmn, has_hi = hmx || hxmx;
    if (!has_lo && !has_hi) { js_t(c, r, js_common(c, integer ? JS_INTEGER : JS_NUMBER)); return; }
    sd_strbuf t = {0};
    if (integer) {
        int64_t ilo = 0, ihi = 0;
        if (has_lo) ilo = lo.is_int ? lo.i + (lo_excl ? 1 : 0) : lo_excl ? (int64_t)floor(lo.d) + 1 : (int64_t)ceil(lo.d);
        if (has_hi) ihi = hi.is_int ? hi.i - (hi_excl ? 1 : 0) : hi_excl ? (int64_t)ceil(hi.d) - 1 : (int64_t)floor(hi.d);
        if (has_lo && has_hi && ilo > ihi) { js_fail(c, SD_ERR_UNSUPPORTED, "minimum/maximum: no integer fits"); return; }
        js_int_range(&t, has_lo, ilo, has_hi, ihi);
    } else {
        if ((has_lo && fabs(lo.d) > 1e13) || (has_hi && fabs(hi.d) > 1e13)) {
            js_fail(c, SD_ERR_UNSUPPORTED, "minimum/maximum: bounds on a number beyond +-10^13 are not supported");
            return;
        }
        if ((has_lo && !lo.is_int) || (has_hi && !hi.is_int)) {
            js_fail(c, SD_ERR_UNSUPPORTED, "minimum/maximum: fractional bounds on a number are not supported (integer bounds are)");
            return;
        }
        if (!js_num_range(&t, has_lo, lo.i, lo_excl, has_hi, hi.i, hi_excl)) {
            js_fail(c, SD_ERR_UNSUPPORTED, "minimum/maximum: no number fits");
            sd_strbuf_free(&t);
            return;
        }
    }
    if (t.oom) js_fail(c, SD_ERR_NOMEM, "out of memory");
    else js_t(c, r, t.s);
    sd_strbuf_free(&t);
}

static int sub(js_conv *c, json_t *s, const char *seg, const char *key, const char *hint) {
    size_t old = path_push(c, seg, key);
    int r = gen(c, s, hint);
    path_pop(c, old);
    return r;
}

/* "key": value for one property. */
static int gen_member(js_conv *c, const char *name, json_t *schema, const char *seg) {
    int kv = js_rule_new(c, name);
    int v = schema ? sub(c, schema, seg, name, name) : (js_common(c, JS_VALUE), c->common[JS_VALUE]);
    if (kv < 0 || v < 0) return -1;
    sd_strbuf t = {0};
    js_json_string(&t, name, strlen(name));
    js_lit(c, kv, t.s, t.len);
    sd_strbuf_free(&t);
    char s[64];
    snprintf(s, sizeof s, "\":\" %s", js_common(c, JS_WS));
    js_t(c, kv, s);
    js_ref(c, kv, v, true);
    return kv;
}

/* A key spelled canonically that is none of names[0..n): a trie walk where
 * each node offers its children's next characters, or any other character
 * and then anything. Keys are unit strings (one character: raw, or its
 * canonical escape). */
static int key_not_in(js_conv *c, const char **names, int n, size_t depth) {
    int r = js_rule_new(c, "key");
    if (r < 0) return -1;
    /* The distinct next units among names with this prefix; names shorter
     * than depth ended earlier and were filtered by the caller. */
    bool terminal = false;
    sd_strbuf others_raw = {0}, others_esc = {0};
    static const char *escs[] = {"\\\"", "\\\\", "\\b", "\\f", "\\n", "\\r", "\\t"};
    char (*units)[16] = malloc(sizeof *units * (size_t)(n > 0 ? n : 1));
    int nu = 0;
    if (!units) return js_fail(c, SD_ERR_NOMEM, "out of memory");
    for (int i = 0; i < n; i++) {
        const char *p = names[i] + depth;
        if (!*p) { terminal = true; continue; }
        size_t len = 1;
        if (*p == '\\') len = p[1] == 'u' ? 6 : 2;
        else if ((unsigned char)*p >= 0xC0) while ((p[len] & 0xC0) == 0x80) len++;
        char u[16];
        memcpy(u, p, len);
        u[len] = 0;
        bool seen = false;
        for (int j = 0; j < nu; j++) seen |= !strcmp(units[j], u);
        if (!seen) strcpy(units[nu++], u);
    }
    js_alt_open(c, r);
    js_o(c, r, "(");
    bool firstalt = true;
    const char **sub_names = malloc(sizeof *sub_names * (size_t)(n > 0 ? n : 1));
    if (!sub_names) { free(units); return js_fail(c, SD_ERR_NOMEM, "out of memory"); }
    for (int j = 0; j < nu && js_ok(c); j++) {
        int m = 0;
        size_t ul = strlen(units[j]);
        for (int i = 0; i < n; i++)
            if (!strncmp(names[i] + depth, units[j], ul)) sub_names[m++] = names[i];
        int child = key_not_in(c, sub_names, m, depth + ul);
        if (!firstalt) js_o(c, r, "|");
        firstalt = false;
        sd_strbuf t = {0};
        js_gbnf_literal(&t, units[j], ul);
        js_o(c, r, t.s);
        sd_strbuf_free(&t);
        js_ref(c, r, child, false);
        if (units[j][0] != '\\') { /* raw unit: excluded from the class below */
            if (units[j][0] == ']' || units[j][0] == '\\' || units[j][0] == '^' || units[j][0] == '-' || units[j][0] == '[')
                sd_strbuf_printf(&others_raw, "\\%c", units[j][0]);
            else sd_strbuf_puts(&others_raw, units[j]);
        }
    }
    /* any other unit, then any key characters */
    if (!firstalt) js_o(c, r, "|");
    char t[256];
    snprintf(t, sizeof t, "([^\"\\\\\\u0000-\\u001F%s]", sd_strbuf_str(&others_raw));
    sd_strbuf_puts(&others_esc, t);
    bool esc_child = false;
    for (int j = 0; j < nu; j++) esc_child |= units[j][0] == '\\';
    /* no child is an escape: every escape is another unit, as in key-char */
    if (!esc_child) sd_strbuf_puts(&others_esc, " | \"\\\\\" ([\"\\\\bfnrt] | \"u00\" (\"0\" [0-7bef] | \"1\" [0-9a-f]))");
    for (int e = 0; esc_child && e < 7; e++) {
        bool taken = false;
        for (int j = 0; j < nu; j++) taken |= !strcmp(units[j], escs[e]);
        if (taken) continue;
        sd_strbuf_puts(&others_esc, " | ");
        js_gbnf_literal(&others_esc, escs[e], strlen(escs[e]));
    }
    for (int x = 0; esc_child && x < 0x20; x++) {
        if (x == '\b' || x == '\f' || x == '\n' || x == '\r' || x == '\t') continue;
        char u[8];
        snprintf(u, sizeof u, "\\u%04x", x);
        bool taken = false;
        for (int j = 0; j < nu; j++) taken |= !strcmp(units[j], u);
        if (taken) continue;
        sd_strbuf_puts(&others_esc, " | ");
        js_gbnf_literal(&others_esc, u, 6);
    }
    sd_strbuf_printf(&others_esc, ") %s*", js_common(c, JS_KEYCHAR));
    js_o(c, r, sd_strbuf_str(&others_esc));
    js_o(c, r, terminal ? ")" : ")?");
    if (others_raw.oom || others_esc.oom) js_fail(c, SD_ERR_NOMEM, "out of memory");
    free(sub_names);
    free(units);
    sd_strbuf_free(&others_raw);
    sd_strbuf_free(&others_esc);
    return r;
}

static void gen_object(js_conv *c, int r, json_t *s, const char *hint) {
    json_t *props = json_object_get(s, "properties"), *req = json_object_get(s, "required");
    json_t *addl = json_object_get(s, "additionalProperties");
    if (props && !json_is_object(props)) { js_fail(c, SD_ERR_FORMAT, "properties: not an object"); return; }
    if (req && !json_is_array(req)) { js_fail(c, SD_ERR_FORMAT, "required: not an array"); return; }
    if (!addl) addl = c->strict ? json_false() : json_true();
    if (!json_is_boolean(addl) && !json_is_object(addl)) { js_fail(c, SD_ERR_FORMAT, "additionalProperties: not a schema"); return; }
    /* entries: the properties in order, then required names not among them */
    size_t np = json_object_size(props), nr = json_array_size(req), n = 0;
    const char **names = calloc(np + nr + 1, sizeof *names);
    json_t **schemas = calloc(np + nr + 1, sizeof *schemas);
    bool *required = calloc(np + nr + 1, sizeof *required);
    const char **spell = calloc(np + nr + 1, sizeof *spell);
    sd_strbuf *spellbuf = calloc(np + nr + 1, sizeof *spellbuf);
    if (!names || !schemas || !required || !spell || !spellbuf) { js_fail(c, SD_ERR_NOMEM, "out of memory"); goto done; }
    const char *k;
    json_t *v;
    json_object_foreach(props, k, v) { names[n] = k; schemas[n] = v; n++; }
    size_t i;
    json_array_foreach(req, i, v) {
        if (!json_is_string(v)) { js_fail(c, SD_ERR_FORMAT, "required: not all strings"); goto done; }
        size_t j;
        for (j = 0; j < n && strcmp(names[j], json_string_value(v)); j++) {}
        if (j == n) {
            if (json_is_false(addl)) { js_fail(c, SD_ERR_UNSUPPORTED, "required: \"%.60s\" is not in properties and additionalProperties is false", json_string_value(v)); goto done; }
            names[n] = json_string_value(v);
            schemas[n] = json_is_true(addl) ? NULL : addl;
            n++;
        }
        required[j] = true;
    }
    for (size_t j = 0; j < n; j++) {
        js_json_string(&spellbuf[j], names[j], strlen(names[j]));
        spellbuf[j].s[spellbuf[j].len - 1] = 0; /* without the quotes */
        spell[j] = spellbuf[j].s + 1;
    }
    /* additional keys: a rule "key": value with the key none of the names */
    int extra = -1;
    const char *ws = js_common(c, JS_WS);
    if (!json_is_false(addl)) {
        extra = js_rule_new(c, "extra");
        int kn = key_not_in(c, spell, (int)n, 0);
        int val = json_is_true(addl) ? (js_common(c, JS_VALUE), c->common[JS_VALUE]) : sub(c, addl, "additionalProperties", NULL, "extra");
        js_t(c, extra, "\"\\\"\"");
        js_ref(c, extra, kn, true);
        char t[64];
        snprintf(t, sizeof t, "\"\\\"\" \":\" %s", ws);
        js_t(c, extra, t);
        js_ref(c, extra, val, true);
    }
    /* R[j]: entries j.. after something was written; S[j]: nothing yet. */
    int *R = calloc(n + 1, sizeof *R), *S = calloc(n + 1, sizeof *S), *kv = calloc(n + 1, sizeof *kv);
    if (!R || !S || !kv) { js_fail(c, SD_ERR_NOMEM, "out of memory"); free(R); free(S); free(kv); goto done; }
    for (size_t j = 0; j < n && js_ok(c); j++) {
        kv[j] = json_is_false(schemas[j]) ? -1 : gen_member(c, names[j], schemas[j], schemas[j] && j < np ? "properties" : "additionalProperties");
        if (kv[j] == -1 && required[j]) js_fail(c, SD_ERR_UNSUPPORTED, "required: \"%.60s\" has the false schema", names[j]);
    }
    char tail[128], tail0[160];
    if (extra >= 0) {
        snprintf(tail, sizeof tail, "(\",\" %s %s %s)*", ws, c->rules[extra].name, ws);
        snprintf(tail0, sizeof tail0, "(%s %s (\",\" %s %s %s)*)?", c->rules[extra].name, ws, ws, c->rules[extra].name, ws);
    } else tail[0] = tail0[0] = 0;
    for (size_t jj = n; jj-- > 0 && js_ok(c);) {
        if (kv[jj] < 0) { R[jj] = R[jj + 1]; S[jj] = S[jj + 1]; continue; }
        char sep[32];
        snprintf(sep, sizeof sep, "\",\" %s", ws);
        R[jj] = jj ? js_rule_new(c, hint) : -1; /* R[0] is never used: the first entry has no comma */
        if (jj && !required[jj]) js_o(c, R[jj], "(");
        if (jj) {
            js_t(c, R[jj], sep);
            js_ref(c, R[jj], kv[jj], required[jj]);
            js_o(c, R[jj], ws);
            if (!required[jj]) js_o(c, R[jj], ")?");
            if (jj + 1 < n && R[jj + 1] > 0) js_ref(c, R[jj], R[jj + 1], true);
            else if (tail[0]) js_o(c, R[jj], tail);
            else js_o(c, R[jj], "\"\"");
        }
        S[jj] = js_rule_new(c, hint);
        js_alt_open(c, S[jj]);
        js_ref(c, S[jj], kv[jj], true);
        js_o(c, S[jj], ws);
        if (jj + 1 < n && R[jj + 1] > 0) js_ref(c, S[jj], R[jj + 1], true);
        else if (tail[0]) js_o(c, S[jj], tail);
        if (!required[jj]) {
            js_alt_open(c, S[jj]);
            if (jj + 1 < n && S[jj + 1] > 0) js_ref(c, S[jj], S[jj + 1], true);
            else if (tail0[0]) js_o(c, S[jj], tail0);
            else js_o(c, S[jj], "\"\"");
        }
    }
    js_t(c, r, "\"{\"");
    js_o(c, r, ws);
    if (n && S[0] > 0) js_ref(c, r, S[0], true);
    else js_o(c, r, tail0);
    js_t(c, r, "\"}\"");
    free(R);
    free(S);
    free(kv);
done:
    for (size_t j = 0; spellbuf && j < n; j++) sd_strbuf_free(&spellbuf[j]);
    free(names);
    free(schemas);
    free(required);
    free(spell);
    free(spellbuf);
}

static void gen_array(js_conv *c, int r, json_t *s, const char *hint) {
    json_t *pre = json_object_get(s, "prefixItems"), *items = json_object_get(s, "items");
    json_t *uniq = json_object_get(s, "uniqueItems");
    if (uniq && !json_is_false(uniq)) { js_fail(c, SD_ERR_UNSUPPORTED, "uniqueItems: true is not supported"); return; }
    if (pre && !json_is_array(pre)) { js_fail(c, SD_ERR_FORMAT, "prefixItems: not an array"); return; }
    long lo = 0, hi = -1, k = (long)json_array_size(pre);
    get_count(c, s, "minItems", &lo);
    bool has_hi = get_count(c, s, "maxItems", &hi);
    if (!js_ok(c)) return;
    if (json_is_false(items)) { if (!has_hi || hi > k) hi = k; has_hi = true; }
    if (has_hi && hi < lo) { js_fail(c, SD_ERR_UNSUPPORTED, "minItems > maxItems (or more than prefixItems allow): no array fits"); return; }
    if (has_hi && hi < k) k = hi; /* maxItems cuts the prefix short */
    if (k > JS_MAX_COUNT) { js_fail(c, SD_ERR_UNSUPPORTED, "prefixItems: more than %d", JS_MAX_COUNT); return; }
    const char *ws = js_common(c, JS_WS);
    int rest = -1;
    long rlo = lo > k ? lo - k : 0, rhi = has_hi ? hi - k : -1;
    if (!has_hi || rhi > 0) {
        if (items && !json_is_true(items)) rest = sub(c, items, "items", NULL, hint);
        else { js_common(c, JS_VALUE); rest = c->common[JS_VALUE]; }
    }
    /* the tail after the prefix: rlo..rhi more elements */
    sd_strbuf tail = {0};
    if (rest >= 0) {
        const char *rn = c->rules[rest].name;
        char cnt[48];
        if (k == 0) {
            long a = rlo ? rlo - 1 : 0, b = rhi > 0 ? rhi - 1 : -1;
            if (b < 0) snprintf(cnt, sizeof cnt, a ? "{%ld,}" : "*", a);
            else snprintf(cnt, sizeof cnt, "{%ld,%ld}", a, b);
            sd_strbuf_printf(&tail, "(%s %s (\",\" %s %s %s)%s)%s", rn, ws, ws, rn, ws, cnt, rlo ? "" : "?");
        } else {
            if (rhi < 0) snprintf(cnt, sizeof cnt, rlo ? "{%ld,}" : "*", rlo);
            else snprintf(cnt, sizeof cnt, "{%ld,%ld}", rlo, rhi);
            sd_strbuf_printf(&tail, "(\",\" %s %s %s)%s", ws, rn, ws, cnt);
        }
    }
    /* F[i]: prefix elements i.. (after i elements) */
    int next = -1;
    for (long i = k; i-- > 0 && js_ok(c);) {
        char seg[24];
        snprintf(seg, sizeof seg, "%ld", i);
        int e = sub(c, json_array_get(pre, (size_t)i), "prefixItems", seg, hint);
        int f = js_rule_new(c, hint);
        bool mand = i < lo;
        if (!mand) js_o(c, f, "(");
        if (i > 0) { char t[32]; snprintf(t, sizeof t, "\",\" %s", ws); js_t(c, f, t); }
        js_ref(c, f, e, mand);
        js_o(c, f, ws);
        if (next >= 0) js_ref(c, f, next, mand);
        else if (tail.len) { js_o(c, f, tail.s); if (rlo && mand) js_need(c, f, rest); }
        if (!mand) js_o(c, f, ")?");
        next = f;
    }
    js_t(c, r, "\"[\"");
    js_o(c, r, ws);
    if (next >= 0) js_ref(c, r, next, true);
    else if (rest >= 0) {
        js_o(c, r, tail.s);
        if (rlo) js_need(c, r, rest); /* the tail's first element is mandatory */
    }
    js_t(c, r, "\"]\"");
    if (tail.oom) js_fail(c, SD_ERR_NOMEM, "out of memory");
    sd_strbuf_free(&tail);
}

/* The schema's own node, typed: an alternative per type it allows. */
static void gen_typed(js_conv *c, int r, json_t *s, const char *hint) {
    int mask = js_type_mask(c, json_object_get(s, "type"));
    if (!js_ok(c)) return;
    if ((mask & T_NUM) && (mask & T_INT)) mask &= ~T_INT;
    for (int b = 0; b < 7 && js_ok(c); b++) {
        if (!(mask & (1 << b))) continue;
        js_alt_open(c, r);
        switch (1 << b) {
        case T_NULL: js_t(c, r, js_common(c, JS_NULL)); break;
        case T_BOOL: js_t(c, r, js_common(c, JS_BOOLEAN)); break;
        case T_STR: gen_string(c, r, s, hint); break;
        case T_NUM: gen_number(c, r, s, false); break;
        case T_INT: gen_number(c, r, s, true); break;
        case T_OBJ: { int o = js_rule_new(c, hint); gen_object(c, o, s, hint); js_ref(c, r, o, true); break; }
        case T_ARR: { int a = js_rule_new(c, hint); gen_array(c, a, s, hint); js_ref(c, r, a, true); break; }
        }
    }
}

/* Whether two values' sets are provably disjoint, for oneOf: by type, or by
 * const/enum values. */
static int branch_types(js_conv *c, json_t *s, json_t **values) {
    *values = NULL;
    if (!json_is_object(s)) return T_ALL;
    json_t *ref = json_object_get(s, "$ref");
    if (ref && json_object_size(s) == 1 && json_is_string(ref) && c->depth < SD_JSON_SCHEMA_MAX_DEPTH) {
        json_t *t = js_resolve(c, json_string_value(ref));
        c->depth++;
        int m = t ? branch_types(c, t, values) : 0;
        c->depth--;
        return m;
    }
    json_t *e = json_object_get(s, "enum"), *k = json_object_get(s, "const");
    if (e || k) {
        int m = 0;
        size_t i;
        json_t *x;
        if (k) m = js_value_type(k);
        json_array_foreach(e, i, x) m |= js_value_type(x);
        *values = e ? e : k;
        return m;
    }
    int m = js_type_mask(c, json_object_get(s, "type"));
    if (m & T_NUM) m |= T_INT;
    return m;
}

static bool values_disjoint(json_t *a, json_t *b) {
    size_t i, j;
    json_t *x, *y;
    json_t *la = json_is_array(a) ? a : NULL, *lb = json_is_array(b) ? b : NULL;
    size_t na = la ? json_array_size(la) : 1, nb = lb ? json_array_size(lb) : 1;
    for (i = 0; i < na; i++) {
        x = la ? json_array_get(la, i) : a;
        for (j = 0; j < nb; j++) {
            y = lb ? json_array_get(lb, j) : b;
            if (json_equal(x, y)) return false;
            if (json_is_number(x) && json_is_number(y) && json_number_value(x) == json_number_value(y)) return false;
        }
    }
    return true;
}

static bool oneof_exclusive(js_conv *c, json_t *list) {
    size_t n = json_array_size(list);
    for (size_t i = 0; i < n; i++)
        for (size_t j = i + 1; j < n; j++) {
            json_t *vi, *vj;
            int ti = branch_types(c, json_array_get(list, i), &vi), tj = branch_types(c, json_array_get(list, j), &vj);
            if (!js_ok(c)) return false;
            if (!(ti & tj)) continue;
            if (vi && vj && values_disjoint(vi, vj)) continue;
            return false;
        }
    return true;
}

static int gen(js_conv *c, json_t *s, const char *hint) {
    if (!js_bump(c)) return -1;
    int m = memo_get(c, s);
    if (m >= 0) return m;
    if (json_is_true(s)) { js_common(c, JS_VALUE); return c->common[JS_VALUE]; }
    if (json_is_false(s)) return js_fail(c, SD_ERR_UNSUPPORTED, "the false schema (nothing is valid)");
    if (!json_is_object(s)) return js_fail(c, SD_ERR_FORMAT, "a schema must be an object or a boolean");
    if (c->depth >= SD_JSON_SCHEMA_MAX_DEPTH) return js_fail(c, SD_ERR_FORMAT, "schemas nested deeper than %d", SD_JSON_SCHEMA_MAX_DEPTH);
    const char *k;
    json_t *v;
    bool constraining = false, any_keyword = false;
    json_object_foreach(s, k, v) {
        if (js_is_annotation(k)) continue;
        if (!js_is_supported(k)) return js_fail(c, SD_ERR_UNSUPPORTED, "unsupported keyword \"%.60s\"", k);
        any_keyword = true;
    }
    if (!any_keyword) { js_common(c, JS_VALUE); return c->common[JS_VALUE]; } /* {}: any value */
    int r = js_rule_new(c, hint);
    if (r < 0) return -1;
    memo_put(c, s, r);
    c->depth++;
    json_t *all = json_object_get(s, "allOf"), *ref = json_object_get(s, "$ref");
    json_t *any = json_object_get(s, "anyOf"), *one = json_object_get(s, "oneOf");
    json_object_foreach(s, k, v)
        if (!js_is_annotation(k) && strcmp(k, "anyOf") && strcmp(k, "oneOf") && strcmp(k, "$ref")) constraining = true;
    if (any && one) js_fail(c, SD_ERR_UNSUPPORTED, "anyOf together with oneOf is not supported");
    else if (all || (ref && constraining) || (ref && (any || one))) {
        json_t *f = js_flatten(c, s);
        if (f) {
            int t = gen(c, f, hint);
            js_ref(c, r, t, true);
        }
    } else if (ref) {
        if (!json_is_string(ref)) js_fail(c, SD_ERR_FORMAT, "$ref: not a string");
        else {
            json_t *t = js_resolve(c, json_string_value(ref));
            const char *name = strrchr(json_string_value(ref), '/');
            int tr = t ? gen(c, t, name ? name + 1 : "ref") : -1;
            js_ref(c, r, tr, true);
        }
    } else if (any || one) {
        json_t *list = any ? any : one;
        const char *kw = any ? "anyOf" : "oneOf";
        if (!json_is_array(list) || !json_array_size(list)) js_fail(c, SD_ERR_FORMAT, "%s: not a non-empty array", kw);
        else if (one && !oneof_exclusive(c, list))
            js_fail(c, SD_ERR_UNSUPPORTED, "oneOf: the branches are not provably exclusive (by type or const/enum); use anyOf if any match will do");
        json_t *sib = NULL;
        if (constraining && js_ok(c)) {
            sib = js_own(c, json_copy(s));
            if (sib) { json_object_del(sib, "anyOf"); json_object_del(sib, "oneOf"); }
        }
        size_t i;
        size_t kept = 0;
        json_array_foreach(list, i, v) {
            if (!js_ok(c)) break;
            if (json_is_false(v)) continue; /* a branch nothing matches */
            kept++;
            char seg[24];
            snprintf(seg, sizeof seg, "%zu", i);
            size_t old = path_push(c, kw, seg);
            json_t *b = v;
            if (sib) {
                json_t *fb = js_flatten(c, v), *fs = fb ? js_flatten(c, sib) : NULL;
                b = fs ? js_merge(c, fs, fb) : NULL;
            }
            int t = b ? gen(c, b, hint) : -1;
            path_pop(c, old);
            js_alt_open(c, r);
            js_ref(c, r, t, true);
        }
        if (js_ok(c) && !kept) js_fail(c, SD_ERR_UNSUPPORTED, "%s: every branch is the false schema", kw);
    } else if (json_object_get(s, "enum") || json_object_get(s, "const")) {
        gen_enum(c, r, s);
    } else {
        gen_typed(c, r, s, hint);
    }
    c->depth--;
    return js_ok(c) ? r : -1;
}

/* ---- checks and output ---- */

static bool check_productive(js_conv *c) {
    bool *prod = calloc((size_t)c->nrules + 1, 1);
    if (!prod) return js_fail(c, SD_ERR_NOMEM, "out of memory"), false;
    for (bool changed = true; changed;) {
        changed = false;
        for (int r = 0; r < c->nrules; r++) {
            if (prod[r]) continue;
            js_rule *R = &c->rules[r];
            for (int a = 0; a < R->nalts && !prod[r]; a++) {
                bool ok = true;
                for (int i = 0; i < R->alts[a].mand.n && ok; i++) ok = prod[R->alts[a].mand.v[i]];
                if (ok) prod[r] = changed = true;
            }
        }
    }
    for (int r = 0; r < c->nrules; r++)
        if (!prod[r]) {
            c->path.len = 0;
            sd_strbuf_puts(&c->path, c->rules[r].where);
            free(prod);
            js_fail(c, SD_ERR_UNSUPPORTED, "no finite JSON value satisfies this schema ($ref recursion that never ends)");
            return false;
        }
    free(prod);
    return true;
}

/* Depth-first search over left refs: a cycle means a rule reaches itself
 * before consuming a byte. */
static bool left_cycle(js_conv *c, int r, char *state) {
    state[r] = 1;
    js_rule *R = &c->rules[r];
    for (int a = 0; a < R->nalts; a++)
        for (int i = 0; i < R->alts[a].left.n; i++) {
            int t = R->alts[a].left.v[i];
            if (state[t] == 1) {
                sd_strbuf_clear(&c->path);
                sd_strbuf_puts(&c->path, c->rules[t].where);
                js_fail(c, SD_ERR_UNSUPPORTED, "a $ref/anyOf cycle that reaches the same schema without any JSON structure in between");
                return true;
            }
            if (!state[t] && left_cycle(c, t, state)) return true;
        }
    state[r] = 2;
    return false;
}

sd_status sd_json_schema_to_gbnf(const char *schema_json, size_t len, const sd_json_schema_opts *opts,
                                 sd_strbuf *gbnf, sd_err *err) {
    js_conv c = {.err = err, .strict = opts && opts->strict};
    for (int i = 0; i < JS_NCOMMON; i++) c.common[i] = -1;
    bool any_object = opts && opts->any_object;
    if (!any_object) {
        if (!schema_json) return sd_err_set(err, SD_ERR_ARG, "json schema: no schema given");
        if (len > SD_JSON_SCHEMA_MAX_BYTES) return sd_err_set(err, SD_ERR_FORMAT, "json schema: %zu bytes (at most %d)", len, SD_JSON_SCHEMA_MAX_BYTES);
        json_error_t je;
        c.root = json_loadb(schema_json, len, JSON_REJECT_DUPLICATES | JSON_DECODE_ANY, &je);
        if (!c.root) return sd_err_set(err, SD_ERR_FORMAT, "json schema: not valid JSON: %s (line %d, column %d)", je.text, je.line, je.column);
        if (!json_is_object(c.root) && !json_is_boolean(c.root)) {
            json_decref(c.root);
            return sd_err_set(err, SD_ERR_FORMAT, "json schema: the schema must be an object or a boolean");
        }
    }
    int root = js_rule_new(&c, "root");
    if (any_object) js_t(&c, root, js_common(&c, JS_OBJECT));
    else {
        json_t *id = json_object_get(c.root, "$id");
        if (id) json_object_del(c.root, "$id"); /* the root's $id names the document; refs stay "#..." */
        int r = gen(&c, c.root, "root");
        js_ref(&c, root, r, true);
    }
    if (js_ok(&c)) check_productive(&c);
    if (js_ok(&c)) {
        char *state = calloc((size_t)c.nrules, 1);
        if (!state) js_fail(&c, SD_ERR_NOMEM, "out of memory");
        for (int r = 0; state && r < c.nrules && js_ok(&c); r++)
            if (!state[r]) left_cycle(&c, r, state);
        free(state);
    }
    if (js_ok(&c)) {
        size_t start = gbnf->len;
        for (int r = 0; r < c.nrules; r++)
            sd_strbuf_printf(gbnf, "%s ::= %s\n", c.rules[r].name, sd_strbuf_str(&c.rules[r].body));
        if (gbnf->oom) { js_fail(&c, SD_ERR_NOMEM, "out of memory"); gbnf->len = start; }
    }
    for (int r = 0; r < c.nrules; r++) {
        free(c.rules[r].name);
        free(c.rules[r].where);
        sd_strbuf_free(&c.rules[r].body);
        for (int a = 0; a < c.rules[r].nalts; a++) {
            free(c.rules[r].alts[a].mand.v);
            free(c.rules[r].alts[a].left.v);
        }
        free(c.rules[r].alts);
    }
    free(c.rules);
    free(c.memo);
    for (int i = 0; i < c.nowned; i++) json_decref(c.owned[i]);
    free(c.owned);
    sd_strbuf_free(&c.path);
    json_decref(c.root);
    return c.status;
}
