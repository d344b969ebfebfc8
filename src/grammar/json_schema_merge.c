/* The schema side of the JSON Schema converter: which keywords exist, $ref
 * resolution within the document, and allOf, merged into one schema so that
 * the conversion (json_schema.c) sees no allOf and no $ref with siblings.
 *
 * Merging is exact or refused: types intersect, a property in two branches
 * gets both schemas (merged), a property one branch forbids (its
 * additionalProperties false) is dropped or, if required, refused; bounds
 * and counts take the tighter; enum/const values intersect. Two different
 * patterns or formats, prefixItems in two branches, and two anyOf/oneOf
 * lists cannot be merged exactly and are refused. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/json_schema_impl.h"

#define JS_MAX_WORK 200000 /* schema nodes visited + merged: bounds $ref / allOf blow-up */

static const char *type_names[] = {"null", "boolean", "object", "array", "string", "number", "integer"};

/* ---- keywords ---- */

bool js_is_annotation(const char *k) {
    static const char *ann[] = {"title", "description", "default", "examples", "$comment", "deprecated",
                                "readOnly", "writeOnly", "$schema", "$defs", "definitions", NULL};
    for (int i = 0; ann[i]; i++)
        if (!strcmp(k, ann[i])) return true;
    return false;
}

bool js_is_supported(const char *k) {
    static const char *kw[] = {"type", "properties", "required", "additionalProperties", "enum", "const", "items",
                               "prefixItems", "minItems", "maxItems", "minLength", "maxLength", "minimum",
                               "maximum", "exclusiveMinimum", "exclusiveMaximum", "anyOf", "oneOf", "allOf",
                               "$ref", "pattern", "format", "uniqueItems", NULL};
    for (int i = 0; kw[i]; i++)
        if (!strcmp(k, kw[i])) return true;
    return false;
}

/* ---- small helpers ---- */

json_t *js_own(js_conv *c, json_t *j) {
    if (!j) { js_fail(c, SD_ERR_NOMEM, "out of memory"); return NULL; }
    if (c->nowned == c->capowned) {
        int cap = c->capowned ? c->capowned * 2 : 16;
        json_t **p = realloc(c->owned, sizeof *p * (size_t)cap);
        if (!p) { json_decref(j); js_fail(c, SD_ERR_NOMEM, "out of memory"); return NULL; }
        c->owned = p;
        c->capowned = cap;
    }
    c->owned[c->nowned++] = j;
    return j;
}

bool js_bump(js_conv *c) {
    if (++c->work > JS_MAX_WORK) {
        js_fail(c, SD_ERR_FORMAT, "the schema expands beyond %d steps (runaway $ref / allOf expansion)", JS_MAX_WORK);
        return false;
    }
    return js_ok(c);
}

int js_type_mask(js_conv *c, json_t *t) {
    if (!t) return T_ALL;
    int m = 0;
    json_t *one;
    size_t i;
    json_t *arr = json_is_array(t) ? t : NULL;
    size_t n = arr ? json_array_size(arr) : 1;
    for (i = 0; i < n; i++) {
        one = arr ? json_array_get(arr, i) : t;
        const char *s = json_string_value(one);
        int bit = 0;
        for (int k = 0; s && k < 7; k++)
            if (!strcmp(s, type_names[k])) bit = 1 << k;
        if (!bit) { js_fail(c, SD_ERR_FORMAT, "type: unknown type %s", s ? s : "(not a string)"); return 0; }
        m |= bit;
    }
    if (!m) js_fail(c, SD_ERR_FORMAT, "type: an empty list");
    return m;
}

int js_value_type(const json_t *v) {
    switch (json_typeof(v)) {
    case JSON_NULL: return T_NULL;
    case JSON_TRUE: case JSON_FALSE: return T_BOOL;
    case JSON_OBJECT: return T_OBJ;
    case JSON_ARRAY: return T_ARR;
    case JSON_STRING: return T_STR;
    case JSON_INTEGER: return T_INT | T_NUM;
    case JSON_REAL: return json_real_value(v) == floor(json_real_value(v)) ? T_INT | T_NUM : T_NUM;
    }
    return 0;
}

json_t *js_mask_to_type(int m) {
    json_t *a = json_array();
    for (int k = 0; a && k < 7; k++)
        if (m & (1 << k)) json_array_append_new(a, json_string(type_names[k]));
    return a;
}

/* ---- $ref ---- */

