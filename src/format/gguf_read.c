/* GGUF reader: parses and validates the whole header at open, so that every
 * accessor afterwards can trust what it finds.
 *
 * Layout (llama.cpp ggml/src/gguf.cpp, docs/gguf.md): "GGUF", u32 version,
 * u64 n_tensors, u64 n_kv, n_kv key/value pairs, n_tensors tensor infos
 * (string name, u32 n_dims, i64 ne[n_dims], u32 type, u64 offset), zero
 * padding to the alignment, then the data section. Offsets are relative to the
 * data section. Counts are bounded by the bytes left in the file before
 * anything is allocated from them, so a hostile count cannot make us allocate
 * more than a small multiple of the file size. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/checked.h"
#include "format/gguf_impl.h"

/* ---- a bounds-checked cursor over the file bytes ---- */

typedef struct cursor {
    const uint8_t *p;
    uint64_t size;
    uint64_t pos;
    sd_err *err;
} cursor;

static uint64_t left(const cursor *c) { return c->size - c->pos; }

static sd_status truncated(cursor *c, const char *what, uint64_t need) {
    return sd_err_set(c->err, SD_ERR_FORMAT,
                      "truncated: %s (%" PRIu64 " bytes) at offset %" PRIu64
                      " runs past end of file (size %" PRIu64 ")",
                      what, need, c->pos, c->size);
}

static sd_status take_u32(cursor *c, const char *what, uint32_t *v) {
    if (left(c) < 4) return truncated(c, what, 4);
    *v = gguf_rd32(c->p + c->pos);
    c->pos += 4;
    return SD_OK;
}

static sd_status take_u64(cursor *c, const char *what, uint64_t *v) {
    if (left(c) < 8) return truncated(c, what, 8);
    *v = gguf_rd64(c->p + c->pos);
    c->pos += 8;
    return SD_OK;
}

/* A string: u64 length then the bytes. *s points into the file. */
static sd_status take_str(cursor *c, const char *what, const uint8_t **s, uint64_t *len) {
    sd_status st = take_u64(c, what, len);
    if (st) return st;
    if (*len > left(c))
        return sd_err_set(c->err, SD_ERR_FORMAT,
                          "%s: string length %" PRIu64 " at offset %" PRIu64
                          " runs past end of file (size %" PRIu64 ")",
                          what, *len, c->pos - 8, c->size);
    *s = c->p + c->pos;
    c->pos += *len;
    return SD_OK;
}

/* A name from the file made safe for a one-line message: control bytes
 * escaped as \xNN, cut after 60 bytes. Returns buf (SHOWN_CAP bytes). */
#define SHOWN_CAP 256
static const char *shown(const char *s, char *buf) {
    size_t o = 0;
    for (size_t k = 0; s[k] && o + 8 < SHOWN_CAP; k++) {
        if (k == 60) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        unsigned char ch = (unsigned char)s[k];
        if (ch < 0x20 || ch == 0x7f) o += (size_t)snprintf(buf + o, SHOWN_CAP - o, "\\x%02x", ch);
        else buf[o++] = (char)ch;
    }
    buf[o] = 0;
    return buf;
}

/* ---- values ---- */

uint32_t gguf_type_size(gguf_type t) {
    switch (t) {
    case GGUF_TYPE_UINT8: case GGUF_TYPE_INT8: case GGUF_TYPE_BOOL: return 1;
    case GGUF_TYPE_UINT16: case GGUF_TYPE_INT16: return 2;
    case GGUF_TYPE_UINT32: case GGUF_TYPE_INT32: case GGUF_TYPE_FLOAT32: return 4;
    case GGUF_TYPE_UINT64: case GGUF_TYPE_INT64: case GGUF_TYPE_FLOAT64: return 8;
    default: return 0;
    }
}

