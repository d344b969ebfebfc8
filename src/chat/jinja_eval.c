/* The Jinja evaluator: runs a parsed template (jinja_parse.c) over a context
 * of values, writing text with provenance (jinja.h). Scoping follows jinja2:
 * {% if %} opens no scope; each for-loop iteration and each macro call does
 * (a `set` inside them does not leak out, hence namespace()); a macro sees
 * the template's top-level variables as they are when it is called. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/jinja_impl.h"

typedef struct frame {
    struct frame *parent;
    jdict *vars;
} frame;

struct jctx {
    jarena a;
    jmp_buf fail;
    sd_err *err;
    sd_status code;
    sd_jinja_limits lim;
    uint64_t steps;
    int depth;
    int64_t now;
    frame *root, *cur;
    jbuf *out;
};

enum { FLOW_NEXT, FLOW_BREAK, FLOW_CONTINUE };

jarena *jctx_arena(jctx *c) { return &c->a; }
int64_t jctx_now(jctx *c) { return c->now; }

_Noreturn void jfail(jctx *c, int line, int col, const char *fmt, ...) {
    char m[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    if (line) sd_err_set(c->err, SD_ERR_ARG, "jinja %d:%d: %s", line, col, m);
    else sd_err_set(c->err, SD_ERR_ARG, "jinja: %s", m);
    c->code = SD_ERR_ARG;
    longjmp(c->fail, 1);
}

void jcharge(jctx *c, uint64_t n) {
    c->steps += n;
    if (c->steps > c->lim.max_steps) jfail(c, 0, 0, "template ran more than %llu steps", (unsigned long long)c->lim.max_steps);
}

static void step(jctx *c, const jnode *n) {
    if (++c->steps > c->lim.max_steps)
        jfail(c, n->line, n->col, "template ran more than %llu steps", (unsigned long long)c->lim.max_steps);
}

static void emit(jctx *c, const jstr *s, const jnode *n) {
    jb_str(&c->a, c->out, s);
    if (c->out->n > c->lim.max_output) jfail(c, n->line, n->col, "template output passed %zu bytes", c->lim.max_output);
}

/* ---- variables ---- */
static const jv *lookup(jctx *c, const jstr *name) {
    for (frame *f = c->cur; f; f = f->parent) {
        const jv *v = jd_get(f->vars, name->s, name->n);
        if (v) return v;
    }
    return NULL;
}

static frame *push_frame(jctx *c, frame *parent) {
    frame *f = ja_alloc(&c->a, sizeof *f);
    f->parent = parent;
    f->vars = jd_new(&c->a, 0);
    return f;
}

static void set_var(jctx *c, const jstr *name, jv v) { jd_set(&c->a, c->cur->vars, name, v); }

/* ---- access ---- */
static jv loop_attr(jctx *c, const jloop *l, const char *name, int line, int col) {
    size_t n = l->items->n, i = l->i;
    if (!strcmp(name, "index")) return jv_int((int64_t)i + 1);
    if (!strcmp(name, "index0")) return jv_int((int64_t)i);
    if (!strcmp(name, "revindex")) return jv_int((int64_t)(n - i));
    if (!strcmp(name, "revindex0")) return jv_int((int64_t)(n - i - 1));
    if (!strcmp(name, "first")) return jv_bool(i == 0);
    if (!strcmp(name, "last")) return jv_bool(i + 1 == n);
    if (!strcmp(name, "length")) return jv_int((int64_t)n);
    if (!strcmp(name, "previtem")) return i ? l->items->v[i - 1] : jv_undef();
    if (!strcmp(name, "nextitem")) return i + 1 < n ? l->items->v[i + 1] : jv_undef();
    if (!strcmp(name, "depth")) return jv_int(l->depth);
    if (!strcmp(name, "depth0")) return jv_int(l->depth - 1);
    (void)c, (void)line, (void)col;
    return jv_undef();
}

