/* GGUF writer (version 3). Each metadata value is encoded when it is set, so
 * writing is a straight copy: header, pairs, tensor infos, zero padding to the
 * alignment, tensor data each padded to the alignment (as llama.cpp's
 * gguf_write_to_file lays it out, ggml/src/gguf.cpp). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "core/checked.h"
#include "format/gguf_impl.h"

typedef struct wkv {
    char *key;
    gguf_type type;
    uint8_t *raw; /* encoding after the type tag */
    uint64_t raw_size;
} wkv;

typedef struct wtensor {
    char *name;
    uint32_t type, n_dims;
    int64_t ne[GGUF_MAX_DIMS];
    const void *data;
    uint64_t nbytes;
    gguf_fill_fn fill; /* produces the data at write time (then data is NULL) */
    void *fill_ctx;
} wtensor;

struct gguf_writer {
    uint32_t alignment;
    wkv *kv;
    size_t n_kv, cap_kv;
    wtensor *t;
    size_t n_t, cap_t;
};

gguf_writer *gguf_writer_init(void) {
    gguf_writer *w = calloc(1, sizeof *w);
    if (w) w->alignment = GGUF_DEFAULT_ALIGNMENT;
    return w;
}

void gguf_writer_free(gguf_writer *w) {
    if (!w) return;
    for (size_t i = 0; i < w->n_kv; i++) {
        free(w->kv[i].key);
        free(w->kv[i].raw);
    }
    for (size_t i = 0; i < w->n_t; i++) free(w->t[i].name);
    free(w->kv);
    free(w->t);
    free(w);
}

/* Grows *arr (n used, *cap slots of size bytes) to hold one more. */
static bool grow(void **arr, size_t n, size_t *cap, size_t size) {
    if (n < *cap) return true;
    size_t nc = *cap ? *cap * 2 : 16;
    size_t bytes;
    if (!sd_mul_size(nc, size, &bytes)) return false;
    void *p = realloc(*arr, bytes);
    if (!p) return false;
    *arr = p;
    *cap = nc;
    return true;
}

/* Takes ownership of raw (freed on failure too). */
static sd_status add_kv(gguf_writer *w, const char *key, gguf_type type, uint8_t *raw, uint64_t size) {
    sd_status st = SD_OK;
    for (size_t i = 0; i < w->n_kv && !st; i++)
        if (!strcmp(w->kv[i].key, key)) st = SD_ERR_ARG;
    if (!st && !strcmp(key, "general.alignment")) {
        uint32_t a = type == GGUF_TYPE_UINT32 ? gguf_rd32(raw) : 0;
        if (a == 0 || (a & (a - 1))) st = SD_ERR_ARG;
        else w->alignment = a;
    }
    char *k = st ? NULL : strdup(key);
    if (!st && (!k || !grow((void **)&w->kv, w->n_kv, &w->cap_kv, sizeof *w->kv))) st = SD_ERR_NOMEM;
    if (st) {
        free(k);
        free(raw);
        return st;
    }
    w->kv[w->n_kv++] = (wkv){k, type, raw, size};
    return SD_OK;
}

static void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)v, p[1] = (uint8_t)(v >> 8); }
static void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)v), put16(p + 2, (uint16_t)(v >> 16)); }
static void put64(uint8_t *p, uint64_t v) { put32(p, (uint32_t)v), put32(p + 4, (uint32_t)(v >> 32)); }

/* Little-endian encoding of one host-order element of a fixed-size type. */
static void encode(gguf_type t, const void *v, uint8_t *p) {
    switch (gguf_type_size(t)) {
    case 1: memcpy(p, v, 1); break;
    case 2: { uint16_t x; memcpy(&x, v, 2); put16(p, x); break; }
    case 4: { uint32_t x; memcpy(&x, v, 4); put32(p, x); break; }
    case 8: { uint64_t x; memcpy(&x, v, 8); put64(p, x); break; }
    default: break;
    }
}

