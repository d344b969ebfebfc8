/* A random DFlash draft for a target file (tiny_dflash.h). */
#include "common/dflash_writer.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/ggml_type.h"
#include "format/gguf.h"

#define MAX_TENSORS 64

typedef struct writer {
    gguf_writer *w;
    float *data[MAX_TENSORS];
    int n;
    uint64_t rng;
    sd_status st;
} writer;

static double unit(uint64_t *s) { /* splitmix64, uniform in (0, 1) */
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return ((double)(z >> 11) + 0.5) * 0x1.0p-53;
}

/* A tensor {ne0, ne1} (ne1 = 1: a vector): normal(0, sigma) entries, or all
 * `fill` when sigma is 0. */
static void add(writer *W, const char *name, int64_t ne0, int64_t ne1, float sigma, float fill) {
    if (W->st != SD_OK) return;
    if (W->n == MAX_TENSORS) {
        W->st = SD_ERR_NOMEM;
        return;
    }
    float *d = malloc((size_t)(ne0 * ne1) * sizeof *d);
    if (!d) {
        W->st = SD_ERR_NOMEM;
        return;
    }
    W->data[W->n++] = d;
    for (int64_t i = 0; i < ne0 * ne1; i++) {
        double u1 = unit(&W->rng), u2 = unit(&W->rng);
        d[i] = sigma > 0 ? (float)(sigma * sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2)) : fill;
    }
    const int64_t ne[2] = {ne0, ne1};
    W->st = gguf_writer_add_tensor(W->w, name, GGML_TYPE_F32, ne1 > 1 ? 2 : 1, ne, d,
                                   (uint64_t)(ne0 * ne1) * sizeof *d);
}

static int32_t key_int(const gguf_ctx *g, const char *arch, const char *suffix, int32_t dflt) {
    char key[128];
    int64_t v;
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    return gguf_get_i64(g, key, &v) ? (int32_t)v : dflt;
}

/* The target's architecture name, embedding width and trunk layers. */
static bool target_shape(const gguf_ctx *g, char *arch, size_t cap, int32_t *n_embd, int32_t *n_layer) {
    const char *s;
    uint64_t len;
    if (!gguf_get_str(g, "general.architecture", &s, &len) || len >= cap) return false;
    memcpy(arch, s, len);
    arch[len] = '\0';
    *n_embd = key_int(g, arch, "embedding_length", 0);
    *n_layer = key_int(g, arch, "block_count", 0) - key_int(g, arch, "nextn_predict_layers", 0);
    return *n_embd > 0 && *n_layer > 0;
}

tiny_dflash_spec tiny_dflash_default(const char *target_path) {
    tiny_dflash_spec sp = {.n_layer = 1, .n_head = 4, .n_head_kv = 2, .head_dim = 32, .n_ff = 256, .block = 8,
                           .mask_token = 0, .seed = 1};
    gguf_ctx *g = NULL;
    sd_err e = {0};
    char arch[64];
    int32_t E = 0, L = 0;
    if (gguf_open(target_path, &g, &e) == SD_OK && target_shape(g, arch, sizeof arch, &E, &L)) {
        const int32_t ids[3] = {1, L - 1, L};
        for (int i = 0; i < 3; i++)
            if (sp.n_target_layers == 0 || ids[i] > sp.target_layers[sp.n_target_layers - 1])
                sp.target_layers[sp.n_target_layers++] = ids[i];
    }
    gguf_close(g);
    return sp;
}

static sd_status metadata(writer *W, const gguf_ctx *g, const tiny_dflash_spec *sp, int32_t E) {
    gguf_writer *w = W->w;
    sd_status st = gguf_writer_set_str(w, "general.architecture", "dflash", 6);
    st = st ? st : gguf_writer_set_u32(w, "dflash.context_length", 4096);
    st = st ? st : gguf_writer_set_u32(w, "dflash.embedding_length", (uint32_t)E);
    st = st ? st : gguf_writer_set_u32(w, "dflash.block_count", (uint32_t)sp->n_layer);
    st = st ? st : gguf_writer_set_u32(w, "dflash.feed_forward_length", (uint32_t)sp->n_ff);
    st = st ? st : gguf_writer_set_u32(w, "dflash.attention.head_count", (uint32_t)sp->n_head);
    st = st ? st : gguf_writer_set_u32(w, "dflash.attention.head_count_kv", (uint32_t)sp->n_head_kv);
    st = st ? st : gguf_writer_set_u32(w, "dflash.attention.key_length", (uint32_t)sp->head_dim);
    st = st ? st : gguf_writer_set_u32(w, "dflash.attention.value_length", (uint32_t)sp->head_dim);
    st = st ? st : gguf_writer_set_f32(w, "dflash.attention.layer_norm_rms_epsilon", 1e-6f);
    st = st ? st : gguf_writer_set_f32(w, "dflash.rope.freq_base", 10000.0f);
    if (!st && sp->block >= 0) st = gguf_writer_set_u32(w, "dflash.block_size", (uint32_t)sp->block);
    if (!st) st = gguf_writer_set_arr_data(w, "dflash.target_layers", GGUF_TYPE_INT32, sp->target_layers,
                                           (uint64_t)sp->n_target_layers);
    for (int64_t i = 0; !st && i < gguf_n_kv(g); i++) {
        const char *key = gguf_kv_key(g, i);
        if (!strncmp(key, "tokenizer.", 10) && strcmp(key, "tokenizer.ggml.mask_token_id"))
            st = gguf_writer_copy_kv(w, g, i);
    }
    if (!st && sp->mask_token >= 0) st = gguf_writer_set_u32(w, "tokenizer.ggml.mask_token_id", (uint32_t)sp->mask_token);
    return st;
}

