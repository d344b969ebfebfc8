/* Reading llama.cpp's importance-matrix files (imatrix.h describes both
 * forms). The legacy reader walks a bounds-checked cursor over the whole
 * file; the GGUF reader uses format/gguf.c's validated open. */
#define _POSIX_C_SOURCE 200809L /* strdup */
#include "numerics/quantize/imatrix.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "format/ggml_type.h"
#include "format/gguf.h"

void sd_imatrix_free(sd_imatrix *im) {
    if (!im) return;
    for (int64_t i = 0; i < im->n; i++) {
        free(im->e[i].name);
        free(im->e[i].mean);
    }
    free(im->e);
    free(im);
}

const sd_imatrix_entry *sd_imatrix_find(const sd_imatrix *im, const char *name) {
    for (int64_t i = 0; im && i < im->n; i++)
        if (!strcmp(im->e[i].name, name)) return &im->e[i];
    return NULL;
}

static bool bad_value(float v) { return !isfinite(v) || v < 0; }

/* ---- legacy .dat ---- */

typedef struct cursor {
    const uint8_t *p;
    size_t n, at;
} cursor;

static bool rd_i32(cursor *c, int32_t *v) {
    if (c->n - c->at < 4) return false;
    uint32_t u = (uint32_t)c->p[c->at] | (uint32_t)c->p[c->at + 1] << 8 | (uint32_t)c->p[c->at + 2] << 16 |
                 (uint32_t)c->p[c->at + 3] << 24;
    memcpy(v, &u, 4);
    c->at += 4;
    return true;
}

static sd_status load_legacy(const char *path, const uint8_t *buf, size_t size, sd_imatrix *im, sd_err *err) {
    cursor c = {buf, size, 0};
    int32_t n_entries;
    if (!rd_i32(&c, &n_entries)) return sd_err_set(err, SD_ERR_FORMAT, "imatrix %s: truncated (no entry count)", path);
    if (n_entries < 1 || (size_t)n_entries > size / 12)
        return sd_err_set(err, SD_ERR_FORMAT, "imatrix %s: bad entry count %d", path, (int)n_entries);
    im->e = sd_calloc((size_t)n_entries, sizeof *im->e);
    if (!im->e) return sd_err_set(err, SD_ERR_NOMEM, "imatrix %s: out of memory", path);
    im->legacy = true;
    for (int32_t i = 0; i < n_entries; i++) {
        int32_t len, ncall, nval;
        if (!rd_i32(&c, &len)) return sd_err_set(err, SD_ERR_FORMAT, "imatrix %s: truncated at entry %d", path, (int)i);
        if (len < 1 || len > 4096 || (size_t)len > c.n - c.at)
            return sd_err_set(err, SD_ERR_FORMAT, "imatrix %s: entry %d: bad name length %d", path, (int)i, (int)len);
        sd_imatrix_entry *e = &im->e[im->n++];
        e->name = malloc((size_t)len + 1);
        if (!e->name) return sd_err_set(err, SD_ERR_NOMEM, "imatrix %s: out of memory", path);
        memcpy(e->name, c.p + c.at, (size_t)len);
        e->name[len] = 0;
        c.at += (size_t)len;
        if (strlen(e->name) != (size_t)len)
            return sd_err_set(err, SD_ERR_FORMAT, "imatrix %s: entry %d: NUL byte in the name", path, (int)i);
        if (!rd_i32(&c, &ncall) || !rd_i32(&c, &nval))
            return sd_err_set(err, SD_ERR_FORMAT, "imatrix %s: entry %s: truncated", path, e->name);
        if (nval < 1 || (size_t)nval > (c.n - c.at) / 4)
            return sd_err_set(err, SD_ERR_FORMAT, "imatrix %s: entry %s: %d values, %zu bytes left (truncated or a bad count)",
                              path, e->name, (int)nval, c.n - c.at);
        if (sd_imatrix_find(&(sd_imatrix){im->n - 1, im->e, true}, e->name))
            return sd_err_set(err, SD_ERR_FORMAT, "imatrix %s: entry %s appears twice", path, e->name);
        e->n = nval;
        e->nmat = 1;
        e->mean = sd_malloc_array((size_t)nval, sizeof(float));
        if (!e->mean) return sd_err_set(err, SD_ERR_NOMEM, "imatrix %s: out of memory", path);
        for (int32_t j = 0; j < nval; j++) {
            float v;
            memcpy(&v, c.p + c.at + 4 * (size_t)j, 4);
            if (bad_value(v))
                return sd_err_set(err, SD_ERR_FORMAT, "imatrix %s: entry %s: value %d is %g (must be finite and >= 0)",
                                  path, e->name, (int)j, (double)v);
            e->mean[j] = ncall > 0 ? v / (float)ncall : v;
        }
        c.at += 4 * (size_t)nval;
    }
    /* optional trailer: chunk count, dataset name */
    if (c.at < c.n) {
        int32_t chunks, len;
        if (!rd_i32(&c, &chunks) || (c.at < c.n && (!rd_i32(&c, &len) || len < 0 || (size_t)len > c.n - c.at)))
            return sd_err_set(err, SD_ERR_FORMAT, "imatrix %s: truncated trailer after the entries", path);
    }
    return SD_OK;
}

/* ---- GGUF ---- */

static bool ends_with(const char *s, const char *suf, size_t *stem) {
    size_t n = strlen(s), m = strlen(suf);
    if (n <= m || strcmp(s + n - m, suf)) return false;
    *stem = n - m;
    return true;
}