sd_status gguf_writer_set_val(gguf_writer *w, const char *key, gguf_type type, const void *value) {
    uint32_t es = gguf_type_size(type);
    if (!es) return SD_ERR_ARG;
    if (type == GGUF_TYPE_BOOL && *(const uint8_t *)value > 1) return SD_ERR_ARG;
    uint8_t *raw = malloc(es);
    if (!raw) return SD_ERR_NOMEM;
    encode(type, value, raw);
    return add_kv(w, key, type, raw, es);
}

sd_status gguf_writer_set_u32(gguf_writer *w, const char *key, uint32_t v) {
    return gguf_writer_set_val(w, key, GGUF_TYPE_UINT32, &v);
}
sd_status gguf_writer_set_i32(gguf_writer *w, const char *key, int32_t v) {
    return gguf_writer_set_val(w, key, GGUF_TYPE_INT32, &v);
}
sd_status gguf_writer_set_u64(gguf_writer *w, const char *key, uint64_t v) {
    return gguf_writer_set_val(w, key, GGUF_TYPE_UINT64, &v);
}
sd_status gguf_writer_set_f32(gguf_writer *w, const char *key, float v) {
    return gguf_writer_set_val(w, key, GGUF_TYPE_FLOAT32, &v);
}
sd_status gguf_writer_set_bool(gguf_writer *w, const char *key, bool v) {
    uint8_t b = v ? 1 : 0;
    return gguf_writer_set_val(w, key, GGUF_TYPE_BOOL, &b);
}

sd_status gguf_writer_set_str(gguf_writer *w, const char *key, const char *s, uint64_t len) {
    if (len > SIZE_MAX - 8) return SD_ERR_NOMEM;
    uint8_t *raw = malloc(8 + len);
    if (!raw) return SD_ERR_NOMEM;
    put64(raw, len);
    if (len) memcpy(raw + 8, s, len);
    return add_kv(w, key, GGUF_TYPE_STRING, raw, 8 + len);
}

sd_status gguf_writer_set_arr_data(gguf_writer *w, const char *key, gguf_type elem, const void *data,
                                   uint64_t n) {
    uint32_t es = gguf_type_size(elem);
    uint64_t bytes, total;
    if (!es) return SD_ERR_ARG;
    if (!sd_mul_u64(n, es, &bytes) || !sd_add_u64(bytes, 12, &total) || total > SIZE_MAX) return SD_ERR_NOMEM;
    uint8_t *raw = malloc((size_t)total);
    if (!raw) return SD_ERR_NOMEM;
    put32(raw, elem);
    put64(raw + 4, n);
    for (uint64_t k = 0; k < n; k++) {
        encode(elem, (const uint8_t *)data + k * es, raw + 12 + k * es);
        if (elem == GGUF_TYPE_BOOL && raw[12 + k] > 1) {
            free(raw);
            return SD_ERR_ARG;
        }
    }
    return add_kv(w, key, GGUF_TYPE_ARRAY, raw, total);
}

sd_status gguf_writer_set_arr_str(gguf_writer *w, const char *key, const char *const *strs,
                                  const uint64_t *lens, uint64_t n) {
    uint64_t total = 12;
    for (uint64_t k = 0; k < n; k++)
        if (!sd_add_u64(total, 8, &total) || !sd_add_u64(total, lens[k], &total)) return SD_ERR_NOMEM;
    if (total > SIZE_MAX) return SD_ERR_NOMEM;
    uint8_t *raw = malloc((size_t)total), *p = raw + 12;
    if (!raw) return SD_ERR_NOMEM;
    put32(raw, GGUF_TYPE_STRING);
    put64(raw + 4, n);
    for (uint64_t k = 0; k < n; k++) {
        put64(p, lens[k]);
        if (lens[k]) memcpy(p + 8, strs[k], lens[k]);
        p += 8 + lens[k];
    }
    return add_kv(w, key, GGUF_TYPE_ARRAY, raw, total);
}

sd_status gguf_writer_set_raw(gguf_writer *w, const char *key, gguf_type type, const void *raw,
                              uint64_t size) {
    if (size > SIZE_MAX || gguf_check_value(type, raw, size, NULL)) return SD_ERR_ARG;
    uint8_t *copy = malloc(size ? (size_t)size : 1);
    if (!copy) return SD_ERR_NOMEM;
    memcpy(copy, raw, (size_t)size);
    return add_kv(w, key, type, copy, size);
}

