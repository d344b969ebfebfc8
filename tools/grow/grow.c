/* sd-genmodel --grow: the function of a small trained qwen3 model inside a
 * realistic shape, so that speed is measured at a real model's cost on text a
 * trained model writes (random weights loop, which flatters n-gram drafting).
 *
 *   sd-genmodel --grow models/fixture-target.gguf --shape qwen3-0.6b --type q8_0 -o T.gguf
 *
 * Construction (small: width d, head_dim dh, n_ff f, GQA group g = n_head /
 * n_head_kv; grown: D, Dh, F, G; rho = D/d, rho_h = Dh/dh). In exact
 * arithmetic the grown model's logits equal the small model's:
 *
 * 1. Residual stream x' = [x, 0]: token_embd rows are [E_t, 0], and the only
 *    matrices that write the stream (attn_output, ffn_down) have rows [0, d)
 *    from the small model and zero rows past d.
 * 2. RMSNorm(y) = y / sqrt(mean(y^2) + eps) * w. Over D with D - d zeros,
 *    mean_D(x'^2) = mean_d(x^2) / rho; with eps' = eps / rho,
 *    sqrt(mean_d/rho + eps/rho) = sqrt(mean_d + eps) / sqrt(rho), so the
 *    normalized vector grows by sqrt(rho): block norms (attn_norm, ffn_norm,
 *    output_norm) get w' = w / sqrt(rho). eps must be scaled too: it is one
 *    key (layer_norm_rms_epsilon) for every norm of the model.
 * 3. Matrices that read a normed stream (attn_q/k/v, ffn_gate/up, the lm head)
 *    keep the small columns [0, d); the rest are zero (and read zeros anyway).
 * 4. qwen3 RMS-normalizes each head of q and k over head_dim with the same
 *    eps' before RoPE, then scores q.k / sqrt(head_dim). Q and K rows are
 *    scaled by c, c^2 = rho_h / rho:
 *      c q / sqrt(c^2 mean_dh(q^2) / rho_h + eps / rho)
 *        = sqrt(rho_h) * q / sqrt(mean_dh(q^2) + eps),
 *    i.e. the head norm sees the small eps again and its output grows by
 *    sqrt(rho_h). k_norm' = k_norm / sqrt(rho_h) undoes that for k; q_norm is
 *    kept, so q' = sqrt(rho_h) q and q'.k' / sqrt(Dh) = sqrt(rho_h) q.k /
 *    sqrt(rho_h dh) = q.k / sqrt(dh): the attention scale is compensated.
 *    c = 1 when rho = rho_h (fixture-target -> qwen3-0.6b: 1024/256 = 128/32).
 * 5. NEOX RoPE (llama.cpp rope mode 2) rotates pairs (i, i + n/2) by
 *    pos * base^(-2i/n), i < n/2. Small q/k dim j < dh/2 goes to j * rho_h,
 *    dh/2 + j to Dh/2 + j * rho_h: the grown pair i' = j * rho_h holds exactly
 *    the small pair j, at angle base^(-2 j rho_h / Dh) = base^(-2j/dh), with the
 *    same freq_base (needs an integer rho_h; with rho_h a power of two the
 *    exponent is even the same float). (The alternative, halves at j and
 *    Dh/2 + j with base' = base^rho_h, is exact too; this one keeps the base.)
 * 6. V is not rotated, so its layout is free: kv head k's dims go to grown
 *    kv head k's [0, dh), and attn_output's columns of small head h to
 *    h' * Dh + [0, dh): 32-column groups stay aligned 32-column blocks.
 * 7. GQA: small q head h (kv head h / g) becomes grown head
 *    h' = (h / g) * G + h % g (needs G >= g). Extra q heads have zero Q rows
 *    (uniform attention) but zero attn_output columns; extra kv heads are zero.
 * 8. FFN units [0, f): gate/up rows and down columns; extra units have zero
 *    gate and up rows, silu(0) * 0 = 0.
 * 9. Small layer l is grown layer l; the layers past it are exact identities:
 *    attn_output and ffn_down are zero (so is every matrix; norms are ones).
 * 10. The lm head (token_embd if tied, else output.weight) keeps columns [0, d).
 *
 * Quantization: the small weights are dequantized to f32 (exact). Written back
 * as Q8_0, every small 32-block lands on an aligned grown block (d, f, dh are
 * multiples of 32 and columns move by whole heads or not at all), and Q8_0 of
 * a dequantized Q8_0 block (one |q| = 127 by construction) gives the same
 * scale and quants, also after a scale by a power of two; zero blocks give
 * zeros. So a grown Q8_0 file holds the small file's blocks bit for bit when c
 * is a power of two (qwen3-0.6b from the target: c = 1; draft from the draft:
 * c = 1/2); qwen3-1.7b from the target has c = 1/sqrt(2) and its Q/K blocks
 * round differently. Q4_K re-quantizes the Q8_0 values to 4 bits: a slightly
 * different function (greedy text may split at near-ties).
 *
 * Layer count: decode reads every matrix once per token plus the lm head
 * (n_vocab x n_embd; the embedding lookup reads one row). A qwen3 shape gets
 * as many layers as make its weights per token equal the real model's, whose
 * vocabulary is 151936: the small vocabulary's missing head rows are carried
 * by extra layers (qwen3-0.6b: 28 + 10 = 38 layers). "draft" gets the layers
 * that make it 1/8 of the grown qwen3-0.6b per token. */
