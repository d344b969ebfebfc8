/* Values of the Jinja interpreter: the arena they live in, strings with
 * provenance, lists, dicts, and Python's semantics for str(), repr(),
 * json.dumps, truth, equality, ordering, len() and iteration. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/jinja_impl.h"

/* ---- arena ---- */
typedef struct jchunk {
    struct jchunk *next;
    size_t used, size;
    max_align_t data[];
} jchunk;

void *ja_alloc(jarena *a, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (!n) n = 16;
    jchunk *c = a->head;
    if (!c || c->size - c->used < n) {
        size_t size = n > ((size_t)64 << 10) ? n : ((size_t)64 << 10);
        if (a->used + size > a->cap || size < n) longjmp(*a->oom, 1);
        c = malloc(sizeof *c + size);
        if (!c) longjmp(*a->oom, 1);
        c->next = a->head;
        c->used = 0;
        c->size = size;
        a->head = c;
        a->used += size;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

void ja_free(jarena *a) {
    for (jchunk *c = a->head, *nx; c; c = nx) {
        nx = c->next;
        free(c);
    }
    a->head = NULL;
    a->used = 0;
}

/* ---- constructors ---- */
const jstr *js_new(jarena *a, const char *s, size_t n, uint8_t prov) {
    jstr *r = ja_alloc(a, sizeof *r);
    char *b = ja_alloc(a, n + 1);
    if (n) memcpy(b, s, n);
    r->s = b;
    r->n = n;
    r->prov = n ? prov : PROV_TEMPLATE;
    return r;
}
const jstr *jstr_lit(jarena *a, const char *s) { return js_new(a, s, strlen(s), PROV_TEMPLATE); }
jv jv_str(const jstr *s) { return (jv){.t = JV_STR, .u.s = s}; }
jv jv_int(int64_t i) { return (jv){.t = JV_INT, .u.i = i}; }
jv jv_bool(bool b) { return (jv){.t = JV_BOOL, .u.b = b}; }
jv jv_none(void) { return (jv){.t = JV_NONE}; }
jv jv_undef(void) { return (jv){.t = JV_UNDEF}; }

jlist *jl_new(jarena *a, size_t cap) {
    jlist *l = ja_alloc(a, sizeof *l);
    if (cap) l->v = ja_alloc(a, cap * sizeof *l->v);
    l->cap = cap;
    return l;
}
void jl_push(jarena *a, jlist *l, jv v) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4;
        jv *nv = ja_alloc(a, cap * sizeof *nv);
        if (l->n) memcpy(nv, l->v, l->n * sizeof *nv);
        l->v = nv;
        l->cap = cap;
    }
    l->v[l->n++] = v;
}
jdict *jd_new(jarena *a, size_t cap) {
    jdict *d = ja_alloc(a, sizeof *d);
    if (cap) {
        d->k = ja_alloc(a, cap * sizeof *d->k);
        d->v = ja_alloc(a, cap * sizeof *d->v);
    }
    d->cap = cap;
    d->a = a;
    return d;
}

static uint32_t key_hash(const char *k, size_t n) { /* FNV-1a */
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)k[i]) * 16777619u;
    return h;
}

static void idx_put(jdict *d, size_t i) {
    size_t m = d->icap - 1, s = key_hash(d->k[i]->s, d->k[i]->n) & m;
    while (d->idx[s]) s = (s + 1) & m;
    d->idx[s] = (uint32_t)(i + 1);
}

/* Keeps the index at most half full; large dicts (JSON from a request) stay linear-time. */
static void idx_grow(jdict *d) {
    if (d->n <= 16 || d->n * 2 < d->icap) return;
    size_t cap = d->icap ? d->icap * 2 : 64;
    while (cap < d->n * 2) cap *= 2;
    d->idx = ja_alloc(d->a, cap * sizeof *d->idx);
    d->icap = cap;
    for (size_t i = 0; i < d->n; i++) idx_put(d, i);
}