jv jeval_getattr(jctx *c, jv obj, const char *name, size_t n, int line, int col) {
    switch (obj.t) {
    case JV_UNDEF: jfail(c, line, col, "'%.*s' of an undefined value", (int)n, name);
    case JV_DICT:
    case JV_NS: {
        const jv *v = jd_get(obj.u.d, name, n);
        return v ? *v : jv_undef();
    }
    case JV_LOOP: return loop_attr(c, obj.u.loop, name, line, col);
    default: return jv_undef();
    }
}

/* Python index i into a sequence of n: negative counts from the end. */
static bool norm_index(int64_t i, size_t n, size_t *out) {
    if (i < 0) i += (int64_t)n;
    if (i < 0 || (uint64_t)i >= n) return false;
    *out = (size_t)i;
    return true;
}

/* Byte offsets of each code point of s (n_cp + 1 entries). */
static size_t *cp_offsets(jctx *c, const jstr *s, size_t *n_cp) {
    size_t *off = ja_alloc(&c->a, (s->n + 1) * sizeof *off), k = 0;
    for (size_t i = 0; i < s->n; i++)
        if (((unsigned char)s->s[i] & 0xC0) != 0x80) off[k++] = i;
    off[k] = s->n;
    *n_cp = k;
    return off;
}

jv jeval_getitem(jctx *c, jv obj, jv key, int line, int col) {
    switch (obj.t) {
    case JV_UNDEF: jfail(c, line, col, "subscript of an undefined value");
    case JV_DICT:
    case JV_NS:
        if (key.t == JV_STR) {
            const jv *v = jd_get(obj.u.d, key.u.s->s, key.u.s->n);
            return v ? *v : jv_undef();
        }
        return jv_undef();
    case JV_LIST: {
        size_t i;
        if ((key.t == JV_INT || key.t == JV_BOOL) && norm_index(key.t == JV_INT ? key.u.i : key.u.b, obj.u.l->n, &i))
            return obj.u.l->v[i];
        return jv_undef();
    }
    case JV_STR: {
        size_t ncp, i;
        if (key.t != JV_INT) return jv_undef();
        size_t *off = cp_offsets(c, obj.u.s, &ncp);
        if (!norm_index(key.u.i, ncp, &i)) return jv_undef();
        jbuf b = {0};
        jb_sub(&c->a, &b, obj.u.s, off[i], off[i + 1] - off[i]);
        return jv_str(jb_done(&c->a, &b));
    }
    case JV_LOOP:
        if (key.t == JV_STR) return loop_attr(c, obj.u.loop, key.u.s->s, line, col);
        return jv_undef();
    default: return jv_undef();
    }
}

static int64_t slice_bound(jctx *c, jv v, int64_t n, int64_t step, bool start, const jnode *at) {
    if (v.t == JV_NONE || v.t == JV_UNDEF) return step > 0 ? (start ? 0 : n) : (start ? n - 1 : -1);
    if (v.t != JV_INT) jfail(c, at->line, at->col, "slice indices must be integers");
    int64_t i = v.u.i;
    if (i < 0) {
        i += n;
        if (i < 0) i = step > 0 ? 0 : -1;
    } else if (i >= n) i = step > 0 ? n : n - 1;
    return i;
}

static jv eval(jctx *c, const jnode *n);

static jv eval_slice(jctx *c, const jnode *n) {
    jv obj = eval(c, n->a);
    jv st = n->b ? eval(c, n->b) : jv_none(), en = n->c ? eval(c, n->c) : jv_none();
    jv sp = n->kwv.n ? eval(c, n->kwv.v[0]) : jv_none();
    int64_t stepv = 1;
    if (sp.t == JV_INT) stepv = sp.u.i;
    else if (sp.t != JV_NONE) jfail(c, n->line, n->col, "slice step must be an integer");
    if (stepv == 0) jfail(c, n->line, n->col, "slice step cannot be zero");
    size_t len, *off = NULL;
    if (obj.t == JV_LIST) len = obj.u.l->n;
    else if (obj.t == JV_STR) off = cp_offsets(c, obj.u.s, &len);
    else if (obj.t == JV_UNDEF) jfail(c, n->line, n->col, "slice of an undefined value");
    else return jv_undef();
    int64_t a = slice_bound(c, st, (int64_t)len, stepv, true, n), b = slice_bound(c, en, (int64_t)len, stepv, false, n);
    jlist *l = obj.t == JV_LIST ? jl_new(&c->a, 0) : NULL;
    jbuf sb = {0};
    jcharge(c, len);
    for (int64_t i = a; stepv > 0 ? i < b : i > b; i += stepv) {
        if (l) jl_push(&c->a, l, obj.u.l->v[i]);
        else jb_sub(&c->a, &sb, obj.u.s, off[i], off[i + 1] - off[i]);
    }
    if (l) return (jv){.t = JV_LIST, .u.l = l};
    const jstr *r = jb_done(&c->a, &sb);
    return jv_str(r);
}