#include "grow/grow.h"
#include "grow/grow_io.h"

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/qwen3_keys.h"
#include "core/checked.h"
#include "core/status.h"
#include "format/ggml_type.h"
#include "format/gguf.h"
#include "numerics/quant.h"

/* ---- shapes ---- */
typedef struct grow_shape {
    const char *name;
    int n_embd, n_ff, n_head, n_head_kv, head_dim;
    int real_layers;         /* > 0: match the real model's weights per token ... */
    int64_t real_vocab;      /* ... whose vocabulary (and tied head) is this big */
    const char *fraction_of; /* or: 1/fraction_div of that grown shape's */
    int fraction_div;
    int fixed_layers;        /* or: this many (test shapes) */
} grow_shape;

static const grow_shape GROW_SHAPES[] = {
    /* Hugging Face Qwen/Qwen3-0.6B and Qwen3-1.7B config.json (tied heads). */
    {"qwen3-0.6b", 1024, 3072, 16, 8, 128, 28, 151936, NULL, 0, 0},
    {"qwen3-1.7b", 2048, 6144, 16, 8, 128, 28, 151936, NULL, 0, 0},
    /* A draft for the 0.6B shape: 8x the fixture draft's width (96 -> 768,
     * head_dim 32 -> 64, c = 1/2), its GQA group of 3 (12/4 heads). */
    {"draft", 768, 2304, 12, 4, 64, 0, 0, "qwen3-0.6b", 8, 0},
    /* Test-sized, holds either fixture: 4x the draft's width and head_dim
     * (exact scalings, c = 1), 1.5x the target's (c^2 = 8/3). */
    {"tiny", 384, 1152, 12, 4, 128, 0, 0, NULL, 0, 5},
};
#define N_GROW_SHAPES (sizeof GROW_SHAPES / sizeof GROW_SHAPES[0])

static const grow_shape *grow_shape_find(const char *name) {
    for (size_t i = 0; i < N_GROW_SHAPES; i++)
        if (!strcmp(GROW_SHAPES[i].name, name)) return &GROW_SHAPES[i];
    return NULL;
}

/* Weights read per decoded token: every layer matrix plus the lm head. */
static double layer_params(const grow_shape *s) {
    double q = (double)s->n_head * s->head_dim, kv = (double)s->n_head_kv * s->head_dim;
    return (double)s->n_embd * (2 * q + 2 * kv) + 3.0 * s->n_embd * s->n_ff;
}

static int grown_layers(const grow_shape *s, int64_t n_vocab, int min_layers);

static double per_token_params(const grow_shape *s, int n_layer, int64_t n_vocab) {
    return n_layer * layer_params(s) + (double)n_vocab * s->n_embd;
}

/* See the header comment: byte-matched layer count, at least min_layers. */
static int grown_layers(const grow_shape *s, int64_t n_vocab, int min_layers) {
    double want;
    if (s->fixed_layers) return s->fixed_layers > min_layers ? s->fixed_layers : min_layers;
    if (s->real_layers) {
        want = per_token_params(s, s->real_layers, s->real_vocab);
    } else {
        const grow_shape *of = grow_shape_find(s->fraction_of);
        want = per_token_params(of, grown_layers(of, n_vocab, 1), n_vocab) / s->fraction_div;
    }
    int n = (int)lround((want - (double)n_vocab * s->n_embd) / layer_params(s));
    return n > min_layers ? n : min_layers;
}

