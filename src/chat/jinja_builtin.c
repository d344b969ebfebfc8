/* The Jinja built-ins the chat templates use: filters (jinja2's filters.py,
 * with transformers' tojson = json.dumps(ensure_ascii=False)), tests
 * (jinja2's tests.py), Python str and dict methods, and the globals range,
 * namespace, dict, raise_exception and strftime_now. Case mapping is ASCII
 * only (Python maps all of Unicode); the templates only case role names. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "chat/jinja_impl.h"

static bool in_list(const char *name, const char *const *list) {
    for (size_t i = 0; list[i]; i++)
        if (!strcmp(name, list[i])) return true;
    return false;
}

static const char *const k_filters[] = {
    "tojson", "trim", "items", "length", "count", "selectattr", "rejectattr", "select", "reject", "map", "join",
    "first", "last", "lower", "upper", "replace", "default", "d", "string", "int", "float", "list", "dictsort",
    "unique", "capitalize", "title", "safe", "abs", "indent", "reverse", "sort", "min", "max", "sum", "round",
    "wordcount", NULL};
static const char *const k_tests[] = {"defined", "undefined", "none", "string", "mapping", "iterable", "sequence",
                                      "number", "integer", "float", "boolean", "true", "false", "odd", "even",
                                      "divisibleby", "equalto", "eq", "==", "ne", "!=", "lt", "<", "le", "<=", "gt",
                                      ">", "ge", ">=", "in", "callable", "lower", "upper", "sameas", NULL};
static const char *const k_methods[] = {
    "startswith", "endswith", "strip", "lstrip", "rstrip", "split", "rsplit", "upper", "lower", "replace", "title",
    "capitalize", "format", "find", "rfind", "count", "join", "splitlines", "isdigit", "isalpha", "isspace",
    "isalnum", "islower", "isupper", "removeprefix", "removesuffix", "items", "keys", "values", "get", "cycle",
    NULL};
static const char *const k_globals[] = {"range", "namespace", "dict", "raise_exception", "strftime_now", NULL};

bool jb_filter_known(const char *name) { return in_list(name, k_filters); }
bool jb_test_known(const char *name) { return in_list(name, k_tests); }
bool jb_method_known(const char *name) { return in_list(name, k_methods); }
bool jb_global_known(const char *name) { return in_list(name, k_globals); }

/* ---- small helpers ---- */
#define FAIL(...) jfail(c, n->line, n->col, __VA_ARGS__)

static jv kwarg(const jstr *const *kwn, const jv *kwv, size_t nk, const char *name, jv def) {
    for (size_t i = 0; i < nk; i++)
        if (!strcmp(kwn[i]->s, name)) return kwv[i];
    return def;
}
/* Argument i, or keyword name, or def. */
static jv arg(const jv *a, size_t na, size_t i, const jstr *const *kwn, const jv *kwv, size_t nk, const char *name, jv def) {
    if (i < na) return a[i];
    return kwarg(kwn, kwv, nk, name, def);
}

static jv list_v(jlist *l) { return (jv){.t = JV_LIST, .u.l = l}; }

static const jstr *need_str(jctx *c, const jnode *n, jv v, const char *what) {
    if (v.t != JV_STR) FAIL("%s expects a string, got %s", what, jv_type_name(v));
    return v.u.s;
}

