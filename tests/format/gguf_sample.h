/* A small GGUF built with the writer, used by the format tests: one pair of
 * every metadata type (arrays of each, strings with NULs and empties, nested
 * arrays) and tensors of several ggml types whose data is a known pattern. */
#ifndef SD_TESTS_FORMAT_GGUF_SAMPLE_H
#define SD_TESTS_FORMAT_GGUF_SAMPLE_H

#include <stdlib.h>
#include <string.h>

#include "format/gguf.h"

typedef struct sample_tensor {
    const char *name;
    uint32_t type, n_dims;
    int64_t ne[4];
} sample_tensor;

static const sample_tensor SAMPLE_TENSORS[] = {
    {"token_embd.weight", GGML_TYPE_F32, 2, {8, 3, 1, 1}},
    {"blk.0.attn_norm.weight", GGML_TYPE_F16, 1, {16, 1, 1, 1}},
    {"blk.0.attn_q.weight", GGML_TYPE_Q4_0, 2, {64, 2, 1, 1}},
    {"blk.0.attn_k.weight", GGML_TYPE_Q8_0, 3, {32, 1, 2, 1}},
    {"blk.0.ffn_up.weight", GGML_TYPE_Q4_K, 2, {256, 2, 1, 1}},
    {"blk.0.ffn_down.weight", GGML_TYPE_Q6_K, 4, {256, 1, 1, 2}},
    {"blk.0.pos", GGML_TYPE_I32, 1, {5, 1, 1, 1}},
    {"output.weight", GGML_TYPE_BF16, 2, {3, 7, 1, 1}},
};
#define N_SAMPLE_TENSORS (sizeof SAMPLE_TENSORS / sizeof SAMPLE_TENSORS[0])

static inline uint64_t sample_nbytes(const sample_tensor *t) {
    uint64_t row = 0;
    ggml_row_bytes(t->type, (uint64_t)t->ne[0], &row);
    return row * (uint64_t)(t->ne[1] * t->ne[2] * t->ne[3]);
}

/* Byte k of tensor i's data. */
static inline uint8_t sample_byte(size_t i, uint64_t k) { return (uint8_t)(k * 31 + i * 7 + 1); }

static const char *const SAMPLE_STRS[] = {"hello", "", "a\0b", "\xe4\xbd\xa0\xe5\xa5\xbd", "x"};
static const uint64_t SAMPLE_STR_LENS[] = {5, 0, 3, 6, 1};

/* Raw encoding of [[1, 2, 3], [], [-4]] (array of arrays of i32). */
static inline size_t sample_nested(uint8_t *p) {
    static const int32_t a[] = {1, 2, 3}, c[] = {-4};
    size_t n = 0;
#define PUT(v, sz) do { uint64_t _v = (uint64_t)(v); for (int _k = 0; _k < (sz); _k++) p[n++] = (uint8_t)(_v >> (8 * _k)); } while (0)
    PUT(GGUF_TYPE_ARRAY, 4); PUT(3, 8);
    PUT(GGUF_TYPE_INT32, 4); PUT(3, 8); for (int k = 0; k < 3; k++) PUT((uint32_t)a[k], 4);
    PUT(GGUF_TYPE_INT32, 4); PUT(0, 8);
    PUT(GGUF_TYPE_INT32, 4); PUT(1, 8); PUT((uint32_t)c[0], 4);
#undef PUT
    return n;
}

/* Fills a writer with the sample. tensor_data[i] must stay alive until written.
 * Returns 0 on success. */
static inline int sample_fill(gguf_writer *w, uint8_t **tensor_data, uint32_t alignment) {
    int bad = 0;
    uint8_t u8 = 200; int8_t i8 = -100; uint16_t u16 = 60000; int16_t i16 = -30000;
    int64_t i64 = -((int64_t)1 << 40); double f64 = 3.25e-300;
    bad |= gguf_writer_set_str(w, "general.architecture", "llama", 5);
    if (alignment != GGUF_DEFAULT_ALIGNMENT) bad |= gguf_writer_set_u32(w, "general.alignment", alignment);
    bad |= gguf_writer_set_val(w, "t.u8", GGUF_TYPE_UINT8, &u8);
    bad |= gguf_writer_set_val(w, "t.i8", GGUF_TYPE_INT8, &i8);
    bad |= gguf_writer_set_val(w, "t.u16", GGUF_TYPE_UINT16, &u16);
    bad |= gguf_writer_set_val(w, "t.i16", GGUF_TYPE_INT16, &i16);
    bad |= gguf_writer_set_u32(w, "t.u32", 4000000000u);
    bad |= gguf_writer_set_i32(w, "t.i32", -2000000000);
    bad |= gguf_writer_set_f32(w, "t.f32", 1.5e-5f);
    bad |= gguf_writer_set_bool(w, "t.bool", true);
    bad |= gguf_writer_set_str(w, "t.str", "with\0nul", 8);
    bad |= gguf_writer_set_u64(w, "t.u64", UINT64_MAX - 5);
    bad |= gguf_writer_set_val(w, "t.i64", GGUF_TYPE_INT64, &i64);
    bad |= gguf_writer_set_val(w, "t.f64", GGUF_TYPE_FLOAT64, &f64);
    static const float fa[] = {0.5f, -2.0f, 1e30f};
    static const int32_t ia[] = {7, -8, 9, 10};
    static const uint8_t ba[] = {1, 0, 1};
    static const uint16_t ha[] = {1, 65535};
    static const int64_t la[] = {INT64_MIN, INT64_MAX};
    bad |= gguf_writer_set_arr_data(w, "a.f32", GGUF_TYPE_FLOAT32, fa, 3);
    bad |= gguf_writer_set_arr_data(w, "a.i32", GGUF_TYPE_INT32, ia, 4);
    bad |= gguf_writer_set_arr_data(w, "a.bool", GGUF_TYPE_BOOL, ba, 3);
    bad |= gguf_writer_set_arr_data(w, "a.u16", GGUF_TYPE_UINT16, ha, 2);
    bad |= gguf_writer_set_arr_data(w, "a.i64", GGUF_TYPE_INT64, la, 2);
    bad |= gguf_writer_set_arr_data(w, "a.empty", GGUF_TYPE_UINT8, NULL, 0);
    bad |= gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", SAMPLE_STRS, SAMPLE_STR_LENS, 5);
    bad |= gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2", 4);
    uint8_t nested[128];
    size_t nn = sample_nested(nested);
    bad |= gguf_writer_set_raw(w, "a.nested", GGUF_TYPE_ARRAY, nested, nn);
    for (size_t i = 0; i < N_SAMPLE_TENSORS; i++) {
        const sample_tensor *t = &SAMPLE_TENSORS[i];
        uint64_t nb = sample_nbytes(t);
        tensor_data[i] = malloc(nb);
        if (!tensor_data[i]) return 1;
        for (uint64_t k = 0; k < nb; k++) tensor_data[i][k] = sample_byte(i, k);
        bad |= gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, tensor_data[i], nb);
    }
    return bad;
}

/* The sample as a heap buffer (free with free()); NULL on failure. */
static inline uint8_t *sample_build(size_t *size, uint32_t alignment) {
    gguf_writer *w = gguf_writer_init();
    uint8_t *data[N_SAMPLE_TENSORS] = {0};
    void *out = NULL;
    if (w && sample_fill(w, data, alignment) == 0 && gguf_writer_write_memory(w, &out, size, NULL) != SD_OK)
        out = NULL;
    for (size_t i = 0; i < N_SAMPLE_TENSORS; i++) free(data[i]);
    gguf_writer_free(w);
    return out;
}

#endif