/* ---- the small model ---- */
typedef struct small_hp {
    int n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim;
    int64_t n_vocab;
    float eps;
    bool tied;
} small_hp;

static bool get_int(const gguf_ctx *g, const char *key, int *out) {
    uint32_t v;
    if (!gguf_get_u32(g, key, &v) || v == 0 || v > (1u << 24)) return false;
    *out = (int)v;
    return true;
}

static sd_status read_small(const gguf_ctx *g, const char *path, small_hp *hp, sd_err *err) {
    const char *arch;
    uint64_t len;
    if (!gguf_get_str(g, "general.architecture", &arch, &len) || len != 5 || memcmp(arch, "qwen3", 5))
        return sd_err_set(err, SD_ERR_UNSUPPORTED, "%s: --grow handles qwen3 models only", path);
    if (!get_int(g, "qwen3.block_count", &hp->n_layer) || !get_int(g, "qwen3.embedding_length", &hp->n_embd) ||
        !get_int(g, "qwen3.feed_forward_length", &hp->n_ff) || !get_int(g, "qwen3.attention.head_count", &hp->n_head))
        return sd_err_set(err, SD_ERR_FORMAT, "%s: missing or bad qwen3 shape keys", path);
    if (!get_int(g, "qwen3.attention.head_count_kv", &hp->n_head_kv)) hp->n_head_kv = hp->n_head;
    if (!get_int(g, "qwen3.attention.key_length", &hp->head_dim)) hp->head_dim = hp->n_embd / hp->n_head;
    int v_len = hp->head_dim, n_rot = hp->head_dim;
    if (gguf_find_key(g, "qwen3.attention.value_length") >= 0 && !get_int(g, "qwen3.attention.value_length", &v_len))
        v_len = -1;
    if (gguf_find_key(g, "qwen3.rope.dimension_count") >= 0 && !get_int(g, "qwen3.rope.dimension_count", &n_rot))
        n_rot = -1;
    if (v_len != hp->head_dim || n_rot != hp->head_dim || hp->head_dim % 2 || hp->n_head % hp->n_head_kv)
        return sd_err_set(err, SD_ERR_UNSUPPORTED, "%s: needs value_length = rope dims = key_length (even), "
                          "head_count a multiple of head_count_kv", path);
    if (!gguf_get_f32(g, "qwen3.attention.layer_norm_rms_epsilon", &hp->eps) || !(hp->eps > 0))
        return sd_err_set(err, SD_ERR_FORMAT, "%s: missing qwen3.attention.layer_norm_rms_epsilon", path);
    if (gguf_find_key(g, "qwen3.rope.scaling.type") >= 0)
        return sd_err_set(err, SD_ERR_UNSUPPORTED, "%s: rope scaling is not handled by --grow", path);
    const gguf_tensor_info *e = gguf_find_tensor(g, "token_embd.weight");
    if (!e || e->n_dims != 2 || e->ne[0] != hp->n_embd)
        return sd_err_set(err, SD_ERR_FORMAT, "%s: missing or misshapen token_embd.weight", path);
    hp->n_vocab = e->ne[1];
    hp->tied = gguf_find_tensor(g, "output.weight") == NULL;
    return SD_OK;
}

/* ---- the placement maps of the header comment ---- */
typedef struct grow_plan {
    small_hp s;
    const grow_shape *shape;
    int n_layer;
    double rho, rho_h, c;
    int64_t *q_rows, *k_rows, *v_rows, *o_cols, *qk_dims; /* small index -> grown index */
} grow_plan;

/* Where small q/k dim j of a head goes (item 5). */
static int64_t rope_dim(const grow_plan *p, int j) {
    int dh = p->s.head_dim, Dh = p->shape->head_dim, r = Dh / dh;
    return j < dh / 2 ? (int64_t)j * r : Dh / 2 + (int64_t)(j - dh / 2) * r;
}

static int64_t grown_q_head(const grow_plan *p, int h) {
    int g = p->s.n_head / p->s.n_head_kv, G = p->shape->n_head / p->shape->n_head_kv;
    return (int64_t)(h / g) * G + h % g;
}