static long jd_find(const jdict *d, const char *k, size_t n) {
    if (d->icap) {
        size_t m = d->icap - 1, s = key_hash(k, n) & m;
        for (; d->idx[s]; s = (s + 1) & m) {
            size_t i = d->idx[s] - 1;
            if (d->k[i]->n == n && !memcmp(d->k[i]->s, k, n)) return (long)i;
        }
        return -1;
    }
    for (size_t i = 0; i < d->n; i++)
        if (d->k[i]->n == n && !memcmp(d->k[i]->s, k, n)) return (long)i;
    return -1;
}

const jv *jd_get(const jdict *d, const char *k, size_t n) {
    long i = jd_find(d, k, n);
    return i < 0 ? NULL : &d->v[i];
}

void jd_set(jarena *a, jdict *d, const jstr *k, jv v) {
    long at = jd_find(d, k->s, k->n);
    if (at >= 0) {
        d->v[at] = v;
        return;
    }
    if (d->n == d->cap) {
        size_t cap = d->cap ? d->cap * 2 : 4;
        const jstr **nk = ja_alloc(a, cap * sizeof *nk);
        jv *nv = ja_alloc(a, cap * sizeof *nv);
        if (d->n) {
            memcpy(nk, d->k, d->n * sizeof *nk);
            memcpy(nv, d->v, d->n * sizeof *nv);
        }
        d->k = nk;
        d->v = nv;
        d->cap = cap;
    }
    if (!d->a) d->a = a;
    d->k[d->n] = k;
    d->v[d->n++] = v;
    if (d->icap && d->n * 2 < d->icap) idx_put(d, d->n - 1);
    else idx_grow(d);
}

/* ---- text building ---- */
static void jb_grow(jarena *a, jbuf *b, size_t more) {
    if (b->n + more + 1 <= b->cap) return;
    size_t cap = b->cap ? b->cap * 2 : 64;
    while (cap < b->n + more + 1) cap *= 2;
    char *s = ja_alloc(a, cap);
    uint8_t *bits = ja_alloc(a, cap);
    if (b->n) {
        memcpy(s, b->s, b->n);
        memcpy(bits, b->bits, b->n);
    }
    b->s = s;
    b->bits = bits;
    b->cap = cap;
}
void jb_add(jarena *a, jbuf *b, const char *s, size_t n, uint8_t prov) {
    if (!n) return;
    jb_grow(a, b, n);
    memcpy(b->s + b->n, s, n);
    memset(b->bits + b->n, prov == PROV_DATA, n);
    b->n += n;
    if (prov == PROV_DATA) b->any_data = true;
    else b->any_template = true;
}
void jb_sub(jarena *a, jbuf *b, const jstr *s, size_t off, size_t n) {
    if (!n) return;
    if (s->prov != PROV_MIXED) {
        jb_add(a, b, s->s + off, n, s->prov);
        return;
    }
    jb_grow(a, b, n);
    memcpy(b->s + b->n, s->s + off, n);
    memcpy(b->bits + b->n, s->bits + off, n);
    for (size_t i = 0; i < n; i++) {
        if (s->bits[off + i]) b->any_data = true;
        else b->any_template = true;
    }
    b->n += n;
}
void jb_str(jarena *a, jbuf *b, const jstr *s) { jb_sub(a, b, s, 0, s->n); }
const jstr *jb_done(jarena *a, jbuf *b) {
    jstr *r = ja_alloc(a, sizeof *r);
    r->s = b->s ? b->s : "";
    if (b->s) b->s[b->n] = 0;
    r->n = b->n;
    r->prov = b->any_data && b->any_template ? PROV_MIXED : b->any_data ? PROV_DATA : PROV_TEMPLATE;
    if (r->prov == PROV_MIXED) r->bits = b->bits;
    return r;
}