sd_status gguf_writer_copy_kv(gguf_writer *w, const gguf_ctx *src, int64_t i) {
    if (i < 0 || i >= src->n_kv) return SD_ERR_ARG;
    const gguf_kv *kv = &src->kv[i];
    return gguf_writer_set_raw(w, kv->key, kv->type, kv->raw, kv->raw_size);
}

static sd_status add_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims, const int64_t *ne,
                            const void *data, uint64_t nbytes, gguf_fill_fn fill, void *fill_ctx) {
    if (strlen(name) > GGUF_MAX_NAME || n_dims < 1 || n_dims > GGUF_MAX_DIMS || (!data && !fill && nbytes))
        return SD_ERR_ARG;
    uint64_t rows = 1, row, want;
    for (uint32_t d = 0; d < n_dims; d++) {
        if (ne[d] <= 0) return SD_ERR_ARG;
        if (d > 0 && !sd_mul_u64(rows, (uint64_t)ne[d], &rows)) return SD_ERR_ARG;
    }
    if (!ggml_row_bytes(type, (uint64_t)ne[0], &row) || !sd_mul_u64(row, rows, &want) || want != nbytes)
        return SD_ERR_ARG;
    for (size_t i = 0; i < w->n_t; i++)
        if (!strcmp(w->t[i].name, name)) return SD_ERR_ARG;
    char *nm = strdup(name);
    if (!nm || !grow((void **)&w->t, w->n_t, &w->cap_t, sizeof *w->t)) {
        free(nm);
        return SD_ERR_NOMEM;
    }
    wtensor *t = &w->t[w->n_t++];
    *t = (wtensor){nm, type, n_dims, {1, 1, 1, 1}, data, nbytes, fill, fill_ctx};
    memcpy(t->ne, ne, n_dims * sizeof *ne);
    return SD_OK;
}

sd_status gguf_writer_add_tensor(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                                 const int64_t *ne, const void *data, uint64_t nbytes) {
    return add_tensor(w, name, type, n_dims, ne, data, nbytes, NULL, NULL);
}

sd_status gguf_writer_add_tensor_fill(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                                      const int64_t *ne, uint64_t nbytes, gguf_fill_fn fill, void *ctx) {
    if (!fill) return SD_ERR_ARG;
    return add_tensor(w, name, type, n_dims, ne, NULL, nbytes, fill, ctx);
}

/* ---- output: a FILE or a growing heap buffer ---- */

typedef struct sink {
    FILE *f;
    uint8_t *buf;
    size_t len, cap;
    bool failed;
} sink;

static void emit(sink *s, const void *p, size_t n) {
    if (s->failed || !n) return;
    if (s->f) {
        if (fwrite(p, 1, n, s->f) != n) s->failed = true;
        return;
    }
    if (n > s->cap - s->len) {
        size_t nc = s->cap ? s->cap : 4096;
        while (nc - s->len < n) {
            if (nc > SIZE_MAX / 2) { s->failed = true; return; }
            nc *= 2;
        }
        uint8_t *b = realloc(s->buf, nc);
        if (!b) { s->failed = true; return; }
        s->buf = b, s->cap = nc;
    }
    memcpy(s->buf + s->len, p, n);
    s->len += n;
}

static void emit32(sink *s, uint32_t v) { uint8_t b[4]; put32(b, v); emit(s, b, 4); }
static void emit64(sink *s, uint64_t v) { uint8_t b[8]; put64(b, v); emit(s, b, 8); }
static void emit_str(sink *s, const char *str) { emit64(s, strlen(str)); emit(s, str, strlen(str)); }

static void emit_pad(sink *s, uint64_t *pos, uint32_t align) {
    static const uint8_t zeros[64];
    uint64_t pad = (align - *pos % align) % align;
    *pos += pad;
    while (pad) {
        size_t k = pad < sizeof zeros ? (size_t)pad : sizeof zeros;
        emit(s, zeros, k);
        pad -= k;
    }
}