static sd_status plan_check(const grow_plan *p, sd_err *err) {
    const small_hp *s = &p->s;
    const grow_shape *t = p->shape;
    int g = s->n_head / s->n_head_kv, G = t->n_head / t->n_head_kv;
    if (t->n_embd < s->n_embd || t->n_ff < s->n_ff || t->head_dim < s->head_dim || t->head_dim % s->head_dim ||
        t->n_head_kv < s->n_head_kv || G < g || t->n_head % t->n_head_kv)
        return sd_err_set(err, SD_ERR_ARG,
                          "shape %s (%d wide, n_ff %d, %d/%d heads x %d) cannot hold the model "
                          "(%d wide, n_ff %d, %d/%d heads x %d): needs every size >= the model's, "
                          "head_dim a multiple, a GQA group >= %d",
                          t->name, t->n_embd, t->n_ff, t->n_head, t->n_head_kv, t->head_dim, s->n_embd, s->n_ff,
                          s->n_head, s->n_head_kv, s->head_dim, g);
    return SD_OK;
}

static int64_t *index_map(int64_t n) { return sd_malloc_array((size_t)(n ? n : 1), sizeof(int64_t)); }

static sd_status plan_init(grow_plan *p, const small_hp *s, const grow_shape *shape, sd_err *err) {
    memset(p, 0, sizeof *p);
    p->s = *s, p->shape = shape;
    sd_status st = plan_check(p, err);
    if (st) return st;
    p->n_layer = grown_layers(shape, s->n_vocab, s->n_layer);
    p->rho = (double)shape->n_embd / s->n_embd;
    p->rho_h = (double)shape->head_dim / s->head_dim;
    p->c = sqrt(p->rho_h / p->rho);
    int dh = s->head_dim, Dh = shape->head_dim;
    int64_t nq = (int64_t)s->n_head * dh, nkv = (int64_t)s->n_head_kv * dh;
    p->q_rows = index_map(nq), p->o_cols = index_map(nq), p->k_rows = index_map(nkv), p->v_rows = index_map(nkv);
    p->qk_dims = index_map(dh);
    if (!p->q_rows || !p->o_cols || !p->k_rows || !p->v_rows || !p->qk_dims)
        return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    for (int j = 0; j < dh; j++) p->qk_dims[j] = rope_dim(p, j);
    for (int h = 0; h < s->n_head; h++)
        for (int j = 0; j < dh; j++) {
            p->q_rows[h * dh + j] = grown_q_head(p, h) * Dh + p->qk_dims[j];
            p->o_cols[h * dh + j] = grown_q_head(p, h) * Dh + j;
        }
    for (int k = 0; k < s->n_head_kv; k++)
        for (int j = 0; j < dh; j++) {
            p->k_rows[k * dh + j] = (int64_t)k * Dh + p->qk_dims[j];
            p->v_rows[k * dh + j] = (int64_t)k * Dh + j;
        }
    return SD_OK;
}

static void plan_free(grow_plan *p) {
    free(p->q_rows), free(p->o_cols), free(p->k_rows), free(p->v_rows), free(p->qk_dims);
}

/* ---- writing: buffers kept until the writer has written them ---- */

void *grow_keep(grower *g, size_t bytes) {
    if (g->n_bufs == g->cap_bufs) {
        int cap = g->cap_bufs ? 2 * g->cap_bufs : 64;
        void **nb = realloc(g->bufs, (size_t)cap * sizeof *nb);
        if (!nb) return NULL;
        g->bufs = nb, g->cap_bufs = cap;
    }
    void *q = calloc(1, bytes ? bytes : 1);
    if (q) g->bufs[g->n_bufs++] = q;
    return q;
}

/* The small tensor `name` as f32 [n_out][n_in] (malloc'd), checking its shape. */
float *grow_small_f32(grower *g, const char *name, int64_t n_in, int64_t n_out, sd_err *err) {
    const gguf_tensor_info *t = gguf_find_tensor(g->small, name);
    uint64_t row_bytes;
    if (!t || t->ne[0] != n_in || t->ne[1] * t->ne[2] * t->ne[3] != n_out || !sd_type_supported(t->type) ||
        !ggml_row_bytes(t->type, (uint64_t)n_in, &row_bytes)) {
        sd_err_set(err, SD_ERR_FORMAT, "%s: missing, misshapen or unsupported tensor %s (expected [%lld, %lld])",
                   g->small_path, name, (long long)n_in, (long long)n_out);
        return NULL;
    }
    float *f = sd_malloc_array((size_t)(n_in * n_out), sizeof *f);
    if (!f) {
        sd_err_set(err, SD_ERR_NOMEM, "%s: out of memory", name);
        return NULL;
    }
    for (int64_t r = 0; r < n_out; r++)
        sd_dequantize_row(t->type, (const uint8_t *)t->data + r * row_bytes, f + r * n_in, n_in);
    return f;
}