/* ---- Python text forms ---- */
const char *jv_type_name(jv v) {
    switch (v.t) {
    case JV_UNDEF: return "undefined";
    case JV_NONE: return "NoneType";
    case JV_BOOL: return "bool";
    case JV_INT: return "int";
    case JV_FLOAT: return "float";
    case JV_STR: return "str";
    case JV_LIST: return "list";
    case JV_DICT: return "dict";
    case JV_NS: return "Namespace";
    case JV_MACRO: return "Macro";
    case JV_LOOP: return "LoopContext";
    }
    return "?";
}

/* Python repr(float): the shortest text that reads back, exponent form
 * outside 1e-4 <= |x| < 1e16. */
static void float_repr(double x, char *out, size_t cap) {
    if (isnan(x)) {
        snprintf(out, cap, "nan");
        return;
    }
    if (isinf(x)) {
        snprintf(out, cap, x < 0 ? "-inf" : "inf");
        return;
    }
    char e[64];
    int prec;
    for (prec = 1; prec < 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec - 1, x);
        if (strtod(e, NULL) == x) break;
    }
    snprintf(e, sizeof e, "%.*e", prec - 1, x);
    int exp = atoi(strchr(e, 'e') + 1);
    if (exp >= -4 && exp < 16) {
        int dec = prec - 1 - exp;
        snprintf(out, cap, "%.*f", dec > 0 ? dec : 0, x);
        if (!strchr(out, '.')) strncat(out, ".0", cap - strlen(out) - 1);
    } else {
        /* mantissa digits, then e+XX with at least two digits (as C prints) */
        snprintf(out, cap, "%s", e);
    }
}

static void repr_str(jctx *c, jbuf *b, const jstr *s) {
    jarena *a = jctx_arena(c);
    bool has_sq = memchr(s->s, '\'', s->n) != NULL, has_dq = memchr(s->s, '"', s->n) != NULL;
    char q = has_sq && !has_dq ? '"' : '\'';
    jb_add(a, b, &q, 1, PROV_DATA);
    for (size_t i = 0; i < s->n; i++) {
        unsigned char ch = (unsigned char)s->s[i];
        char t[8];
        if (ch == (unsigned char)q || ch == '\\') t[0] = '\\', t[1] = (char)ch, t[2] = 0;
        else if (ch == '\n') strcpy(t, "\\n");
        else if (ch == '\r') strcpy(t, "\\r");
        else if (ch == '\t') strcpy(t, "\\t");
        else if (ch < 0x20 || ch == 0x7f) snprintf(t, sizeof t, "\\x%02x", ch);
        else t[0] = (char)ch, t[1] = 0;
        jb_add(a, b, t, strlen(t), PROV_DATA);
    }
    jb_add(a, b, &q, 1, PROV_DATA);
}

static void scalar_text(jv v, char *t, size_t cap) {
    switch (v.t) {
    case JV_NONE: snprintf(t, cap, "None"); break;
    case JV_BOOL: snprintf(t, cap, v.u.b ? "True" : "False"); break;
    case JV_INT: snprintf(t, cap, "%lld", (long long)v.u.i); break;
    case JV_FLOAT: float_repr(v.u.f, t, cap); break;
    default: t[0] = 0;
    }
}

