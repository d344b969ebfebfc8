/* Accessors of an open GGUF: header facts, metadata lookups and typed getters,
 * tensors. Everything here reads data that gguf_open already validated. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "format/gguf_impl.h"

uint32_t gguf_version(const gguf_ctx *ctx) { return ctx->version; }
uint32_t gguf_alignment(const gguf_ctx *ctx) { return ctx->alignment; }
uint64_t gguf_data_offset(const gguf_ctx *ctx) { return ctx->data_offset; }

const char *gguf_type_name(gguf_type t) {
    static const char *const NAMES[GGUF_TYPE_COUNT] = {
        "u8", "i8", "u16", "i16", "u32", "i32", "f32", "bool", "string", "array", "u64", "i64", "f64",
    };
    return (unsigned)t < GGUF_TYPE_COUNT ? NAMES[t] : "unknown";
}

/* ---- metadata ---- */

int64_t gguf_n_kv(const gguf_ctx *ctx) { return ctx->n_kv; }

int64_t gguf_find_key(const gguf_ctx *ctx, const char *key) {
    int64_t lo = 0, hi = ctx->n_kv; /* binary search over kv_sorted */
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        int r = strcmp(ctx->kv[ctx->kv_sorted[mid]].key, key);
        if (r == 0) return ctx->kv_sorted[mid];
        if (r < 0) lo = mid + 1;
        else hi = mid;
    }
    return -1;
}

const char *gguf_kv_key(const gguf_ctx *ctx, int64_t i) { return ctx->kv[i].key; }
gguf_type gguf_kv_type(const gguf_ctx *ctx, int64_t i) { return ctx->kv[i].type; }

void gguf_kv_array_info(const gguf_ctx *ctx, int64_t i, gguf_type *elem, uint64_t *n) {
    *elem = ctx->kv[i].elem;
    *n = ctx->kv[i].n;
}

/* Decodes one fixed-size element of type t at p. */
static void decode(gguf_type t, const uint8_t *p, gguf_value *out) {
    out->type = t;
    switch (t) {
    case GGUF_TYPE_UINT8: out->v.u = p[0]; break;
    case GGUF_TYPE_INT8: out->v.i = (int8_t)p[0]; break;
    case GGUF_TYPE_UINT16: out->v.u = gguf_rd16(p); break;
    case GGUF_TYPE_INT16: out->v.i = (int16_t)gguf_rd16(p); break;
    case GGUF_TYPE_UINT32: out->v.u = gguf_rd32(p); break;
    case GGUF_TYPE_INT32: out->v.i = (int32_t)gguf_rd32(p); break;
    case GGUF_TYPE_UINT64: out->v.u = gguf_rd64(p); break;
    case GGUF_TYPE_INT64: out->v.i = (int64_t)gguf_rd64(p); break;
    case GGUF_TYPE_BOOL: out->v.b = p[0] != 0; break;
    case GGUF_TYPE_FLOAT32: {
        uint32_t b = gguf_rd32(p);
        float f;
        memcpy(&f, &b, 4);
        out->v.f = f;
        break;
    }
    case GGUF_TYPE_FLOAT64: {
        uint64_t b = gguf_rd64(p);
        memcpy(&out->v.f, &b, 8);
        break;
    }
    default: break;
    }
}

bool gguf_kv_value(const gguf_ctx *ctx, int64_t i, uint64_t j, gguf_value *out) {
    if (i < 0 || i >= ctx->n_kv) return false;
    const gguf_kv *kv = &ctx->kv[i];
    if (j >= kv->n || kv->elem == GGUF_TYPE_ARRAY) return false;
    memset(out, 0, sizeof *out);
    if (kv->elem == GGUF_TYPE_STRING) {
        const uint8_t *p = kv->data + (kv->type == GGUF_TYPE_ARRAY ? kv->str_off[j] : 0);
        out->type = GGUF_TYPE_STRING;
        out->len = gguf_rd64(p);
        out->s = (const char *)p + 8;
        return true;
    }
    decode(kv->elem, kv->data + j * gguf_type_size(kv->elem), out);
    return true;
}

static bool is_signed(gguf_type t) {
    return t == GGUF_TYPE_INT8 || t == GGUF_TYPE_INT16 || t == GGUF_TYPE_INT32 || t == GGUF_TYPE_INT64;
}
static bool is_unsigned(gguf_type t) {
    return t == GGUF_TYPE_UINT8 || t == GGUF_TYPE_UINT16 || t == GGUF_TYPE_UINT32 || t == GGUF_TYPE_UINT64;
}

/* A scalar pair by key, or false. */
static bool scalar(const gguf_ctx *ctx, const char *key, gguf_value *v) {
    int64_t i = gguf_find_key(ctx, key);
    return i >= 0 && ctx->kv[i].type != GGUF_TYPE_ARRAY && gguf_kv_value(ctx, i, 0, v);
}

bool gguf_get_u32(const gguf_ctx *ctx, const char *key, uint32_t *out) {
    gguf_value v;
    if (!scalar(ctx, key, &v)) return false;
    if (is_unsigned(v.type) && v.v.u <= UINT32_MAX) *out = (uint32_t)v.v.u;
    else if (is_signed(v.type) && v.v.i >= 0 && v.v.i <= (int64_t)UINT32_MAX) *out = (uint32_t)v.v.i;
    else return false;
    return true;
}

bool gguf_get_i64(const gguf_ctx *ctx, const char *key, int64_t *out) {
    gguf_value v;
    if (!scalar(ctx, key, &v)) return false;
    if (is_unsigned(v.type) && v.v.u <= INT64_MAX) *out = (int64_t)v.v.u;
    else if (is_signed(v.type)) *out = v.v.i;
    else return false;
    return true;
}