json_t *js_resolve(js_conv *c, const char *ref) {
    if (ref[0] != '#') { js_fail(c, SD_ERR_UNSUPPORTED, "$ref: only references within the document (#/...) are supported, not %.80s", ref); return NULL; }
    json_t *cur = c->root;
    const char *p = ref + 1;
    if (*p && *p != '/') { js_fail(c, SD_ERR_UNSUPPORTED, "$ref: anchors (%.80s) are not supported", ref); return NULL; }
    while (*p == '/') {
        p++;
        char tok[256];
        size_t k = 0;
        while (*p && *p != '/' && k < sizeof tok - 1) {
            if (p[0] == '~' && p[1] == '1') { tok[k++] = '/'; p += 2; }
            else if (p[0] == '~' && p[1] == '0') { tok[k++] = '~'; p += 2; }
            else tok[k++] = *p++;
        }
        tok[k] = 0;
        if (json_is_object(cur)) cur = json_object_get(cur, tok);
        else if (json_is_array(cur)) cur = json_array_get(cur, (size_t)strtoul(tok, NULL, 10));
        else cur = NULL;
        if (!cur) { js_fail(c, SD_ERR_FORMAT, "$ref: %.80s points nowhere", ref); return NULL; }
    }
    if (!json_is_object(cur) && !json_is_boolean(cur)) { js_fail(c, SD_ERR_FORMAT, "$ref: %.80s is not a schema", ref); return NULL; }
    return cur;
}

/* ---- allOf: merging schemas ---- */

/* The schema with its own $ref and allOf folded in (a new object when it had them). */
json_t *js_flatten(js_conv *c, json_t *s) {
    if (!js_bump(c)) return NULL;
    if (json_is_true(s)) return js_own(c, json_object());
    if (json_is_false(s)) { js_fail(c, SD_ERR_UNSUPPORTED, "allOf: a false schema (nothing is valid)"); return NULL; }
    if (!json_is_object(s)) { js_fail(c, SD_ERR_FORMAT, "a schema must be an object or a boolean"); return NULL; }
    json_t *ref = json_object_get(s, "$ref"), *all = json_object_get(s, "allOf");
    if (!ref && !all) return s;
    if (c->depth >= SD_JSON_SCHEMA_MAX_DEPTH) { js_fail(c, SD_ERR_FORMAT, "schemas nested deeper than %d", SD_JSON_SCHEMA_MAX_DEPTH); return NULL; }
    c->depth++;
    json_t *rest = js_own(c, json_copy(s));
    json_t *acc = NULL;
    if (rest) {
        json_object_del(rest, "$ref");
        json_object_del(rest, "allOf");
        acc = rest;
    }
    if (acc && ref) {
        if (!json_is_string(ref)) { js_fail(c, SD_ERR_FORMAT, "$ref: not a string"); acc = NULL; }
        json_t *t = acc ? js_resolve(c, json_string_value(ref)) : NULL;
        t = t ? js_flatten(c, t) : NULL;
        acc = t ? js_merge(c, acc, t) : NULL;
    }
    if (acc && all) {
        if (!json_is_array(all) || !json_array_size(all)) { js_fail(c, SD_ERR_FORMAT, "allOf: not a non-empty array"); acc = NULL; }
        for (size_t i = 0; acc && i < json_array_size(all); i++) {
            json_t *t = js_flatten(c, json_array_get(all, i));
            acc = t ? js_merge(c, acc, t) : NULL;
        }
    }
    c->depth--;
    return acc;
}

bool js_num_of(json_t *v, double *d) {
    if (!json_is_number(v)) return false;
    *d = json_number_value(v);
    return true;
}

/* The tighter of two bounds: lower (sign +1) or upper (sign -1). */
static void merge_bound(json_t *out, json_t *a, json_t *b, const char *incl, const char *excl, int sign) {
    double best = 0;
    bool have = false, best_excl = false;
    json_t *best_v = NULL; /* the original value: integers beyond 2^53 stay exact */
    json_t *srcs[2] = {a, b};
    for (int s = 0; s < 2; s++) {
        double v;
        for (int e = 0; e < 2; e++) {
            if (!js_num_of(json_object_get(srcs[s], e ? excl : incl), &v)) continue;
            bool tighter = !have || (sign > 0 ? v > best : v < best) || (v == best && e && !best_excl);
            if (tighter) { best = v; best_excl = e; have = true; best_v = json_object_get(srcs[s], e ? excl : incl); }
        }
    }
    json_object_del(out, incl);
    json_object_del(out, excl);
    if (have) json_object_set(out, best_excl ? excl : incl, best_v);
}

