/* Checks shared by the hostile-input test and the fuzzers (the fuzz targets include
 * this with -I tests): walk every value and tensor byte of an accepted file
 * (so ASan sees any read past what the reader promised), re-write it through
 * the writer, and compare two readings. A broken invariant calls abort(). */
#ifndef SD_TESTS_FORMAT_GGUF_CHECK_H
#define SD_TESTS_FORMAT_GGUF_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/gguf.h"

#define GGUF_CHECK(cond)                                                          \
    do {                                                                          \
        if (!(cond)) {                                                            \
            fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
            abort();                                                              \
        }                                                                         \
    } while (0)

/* Touches every byte the ctx hands out; returns a checksum so the reads are kept. */
static inline uint64_t gguf_walk(const gguf_ctx *ctx) {
    uint64_t sum = gguf_version(ctx) + gguf_alignment(ctx) + gguf_data_offset(ctx);
    char buf[512];
    for (int64_t i = 0; i < gguf_n_kv(ctx); i++) {
        const char *key = gguf_kv_key(ctx, i);
        GGUF_CHECK(gguf_find_key(ctx, key) == i);
        gguf_type et;
        uint64_t n;
        gguf_kv_array_info(ctx, i, &et, &n);
        GGUF_CHECK(gguf_kv_type(ctx, i) < GGUF_TYPE_COUNT && et < GGUF_TYPE_COUNT);
        for (uint64_t j = 0; j < n; j++) {
            gguf_value v;
            if (!gguf_kv_value(ctx, i, j, &v)) {
                GGUF_CHECK(et == GGUF_TYPE_ARRAY);
                continue;
            }
            sum += v.v.u;
            for (uint64_t k = 0; k < v.len; k++) sum += (uint8_t)v.s[k];
        }
        gguf_kv_format(ctx, i, buf, sizeof buf);
        GGUF_CHECK(strlen(buf) < sizeof buf);
        sum += strlen(buf);
    }
    for (int64_t i = 0; i < gguf_n_tensors(ctx); i++) {
        const gguf_tensor_info *t = gguf_tensor(ctx, i);
        GGUF_CHECK(gguf_find_tensor(ctx, t->name) == t);
        GGUF_CHECK(t->n_dims >= 1 && t->n_dims <= GGUF_MAX_DIMS && ggml_type_get(t->type)->known);
        GGUF_CHECK(t->offset % gguf_alignment(ctx) == 0);
        const uint8_t *p = t->data;
        for (uint64_t k = 0; k < t->nbytes; k++) sum += p[k];
    }
    return sum;
}

/* Copies every pair and tensor of ctx into a new GGUF in memory. Returns the
 * writer's status; *out is freed by the caller. */
static inline sd_status gguf_rewrite(const gguf_ctx *ctx, void **out, size_t *size) {
    gguf_writer *w = gguf_writer_init();
    if (!w) return SD_ERR_NOMEM;
    sd_status st = SD_OK;
    for (int64_t i = 0; i < gguf_n_kv(ctx) && !st; i++) st = gguf_writer_copy_kv(w, ctx, i);
    for (int64_t i = 0; i < gguf_n_tensors(ctx) && !st; i++) {
        const gguf_tensor_info *t = gguf_tensor(ctx, i);
        st = gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->nbytes);
    }
    if (!st) st = gguf_writer_write_memory(w, out, size, NULL);
    gguf_writer_free(w);
    return st;
}

/* a and b hold the same metadata (keys, types, values) and tensors. */
static inline void gguf_compare(const gguf_ctx *a, const gguf_ctx *b) {
    char fa[512], fb[512];
    GGUF_CHECK(gguf_n_kv(a) == gguf_n_kv(b) && gguf_n_tensors(a) == gguf_n_tensors(b));
    GGUF_CHECK(gguf_alignment(a) == gguf_alignment(b));
    for (int64_t i = 0; i < gguf_n_kv(a); i++) {
        GGUF_CHECK(strcmp(gguf_kv_key(a, i), gguf_kv_key(b, i)) == 0);
        GGUF_CHECK(gguf_kv_type(a, i) == gguf_kv_type(b, i));
        gguf_type ea, eb;
        uint64_t na, nb;
        gguf_kv_array_info(a, i, &ea, &na);
        gguf_kv_array_info(b, i, &eb, &nb);
        GGUF_CHECK(ea == eb && na == nb);
        for (uint64_t j = 0; j < na; j++) {
            gguf_value va, vb;
            bool ok = gguf_kv_value(a, i, j, &va);
            GGUF_CHECK(ok == gguf_kv_value(b, i, j, &vb));
            if (!ok) continue;
            GGUF_CHECK(va.type == vb.type && memcmp(&va.v, &vb.v, sizeof va.v) == 0 && va.len == vb.len);
            GGUF_CHECK(va.len == 0 || memcmp(va.s, vb.s, va.len) == 0);
        }
        gguf_kv_format(a, i, fa, sizeof fa);
        gguf_kv_format(b, i, fb, sizeof fb);
        GGUF_CHECK(strcmp(fa, fb) == 0);
    }
    for (int64_t i = 0; i < gguf_n_tensors(a); i++) {
        const gguf_tensor_info *ta = gguf_tensor(a, i), *tb = gguf_tensor(b, i);
        GGUF_CHECK(strcmp(ta->name, tb->name) == 0 && ta->type == tb->type && ta->n_dims == tb->n_dims);
        GGUF_CHECK(memcmp(ta->ne, tb->ne, sizeof ta->ne) == 0 && ta->nbytes == tb->nbytes);
        GGUF_CHECK(memcmp(ta->data, tb->data, ta->nbytes) == 0);
    }
}

/* Alignment above which a re-write is skipped: padding a file to 2 GiB
 * boundaries is valid but would only measure the allocator. */
#define GGUF_CHECK_MAX_REWRITE_ALIGN 65536u

/* read -> write -> read -> write: the two readings agree and the two writes
 * are byte-identical (the writer's output is canonical). */
static inline void gguf_check_roundtrip(const gguf_ctx *ctx) {
    if (gguf_alignment(ctx) > GGUF_CHECK_MAX_REWRITE_ALIGN) return;
    void *w1 = NULL, *w2 = NULL;
    size_t s1 = 0, s2 = 0;
    GGUF_CHECK(gguf_rewrite(ctx, &w1, &s1) == SD_OK);
    gguf_ctx *c1 = NULL;
    sd_err e = {0};
    if (gguf_open_memory(w1, s1, &c1, &e) != SD_OK) {
        fprintf(stderr, "re-read failed: %s\n", e.msg);
        abort();
    }
    gguf_compare(ctx, c1);
    GGUF_CHECK(gguf_rewrite(c1, &w2, &s2) == SD_OK);
    GGUF_CHECK(s1 == s2 && memcmp(w1, w2, s1) == 0);
    gguf_close(c1);
    free(w1);
    free(w2);
}

#endif
