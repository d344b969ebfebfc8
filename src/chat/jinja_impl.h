/* Internals of the Jinja-subset interpreter (jinja.h): the arena, the values,
 * the syntax tree, and the functions the parser, evaluator and built-ins share. */
#ifndef SD_CHAT_JINJA_IMPL_H
#define SD_CHAT_JINJA_IMPL_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chat/jinja.h"

/* ---- arena: every allocation of a parse or a render, freed at once ---- */
typedef struct jarena {
    struct jchunk *head;
    size_t used, cap; /* bytes handed out, the limit */
    jmp_buf *oom;     /* longjmp target when an allocation fails or passes cap */
} jarena;

void *ja_alloc(jarena *a, size_t n); /* zeroed; never returns NULL (longjmps) */
void ja_free(jarena *a);

/* ---- values ---- */
typedef enum jtype { JV_UNDEF, JV_NONE, JV_BOOL, JV_INT, JV_FLOAT, JV_STR, JV_LIST, JV_DICT, JV_NS, JV_MACRO, JV_LOOP } jtype;

/* Provenance of a string's bytes (jinja.h): all template, all data, or per byte. */
enum { PROV_TEMPLATE = 0, PROV_DATA = 1, PROV_MIXED = 2 };

typedef struct jstr {
    size_t n;
    const char *s;       /* n bytes + NUL */
    uint8_t prov;        /* PROV_* */
    const uint8_t *bits; /* PROV_MIXED: n flags, 1 = data */
} jstr;

typedef struct jv {
    jtype t;
    union {
        bool b;
        int64_t i;
        double f;
        const jstr *s;
        struct jlist *l;
        struct jdict *d; /* JV_DICT and JV_NS */
        const struct jnode *macro;
        struct jloop *loop;
    } u;
} jv;

typedef struct jlist {
    size_t n, cap;
    jv *v;
    bool tuple; /* a Python tuple (items(), (a, b)): only repr differs */
} jlist;

typedef struct jdict {
    size_t n, cap;
    const jstr **k;
    jv *v;
    uint32_t *idx; /* open-addressing index of k (slot = i + 1), built once n passes 16 */
    size_t icap;   /* slots in idx (a power of two), 0 = none */
    jarena *a;     /* where idx grows */
} jdict;

typedef struct jloop {
    const jlist *items;
    size_t i;
    int depth;
} jloop;

/* ---- syntax tree ---- */
typedef enum jkind {
    /* expressions */
    N_LIT, N_NAME, N_ATTR, N_ITEM, N_SLICE, N_CALL, N_FILTER, N_TEST, N_NOT, N_NEG, N_POS, N_BIN, N_AND, N_OR,
    N_COND, N_LIST, N_DICT,
    /* statements */
    N_TEXT, N_OUT, N_IF, N_FOR, N_SET, N_SETBLOCK, N_MACRO, N_BREAK, N_CONTINUE
} jkind;

typedef enum jop { OP_ADD, OP_SUB, OP_MUL, OP_DIV, OP_FDIV, OP_MOD, OP_POW, OP_CAT, OP_EQ, OP_NE, OP_LT, OP_LE, OP_GT, OP_GE, OP_IN, OP_NOTIN } jop;

typedef struct jnodes {
    size_t n, cap;
    struct jnode **v;
} jnodes;

typedef struct jnode {
    jkind k;
    int line, col;
    int op;            /* jop; N_TEST: negated; N_FOR: recursive unsupported */
    const jstr *name;  /* N_NAME, N_ATTR, N_FILTER, N_TEST, N_MACRO, N_SET(BLOCK) target, N_CALL method name */
    const jstr *attr;  /* N_SET: ns attribute */
    jv lit;            /* N_LIT, N_TEXT */
    struct jnode *a, *b, *c; /* operands; N_IF: cond; N_FOR: iter (a), filter (b) */
    jnodes args;       /* call/filter/test positional args; list items; dict keys; N_FOR targets (N_NAME) */
    jnodes kwv;        /* keyword arg values; dict values; macro defaults (NULL = none) */
    const jstr **kwn;  /* keyword names; macro parameter names (in args order) */
    jnodes body, orelse; /* statement bodies */
} jnode;

struct sd_jinja {
    jarena arena;
    jnodes body;
};

