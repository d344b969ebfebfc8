/* sd_model_load: GGUF file -> hparams, tokenizer, weights bound in place.
 *
 * Key names and defaults follow llama.cpp src/llama-model.cpp load_hparams:
 * rope.freq_base defaults to 10000, rope.scaling.type to "linear" and the
 * factor to none (scale 1), head_count_kv to head_count, key_length to
 * n_embd / n_head, rope.dimension_count to the head size. Nothing read from
 * the file is trusted: every dimension is range-checked before it sizes
 * anything, and every tensor's type and shape is checked against what the
 * hparams imply. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "model/arch.h"
#include "core/resident.h"
#include "model/memory/kv_cache.h"
#include "model/moe.h"
#include "numerics/quant.h"

/* Upper bound on any single dimension: far above every real model, low
 * enough that products of two of them cannot overflow int64. */
#define SD_MAX_DIM (1 << 24)

/* ---- hparams ---- */

static sd_status get_dim(sd_loader *L, const char *arch, const char *suffix, bool required,
                         int32_t dflt, int32_t *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    int64_t v;
    if (!gguf_get_i64(L->gguf, key, &v)) {
        if (gguf_find_key(L->gguf, key) >= 0)
            return sd_err_set(L->err, SD_ERR_FORMAT, "key %s is not an integer", key);
        if (required) return sd_err_set(L->err, SD_ERR_FORMAT, "missing key %s", key);
        v = dflt;
    }
    if (v <= 0 || v > SD_MAX_DIM)
        return sd_err_set(L->err, SD_ERR_FORMAT, "key %s = %lld out of range", key, (long long)v);
    *out = (int32_t)v;
    return SD_OK;
}

static sd_status get_float(sd_loader *L, const char *arch, const char *suffix, bool required,
                           float dflt, float *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", arch, suffix);
    if (gguf_get_f32(L->gguf, key, out)) return SD_OK;
    if (gguf_find_key(L->gguf, key) >= 0)
        return sd_err_set(L->err, SD_ERR_FORMAT, "key %s is not a float", key);
    if (required) return sd_err_set(L->err, SD_ERR_FORMAT, "missing key %s", key);
    *out = dflt;
    return SD_OK;
}

/* Rope scaling: only "none" and "linear" (position scaled by 1/factor) are
 * implemented; YaRN / longrope are refused, never silently run with the
 * wrong positions. (Llama 3.1's per-frequency factors come as a tensor,
 * rope_freqs.weight, bound by arch_llama.c.) */
static sd_status load_rope_scaling(sd_loader *L, const char *arch, sd_hparams *hp) {
    char key[128];
    const char *s;
    uint64_t len;
    char type[32] = "linear";
    snprintf(key, sizeof key, "%s.rope.scaling.type", arch);
    if (gguf_get_str(L->gguf, key, &s, &len)) {
        if (len >= sizeof type) len = sizeof type - 1;
        memcpy(type, s, len);
        type[len] = '\0';
    }
    float factor = 0.0f;
    sd_status st = get_float(L, arch, "rope.scaling.factor", false, 0.0f, &factor);
    if (st == SD_OK && factor == 0.0f) st = get_float(L, arch, "rope.scale_linear", false, 0.0f, &factor);
    if (st != SD_OK) return st;
    if (strcmp(type, "none") == 0) factor = 0.0f;
    else if (strcmp(type, "linear") != 0)
        return sd_err_set(L->err, SD_ERR_UNSUPPORTED, "rope scaling type '%s' not supported", type);
    if (factor < 0.0f || factor != factor)
        return sd_err_set(L->err, SD_ERR_FORMAT, "rope scaling factor %g out of range", factor);
    hp->rope_freq_scale = factor == 0.0f ? 1.0f : 1.0f / factor;
    return SD_OK;
}

static bool feed_forward_key(sd_loader *L, const char *arch) {
    char key[128];
    snprintf(key, sizeof key, "%s.feed_forward_length", arch);
    return gguf_find_key(L->gguf, key) >= 0;
}

