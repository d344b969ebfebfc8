/* format/gguf against hostile input: a valid file from the writer is
 * truncated at every offset, has single fields patched to absurd values, is
 * hand-built with nesting bombs, and gets thousands of seeded random byte
 * mutations. Every input is opened from an exact-size heap copy so ASan sees
 * any over-read; each must be refused with a one-line message, or accepted
 * only if everything it hands out is readable and survives a re-write. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/gguf.h"
#include "format/gguf_check.h"
#include "format/gguf_sample.h"

typedef struct result {
    sd_status st;
    char msg[512];
} result;

/* Opens an exact-size copy of bytes[0..n); on success walks and re-writes it. */
static result try_open(const uint8_t *bytes, size_t n) {
    result r = {0};
    uint8_t *copy = malloc(n ? n : 1);
    assert_non_null(copy);
    memcpy(copy, bytes, n);
    gguf_ctx *ctx = NULL;
    sd_err e = {0};
    r.st = gguf_open_memory(n ? copy : NULL, n, &ctx, &e);
    if (r.st == SD_OK) {
        assert_non_null(ctx);
        gguf_walk(ctx);
        gguf_check_roundtrip(ctx);
        gguf_close(ctx);
    } else {
        assert_null(ctx);
        assert_true(e.code == r.st);
        assert_true(e.msg[0] != 0);
        assert_null(strchr(e.msg, '\n'));
        memcpy(r.msg, e.msg, sizeof r.msg);
    }
    free(copy);
    return r;
}

/* Refused with code and a message containing word. */
static void expect_refused(const uint8_t *bytes, size_t n, sd_status code, const char *word) {
    result r = try_open(bytes, n);
    if (r.st != code || !strstr(r.msg, word))
        fail_msg("expected %s containing '%s', got %s: %s", sd_status_name(code), word, sd_status_name(r.st), r.msg);
}

static void put_le(uint8_t *p, uint64_t v, int n) {
    for (int k = 0; k < n; k++) p[k] = (uint8_t)(v >> (8 * k));
}

/* ---- field locations in the sample ---- */

/* Offset just past the string `s` (as encoded: u64 length + bytes) in buf. */
static size_t after_string(const uint8_t *buf, size_t size, const char *s) {
    size_t len = strlen(s);
    for (size_t i = 8; i + len <= size; i++)
        if (!memcmp(buf + i, s, len) && buf[i - 8] == len && !memcmp(buf + i - 7, "\0\0\0\0\0\0\0", 7))
            return i + len;
    fail_msg("string '%s' not in sample", s);
    return 0;
}

typedef struct sample {
    uint8_t *buf;
    size_t size;
    size_t data_end; /* end of the last tensor's data: shorter files are truncated */
    gguf_ctx *ctx;
} sample;

static sample load_sample(uint32_t alignment) {
    sample s = {0};
    s.buf = sample_build(&s.size, alignment);
    assert_non_null(s.buf);
    assert_int_equal(gguf_open_memory(s.buf, s.size, &s.ctx, NULL), SD_OK);
    for (int64_t i = 0; i < gguf_n_tensors(s.ctx); i++) {
        const gguf_tensor_info *t = gguf_tensor(s.ctx, i);
        size_t end = (size_t)(gguf_data_offset(s.ctx) + t->offset + t->nbytes);
        if (end > s.data_end) s.data_end = end;
    }
    return s;
}

static void free_sample(sample *s) {
    gguf_close(s->ctx);
    free(s->buf);
}

/* Offset of tensor `name`'s n_dims field. */
static size_t tensor_field(const sample *s, const char *name) { return after_string(s->buf, s->size, name); }

/* ---- tests ---- */

static void test_truncate_everywhere(void **state) {
    (void)state;
    sample s = load_sample(32);
    assert_true(s.data_end < s.size); /* the last tensor is padded: some cuts stay valid */
    for (size_t n = 0; n < s.size; n++) {
        result r = try_open(s.buf, n);
        if (n < s.data_end && r.st == SD_OK) fail_msg("truncation at %zu accepted", n);
        if (n >= s.data_end && r.st != SD_OK) fail_msg("cut in the final padding at %zu refused: %s", n, r.msg);
    }
    expect_refused(s.buf, 0, SD_ERR_FORMAT, "too short");
    expect_refused(s.buf, 10, SD_ERR_FORMAT, "truncated");
    result r = try_open(s.buf, s.data_end - 1);
    assert_non_null(strstr(r.msg, "past end of file"));
    assert_non_null(strstr(r.msg, "output.weight"));
    free_sample(&s);
}

