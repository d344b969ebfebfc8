/* The public face of the checked GGUF reader (format/gguf.c): a handle over
 * gguf_ctx with key and tensor iteration, for `specdec inspect` and any
 * program that wants to look into a model file without loading it. */
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "format/gguf.h"

struct specdec_gguf {
    gguf_ctx *ctx;
};

specdec_status specdec_gguf_open(const char *path, specdec_gguf **out, specdec_error *err) {
    if (!out) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_gguf_open: out is NULL");
    *out = NULL;
    if (!path) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_gguf_open: path is NULL");
    specdec_gguf *g = calloc(1, sizeof *g);
    if (!g) return sd_api_fail(err, SPECDEC_ERR_NOMEM, "%s: out of memory", path);
    sd_err e = {0};
    if (gguf_open(path, &g->ctx, &e) != SD_OK) {
        free(g);
        return sd_api_error(err, &e);
    }
    *out = g;
    return SPECDEC_OK;
}

void specdec_gguf_close(specdec_gguf *g) {
    if (!g) return;
    gguf_close(g->ctx);
    free(g);
}

specdec_gguf_header specdec_gguf_header_get(const specdec_gguf *g) {
    return (specdec_gguf_header){gguf_version(g->ctx), gguf_alignment(g->ctx), gguf_data_offset(g->ctx),
                                 gguf_n_kv(g->ctx), gguf_n_tensors(g->ctx)};
}

static bool kv_in_range(const specdec_gguf *g, int64_t i) { return i >= 0 && i < gguf_n_kv(g->ctx); }

int64_t specdec_gguf_find_key(const specdec_gguf *g, const char *key) {
    return key ? gguf_find_key(g->ctx, key) : -1;
}

const char *specdec_gguf_key(const specdec_gguf *g, int64_t i) {
    return kv_in_range(g, i) ? gguf_kv_key(g->ctx, i) : NULL;
}

const char *specdec_gguf_kv_type(const specdec_gguf *g, int64_t i, const char **elem_type, uint64_t *n) {
    if (!kv_in_range(g, i)) return NULL;
    gguf_type et;
    uint64_t count;
    gguf_kv_array_info(g->ctx, i, &et, &count);
    if (elem_type) *elem_type = gguf_type_name(et);
    if (n) *n = count;
    return gguf_type_name(gguf_kv_type(g->ctx, i));
}

static specdec_gguf_kind kind_of(gguf_type t) {
    switch (t) {
    case GGUF_TYPE_STRING: return SPECDEC_GGUF_STRING;
    case GGUF_TYPE_BOOL: return SPECDEC_GGUF_BOOL;
    case GGUF_TYPE_FLOAT32: case GGUF_TYPE_FLOAT64: return SPECDEC_GGUF_FLOAT;
    case GGUF_TYPE_INT8: case GGUF_TYPE_INT16: case GGUF_TYPE_INT32: case GGUF_TYPE_INT64: return SPECDEC_GGUF_INT;
    default: return SPECDEC_GGUF_UINT;
    }
}

bool specdec_gguf_kv_value(const specdec_gguf *g, int64_t i, uint64_t j, specdec_gguf_value *out) {
    gguf_value v;
    if (!out || !kv_in_range(g, i) || !gguf_kv_value(g->ctx, i, j, &v)) return false;
    *out = (specdec_gguf_value){.kind = kind_of(v.type), .s = v.s, .len = v.len};
    switch (out->kind) {
    case SPECDEC_GGUF_BOOL: out->b = v.v.b; break;
    case SPECDEC_GGUF_FLOAT: out->f = v.v.f; break;
    case SPECDEC_GGUF_INT: out->i = v.v.i; break;
    case SPECDEC_GGUF_UINT: out->u = v.v.u; break;
    case SPECDEC_GGUF_STRING: break;
    }
    return true;
}

void specdec_gguf_kv_format(const specdec_gguf *g, int64_t i, char *buf, size_t cap) {
    if (!buf || !cap) return;
    if (!kv_in_range(g, i)) {
        buf[0] = 0;
        return;
    }
    gguf_kv_format(g->ctx, i, buf, cap);
}

bool specdec_gguf_tensor_get(const specdec_gguf *g, int64_t i, specdec_gguf_tensor *out) {
    if (!out || i < 0 || i >= gguf_n_tensors(g->ctx)) return false;
    const gguf_tensor_info *t = gguf_tensor(g->ctx, i);
    _Static_assert(GGUF_MAX_DIMS == 4, "specdec_gguf_tensor.ne holds GGUF_MAX_DIMS dimensions");
    *out = (specdec_gguf_tensor){.name = t->name, .type_name = ggml_type_get(t->type)->name, .type = t->type,
                                 .n_dims = t->n_dims, .offset = t->offset, .nbytes = t->nbytes};
    memcpy(out->ne, t->ne, sizeof out->ne);
    return true;
}