#define FILL_CHUNK ((size_t)16 << 20)

/* A generated tensor's data, chunk by chunk through one buffer. */
static void emit_filled(sink *s, const wtensor *t) {
    size_t cap = t->nbytes < FILL_CHUNK ? (size_t)t->nbytes : FILL_CHUNK;
    uint8_t *buf = malloc(cap ? cap : 1);
    if (!buf) {
        s->failed = true;
        return;
    }
    for (uint64_t off = 0; off < t->nbytes && !s->failed; off += cap) {
        size_t n = t->nbytes - off < cap ? (size_t)(t->nbytes - off) : cap;
        if (!t->fill(t->fill_ctx, off, buf, n)) s->failed = true;
        else emit(s, buf, n);
    }
    free(buf);
}

static uint64_t padded(uint64_t n, uint32_t a) { return (n + a - 1) / a * a; }

static void emit_all(const gguf_writer *w, sink *s) {
    uint64_t pos = 4 + 4 + 8 + 8;
    emit(s, "GGUF", 4);
    emit32(s, 3);
    emit64(s, w->n_t);
    emit64(s, w->n_kv);
    for (size_t i = 0; i < w->n_kv; i++) {
        emit_str(s, w->kv[i].key);
        emit32(s, w->kv[i].type);
        emit(s, w->kv[i].raw, (size_t)w->kv[i].raw_size);
        pos += 8 + strlen(w->kv[i].key) + 4 + w->kv[i].raw_size;
    }
    uint64_t off = 0;
    for (size_t i = 0; i < w->n_t; i++) {
        const wtensor *t = &w->t[i];
        emit_str(s, t->name);
        emit32(s, t->n_dims);
        for (uint32_t d = 0; d < t->n_dims; d++) emit64(s, (uint64_t)t->ne[d]);
        emit32(s, t->type);
        emit64(s, off);
        pos += 8 + strlen(t->name) + 4 + 8 * t->n_dims + 4 + 8;
        off += padded(t->nbytes, w->alignment);
    }
    emit_pad(s, &pos, w->alignment);
    for (size_t i = 0; i < w->n_t; i++) {
        if (w->t[i].fill) emit_filled(s, &w->t[i]);
        else emit(s, w->t[i].data, (size_t)w->t[i].nbytes);
        pos += w->t[i].nbytes;
        emit_pad(s, &pos, w->alignment);
    }
}

sd_status gguf_writer_write_memory(const gguf_writer *w, void **out, size_t *size, sd_err *err) {
    sink s = {0};
    emit_all(w, &s);
    if (s.failed) {
        free(s.buf);
        return sd_err_set(err, SD_ERR_NOMEM, "out of memory writing GGUF to memory");
    }
    *out = s.buf;
    *size = s.len;
    return SD_OK;
}

sd_status gguf_writer_write(const gguf_writer *w, const char *path, sd_err *err) {
    /* rename() over a device node or FIFO would replace it with a plain file
     * (seen with /dev/full as root): only ever replace regular files. */
    struct stat sb;
    if (stat(path, &sb) == 0 && !S_ISREG(sb.st_mode))
        return sd_err_set(err, SD_ERR_IO, "%s: not a regular file", path);
    size_t n = strlen(path) + 5;
    char *tmp = malloc(n);
    if (!tmp) return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    snprintf(tmp, n, "%s.tmp", path);
    sink s = {.f = fopen(tmp, "wb")};
    if (!s.f) {
        sd_status st = sd_err_set(err, SD_ERR_IO, "%s: cannot create: %s", tmp, strerror(errno));
        free(tmp);
        return st;
    }
    emit_all(w, &s);
    int saved = s.failed ? errno : 0;
    if (fclose(s.f) != 0 && !s.failed) s.failed = true, saved = errno;
    if (!s.failed && rename(tmp, path) != 0) s.failed = true, saved = errno;
    sd_status st = SD_OK;
    if (s.failed) {
        remove(tmp);
        st = sd_err_set(err, SD_ERR_IO, "%s: write failed: %s", path, strerror(saved));
    }
    free(tmp);
    return st;
}