static sd_status load_hparams(sd_loader *L, const char *arch, bool partial_rope, bool moe, sd_hparams *hp) {
    sd_status st = SD_OK;
    if (st == SD_OK) st = get_dim(L, arch, "embedding_length", true, 0, &hp->n_embd);
    if (st == SD_OK) st = get_dim(L, arch, "block_count", true, 0, &hp->n_layer);
    hp->n_layer_all = hp->n_layer; /* an architecture with MTP blocks subtracts them */
    if (st == SD_OK) st = get_dim(L, arch, "attention.head_count", true, 0, &hp->n_head);
    if (st == SD_OK) st = get_dim(L, arch, "attention.head_count_kv", false, hp->n_head, &hp->n_head_kv);
    if (st == SD_OK && !(moe && !feed_forward_key(L, arch))) /* MoE: the expert sizes may stand alone */
        st = get_dim(L, arch, "feed_forward_length", true, 0, &hp->n_ff);
    if (st == SD_OK) st = get_dim(L, arch, "context_length", false, 4096, &hp->n_ctx_train);
    if (st != SD_OK) return st;
    if (hp->n_layer > 4096 || hp->n_head > 4096)
        return sd_err_set(L->err, SD_ERR_FORMAT, "block_count %d / head_count %d out of range",
                          hp->n_layer, hp->n_head);
    int32_t head_dim_default = hp->n_embd / hp->n_head > 0 ? hp->n_embd / hp->n_head : 1;
    int32_t v_dim = 0;
    if (st == SD_OK) st = get_dim(L, arch, "attention.key_length", false, head_dim_default, &hp->head_dim);
    if (st == SD_OK) st = get_dim(L, arch, "attention.value_length", false, hp->head_dim, &v_dim);
    if (st == SD_OK) st = get_dim(L, arch, "rope.dimension_count", false, hp->head_dim, &hp->n_rot);
    if (st == SD_OK) st = get_float(L, arch, "rope.freq_base", false, 10000.0f, &hp->rope_base);
    if (st == SD_OK) st = get_float(L, arch, "attention.layer_norm_rms_epsilon", true, 0.0f, &hp->rms_eps);
    if (st == SD_OK) st = load_rope_scaling(L, arch, hp);
    if (st != SD_OK) return st;
    if (hp->n_head % hp->n_head_kv != 0)
        return sd_err_set(L->err, SD_ERR_FORMAT, "head_count %d is not a multiple of head_count_kv %d",
                          hp->n_head, hp->n_head_kv);
    if (v_dim != hp->head_dim)
        return sd_err_set(L->err, SD_ERR_UNSUPPORTED, "value_length %d != key_length %d not supported",
                          v_dim, hp->head_dim);
    if (!(partial_rope ? hp->n_rot <= hp->head_dim && hp->n_rot % 2 == 0 : hp->n_rot == hp->head_dim) ||
        hp->head_dim % 2 != 0)
        return sd_err_set(L->err, SD_ERR_UNSUPPORTED, "rope.dimension_count %d with head size %d not supported",
                          hp->n_rot, hp->head_dim);
    if (!(hp->rope_base > 0.0f) || !(hp->rms_eps >= 0.0f) || hp->rms_eps > 1.0f)
        return sd_err_set(L->err, SD_ERR_FORMAT, "rope.freq_base %g / rms epsilon %g out of range",
                          hp->rope_base, hp->rms_eps);
    return SD_OK;
}

/* ---- tensor binding ---- */

static const gguf_tensor_info *find_tensor(sd_loader *L, const char *fmt, int il, char *name, size_t cap) {
    snprintf(name, cap, fmt, il);
    return gguf_find_tensor(L->gguf, name);
}

static sd_status check_shape(sd_loader *L, const gguf_tensor_info *t, const char *name, int64_t ne0,
                             int64_t ne1) {
    int64_t want[GGUF_MAX_DIMS] = {ne0, ne1, 1, 1};
    for (int d = 0; d < GGUF_MAX_DIMS; d++) {
        int64_t have = d < (int)t->n_dims ? t->ne[d] : 1;
        if (have != want[d])
            return sd_err_set(L->err, SD_ERR_FORMAT,
                              "tensor %s has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld]", name,
                              (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2],
                              (long long)t->ne[3], (long long)ne0, (long long)ne1);
    }
    return SD_OK;
}