static void test_header_fields(void **state) {
    (void)state;
    sample s = load_sample(32);
    uint8_t *b = malloc(s.size);
    assert_non_null(b);
#define PATCH(off, val, width, code, word)          \
    do {                                          \
        memcpy(b, s.buf, s.size);                 \
        put_le(b + (off), (val), (width));        \
        expect_refused(b, s.size, (code), (word)); \
    } while (0)
    PATCH(0, 0x47475546, 4, SD_ERR_FORMAT, "magic"); /* "FUGG" */
    PATCH(4, 1, 4, SD_ERR_UNSUPPORTED, "version 1");
    PATCH(4, 0x03000000, 4, SD_ERR_UNSUPPORTED, "big-endian");
    PATCH(4, 4, 4, SD_ERR_FORMAT, "version");
    PATCH(8, UINT64_MAX, 8, SD_ERR_FORMAT, "n_tensors");
    PATCH(8, (uint64_t)1 << 40, 8, SD_ERR_FORMAT, "n_tensors");
    PATCH(16, UINT64_MAX, 8, SD_ERR_FORMAT, "n_kv");
    PATCH(16, (uint64_t)1 << 33, 8, SD_ERR_FORMAT, "n_kv");
    /* one more pair or tensor than present: parsing runs into the next section */
    memcpy(b, s.buf, s.size);
    put_le(b + 8, N_SAMPLE_TENSORS + 1, 8);
    assert_int_not_equal(try_open(b, s.size).st, SD_OK);
    memcpy(b, s.buf, s.size);
    put_le(b + 16, (uint64_t)gguf_n_kv(s.ctx) + 1, 8);
    assert_int_not_equal(try_open(b, s.size).st, SD_OK);
    /* first key's length */
    PATCH(24, UINT64_MAX, 8, SD_ERR_FORMAT, "string length");
    PATCH(24, s.size, 8, SD_ERR_FORMAT, "past end of file");
    free(b);
    free_sample(&s);
}

static void test_kv_fields(void **state) {
    (void)state;
    sample s = load_sample(64);
    uint8_t *b = malloc(s.size);
    assert_non_null(b);
    size_t u8 = after_string(s.buf, s.size, "t.u8");      /* -> type tag */
    size_t tok = after_string(s.buf, s.size, "tokenizer.ggml.tokens");
    size_t al = after_string(s.buf, s.size, "general.alignment");
    size_t bo = after_string(s.buf, s.size, "t.bool");
    size_t st = after_string(s.buf, s.size, "t.str");
    PATCH(u8, 13, 4, SD_ERR_FORMAT, "unknown value type 13");
    PATCH(u8, UINT32_MAX, 4, SD_ERR_FORMAT, "unknown value type");
    PATCH(tok + 4, 13, 4, SD_ERR_FORMAT, "unknown array element type");
    PATCH(tok + 8, UINT64_MAX, 8, SD_ERR_FORMAT, "does not fit");
    PATCH(tok + 8, (uint64_t)1 << 40, 8, SD_ERR_FORMAT, "does not fit");
    PATCH(tok + 16, UINT64_MAX - 3, 8, SD_ERR_FORMAT, "string length"); /* first token's length */
    PATCH(st + 4, UINT64_MAX, 8, SD_ERR_FORMAT, "t.str");
    PATCH(bo + 4, 2, 1, SD_ERR_FORMAT, "bool value 2");
    PATCH(al + 4, 0, 4, SD_ERR_FORMAT, "general.alignment");
    PATCH(al + 4, 48, 4, SD_ERR_FORMAT, "power of two");
    PATCH(al, GGUF_TYPE_INT32, 4, SD_ERR_FORMAT, "expected u32");
    PATCH(u8 - 2, 'i', 1, SD_ERR_FORMAT, "duplicate key 't.i8'"); /* "t.u8" -> "t.i8" */
    PATCH(u8 - 1, 0, 1, SD_ERR_FORMAT, "NUL");
    free(b);
    free_sample(&s);
}

