/* sd-genmodel: writes a qwen3 GGUF with random weights at a realistic shape and
 * a real tokenizer, for speed measurements on a machine without a model hub
 * (DESIGN.md §9.3: timing does not depend on weight values).
 *
 *   sd-genmodel --shape qwen3-0.6b --type q8_0 -o cache/models/qwen3-0.6b-q8_0.gguf
 *
 * Shapes are the published Hugging Face configs (Qwen/Qwen3-0.6B, Qwen3-1.7B
 * config.json); "draft" is a ~10x smaller model with the same vocabulary and
 * "tiny" a test-sized one. Tensor and key names are llama.cpp's
 * (src/llama-arch.cpp LLM_ARCH_QWEN3), so llama.cpp loads the files too.
 * Weights ~ N(0, 0.02), norm weights 1. The tokenizer.* metadata is copied
 * verbatim from a vocab-only GGUF (default: llama.cpp's ggml-vocab-qwen2.gguf,
 * whose 151936 entries match Qwen3's embedding rows).
 *
 * Memory: each matrix is generated and quantized row by row on its threads
 * (f32 never exceeds one row per thread); the quantized tensors are held until
 * the file is written (the writer borrows them), i.e. about the file size. */
#include <math.h>
#include <omp.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "core/status.h"
#include "format/gguf.h"
#include "grow/grow.h"
#include "numerics/quant.h"

typedef struct shape {
    const char *name;
    int n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim;
} shape;

static const shape SHAPES[] = {
    {"qwen3-0.6b", 28, 1024, 3072, 16, 8, 128},
    {"qwen3-1.7b", 28, 2048, 6144, 16, 8, 128},
    /* ~45M parameters (most in the tied embedding) vs 0.6B's 596M: a draft. */
    {"draft", 8, 256, 1024, 4, 2, 64},
    {"tiny", 2, 64, 128, 4, 2, 16},
};
#define N_SHAPES (sizeof SHAPES / sizeof SHAPES[0])

/* ---- random numbers: splitmix64 (Steele et al. 2014), Box-Muller normals ---- */
static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

#define TWO_PI 6.283185307179586476925286766559

static double uniform01(uint64_t *s) { return ((double)(splitmix64(s) >> 11) + 0.5) * 0x1.0p-53; }

/* Fills row[n] with N(0, sigma): each row has its own stream (seed, tensor,
 * row), so the file is the same whatever the thread count. */
static void normal_row(float *row, int64_t n, float sigma, uint64_t seed, uint64_t tensor,
                       int64_t r) {
    uint64_t s = seed ^ (tensor * 0xD1B54A32D192ED03ull) ^ ((uint64_t)r * 0x8CB92BA72F3D8DD7ull);
    for (int64_t i = 0; i < n; i += 2) {
        double u1 = uniform01(&s), u2 = uniform01(&s), rad = sqrt(-2.0 * log(u1));
        row[i] = (float)(sigma * rad * cos(TWO_PI * u2));
        if (i + 1 < n) row[i + 1] = (float)(sigma * rad * sin(TWO_PI * u2));
    }
}

/* ---- tensors: buffers kept alive until the writer has written them ---- */
typedef struct gen {
    gguf_writer *w;
    void **bufs;
    int n_bufs, cap_bufs;
    uint32_t type;
    uint64_t seed;
    uint64_t n_tensors;
    uint64_t total_bytes;
} gen;

static void *keep(gen *g, size_t bytes) {
    if (g->n_bufs == g->cap_bufs) {
        int cap = g->cap_bufs ? 2 * g->cap_bufs : 64;
        void **nb = realloc(g->bufs, (size_t)cap * sizeof *nb);
        if (!nb) return NULL;
        g->bufs = nb, g->cap_bufs = cap;
    }
    void *p = malloc(bytes ? bytes : 1);
    if (p) g->bufs[g->n_bufs++] = p;
    return p;
}