static sd_status check_type(sd_loader *L, const gguf_tensor_info *t, const char *name) {
    if (!sd_type_supported(t->type))
        return sd_err_set(L->err, SD_ERR_UNSUPPORTED, "tensor %s: type %s not supported", name,
                          ggml_type_get(t->type)->name);
    return SD_OK;
}

/* Which tensor's file pages a matrix being repacked gives back (packed_rows). */
typedef struct release_ctx {
    gguf_ctx *gguf;
    const gguf_tensor_info *t;
    uint64_t row_bytes;
} release_ctx;

/* The kernels' copy of rows [0, rows) is made: their file pages can go. */
static void release_rows(void *ctx, int64_t rows) {
    const release_ctx *r = ctx;
    gguf_release(r->gguf, r->t, (uint64_t)rows * r->row_bytes);
}

/* Binds a matrix; no_pack keeps it in the file only (looked up by row). */
static sd_status bind_matrix(sd_loader *L, sd_matrix *out, int64_t n_in, int64_t n_out, const char *fmt, int il,
                             bool no_pack) {
    char name[96];
    const gguf_tensor_info *t = find_tensor(L, fmt, il, name, sizeof name);
    if (!t) return sd_err_set(L->err, SD_ERR_FORMAT, "missing tensor %s", name);
    sd_status st = check_shape(L, t, name, n_in, n_out);
    if (st == SD_OK) st = check_type(L, t, name);
    if (st == SD_OK) {
        release_ctx rc = {L->m->gguf, t, t->nbytes / (uint64_t)n_out};
        sd_matrix_opts o = {no_pack || L->no_pack, release_rows, &rc};
        st = sd_matrix_init_opts(out, t->type, n_in, n_out, t->data, &o, L->err);
        if (st == SD_ERR_UNSUPPORTED) /* readable, but no matmul kernel for it */
            sd_err_set(L->err, st, "tensor %s: type %s not supported for weight matrices", name,
                       ggml_type_get(t->type)->name);
        else if (st != SD_OK)
            sd_err_prefix(L->err, "tensor %s", name);
    }
    return st;
}

sd_status sd_bind_matrix(sd_loader *L, sd_matrix *out, int64_t n_in, int64_t n_out, const char *fmt, int il) {
    return bind_matrix(L, out, n_in, n_out, fmt, il, false);
}

static float *own_f32(sd_model *m, int64_t n) {
    float **list = realloc(m->owned_f32, (size_t)(m->n_owned_f32 + 1) * sizeof *list);
    if (!list) return NULL;
    m->owned_f32 = list;
    float *v = sd_malloc_array((size_t)n, sizeof *v);
    if (v) {
        m->owned_f32[m->n_owned_f32++] = v;
        m->owned_f32_bytes += (uint64_t)n * sizeof *v;
    }
    return v;
}

/* A tensor {ne0, ne1} of a readable type as an f32 copy owned by the model. */
static sd_status bind_f32(sd_loader *L, const float **out, int64_t ne0, int64_t ne1, bool required,
                          bool transpose, const char *fmt, int il) {
    char name[96];
    *out = NULL;
    const gguf_tensor_info *t = find_tensor(L, fmt, il, name, sizeof name);
    if (!t) return required ? sd_err_set(L->err, SD_ERR_FORMAT, "missing tensor %s", name) : SD_OK;
    sd_status st = check_shape(L, t, name, ne0, ne1);
    if (st == SD_OK) st = check_type(L, t, name);
    if (st == SD_OK && ne0 % ggml_type_get(t->type)->block_size != 0)
        st = sd_err_set(L->err, SD_ERR_FORMAT, "tensor %s: %lld elements is not whole blocks of %s", name,
                        (long long)ne0, ggml_type_get(t->type)->name);
    if (st != SD_OK) return st;
    float *v = own_f32(L->m, ne0 * ne1), *row = transpose ? sd_malloc_array((size_t)ne0, sizeof *row) : NULL;
    if (!v || (transpose && !row)) {
        free(row);
        return sd_err_set(L->err, SD_ERR_NOMEM, "out of memory for tensor %s", name);
    }
    uint64_t row_bytes = 0;
    ggml_row_bytes(t->type, (uint64_t)ne0, &row_bytes); /* fits: the reader checked the tensor's size */
    for (int64_t r = 0; r < ne1; r++) {
        const uint8_t *src = (const uint8_t *)t->data + (uint64_t)r * row_bytes;
        sd_dequantize_row(t->type, src, transpose ? row : v + r * ne0, ne0);
        for (int64_t i = 0; transpose && i < ne0; i++) v[i * ne1 + r] = row[i];
    }
    free(row);
    gguf_release(L->m->gguf, t, t->nbytes); /* the f32 copy is what the forward reads */
    *out = v;
    return SD_OK;
}