static sd_status load_gguf(const char *path, sd_imatrix *im, sd_err *err) {
    gguf_ctx *g = NULL;
    sd_status st = gguf_open(path, &g, err);
    if (st != SD_OK) {
        char msg[sizeof err->msg];
        snprintf(msg, sizeof msg, "%s", err->msg);
        return sd_err_set(err, st, "imatrix: %s", msg);
    }
    int64_t nt = gguf_n_tensors(g);
    im->e = sd_calloc(nt ? (size_t)nt : 1, sizeof *im->e);
    if (!im->e) {
        gguf_close(g);
        return sd_err_set(err, SD_ERR_NOMEM, "imatrix %s: out of memory", path);
    }
    char name[512];
    for (int64_t i = 0; i < nt && st == SD_OK; i++) {
        const gguf_tensor_info *s = gguf_tensor(g, i);
        size_t stem;
        if (ends_with(s->name, ".counts", &stem)) {
            if (stem >= sizeof name - 16) continue;
            snprintf(name, sizeof name, "%.*s.in_sum2", (int)stem, s->name);
            if (!gguf_find_tensor(g, name))
                st = sd_err_set(err, SD_ERR_FORMAT, "imatrix %s: %s has no matching .in_sum2 tensor", path, s->name);
            continue;
        }
        if (!ends_with(s->name, ".in_sum2", &stem)) continue;
        if (stem >= sizeof name - 16) {
            st = sd_err_set(err, SD_ERR_FORMAT, "imatrix %s: tensor name too long", path);
            break;
        }
        snprintf(name, sizeof name, "%.*s.counts", (int)stem, s->name);
        const gguf_tensor_info *c = gguf_find_tensor(g, name);
        if (!c) {
            st = sd_err_set(err, SD_ERR_FORMAT, "imatrix %s: %s has no matching .counts tensor", path, s->name);
            break;
        }
        if (s->type != GGML_TYPE_F32 || c->type != GGML_TYPE_F32) {
            st = sd_err_set(err, SD_ERR_FORMAT, "imatrix %s: %s and its counts must be F32", path, s->name);
            break;
        }
        const int64_t ne0 = s->ne[0], nmat = s->ne[1] * s->ne[2] * s->ne[3];
        const int64_t nc = c->ne[0] * c->ne[1] * c->ne[2] * c->ne[3];
        if (ne0 < 1 || nmat < 1 || nc != nmat || ne0 > (INT64_C(1) << 32) || nmat > 65536) {
            st = sd_err_set(err, SD_ERR_FORMAT, "imatrix %s: %s is %lld x %lld but has %lld counts", path, s->name,
                            (long long)ne0, (long long)nmat, (long long)nc);
            break;
        }
        sd_imatrix_entry *e = &im->e[im->n++];
        e->name = malloc(stem + 1);
        e->n = ne0 * nmat;
        e->nmat = nmat;
        e->mean = sd_malloc_array((size_t)e->n, sizeof(float));
        if (!e->name || !e->mean) {
            st = sd_err_set(err, SD_ERR_NOMEM, "imatrix %s: out of memory", path);
            break;
        }
        memcpy(e->name, s->name, stem);
        e->name[stem] = 0;
        const float *sum = s->data, *cnt = c->data;
        for (int64_t m = 0; m < nmat && st == SD_OK; m++) {
            float cm;
            memcpy(&cm, cnt + m, 4);
            if (bad_value(cm)) {
                st = sd_err_set(err, SD_ERR_FORMAT, "imatrix %s: %s: count %lld is %g (must be finite and >= 0)", path,
                                e->name, (long long)m, (double)cm);
                break;
            }
            for (int64_t j = 0; j < ne0; j++) {
                float v;
                memcpy(&v, sum + m * ne0 + j, 4);
                if (bad_value(v)) {
                    st = sd_err_set(err, SD_ERR_FORMAT, "imatrix %s: %s: value %lld is %g (must be finite and >= 0)",
                                    path, e->name, (long long)(m * ne0 + j), (double)v);
                    break;
                }
                e->mean[m * ne0 + j] = cm > 0 ? v / cm : 1.0f;
            }
        }
    }
    if (st == SD_OK && im->n == 0)
        st = sd_err_set(err, SD_ERR_FORMAT, "imatrix %s: no .in_sum2/.counts tensors (not an importance matrix)", path);
    gguf_close(g);
    return st;
}

sd_status sd_imatrix_load(const char *path, sd_imatrix **out, sd_err *err) {
    *out = NULL;
    FILE *f = fopen(path, "rb");
    if (!f) return sd_err_set(err, SD_ERR_IO, "imatrix %s: cannot open", path);
    uint8_t *buf = NULL;
    size_t size = 0, cap = 0;
    for (;;) {
        if (size == cap) {
            if (cap > ((size_t)1 << 34)) break;
            size_t nc = cap ? cap * 2 : 65536;
            uint8_t *nb = realloc(buf, nc);
            if (!nb) {
                free(buf);
                fclose(f);
                return sd_err_set(err, SD_ERR_NOMEM, "imatrix %s: out of memory", path);
            }
            buf = nb;
            cap = nc;
        }
        size_t r = fread(buf + size, 1, cap - size, f);
        size += r;
        if (r == 0) break;
    }
    bool io = ferror(f);
    fclose(f);
    if (io) {
        free(buf);
        return sd_err_set(err, SD_ERR_IO, "imatrix %s: read error", path);
    }
    sd_imatrix *im = sd_calloc(1, sizeof *im);
    sd_status st;
    if (!im)
        st = sd_err_set(err, SD_ERR_NOMEM, "imatrix %s: out of memory", path);
    else if (size >= 4 && !memcmp(buf, "GGUF", 4))
        st = load_gguf(path, im, err);
    else
        st = load_legacy(path, buf, size, im, err);
    free(buf);
    if (st != SD_OK) {
        sd_imatrix_free(im);
        return st;
    }
    *out = im;
    return SD_OK;
}