/* Byte length of the Python whitespace code point at s[i], or 0 (str.isspace). */
static size_t py_space(const char *s, size_t n, size_t i) {
    unsigned char b = (unsigned char)s[i];
    if (b == ' ' || (b >= 0x09 && b <= 0x0d) || (b >= 0x1c && b <= 0x1f)) return 1;
    if (b < 0x80) return 0;
    unsigned cp = 0;
    size_t len = b >= 0xF0 ? 4 : b >= 0xE0 ? 3 : b >= 0xC0 ? 2 : 1;
    if (i + len > n || len == 1) return 0;
    cp = b & (0x3F >> (len - 1));
    for (size_t k = 1; k < len; k++) cp = cp << 6 | ((unsigned char)s[i + k] & 0x3F);
    bool sp = cp == 0x85 || cp == 0xA0 || cp == 0x1680 || (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 ||
              cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
    return sp ? len : 0;
}

static size_t cp_len(const char *s, size_t n, size_t i) {
    size_t j = i + 1;
    while (j < n && ((unsigned char)s[j] & 0xC0) == 0x80) j++;
    return j - i;
}

static bool in_chars(const jstr *chars, const char *p, size_t len) {
    for (size_t i = 0; i < chars->n; i += cp_len(chars->s, chars->n, i))
        if (cp_len(chars->s, chars->n, i) == len && !memcmp(chars->s + i, p, len)) return true;
    return false;
}

/* str.strip / lstrip / rstrip: chars NULL = whitespace. */
static jv strip(jctx *c, const jstr *s, const jstr *chars, bool left, bool right) {
    size_t a = 0, b = s->n;
    while (left && a < b) {
        size_t l = chars ? (in_chars(chars, s->s + a, cp_len(s->s, s->n, a)) ? cp_len(s->s, s->n, a) : 0) : py_space(s->s, s->n, a);
        if (!l) break;
        a += l;
    }
    while (right && b > a) {
        size_t st = b - 1;
        while (st > a && ((unsigned char)s->s[st] & 0xC0) == 0x80) st--;
        size_t l = chars ? (in_chars(chars, s->s + st, b - st) ? b - st : 0) : (py_space(s->s, s->n, st) == b - st ? b - st : 0);
        if (!l) break;
        b = st;
    }
    jbuf o = {0};
    jb_sub(jctx_arena(c), &o, s, a, b - a);
    return jv_str(jb_done(jctx_arena(c), &o));
}

static jv sub(jctx *c, const jstr *s, size_t off, size_t n) {
    jbuf o = {0};
    jb_sub(jctx_arena(c), &o, s, off, n);
    return jv_str(jb_done(jctx_arena(c), &o));
}

static const char *find_bytes(const char *h, size_t hn, const char *nd, size_t nn) {
    if (nn > hn) return NULL;
    if (nn == 1) return memchr(h, nd[0], hn);
    for (size_t i = 0; i + nn <= hn; i++)
        if (!memcmp(h + i, nd, nn)) return h + i;
    return NULL;
}

static jv split(jctx *c, const jnode *n, const jstr *s, jv sep, int64_t maxsplit, bool from_right) {
    jarena *a = jctx_arena(c);
    jlist *l = jl_new(a, 0);
    if (sep.t == JV_NONE || sep.t == JV_UNDEF) {
        if (from_right && maxsplit >= 0) FAIL("unsupported: rsplit() with maxsplit and no separator");
        size_t i = 0;
        for (;;) {
            while (i < s->n && py_space(s->s, s->n, i)) i += py_space(s->s, s->n, i);
            if (i >= s->n) break;
            size_t st = i;
            if (maxsplit >= 0 && (int64_t)l->n >= maxsplit) {
                size_t e = s->n;
                while (e > st) {
                    size_t k = e - 1;
                    while (k > st && ((unsigned char)s->s[k] & 0xC0) == 0x80) k--;
                    if (py_space(s->s, s->n, k) != e - k) break;
                    e = k;
                }
                jl_push(a, l, sub(c, s, st, e - st));
                break;
            }
            while (i < s->n && !py_space(s->s, s->n, i)) i += cp_len(s->s, s->n, i);
            jl_push(a, l, sub(c, s, st, i - st));
        }
        return list_v(l);
    }
    const jstr *d = need_str(c, n, sep, "split");
    if (!d->n) FAIL("empty separator");
    if (from_right) {
        /* collect from the right, then reverse */
        jlist *r = jl_new(a, 0);
        size_t end = s->n;
        int64_t k = 0;
        for (;;) {
            const char *hit = NULL;
            if (maxsplit < 0 || k < maxsplit)
                for (size_t i = end; i >= d->n; i--)
                    if (!memcmp(s->s + i - d->n, d->s, d->n)) {
                        hit = s->s + i - d->n;
                        break;
                    }
            jcharge(c, 1 + end * d->n / 64);
            if (!hit) {
                jl_push(a, r, sub(c, s, 0, end));
                break;
            }
            size_t at = (size_t)(hit - s->s);
            jl_push(a, r, sub(c, s, at + d->n, end - at - d->n));
            end = at;
            k++;
        }
        for (size_t i = r->n; i-- > 0;) jl_push(a, l, r->v[i]);
        return list_v(l);
    }
    size_t st = 0;
    int64_t k = 0;
    for (;;) {
        jcharge(c, 1 + (s->n - st) * d->n / 64);
        const char *hit = (maxsplit < 0 || k < maxsplit) ? find_bytes(s->s + st, s->n - st, d->s, d->n) : NULL;
        if (!hit) {
            jl_push(a, l, sub(c, s, st, s->n - st));
            break;
        }
        size_t at = (size_t)(hit - s->s);
        jl_push(a, l, sub(c, s, st, at - st));
        st = at + d->n;
        k++;
    }
    return list_v(l);
}

static jv replace(jctx *c, const jnode *n, const jstr *s, jv oldv, jv newv, int64_t count) {
    jarena *a = jctx_arena(c);
    const jstr *old = need_str(c, n, oldv, "replace"), *nw = need_str(c, n, newv, "replace");
    jbuf o = {0};
    size_t st = 0;
    int64_t k = 0;
    if (!old->n) { /* Python inserts new between every character */
        for (size_t i = 0; i <= s->n; k++) {
            if (count >= 0 && k >= count) {
                jb_sub(a, &o, s, i, s->n - i);
                break;
            }
            jb_str(a, &o, nw);
            if (i == s->n) break;
            size_t l = cp_len(s->s, s->n, i);
            jb_sub(a, &o, s, i, l);
            i += l;
            if (o.n > ((size_t)64 << 20)) FAIL("replace result too large");
        }
        return jv_str(jb_done(a, &o));
    }
    for (;;) {
        jcharge(c, 1 + (s->n - st) * old->n / 64);
        const char *hit = (count < 0 || k < count) ? find_bytes(s->s + st, s->n - st, old->s, old->n) : NULL;
        if (!hit) {
            jb_sub(a, &o, s, st, s->n - st);
            break;
        }
        size_t at = (size_t)(hit - s->s);
        jb_sub(a, &o, s, st, at - st);
        jb_str(a, &o, nw);
        st = at + old->n;
        k++;
        if (o.n > ((size_t)64 << 20)) FAIL("replace result too large");
    }
    return jv_str(jb_done(a, &o));
}

/* Case mapping of the code points whose upper and lower forms have the same
 * UTF-8 length: ASCII, Latin-1, Latin Extended-A, Greek, Cyrillic. Every
 * byte stays where it was, so provenance carries over. Others (ß -> SS,
 * ligatures, scripts further out) are left as they are: a known difference
 * from Python, which maps all of Unicode. */
static unsigned cp_upper(unsigned cp) {
    if (cp >= 'a' && cp <= 'z') return cp - 32;
    if ((cp >= 0xE0 && cp <= 0xFE && cp != 0xF7)) return cp - 32;
    if (cp >= 0x100 && cp <= 0x17F && cp != 0x130 && cp != 0x131 && cp != 0x138 && cp != 0x149 && cp != 0x17F) {
        bool odd_lower = (cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E);
        if (odd_lower ? (cp & 1) == 0 : (cp & 1) == 1) return cp - 1;
        return cp;
    }
    if (cp >= 0x3B1 && cp <= 0x3C9 && cp != 0x3C2) return cp - 32;
    if (cp >= 0x430 && cp <= 0x44F) return cp - 32;
    if (cp >= 0x450 && cp <= 0x45F) return cp - 80;
    return cp;
}
static unsigned cp_lower(unsigned cp) {
    if (cp >= 'A' && cp <= 'Z') return cp + 32;
    if ((cp >= 0xC0 && cp <= 0xDE && cp != 0xD7)) return cp + 32;
    if (cp >= 0x100 && cp <= 0x17F && cp != 0x130 && cp != 0x131 && cp != 0x138 && cp != 0x149 && cp != 0x17F) {
        bool odd_lower = (cp >= 0x139 && cp <= 0x148) || (cp >= 0x179 && cp <= 0x17E);
        if (odd_lower ? (cp & 1) == 1 : (cp & 1) == 0) return cp + 1;
        return cp;
    }
    if (cp >= 0x391 && cp <= 0x3A9 && cp != 0x3A2) return cp + 32;
    if (cp >= 0x410 && cp <= 0x42F) return cp + 32;
    if (cp >= 0x400 && cp <= 0x40F) return cp + 80;
    return cp;
}
static bool cp_cased(unsigned cp) { return cp_upper(cp) != cp || cp_lower(cp) != cp; }

/* The code point at s[i] (2-byte forms only beyond ASCII; others returned as 0x10000+). */
static unsigned cp_at(const char *s, size_t n, size_t i, size_t *len) {
    unsigned char b = (unsigned char)s[i];
    *len = cp_len(s, n, i);
    if (b < 0x80) return b;
    if (*len == 2 && (b & 0xE0) == 0xC0) return (unsigned)(b & 0x1F) << 6 | ((unsigned char)s[i + 1] & 0x3F);
    return 0x10000;
}
static void put_cp2(char *o, unsigned cp, size_t len) {
    if (len == 1) o[0] = (char)cp;
    else if (len == 2 && cp >= 0x80 && cp < 0x800) o[0] = (char)(0xC0 | cp >> 6), o[1] = (char)(0x80 | (cp & 63));
}

enum { CASE_LOWER, CASE_UPPER, CASE_CAPITALIZE, CASE_TITLE_METHOD, CASE_TITLE_FILTER };

/* lower / upper; capitalize (first upper, rest lower); Python str.title
 * (upper after an uncased character, lower after a cased one); jinja2's
 * title filter (upper at the start of each run after whitespace, - ( { [ <,
 * the rest lower). */
static jv map_case(jctx *c, const jstr *s, int mode) {
    jarena *a = jctx_arena(c);
    jbuf o = {0};
    jb_str(a, &o, s);
    bool prev_cased = false, word_start = true;
    for (size_t i = 0; i < o.n;) {
        size_t len;
        unsigned cp = cp_at(o.s, o.n, i, &len);
        bool up;
        switch (mode) {
        case CASE_UPPER: up = true; break;
        case CASE_CAPITALIZE: up = i == 0; break;
        case CASE_TITLE_METHOD: up = !prev_cased; break;
        case CASE_TITLE_FILTER: up = word_start; break;
        default: up = false;
        }
        unsigned m = up ? cp_upper(cp) : cp_lower(cp);
        if (m != cp) put_cp2(o.s + i, m, len);
        prev_cased = cp_cased(cp);
        word_start = cp == ' ' || (cp >= 0x09 && cp <= 0x0d) || cp == '-' || cp == '(' || cp == '{' || cp == '[' || cp == '<' ||
                     py_space(o.s, o.n, i);
        i += len;
    }
    return jv_str(jb_done(a, &o));
}

static jv to_json(jctx *c, const jnode *n, jv v, const jv *args, size_t na, const jstr *const *kwn, const jv *kwv, size_t nk) {
    jarena *a = jctx_arena(c);
    jv ea = arg(args, na, 0, kwn, kwv, nk, "ensure_ascii", jv_bool(false));
    jv ind = arg(args, na, 1, kwn, kwv, nk, "indent", jv_none());
    jv seps = arg(args, na, 2, kwn, kwv, nk, "separators", jv_none());
    jv sk = arg(args, na, 3, kwn, kwv, nk, "sort_keys", jv_bool(false));
    int indent = -1;
    if (ind.t == JV_INT) indent = ind.u.i < 0 ? 0 : ind.u.i > 64 ? 64 : (int)ind.u.i;
    else if (ind.t != JV_NONE) FAIL("unsupported: tojson indent that is not an integer");
    jjson_opts jo = {.indent = indent, .item_sep = indent >= 0 ? "," : ", ", .key_sep = ": ",
                     .ascii = jv_truthy(ea), .sort_keys = jv_truthy(sk)};
    if (seps.t == JV_LIST && seps.u.l->n == 2 && seps.u.l->v[0].t == JV_STR && seps.u.l->v[1].t == JV_STR) {
        jo.item_sep = seps.u.l->v[0].u.s->s;
        jo.key_sep = seps.u.l->v[1].u.s->s;
    } else if (seps.t != JV_NONE) FAIL("tojson separators must be two strings");
    jbuf o = {0};
    jv_json(c, &o, v, &jo, 0);
    return jv_str(jb_done(a, &o));
}

/* attribute "a.b" (dotted) of an item, as jinja2's make_attrgetter. */
static jv attr_path(jctx *c, const jnode *n, jv item, const jstr *path) {
    size_t st = 0;
    for (size_t i = 0; i <= path->n; i++) {
        if (i < path->n && path->s[i] != '.') continue;
        const char *p = path->s + st;
        size_t len = i - st;
        char *end;
        long idx = strtol(p, &end, 10);
        if (len && end == p + len && item.t == JV_LIST) item = jeval_getitem(c, item, jv_int(idx), n->line, n->col);
        else item = jeval_getattr(c, item, p, len, n->line, n->col);
        st = i + 1;
    }
    return item;
}

/* Runs the test named tv on v with extra args (select/reject family). */
static bool run_test(jctx *c, const jnode *n, jv v, const jv *args, size_t na) {
    if (!na) return jv_truthy(v);
    const jstr *name = need_str(c, n, args[0], "test name");
    if (!jb_test_known(name->s)) FAIL("unsupported test '%s'", name->s);
    jnode t = *n;
    t.name = name;
    return jb_test(c, &t, v, args + 1, na - 1);
}

static jv select_filter(jctx *c, const jnode *n, jv v, const jv *args, size_t na, bool by_attr, bool keep) {
    jarena *a = jctx_arena(c);
    if (!jv_truthy(v)) return list_v(jl_new(a, 0)); /* jinja2: `if value: for item in value` */
    jlist *in = jv_iterate(c, v, n->line, n->col), *out = jl_new(a, 0);
    if (by_attr && !na) FAIL("%s needs an attribute", n->name->s);
    for (size_t i = 0; i < in->n; i++) {
        jv x = by_attr ? attr_path(c, n, in->v[i], need_str(c, n, args[0], "attribute")) : in->v[i];
        bool r = run_test(c, n, x, args + by_attr, na - by_attr);
        if (r == keep) jl_push(a, out, in->v[i]);
    }
    return list_v(out);
}

static int cmp_ci(jctx *c, const jnode *n, jv x, jv y, bool cs) {
    if (!cs && x.t == JV_STR && y.t == JV_STR) {
        jv lx = map_case(c, x.u.s, CASE_LOWER), ly = map_case(c, y.u.s, CASE_LOWER);
        return jv_compare(c, lx, ly, n->line, n->col);
    }
    return jv_compare(c, x, y, n->line, n->col);
}

/* Stable insertion sort (templates sort a handful of items). */
static void sort_list(jctx *c, const jnode *n, jv *v, size_t cnt, const jv *keys, bool cs, bool rev) {
    size_t *idx = ja_alloc(jctx_arena(c), (cnt + 1) * sizeof *idx);
    for (size_t i = 0; i < cnt; i++) idx[i] = i;
    for (size_t i = 1; i < cnt; i++) {
        size_t k = idx[i], j = i;
        while (j > 0) {
            jcharge(c, 1);
            int r = cmp_ci(c, n, keys[idx[j - 1]], keys[k], cs);
            if (rev ? r >= 0 : r <= 0) break;
            idx[j] = idx[j - 1];
            j--;
        }
        idx[j] = k;
    }
    jv *copy = ja_alloc(jctx_arena(c), (cnt + 1) * sizeof *copy);
    for (size_t i = 0; i < cnt; i++) copy[i] = v[idx[i]];
    memcpy(v, copy, cnt * sizeof *v);
}

/* Filters that make text: tojson, string, trim, case, replace, indent, wordcount. */
static jv filter_text(jctx *c, const jnode *n, jv v, const jv *args, size_t na, const jstr *const *kwn, const jv *kwv, size_t nk,
                      bool *found) {
    jarena *a = jctx_arena(c);
    const char *f = n->name->s;
    *found = true;
    if (!strcmp(f, "tojson")) return to_json(c, n, v, args, na, kwn, kwv, nk);
    if (!strcmp(f, "safe")) return v;
    if (!strcmp(f, "string")) return jv_str(jv_to_str(c, v));
    if (!strcmp(f, "trim")) {
        jv ch = arg(args, na, 0, kwn, kwv, nk, "chars", jv_none());
        return strip(c, jv_to_str(c, v), ch.t == JV_STR ? ch.u.s : NULL, true, true);
    }
    if (!strcmp(f, "lower")) return map_case(c, jv_to_str(c, v), CASE_LOWER);
    if (!strcmp(f, "upper")) return map_case(c, jv_to_str(c, v), CASE_UPPER);
    if (!strcmp(f, "capitalize")) return map_case(c, jv_to_str(c, v), CASE_CAPITALIZE);
    if (!strcmp(f, "title")) return map_case(c, jv_to_str(c, v), CASE_TITLE_FILTER);
    if (!strcmp(f, "replace")) {
        jv cnt = arg(args, na, 2, kwn, kwv, nk, "count", jv_none());
        if (na < 2) FAIL("replace needs two arguments");
        return replace(c, n, jv_to_str(c, v), args[0], args[1], cnt.t == JV_INT ? cnt.u.i : -1);
    }
    if (!strcmp(f, "indent")) {
        jv w = arg(args, na, 0, kwn, kwv, nk, "width", jv_int(4));
        jv first = arg(args, na, 1, kwn, kwv, nk, "first", jv_bool(false));
        jv blank = arg(args, na, 2, kwn, kwv, nk, "blank", jv_bool(false));
        const jstr *pad = w.t == JV_STR ? w.u.s : NULL;
        char spaces[65];
        int64_t nw = w.t == JV_INT ? (w.u.i < 0 ? 0 : w.u.i > 64 ? 64 : w.u.i) : 0;
        memset(spaces, ' ', (size_t)nw);
        const jstr *s = jv_to_str(c, v);
        jbuf o = {0};
        bool line_start = true;
        for (size_t i = 0; i < s->n; i++) {
            if (line_start && (i > 0 || jv_truthy(first))) {
                bool empty = s->s[i] == '\n';
                if (!empty || jv_truthy(blank)) {
                    if (pad) jb_str(a, &o, pad);
                    else jb_add(a, &o, spaces, (size_t)nw, PROV_TEMPLATE);
                }
            }
            jb_sub(a, &o, s, i, 1);
            line_start = s->s[i] == '\n';
        }
        return jv_str(jb_done(a, &o));
    }
    if (!strcmp(f, "wordcount")) { /* runs of \w (letters, digits, _; any non-ASCII byte counts as a letter) */
        const jstr *t = jv_to_str(c, v);
        int64_t words = 0;
        bool in_word = false;
        for (size_t i = 0; i < t->n; i++) {
            unsigned char ch = (unsigned char)t->s[i];
            bool w = ch >= 0x80 || ch == '_' || (ch >= '0' && ch <= '9') || ((ch | 0x20) >= 'a' && (ch | 0x20) <= 'z');
            if (w && !in_word) words++;
            in_word = w;
        }
        return jv_int(words);
    }
    *found = false;
    return jv_undef();
}

/* Filters over sequences and mappings: length, items, select/reject(attr), map, join, first/last,
 * list, reverse, sort, dictsort, unique, min/max, sum. */
static jv filter_seq(jctx *c, const jnode *n, jv v, const jv *args, size_t na, const jstr *const *kwn, const jv *kwv, size_t nk,
                     bool *found) {
    jarena *a = jctx_arena(c);
    const char *f = n->name->s;
    *found = true;
    if (!strcmp(f, "length") || !strcmp(f, "count")) return jv_int((int64_t)jv_length(c, v));
    if (!strcmp(f, "items")) {
        if (v.t == JV_UNDEF) return list_v(jl_new(a, 0));
        if (v.t != JV_DICT) FAIL("Can only get item pairs from a mapping.");
        jlist *l = jl_new(a, v.u.d->n);
        for (size_t i = 0; i < v.u.d->n; i++) {
            jlist *p = jl_new(a, 2);
            p->tuple = true;
            jl_push(a, p, jv_str(v.u.d->k[i]));
            jl_push(a, p, v.u.d->v[i]);
            jl_push(a, l, list_v(p));
        }
        return list_v(l);
    }
    if (!strcmp(f, "selectattr")) return select_filter(c, n, v, args, na, true, true);
    if (!strcmp(f, "rejectattr")) return select_filter(c, n, v, args, na, true, false);
    if (!strcmp(f, "select")) return select_filter(c, n, v, args, na, false, true);
    if (!strcmp(f, "reject")) return select_filter(c, n, v, args, na, false, false);
    if (!strcmp(f, "map")) {
        if (!jv_truthy(v)) return list_v(jl_new(a, 0));
        jlist *in = jv_iterate(c, v, n->line, n->col), *out = jl_new(a, in->n);
        jv at = kwarg(kwn, kwv, nk, "attribute", jv_undef());
        jv def = kwarg(kwn, kwv, nk, "default", jv_undef());
        for (size_t i = 0; i < in->n; i++) {
            jv x;
            if (at.t == JV_STR) {
                x = attr_path(c, n, in->v[i], at.u.s);
                if (x.t == JV_UNDEF && def.t != JV_UNDEF) x = def;
            } else {
                if (!na) FAIL("map needs a filter name or attribute=");
                const jstr *fname = need_str(c, n, args[0], "filter name");
                if (!jb_filter_known(fname->s) || !strcmp(fname->s, "map")) FAIL("unsupported filter '%s'", fname->s);
                jnode fn = *n;
                fn.name = fname;
                x = jb_filter(c, &fn, in->v[i], args + 1, na - 1, kwn, kwv, nk);
            }
            jl_push(a, out, x);
        }
        return list_v(out);
    }
    if (!strcmp(f, "join")) {
        jv sep = arg(args, na, 0, kwn, kwv, nk, "d", jv_str(jstr_lit(a, "")));
        jv at = arg(args, na, 1, kwn, kwv, nk, "attribute", jv_none());
        const jstr *s = jv_to_str(c, sep);
        jlist *in = jv_iterate(c, v, n->line, n->col);
        jbuf o = {0};
        for (size_t i = 0; i < in->n; i++) {
            if (i) jb_str(a, &o, s);
            jv x = at.t == JV_STR ? attr_path(c, n, in->v[i], at.u.s) : in->v[i];
            jb_str(a, &o, jv_to_str(c, x));
        }
        return jv_str(jb_done(a, &o));
    }
    if (!strcmp(f, "first") || !strcmp(f, "last")) {
        jlist *in = jv_iterate(c, v, n->line, n->col);
        if (!in->n) return jv_undef();
        return f[0] == 'f' ? in->v[0] : in->v[in->n - 1];
    }
    if (!strcmp(f, "list")) {
        jlist *in = jv_iterate(c, v, n->line, n->col), *out = jl_new(a, in->n);
        for (size_t i = 0; i < in->n; i++) jl_push(a, out, in->v[i]);
        return list_v(out);
    }
    if (!strcmp(f, "reverse")) {
        if (v.t == JV_STR) {
            jlist *ch = jv_iterate(c, v, n->line, n->col);
            jbuf o = {0};
            for (size_t i = ch->n; i-- > 0;) jb_str(a, &o, ch->v[i].u.s);
            return jv_str(jb_done(a, &o));
        }
        jlist *in = jv_iterate(c, v, n->line, n->col), *out = jl_new(a, in->n);
        for (size_t i = in->n; i-- > 0;) jl_push(a, out, in->v[i]);
        return list_v(out);
    }
    if (!strcmp(f, "dictsort")) {
        if (v.t != JV_DICT) FAIL("dictsort expects a mapping");
        jv cs = arg(args, na, 0, kwn, kwv, nk, "case_sensitive", jv_bool(false));
        jv by = arg(args, na, 1, kwn, kwv, nk, "by", jv_str(jstr_lit(a, "key")));
        jv rev = arg(args, na, 2, kwn, kwv, nk, "reverse", jv_bool(false));
        bool by_value = by.t == JV_STR && !strcmp(by.u.s->s, "value");
        size_t cnt = v.u.d->n;
        jv *items = ja_alloc(a, (cnt + 1) * sizeof *items), *keys = ja_alloc(a, (cnt + 1) * sizeof *keys);
        for (size_t i = 0; i < cnt; i++) {
            jlist *p = jl_new(a, 2);
            p->tuple = true;
            jl_push(a, p, jv_str(v.u.d->k[i]));
            jl_push(a, p, v.u.d->v[i]);
            items[i] = list_v(p);
            keys[i] = by_value ? v.u.d->v[i] : jv_str(v.u.d->k[i]);
        }
        sort_list(c, n, items, cnt, keys, jv_truthy(cs), jv_truthy(rev));
        jlist *out = jl_new(a, cnt);
        for (size_t i = 0; i < cnt; i++) jl_push(a, out, items[i]);
        return list_v(out);
    }
    if (!strcmp(f, "sort")) {
        jv rev = arg(args, na, 0, kwn, kwv, nk, "reverse", jv_bool(false));
        jv cs = arg(args, na, 1, kwn, kwv, nk, "case_sensitive", jv_bool(false));
        jv at = arg(args, na, 2, kwn, kwv, nk, "attribute", jv_none());
        jlist *in = jv_iterate(c, v, n->line, n->col), *out = jl_new(a, in->n);
        jv *keys = ja_alloc(a, (in->n + 1) * sizeof *keys);
        for (size_t i = 0; i < in->n; i++) {
            jl_push(a, out, in->v[i]);
            keys[i] = at.t == JV_STR ? attr_path(c, n, in->v[i], at.u.s) : in->v[i];
        }
        /* keys must move with their items: sort a copy of indexes through sort_list on pairs */
        jv *pairs = ja_alloc(a, (in->n + 1) * sizeof *pairs);
        for (size_t i = 0; i < in->n; i++) pairs[i] = jv_int((int64_t)i);
        jv *kcopy = ja_alloc(a, (in->n + 1) * sizeof *kcopy);
        memcpy(kcopy, keys, in->n * sizeof *kcopy);
        sort_list(c, n, pairs, in->n, kcopy, jv_truthy(cs), jv_truthy(rev));
        for (size_t i = 0; i < in->n; i++) out->v[i] = in->v[pairs[i].u.i];
        return list_v(out);
    }
    if (!strcmp(f, "unique")) {
        jv cs = arg(args, na, 0, kwn, kwv, nk, "case_sensitive", jv_bool(false));
        jlist *in = jv_iterate(c, v, n->line, n->col), *out = jl_new(a, in->n);
        jlist *seen = jl_new(a, in->n);
        for (size_t i = 0; i < in->n; i++) {
            jv k = in->v[i];
            if (!jv_truthy(cs) && k.t == JV_STR) k = map_case(c, k.u.s, CASE_LOWER);
            bool dup = false;
            jcharge(c, seen->n);
            for (size_t j = 0; j < seen->n && !dup; j++) dup = jv_equal(seen->v[j], k);
            if (dup) continue;
            jl_push(a, seen, k);
            jl_push(a, out, in->v[i]);
        }
        return list_v(out);
    }
    if (!strcmp(f, "min") || !strcmp(f, "max")) {
        jlist *in = jv_iterate(c, v, n->line, n->col);
        if (!in->n) return jv_undef();
        jv best = in->v[0];
        for (size_t i = 1; i < in->n; i++) {
            int r = cmp_ci(c, n, in->v[i], best, false);
            if (f[1] == 'i' ? r < 0 : r > 0) best = in->v[i];
        }
        return best;
    }
    if (!strcmp(f, "sum")) {
        jlist *in = jv_iterate(c, v, n->line, n->col);
        jv at = arg(args, na, 0, kwn, kwv, nk, "attribute", jv_none());
        jv acc = arg(args, na, 1, kwn, kwv, nk, "start", jv_int(0));
        for (size_t i = 0; i < in->n; i++) {
            jv x = at.t == JV_STR ? attr_path(c, n, in->v[i], at.u.s) : in->v[i];
            if (acc.t == JV_BOOL) acc = jv_int(acc.u.b);
            if (x.t == JV_BOOL) x = jv_int(x.u.b);
            if ((acc.t != JV_INT && acc.t != JV_FLOAT) || (x.t != JV_INT && x.t != JV_FLOAT)) FAIL("sum of non-numbers");
            acc = acc.t == JV_INT && x.t == JV_INT ? jv_int(acc.u.i + x.u.i)
                                                   : (jv){.t = JV_FLOAT, .u.f = (acc.t == JV_INT ? (double)acc.u.i : acc.u.f) + (x.t == JV_INT ? (double)x.u.i : x.u.f)};
        }
        return acc;
    }
    *found = false;
    return jv_undef();
}

/* Filters on single values: default, int, float, abs, round. */
static jv filter_value(jctx *c, const jnode *n, jv v, const jv *args, size_t na, const jstr *const *kwn, const jv *kwv, size_t nk,
                       bool *found) {
    jarena *a = jctx_arena(c);
    const char *f = n->name->s;
    *found = true;
    if (!strcmp(f, "default") || !strcmp(f, "d")) {
        jv def = arg(args, na, 0, kwn, kwv, nk, "default_value", jv_str(jstr_lit(a, "")));
        jv boolean = arg(args, na, 1, kwn, kwv, nk, "boolean", jv_bool(false));
        if (v.t == JV_UNDEF || (jv_truthy(boolean) && !jv_truthy(v))) return def;
        return v;
    }
    if ((!strcmp(f, "int") || !strcmp(f, "float")) && v.t == JV_UNDEF) FAIL("%s of an undefined value", f);
    if (!strcmp(f, "int")) {
        jv def = arg(args, na, 0, kwn, kwv, nk, "default", jv_int(0));
        if (v.t == JV_INT) return v;
        if (v.t == JV_BOOL) return jv_int(v.u.b);
        if (v.t == JV_FLOAT) return isfinite(v.u.f) && fabs(v.u.f) < 9e18 ? jv_int((int64_t)v.u.f) : def;
        if (v.t == JV_STR) {
            jv t = strip(c, v.u.s, NULL, true, true);
            char *end;
            long long x = strtoll(t.u.s->s, &end, 10);
            if (t.u.s->n && *end == 0) return jv_int(x);
            double d = strtod(t.u.s->s, &end);
            if (t.u.s->n && *end == 0 && isfinite(d) && fabs(d) < 9e18) return jv_int((int64_t)d);
        }
        return def;
    }
    if (!strcmp(f, "float")) {
        if (v.t == JV_FLOAT) return v;
        if (v.t == JV_INT || v.t == JV_BOOL) return (jv){.t = JV_FLOAT, .u.f = v.t == JV_INT ? (double)v.u.i : v.u.b};
        if (v.t == JV_STR) {
            char *end;
            double d = strtod(v.u.s->s, &end);
            if (v.u.s->n && *end == 0) return (jv){.t = JV_FLOAT, .u.f = d};
        }
        return arg(args, na, 0, kwn, kwv, nk, "default", (jv){.t = JV_FLOAT, .u.f = 0});
    }
    if (!strcmp(f, "abs")) {
        if (v.t == JV_BOOL) return jv_int(v.u.b);
        if (v.t == JV_INT) return v.u.i == INT64_MIN ? (FAIL("integer overflow"), v) : jv_int(v.u.i < 0 ? -v.u.i : v.u.i);
        if (v.t == JV_FLOAT) return (jv){.t = JV_FLOAT, .u.f = fabs(v.u.f)};
        FAIL("bad operand type for abs(): '%s'", jv_type_name(v));
    }
    if (!strcmp(f, "round")) {
        jv prec = arg(args, na, 0, kwn, kwv, nk, "precision", jv_int(0));
        double x = v.t == JV_FLOAT ? v.u.f : v.t == JV_INT ? (double)v.u.i : (FAIL("round expects a number"), 0);
        double m = pow(10, prec.t == JV_INT ? (double)prec.u.i : 0);
        return (jv){.t = JV_FLOAT, .u.f = round(x * m) / m};
    }
    *found = false;
    return jv_undef();
}

jv jb_filter(jctx *c, const jnode *n, jv v, const jv *args, size_t na, const jstr *const *kwn, const jv *kwv, size_t nk) {
    bool found = false;
    jv r = filter_text(c, n, v, args, na, kwn, kwv, nk, &found);
    if (!found) r = filter_seq(c, n, v, args, na, kwn, kwv, nk, &found);
    if (!found) r = filter_value(c, n, v, args, na, kwn, kwv, nk, &found);
    if (!found) FAIL("unsupported filter '%s'", n->name->s);
    return r;
}

bool jb_test(jctx *c, const jnode *n, jv v, const jv *args, size_t na) {
    const char *t = n->name->s;
    jv x = na ? args[0] : jv_undef();
    if (!strcmp(t, "defined")) return v.t != JV_UNDEF;
    if (!strcmp(t, "undefined")) return v.t == JV_UNDEF;
    if (!strcmp(t, "none")) return v.t == JV_NONE;
    if (!strcmp(t, "string")) return v.t == JV_STR;
    if (!strcmp(t, "mapping")) return v.t == JV_DICT;
    if (!strcmp(t, "iterable")) return v.t == JV_STR || v.t == JV_LIST || v.t == JV_DICT || v.t == JV_UNDEF;
    if (!strcmp(t, "sequence")) return v.t == JV_STR || v.t == JV_LIST || v.t == JV_DICT || v.t == JV_UNDEF;
    if (!strcmp(t, "number")) return v.t == JV_INT || v.t == JV_FLOAT || v.t == JV_BOOL;
    if (!strcmp(t, "integer")) return v.t == JV_INT;
    if (!strcmp(t, "float")) return v.t == JV_FLOAT;
    if (!strcmp(t, "boolean")) return v.t == JV_BOOL;
    if (!strcmp(t, "true")) return v.t == JV_BOOL && v.u.b;
    if (!strcmp(t, "false")) return v.t == JV_BOOL && !v.u.b;
    if (!strcmp(t, "callable")) return v.t == JV_MACRO;
    if (!strcmp(t, "odd") || !strcmp(t, "even") || !strcmp(t, "divisibleby")) { /* value % k, Python's */
        jv k = t[0] == 'd' ? x : jv_int(2);
        bool num_v = v.t == JV_INT || v.t == JV_BOOL || v.t == JV_FLOAT, num_k = k.t == JV_INT || k.t == JV_BOOL || k.t == JV_FLOAT;
        if (!num_v || !num_k) FAIL("'%s' test needs numbers, got %s", t, jv_type_name(v));
        double dv = v.t == JV_FLOAT ? v.u.f : v.t == JV_INT ? (double)v.u.i : v.u.b;
        double dk = k.t == JV_FLOAT ? k.u.f : k.t == JV_INT ? (double)k.u.i : k.u.b;
        if (dk == 0) FAIL("integer division or modulo by zero");
        double r;
        if (v.t != JV_FLOAT && k.t != JV_FLOAT) {
            int64_t iv = v.t == JV_INT ? v.u.i : v.u.b, ik = k.t == JV_INT ? k.u.i : k.u.b;
            int64_t m = ik == -1 ? 0 : iv % ik;
            if (m && ((m < 0) != (ik < 0))) m += ik;
            r = (double)m;
        } else {
            r = fmod(dv, dk);
            if (r != 0 && ((r < 0) != (dk < 0))) r += dk;
        }
        return t[0] == 'o' ? r == 1 : r == 0;
    }
    if (!strcmp(t, "lower") || !strcmp(t, "upper")) { /* str(value).islower() / .isupper() */
        const jstr *sv = jv_to_str(c, v);
        bool cased = false;
        for (size_t i = 0; i < sv->n;) {
            size_t len;
            unsigned cp = cp_at(sv->s, sv->n, i, &len);
            i += len;
            if (!cp_cased(cp)) continue;
            cased = true;
            bool is_upper = cp_lower(cp) != cp;
            if (t[0] == 'l' ? is_upper : !is_upper) return false;
        }
        return cased;
    }
    if (!strcmp(t, "equalto") || !strcmp(t, "eq") || !strcmp(t, "==")) return jv_equal(v, x);
    if (!strcmp(t, "ne") || !strcmp(t, "!=")) return !jv_equal(v, x);
    if (!strcmp(t, "sameas")) return v.t == x.t && (v.t == JV_NONE || v.t == JV_UNDEF || (v.t == JV_BOOL && v.u.b == x.u.b));
    if (!strcmp(t, "in")) {
        if (x.t == JV_STR) return v.t == JV_STR && strstr(x.u.s->s, v.u.s->s);
        jlist *l = jv_iterate(c, x, n->line, n->col);
        for (size_t i = 0; i < l->n; i++)
            if (jv_equal(l->v[i], v)) return true;
        return false;
    }
    int r = jv_compare(c, v, x, n->line, n->col);
    if (!strcmp(t, "lt") || !strcmp(t, "<")) return r < 0;
    if (!strcmp(t, "le") || !strcmp(t, "<=")) return r <= 0;
    if (!strcmp(t, "gt") || !strcmp(t, ">")) return r > 0;
    if (!strcmp(t, "ge") || !strcmp(t, ">=")) return r >= 0;
    FAIL("unsupported test '%s'", t);
}

static bool affix(jctx *c, const jnode *n, const jstr *s, jv what, bool end) {
    if (what.t == JV_LIST) {
        for (size_t i = 0; i < what.u.l->n; i++)
            if (affix(c, n, s, what.u.l->v[i], end)) return true;
        return false;
    }
    const jstr *p = need_str(c, n, what, end ? "endswith" : "startswith");
    if (p->n > s->n) return false;
    return !memcmp(s->s + (end ? s->n - p->n : 0), p->s, p->n);
}

/* Python str.format with {} / {0} / {name} fields and {{ }} escapes. */
static jv format(jctx *c, const jnode *n, const jstr *s, const jv *args, size_t na, const jstr *const *kwn, const jv *kwv, size_t nk) {
    jarena *a = jctx_arena(c);
    jbuf o = {0};
    size_t auto_i = 0;
    for (size_t i = 0; i < s->n; i++) {
        char ch = s->s[i];
        if ((ch == '{' || ch == '}') && i + 1 < s->n && s->s[i + 1] == ch) {
            jb_sub(a, &o, s, i, 1);
            i++;
            continue;
        }
        if (ch == '}') FAIL("Single '}' encountered in format string");
        if (ch != '{') {
            jb_sub(a, &o, s, i, 1);
            continue;
        }
        const char *close = memchr(s->s + i, '}', s->n - i);
        if (!close) FAIL("Single '{' encountered in format string");
        size_t fl = (size_t)(close - s->s) - i - 1;
        const char *field = s->s + i + 1;
        if (memchr(field, ':', fl) || memchr(field, '!', fl) || memchr(field, '.', fl) || memchr(field, '[', fl))
            FAIL("unsupported: format field '%.*s'", (int)fl, field);
        jv v = jv_undef();
        if (!fl) {
            if (auto_i >= na) FAIL("Replacement index %zu out of range", auto_i);
            v = args[auto_i++];
        } else if (field[0] >= '0' && field[0] <= '9') {
            size_t k = (size_t)strtoul(field, NULL, 10);
            if (k >= na) FAIL("Replacement index %zu out of range", k);
            v = args[k];
        } else {
            bool found = false;
            for (size_t k = 0; k < nk; k++)
                if (kwn[k]->n == fl && !memcmp(kwn[k]->s, field, fl)) v = kwv[k], found = true;
            if (!found) FAIL("format: no argument '%.*s'", (int)fl, field);
        }
        jb_str(a, &o, jv_to_str(c, v));
        i += fl + 1;
    }
    return jv_str(jb_done(a, &o));
}

static bool all_chars(const jstr *s, int kind) {
    if (!s->n) return false;
    bool cased = false;
    for (size_t i = 0; i < s->n; i++) {
        char ch = s->s[i];
        bool dig = ch >= '0' && ch <= '9', lo = ch >= 'a' && ch <= 'z', up = ch >= 'A' && ch <= 'Z';
        switch (kind) {
        case 0: if (!dig) return false; break;
        case 1: if (!lo && !up) return false; break;
        case 2: if (!dig && !lo && !up) return false; break;
        case 3: if (up) return false; cased |= lo; break;
        case 4: if (lo) return false; cased |= up; break;
        }
    }
    return kind < 3 || cased;
}

/* Python's printf-style str % args for %s %r %d %i %%: args a tuple (its
 * items) or one value; leftover arguments are an error unless the value is a
 * list or dict (Python then takes it as a mapping and ignores it). */
jv jb_percent(jctx *c, const jnode *n, const jstr *fmt, jv args) {
    jarena *a = jctx_arena(c);
    const jv *items = &args;
    size_t na = 1, used = 0;
    if (args.t == JV_LIST && args.u.l->tuple) items = args.u.l->v, na = args.u.l->n;
    jbuf o = {0};
    for (size_t i = 0; i < fmt->n; i++) {
        if (fmt->s[i] != '%') {
            jb_sub(a, &o, fmt, i, 1);
            continue;
        }
        char k = i + 1 < fmt->n ? fmt->s[i + 1] : 0;
        i++;
        if (k == '%') {
            jb_sub(a, &o, fmt, i, 1);
            continue;
        }
        if (!strchr("srdi", k) || !k) FAIL("unsupported: %%%c in string formatting", k ? k : ' ');
        if (used >= na) FAIL("not enough arguments for format string");
        jv x = items[used++];
        if (k == 'r') jv_repr(c, &o, x);
        else if (k == 's') jb_str(a, &o, jv_to_str(c, x));
        else {
            if (x.t == JV_FLOAT) x = jv_int((int64_t)x.u.f);
            if (x.t == JV_BOOL) x = jv_int(x.u.b);
            if (x.t != JV_INT) FAIL("%%%c format: a number is required, not %s", k, jv_type_name(x));
            jb_str(a, &o, jv_to_str(c, x));
        }
    }
    if (used < na && !(args.t == JV_DICT || (args.t == JV_LIST && !args.u.l->tuple)))
        FAIL("not all arguments converted during string formatting");
    return jv_str(jb_done(a, &o));
}

jv jb_method(jctx *c, const jnode *n, jv obj, const jv *args, size_t na, const jstr *const *kwn, const jv *kwv, size_t nk, bool *found) {
    jarena *a = jctx_arena(c);
    const char *m = n->name->s;
    *found = true;
    if (obj.t == JV_DICT) {
        if (!strcmp(m, "items")) return jb_filter(c, &(jnode){.name = jstr_lit(a, "items"), .line = n->line, .col = n->col}, obj, NULL, 0, NULL, NULL, 0);
        if (!strcmp(m, "keys") || !strcmp(m, "values")) {
            jlist *l = jl_new(a, obj.u.d->n);
            for (size_t i = 0; i < obj.u.d->n; i++) jl_push(a, l, m[0] == 'k' ? jv_str(obj.u.d->k[i]) : obj.u.d->v[i]);
            return list_v(l);
        }
        if (!strcmp(m, "get")) {
            if (!na) FAIL("get expected at least 1 argument");
            jv def = na > 1 ? args[1] : jv_none();
            if (args[0].t != JV_STR) return def;
            const jv *v = jd_get(obj.u.d, args[0].u.s->s, args[0].u.s->n);
            return v ? *v : def;
        }
    }
    if (obj.t == JV_STR) {
        const jstr *s = obj.u.s;
        jv a0 = na > 0 ? args[0] : jv_none();
        if (!strcmp(m, "startswith") || !strcmp(m, "endswith")) return jv_bool(affix(c, n, s, a0, m[0] == 'e'));
        if (!strcmp(m, "strip") || !strcmp(m, "lstrip") || !strcmp(m, "rstrip")) {
            const jstr *chars = a0.t == JV_STR ? a0.u.s : NULL;
            if (a0.t != JV_STR && a0.t != JV_NONE) FAIL("%s arg must be None or str", m);
            return strip(c, s, chars, m[0] != 'r', m[0] != 'l');
        }
        if (!strcmp(m, "split") || !strcmp(m, "rsplit")) {
            jv sep = arg(args, na, 0, kwn, kwv, nk, "sep", jv_none());
            jv mx = arg(args, na, 1, kwn, kwv, nk, "maxsplit", jv_int(-1));
            return split(c, n, s, sep, mx.t == JV_INT ? mx.u.i : -1, m[0] == 'r');
        }
        if (!strcmp(m, "upper")) return map_case(c, s, CASE_UPPER);
        if (!strcmp(m, "lower")) return map_case(c, s, CASE_LOWER);
        if (!strcmp(m, "title")) return map_case(c, s, CASE_TITLE_METHOD);
        if (!strcmp(m, "capitalize")) return map_case(c, s, CASE_CAPITALIZE);
        if (!strcmp(m, "replace")) {
            if (na < 2) FAIL("replace expected at least 2 arguments");
            return replace(c, n, s, args[0], args[1], na > 2 && args[2].t == JV_INT ? args[2].u.i : -1);
        }
        if (!strcmp(m, "format")) return format(c, n, s, args, na, kwn, kwv, nk);
        if (!strcmp(m, "find") || !strcmp(m, "rfind") || !strcmp(m, "count")) {
            const jstr *d = need_str(c, n, a0, m);
            int64_t res = -1, cnt = 0;
            jcharge(c, 1 + s->n * d->n / 64);
            for (size_t i = 0; i + d->n <= s->n; i++)
                if (!memcmp(s->s + i, d->s, d->n)) {
                    if (res < 0 || m[0] == 'r') res = (int64_t)i;
                    cnt++;
                    if (d->n) i += d->n - 1;
                }
            if (m[0] == 'c') return jv_int(d->n ? cnt : (int64_t)jv_length(c, obj) + 1);
            if (res > 0) { /* a byte offset -> a code point index */
                size_t cps = 0;
                for (int64_t i = 0; i < res; i++) cps += ((unsigned char)s->s[i] & 0xC0) != 0x80;
                res = (int64_t)cps;
            }
            return jv_int(res);
        }
        if (!strcmp(m, "join")) {
            jlist *in = jv_iterate(c, a0, n->line, n->col);
            jbuf o = {0};
            for (size_t i = 0; i < in->n; i++) {
                if (i) jb_str(a, &o, s);
                jb_str(a, &o, need_str(c, n, in->v[i], "join"));
            }
            return jv_str(jb_done(a, &o));
        }
        if (!strcmp(m, "splitlines")) {
            jlist *l = jl_new(a, 0);
            size_t st = 0;
            for (size_t i = 0; i < s->n; i++)
                if (s->s[i] == '\n' || s->s[i] == '\r') {
                    jl_push(a, l, sub(c, s, st, i - st));
                    if (s->s[i] == '\r' && i + 1 < s->n && s->s[i + 1] == '\n') i++;
                    st = i + 1;
                }
            if (st < s->n) jl_push(a, l, sub(c, s, st, s->n - st));
            return list_v(l);
        }
        if (!strcmp(m, "isdigit")) return jv_bool(all_chars(s, 0));
        if (!strcmp(m, "isalpha")) return jv_bool(all_chars(s, 1));
        if (!strcmp(m, "isalnum")) return jv_bool(all_chars(s, 2));
        if (!strcmp(m, "islower")) return jv_bool(all_chars(s, 3));
        if (!strcmp(m, "isupper")) return jv_bool(all_chars(s, 4));
        if (!strcmp(m, "isspace")) {
            if (!s->n) return jv_bool(false);
            for (size_t i = 0; i < s->n;) {
                size_t l = py_space(s->s, s->n, i);
                if (!l) return jv_bool(false);
                i += l;
            }
            return jv_bool(true);
        }
        if (!strcmp(m, "removeprefix") || !strcmp(m, "removesuffix")) {
            const jstr *d = need_str(c, n, a0, m);
            bool end = m[6] == 's';
            if (!affix(c, n, s, a0, end)) return obj;
            return sub(c, s, end ? 0 : d->n, s->n - d->n);
        }
    }
    *found = false;
    return jv_undef();
}

jv jb_global(jctx *c, const jnode *n, const jv *args, size_t na, const jstr *const *kwn, const jv *kwv, size_t nk, bool *found) {
    jarena *a = jctx_arena(c);
    const char *g = n->a->name->s;
    *found = true;
    if (!strcmp(g, "raise_exception")) {
        const jstr *msg = na ? jv_to_str(c, args[0]) : jstr_lit(a, "");
        sd_err e;
        (void)e;
        jfail(c, 0, 0, "chat template raised: %s", msg->s);
    }
    if (!strcmp(g, "namespace") || !strcmp(g, "dict")) {
        jdict *d = jd_new(a, nk);
        if (na == 1 && args[0].t == JV_DICT)
            for (size_t i = 0; i < args[0].u.d->n; i++) jd_set(a, d, args[0].u.d->k[i], args[0].u.d->v[i]);
        else if (na) FAIL("%s() takes keyword arguments", g);
        for (size_t i = 0; i < nk; i++) jd_set(a, d, kwn[i], kwv[i]);
        return (jv){.t = g[0] == 'n' ? JV_NS : JV_DICT, .u.d = d};
    }
    if (!strcmp(g, "range")) {
        int64_t st = 0, en = 0, sp = 1;
        for (size_t i = 0; i < na; i++)
            if (args[i].t != JV_INT) FAIL("range() takes integers");
        if (na == 1) en = args[0].u.i;
        else if (na >= 2) st = args[0].u.i, en = args[1].u.i;
        if (na >= 3) sp = args[2].u.i;
        if (!na || na > 3 || !sp) FAIL("bad range() arguments");
        jlist *l = jl_new(a, 0);
        for (int64_t i = st; sp > 0 ? i < en : i > en; i += sp) {
            if (l->n >= 1000000) FAIL("range() too long");
            jcharge(c, 1);
            jl_push(a, l, jv_int(i));
        }
        return list_v(l);
    }
    if (!strcmp(g, "strftime_now")) {
        if (!na || args[0].t != JV_STR) FAIL("strftime_now expects a format string");
        time_t t = jctx_now(c) >= 0 ? (time_t)jctx_now(c) : time(NULL);
        struct tm tm;
        if (jctx_now(c) >= 0) gmtime_r(&t, &tm);
        else localtime_r(&t, &tm);
        char buf[256];
        size_t len = strftime(buf, sizeof buf, args[0].u.s->s, &tm);
        return jv_str(js_new(a, buf, len, PROV_DATA));
    }
    *found = false;
    return jv_undef();
}