void jv_repr(jctx *c, jbuf *b, jv v) {
    jarena *a = jctx_arena(c);
    char t[64];
    switch (v.t) {
    case JV_STR: repr_str(c, b, v.u.s); return;
    case JV_LIST:
        jb_add(a, b, v.u.l->tuple ? "(" : "[", 1, PROV_DATA);
        for (size_t i = 0; i < v.u.l->n; i++) {
            if (i) jb_add(a, b, ", ", 2, PROV_DATA);
            jv_repr(c, b, v.u.l->v[i]);
        }
        if (v.u.l->tuple && v.u.l->n == 1) jb_add(a, b, ",", 1, PROV_DATA);
        jb_add(a, b, v.u.l->tuple ? ")" : "]", 1, PROV_DATA);
        return;
    case JV_DICT:
    case JV_NS:
        if (v.t == JV_NS) jb_add(a, b, "<Namespace ", 11, PROV_DATA);
        jb_add(a, b, "{", 1, PROV_DATA);
        for (size_t i = 0; i < v.u.d->n; i++) {
            if (i) jb_add(a, b, ", ", 2, PROV_DATA);
            repr_str(c, b, v.u.d->k[i]);
            jb_add(a, b, ": ", 2, PROV_DATA);
            jv_repr(c, b, v.u.d->v[i]);
        }
        jb_add(a, b, "}", 1, PROV_DATA);
        if (v.t == JV_NS) jb_add(a, b, ">", 1, PROV_DATA);
        return;
    case JV_UNDEF: jb_add(a, b, "Undefined", 9, PROV_DATA); return; /* repr(Undefined) in a container */
    case JV_MACRO:
    case JV_LOOP: jb_add(a, b, "<object>", 8, PROV_DATA); return;
    default: scalar_text(v, t, sizeof t); jb_add(a, b, t, strlen(t), PROV_DATA);
    }
}

const jstr *jv_to_str(jctx *c, jv v) {
    jarena *a = jctx_arena(c);
    if (v.t == JV_STR) return v.u.s;
    if (v.t == JV_UNDEF) return js_new(a, "", 0, PROV_DATA);
    jbuf b = {0};
    jv_repr(c, &b, v);
    return jb_done(a, &b);
}

/* json.dumps(ensure_ascii=False): only '"', '\\' and control characters escaped. */
static void json_str(jctx *c, jbuf *b, const jstr *s, bool ascii) {
    jarena *a = jctx_arena(c);
    jb_add(a, b, "\"", 1, PROV_DATA);
    size_t run = 0;
    for (size_t i = 0; i <= s->n; i++) {
        unsigned char ch = i < s->n ? (unsigned char)s->s[i] : 0;
        if (i < s->n && ascii && ch >= 0x80) { /* \uXXXX, a surrogate pair above U+FFFF */
            jb_add(a, b, s->s + run, i - run, PROV_DATA);
            size_t len = ch >= 0xF0 ? 4 : ch >= 0xE0 ? 3 : ch >= 0xC0 ? 2 : 1;
            if (i + len > s->n) len = 1;
            unsigned cp = len == 1 ? 0xFFFD : ch & (0x3F >> (len - 1));
            for (size_t k = 1; k < len; k++) cp = cp << 6 | ((unsigned char)s->s[i + k] & 0x3F);
            char t[16];
            if (cp >= 0x10000)
                snprintf(t, sizeof t, "\\u%04x\\u%04x", 0xD800 + ((cp - 0x10000) >> 10), 0xDC00 + ((cp - 0x10000) & 0x3FF));
            else snprintf(t, sizeof t, "\\u%04x", cp);
            jb_add(a, b, t, strlen(t), PROV_DATA);
            i += len - 1;
            run = i + 1;
            continue;
        }
        if (i < s->n && ch >= 0x20 && ch != '"' && ch != '\\') continue;
        jb_add(a, b, s->s + run, i - run, PROV_DATA);
        run = i + 1;
        if (i == s->n) break;
        char t[8];
        switch (ch) {
        case '"': strcpy(t, "\\\""); break;
        case '\\': strcpy(t, "\\\\"); break;
        case '\n': strcpy(t, "\\n"); break;
        case '\r': strcpy(t, "\\r"); break;
        case '\t': strcpy(t, "\\t"); break;
        case '\b': strcpy(t, "\\b"); break;
        case '\f': strcpy(t, "\\f"); break;
        default: snprintf(t, sizeof t, "\\u%04x", ch);
        }
        jb_add(a, b, t, strlen(t), PROV_DATA);
    }
    jb_add(a, b, "\"", 1, PROV_DATA);
}

