/* Internals of the JSON Schema -> GBNF converter (json_schema*.c): the
 * grammar being built, rule by rule, with what the checks for hostile
 * schemas need to know about each rule.
 *
 * Each rule is a list of alternatives. For every alternative the builder
 * records the rules it must pass through (mandatory refs: the rule derives a
 * finite string only if they do) and the rules it may start with before
 * consuming a byte (left refs: a cycle of them is left recursion, a $ref
 * cycle with no structure between). */
#ifndef SD_GRAMMAR_JSON_SCHEMA_IMPL_H
#define SD_GRAMMAR_JSON_SCHEMA_IMPL_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "grammar/json_schema.h"

typedef struct js_ints {
    int *v;
    int n, cap;
} js_ints;

typedef struct js_alt {
    js_ints mand; /* rules this alternative always passes through */
    js_ints left; /* rules it may begin with, before any byte */
    bool open;    /* nothing mandatory emitted yet: refs are still at the left edge */
} js_alt;

typedef struct js_rule {
    char *name;
    sd_strbuf body; /* the GBNF right-hand side */
    js_alt *alts;
    int nalts, capalts;
    char *where; /* JSON pointer of the schema the rule came from, for errors */
} js_rule;

/* Shared rules, defined on first use. */
enum js_common {
    JS_WS, JS_VALUE, JS_OBJECT, JS_ARRAY, JS_STRING, JS_CHAR, JS_KEYCHAR, JS_NUMBER, JS_INTEGER,
    JS_BOOLEAN, JS_NULL, JS_HEX, JS_DATEBODY, JS_TIMEBODY, JS_DATE, JS_TIME, JS_DATETIME, JS_UUID, JS_NCOMMON
};

typedef struct js_memo {
    const json_t *schema;
    int rule;
} js_memo;

typedef struct js_conv {
    json_t *root;
    bool strict;
    js_rule *rules;
    int nrules, caprules;
    js_memo *memo;
    int nmemo, capmemo;
    json_t **owned; /* schemas built by merging, kept alive until the end */
    int nowned, capowned;
    sd_strbuf path; /* JSON pointer of the schema being converted */
    sd_err *err;
    sd_status status; /* first failure; SD_OK while all is well */
    size_t work;      /* schema nodes visited and merged: bounds runaway expansion */
    int depth;
    int common[JS_NCOMMON]; /* rule ids, -1 until used */
} js_conv;

/* Type sets: one bit per JSON Schema type name. */
enum { T_NULL = 1, T_BOOL = 2, T_OBJ = 4, T_ARR = 8, T_STR = 16, T_NUM = 32, T_INT = 64, T_ALL = 127 };

/* The schema side (json_schema_merge.c). Keywords: annotations are ignored,
 * supported ones converted, every other refused by name. */
bool js_is_annotation(const char *k);
bool js_is_supported(const char *k);
/* Keeps a schema built by merging alive until the conversion ends (NULL in,
 * or no memory: fails). Returns j. */
json_t *js_own(js_conv *c, json_t *j);
/* Counts one step of work; false (after js_fail) past the bound. */
bool js_bump(js_conv *c);
/* The type set of a "type" value (NULL: every type); 0 after js_fail. */
int js_type_mask(js_conv *c, json_t *t);
/* The type set of a JSON value (an integral real is also an integer). */
int js_value_type(const json_t *v);
json_t *js_mask_to_type(int m);
bool js_num_of(json_t *v, double *d);
/* The schema a "#..." reference points to, NULL after js_fail. */
json_t *js_resolve(js_conv *c, const char *ref);
/* The schema with its own $ref and allOf merged in (s itself when it has
 * neither); NULL after js_fail. */
json_t *js_flatten(js_conv *c, json_t *s);
/* A new schema that holds exactly when both a and b do (both flattened). */
json_t *js_merge(js_conv *c, json_t *a, json_t *b);

/* Records the first failure (with the current JSON pointer) and returns -1. */
int js_fail(js_conv *c, sd_status code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
bool js_ok(const js_conv *c);

/* Rule building: js_rule_new gives a fresh rule named after hint (made
 * unique); js_alt opens its next alternative; js_t appends GBNF text that
 * always consumes at least one byte; js_o appends text that may match empty
 * (and names only shared rules); js_ref appends a reference to a rule. */
int js_rule_new(js_conv *c, const char *hint);
void js_alt_open(js_conv *c, int r);
void js_t(js_conv *c, int r, const char *text);
void js_o(js_conv *c, int r, const char *text);
void js_ref(js_conv *c, int r, int target, bool mandatory);
/* Records that the current alternative passes through target, whose name
 * the text already given holds (no text appended). */
void js_need(js_conv *c, int r, int target);
/* A GBNF string literal of n bytes (a mandatory terminal when n > 0). */
void js_lit(js_conv *c, int r, const char *bytes, size_t n);
/* The name of a shared rule, defining it on first use. */
const char *js_common(js_conv *c, enum js_common which);

/* Appends s as a GBNF string literal body, quotes included. */
void js_gbnf_literal(sd_strbuf *out, const char *bytes, size_t n);
/* Appends the canonical JSON spelling of a string (what Python's
 * json.dumps(ensure_ascii=False) writes), quotes included. */
void js_json_string(sd_strbuf *out, const char *s, size_t n);
/* Appends the canonical JSON spelling of a number (Python's repr of a float:
 * the shortest digits that round-trip). */
void js_json_real(sd_strbuf *out, double v);

/* Integer ranges (json_schema_range.c): appends a GBNF expression (in
 * parentheses) for the canonical decimal integers in [lo, hi]; has_lo/has_hi
 * false mean unbounded. |bounds| <= JS_INT_BOUND. */
#define JS_INT_BOUND 1000000000000000000LL
void js_int_range(sd_strbuf *out, bool has_lo, int64_t lo, bool has_hi, int64_t hi);
/* A GBNF expression for plain decimal numbers (no exponent) x with
 * lo <(=) x <(=) hi, the bounds integers (has_* false: unbounded). Returns
 * false when no number fits. */
bool js_num_range(sd_strbuf *out, bool has_lo, int64_t lo, bool lo_excl, bool has_hi, int64_t hi, bool hi_excl);

/* Patterns (json_schema_regex.c): defines rule r as the JSON strings (quotes
 * included) that an ECMA-262 regex search for pattern finds a match in.
 * Returns false (after js_fail) for what the subset does not cover. */
bool js_pattern(js_conv *c, int r, const char *pattern);
/* The string-body units (canonical spellings) of the code points in the
 * sorted, disjoint ranges lo[i]..hi[i], as one GBNF group. */
void js_charset_units(sd_strbuf *out, const uint32_t *lo, const uint32_t *hi, int n);

#endif