static sd_status check_bools(cursor *c, const char *what, uint64_t n) {
    for (uint64_t k = 0; k < n; k++)
        if (c->p[c->pos + k] > 1)
            return sd_err_set(c->err, SD_ERR_FORMAT, "%s: bool value %u at offset %" PRIu64 " is not 0 or 1",
                              what, c->p[c->pos + k], c->pos + k);
    return SD_OK;
}

/* Validates one value of type t at the cursor and steps over it. */
static sd_status skip_value(cursor *c, const char *what, uint32_t t, int depth) {
    if (t >= GGUF_TYPE_COUNT)
        return sd_err_set(c->err, SD_ERR_FORMAT, "%s: unknown value type %u at offset %" PRIu64,
                          what, t, c->pos);
    uint32_t es = gguf_type_size((gguf_type)t);
    if (es) {
        if (left(c) < es) return truncated(c, what, es);
        if (t == GGUF_TYPE_BOOL) {
            sd_status st = check_bools(c, what, 1);
            if (st) return st;
        }
        c->pos += es;
        return SD_OK;
    }
    if (t == GGUF_TYPE_STRING) {
        const uint8_t *s;
        uint64_t len;
        return take_str(c, what, &s, &len);
    }
    /* array */
    if (depth >= GGUF_MAX_NEST)
        return sd_err_set(c->err, SD_ERR_FORMAT, "%s: arrays nested more than %d deep at offset %" PRIu64,
                          what, GGUF_MAX_NEST, c->pos);
    uint32_t elem;
    uint64_t n;
    sd_status st = take_u32(c, what, &elem);
    if (!st) st = take_u64(c, what, &n);
    if (st) return st;
    if (elem >= GGUF_TYPE_COUNT)
        return sd_err_set(c->err, SD_ERR_FORMAT, "%s: unknown array element type %u at offset %" PRIu64,
                          what, elem, c->pos - 12);
    es = gguf_type_size((gguf_type)elem);
    /* smallest encoding of one element: its size, a string's length, an array's header */
    uint64_t min_elem = es ? es : elem == GGUF_TYPE_STRING ? 8 : 12;
    if (n > left(c) / min_elem)
        return sd_err_set(c->err, SD_ERR_FORMAT,
                          "%s: array of %" PRIu64 " %s at offset %" PRIu64
                          " does not fit in the %" PRIu64 " bytes left in the file: truncated or corrupt file",
                          what, n, gguf_type_name((gguf_type)elem), c->pos - 12, left(c));
    if (es) {
        if (elem == GGUF_TYPE_BOOL && (st = check_bools(c, what, n))) return st;
        c->pos += n * es;
        return SD_OK;
    }
    for (uint64_t k = 0; k < n; k++)
        if ((st = skip_value(c, what, elem, depth + 1))) return st;
    return SD_OK;
}

sd_status gguf_check_value(gguf_type t, const void *raw, uint64_t size, sd_err *err) {
    cursor c = {raw, size, 0, err};
    sd_status st = skip_value(&c, "value", t, 0);
    if (st) return st;
    if (c.pos != size)
        return sd_err_set(err, SD_ERR_FORMAT, "value: %" PRIu64 " trailing bytes after the value", size - c.pos);
    return SD_OK;
}

/* ---- context lifetime ---- */

void gguf_close(gguf_ctx *ctx) {
    if (!ctx) return;
    for (int64_t i = 0; i < ctx->n_kv; i++) {
        free(ctx->kv[i].key);
        free(ctx->kv[i].str_off);
    }
    for (int64_t i = 0; i < ctx->n_tensors; i++) free((char *)ctx->tensors[i].name);
    free(ctx->kv);
    free(ctx->kv_sorted);
    free(ctx->tensors);
    free(ctx->t_sorted);
    free(ctx->t_by_offset);
    free(ctx->t_rank);
    free(ctx->t_released);
    if (ctx->mapped) munmap((void *)ctx->base, ctx->size);
    free(ctx);
}