/* ---- operators ---- */
static bool isnum(jv v) { return v.t == JV_INT || v.t == JV_FLOAT || v.t == JV_BOOL; }
static double fnum(jv v) { return v.t == JV_FLOAT ? v.u.f : v.t == JV_INT ? (double)v.u.i : v.u.b; }
static int64_t inum(jv v) { return v.t == JV_INT ? v.u.i : v.u.b; }

static jv concat_str(jctx *c, const jstr *a, const jstr *b) {
    jbuf out = {0};
    jb_str(&c->a, &out, a);
    jb_str(&c->a, &out, b);
    return jv_str(jb_done(&c->a, &out));
}

static jv repeat(jctx *c, jv seq, int64_t k) {
    if (k < 0) k = 0;
    if (seq.t == JV_STR) {
        if (k && seq.u.s->n * (uint64_t)k > c->lim.max_output) jfail(c, 0, 0, "string repetition too large");
        jbuf b = {0};
        for (int64_t i = 0; i < k; i++) jb_str(&c->a, &b, seq.u.s);
        return jv_str(jb_done(&c->a, &b));
    }
    if (k && seq.u.l->n * (uint64_t)k > c->lim.max_output) jfail(c, 0, 0, "list repetition too large");
    jlist *l = jl_new(&c->a, 0);
    for (int64_t i = 0; i < k; i++)
        for (size_t j = 0; j < seq.u.l->n; j++) jl_push(&c->a, l, seq.u.l->v[j]);
    return (jv){.t = JV_LIST, .u.l = l};
}

static bool contains(jctx *c, jv hay, jv needle, const jnode *n) {
    switch (hay.t) {
    case JV_UNDEF: return false;
    case JV_STR:
        if (needle.t != JV_STR) jfail(c, n->line, n->col, "'in <string>' requires string as left operand");
        if (!needle.u.s->n) return true;
        jcharge(c, 1 + hay.u.s->n * needle.u.s->n / 64);
        for (size_t i = 0; i + needle.u.s->n <= hay.u.s->n; i++)
            if (!memcmp(hay.u.s->s + i, needle.u.s->s, needle.u.s->n)) return true;
        return false;
    case JV_LIST:
        jcharge(c, hay.u.l->n);
        for (size_t i = 0; i < hay.u.l->n; i++)
            if (jv_equal(hay.u.l->v[i], needle)) return true;
        return false;
    case JV_DICT:
    case JV_NS: return needle.t == JV_STR && jd_get(hay.u.d, needle.u.s->s, needle.u.s->n);
    default: jfail(c, n->line, n->col, "argument of type '%s' is not iterable", jv_type_name(hay));
    }
}