static void json_newline(jctx *c, jbuf *b, int indent, int level) {
    jarena *a = jctx_arena(c);
    jb_add(a, b, "\n", 1, PROV_DATA);
    for (int i = 0; i < indent * level; i++) jb_add(a, b, " ", 1, PROV_DATA);
}

void jv_json(jctx *c, jbuf *b, jv v, const jjson_opts *o, int level) {
    jarena *a = jctx_arena(c);
    char t[64];
    switch (v.t) {
    case JV_NONE: jb_add(a, b, "null", 4, PROV_DATA); return;
    case JV_BOOL: jb_add(a, b, v.u.b ? "true" : "false", v.u.b ? 4 : 5, PROV_DATA); return;
    case JV_INT: snprintf(t, sizeof t, "%lld", (long long)v.u.i); break;
    case JV_FLOAT:
        if (isnan(v.u.f)) strcpy(t, "NaN");
        else if (isinf(v.u.f)) strcpy(t, v.u.f < 0 ? "-Infinity" : "Infinity");
        else float_repr(v.u.f, t, sizeof t);
        break;
    case JV_STR: json_str(c, b, v.u.s, o->ascii); return;
    case JV_LIST:
    case JV_DICT: {
        bool list = v.t == JV_LIST;
        size_t n = list ? v.u.l->n : v.u.d->n;
        jb_add(a, b, list ? "[" : "{", 1, PROV_DATA);
        if (!n) {
            jb_add(a, b, list ? "]" : "}", 1, PROV_DATA);
            return;
        }
        if (++level > 200) jfail(c, 0, 0, "tojson: nested deeper than 200");
        size_t *order = NULL; /* sort_keys: key order by code point (UTF-8 byte order) */
        if (!list && o->sort_keys) {
            order = ja_alloc(a, n * sizeof *order);
            for (size_t i = 0; i < n; i++) {
                size_t j = i;
                jcharge(c, i);
                while (j > 0) {
                    const jstr *x = v.u.d->k[order[j - 1]], *y = v.u.d->k[i];
                    size_t m = x->n < y->n ? x->n : y->n;
                    int r = memcmp(x->s, y->s, m);
                    if (r < 0 || (r == 0 && x->n <= y->n)) break;
                    order[j] = order[j - 1];
                    j--;
                }
                order[j] = i;
            }
        }
        for (size_t i = 0; i < n; i++) {
            if (i) jb_add(a, b, o->item_sep, strlen(o->item_sep), PROV_DATA);
            if (o->indent >= 0) json_newline(c, b, o->indent, level);
            if (list) jv_json(c, b, v.u.l->v[i], o, level);
            else {
                size_t k = order ? order[i] : i;
                json_str(c, b, v.u.d->k[k], o->ascii);
                jb_add(a, b, o->key_sep, strlen(o->key_sep), PROV_DATA);
                jv_json(c, b, v.u.d->v[k], o, level);
            }
        }
        if (o->indent >= 0) json_newline(c, b, o->indent, level - 1);
        jb_add(a, b, list ? "]" : "}", 1, PROV_DATA);
        return;
    }
    default: jfail(c, 0, 0, "Object of type %s is not JSON serializable", jv_type_name(v));
    }
    jb_add(a, b, t, strlen(t), PROV_DATA);
}

/* ---- Python semantics ---- */
bool jv_truthy(jv v) {
    switch (v.t) {
    case JV_UNDEF:
    case JV_NONE: return false;
    case JV_BOOL: return v.u.b;
    case JV_INT: return v.u.i != 0;
    case JV_FLOAT: return v.u.f != 0;
    case JV_STR: return v.u.s->n != 0;
    case JV_LIST: return v.u.l->n != 0;
    case JV_DICT: return v.u.d->n != 0;
    default: return true;
    }
}

static bool is_num(jv v) { return v.t == JV_INT || v.t == JV_FLOAT || v.t == JV_BOOL; }
static double num(jv v) { return v.t == JV_FLOAT ? v.u.f : v.t == JV_INT ? (double)v.u.i : v.u.b; }