/* NUL-terminated copy of a file string; refuses embedded NULs, which would
 * make two different names compare equal. */
static sd_status copy_name(cursor *c, const char *what, const uint8_t *s, uint64_t len, char **out) {
    if (memchr(s, 0, len))
        return sd_err_set(c->err, SD_ERR_FORMAT, "%s at offset %" PRIu64 " contains a NUL byte", what,
                          (uint64_t)(s - c->p));
    char *k = malloc(len + 1);
    if (!k) return sd_err_set(c->err, SD_ERR_NOMEM, "out of memory copying %s", what);
    memcpy(k, s, len);
    k[len] = 0;
    *out = k;
    return SD_OK;
}

/* Makes room for item n in *arr (cap items of size bytes), zeroing new slots.
 * Arrays grow with what the file actually holds, not with the count it
 * claims, so a hostile count costs nothing until backed by real bytes. */
static bool grow_zeroed(void **arr, uint64_t n, size_t *cap, size_t size) {
    if (n < *cap) return true;
    size_t nc = *cap ? *cap * 2 : 16, bytes;
    if (!sd_mul_size(nc, size, &bytes)) return false;
    uint8_t *p = realloc(*arr, bytes);
    if (!p) return false;
    memset(p + *cap * size, 0, (nc - *cap) * size);
    *arr = p;
    *cap = nc;
    return true;
}

/* ---- metadata ---- */

/* For an array of strings: the offset of each element from kv->data, so that
 * element i is found in O(1). The array was already validated. */
static sd_status index_strings(cursor *c, gguf_kv *kv) {
    kv->str_off = sd_malloc_array(kv->n ? kv->n : 1, sizeof *kv->str_off);
    if (!kv->str_off) return sd_err_set(c->err, SD_ERR_NOMEM, "out of memory indexing '%s'", kv->key);
    uint64_t off = 0;
    for (uint64_t k = 0; k < kv->n; k++) {
        kv->str_off[k] = off;
        off += 8 + gguf_rd64(kv->data + off);
    }
    return SD_OK;
}

static sd_status read_kv(cursor *c, int64_t i, gguf_kv *kv) {
    char what[SHOWN_CAP + 16];
    snprintf(what, sizeof what, "kv %" PRId64 " key", i);
    const uint8_t *s;
    uint64_t len;
    uint32_t t;
    sd_status st = take_str(c, what, &s, &len);
    if (!st) st = copy_name(c, what, s, len, &kv->key);
    if (st) return st;
    char nb[SHOWN_CAP];
    snprintf(what, sizeof what, "kv '%s'", shown(kv->key, nb));
    if ((st = take_u32(c, what, &t))) return st;
    if (t >= GGUF_TYPE_COUNT)
        return sd_err_set(c->err, SD_ERR_FORMAT, "%s: unknown value type %u at offset %" PRIu64, what, t,
                          c->pos - 4);
    kv->type = kv->elem = (gguf_type)t;
    kv->n = 1;
    kv->raw = kv->data = c->p + c->pos;
    if ((st = skip_value(c, what, t, 0))) return st;
    kv->raw_size = (uint64_t)(c->p + c->pos - kv->raw);
    if (t == GGUF_TYPE_ARRAY) {
        kv->elem = (gguf_type)gguf_rd32(kv->raw);
        kv->n = gguf_rd64(kv->raw + 4);
        kv->data = kv->raw + 12;
        if (kv->elem == GGUF_TYPE_STRING) return index_strings(c, kv);
    }
    return SD_OK;
}

/* Sorts indices 0..n-1 by name; used for duplicate detection and lookups. */
typedef struct named {
    const char *name;
    int64_t idx;
} named;

static int cmp_named(const void *a, const void *b) {
    const named *x = a, *y = b;
    int r = strcmp(x->name, y->name);
    return r ? r : (x->idx > y->idx) - (x->idx < y->idx);
}