static jv arith(jctx *c, const jnode *n, jv a, jv b) {
    int op = n->op;
    if (op == OP_ADD && a.t == JV_STR && b.t == JV_STR) return concat_str(c, a.u.s, b.u.s);
    if (op == OP_ADD && a.t == JV_LIST && b.t == JV_LIST) {
        jlist *l = jl_new(&c->a, a.u.l->n + b.u.l->n);
        for (size_t i = 0; i < a.u.l->n; i++) jl_push(&c->a, l, a.u.l->v[i]);
        for (size_t i = 0; i < b.u.l->n; i++) jl_push(&c->a, l, b.u.l->v[i]);
        return (jv){.t = JV_LIST, .u.l = l};
    }
    if (op == OP_MUL && (a.t == JV_STR || a.t == JV_LIST) && (b.t == JV_INT || b.t == JV_BOOL)) return repeat(c, a, inum(b));
    if (op == OP_MUL && (b.t == JV_STR || b.t == JV_LIST) && (a.t == JV_INT || a.t == JV_BOOL)) return repeat(c, b, inum(a));
    if (!isnum(a) || !isnum(b)) {
        static const char *const names[] = {"+", "-", "*", "/", "//", "%", "**"};
        if (a.t == JV_UNDEF || b.t == JV_UNDEF) jfail(c, n->line, n->col, "undefined value in '%s'", names[op]);
        jfail(c, n->line, n->col, "unsupported operand type(s) for %s: '%s' and '%s'", names[op], jv_type_name(a),
              jv_type_name(b));
    }
    bool ints = a.t != JV_FLOAT && b.t != JV_FLOAT;
    if (ints && op != OP_DIV) {
        int64_t x = inum(a), y = inum(b), r;
        switch (op) {
        case OP_ADD: if (__builtin_add_overflow(x, y, &r)) goto big; return jv_int(r);
        case OP_SUB: if (__builtin_sub_overflow(x, y, &r)) goto big; return jv_int(r);
        case OP_MUL: if (__builtin_mul_overflow(x, y, &r)) goto big; return jv_int(r);
        case OP_FDIV:
        case OP_MOD:
            if (!y) jfail(c, n->line, n->col, "integer division or modulo by zero");
            if (x == INT64_MIN && y == -1) goto big;
            r = x / y;
            if ((x % y) && ((x < 0) != (y < 0))) r--;
            return jv_int(op == OP_FDIV ? r : x - r * y);
        case OP_POW:
            if (y < 0) return (jv){.t = JV_FLOAT, .u.f = pow((double)x, (double)y)};
            r = 1;
            for (int64_t i = 0; i < y; i++)
                if (__builtin_mul_overflow(r, x, &r)) goto big;
            return jv_int(r);
        }
    big:
        jfail(c, n->line, n->col, "integer overflow");
    }
    double x = fnum(a), y = fnum(b);
    switch (op) {
    case OP_ADD: return (jv){.t = JV_FLOAT, .u.f = x + y};
    case OP_SUB: return (jv){.t = JV_FLOAT, .u.f = x - y};
    case OP_MUL: return (jv){.t = JV_FLOAT, .u.f = x * y};
    case OP_DIV:
        if (y == 0) jfail(c, n->line, n->col, "division by zero");
        return (jv){.t = JV_FLOAT, .u.f = x / y};
    case OP_FDIV:
        if (y == 0) jfail(c, n->line, n->col, "float floor division by zero");
        return (jv){.t = JV_FLOAT, .u.f = floor(x / y)};
    case OP_MOD: {
        if (y == 0) jfail(c, n->line, n->col, "float modulo");
        double r = fmod(x, y);
        if (r != 0 && ((r < 0) != (y < 0))) r += y;
        return (jv){.t = JV_FLOAT, .u.f = r};
    }
    default: return (jv){.t = JV_FLOAT, .u.f = pow(x, y)};
    }
}

static jv binop(jctx *c, const jnode *n) {
    jv a = eval(c, n->a), b = eval(c, n->b);
    switch (n->op) {
    case OP_CAT: return concat_str(c, jv_to_str(c, a), jv_to_str(c, b));
    case OP_EQ: return jv_bool(jv_equal(a, b));
    case OP_NE: return jv_bool(!jv_equal(a, b));
    case OP_LT: return jv_bool(jv_compare(c, a, b, n->line, n->col) < 0);
    case OP_LE: return jv_bool(jv_compare(c, a, b, n->line, n->col) <= 0);
    case OP_GT: return jv_bool(jv_compare(c, a, b, n->line, n->col) > 0);
    case OP_GE: return jv_bool(jv_compare(c, a, b, n->line, n->col) >= 0);
    case OP_IN: return jv_bool(contains(c, b, a, n));
    case OP_NOTIN: return jv_bool(!contains(c, b, a, n));
    default:
        if (n->op == OP_MOD && a.t == JV_STR) return jb_percent(c, n, a.u.s, b);
        return arith(c, n, a, b);
    }
}