sd_status sd_bind_vector(sd_loader *L, const float **out, int64_t n, bool required, const char *fmt, int il) {
    return bind_f32(L, out, n, 1, required, false, fmt, il);
}

sd_status sd_bind_f32_2d(sd_loader *L, const float **out, int64_t ne0, int64_t ne1, bool transpose, const char *fmt,
                         int il) {
    return bind_f32(L, out, ne0, ne1, true, transpose, fmt, il);
}

sd_status sd_bind_embeddings_and_output(sd_loader *L, sd_model *m) {
    const sd_hparams *hp = &m->hp;
    /* Tied embeddings: the lm head is token_embd (llama.cpp TENSOR_DUPLICATED),
     * and its repacked copy serves the head while lookups read single rows from
     * the file (a few pages). Untied, token_embd is only looked up by row, so
     * it gets no repacked copy. */
    bool tied = !gguf_find_tensor(L->gguf, "output.weight");
    sd_status st = bind_matrix(L, &m->tok_embd, hp->n_embd, hp->n_vocab, "token_embd.weight", 0, !tied);
    if (st == SD_OK) st = sd_bind_vector(L, &m->output_norm, hp->n_embd, true, "output_norm.weight", 0);
    if (st != SD_OK) return st;
    if (!tied) return sd_bind_matrix(L, &m->output, hp->n_embd, hp->n_vocab, "output.weight", 0);
    m->hp.tied_output = true;
    m->output = m->tok_embd;
    return SD_OK;
}

sd_status sd_bind_attn_block(sd_loader *L, sd_layer *layer, int il) {
    const sd_hparams *hp = &L->m->hp;
    const int64_t n_embd = hp->n_embd;
    const int64_t q_dim = (int64_t)hp->n_head * hp->head_dim;
    const int64_t kv_dim = (int64_t)hp->n_head_kv * hp->head_dim;
    sd_status st = sd_bind_vector(L, &layer->attn_norm, n_embd, true, "blk.%d.attn_norm.weight", il);
    if (st == SD_OK) st = sd_bind_matrix(L, &layer->wq, n_embd, q_dim, "blk.%d.attn_q.weight", il);
    if (st == SD_OK) st = sd_bind_matrix(L, &layer->wk, n_embd, kv_dim, "blk.%d.attn_k.weight", il);
    if (st == SD_OK) st = sd_bind_matrix(L, &layer->wv, n_embd, kv_dim, "blk.%d.attn_v.weight", il);
    if (st == SD_OK) st = sd_bind_matrix(L, &layer->wo, q_dim, n_embd, "blk.%d.attn_output.weight", il);
    if (st == SD_OK) st = sd_bind_vector(L, &layer->ffn_norm, n_embd, true, "blk.%d.ffn_norm.weight", il);
    return st;
}

sd_status sd_bind_dense_layer(sd_loader *L, sd_layer *layer, int il) {
    const sd_hparams *hp = &L->m->hp;
    const int64_t n_embd = hp->n_embd, n_ff = hp->n_ff;
    sd_status st = sd_bind_attn_block(L, layer, il);
    if (st == SD_OK) st = sd_bind_matrix(L, &layer->w_gate, n_embd, n_ff, "blk.%d.ffn_gate.weight", il);
    if (st == SD_OK) st = sd_bind_matrix(L, &layer->w_up, n_embd, n_ff, "blk.%d.ffn_up.weight", il);
    if (st == SD_OK) st = sd_bind_matrix(L, &layer->w_down, n_ff, n_embd, "blk.%d.ffn_down.weight", il);
    return st;
}