/* A matrix of n_out rows by n_in columns (GGUF ne = {n_in, n_out}), random. */
static sd_status add_matrix(gen *g, const char *name, int64_t n_in, int64_t n_out, sd_err *err) {
    uint64_t row_bytes, bytes;
    if (!ggml_row_bytes(g->type, (uint64_t)n_in, &row_bytes) || !sd_mul_u64(row_bytes, (uint64_t)n_out, &bytes))
        return sd_err_set(err, SD_ERR_ARG, "%s: %lld columns do not fit type %s", name, (long long)n_in,
                          ggml_type_get(g->type)->name);
    uint8_t *dst = keep(g, bytes);
    if (!dst) return sd_err_set(err, SD_ERR_NOMEM, "%s: cannot allocate %llu bytes", name, (unsigned long long)bytes);
    uint64_t tensor = ++g->n_tensors;
    bool oom = false;
#pragma omp parallel
    {
        float *row = sd_malloc_array((size_t)n_in, sizeof *row);
        if (!row) {
#pragma omp atomic write
            oom = true;
        }
#pragma omp for schedule(static)
        for (int64_t r = 0; r < n_out; r++) {
            if (!row) continue;
            normal_row(row, n_in, 0.02f, g->seed, tensor, r);
            if (g->type == GGML_TYPE_F32) memcpy(dst + (size_t)r * row_bytes, row, (size_t)row_bytes);
            else sd_quantize_row(g->type, row, dst + (size_t)r * row_bytes, n_in);
        }
        free(row);
    }
    if (oom) return sd_err_set(err, SD_ERR_NOMEM, "%s: cannot allocate a row", name);
    int64_t ne[2] = {n_in, n_out};
    g->total_bytes += bytes;
    sd_status st = gguf_writer_add_tensor(g->w, name, g->type, 2, ne, dst, bytes);
    return st ? sd_err_set(err, st, "%s: cannot add tensor", name) : SD_OK;
}

/* A norm weight vector of n ones, f32 (llama.cpp keeps norms in f32). */
static sd_status add_norm(gen *g, const char *name, int64_t n, sd_err *err) {
    float *v = keep(g, (size_t)n * sizeof *v);
    if (!v) return sd_err_set(err, SD_ERR_NOMEM, "%s: out of memory", name);
    for (int64_t i = 0; i < n; i++) v[i] = 1.0f;
    int64_t ne[1] = {n};
    g->total_bytes += (uint64_t)n * sizeof *v;
    sd_status st = gguf_writer_add_tensor(g->w, name, GGML_TYPE_F32, 1, ne, v, (uint64_t)n * sizeof *v);
    return st ? sd_err_set(err, st, "%s: cannot add tensor", name) : SD_OK;
}

static sd_status add_layer(gen *g, const shape *s, int il, sd_err *err) {
    char name[96];
    sd_status st;
    int64_t q_dim = (int64_t)s->n_head * s->head_dim, kv_dim = (int64_t)s->n_head_kv * s->head_dim;
#define NAME(suffix) (snprintf(name, sizeof name, "blk.%d." suffix, il), name)
    if ((st = add_norm(g, NAME("attn_norm.weight"), s->n_embd, err))) return st;
    if ((st = add_matrix(g, NAME("attn_q.weight"), s->n_embd, q_dim, err))) return st;
    if ((st = add_matrix(g, NAME("attn_k.weight"), s->n_embd, kv_dim, err))) return st;
    if ((st = add_matrix(g, NAME("attn_v.weight"), s->n_embd, kv_dim, err))) return st;
    if ((st = add_matrix(g, NAME("attn_output.weight"), q_dim, s->n_embd, err))) return st;
    if ((st = add_norm(g, NAME("attn_q_norm.weight"), s->head_dim, err))) return st;
    if ((st = add_norm(g, NAME("attn_k_norm.weight"), s->head_dim, err))) return st;
    if ((st = add_norm(g, NAME("ffn_norm.weight"), s->n_embd, err))) return st;
    if ((st = add_matrix(g, NAME("ffn_gate.weight"), s->n_embd, s->n_ff, err))) return st;
    if ((st = add_matrix(g, NAME("ffn_up.weight"), s->n_embd, s->n_ff, err))) return st;
    if ((st = add_matrix(g, NAME("ffn_down.weight"), s->n_ff, s->n_embd, err))) return st;
#undef NAME
    return SD_OK;
}