bool jv_equal(jv a, jv b) {
    if (is_num(a) && is_num(b)) {
        if (a.t != JV_FLOAT && b.t != JV_FLOAT) return (a.t == JV_INT ? a.u.i : a.u.b) == (b.t == JV_INT ? b.u.i : b.u.b);
        return num(a) == num(b);
    }
    if (a.t != b.t) return false;
    switch (a.t) {
    case JV_UNDEF:
    case JV_NONE: return true;
    case JV_STR: return a.u.s->n == b.u.s->n && !memcmp(a.u.s->s, b.u.s->s, a.u.s->n);
    case JV_LIST:
        if (a.u.l->n != b.u.l->n) return false;
        for (size_t i = 0; i < a.u.l->n; i++)
            if (!jv_equal(a.u.l->v[i], b.u.l->v[i])) return false;
        return true;
    case JV_DICT:
        if (a.u.d->n != b.u.d->n) return false;
        for (size_t i = 0; i < a.u.d->n; i++) {
            const jv *o = jd_get(b.u.d, a.u.d->k[i]->s, a.u.d->k[i]->n);
            if (!o || !jv_equal(a.u.d->v[i], *o)) return false;
        }
        return true;
    default: return a.u.d == b.u.d;
    }
}

int jv_compare(jctx *c, jv a, jv b, int line, int col) {
    if (is_num(a) && is_num(b)) {
        double x = num(a), y = num(b);
        return x < y ? -1 : x > y;
    }
    if (a.t == JV_STR && b.t == JV_STR) {
        size_t n = a.u.s->n < b.u.s->n ? a.u.s->n : b.u.s->n;
        int r = memcmp(a.u.s->s, b.u.s->s, n);
        if (r) return r < 0 ? -1 : 1;
        return a.u.s->n < b.u.s->n ? -1 : a.u.s->n > b.u.s->n;
    }
    if (a.t == JV_LIST && b.t == JV_LIST) {
        for (size_t i = 0; i < a.u.l->n && i < b.u.l->n; i++) {
            int r = jv_compare(c, a.u.l->v[i], b.u.l->v[i], line, col);
            if (r) return r;
        }
        return a.u.l->n < b.u.l->n ? -1 : a.u.l->n > b.u.l->n;
    }
    jfail(c, line, col, "'<' not supported between instances of '%s' and '%s'", jv_type_name(a), jv_type_name(b));
}

static size_t utf8_count(const char *s, size_t n) {
    size_t k = 0;
    for (size_t i = 0; i < n; i++) k += ((unsigned char)s[i] & 0xC0) != 0x80;
    return k;
}

size_t jv_length(jctx *c, jv v) {
    switch (v.t) {
    case JV_UNDEF: return 0;
    case JV_STR: return utf8_count(v.u.s->s, v.u.s->n);
    case JV_LIST: return v.u.l->n;
    case JV_DICT: return v.u.d->n;
    default: jfail(c, 0, 0, "object of type '%s' has no len()", jv_type_name(v));
    }
}

jlist *jv_iterate(jctx *c, jv v, int line, int col) {
    jarena *a = jctx_arena(c);
    if (v.t == JV_LIST || v.t == JV_DICT || v.t == JV_STR) jcharge(c, v.t == JV_LIST ? v.u.l->n : v.t == JV_DICT ? v.u.d->n : v.u.s->n);
    switch (v.t) {
    case JV_UNDEF: return jl_new(a, 0);
    case JV_LIST: return v.u.l;
    case JV_DICT: {
        jlist *l = jl_new(a, v.u.d->n);
        for (size_t i = 0; i < v.u.d->n; i++) jl_push(a, l, jv_str(v.u.d->k[i]));
        return l;
    }
    case JV_STR: {
        const jstr *s = v.u.s;
        jlist *l = jl_new(a, s->n);
        for (size_t i = 0; i < s->n;) {
            size_t j = i + 1;
            while (j < s->n && ((unsigned char)s->s[j] & 0xC0) == 0x80) j++;
            jbuf b = {0};
            jb_sub(a, &b, s, i, j - i);
            jl_push(a, l, jv_str(jb_done(a, &b)));
            i = j;
        }
        return l;
    }
    default: jfail(c, line, col, "'%s' object is not iterable", jv_type_name(v));
    }
}