/* Adds grown tensor `name` [n_out][n_in] of type: data (f32 [n_out][n_in]) is
 * written as is (type f32) or quantized row by row. */
sd_status grow_add_tensor(grower *g, const char *name, uint32_t type, int n_dims, int64_t n_in, int64_t n_out,
                            const float *data, void *ready, sd_err *err) {
    uint64_t row_bytes, bytes;
    if (!ggml_row_bytes(type, (uint64_t)n_in, &row_bytes) || !sd_mul_u64(row_bytes, (uint64_t)n_out, &bytes))
        return sd_err_set(err, SD_ERR_ARG, "%s: %lld columns do not fit type %s", name, (long long)n_in,
                          ggml_type_get(type)->name);
    void *dst = ready;
    if (!dst) {
        if (!(dst = grow_keep(g, bytes))) return sd_err_set(err, SD_ERR_NOMEM, "%s: out of memory", name);
        for (int64_t r = 0; r < n_out; r++) {
            if (type == GGML_TYPE_F32) memcpy((uint8_t *)dst + r * row_bytes, data + r * n_in, row_bytes);
            else sd_quantize_row(type, data + r * n_in, (uint8_t *)dst + r * row_bytes, n_in);
        }
    }
    int64_t ne[2] = {n_in, n_out};
    g->total_bytes += bytes;
    sd_status st = gguf_writer_add_tensor(g->w, name, type, (uint32_t)n_dims, ne, dst, bytes);
    return st ? sd_err_set(err, st, "%s: cannot add tensor", name) : SD_OK;
}

/* A zeroed buffer of g->type for [n_out][n_in], one per shape shared by
 * every identity layer (all-zero blocks of every type are zeros). */
void *grow_zero_data(grower *g, const char *name, int64_t n_in, int64_t n_out, sd_err *err) {
    for (int i = 0; i < g->n_zeros; i++)
        if (g->zeros[i].n_in == n_in && g->zeros[i].n_out == n_out) return g->zeros[i].data;
    uint64_t row_bytes, bytes;
    if (g->n_zeros == GROW_MAX_ZEROS || !ggml_row_bytes(g->type, (uint64_t)n_in, &row_bytes) ||
        !sd_mul_u64(row_bytes, (uint64_t)n_out, &bytes)) {
        sd_err_set(err, SD_ERR_ARG, "%s: %lld columns do not fit type %s", name, (long long)n_in,
                   ggml_type_get(g->type)->name);
        return NULL;
    }
    /* calloc'd: zero bytes are zero values in every block format (the scales are 0) */
    void *z = grow_keep(g, bytes);
    if (!z) {
        sd_err_set(err, SD_ERR_NOMEM, "%s: out of memory", name);
        return NULL;
    }
    g->zeros[g->n_zeros++] = (struct zero_mat){n_in, n_out, z};
    return z;
}

sd_status grow_add_zero_matrix(grower *g, const char *name, int64_t n_in, int64_t n_out, sd_err *err) {
    void *z = grow_zero_data(g, name, n_in, n_out, err);
    return z ? grow_add_tensor(g, name, g->type, 2, n_in, n_out, NULL, z, err) : err->code;
}

sd_status grow_add_experts(grower *g, const char *name, int64_t n_in, int64_t n_out, int64_t n_exp, void *ready,
                           sd_err *err) {
    uint64_t row_bytes, rows, bytes;
    if (!ggml_row_bytes(g->type, (uint64_t)n_in, &row_bytes))
        return sd_err_set(err, SD_ERR_ARG, "%s: %lld columns do not fit type %s", name, (long long)n_in,
                          ggml_type_get(g->type)->name);
    if (n_out < 0 || n_exp < 0 || !sd_mul_u64((uint64_t)n_out, (uint64_t)n_exp, &rows) ||
        !sd_mul_u64(row_bytes, rows, &bytes))
        return sd_err_set(err, SD_ERR_ARG, "%s: %lld rows x %lld experts of %llu bytes overflow", name,
                          (long long)n_out, (long long)n_exp, (unsigned long long)row_bytes);
    const int64_t ne[3] = {n_in, n_out, n_exp};
    g->total_bytes += bytes;
    sd_status st = gguf_writer_add_tensor(g->w, name, g->type, 3, ne, ready, bytes);
    return st ? sd_err_set(err, st, "%s: cannot add tensor", name) : SD_OK;
}

