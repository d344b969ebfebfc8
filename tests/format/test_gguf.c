/* format/gguf: write -> read round trip of every metadata type and several
 * tensor types, file output via path.tmp + rename, copy through the reader,
 * the ggml type table, and the five llama.cpp vocab files; tensors produced
 * at write time by a callback (gguf_writer_add_tensor_fill). */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <unistd.h>

#include "format/gguf.h"
#include "format/gguf_sample.h"

static gguf_ctx *open_sample(uint8_t **buf, size_t *size, uint32_t alignment) {
    *buf = sample_build(size, alignment);
    assert_non_null(*buf);
    gguf_ctx *ctx = NULL;
    sd_err e = {0};
    sd_status st = gguf_open_memory(*buf, *size, &ctx, &e);
    if (st) fail_msg("open sample: %s", e.msg);
    return ctx;
}

static void check_scalars(const gguf_ctx *ctx) {
    int64_t i = gguf_find_key(ctx, "t.u8");
    gguf_value v;
    assert_true(i >= 0 && gguf_kv_type(ctx, i) == GGUF_TYPE_UINT8);
    assert_true(gguf_kv_value(ctx, i, 0, &v) && v.v.u == 200);
    assert_false(gguf_kv_value(ctx, i, 1, &v));
    i = gguf_find_key(ctx, "t.i8");
    assert_true(gguf_kv_value(ctx, i, 0, &v) && v.type == GGUF_TYPE_INT8 && v.v.i == -100);
    i = gguf_find_key(ctx, "t.u16");
    assert_true(gguf_kv_value(ctx, i, 0, &v) && v.v.u == 60000);
    i = gguf_find_key(ctx, "t.i16");
    assert_true(gguf_kv_value(ctx, i, 0, &v) && v.v.i == -30000);
    uint32_t u32;
    int64_t i64;
    float f;
    bool b;
    assert_true(gguf_get_u32(ctx, "t.u32", &u32) && u32 == 4000000000u);
    assert_true(gguf_get_u32(ctx, "t.u8", &u32) && u32 == 200); /* any integer type in range */
    assert_false(gguf_get_u32(ctx, "t.i8", &u32));              /* negative */
    assert_false(gguf_get_u32(ctx, "t.u64", &u32));             /* too large */
    assert_false(gguf_get_u32(ctx, "t.f32", &u32));
    assert_false(gguf_get_u32(ctx, "no.such.key", &u32));
    assert_true(gguf_get_i64(ctx, "t.i32", &i64) && i64 == -2000000000);
    assert_true(gguf_get_i64(ctx, "t.i64", &i64) && i64 == -((int64_t)1 << 40));
    assert_false(gguf_get_i64(ctx, "t.u64", &i64));
    i = gguf_find_key(ctx, "t.u64");
    assert_true(gguf_kv_value(ctx, i, 0, &v) && v.v.u == UINT64_MAX - 5);
    assert_true(gguf_get_f32(ctx, "t.f32", &f) && f == 1.5e-5f);
    i = gguf_find_key(ctx, "t.f64");
    assert_true(gguf_kv_value(ctx, i, 0, &v) && v.v.f == 3.25e-300);
    assert_true(gguf_get_bool(ctx, "t.bool", &b) && b);
    assert_false(gguf_get_bool(ctx, "t.u8", &b));
    const char *s;
    uint64_t len;
    assert_true(gguf_get_str(ctx, "t.str", &s, &len));
    assert_true(len == 8 && memcmp(s, "with\0nul", 8) == 0);
    assert_true(gguf_get_str(ctx, "general.architecture", &s, &len) && len == 5 && !memcmp(s, "llama", 5));
    assert_false(gguf_get_str(ctx, "t.u8", &s, &len));
}