static void test_tensor_fields(void **state) {
    (void)state;
    sample s = load_sample(32);
    uint8_t *b = malloc(s.size);
    assert_non_null(b);
    size_t q = tensor_field(&s, "blk.0.attn_q.weight"); /* q4_0 [64, 2] */
    size_t k = tensor_field(&s, "blk.0.attn_k.weight"); /* q8_0 [32, 1, 2] */
    size_t e = tensor_field(&s, "token_embd.weight");   /* f32 [8, 3] */
    uint64_t k_off = gguf_find_tensor(s.ctx, "blk.0.attn_k.weight")->offset;
    PATCH(q, 0, 4, SD_ERR_FORMAT, "n_dims 0");
    PATCH(q, 5, 4, SD_ERR_FORMAT, "n_dims 5");
    PATCH(q, UINT32_MAX, 4, SD_ERR_FORMAT, "n_dims");
    PATCH(q + 4, 0, 8, SD_ERR_FORMAT, "not positive");
    PATCH(q + 4, UINT64_MAX, 8, SD_ERR_FORMAT, "not positive"); /* -1 */
    PATCH(q + 4, 48, 8, SD_ERR_FORMAT, "block size");
    PATCH(q + 4, ((uint64_t)1 << 63) - 64, 8, SD_ERR_FORMAT, "overflows");
    PATCH(k + 12, (uint64_t)1 << 62, 8, SD_ERR_FORMAT, "blk.0.attn_k.weight"); /* ne[1] */
    PATCH(q + 20, 4, 4, SD_ERR_UNSUPPORTED, "unknown tensor type 4");
    PATCH(q + 20, 1000, 4, SD_ERR_UNSUPPORTED, "unknown tensor type");
    PATCH(q + 24, (uint64_t)1 << 20, 8, SD_ERR_FORMAT, "past end of file");
    PATCH(q + 24, UINT64_MAX - 31, 8, SD_ERR_FORMAT, "past end of file"); /* offset + size overflows */
    PATCH(q + 24, 8, 8, SD_ERR_FORMAT, "alignment");
    PATCH(q + 24, k_off, 8, SD_ERR_FORMAT, "overlap");
    PATCH(e + 4, 16, 8, SD_ERR_FORMAT, "overlap"); /* f32 [16, 3]: runs into the next tensor */
    PATCH(k - 8, 'q', 1, SD_ERR_FORMAT, "duplicate tensor name 'blk.0.attn_q.weight'");
    free(b);
    free_sample(&s);
#undef PATCH
}

/* ---- hand-built files ---- */

typedef struct hbuf {
    uint8_t b[4096];
    size_t n;
} hbuf;

static void h_put(hbuf *h, uint64_t v, int width) {
    put_le(h->b + h->n, v, width);
    h->n += (size_t)width;
}
static void h_str(hbuf *h, const char *s) {
    h_put(h, strlen(s), 8);
    memcpy(h->b + h->n, s, strlen(s));
    h->n += strlen(s);
}
static void h_header(hbuf *h, uint64_t n_tensors, uint64_t n_kv) {
    h->n = 0;
    memcpy(h->b, "GGUF", 4);
    h->n = 4;
    h_put(h, 3, 4);
    h_put(h, n_tensors, 8);
    h_put(h, n_kv, 8);
}

/* One pair "x" = `depth` nested arrays, each holding one element, the
 * innermost holding one i32. */
static void nested(hbuf *h, int depth) {
    h_header(h, 0, 1);
    h_str(h, "x");
    h_put(h, GGUF_TYPE_ARRAY, 4);
    for (int d = 1; d < depth; d++) h_put(h, GGUF_TYPE_ARRAY, 4), h_put(h, 1, 8);
    h_put(h, GGUF_TYPE_INT32, 4), h_put(h, 1, 8), h_put(h, 7, 4);
}