/* Fills *sorted with indices ordered by name; names[i] is the name of item i.
 * Returns the name of a duplicate in *dup (or NULL). */
static sd_status sort_names(int64_t n, const char *(*name_of)(const gguf_ctx *, int64_t),
                            const gguf_ctx *ctx, int64_t **sorted, const char **dup, sd_err *err) {
    named *tmp = sd_malloc_array((size_t)n, sizeof *tmp);
    *sorted = sd_malloc_array((size_t)n, sizeof **sorted);
    *dup = NULL;
    if (!tmp || !*sorted) {
        free(tmp);
        return sd_err_set(err, SD_ERR_NOMEM, "out of memory sorting names");
    }
    for (int64_t i = 0; i < n; i++) tmp[i] = (named){name_of(ctx, i), i};
    qsort(tmp, (size_t)n, sizeof *tmp, cmp_named);
    for (int64_t i = 0; i < n; i++) {
        (*sorted)[i] = tmp[i].idx;
        if (i > 0 && !*dup && !strcmp(tmp[i].name, tmp[i - 1].name)) *dup = name_of(ctx, tmp[i].idx);
    }
    free(tmp);
    return SD_OK;
}

static const char *kv_name(const gguf_ctx *ctx, int64_t i) { return ctx->kv[i].key; }
static const char *tensor_name(const gguf_ctx *ctx, int64_t i) { return ctx->tensors[i].name; }

static sd_status read_all_kv(cursor *c, gguf_ctx *ctx, uint64_t n_kv) {
    /* smallest pair: empty key (8) + type (4) + a u8 value (1) */
    if (n_kv > left(c) / 13)
        return sd_err_set(c->err, SD_ERR_FORMAT,
                          "n_kv %" PRIu64 " cannot fit in the %" PRIu64 " bytes left in the file", n_kv, left(c));
    size_t cap = 0;
    for (uint64_t i = 0; i < n_kv; i++) {
        if (!grow_zeroed((void **)&ctx->kv, i, &cap, sizeof *ctx->kv))
            return sd_err_set(c->err, SD_ERR_NOMEM, "out of memory for %" PRIu64 " kv pairs", n_kv);
        ctx->n_kv = (int64_t)i + 1; /* so gguf_close frees what this pair allocated */
        sd_status st = read_kv(c, (int64_t)i, &ctx->kv[i]);
        if (st) return st;
    }
    const char *dup;
    sd_status st = sort_names(ctx->n_kv, kv_name, ctx, &ctx->kv_sorted, &dup, c->err);
    if (st) return st;
    char nb[SHOWN_CAP];
    if (dup) return sd_err_set(c->err, SD_ERR_FORMAT, "duplicate key '%s'", shown(dup, nb));
    return SD_OK;
}

static sd_status read_alignment(cursor *c, gguf_ctx *ctx) {
    ctx->alignment = GGUF_DEFAULT_ALIGNMENT;
    int64_t i = gguf_find_key(ctx, "general.alignment");
    if (i < 0) return SD_OK;
    const gguf_kv *kv = &ctx->kv[i];
    if (kv->type != GGUF_TYPE_UINT32)
        return sd_err_set(c->err, SD_ERR_FORMAT, "general.alignment has type %s, expected u32",
                          gguf_type_name(kv->type));
    uint32_t a = gguf_rd32(kv->data);
    if (a == 0 || (a & (a - 1)))
        return sd_err_set(c->err, SD_ERR_FORMAT, "general.alignment %u is not a power of two", a);
    ctx->alignment = a;
    return SD_OK;
}

/* ---- tensors ---- */