static void check_arrays(const gguf_ctx *ctx) {
    gguf_type et;
    uint64_t n;
    const void *data;
    assert_true(gguf_get_arr_data(ctx, "a.f32", &et, &n, &data));
    float fa[3];
    assert_true(et == GGUF_TYPE_FLOAT32 && n == 3);
    memcpy(fa, data, sizeof fa);
    assert_true(fa[0] == 0.5f && fa[1] == -2.0f && fa[2] == 1e30f);
    int32_t ia[4];
    assert_true(gguf_get_arr_data(ctx, "a.i32", &et, &n, &data) && et == GGUF_TYPE_INT32 && n == 4);
    memcpy(ia, data, sizeof ia);
    assert_true(ia[0] == 7 && ia[1] == -8 && ia[3] == 10);
    gguf_value v;
    int64_t i = gguf_find_key(ctx, "a.bool");
    assert_true(gguf_kv_value(ctx, i, 1, &v) && v.type == GGUF_TYPE_BOOL && !v.v.b);
    assert_true(gguf_kv_value(ctx, i, 2, &v) && v.v.b);
    i = gguf_find_key(ctx, "a.u16");
    assert_true(gguf_kv_value(ctx, i, 1, &v) && v.v.u == 65535);
    i = gguf_find_key(ctx, "a.i64");
    assert_true(gguf_kv_value(ctx, i, 0, &v) && v.v.i == INT64_MIN);
    assert_true(gguf_kv_value(ctx, i, 1, &v) && v.v.i == INT64_MAX);
    assert_true(gguf_get_arr_data(ctx, "a.empty", &et, &n, &data) && et == GGUF_TYPE_UINT8 && n == 0);
    assert_false(gguf_get_arr_data(ctx, "tokenizer.ggml.tokens", &et, &n, &data)); /* strings */
    assert_true(gguf_get_arr_str_n(ctx, "tokenizer.ggml.tokens", &n) && n == 5);
    for (uint64_t k = 0; k < 5; k++) {
        const char *s;
        uint64_t len;
        assert_true(gguf_get_arr_str(ctx, "tokenizer.ggml.tokens", k, &s, &len));
        assert_true(len == SAMPLE_STR_LENS[k] && memcmp(s, SAMPLE_STRS[k], len) == 0);
    }
    const char *s;
    uint64_t len;
    assert_false(gguf_get_arr_str(ctx, "tokenizer.ggml.tokens", 5, &s, &len));
    assert_false(gguf_get_arr_str_n(ctx, "a.i32", &n));
    i = gguf_find_key(ctx, "a.nested");
    assert_true(i >= 0 && gguf_kv_type(ctx, i) == GGUF_TYPE_ARRAY);
    gguf_kv_array_info(ctx, i, &et, &n);
    assert_true(et == GGUF_TYPE_ARRAY && n == 3);
    assert_false(gguf_kv_value(ctx, i, 0, &v)); /* elements are arrays */
    char buf[256];
    gguf_kv_format(ctx, gguf_find_key(ctx, "a.i32"), buf, sizeof buf);
    assert_string_equal(buf, "[i32 x 4] 7, -8, 9, 10");
    gguf_kv_format(ctx, gguf_find_key(ctx, "t.str"), buf, sizeof buf);
    assert_string_equal(buf, "\"with\\x00nul\"");
    gguf_kv_format(ctx, i, buf, 8); /* truncates, stays terminated */
    assert_int_equal(strlen(buf), 7);
}

static void check_tensors(const gguf_ctx *ctx, uint32_t alignment) {
    assert_int_equal(gguf_n_tensors(ctx), N_SAMPLE_TENSORS);
    assert_int_equal(gguf_alignment(ctx), alignment);
    assert_int_equal(gguf_data_offset(ctx) % alignment, 0);
    for (size_t i = 0; i < N_SAMPLE_TENSORS; i++) {
        const sample_tensor *want = &SAMPLE_TENSORS[i];
        const gguf_tensor_info *t = gguf_find_tensor(ctx, want->name);
        assert_non_null(t);
        assert_ptr_equal(t, gguf_tensor(ctx, (int64_t)i)); /* order kept */
        assert_string_equal(t->name, want->name);
        assert_int_equal(t->type, want->type);
        assert_int_equal(t->n_dims, want->n_dims);
        for (int d = 0; d < 4; d++) assert_int_equal(t->ne[d], want->ne[d]);
        assert_int_equal(t->nbytes, sample_nbytes(want));
        assert_int_equal(t->offset % alignment, 0);
        const uint8_t *p = t->data;
        for (uint64_t k = 0; k < t->nbytes; k++)
            if (p[k] != sample_byte(i, k)) fail_msg("tensor %s byte %llu differs", t->name, (unsigned long long)k);
    }
    assert_null(gguf_find_tensor(ctx, "missing"));
    assert_null(gguf_tensor(ctx, -1));
    assert_null(gguf_tensor(ctx, (int64_t)N_SAMPLE_TENSORS));
}