static void merge_count(json_t *out, json_t *a, json_t *b, const char *k, bool take_max) {
    json_t *x = json_object_get(a, k), *y = json_object_get(b, k);
    if (!x || !y) return;
    json_int_t u = json_integer_value(x), v = json_integer_value(y);
    json_object_set_new(out, k, json_integer(take_max ? (u > v ? u : v) : (u < v ? u : v)));
}

static json_t *enum_list(json_t *s) {
    json_t *e = json_object_get(s, "enum");
    if (e) return json_incref(e);
    json_t *k = json_object_get(s, "const");
    if (!k) return NULL;
    json_t *a = json_array();
    if (a) json_array_append(a, k);
    return a;
}

/* A property's schema in one side of a merge: its own, else what that side's
 * additionalProperties says (NULL: unconstrained; json false: forbidden). */
static json_t *prop_of(json_t *s, const char *k) {
    json_t *p = json_object_get(json_object_get(s, "properties"), k);
    if (p) return p;
    return json_object_get(s, "additionalProperties");
}

static json_t *merge_props(js_conv *c, json_t *out, json_t *a, json_t *b) {
    json_t *props = json_object(), *req = json_array();
    if (!js_own(c, props) || !js_own(c, req)) return NULL;
    json_t *sides[2] = {a, b};
    for (int s = 0; s < 2; s++) {
        json_t *v;
        size_t i;
        json_array_foreach(json_object_get(sides[s], "required"), i, v) {
            bool dup = false;
            size_t j;
            json_t *w;
            json_array_foreach(req, j, w) dup |= json_equal(v, w);
            if (!dup) json_array_append(req, v);
        }
    }
    for (int s = 0; s < 2 && js_ok(c); s++) {
        const char *k;
        json_t *v;
        json_object_foreach(json_object_get(sides[s], "properties"), k, v) {
            if (json_object_get(props, k) || !js_ok(c)) continue;
            json_t *x = prop_of(a, k), *y = prop_of(b, k), *m;
            bool forbidden = json_is_false(x) || json_is_false(y);
            if (forbidden) {
                size_t i;
                json_t *r;
                json_array_foreach(req, i, r)
                    if (json_is_string(r) && !strcmp(json_string_value(r), k)) {
                        js_fail(c, SD_ERR_UNSUPPORTED, "allOf: property \"%.60s\" is required by one branch and forbidden by another", k);
                        return NULL;
                    }
                json_object_set(props, k, json_false());
                continue;
            }
            if (x && y && !json_is_true(x) && !json_is_true(y)) {
                json_t *fx = js_flatten(c, x), *fy = fx ? js_flatten(c, y) : NULL;
                m = fy ? js_merge(c, fx, fy) : NULL;
            } else
                m = x && !json_is_true(x) ? x : y ? y : json_true();
            if (!m) return NULL;
            json_object_set(props, k, m);
        }
    }
    json_t *xa = json_object_get(a, "additionalProperties"), *xb = json_object_get(b, "additionalProperties");
    if (xa || xb) {
        json_t *m;
        if (json_is_false(xa) || json_is_false(xb)) m = json_false();
        else if (xa && xb && !json_is_true(xa) && !json_is_true(xb)) {
            json_t *fx = js_flatten(c, xa), *fy = fx ? js_flatten(c, xb) : NULL;
            m = fy ? js_merge(c, fx, fy) : NULL;
        } else m = xa && !json_is_true(xa) ? xa : xb;
        if (!m) return NULL;
        json_object_set(out, "additionalProperties", m);
    }
    if (json_object_size(props)) json_object_set(out, "properties", props);
    if (json_array_size(req)) json_object_set(out, "required", req);
    return out;
}