bool gguf_get_f32(const gguf_ctx *ctx, const char *key, float *out) {
    gguf_value v;
    if (!scalar(ctx, key, &v) || (v.type != GGUF_TYPE_FLOAT32 && v.type != GGUF_TYPE_FLOAT64)) return false;
    *out = (float)v.v.f;
    return true;
}

bool gguf_get_bool(const gguf_ctx *ctx, const char *key, bool *out) {
    gguf_value v;
    if (!scalar(ctx, key, &v) || v.type != GGUF_TYPE_BOOL) return false;
    *out = v.v.b;
    return true;
}

bool gguf_get_str(const gguf_ctx *ctx, const char *key, const char **s, uint64_t *len) {
    gguf_value v;
    if (!scalar(ctx, key, &v) || v.type != GGUF_TYPE_STRING) return false;
    *s = v.s;
    *len = v.len;
    return true;
}

bool gguf_get_arr_data(const gguf_ctx *ctx, const char *key, gguf_type *elem, uint64_t *n,
                       const void **data) {
    int64_t i = gguf_find_key(ctx, key);
    if (i < 0 || ctx->kv[i].type != GGUF_TYPE_ARRAY || !gguf_type_size(ctx->kv[i].elem)) return false;
    *elem = ctx->kv[i].elem;
    *n = ctx->kv[i].n;
    *data = ctx->kv[i].data;
    return true;
}

bool gguf_get_arr_str_n(const gguf_ctx *ctx, const char *key, uint64_t *n) {
    int64_t i = gguf_find_key(ctx, key);
    if (i < 0 || ctx->kv[i].type != GGUF_TYPE_ARRAY || ctx->kv[i].elem != GGUF_TYPE_STRING) return false;
    *n = ctx->kv[i].n;
    return true;
}

bool gguf_get_arr_str(const gguf_ctx *ctx, const char *key, uint64_t j, const char **s, uint64_t *len) {
    int64_t i = gguf_find_key(ctx, key);
    gguf_value v;
    if (i < 0 || ctx->kv[i].type != GGUF_TYPE_ARRAY || ctx->kv[i].elem != GGUF_TYPE_STRING ||
        !gguf_kv_value(ctx, i, j, &v))
        return false;
    *s = v.s;
    *len = v.len;
    return true;
}

/* ---- one-line rendering ---- */

typedef struct outbuf {
    char *p;
    size_t cap, len;
} outbuf;

static void put(outbuf *o, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void put(outbuf *o, const char *fmt, ...) {
    if (o->len + 1 >= o->cap) return;
    va_list ap;
    va_start(ap, fmt);
    int r = vsnprintf(o->p + o->len, o->cap - o->len, fmt, ap);
    va_end(ap);
    if (r > 0) o->len = o->len + (size_t)r < o->cap ? o->len + (size_t)r : o->cap - 1;
}

/* A string value quoted, control bytes escaped, cut after max bytes. */
static void put_str(outbuf *o, const char *s, uint64_t len, uint64_t max) {
    put(o, "\"");
    for (uint64_t k = 0; k < len && k < max; k++) {
        unsigned char ch = (unsigned char)s[k];
        if (ch == '"' || ch == '\\') put(o, "\\%c", ch);
        else if (ch == '\n') put(o, "\\n");
        else if (ch < 0x20 || ch == 0x7f) put(o, "\\x%02x", ch);
        else put(o, "%c", ch);
    }
    put(o, len > max ? "\"..." : "\"");
}

static void put_value(outbuf *o, const gguf_value *v) {
    if (v->type == GGUF_TYPE_STRING) put_str(o, v->s, v->len, 80);
    else if (v->type == GGUF_TYPE_BOOL) put(o, "%s", v->v.b ? "true" : "false");
    else if (v->type == GGUF_TYPE_FLOAT32 || v->type == GGUF_TYPE_FLOAT64) put(o, "%.9g", v->v.f);
    else if (is_signed(v->type)) put(o, "%" PRId64, v->v.i);
    else put(o, "%" PRIu64, v->v.u);
}

void gguf_kv_format(const gguf_ctx *ctx, int64_t i, char *buf, size_t cap) {
    if (!cap) return;
    outbuf o = {buf, cap, 0};
    buf[0] = 0;
    const gguf_kv *kv = &ctx->kv[i];
    gguf_value v;
    if (kv->type != GGUF_TYPE_ARRAY) {
        if (gguf_kv_value(ctx, i, 0, &v)) put_value(&o, &v);
        return;
    }
    put(&o, "[%s x %" PRIu64 "]", gguf_type_name(kv->elem), kv->n);
    if (kv->elem == GGUF_TYPE_ARRAY) return;
    for (uint64_t j = 0; j < kv->n && j < 8; j++) {
        put(&o, j ? ", " : " ");
        if (gguf_kv_value(ctx, i, j, &v)) put_value(&o, &v);
    }
    if (kv->n > 8) put(&o, ", ...");
}

/* ---- tensors ---- */

int64_t gguf_n_tensors(const gguf_ctx *ctx) { return ctx->n_tensors; }

const gguf_tensor_info *gguf_tensor(const gguf_ctx *ctx, int64_t i) {
    return i >= 0 && i < ctx->n_tensors ? &ctx->tensors[i] : NULL;
}

const gguf_tensor_info *gguf_find_tensor(const gguf_ctx *ctx, const char *name) {
    int64_t lo = 0, hi = ctx->n_tensors;
    while (lo < hi) {
        int64_t mid = lo + (hi - lo) / 2;
        const gguf_tensor_info *t = &ctx->tensors[ctx->t_sorted[mid]];
        int r = strcmp(t->name, name);
        if (r == 0) return t;
        if (r < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}