static void test_roundtrip_memory(void **state) {
    (void)state;
    static const uint32_t aligns[] = {32, 1, 64, 4096};
    for (size_t a = 0; a < 4; a++) {
        uint8_t *buf;
        size_t size;
        gguf_ctx *ctx = open_sample(&buf, &size, aligns[a]);
        assert_int_equal(gguf_version(ctx), 3);
        assert_int_equal(gguf_n_kv(ctx), 22 + (aligns[a] != 32));
        assert_string_equal(gguf_kv_key(ctx, 0), "general.architecture");
        check_scalars(ctx);
        check_arrays(ctx);
        check_tensors(ctx, aligns[a]);
        gguf_close(ctx);
        free(buf);
    }
}

/* Copying every pair and tensor through a reader gives identical bytes. */
static void test_copy_is_identical(void **state) {
    (void)state;
    uint8_t *buf;
    size_t size;
    gguf_ctx *ctx = open_sample(&buf, &size, 64);
    gguf_writer *w = gguf_writer_init();
    for (int64_t i = 0; i < gguf_n_kv(ctx); i++) assert_int_equal(gguf_writer_copy_kv(w, ctx, i), SD_OK);
    for (int64_t i = 0; i < gguf_n_tensors(ctx); i++) {
        const gguf_tensor_info *t = gguf_tensor(ctx, i);
        assert_int_equal(gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->nbytes), SD_OK);
    }
    void *out;
    size_t out_size;
    assert_int_equal(gguf_writer_write_memory(w, &out, &out_size, NULL), SD_OK);
    assert_int_equal(out_size, size);
    assert_memory_equal(out, buf, size);
    free(out);
    gguf_writer_free(w);
    gguf_close(ctx);
    free(buf);
}

/* A fill source over a byte array: checks the writer asks for the bytes in
 * order, each once, and can be told to fail. */
typedef struct fill_src {
    const uint8_t *data;
    uint64_t next; /* the offset the writer must ask for next */
    int calls;
    bool fail;
} fill_src;

static bool fill_copy(void *ctx, uint64_t offset, void *buf, size_t len) {
    fill_src *f = ctx;
    assert_int_equal(offset, f->next);
    memcpy(buf, f->data + offset, len);
    f->next += len;
    f->calls++;
    return !f->fail;
}

/* Tensors whose data a callback produces at write time give the same bytes
 * as borrowed data, also across the writer's 16 MiB chunks; a callback that
 * fails fails the write and leaves no file behind. */
static void test_fill_tensors(void **state) {
    (void)state;
    uint8_t *buf;
    size_t size;
    gguf_ctx *ctx = open_sample(&buf, &size, 32);
    const int64_t big_ne[2] = {4096, 1100}; /* 17.2 MiB of f32: two chunks */
    const uint64_t big_bytes = 4096 * 1100 * sizeof(float);
    uint8_t *big = malloc(big_bytes);
    assert_non_null(big);
    for (uint64_t i = 0; i < big_bytes; i++) big[i] = (uint8_t)(i * 2654435761u >> 13);
    gguf_writer *wd = gguf_writer_init(), *wf = gguf_writer_init();
    fill_src src[N_SAMPLE_TENSORS + 1] = {0};
    for (int64_t i = 0; i < gguf_n_tensors(ctx); i++) {
        const gguf_tensor_info *t = gguf_tensor(ctx, i);
        src[i].data = t->data;
        assert_int_equal(gguf_writer_add_tensor(wd, t->name, t->type, t->n_dims, t->ne, t->data, t->nbytes), SD_OK);
        assert_int_equal(gguf_writer_add_tensor_fill(wf, t->name, t->type, t->n_dims, t->ne, t->nbytes, fill_copy,
                                                     &src[i]), SD_OK);
    }
    fill_src *bs = &src[gguf_n_tensors(ctx)];
    bs->data = big;
    assert_int_equal(gguf_writer_add_tensor(wd, "big", GGML_TYPE_F32, 2, big_ne, big, big_bytes), SD_OK);
    assert_int_equal(gguf_writer_add_tensor_fill(wf, "big", GGML_TYPE_F32, 2, big_ne, big_bytes, fill_copy, bs), SD_OK);
    assert_int_equal(gguf_writer_add_tensor_fill(wf, "nofill", GGML_TYPE_F32, 2, big_ne, big_bytes, NULL, bs),
                     SD_ERR_ARG);
    void *a, *b;
    size_t na, nb;
    assert_int_equal(gguf_writer_write_memory(wd, &a, &na, NULL), SD_OK);
    assert_int_equal(gguf_writer_write_memory(wf, &b, &nb, NULL), SD_OK);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na);
    assert_int_equal(bs->next, big_bytes);
    assert_int_equal(bs->calls, 2);
    free(a), free(b);
    /* a failing producer: SD_ERR_IO, neither path nor path.tmp left */
    char dir[] = "/tmp/sd_gguf_XXXXXX", path[256], tmp[260];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/m.gguf", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    bs->next = 0, bs->fail = true;
    for (int64_t i = 0; i < gguf_n_tensors(ctx); i++) src[i].next = 0;
    sd_err e = {0};
    assert_int_equal(gguf_writer_write(wf, path, &e), SD_ERR_IO);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(access(tmp, F_OK), -1);
    rmdir(dir);
    gguf_writer_free(wd), gguf_writer_free(wf);
    free(big);
    gguf_close(ctx);
    free(buf);
}