/* Grown matrix `name` (small [n][m] -> grown [N][M]): small row r goes to
 * row rows[r], column c to cols[c] (NULL: the same index), times scale; the
 * rest zero. */
static sd_status grow_matrix(grower *g, const char *name, int64_t m, int64_t n, int64_t M, int64_t N,
                             const int64_t *cols, const int64_t *rows, double scale, sd_err *err) {
    float *small = grow_small_f32(g, name, m, n, err);
    if (!small) return err->code;
    float *big = sd_calloc((size_t)(M * N), sizeof *big);
    if (!big) {
        free(small);
        return sd_err_set(err, SD_ERR_NOMEM, "%s: out of memory", name);
    }
    for (int64_t r = 0; r < n; r++)
        for (int64_t c = 0; c < m; c++) big[(rows ? rows[r] : r) * M + (cols ? cols[c] : c)] = (float)(small[r * m + c] * scale);
    free(small);
    sd_status st = grow_add_tensor(g, name, g->type, 2, M, N, big, NULL, err);
    free(big);
    return st;
}

/* Grown f32 vector `name` (small [n] -> grown [N]): entry j goes to idx[j]
 * (NULL: j) times scale; the rest `fill`. Without a small tensor (identity layers):
 * all `fill`. */
static sd_status grow_vector(grower *g, const char *name, int64_t n, int64_t N, const int64_t *idx, double scale,
                             float fill, bool from_small, sd_err *err) {
    float *v = grow_keep(g, (size_t)N * sizeof *v);
    if (!v) return sd_err_set(err, SD_ERR_NOMEM, "%s: out of memory", name);
    for (int64_t i = 0; i < N; i++) v[i] = fill;
    if (from_small) {
        float *small = grow_small_f32(g, name, n, 1, err);
        if (!small) return err->code;
        for (int64_t j = 0; j < n; j++) v[idx ? idx[j] : j] = (float)(small[j] * scale);
        free(small);
    }
    return grow_add_tensor(g, name, GGML_TYPE_F32, 1, N, 1, NULL, v, err);
}

static sd_status grow_layer(grower *g, const grow_plan *p, int il, sd_err *err) {
    const small_hp *s = &p->s;
    const grow_shape *t = p->shape;
    bool real = il < s->n_layer;
    int64_t d = s->n_embd, D = t->n_embd, f = s->n_ff, F = t->n_ff;
    int64_t nq = (int64_t)s->n_head * s->head_dim, nkv = (int64_t)s->n_head_kv * s->head_dim;
    int64_t NQ = (int64_t)t->n_head * t->head_dim, NKV = (int64_t)t->n_head_kv * t->head_dim;
    double norm = 1.0 / sqrt(p->rho), c = p->c;
    char name[96];
    sd_status st = SD_OK;
#define NAME(suffix) (snprintf(name, sizeof name, "blk.%d." suffix, il), name)
#define MAT(suffix, m, n, M, N, cols, rows, scale) \
    (st = st ? st : real ? grow_matrix(g, NAME(suffix), m, n, M, N, cols, rows, scale, err) \
                         : grow_add_zero_matrix(g, NAME(suffix), M, N, err))
#define VEC(suffix, n, N, idx, scale) \
    (st = st ? st : grow_vector(g, NAME(suffix), n, N, idx, scale, real ? 0.0f : 1.0f, real, err))
    VEC("attn_norm.weight", d, D, NULL, norm);
    MAT("attn_q.weight", d, nq, D, NQ, NULL, p->q_rows, c);
    MAT("attn_k.weight", d, nkv, D, NKV, NULL, p->k_rows, c);
    MAT("attn_v.weight", d, nkv, D, NKV, NULL, p->v_rows, 1.0);
    MAT("attn_output.weight", nq, d, NQ, D, p->o_cols, NULL, 1.0);
    VEC("attn_q_norm.weight", s->head_dim, t->head_dim, p->qk_dims, 1.0);
    VEC("attn_k_norm.weight", s->head_dim, t->head_dim, p->qk_dims, 1.0 / sqrt(p->rho_h));
    VEC("ffn_norm.weight", d, D, NULL, norm);
    MAT("ffn_gate.weight", d, f, D, F, NULL, NULL, 1.0);
    MAT("ffn_up.weight", d, f, D, F, NULL, NULL, 1.0);
    MAT("ffn_down.weight", f, d, F, D, NULL, NULL, 1.0);
#undef NAME
#undef MAT
#undef VEC
    return st;
}