/* ---- helpers shared by the evaluator and the built-ins ---- */
typedef struct jctx jctx;

const jstr *js_new(jarena *a, const char *s, size_t n, uint8_t prov);
const jstr *jstr_lit(jarena *a, const char *s); /* template-literal C string */
jv jv_str(const jstr *s);
jv jv_int(int64_t i);
jv jv_bool(bool b);
jv jv_none(void);
jv jv_undef(void);
jlist *jl_new(jarena *a, size_t cap);
void jl_push(jarena *a, jlist *l, jv v);
jdict *jd_new(jarena *a, size_t cap);
void jd_set(jarena *a, jdict *d, const jstr *k, jv v);
const jv *jd_get(const jdict *d, const char *k, size_t n);

/* Text building with provenance. */
typedef struct jbuf {
    char *s;
    uint8_t *bits;
    size_t n, cap;
    bool any_data, any_template;
} jbuf;
void jb_add(jarena *a, jbuf *b, const char *s, size_t n, uint8_t prov);
void jb_str(jarena *a, jbuf *b, const jstr *s);
void jb_sub(jarena *a, jbuf *b, const jstr *s, size_t off, size_t n); /* bytes off..off+n of s */
const jstr *jb_done(jarena *a, jbuf *b);

/* Python's str(), repr() and json.dumps of a value (data provenance unless a
 * template string passes through str() unchanged). */
const jstr *jv_to_str(jctx *c, jv v);
void jv_repr(jctx *c, jbuf *b, jv v);
typedef struct jjson_opts {
    int indent;                     /* -1 = one line */
    const char *item_sep, *key_sep; /* ", " / ": " (or "," with an indent) */
    bool ascii;                     /* ensure_ascii: non-ASCII as \uXXXX */
    bool sort_keys;
} jjson_opts;
void jv_json(jctx *c, jbuf *b, jv v, const jjson_opts *o, int level);

bool jv_truthy(jv v);
bool jv_equal(jv a, jv b);
int jv_compare(jctx *c, jv a, jv b, int line, int col);
size_t jv_length(jctx *c, jv v);
jlist *jv_iterate(jctx *c, jv v, int line, int col); /* a list of the items a for loop sees */

/* Runtime error: longjmps out of the render with "jinja LINE:COL: msg". */
/* Charges n evaluation steps (work inside a filter or method: a sort's
 * comparisons, a join's items) against the step limit. */
void jcharge(jctx *c, uint64_t n);
_Noreturn void jfail(jctx *c, int line, int col, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
jarena *jctx_arena(jctx *c);
int64_t jctx_now(jctx *c);
const char *jv_type_name(jv v);

/* Built-ins: filters, tests, methods, global functions. The *_known checks
 * let the parser refuse an unsupported name at load. */
bool jb_filter_known(const char *name);
bool jb_test_known(const char *name);
bool jb_method_known(const char *name);
bool jb_global_known(const char *name);
jv jb_filter(jctx *c, const jnode *n, jv v, const jv *args, size_t na, const jstr *const *kwn, const jv *kwv, size_t nk);
bool jb_test(jctx *c, const jnode *n, jv v, const jv *args, size_t na);
jv jb_method(jctx *c, const jnode *n, jv obj, const jv *args, size_t na, const jstr *const *kwn, const jv *kwv, size_t nk, bool *found);
jv jb_global(jctx *c, const jnode *n, const jv *args, size_t na, const jstr *const *kwn, const jv *kwv, size_t nk, bool *found);
/* Python's str % args (jinja_builtin.c). */
jv jb_percent(jctx *c, const jnode *n, const jstr *fmt, jv args);
/* Calls a macro value (the evaluator's; the filters' map() uses it too). */
jv jeval_call_macro(jctx *c, const jnode *call, const jnode *m, const jv *args, size_t na, const jstr *const *kwn,
                    const jv *kwv, size_t nk);
jv jeval_getattr(jctx *c, jv obj, const char *name, size_t n, int line, int col);
jv jeval_getitem(jctx *c, jv obj, jv key, int line, int col);

/* JSON text -> value (strings are data). NULL error text on success. */
const char *jjson_parse(jarena *a, const char *s, size_t n, jv *out);

#endif