static void test_writer_refuses(void **state) {
    (void)state;
    gguf_writer *w = gguf_writer_init();
    assert_int_equal(gguf_writer_set_u32(w, "k", 1), SD_OK);
    assert_int_equal(gguf_writer_set_u32(w, "k", 2), SD_ERR_ARG);              /* duplicate */
    assert_int_equal(gguf_writer_set_u32(w, "general.alignment", 48), SD_ERR_ARG); /* not 2^k */
    assert_int_equal(gguf_writer_set_u32(w, "general.alignment", 0), SD_ERR_ARG);
    assert_int_equal(gguf_writer_set_val(w, "s", GGUF_TYPE_STRING, "x"), SD_ERR_ARG);
    uint8_t two = 2;
    assert_int_equal(gguf_writer_set_val(w, "b", GGUF_TYPE_BOOL, &two), SD_ERR_ARG);
    uint8_t raw[12] = {9, 0, 0, 0, 1}; /* array of 1 array, elements missing */
    assert_int_equal(gguf_writer_set_raw(w, "r", GGUF_TYPE_ARRAY, raw, sizeof raw), SD_ERR_ARG);
    float x[64] = {0};
    int64_t ne[4] = {64, 1, 1, 1}, bad_ne[4] = {0, 1, 1, 1}, odd_ne[4] = {33, 1, 1, 1};
    assert_int_equal(gguf_writer_add_tensor(w, "t", GGML_TYPE_F32, 1, ne, x, 256), SD_OK);
    assert_int_equal(gguf_writer_add_tensor(w, "t", GGML_TYPE_F32, 1, ne, x, 256), SD_ERR_ARG);
    assert_int_equal(gguf_writer_add_tensor(w, "u", GGML_TYPE_F32, 1, ne, x, 255), SD_ERR_ARG);
    assert_int_equal(gguf_writer_add_tensor(w, "u", GGML_TYPE_F32, 1, bad_ne, x, 0), SD_ERR_ARG);
    assert_int_equal(gguf_writer_add_tensor(w, "u", GGML_TYPE_Q8_0, 1, odd_ne, x, 34), SD_ERR_ARG);
    assert_int_equal(gguf_writer_add_tensor(w, "u", GGML_TYPE_F32, 5, ne, x, 256), SD_ERR_ARG);
    assert_int_equal(gguf_writer_add_tensor(w, "u", 4, 1, ne, x, 256), SD_ERR_ARG);
    char longname[80];
    memset(longname, 'a', sizeof longname - 1);
    longname[79] = 0;
    assert_int_equal(gguf_writer_add_tensor(w, longname, GGML_TYPE_F32, 1, ne, x, 256), SD_ERR_ARG);
    gguf_writer_free(w);
}

