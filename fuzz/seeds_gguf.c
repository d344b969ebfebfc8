/* Writes a seed corpus for the fuzz_gguf* targets into the directory argv[1]:
 * the format tests' sample (every metadata type, several tensor types) at a
 * few alignments, a deepest-allowed nested array, and shrunken copies of the
 * vocab files in tests/data/tokenizer (real keys, arrays cut to 8 elements),
 * and one small file per weight type of the IQ1/IQ2/IQ3 grids and MXFP4 (a
 * [256, 2] and a [512, 1] tensor of pseudo-random blocks: every byte pattern
 * is a valid grid index), so mutations start from their block sizes. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/ggml_type.h"
#include "format/gguf.h"
#include "format/gguf_sample.h"

static int save(const char *dir, const char *name, const void *data, size_t size) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(data, 1, size, f) != size) {
        fprintf(stderr, "seeds_gguf: cannot write %s\n", path);
        if (f) fclose(f);
        return 1;
    }
    return fclose(f) != 0;
}

/* A copy of the vocab file with every array cut to its first 8 elements. */
static int shrink_vocab(const char *dir, const char *file) {
    char path[512];
    snprintf(path, sizeof path, "tests/data/tokenizer/%s", file);
    gguf_ctx *ctx;
    sd_err e = {0};
    if (gguf_open(path, &ctx, &e)) {
        fprintf(stderr, "seeds_gguf: %s\n", e.msg);
        return 1;
    }
    gguf_writer *w = gguf_writer_init();
    int bad = !w;
    for (int64_t i = 0; i < gguf_n_kv(ctx) && !bad; i++) {
        const char *key = gguf_kv_key(ctx, i);
        gguf_type et;
        uint64_t n;
        gguf_kv_array_info(ctx, i, &et, &n);
        const void *data;
        if (gguf_kv_type(ctx, i) != GGUF_TYPE_ARRAY || n <= 8) {
            bad = gguf_writer_copy_kv(w, ctx, i) != SD_OK;
        } else if (et == GGUF_TYPE_STRING) {
            const char *s[8];
            uint64_t len[8];
            for (uint64_t j = 0; j < 8; j++) gguf_get_arr_str(ctx, key, j, &s[j], &len[j]);
            bad = gguf_writer_set_arr_str(w, key, s, len, 8) != SD_OK;
        } else if (gguf_get_arr_data(ctx, key, &et, &n, &data)) {
            bad = gguf_writer_set_arr_data(w, key, et, data, 8) != SD_OK;
        }
    }
    void *out = NULL;
    size_t size = 0;
    if (!bad) bad = gguf_writer_write_memory(w, &out, &size, NULL) != SD_OK;
    if (!bad) bad = save(dir, file, out, size);
    free(out);
    gguf_writer_free(w);
    gguf_close(ctx);
    return bad;
}

/* A file with two tensors of type t and pseudo-random block bytes. */
static int iq_seed(const char *dir, uint32_t t) {
    static uint8_t data[2][2048];
    uint32_t x = 2463534242u + t;
    for (int k = 0; k < 2; k++)
        for (size_t i = 0; i < sizeof data[k]; i++) {
            x ^= x << 13, x ^= x >> 17, x ^= x << 5;
            data[k][i] = (uint8_t)x;
        }
    uint64_t nb;
    if (!ggml_row_bytes(t, 512, &nb)) return 1;
    gguf_writer *w = gguf_writer_init();
    const int64_t ne_a[2] = {256, 2}, ne_b[2] = {512, 1};
    int bad = !w || gguf_writer_set_str(w, "general.architecture", "qwen3", 5) != SD_OK ||
              gguf_writer_add_tensor(w, "blk.0.ffn_up.weight", t, 2, ne_a, data[0], nb) != SD_OK ||
              gguf_writer_add_tensor(w, "blk.0.ffn_down.weight", t, 2, ne_b, data[1], nb) != SD_OK;
    void *out = NULL;
    size_t size = 0;
    if (!bad) bad = gguf_writer_write_memory(w, &out, &size, NULL) != SD_OK;
    char name[64];
    snprintf(name, sizeof name, "type-%s.gguf", ggml_type_get(t)->name);
    if (!bad) bad = save(dir, name, out, size);
    free(out);
    gguf_writer_free(w);
    return bad;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: seeds_gguf DIR\n");
        return 2;
    }
    int bad = 0;
    static const uint32_t aligns[] = {32, 1, 64};
    for (int a = 0; a < 3; a++) {
        size_t size;
        uint8_t *s = sample_build(&size, aligns[a]);
        char name[64];
        snprintf(name, sizeof name, "sample-align%u.gguf", aligns[a]);
        bad |= !s || save(argv[1], name, s, size);
        free(s);
    }
    static const char *const vocabs[] = {"ggml-vocab-llama-spm.gguf", "ggml-vocab-qwen2.gguf", "ggml-vocab-gpt-2.gguf"};
    for (int v = 0; v < 3; v++) bad |= shrink_vocab(argv[1], vocabs[v]);
    static const uint32_t iq[] = {GGML_TYPE_IQ1_S,  GGML_TYPE_IQ1_M,   GGML_TYPE_IQ2_XXS, GGML_TYPE_IQ2_XS,
                                  GGML_TYPE_IQ2_S,  GGML_TYPE_IQ3_XXS, GGML_TYPE_IQ3_S,   GGML_TYPE_MXFP4};
    for (size_t i = 0; i < sizeof iq / sizeof iq[0]; i++) bad |= iq_seed(argv[1], iq[i]);
    return bad;
}