static void tensors(writer *W, const tiny_dflash_spec *sp, int32_t E, int32_t n_vocab) {
    const int64_t q = (int64_t)sp->n_head * sp->head_dim, kv = (int64_t)sp->n_head_kv * sp->head_dim;
    const float s_in = 1.0f / sqrtf((float)E);
    char name[64];
    add(W, "fc.weight", (int64_t)sp->n_target_layers * E, E, 1.0f / sqrtf((float)(sp->n_target_layers * E)), 0);
    add(W, "enc.output_norm.weight", E, 1, 0, 1);
    add(W, "output_norm.weight", E, 1, 0, 1);
    if (sp->n_draft_vocab > 0) {
        int64_t *d2t = malloc((size_t)sp->n_draft_vocab * sizeof *d2t);
        if (!d2t || W->n == MAX_TENSORS) {
            free(d2t);
            W->st = W->st ? W->st : SD_ERR_NOMEM;
            return;
        }
        for (int32_t i = 0; i < sp->n_draft_vocab; i++) d2t[i] = (int64_t)(3 * i) % n_vocab;
        W->data[W->n++] = (float *)d2t;
        const int64_t ne = sp->n_draft_vocab;
        if (!W->st) W->st = gguf_writer_add_tensor(W->w, "d2t", GGML_TYPE_I64, 1, &ne, d2t, (uint64_t)ne * 8);
        add(W, "output.weight", E, sp->n_draft_vocab, s_in, 0);
    } else if (sp->own_output) {
        add(W, "output.weight", E, n_vocab, s_in, 0);
    }
    for (int il = 0; il < sp->n_layer; il++) {
#define T(suffix, ne0, ne1, sigma, fill)                               \
    snprintf(name, sizeof name, "blk.%d." suffix ".weight", il);       \
    add(W, name, ne0, ne1, sigma, fill)
        T("attn_norm", E, 1, 0, 1);
        T("attn_q", E, q, s_in, 0);
        T("attn_k", E, kv, s_in, 0);
        T("attn_v", E, kv, s_in, 0);
        T("attn_output", q, E, 1.0f / sqrtf((float)q), 0);
        T("attn_q_norm", sp->head_dim, 1, 0, 1);
        T("attn_k_norm", sp->head_dim, 1, 0, 1);
        T("ffn_norm", E, 1, 0, 1);
        T("ffn_gate", E, sp->n_ff, s_in, 0);
        T("ffn_up", E, sp->n_ff, s_in, 0);
        T("ffn_down", sp->n_ff, E, 1.0f / sqrtf((float)sp->n_ff), 0);
#undef T
    }
}

sd_status tiny_dflash_write(const char *target_path, const tiny_dflash_spec *sp, const char *path, sd_err *err) {
    gguf_ctx *g = NULL;
    sd_status st = gguf_open(target_path, &g, err);
    if (st != SD_OK) return st;
    char arch[64];
    int32_t E = 0, L = 0;
    uint64_t n_vocab = 0;
    if (!target_shape(g, arch, sizeof arch, &E, &L) || !gguf_get_arr_str_n(g, "tokenizer.ggml.tokens", &n_vocab)) {
        gguf_close(g);
        return sd_err_set(err, SD_ERR_FORMAT, "%s: not a target model", target_path);
    }
    if (sp->n_embd > 0) E = sp->n_embd;
    writer W = {.w = gguf_writer_init(), .rng = sp->seed};
    W.st = W.w ? metadata(&W, g, sp, E) : SD_ERR_NOMEM;
    tensors(&W, sp, E, (int32_t)n_vocab);
    st = W.st ? sd_err_set(err, W.st, "%s: cannot build the draft", path) : gguf_writer_write(W.w, path, err);
    for (int i = 0; i < W.n; i++) free(W.data[i]);
    gguf_writer_free(W.w);
    gguf_close(g);
    return st;
}