/* gguf_writer_write goes through path.tmp and leaves only path; gguf_open
 * (mmap) reads it back; a missing file is an i/o error naming the path. */
static void test_file_roundtrip(void **state) {
    (void)state;
    char dir[] = "/tmp/sd_gguf_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256], tmp[260];
    snprintf(path, sizeof path, "%s/m.gguf", dir);
    snprintf(tmp, sizeof tmp, "%s.tmp", path);
    gguf_writer *w = gguf_writer_init();
    uint8_t *data[N_SAMPLE_TENSORS] = {0};
    assert_int_equal(sample_fill(w, data, 32), 0);
    sd_err e = {0};
    assert_int_equal(gguf_writer_write(w, path, &e), SD_OK);
    assert_int_equal(access(tmp, F_OK), -1);
    gguf_ctx *ctx = NULL;
    if (gguf_open(path, &ctx, &e)) fail_msg("%s", e.msg);
    check_scalars(ctx);
    check_arrays(ctx);
    check_tensors(ctx, 32);
    gguf_close(ctx);
    char bad[300];
    snprintf(bad, sizeof bad, "%s/nodir/m.gguf", dir);
    assert_int_equal(gguf_writer_write(w, bad, &e), SD_ERR_IO);
    assert_int_equal(gguf_open(bad, &ctx, &e), SD_ERR_IO);
    assert_null(ctx);
    assert_non_null(strstr(e.msg, "nodir/m.gguf"));
    assert_int_equal(gguf_open(dir, &ctx, &e), SD_ERR_IO); /* a directory */
    FILE *f = fopen(path, "wb");
    fclose(f);
    assert_int_equal(gguf_open(path, &ctx, &e), SD_ERR_FORMAT); /* empty */
    remove(path);
    rmdir(dir);
    for (size_t i = 0; i < N_SAMPLE_TENSORS; i++) free(data[i]);
    gguf_writer_free(w);
}

static void test_type_table(void **state) {
    (void)state;
    static const struct { uint32_t t, block, size; const char *name; } want[] = {
        {GGML_TYPE_F32, 1, 4, "f32"},      {GGML_TYPE_F16, 1, 2, "f16"},     {GGML_TYPE_BF16, 1, 2, "bf16"},
        {GGML_TYPE_Q4_0, 32, 18, "q4_0"},  {GGML_TYPE_Q4_1, 32, 20, "q4_1"}, {GGML_TYPE_Q5_0, 32, 22, "q5_0"},
        {GGML_TYPE_Q5_1, 32, 24, "q5_1"},  {GGML_TYPE_Q8_0, 32, 34, "q8_0"}, {GGML_TYPE_Q8_1, 32, 36, "q8_1"},
        {GGML_TYPE_Q2_K, 256, 84, "q2_K"}, {GGML_TYPE_Q3_K, 256, 110, "q3_K"}, {GGML_TYPE_Q4_K, 256, 144, "q4_K"},
        {GGML_TYPE_Q5_K, 256, 176, "q5_K"}, {GGML_TYPE_Q6_K, 256, 210, "q6_K"}, {GGML_TYPE_Q8_K, 256, 292, "q8_K"},
        {GGML_TYPE_I8, 1, 1, "i8"},        {GGML_TYPE_I16, 1, 2, "i16"},     {GGML_TYPE_I32, 1, 4, "i32"},
        {GGML_TYPE_I64, 1, 8, "i64"},      {GGML_TYPE_F64, 1, 8, "f64"},
    };
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        const ggml_type_info *ti = ggml_type_get(want[i].t);
        assert_true(ti->known);
        assert_int_equal(ti->block_size, want[i].block);
        assert_int_equal(ti->type_size, want[i].size);
        assert_string_equal(ti->name, want[i].name);
        assert_int_equal(ggml_type_from_name(want[i].name), (int)want[i].t);
    }
    for (uint32_t t = 0; t < 64; t++) {
        bool removed = t == 4 || t == 5 || (t >= 31 && t <= 33) || (t >= 36 && t <= 38) || t >= 40;
        assert_int_equal(ggml_type_get(t)->known, !removed);
    }
    assert_false(ggml_type_get(UINT32_MAX)->known);
    assert_int_equal(ggml_type_from_name("Q4_K"), GGML_TYPE_Q4_K);
    assert_int_equal(ggml_type_from_name("q4_k_m"), -1);
    uint64_t b;
    assert_true(ggml_row_bytes(GGML_TYPE_Q4_K, 512, &b) && b == 288);
    assert_false(ggml_row_bytes(GGML_TYPE_Q4_K, 100, &b));
    assert_false(ggml_row_bytes(4, 32, &b));
    assert_false(ggml_row_bytes(GGML_TYPE_F64, UINT64_MAX / 4, &b));
}