static void test_handbuilt(void **state) {
    (void)state;
    hbuf h;
    nested(&h, 4); /* the deepest allowed */
    assert_int_equal(try_open(h.b, h.n).st, SD_OK);
    nested(&h, 5);
    expect_refused(h.b, h.n, SD_ERR_FORMAT, "nested");
    nested(&h, 300); /* depth bomb */
    expect_refused(h.b, h.n, SD_ERR_FORMAT, "nested");
    /* wide bomb: 2^60 empty arrays claimed */
    h_header(&h, 0, 1);
    h_str(&h, "x");
    h_put(&h, GGUF_TYPE_ARRAY, 4), h_put(&h, GGUF_TYPE_ARRAY, 4), h_put(&h, (uint64_t)1 << 60, 8);
    for (int k = 0; k < 10; k++) h_put(&h, GGUF_TYPE_UINT8, 4), h_put(&h, 0, 8);
    expect_refused(h.b, h.n, SD_ERR_FORMAT, "does not fit");
    /* tensor name longer than llama.cpp's 63 bytes */
    h_header(&h, 1, 0);
    h_str(&h, "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa");
    h_put(&h, 1, 4), h_put(&h, 4, 8), h_put(&h, GGML_TYPE_F32, 4), h_put(&h, 0, 8);
    expect_refused(h.b, h.n, SD_ERR_FORMAT, "longer than");
    /* control bytes in a name are escaped: the message stays one line */
    h_header(&h, 0, 1);
    h_str(&h, "a\nb\rc");
    h_put(&h, 99, 4);
    expect_refused(h.b, h.n, SD_ERR_FORMAT, "kv 'a\\x0ab\\x0dc': unknown value type 99");
    /* zero pairs, zero tensors: valid, data offset past the end is fine */
    h_header(&h, 0, 0);
    assert_int_equal(try_open(h.b, h.n).st, SD_OK);
    /* version 2 is read like 3 */
    h_header(&h, 1, 0);
    h.b[4] = 2;
    h_str(&h, "t");
    h_put(&h, 1, 4), h_put(&h, 4, 8), h_put(&h, GGML_TYPE_F32, 4), h_put(&h, 0, 8);
    while (h.n % 32) h_put(&h, 0, 1);
    for (int k = 0; k < 4; k++) h_put(&h, 0x3f800000, 4);
    assert_int_equal(try_open(h.b, h.n).st, SD_OK);
    expect_refused(h.b, h.n - 1, SD_ERR_FORMAT, "'t'");
}

/* xorshift64*: deterministic, so a failure reproduces from the seed. */
static uint64_t rng(uint64_t *s) {
    *s ^= *s >> 12, *s ^= *s << 25, *s ^= *s >> 27;
    return *s * 2685821657736338717ull;
}

static void test_random_mutations(void **state) {
    (void)state;
    static const uint64_t interesting[] = {0, 1, 0x7f, 0x80, 0xff, 0xffff, 0xffffffff, UINT64_MAX, 1ull << 63, 32, 64};
    sample s = load_sample(32);
    size_t header = (size_t)gguf_data_offset(s.ctx); /* mutations in tensor data are always valid */
    uint8_t *b = malloc(s.size);
    assert_non_null(b);
    uint64_t seed = 0x5eed5eedULL;
    int accepted = 0, refused = 0;
    for (int iter = 0; iter < 4000; iter++) {
        memcpy(b, s.buf, s.size);
        size_t n = s.size;
        int n_mut = 1 + (int)(rng(&seed) % 4);
        for (int m = 0; m < n_mut; m++) {
            size_t at = (size_t)(rng(&seed) % header);
            uint64_t r = rng(&seed);
            switch (r % 4) {
            case 0: b[at] = (uint8_t)(r >> 8); break;
            case 1: b[at] ^= (uint8_t)(1u << ((r >> 8) % 8)); break;
            case 2: if (at + 8 <= n) put_le(b + at, interesting[(r >> 8) % 11], 8); break;
            default: if (at + 4 <= n) put_le(b + at, interesting[(r >> 8) % 11], 4); break;
            }
        }
        if (rng(&seed) % 8 == 0) n = (size_t)(rng(&seed) % s.size); /* sometimes truncate too */
        result res = try_open(b, n);
        if (res.st == SD_OK) accepted++;
        else refused++;
    }
    print_message("random mutations: %d accepted, %d refused\n", accepted, refused);
    /* both outcomes happen: the mutations reach past the magic */
    assert_true(accepted > 50 && refused > 1000);
    free(b);
    free_sample(&s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_truncate_everywhere), cmocka_unit_test(test_header_fields),
        cmocka_unit_test(test_kv_fields),           cmocka_unit_test(test_tensor_fields),
        cmocka_unit_test(test_handbuilt),           cmocka_unit_test(test_random_mutations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