/* ---- calls ---- */
typedef struct args {
    jv *pos;
    size_t np;
    jv *kw;
    size_t nk;
} args;

static args eval_args(jctx *c, const jnode *n) {
    args r = {0};
    r.np = n->args.n;
    r.nk = n->kwv.n;
    if (r.np) r.pos = ja_alloc(&c->a, r.np * sizeof *r.pos);
    if (r.nk) r.kw = ja_alloc(&c->a, r.nk * sizeof *r.kw);
    for (size_t i = 0; i < r.np; i++) r.pos[i] = eval(c, n->args.v[i]);
    for (size_t i = 0; i < r.nk; i++) r.kw[i] = eval(c, n->kwv.v[i]);
    return r;
}

static int exec_body(jctx *c, const jnodes *body);

jv jeval_call_macro(jctx *c, const jnode *call, const jnode *m, const jv *pos, size_t np, const jstr *const *kwn,
                    const jv *kwv, size_t nk) {
    if (np > m->args.n) jfail(c, call->line, call->col, "macro '%s' takes not more than %zu argument(s)", m->name->s, m->args.n);
    if (++c->depth > c->lim.max_depth) jfail(c, call->line, call->col, "macro calls nested deeper than %d", c->lim.max_depth);
    frame *saved = c->cur;
    jbuf *saved_out = c->out;
    c->cur = push_frame(c, c->root);
    for (size_t k = 0; k < nk; k++) {
        bool ok = false;
        for (size_t i = 0; i < m->args.n && !ok; i++) ok = !strcmp(m->kwn[i]->s, kwn[k]->s);
        if (!ok) jfail(c, call->line, call->col, "macro '%s' has no parameter '%s'", m->name->s, kwn[k]->s);
    }
    for (size_t i = 0; i < m->args.n; i++) {
        jv v = jv_undef();
        bool given = false;
        if (i < np) v = pos[i], given = true;
        for (size_t k = 0; k < nk; k++)
            if (!strcmp(m->kwn[i]->s, kwn[k]->s)) v = kwv[k], given = true;
        if (!given && m->kwv.v[i]) v = eval(c, m->kwv.v[i]);
        set_var(c, m->kwn[i], v);
    }
    jbuf out = {0};
    c->out = &out;
    exec_body(c, &m->body);
    c->out = saved_out;
    c->cur = saved;
    c->depth--;
    return jv_str(jb_done(&c->a, &out));
}

static jv eval_call(jctx *c, const jnode *n) {
    const jnode *f = n->a;
    if (f->k == N_ATTR) {
        jv obj = eval(c, f->a);
        args a = eval_args(c, n);
        if (obj.t == JV_LOOP && !strcmp(f->name->s, "cycle")) {
            if (!a.np) jfail(c, n->line, n->col, "no items for cycling given");
            return a.pos[obj.u.loop->i % a.np];
        }
        bool found = false;
        jv r = jb_method(c, n, obj, a.pos, a.np, n->kwn, a.kw, a.nk, &found);
        if (!found) {
            if (obj.t == JV_UNDEF) jfail(c, n->line, n->col, "'%s' of an undefined value", f->name->s);
            jfail(c, n->line, n->col, "'%s' object has no attribute '%s'", jv_type_name(obj), f->name->s);
        }
        return r;
    }
    if (f->k == N_NAME) {
        const jv *v = lookup(c, f->name);
        args a = eval_args(c, n);
        if (v && v->t == JV_MACRO && v->u.macro) return jeval_call_macro(c, n, v->u.macro, a.pos, a.np, n->kwn, a.kw, a.nk);
        if (!v || (v->t == JV_MACRO && !v->u.macro)) {
            bool found = false;
            jv r = jb_global(c, n, a.pos, a.np, n->kwn, a.kw, a.nk, &found);
            if (found) return r;
        }
        jfail(c, n->line, n->col, "'%s' is not callable", f->name->s);
    }
    jfail(c, n->line, n->col, "this expression is not callable");
}