static sd_status read_tensor_info(cursor *c, int64_t i, gguf_tensor_info *ti) {
    char what[SHOWN_CAP + 16], nb[SHOWN_CAP];
    snprintf(what, sizeof what, "tensor %" PRId64 " name", i);
    const uint8_t *s;
    uint64_t len;
    sd_status st = take_str(c, what, &s, &len);
    if (st) return st;
    if (len > GGUF_MAX_NAME)
        return sd_err_set(c->err, SD_ERR_FORMAT, "tensor %" PRId64 ": name of %" PRIu64
                          " bytes is longer than %d", i, len, GGUF_MAX_NAME);
    char *name;
    if ((st = copy_name(c, what, s, len, &name))) return st;
    ti->name = name;
    snprintf(what, sizeof what, "tensor '%s'", shown(name, nb));
    if ((st = take_u32(c, what, &ti->n_dims))) return st;
    if (ti->n_dims < 1 || ti->n_dims > GGUF_MAX_DIMS)
        return sd_err_set(c->err, SD_ERR_FORMAT, "%s: n_dims %u is not in 1..%d", what, ti->n_dims,
                          GGUF_MAX_DIMS);
    for (int d = 0; d < GGUF_MAX_DIMS; d++) ti->ne[d] = 1;
    uint64_t n_rows = 1;
    for (uint32_t d = 0; d < ti->n_dims; d++) {
        uint64_t ne;
        if ((st = take_u64(c, what, &ne))) return st;
        if (ne == 0 || ne > INT64_MAX)
            return sd_err_set(c->err, SD_ERR_FORMAT, "%s: ne[%u] = %" PRId64 " is not positive", what, d,
                              (int64_t)ne);
        ti->ne[d] = (int64_t)ne;
        if (d > 0 && !sd_mul_u64(n_rows, ne, &n_rows))
            return sd_err_set(c->err, SD_ERR_FORMAT, "%s: element count overflows", what);
    }
    if ((st = take_u32(c, what, &ti->type))) return st;
    const ggml_type_info *tt = ggml_type_get(ti->type);
    if (!tt->known)
        return sd_err_set(c->err, SD_ERR_UNSUPPORTED, "%s: unknown tensor type %u", what, ti->type);
    uint64_t row;
    if ((uint64_t)ti->ne[0] % tt->block_size)
        return sd_err_set(c->err, SD_ERR_FORMAT, "%s: ne[0] = %" PRId64 " is not a multiple of %s's block size %u",
                          what, ti->ne[0], tt->name, tt->block_size);
    if (!ggml_row_bytes(ti->type, (uint64_t)ti->ne[0], &row) || !sd_mul_u64(row, n_rows, &ti->nbytes) ||
        ti->nbytes > INT64_MAX)
        return sd_err_set(c->err, SD_ERR_FORMAT, "%s: byte size overflows", what);
    return take_u64(c, what, &ti->offset);
}

typedef struct span {
    uint64_t begin, end;
    int64_t idx;
} span;

static int cmp_span(const void *a, const void *b) {
    const span *x = a, *y = b;
    if (x->begin != y->begin) return x->begin < y->begin ? -1 : 1;
    return (x->idx > y->idx) - (x->idx < y->idx);
}

/* Keeps the offset order for gguf_release (gguf_release.c), which needs each
 * tensor's neighbours in the file. sp is sorted by offset. */
static sd_status keep_offset_order(cursor *c, gguf_ctx *ctx, const span *sp) {
    size_t n = (size_t)ctx->n_tensors;
    ctx->t_by_offset = sd_malloc_array(n, sizeof *ctx->t_by_offset);
    ctx->t_rank = sd_malloc_array(n, sizeof *ctx->t_rank);
    ctx->t_released = sd_calloc(n, sizeof *ctx->t_released);
    if (!ctx->t_by_offset || !ctx->t_rank || !ctx->t_released)
        return sd_err_set(c->err, SD_ERR_NOMEM, "out of memory ordering tensors");
    for (size_t k = 0; k < n; k++) {
        ctx->t_by_offset[k] = sp[k].idx;
        ctx->t_rank[sp[k].idx] = (int64_t)k;
    }
    return SD_OK;
}