json_t *js_merge(js_conv *c, json_t *a, json_t *b) {
    if (!js_bump(c)) return NULL;
    const char *k;
    json_t *v;
    json_t *sides[2] = {a, b};
    for (int s = 0; s < 2; s++)
        json_object_foreach(sides[s], k, v) {
            if (!js_is_annotation(k) && !js_is_supported(k)) {
                js_fail(c, SD_ERR_UNSUPPORTED, "unsupported keyword \"%.60s\"", k);
                return NULL;
            }
        }
    json_t *out = js_own(c, json_object());
    if (!out) return NULL;
    /* type */
    json_t *ta = json_object_get(a, "type"), *tb = json_object_get(b, "type");
    if (ta || tb) {
        int ma = js_type_mask(c, ta), mb = js_type_mask(c, tb);
        if (ma & T_NUM) ma |= T_INT;
        if (mb & T_NUM) mb |= T_INT;
        int m = ma & mb;
        if (!js_ok(c)) return NULL;
        if (!m) { js_fail(c, SD_ERR_UNSUPPORTED, "allOf: the branches' types do not intersect"); return NULL; }
        if (m & T_NUM) m &= ~T_INT;
        json_object_set_new(out, "type", js_mask_to_type(m));
    }
    /* objects */
    if (!merge_props(c, out, a, b)) return NULL;
    /* arrays */
    json_t *ia = json_object_get(a, "items"), *ib = json_object_get(b, "items");
    if (json_object_get(a, "prefixItems") && json_object_get(b, "prefixItems")) {
        js_fail(c, SD_ERR_UNSUPPORTED, "allOf: prefixItems in two branches cannot be merged");
        return NULL;
    }
    json_t *pi = json_object_get(a, "prefixItems") ? json_object_get(a, "prefixItems") : json_object_get(b, "prefixItems");
    if (pi && ((json_object_get(a, "prefixItems") && ib) || (json_object_get(b, "prefixItems") && ia))) {
        js_fail(c, SD_ERR_UNSUPPORTED, "allOf: prefixItems in one branch and items in another cannot be merged");
        return NULL;
    }
    if (pi) json_object_set(out, "prefixItems", pi);
    if (ia && ib) {
        json_t *m;
        if (json_is_false(ia) || json_is_false(ib)) m = json_false();
        else if (json_is_true(ia)) m = ib;
        else if (json_is_true(ib)) m = ia;
        else {
            json_t *fx = js_flatten(c, ia), *fy = fx ? js_flatten(c, ib) : NULL;
            m = fy ? js_merge(c, fx, fy) : NULL;
        }
        if (!m) return NULL;
        json_object_set(out, "items", m);
    } else if (ia || ib) json_object_set(out, "items", ia ? ia : ib);
    /* counts and bounds */
    static const char *counts[] = {"minItems", "maxItems", "minLength", "maxLength"};
    for (int i = 0; i < 4; i++) {
        json_t *x = json_object_get(a, counts[i]), *y = json_object_get(b, counts[i]);
        if (x || y) json_object_set(out, counts[i], x ? x : y);
        merge_count(out, a, b, counts[i], i % 2 == 0);
    }
    merge_bound(out, a, b, "minimum", "exclusiveMinimum", +1);
    merge_bound(out, a, b, "maximum", "exclusiveMaximum", -1);
    /* strings */
    static const char *same[] = {"pattern", "format", "uniqueItems"};
    for (int i = 0; i < 3; i++) {
        json_t *x = json_object_get(a, same[i]), *y = json_object_get(b, same[i]);
        if (x && y && !json_equal(x, y)) {
            js_fail(c, SD_ERR_UNSUPPORTED, "allOf: two different \"%s\" values cannot be merged", same[i]);
            return NULL;
        }
        if (x || y) json_object_set(out, same[i], x ? x : y);
    }
    /* enum / const: the values in both */
    json_t *ea = enum_list(a), *eb = enum_list(b);
    if (ea || eb) {
        json_t *e = json_array();
        size_t i, j;
        json_t *x, *y;
        if (ea && eb) {
            json_array_foreach(ea, i, x) {
                bool in = false;
                json_array_foreach(eb, j, y) in |= json_equal(x, y);
                if (in) json_array_append(e, x);
            }
        } else
            json_array_extend(e, ea ? ea : eb);
        json_decref(ea);
        json_decref(eb);
        if (!js_own(c, e)) return NULL;
        if (!json_array_size(e)) { js_fail(c, SD_ERR_UNSUPPORTED, "allOf: the branches' enum/const values do not intersect"); return NULL; }
        json_object_set(out, "enum", e);
    }
    /* anyOf / oneOf: carried (conversion distributes the siblings) */
    int combos = 0;
    static const char *comb[] = {"anyOf", "oneOf"};
    for (int s = 0; s < 2; s++)
        for (int i = 0; i < 2; i++) {
            json_t *x = json_object_get(sides[s], comb[i]);
            if (!x) continue;
            if (combos++) { js_fail(c, SD_ERR_UNSUPPORTED, "allOf: two anyOf/oneOf lists cannot be merged"); return NULL; }
            json_object_set(out, comb[i], x);
        }
    return out;
}