/* ---- expressions ---- */
static jv eval_inner(jctx *c, const jnode *n) {
    switch (n->k) {
    case N_LIT: return n->lit;
    case N_NAME: {
        const jv *v = lookup(c, n->name);
        if (v) return *v;
        if (jb_global_known(n->name->s)) return (jv){.t = JV_MACRO, .u.macro = NULL};
        return jv_undef();
    }
    case N_ATTR: return jeval_getattr(c, eval(c, n->a), n->name->s, n->name->n, n->line, n->col);
    case N_ITEM: {
        jv obj = eval(c, n->a);
        return jeval_getitem(c, obj, eval(c, n->b), n->line, n->col);
    }
    case N_SLICE: return eval_slice(c, n);
    case N_CALL: return eval_call(c, n);
    case N_FILTER: {
        jv v = eval(c, n->a);
        args a = eval_args(c, n);
        return jb_filter(c, n, v, a.pos, a.np, n->kwn, a.kw, a.nk);
    }
    case N_TEST: {
        jv v = eval(c, n->a);
        args a = eval_args(c, n);
        bool r = jb_test(c, n, v, a.pos, a.np);
        return jv_bool(n->op ? !r : r);
    }
    case N_NOT: return jv_bool(!jv_truthy(eval(c, n->a)));
    case N_NEG:
    case N_POS: {
        jv v = eval(c, n->a);
        if (v.t == JV_INT || v.t == JV_BOOL) {
            int64_t i = inum(v);
            if (n->k == N_NEG && i == INT64_MIN) jfail(c, n->line, n->col, "integer overflow");
            return jv_int(n->k == N_NEG ? -i : i);
        }
        if (v.t == JV_FLOAT) return (jv){.t = JV_FLOAT, .u.f = n->k == N_NEG ? -v.u.f : v.u.f};
        jfail(c, n->line, n->col, "bad operand type for unary %c: '%s'", n->k == N_NEG ? '-' : '+', jv_type_name(v));
    }
    case N_BIN: return binop(c, n);
    case N_AND: {
        jv a = eval(c, n->a);
        return jv_truthy(a) ? eval(c, n->b) : a;
    }
    case N_OR: {
        jv a = eval(c, n->a);
        return jv_truthy(a) ? a : eval(c, n->b);
    }
    case N_COND:
        if (jv_truthy(eval(c, n->a))) return eval(c, n->b);
        return n->c ? eval(c, n->c) : jv_undef();
    case N_LIST: {
        jlist *l = jl_new(&c->a, n->args.n);
        l->tuple = n->op == 1;
        for (size_t i = 0; i < n->args.n; i++) jl_push(&c->a, l, eval(c, n->args.v[i]));
        return (jv){.t = JV_LIST, .u.l = l};
    }
    case N_DICT: {
        jdict *d = jd_new(&c->a, n->args.n);
        for (size_t i = 0; i < n->args.n; i++) {
            jv k = eval(c, n->args.v[i]);
            if (k.t != JV_STR) jfail(c, n->line, n->col, "unsupported: dict keys that are not strings");
            jd_set(&c->a, d, k.u.s, eval(c, n->kwv.v[i]));
        }
        return (jv){.t = JV_DICT, .u.d = d};
    }
    default: jfail(c, n->line, n->col, "statement used as an expression");
    }
}

static jv eval(jctx *c, const jnode *n) {
    step(c, n);
    if (++c->depth > c->lim.max_depth) jfail(c, n->line, n->col, "expression nested deeper than %d", c->lim.max_depth);
    jv v = eval_inner(c, n);
    c->depth--;
    return v;
}

/* ---- statements ---- */
static void bind_targets(jctx *c, const jnode *n, jv item) {
    if (n->args.n == 1) {
        set_var(c, n->args.v[0]->name, item);
        return;
    }
    jlist *l = item.t == JV_LIST ? item.u.l : NULL;
    if (!l && item.t == JV_STR) l = jv_iterate(c, item, n->line, n->col);
    if (!l || l->n != n->args.n)
        jfail(c, n->line, n->col, "cannot unpack %s into %zu names", jv_type_name(item), n->args.n);
    for (size_t i = 0; i < n->args.n; i++) set_var(c, n->args.v[i]->name, l->v[i]);
}