/* The five vocab files: facts checked against an independent reading of them
 * (tests/cli/gguf_dump.py prints the same numbers). */
static void test_vocab_files(void **state) {
    (void)state;
    static const struct { const char *file, *model, *arch; uint64_t n_tokens; int64_t n_kv; } want[] = {
        {"ggml-vocab-gpt-2.gguf", "gpt2", "gpt2", 50257, 16},
        {"ggml-vocab-llama-bpe.gguf", "gpt2", "llama", 128256, 20},
        {"ggml-vocab-llama-spm.gguf", "llama", "llama", 32000, 22},
        {"ggml-vocab-qwen2.gguf", "gpt2", "qwen2", 151936, 20},
        {"ggml-vocab-qwen35.gguf", "gpt2", "qwen2", 151936, 20},
    };
    for (size_t i = 0; i < 5; i++) {
        char path[256];
        snprintf(path, sizeof path, "tests/data/tokenizer/%s", want[i].file);
        gguf_ctx *ctx;
        sd_err e = {0};
        if (gguf_open(path, &ctx, &e)) fail_msg("%s", e.msg);
        const char *s;
        uint64_t len, n;
        assert_int_equal(gguf_version(ctx), 3);
        assert_int_equal(gguf_n_kv(ctx), want[i].n_kv);
        assert_int_equal(gguf_n_tensors(ctx), 0);
        assert_true(gguf_get_str(ctx, "tokenizer.ggml.model", &s, &len));
        assert_true(len == strlen(want[i].model) && !memcmp(s, want[i].model, len));
        assert_true(gguf_get_str(ctx, "general.architecture", &s, &len));
        assert_true(len == strlen(want[i].arch) && !memcmp(s, want[i].arch, len));
        assert_true(gguf_get_arr_str_n(ctx, "tokenizer.ggml.tokens", &n));
        assert_int_equal(n, want[i].n_tokens);
        gguf_type et;
        const void *tt;
        assert_true(gguf_get_arr_data(ctx, "tokenizer.ggml.token_type", &et, &n, &tt));
        assert_true(et == GGUF_TYPE_INT32 && n == want[i].n_tokens);
        /* last token string lies inside the file */
        assert_true(gguf_get_arr_str(ctx, "tokenizer.ggml.tokens", want[i].n_tokens - 1, &s, &len));
        gguf_close(ctx);
    }
}

/* Special files: reading a FIFO must not block waiting for a writer, and the
 * writer must not replace a FIFO (or device node) with a regular file. */
static void test_special_files(void **state) {
    (void)state;
    char path[64];
    snprintf(path, sizeof path, "/tmp/sd-gguf-fifo-%d", (int)getpid());
    unlink(path);
    assert_int_equal(mkfifo(path, 0600), 0);
    gguf_ctx *ctx = NULL;
    sd_err e = {0};
    assert_int_equal(gguf_open(path, &ctx, &e), SD_ERR_IO);
    assert_non_null(strstr(e.msg, "not a regular file"));
    gguf_writer *w = gguf_writer_init();
    assert_non_null(w);
    assert_int_equal(gguf_writer_set_u32(w, "a.b", 1), SD_OK);
    assert_int_equal(gguf_writer_write(w, path, &e), SD_ERR_IO);
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    assert_true(S_ISFIFO(sb.st_mode));
    gguf_writer_free(w);
    unlink(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_special_files),
        cmocka_unit_test(test_roundtrip_memory), cmocka_unit_test(test_copy_is_identical),
        cmocka_unit_test(test_fill_tensors),
        cmocka_unit_test(test_writer_refuses),   cmocka_unit_test(test_file_roundtrip),
        cmocka_unit_test(test_type_table),       cmocka_unit_test(test_vocab_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