/* Each tensor's data is aligned, inside the file, and overlaps no other. */
static sd_status place_tensors(cursor *c, gguf_ctx *ctx) {
    uint64_t a = ctx->alignment;
    ctx->data_offset = (c->pos + a - 1) / a * a; /* pos <= size, so no overflow */
    if (ctx->n_tensors == 0) return SD_OK;
    span *sp = sd_malloc_array((size_t)ctx->n_tensors, sizeof *sp);
    if (!sp) return sd_err_set(c->err, SD_ERR_NOMEM, "out of memory checking tensor offsets");
    sd_status st = SD_OK;
    char nb[SHOWN_CAP], nb2[SHOWN_CAP];
    for (int64_t i = 0; i < ctx->n_tensors && !st; i++) {
        gguf_tensor_info *ti = &ctx->tensors[i];
        uint64_t begin, end;
        if (ti->offset % a)
            st = sd_err_set(c->err, SD_ERR_FORMAT, "tensor '%s': offset %" PRIu64 " is not a multiple of the alignment %u",
                            shown(ti->name, nb), ti->offset, ctx->alignment);
        else if (!sd_add_u64(ctx->data_offset, ti->offset, &begin) || !sd_add_u64(begin, ti->nbytes, &end) ||
                 end > c->size)
            st = sd_err_set(c->err, SD_ERR_FORMAT, "tensor '%s': data [%" PRIu64 ", %" PRIu64 ") past end of file (size %" PRIu64 "): truncated or corrupt file",
                            shown(ti->name, nb), ctx->data_offset + ti->offset, ctx->data_offset + ti->offset + ti->nbytes, c->size);
        else {
            ti->data = c->p + begin;
            sp[i] = (span){begin, end, i};
        }
    }
    if (!st) {
        qsort(sp, (size_t)ctx->n_tensors, sizeof *sp, cmp_span);
        for (int64_t i = 1; i < ctx->n_tensors && !st; i++)
            if (sp[i].begin < sp[i - 1].end)
                st = sd_err_set(c->err, SD_ERR_FORMAT, "tensors '%s' [%" PRIu64 ", %" PRIu64 ") and '%s' [%" PRIu64 ", %" PRIu64 ") overlap",
                                shown(ctx->tensors[sp[i - 1].idx].name, nb), sp[i - 1].begin, sp[i - 1].end,
                                shown(ctx->tensors[sp[i].idx].name, nb2), sp[i].begin, sp[i].end);
    }
    if (!st) st = keep_offset_order(c, ctx, sp);
    free(sp);
    return st;
}

static sd_status read_all_tensors(cursor *c, gguf_ctx *ctx, uint64_t n_tensors) {
    /* smallest info: empty name (8) + n_dims (4) + one ne (8) + type (4) + offset (8) */
    if (n_tensors > left(c) / 32)
        return sd_err_set(c->err, SD_ERR_FORMAT,
                          "n_tensors %" PRIu64 " cannot fit in the %" PRIu64 " bytes left in the file", n_tensors,
                          left(c));
    size_t cap = 0;
    for (uint64_t i = 0; i < n_tensors; i++) {
        if (!grow_zeroed((void **)&ctx->tensors, i, &cap, sizeof *ctx->tensors))
            return sd_err_set(c->err, SD_ERR_NOMEM, "out of memory for %" PRIu64 " tensors", n_tensors);
        ctx->n_tensors = (int64_t)i + 1;
        sd_status st = read_tensor_info(c, (int64_t)i, &ctx->tensors[i]);
        if (st) return st;
    }
    const char *dup;
    sd_status st = sort_names(ctx->n_tensors, tensor_name, ctx, &ctx->t_sorted, &dup, c->err);
    if (st) return st;
    char nb[SHOWN_CAP];
    if (dup) return sd_err_set(c->err, SD_ERR_FORMAT, "duplicate tensor name '%s'", shown(dup, nb));
    return place_tensors(c, ctx);
}