static int exec_for(jctx *c, const jnode *n) {
    jlist *items = jv_iterate(c, eval(c, n->a), n->line, n->col);
    frame *saved = c->cur;
    if (n->b) { /* {% for x in xs if cond %}: filtered before the loop counts */
        jlist *kept = jl_new(&c->a, items->n);
        for (size_t i = 0; i < items->n; i++) {
            c->cur = push_frame(c, saved);
            bind_targets(c, n, items->v[i]);
            if (jv_truthy(eval(c, n->b))) jl_push(&c->a, kept, items->v[i]);
        }
        c->cur = saved;
        items = kept;
    }
    if (!items->n) return exec_body(c, &n->orelse);
    int depth = 1; /* loop.depth counts recursive loop() calls, which are not supported: always 1 */
    static const jstr loop_name = {4, "loop", PROV_TEMPLATE, NULL};
    for (size_t i = 0; i < items->n; i++) {
        c->cur = push_frame(c, saved);
        jloop *l = ja_alloc(&c->a, sizeof *l);
        l->items = items;
        l->i = i;
        l->depth = depth;
        set_var(c, &loop_name, (jv){.t = JV_LOOP, .u.loop = l});
        bind_targets(c, n, items->v[i]);
        int flow = exec_body(c, &n->body);
        c->cur = saved;
        if (flow == FLOW_BREAK) break;
    }
    return FLOW_NEXT;
}

static int exec_stmt(jctx *c, const jnode *n) {
    step(c, n);
    switch (n->k) {
    case N_TEXT: emit(c, n->lit.u.s, n); return FLOW_NEXT;
    case N_OUT: emit(c, jv_to_str(c, eval(c, n->a)), n); return FLOW_NEXT;
    case N_IF: return exec_body(c, jv_truthy(eval(c, n->a)) ? &n->body : &n->orelse);
    case N_FOR: return exec_for(c, n);
    case N_SET: {
        jv v = eval(c, n->a);
        if (!n->attr) {
            set_var(c, n->name, v);
            return FLOW_NEXT;
        }
        const jv *ns = lookup(c, n->name);
        if (!ns || ns->t != JV_NS) jfail(c, n->line, n->col, "cannot assign attribute on non-namespace object");
        jd_set(&c->a, ns->u.d, n->attr, v);
        return FLOW_NEXT;
    }
    case N_SETBLOCK: {
        jbuf *saved = c->out;
        jbuf out = {0};
        c->out = &out;
        exec_body(c, &n->body);
        c->out = saved;
        set_var(c, n->name, jv_str(jb_done(&c->a, &out)));
        return FLOW_NEXT;
    }
    case N_MACRO: set_var(c, n->name, (jv){.t = JV_MACRO, .u.macro = n}); return FLOW_NEXT;
    case N_BREAK: return FLOW_BREAK;
    case N_CONTINUE: return FLOW_CONTINUE;
    default: jfail(c, n->line, n->col, "expression used as a statement");
    }
}

static int exec_body(jctx *c, const jnodes *body) {
    if (++c->depth > c->lim.max_depth) jfail(c, 0, 0, "statements nested deeper than %d", c->lim.max_depth);
    for (size_t i = 0; i < body->n; i++) {
        int flow = exec_stmt(c, body->v[i]);
        if (flow != FLOW_NEXT) {
            c->depth--;
            return flow;
        }
    }
    c->depth--;
    return FLOW_NEXT;
}

/* ---- entry ---- */
sd_jinja_opts sd_jinja_default_opts(void) {
    return (sd_jinja_opts){.limits = {.max_steps = 20000000, .max_output = (size_t)16 << 20,
                                      .max_memory = (size_t)256 << 20, .max_depth = 200},
                           .now = -1};
}

void sd_jinja_out_free(sd_jinja_out *o) {
    if (!o) return;
    sd_strbuf_free(&o->text);
    free(o->segs);
    o->segs = NULL;
    o->n_segs = 0;
}