/* ---- JSON input ---- */
typedef struct jp {
    jarena *a;
    const char *s;
    size_t n, i;
    int depth;
    const char *err;
} jp;

static void jp_ws(jp *p) {
    while (p->i < p->n && (p->s[p->i] == ' ' || p->s[p->i] == '\t' || p->s[p->i] == '\n' || p->s[p->i] == '\r')) p->i++;
}

static int jp_hex4(jp *p, unsigned *cp) {
    if (p->i + 4 > p->n) return -1;
    unsigned v = 0;
    for (int k = 0; k < 4; k++) {
        char ch = p->s[p->i + k];
        int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + (unsigned)d;
    }
    p->i += 4;
    *cp = v;
    return 0;
}

static const jstr *jp_string(jp *p) {
    p->i++; /* opening quote */
    size_t end = p->i; /* the closing quote bounds the decoded length (escapes only shrink) */
    while (end < p->n && p->s[end] != '"') end += p->s[end] == '\\' ? 2 : 1;
    char *o = ja_alloc(p->a, (end < p->n ? end : p->n) - p->i + 1);
    size_t k = 0;
    while (p->i < p->n && p->s[p->i] != '"') {
        unsigned char ch = (unsigned char)p->s[p->i++];
        if (ch < 0x20) return p->err = "control character in string", NULL;
        if (ch != '\\') {
            o[k++] = (char)ch;
            continue;
        }
        if (p->i >= p->n) break;
        char e = p->s[p->i++];
        const char *m = strchr("\"\\/bfnrt", e);
        if (m && e) {
            o[k++] = "\"\\/\b\f\n\r\t"[m - "\"\\/bfnrt"];
            continue;
        }
        if (e != 'u') return p->err = "bad escape in string", NULL;
        unsigned cp;
        if (jp_hex4(p, &cp)) return p->err = "bad \\u escape", NULL;
        if (cp >= 0xD800 && cp < 0xDC00 && p->i + 1 < p->n && p->s[p->i] == '\\' && p->s[p->i + 1] == 'u') {
            size_t save = p->i;
            unsigned lo;
            p->i += 2;
            if (!jp_hex4(p, &lo) && lo >= 0xDC00 && lo < 0xE000) cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            else p->i = save;
        }
        if (cp >= 0xD800 && cp < 0xE000) cp = 0xFFFD; /* a lone surrogate has no UTF-8 form */
        if (cp < 0x80) o[k++] = (char)cp;
        else if (cp < 0x800) o[k++] = (char)(0xC0 | cp >> 6), o[k++] = (char)(0x80 | (cp & 63));
        else if (cp < 0x10000)
            o[k++] = (char)(0xE0 | cp >> 12), o[k++] = (char)(0x80 | ((cp >> 6) & 63)), o[k++] = (char)(0x80 | (cp & 63));
        else
            o[k++] = (char)(0xF0 | cp >> 18), o[k++] = (char)(0x80 | ((cp >> 12) & 63)),
            o[k++] = (char)(0x80 | ((cp >> 6) & 63)), o[k++] = (char)(0x80 | (cp & 63));
    }
    if (p->i >= p->n) return p->err = "unterminated string", NULL;
    p->i++;
    jstr *r = ja_alloc(p->a, sizeof *r);
    o[k] = 0;
    r->s = o;
    r->n = k;
    r->prov = k ? PROV_DATA : PROV_TEMPLATE;
    return r;
}