/* ---- the model ---- */

static sd_status read_arch(sd_loader *L, const sd_arch_def **def, sd_hparams *hp) {
    const char *s;
    uint64_t len;
    if (!gguf_get_str(L->gguf, "general.architecture", &s, &len))
        return sd_err_set(L->err, SD_ERR_FORMAT, "missing key general.architecture");
    if (len >= sizeof hp->arch_name) len = sizeof hp->arch_name - 1;
    memcpy(hp->arch_name, s, len);
    hp->arch_name[len] = '\0';
    if (strlen(hp->arch_name) != len)
        return sd_err_set(L->err, SD_ERR_FORMAT, "general.architecture contains a NUL byte");
    *def = sd_arch_find(hp->arch_name);
    if (!*def) return sd_err_set(L->err, SD_ERR_UNSUPPORTED, "unknown architecture '%s'", hp->arch_name);
    hp->arch = (*def)->arch;
    return SD_OK;
}

/* What the weights will take: the repacked copy of each tensor the kernel
 * path repacks (the grid types' tiles are up to 2.8x their file bytes), the
 * file's bytes for the others (the float norms are copied either way). */
static uint64_t tensor_bytes(const gguf_ctx *g) {
    uint64_t n = 0;
    for (int64_t i = 0; i < gguf_n_tensors(g); i++) {
        const gguf_tensor_info *t = gguf_tensor(g, i);
        int64_t rows = t->ne[1] * t->ne[2] * t->ne[3];
        uint64_t packed = t->n_dims >= 2 ? sd_matrix_packed_size(t->type, t->ne[0], rows) : 0;
        n += packed ? packed : t->nbytes;
    }
    return n;
}

/* The auto rule of sd_load_opts: repacking holds a heap copy of the weights
 * beside the KV cache; when the two would not fit in the memory available,
 * the matrices are read from the mapping instead (the page cache holds
 * them, and can drop and reread them). */
static void plan_repack(sd_loader *L, sd_model *m, const sd_load_opts *o) {
    if (o->no_repack) {
        L->no_pack = true;
        return;
    }
    uint64_t avail;
    if (!sd_mem_available(&avail)) return;
    const int32_t n_ctx = o->plan_n_ctx > 0 ? o->plan_n_ctx : m->hp.n_ctx_train < 4096 ? m->hp.n_ctx_train : 4096;
    /* every layer counted as attention: a hybrid's GDN layers are not known yet (an upper bound) */
    sd_hparams hp = m->hp;
    hp.n_layer_gdn = 0;
    const double kv = sd_kv_cache_plan_bytes(&hp, n_ctx, o->plan_type_k, o->plan_type_v);
    const double w = (double)tensor_bytes(m->gguf);
    if (w + kv <= (double)avail) return;
    L->no_pack = true;
    snprintf(m->repack_note, sizeof m->repack_note,
             "weights %.0f MiB + KV cache %.0f MiB (n_ctx %d) exceed the %.0f MiB available: the weights are read "
             "from the mapped file, not repacked (--no-repack)",
             w / (1 << 20), kv / (1 << 20), n_ctx, (double)avail / (1 << 20));
}