/* ---- header ---- */

static sd_status read_header(cursor *c, gguf_ctx *ctx, uint64_t *n_tensors, uint64_t *n_kv) {
    if (c->size < 4)
        return sd_err_set(c->err, SD_ERR_FORMAT, "truncated: file is %" PRIu64 " bytes, too short for the GGUF magic",
                          c->size);
    const uint8_t *m = c->p;
    if (memcmp(m, "GGUF", 4))
        return sd_err_set(c->err, SD_ERR_FORMAT, "bad magic %02x %02x %02x %02x (not a GGUF file)", m[0], m[1], m[2],
                          m[3]);
    c->pos = 4;
    sd_status st = take_u32(c, "version", &ctx->version);
    if (st) return st;
    if (ctx->version == 1)
        return sd_err_set(c->err, SD_ERR_UNSUPPORTED, "GGUF version 1 is not supported (only 2 and 3)");
    if (ctx->version == 0x02000000u || ctx->version == 0x03000000u)
        return sd_err_set(c->err, SD_ERR_UNSUPPORTED, "big-endian GGUF is not supported");
    if (ctx->version != 2 && ctx->version != 3)
        return sd_err_set(c->err, SD_ERR_FORMAT, "unknown GGUF version %u (expected 2 or 3)", ctx->version);
    if ((st = take_u64(c, "n_tensors", n_tensors))) return st;
    return take_u64(c, "n_kv", n_kv);
}

sd_status gguf_open_memory(const void *data, size_t size, gguf_ctx **out, sd_err *err) {
    *out = NULL;
    if (!data && size) return sd_err_set(err, SD_ERR_ARG, "gguf_open_memory: NULL buffer");
    gguf_ctx *ctx = calloc(1, sizeof *ctx);
    if (!ctx) return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    ctx->base = data;
    ctx->size = size;
    cursor c = {data, size, 0, err};
    uint64_t n_tensors, n_kv;
    sd_status st = read_header(&c, ctx, &n_tensors, &n_kv);
    if (!st) st = read_all_kv(&c, ctx, n_kv);
    if (!st) st = read_alignment(&c, ctx);
    if (!st) st = read_all_tensors(&c, ctx, n_tensors);
    if (st) {
        gguf_close(ctx);
        return st;
    }
    *out = ctx;
    return SD_OK;
}

sd_status gguf_open(const char *path, gguf_ctx **out, sd_err *err) {
    *out = NULL;
    /* O_NONBLOCK: opening a FIFO would otherwise wait for a writer before the
     * regular-file check below could refuse it; it changes nothing for files. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return sd_err_set(err, SD_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return sd_err_set(err, SD_ERR_IO, "%s: not a regular file", path);
    }
    if (sb.st_size == 0) {
        close(fd);
        return sd_err_set(err, SD_ERR_FORMAT, "%s: empty file (not a GGUF file)", path);
    }
    if ((uint64_t)sb.st_size > SIZE_MAX) {
        close(fd);
        return sd_err_set(err, SD_ERR_IO, "%s: file too large to map", path);
    }
    /* If another process truncates the file while it is mapped, touching a
     * page past the new end raises SIGBUS. A library cannot own a process-wide
     * signal disposition, so the front end handles it (src/cli/sigbus.c). */
    void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int mmap_errno = errno;
    close(fd);
    if (m == MAP_FAILED) return sd_err_set(err, SD_ERR_IO, "%s: mmap failed: %s", path, strerror(mmap_errno));
    sd_status st = gguf_open_memory(m, (size_t)sb.st_size, out, err);
    if (st) {
        munmap(m, (size_t)sb.st_size);
        sd_err_prefix(err, "%s", path);
        return st;
    }
    (*out)->mapped = 1;
    return SD_OK;
}