static bool in_list(const char *key, const char *const *keys, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!strcmp(key, keys[i])) return true;
    return false;
}

sd_status grow_copy_metadata(grower *g, const char *const *shape_keys, size_t n, const char *shape_name,
                             sd_err *err) {
    static const char *const own[] = {"general.name", "general.file_type"};
    sd_status st = SD_OK;
    for (int64_t i = 0; !st && i < gguf_n_kv(g->small); i++) {
        const char *key = gguf_kv_key(g->small, i);
        if (!in_list(key, own, 2) && !in_list(key, shape_keys, n)) st = gguf_writer_copy_kv(g->w, g->small, i);
    }
    char gname[128];
    snprintf(gname, sizeof gname, "grown %s %s", shape_name, ggml_type_get(g->type)->name);
    st = st ? st : gguf_writer_set_str(g->w, "general.name", gname, strlen(gname));
    st = st ? st : gguf_writer_set_u32(g->w, "general.file_type", tool_file_type(g->type));
    (void)err; /* the writer's status; the caller names the failure */
    return st;
}

/* Every key of the small file (tokenizer, rope base, context length) but the
 * shape, which is the grown one; eps' = eps / rho (item 2). */
static sd_status grow_metadata(grower *g, const grow_plan *p, sd_err *err) {
    const grow_shape *t = p->shape;
    gguf_writer *w = g->w;
    static const char *const shape_keys[] = {
        "qwen3.block_count", "qwen3.embedding_length", "qwen3.feed_forward_length", "qwen3.attention.head_count",
        "qwen3.attention.head_count_kv", "qwen3.attention.key_length", "qwen3.attention.value_length",
        "qwen3.rope.dimension_count", "qwen3.attention.layer_norm_rms_epsilon"};
    sd_status st = grow_copy_metadata(g, shape_keys, sizeof shape_keys / sizeof *shape_keys, t->name, err);
    const tool_qwen3_shape q3 = {p->n_layer, t->n_embd, t->n_ff, t->n_head, t->n_head_kv, t->head_dim,
                                 (float)(p->s.eps / p->rho), NULL};
    st = st ? st : tool_write_qwen3_shape(w, &q3);
    return st ? sd_err_set(err, st, "cannot write metadata") : SD_OK;
}

static sd_status grow(const char *small_path, const grow_shape *shape, uint32_t type, const char *out, sd_err *err) {
    gguf_ctx *small = NULL;
    sd_status st = gguf_open(small_path, &small, err);
    if (st) return st;
    small_hp s;
    grow_plan p = {0};
    grower g = {.small = small, .small_path = small_path, .type = type};
    if (!(st = read_small(small, small_path, &s, err))) st = plan_init(&p, &s, shape, err);
    if (!st && !(g.w = gguf_writer_init())) st = sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    if (!st) {
        fprintf(stderr, "sd-genmodel: growing %s (%d layers, %d wide, %d/%d heads x %d, n_ff %d, vocab %lld) to %s: "
                "%d layers, %d wide, %d/%d heads x %d, n_ff %d; eps x 1/%g, Q/K rows x %.6g\n",
                small_path, s.n_layer, s.n_embd, s.n_head, s.n_head_kv, s.head_dim, s.n_ff, (long long)s.n_vocab,
                shape->name, p.n_layer, shape->n_embd, shape->n_head, shape->n_head_kv, shape->head_dim,
                shape->n_ff, p.rho, p.c);
        if (shape->real_layers)
            fprintf(stderr, "sd-genmodel: weights per token %.1f M vs the real model's %.1f M (%d layers, "
                    "vocab %lld): %d extra layers carry the smaller head\n",
                    per_token_params(shape, p.n_layer, s.n_vocab) / 1e6,
                    per_token_params(shape, shape->real_layers, shape->real_vocab) / 1e6, shape->real_layers,
                    (long long)shape->real_vocab, p.n_layer - shape->real_layers);
        else
            fprintf(stderr, "sd-genmodel: weights per token %.1f M\n", per_token_params(shape, p.n_layer, s.n_vocab) / 1e6);
    }
    if (!st) st = grow_metadata(&g, &p, err);
    if (!st)
        st = grow_matrix(&g, "token_embd.weight", s.n_embd, s.n_vocab, shape->n_embd, s.n_vocab, NULL,
                         NULL, 1.0, err);
    for (int il = 0; !st && il < p.n_layer; il++) st = grow_layer(&g, &p, il, err);
    if (!st) st = grow_vector(&g, "output_norm.weight", s.n_embd, shape->n_embd, NULL, 1.0 / sqrt(p.rho), 0.0f,
                              true, err);
    if (!st && !s.tied)
        st = grow_matrix(&g, "output.weight", s.n_embd, s.n_vocab, shape->n_embd, s.n_vocab, NULL, NULL, 1.0, err);
    if (!st) {
        fprintf(stderr, "sd-genmodel: writing %.1f MB of tensors to %s\n", (double)g.total_bytes / 1e6, out);
        st = gguf_writer_write(g.w, out, err);
    }
    gguf_writer_free(g.w);
    for (int i = 0; i < g.n_bufs; i++) free(g.bufs[i]);
    free(g.bufs);
    plan_free(&p);
    gguf_close(small);
    return st;
}