static sd_status load_model(sd_loader *L, sd_model *m, const sd_load_opts *opts) {
    const sd_arch_def *def = NULL;
    sd_status st = read_arch(L, &def, &m->hp);
    if (st == SD_OK) st = load_hparams(L, m->hp.arch_name, def->partial_rope, def->moe, &m->hp);
    if (st == SD_OK) st = def->load_hparams(L, &m->hp);
    if (st == SD_OK) st = sd_tokenizer_init(m->gguf, &m->tok, L->err);
    if (st != SD_OK) return st;
    /* The tokenizer has its own tables: the header's pages (token strings and
     * merges, ~5 MiB for a 150k vocabulary) go before the weights are copied,
     * so they do not add to the load's peak. Tensor lookups by name read a
     * few of them back. */
    gguf_release_header(m->gguf);
    m->hp.n_vocab = sd_tokenizer_n_vocab(m->tok);
    if (m->hp.n_vocab <= 0 || m->hp.n_vocab > SD_MAX_DIM)
        return sd_err_set(L->err, SD_ERR_FORMAT, "vocabulary size %d out of range", m->hp.n_vocab);
    m->layers = sd_calloc((size_t)m->hp.n_layer, sizeof *m->layers);
    if (!m->layers) return sd_err_set(L->err, SD_ERR_NOMEM, "out of memory for %d layers", m->hp.n_layer);
    plan_repack(L, m, opts);
    st = def->load_tensors(L, m);
    /* Attention layers are numbered into the KV cache, GDN layers into the recurrent state. */
    int32_t n_kv = 0, n_rec = 0;
    for (int il = 0; il < m->hp.n_layer; il++)
        m->layers[il].slot = m->layers[il].kind == SD_LAYER_GDN ? n_rec++ : n_kv++;
    m->hp.n_layer_gdn = n_rec;
    return st;
}

sd_status sd_model_load(const char *path, sd_model **out, sd_err *err) {
    const sd_load_opts o = {.plan_type_k = GGML_TYPE_F16, .plan_type_v = GGML_TYPE_F16};
    return sd_model_load_opts(path, &o, out, err);
}

sd_status sd_model_load_opts(const char *path, const sd_load_opts *opts, sd_model **out, sd_err *err) {
    *out = NULL;
    sd_model *m = calloc(1, sizeof *m);
    if (!m) return sd_err_set(err, SD_ERR_NOMEM, "%s: out of memory", path);
    sd_status st = gguf_open(path, &m->gguf, err);
    if (st != SD_OK) {
        free(m);
        return st; /* gguf_open's message already names the file */
    }
    sd_loader L = {path, m->gguf, m, err, false};
    st = load_model(&L, m, opts);
    if (st != SD_OK) {
        sd_err_prefix(err, "%s", path);
        sd_model_free(m);
        return st;
    }
    *out = m;
    return SD_OK;
}

static void free_layer(sd_layer *l) {
    sd_matrix *mats[] = {&l->wq,     &l->wk,      &l->wv,    &l->wo,       &l->w_gate,    &l->w_up,
                         &l->w_down, &l->ssm_qkv, &l->ssm_z, &l->ssm_beta, &l->ssm_alpha, &l->ssm_out};
    for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++) sd_matrix_free(mats[i]);
    sd_moe_free(l->moe);
}

void sd_model_free(sd_model *m) {
    if (!m) return;
    if (m->layers) {
        for (int il = 0; il < m->hp.n_layer; il++) free_layer(&m->layers[il]);
        free(m->layers);
    }
    free_layer(&m->nextn.layer);
    sd_matrix_free(&m->nextn.eh_proj);
    sd_matrix_free(&m->nextn.embd);
    sd_matrix_free(&m->nextn.head);
    if (!m->hp.tied_output) sd_matrix_free(&m->output);
    sd_matrix_free(&m->fc);
    free(m->d2t);
    sd_matrix_free(&m->tok_embd);
    for (int i = 0; i < m->n_owned_f32; i++) free(m->owned_f32[i]);
    free(m->owned_f32);
    sd_tokenizer_free(m->tok);
    gguf_close(m->gguf);
    free(m);
}

/* ---- sizes ---- */

static uint64_t matrix_bytes(const sd_matrix *w) {
    uint64_t row = 0;
    if (!w->data || !ggml_row_bytes(w->type, (uint64_t)w->n_in, &row)) return 0;
    return row * (uint64_t)w->n_out;
}

static uint64_t layer_matrix_sum(const sd_model *m, bool bytes, bool active) {
    uint64_t sum = 0;
    for (int il = 0; il < m->hp.n_layer; il++) {
        const sd_layer *l = &m->layers[il];
        const sd_matrix *mats[] = {&l->wq,     &l->wk,      &l->wv,    &l->wo,       &l->w_gate,    &l->w_up,
                                   &l->w_down, &l->ssm_qkv, &l->ssm_z, &l->ssm_beta, &l->ssm_alpha, &l->ssm_out};
        for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++)
            if (mats[i]->data) sum += bytes ? matrix_bytes(mats[i]) : (uint64_t)(mats[i]->n_in * mats[i]->n_out);
        sum += sd_moe_sum(l->moe, m->hp.n_expert_used, bytes, active);
    }
    return sum;
}