/* Copies the root buffer into out: text plus merged segments. */
static sd_status finish(jctx *c, const jbuf *b, sd_jinja_out *out, sd_err *err) {
    size_t nseg = 0;
    for (size_t i = 0; i < b->n; i++)
        if (i == 0 || b->bits[i] != b->bits[i - 1]) nseg++;
    out->segs = nseg ? malloc(nseg * sizeof *out->segs) : NULL;
    if (nseg && !out->segs) return sd_err_set(err, SD_ERR_NOMEM, "jinja: out of memory");
    sd_strbuf_add(&out->text, b->s ? b->s : "", b->n);
    if (!out->text.s) sd_strbuf_add(&out->text, "", 0);
    if (out->text.oom) {
        sd_jinja_out_free(out);
        return sd_err_set(err, SD_ERR_NOMEM, "jinja: out of memory");
    }
    for (size_t i = 0; i < b->n; i++) {
        if (i == 0 || b->bits[i] != b->bits[i - 1])
            out->segs[out->n_segs++] = (sd_jinja_seg){.off = i, .len = 0, .from_template = !b->bits[i]};
        out->segs[out->n_segs - 1].len++;
    }
    (void)c;
    return SD_OK;
}

/* bos_token and eos_token hold the model's own control tokens, which the
 * templates write ({{ bos_token }}): their text counts as the template's, so a
 * tokenizer parses them as special tokens. Every other context string is data. */
static void trust_control_tokens(jarena *a, jdict *vars) {
    static const char *const names[] = {"bos_token", "eos_token"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        jv *v = (jv *)jd_get(vars, names[i], strlen(names[i]));
        if (v && v->t == JV_STR && v->u.s && v->u.s->n) v->u.s = js_new(a, v->u.s->s, v->u.s->n, PROV_TEMPLATE);
    }
}

sd_status sd_jinja_render_json(const sd_jinja *t, const char *context, size_t len, const sd_jinja_opts *opts,
                               sd_jinja_out *out, sd_err *err) {
    memset(out, 0, sizeof *out);
    if (!t || (!context && len)) return sd_err_set(err, SD_ERR_ARG, "jinja: no template or context");
    sd_jinja_opts d = sd_jinja_default_opts();
    if (!opts) opts = &d;
    jctx *c = calloc(1, sizeof *c);
    if (!c) return sd_err_set(err, SD_ERR_NOMEM, "jinja: out of memory");
    c->lim = opts->limits;
    if (!c->lim.max_steps) c->lim.max_steps = d.limits.max_steps;
    if (!c->lim.max_output) c->lim.max_output = d.limits.max_output;
    if (!c->lim.max_memory) c->lim.max_memory = d.limits.max_memory;
    if (!c->lim.max_depth) c->lim.max_depth = d.limits.max_depth;
    c->now = opts->now;
    c->err = err;
    c->a.cap = c->lim.max_memory;
    jmp_buf oom;
    c->a.oom = &oom;
    sd_status st;
    if (setjmp(oom)) {
        st = sd_err_set(err, SD_ERR_ARG, "jinja: template used more than %zu bytes of memory", c->lim.max_memory);
        goto done;
    }
    if (setjmp(c->fail)) {
        st = c->code;
        goto done;
    }
    jv ctxv = jv_undef();
    const char *jerr = jjson_parse(&c->a, context ? context : "{}", context ? len : 2, &ctxv);
    if (jerr || ctxv.t != JV_DICT) {
        st = sd_err_set(err, SD_ERR_FORMAT, "jinja: context is not a JSON object (%s)", jerr ? jerr : "not an object");
        goto done;
    }
    trust_control_tokens(&c->a, ctxv.u.d);
    frame *root = ja_alloc(&c->a, sizeof *root);
    root->vars = ctxv.u.d;
    c->root = c->cur = root;
    jbuf main_out = {0};
    c->out = &main_out;
    exec_body(c, &t->body);
    st = finish(c, &main_out, out, err);
done:
    ja_free(&c->a);
    free(c);
    return st;
}