static void grow_usage(FILE *f) {
    fprintf(f, "usage: sd-genmodel --grow SMALL.gguf --shape NAME -o OUT.gguf [--type TYPE] [--dry-run]\n"
               "  a model of a realistic shape computing SMALL's function (tools/grow/grow.c,\n"
               "  grow_q35.c, grow_moe.c)\n"
               "  --shape   qwen3-0.6b | qwen3-1.7b | draft | tiny              (SMALL: qwen3)\n"
               "            qwen35-0.8b | qwen35-2b | qwen35-9b | qwen35-27b | qwen35-tiny\n"
               "                                                               (SMALL: qwen35)\n"
               "            qwen35-35b-a3b | qwen35-35b-a3b-L4 | qwen35moe-tiny  (SMALL: qwen35;\n"
               "                                                  grown as qwen35moe, grow_moe.c)\n"
               "  --type    f32 (default) | f16 | q8_0 | q4_k (norm weights are always f32)\n"
               "  --dry-run (qwen35 shapes) print the plan and the file size, write nothing\n");
}

int grow_main(int argc, char **argv) {
    const char *small = NULL, *shape_name = NULL, *type_name = "f32", *out = NULL;
    bool dry_run = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) return grow_usage(stdout), 0;
        if (!strcmp(a, "--dry-run")) {
            dry_run = true;
            continue;
        }
        if (i + 1 >= argc) return fprintf(stderr, "sd-genmodel: %s needs a value\n", a), 2;
        if (!strcmp(a, "--grow")) small = argv[++i];
        else if (!strcmp(a, "--shape")) shape_name = argv[++i];
        else if (!strcmp(a, "--type")) type_name = argv[++i];
        else if (!strcmp(a, "-o")) out = argv[++i];
        else return fprintf(stderr, "sd-genmodel: unknown option %s with --grow\n", a), 2;
    }
    if (!small || !shape_name || (!out && !dry_run)) return grow_usage(stderr), 2;
    int t = ggml_type_from_name(type_name);
    if (t < 0 || (t != GGML_TYPE_F32 && !sd_type_quantizable((uint32_t)t)))
        return fprintf(stderr, "sd-genmodel: cannot write type '%s'\n", type_name), 2;
    if (grow_q35_has_shape(shape_name)) return grow_q35_run(small, shape_name, (uint32_t)t, out, dry_run);
    const grow_shape *shape = grow_shape_find(shape_name);
    if (!shape) return fprintf(stderr, "sd-genmodel: unknown --grow shape '%s'\n", shape_name), 2;
    if (dry_run) return fprintf(stderr, "sd-genmodel: --dry-run is for the qwen35 shapes\n"), 2;
    sd_err err = {0};
    if (grow(small, shape, (uint32_t)t, out, &err)) {
        fprintf(stderr, "sd-genmodel: %s\n", err.msg);
        return 1;
    }
    return 0;
}