/* One decode step reads every layer matrix and the lm head once; of
 * token_embd it reads one row per token (negligible), unless it IS the lm head. */
uint64_t sd_model_weight_bytes(const sd_model *m) {
    return layer_matrix_sum(m, true, true) + matrix_bytes(&m->output) + matrix_bytes(&m->fc);
}

uint64_t sd_model_matrix_bytes(const sd_model *m) {
    return layer_matrix_sum(m, true, false) + matrix_bytes(&m->output) + matrix_bytes(&m->fc);
}

uint64_t sd_model_n_params(const sd_model *m) {
    const sd_hparams *hp = &m->hp;
    uint64_t n = layer_matrix_sum(m, false, false) + (uint64_t)(m->tok_embd.n_in * m->tok_embd.n_out);
    if (!hp->tied_output) n += (uint64_t)(m->output.n_in * m->output.n_out);
    n += (uint64_t)(m->fc.n_in * m->fc.n_out);
    uint64_t per_layer = 2 * (uint64_t)hp->n_embd;  /* attn_norm, ffn_norm */
    for (int il = 0; il < hp->n_layer; il++) {
        const sd_layer *l = &m->layers[il];
        uint64_t extra = 0;
        if (l->bq) extra += (uint64_t)hp->n_head * hp->head_dim;
        if (l->bk) extra += (uint64_t)hp->n_head_kv * hp->head_dim;
        if (l->bv) extra += (uint64_t)hp->n_head_kv * hp->head_dim;
        if (l->q_norm) extra += (uint64_t)hp->head_dim;
        if (l->k_norm) extra += (uint64_t)hp->head_dim;
        if (l->kind == SD_LAYER_GDN) /* conv kernel, dt_bias, ssm_a, ssm_norm */
            extra += (uint64_t)hp->ssm_conv_kernel * (uint64_t)hp->ssm_conv_dim + 2 * (uint64_t)hp->ssm_n_v_heads +
                     (uint64_t)hp->ssm_state;
        n += per_layer + extra;
    }
    if (m->rope_freqs) n += (uint64_t)hp->n_rot / 2;
    return n + (uint64_t)hp->n_embd; /* output_norm */
}

uint64_t sd_model_recurrent_bytes(const sd_model *m) {
    const sd_hparams *hp = &m->hp;
    const uint64_t per_layer = (uint64_t)(hp->ssm_conv_kernel - 1) * (uint64_t)hp->ssm_conv_dim +
                               (uint64_t)hp->ssm_n_v_heads * (uint64_t)hp->ssm_state * (uint64_t)hp->ssm_state;
    return hp->n_layer_gdn > 0 ? (uint64_t)hp->n_layer_gdn * per_layer * sizeof(float) : 0;
}

bool sd_model_is_recurrent(const sd_model *m) { return m->hp.n_layer_gdn > 0; }

/* ---- memory ---- */

void sd_model_memory_get(const sd_model *m, sd_model_memory *out) {
    uint64_t packed = m->tok_embd.packed_bytes;
    if (!m->hp.tied_output) packed += m->output.packed_bytes;
    for (int il = 0; il < m->hp.n_layer; il++) {
        const sd_layer *l = &m->layers[il];
        /* a matrix of the other layer kind is unbound: zero, packed_bytes 0 */
        const sd_matrix *mats[] = {&l->wq,     &l->wk,      &l->wv,    &l->wo,       &l->w_gate,    &l->w_up,
                                   &l->w_down, &l->ssm_qkv, &l->ssm_z, &l->ssm_beta, &l->ssm_alpha, &l->ssm_out};
        for (size_t i = 0; i < sizeof mats / sizeof mats[0]; i++) packed += mats[i]->packed_bytes;
        packed += sd_moe_packed_bytes(l->moe);
    }
    out->packed = packed;
    out->f32 = m->owned_f32_bytes;
    out->file_measured = gguf_resident_bytes(m->gguf, &out->file);
}