static bool jp_value(jp *p, jv *out) {
    jp_ws(p);
    if (p->i >= p->n) return p->err = "unexpected end", false;
    if (++p->depth > 200) return p->err = "nested too deeply", false;
    char ch = p->s[p->i];
    bool ok = true;
    if (ch == '"') {
        const jstr *s = jp_string(p);
        if (!s) return false;
        *out = jv_str(s);
    } else if (ch == '[') {
        p->i++;
        jlist *l = jl_new(p->a, 0);
        jp_ws(p);
        if (p->i < p->n && p->s[p->i] == ']') p->i++;
        else
            for (;;) {
                jv v;
                if (!jp_value(p, &v)) return false;
                jl_push(p->a, l, v);
                jp_ws(p);
                if (p->i < p->n && p->s[p->i] == ',') {
                    p->i++;
                    continue;
                }
                if (p->i < p->n && p->s[p->i] == ']') {
                    p->i++;
                    break;
                }
                return p->err = "expected ',' or ']'", false;
            }
        *out = (jv){.t = JV_LIST, .u.l = l};
    } else if (ch == '{') {
        p->i++;
        jdict *d = jd_new(p->a, 0);
        jp_ws(p);
        if (p->i < p->n && p->s[p->i] == '}') p->i++;
        else
            for (;;) {
                jp_ws(p);
                if (p->i >= p->n || p->s[p->i] != '"') return p->err = "expected a key", false;
                const jstr *k = jp_string(p);
                if (!k) return false;
                jp_ws(p);
                if (p->i >= p->n || p->s[p->i] != ':') return p->err = "expected ':'", false;
                p->i++;
                jv v;
                if (!jp_value(p, &v)) return false;
                jd_set(p->a, d, k, v);
                jp_ws(p);
                if (p->i < p->n && p->s[p->i] == ',') {
                    p->i++;
                    continue;
                }
                if (p->i < p->n && p->s[p->i] == '}') {
                    p->i++;
                    break;
                }
                return p->err = "expected ',' or '}'", false;
            }
        *out = (jv){.t = JV_DICT, .u.d = d};
    } else if (p->n - p->i >= 4 && !memcmp(p->s + p->i, "true", 4)) {
        p->i += 4;
        *out = jv_bool(true);
    } else if (p->n - p->i >= 5 && !memcmp(p->s + p->i, "false", 5)) {
        p->i += 5;
        *out = jv_bool(false);
    } else if (p->n - p->i >= 4 && !memcmp(p->s + p->i, "null", 4)) {
        p->i += 4;
        *out = jv_none();
    } else if (ch == '-' || (ch >= '0' && ch <= '9')) {
        size_t st = p->i;
        bool fl = false;
        if (p->s[p->i] == '-') p->i++;
        while (p->i < p->n && ((p->s[p->i] >= '0' && p->s[p->i] <= '9') || strchr(".eE+-", p->s[p->i]))) {
            if (strchr(".eE", p->s[p->i])) fl = true;
            p->i++;
        }
        char buf[64];
        size_t len = p->i - st;
        if (len >= sizeof buf) return p->err = "number too long", false;
        memcpy(buf, p->s + st, len);
        buf[len] = 0;
        char *end;
        if (fl) *out = (jv){.t = JV_FLOAT, .u.f = strtod(buf, &end)};
        else {
            long long v = strtoll(buf, &end, 10);
            *out = jv_int(v);
        }
        if (*end || len == 0) return p->err = "bad number", false;
    } else ok = false, p->err = "unexpected character";
    p->depth--;
    return ok;
}

const char *jjson_parse(jarena *a, const char *s, size_t n, jv *out) {
    jp p = {.a = a, .s = s, .n = n};
    if (!jp_value(&p, out)) return p.err ? p.err : "bad JSON";
    jp_ws(&p);
    if (p.i != p.n) return "trailing characters";
    return NULL;
}