/* llama.cpp's general.file_type (enum llama_ftype): the file's dominant type. */
static uint32_t file_type_of(uint32_t t) {
    switch (t) {
    case GGML_TYPE_F32: return 0;
    case GGML_TYPE_F16: return 1;
    case GGML_TYPE_Q8_0: return 7;
    case GGML_TYPE_Q4_K: return 14; /* Q4_K_S: every matrix q4_k */
    default: return 0;
    }
}

/* Metadata: qwen3 hparams + every tokenizer.* key of the vocab file. */
static sd_status add_metadata(gen *g, const shape *s, const gguf_ctx *vocab, int64_t n_vocab, sd_err *err) {
    gguf_writer *w = g->w;
    char gname[96];
    snprintf(gname, sizeof gname, "random %s %s", s->name, ggml_type_get(g->type)->name);
    sd_status st = SD_OK;
    st = st ? st : gguf_writer_set_str(w, "general.architecture", "qwen3", 5);
    st = st ? st : gguf_writer_set_str(w, "general.name", gname, strlen(gname));
    st = st ? st : gguf_writer_set_u32(w, "general.file_type", file_type_of(g->type));
    st = st ? st : gguf_writer_set_u32(w, "general.quantization_version", 2);
    st = st ? st : gguf_writer_set_u32(w, "qwen3.block_count", (uint32_t)s->n_layer);
    st = st ? st : gguf_writer_set_u32(w, "qwen3.context_length", 40960);
    st = st ? st : gguf_writer_set_u32(w, "qwen3.embedding_length", (uint32_t)s->n_embd);
    st = st ? st : gguf_writer_set_u32(w, "qwen3.feed_forward_length", (uint32_t)s->n_ff);
    st = st ? st : gguf_writer_set_u32(w, "qwen3.attention.head_count", (uint32_t)s->n_head);
    st = st ? st : gguf_writer_set_u32(w, "qwen3.attention.head_count_kv", (uint32_t)s->n_head_kv);
    st = st ? st : gguf_writer_set_u32(w, "qwen3.attention.key_length", (uint32_t)s->head_dim);
    st = st ? st : gguf_writer_set_u32(w, "qwen3.attention.value_length", (uint32_t)s->head_dim);
    st = st ? st : gguf_writer_set_f32(w, "qwen3.rope.freq_base", 1000000.0f);
    st = st ? st : gguf_writer_set_f32(w, "qwen3.attention.layer_norm_rms_epsilon", 1e-6f);
    if (st) return sd_err_set(err, st, "cannot set metadata");
    bool has_add_bos = false;
    for (int64_t i = 0; i < gguf_n_kv(vocab); i++) {
        const char *key = gguf_kv_key(vocab, i);
        if (strncmp(key, "tokenizer.", 10) != 0) continue;
        has_add_bos |= !strcmp(key, "tokenizer.ggml.add_bos_token");
        if ((st = gguf_writer_copy_kv(w, vocab, i))) return sd_err_set(err, st, "cannot copy %s", key);
    }
    /* Qwen3's own GGUFs say this explicitly: no BOS is prepended. */
    if (!has_add_bos && (st = gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", false)))
        return sd_err_set(err, st, "cannot set tokenizer.ggml.add_bos_token");
    (void)n_vocab;
    return SD_OK;
}

static sd_status generate(const shape *s, uint32_t type, const char *vocab_path, const char *out,
                          uint64_t seed, sd_err *err) {
    gguf_ctx *vocab = NULL;
    sd_status st = gguf_open(vocab_path, &vocab, err);
    if (st) return st;
    uint64_t n_vocab = 0;
    if (!gguf_get_arr_str_n(vocab, "tokenizer.ggml.tokens", &n_vocab) || n_vocab == 0 || n_vocab > INT32_MAX) {
        gguf_close(vocab);
        return sd_err_set(err, SD_ERR_FORMAT, "%s: no tokenizer.ggml.tokens", vocab_path);
    }
    gen g = {.w = gguf_writer_init(), .type = type, .seed = seed};
    if (!g.w) st = sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    if (!st) st = add_metadata(&g, s, vocab, (int64_t)n_vocab, err);
    /* Tied output (Qwen3-0.6B/1.7B tie_word_embeddings): no output.weight. */
    if (!st) st = add_matrix(&g, "token_embd.weight", s->n_embd, (int64_t)n_vocab, err);
    for (int il = 0; !st && il < s->n_layer; il++) {
        st = add_layer(&g, s, il, err);
        fprintf(stderr, "\rsd-genmodel: layer %d/%d   ", il + 1, s->n_layer);
    }
    if (!st) st = add_norm(&g, "output_norm.weight", s->n_embd, err);
    fprintf(stderr, "\rsd-genmodel: writing %.1f MB of tensors to %s\n", (double)g.total_bytes / 1e6, out);
    if (!st) st = gguf_writer_write(g.w, out, err);
    gguf_writer_free(g.w);
    for (int i = 0; i < g.n_bufs; i++) free(g.bufs[i]);
    free(g.bufs);
    gguf_close(vocab);
    return st;
}

static void usage(FILE *f) {
    fprintf(f,
            "usage: sd-genmodel --shape NAME --type TYPE -o OUT.gguf [--vocab VOCAB.gguf] [--seed N]\n"
            "  random-weight qwen3 model with a real tokenizer, for speed measurements\n"
            "  --shape   qwen3-0.6b | qwen3-1.7b | draft | tiny\n"
            "  --type    q8_0 | q4_k | f16 | f32 (norm weights are always f32)\n"
            "  --vocab   vocab-only GGUF whose tokenizer.* keys are copied\n"
            "            (default tests/data/tokenizer/ggml-vocab-qwen2.gguf)\n"
            "  --seed    random seed (default 1)\n"
            "   or: sd-genmodel --grow SMALL.gguf --shape NAME -o OUT.gguf [--type TYPE]\n"
            "  a trained small qwen3 model grown to a realistic shape (sd-genmodel --grow x --help)\n");
}

int main(int argc, char **argv) {
    const char *shape_name = NULL, *type_name = "q8_0", *out = NULL;
    const char *vocab = "tests/data/tokenizer/ggml-vocab-qwen2.gguf";
    uint64_t seed = 1;
    for (int i = 1; i < argc; i++) /* a trained model inside a realistic shape: tools/grow/grow.c */
        if (!strcmp(argv[i], "--grow")) return grow_main(argc, argv);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return usage(stdout), 0;
        if (i + 1 >= argc) return fprintf(stderr, "sd-genmodel: %s needs a value\n", a), 2;
        if (!strcmp(a, "--shape")) shape_name = argv[++i];
        else if (!strcmp(a, "--type")) type_name = argv[++i];
        else if (!strcmp(a, "-o")) out = argv[++i];
        else if (!strcmp(a, "--vocab")) vocab = argv[++i];
        else if (!strcmp(a, "--seed")) seed = strtoull(argv[++i], NULL, 10);
        else return fprintf(stderr, "sd-genmodel: unknown option %s\n", a), 2;
    }
    if (!shape_name || !out) return usage(stderr), 2;
    const shape *s = NULL;
    for (size_t i = 0; i < N_SHAPES; i++)
        if (!strcmp(SHAPES[i].name, shape_name)) s = &SHAPES[i];
    if (!s) return fprintf(stderr, "sd-genmodel: unknown shape '%s'\n", shape_name), 2;
    int t = ggml_type_from_name(type_name);
    if (t < 0 || (t != GGML_TYPE_F32 && !sd_type_quantizable((uint32_t)t)))
        return fprintf(stderr, "sd-genmodel: cannot write type '%s'\n", type_name), 2;
    sd_err err = {0};
    if (generate(s, (uint32_t)t, vocab, out, seed, &err)) {
        fprintf(stderr, "sd-genmodel: %s\n", err.msg);
        return 1;
    }
    return 0;
}
