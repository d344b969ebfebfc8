/* sd-genmodel: writes a qwen3 or qwen35 GGUF with random weights at a
 * realistic shape and a real tokenizer, for speed measurements on a machine
 * without a model hub (ARCHITECTURE.md §9.3: timing does not depend on weight values).
 *
 *   sd-genmodel --shape qwen3-0.6b --type q8_0 -o cache/models/qwen3-0.6b-q8_0.gguf
 *   sd-genmodel --shape qwen35-0.8b --type q4_k -o cache/models/qwen35-0.8b-q4_k.gguf
 *
 * qwen3 shapes are the published Hugging Face configs (Qwen/Qwen3-0.6B,
 * Qwen3-1.7B config.json); "draft" is a ~10x smaller model with the same
 * vocabulary and "tiny" a test-sized one. Tensor and key names are llama.cpp's
 * (src/llama-arch.cpp LLM_ARCH_QWEN3), so llama.cpp loads the files too.
 * Weights ~ N(0, 0.02), norm weights 1. The tokenizer.* metadata is copied
 * verbatim from a vocab-only GGUF (default: llama.cpp's ggml-vocab-qwen2.gguf,
 * whose 151936 entries match Qwen3's embedding rows).
 *
 * qwen35 shapes (hybrid Gated DeltaNet + gated attention, llama.cpp
 * src/models/qwen35.cpp; ../shared/facts/qwen35-mtp-eagle3.md): qwen35-0.8b and
 * qwen35-2b have the dimensions of the Hugging Face model cards / config.json
 * of Qwen/Qwen3.5-0.8B and Qwen/Qwen3.5-2B (24 layers as 6 x (3 GDN + 1 gated
 * attention); GDN 16 QK and 16 V heads of 128; attention 8 Q / 2 KV heads of
 * 256, rotary dims 64, mrope_section [11, 11, 10], rope_theta 1e7; FFN 3584
 * resp. 6144; hidden 1024 resp. 2048; tied 248320-row embedding; one MTP
 * layer, mtp_num_hidden_layers = 1). qwen35-draft is a ~70M-parameter model of
 * the same family and vocabulary (most of it the embedding) with H_v = 2 H_k,
 * and qwen35-tiny a test-sized one with an MTP layer. Their tokenizer defaults
 * to tests/data/tokenizer/ggml-vocab-qwen35.gguf (llama.cpp's qwen35
 * pre-tokenizer vocabulary, 151936 entries); the realistic shapes pad it to the
 * published 248320 rows with "[PAD<i>]" tokens of type UNUSED, as llama.cpp's
 * converter pads a vocabulary to the checkpoint's vocab_size. Per GDN layer:
 * ssm_a = -(1 .. 16) spread over the heads (A = -exp(A_log), HF initialises
 * A ~ U(0, 16)), ssm_dt.bias = 1 (HF init), ssm_conv1d ~ N(0, 0.1) in f32 (as
 * llama.cpp keeps it), every other matrix quantized like the rest.
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

#include "common/qwen3_keys.h"
#include "core/checked.h"
#include "core/status.h"
#include "format/gguf.h"
#include "grow/grow.h"
#include "numerics/quantize/quantize_file.h"

typedef struct shape {
    const char *name;
    int n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim;
    /* qwen35 only (hybrid = true): */
    bool hybrid;
    int n_rot, ssm_k_heads, ssm_v_heads, ssm_state, conv_kernel, interval, n_mtp;
    int sections[4];
    int64_t n_vocab_pad; /* embedding rows; the vocabulary is padded to it (0: as the vocab) */
    /* mixture of experts (qwen3moe / qwen35moe, docs/MOE.md); n_expert 0: dense */
    int n_expert, n_expert_used, n_ff_exp, n_ff_shexp;
    bool untied;         /* writes output.weight (the MoE releases do not tie) */
} shape;

static const shape SHAPES[] = {
#define QWEN3(nm, l, e, f, h, kv, d) {.name = nm, .n_layer = l, .n_embd = e, .n_ff = f, .n_head = h, .n_head_kv = kv, .head_dim = d}
#define QWEN35(nm, l, e, f, h, kv, d, rot, hk, hv, st, k, iv, mtp, s0, s1, s2, pad)                                \
    {.name = nm, .n_layer = l, .n_embd = e, .n_ff = f, .n_head = h, .n_head_kv = kv, .head_dim = d, .hybrid = true, \
     .n_rot = rot, .ssm_k_heads = hk, .ssm_v_heads = hv, .ssm_state = st, .conv_kernel = k, .interval = iv,        \
     .n_mtp = mtp, .sections = {s0, s1, s2, 0}, .n_vocab_pad = pad}
    QWEN3("qwen3-0.6b", 28, 1024, 3072, 16, 8, 128),
    QWEN3("qwen3-1.7b", 28, 2048, 6144, 16, 8, 128),
    /* ~45M parameters (most in the tied embedding) vs 0.6B's 596M: a draft. */
    QWEN3("draft", 8, 256, 1024, 4, 2, 64),
    QWEN3("tiny", 2, 64, 128, 4, 2, 16),
    /*     name           layers embd  ff   heads kv  dim  rot Hk  Hv  S    K  int mtp sections   rows */
    QWEN35("qwen35-0.8b", 24, 1024, 3584, 8, 2, 256, 64, 16, 16, 128, 4, 4, 1, 11, 11, 10, 248320),
    QWEN35("qwen35-2b", 24, 2048, 6144, 8, 2, 256, 64, 16, 16, 128, 4, 4, 1, 11, 11, 10, 248320),
    QWEN35("qwen35-draft", 8, 256, 1024, 4, 1, 128, 32, 4, 8, 64, 4, 4, 0, 6, 5, 5, 248320),
    QWEN35("qwen35-tiny", 4, 64, 128, 4, 2, 32, 8, 2, 4, 16, 4, 4, 1, 2, 1, 1, 0),
    /* MoE (docs/MOE.md "Published shapes"); -L4: the same layers, 4 of them, for quick runs */
#define QWEN3MOE(nm, l) {.name = nm, .n_layer = l, .n_embd = 2048, .n_ff = 6144, .n_head = 32, .n_head_kv = 4, \
                         .head_dim = 128, .n_expert = 128, .n_expert_used = 8, .n_ff_exp = 768, .untied = true}
#define QWEN35MOE(nm, l)                                                                                        \
    {.name = nm, .n_layer = l, .n_embd = 2048, .n_ff = 512, .n_head = 16, .n_head_kv = 2, .head_dim = 256,      \
     .hybrid = true, .n_rot = 64, .ssm_k_heads = 16, .ssm_v_heads = 32, .ssm_state = 128, .conv_kernel = 4,   \
     .interval = 4, .n_mtp = 1, .sections = {11, 11, 10, 0}, .n_vocab_pad = 248320, .n_expert = 256,          \
     .n_expert_used = 8, .n_ff_exp = 512, .n_ff_shexp = 512, .untied = true}
    {.name = "qwen3moe-tiny", .n_layer = 2, .n_embd = 64, .n_ff = 128, .n_head = 4, .n_head_kv = 2, .head_dim = 16,
     .n_expert = 8, .n_expert_used = 2, .n_ff_exp = 32, .untied = true},
    {.name = "qwen35moe-tiny", .n_layer = 4, .n_embd = 64, .n_ff = 128, .n_head = 4, .n_head_kv = 2, .head_dim = 32,
     .hybrid = true, .n_rot = 8, .ssm_k_heads = 2, .ssm_v_heads = 4, .ssm_state = 16, .conv_kernel = 4, .interval = 4,
     .n_mtp = 1, .sections = {2, 1, 1, 0}, .n_expert = 8, .n_expert_used = 2, .n_ff_exp = 32, .n_ff_shexp = 32,
     .untied = true},
    QWEN3MOE("qwen3-30b-a3b", 48),
    QWEN3MOE("qwen3-30b-a3b-L4", 4),
    QWEN35MOE("qwen35-35b-a3b", 40),
    QWEN35MOE("qwen35-35b-a3b-L4", 4),
#undef QWEN3
#undef QWEN35
#undef QWEN3MOE
#undef QWEN35MOE
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

/* The random stream of row r of a tensor: the file is the same whatever
 * the thread count or the order rows are made in. */
static uint64_t row_stream(uint64_t seed, uint64_t tensor, uint64_t r) {
    return seed ^ (tensor * 0xD1B54A32D192ED03ull) ^ (r * 0x8CB92BA72F3D8DD7ull);
}

/* Fills row[n] with N(0, sigma) from the row's own stream. */
static void normal_row(float *row, int64_t n, float sigma, uint64_t seed, uint64_t tensor,
                       int64_t r) {
    uint64_t s = row_stream(seed, tensor, (uint64_t)r);
    for (int64_t i = 0; i < n; i += 2) {
        double u1 = uniform01(&s), u2 = uniform01(&s), rad = sqrt(-2.0 * log(u1));
        row[i] = (float)(sigma * rad * cos(TWO_PI * u2));
        if (i + 1 < n) row[i + 1] = (float)(sigma * rad * sin(TWO_PI * u2));
    }
}

/* ---- tensors: buffers kept alive until the writer has written them ---- */
/* An expert tensor drawn from a pool (--expert-pool P): row r of the tensor is
 * pool row mix(seed, tensor, r) mod P, copied while the file is written. */
typedef struct row_pool {
    const uint8_t *rows; /* [P][row_bytes] quantized N(0, 0.02) rows */
    uint64_t n_rows, row_bytes, seed, tensor;
} row_pool;

typedef struct gen {
    gguf_writer *w;
    void **bufs;
    int n_bufs, cap_bufs;
    uint32_t type;
    uint32_t expert_type;   /* type of the ffn_*_exps tensors */
    int64_t expert_pool;    /* 0: every expert row drawn; else rows from a pool this big */
    uint64_t seed;
    uint64_t n_tensors;
    uint64_t total_bytes;
    const char *const *added; /* --add-token texts, appended to the vocabulary */
    int n_added;
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

/* n_rows random rows of n_in into dst (row_bytes each, type g->type), on all threads. */
static bool random_rows(const gen *g, uint8_t *dst, uint64_t row_bytes, int64_t n_in, int64_t n_rows,
                        uint64_t tensor) {
    bool oom = false;
#pragma omp parallel
    {
        float *row = sd_malloc_array((size_t)n_in, sizeof *row);
        if (!row) {
#pragma omp atomic write
            oom = true;
        }
#pragma omp for schedule(static)
        for (int64_t r = 0; r < n_rows; r++) {
            if (!row) continue;
            normal_row(row, n_in, 0.02f, g->seed, tensor, r);
            uint8_t *out = dst + (size_t)r * row_bytes;
            if (g->type == GGML_TYPE_F32) memcpy(out, row, (size_t)row_bytes);
            else sd_quantize_row_any(g->type, row, out, n_in, NULL); /* IQ types: unit weights */
        }
        free(row);
    }
    return !oom;
}

static bool fill_from_pool(void *ctx, uint64_t offset, void *buf, size_t len) {
    const row_pool *p = ctx;
    uint8_t *out = buf;
    while (len) {
        uint64_t r = offset / p->row_bytes, in_row = offset % p->row_bytes;
        uint64_t s = row_stream(p->seed, p->tensor, r);
        const uint8_t *src = p->rows + (splitmix64(&s) % p->n_rows) * p->row_bytes + in_row;
        size_t n = p->row_bytes - in_row < len ? (size_t)(p->row_bytes - in_row) : len;
        memcpy(out, src, n);
        out += n, offset += n, len -= n;
    }
    return true;
}

/* An expert tensor {n_in, n_out, n_exp} whose rows come from a pool of
 * g->expert_pool random rows (ARCHITECTURE.md §9.3: timing does not depend on the
 * values; the file is written at disk speed and never held in memory). */
static sd_status add_pooled(gen *g, const char *name, int64_t n_in, int64_t n_out, int64_t n_exp, uint64_t row_bytes,
                            uint64_t bytes, uint64_t tensor, sd_err *err) {
    row_pool *p = keep(g, sizeof *p);
    uint64_t pool_bytes;
    if (!p || !sd_mul_u64(row_bytes, (uint64_t)g->expert_pool, &pool_bytes))
        return sd_err_set(err, SD_ERR_NOMEM, "%s: out of memory", name);
    uint8_t *rows = keep(g, (size_t)pool_bytes);
    if (!rows || !random_rows(g, rows, row_bytes, n_in, g->expert_pool, tensor))
        return sd_err_set(err, SD_ERR_NOMEM, "%s: cannot allocate the row pool", name);
    *p = (row_pool){rows, (uint64_t)g->expert_pool, row_bytes, g->seed, tensor};
    int64_t ne[3] = {n_in, n_out, n_exp};
    g->total_bytes += bytes;
    sd_status st = gguf_writer_add_tensor_fill(g->w, name, g->type, 3, ne, bytes, fill_from_pool, p);
    return st ? sd_err_set(err, st, "%s: cannot add tensor", name) : SD_OK;
}

/* n_exp matrices of n_out rows by n_in columns, random: GGUF ne = {n_in, n_out}
 * (n_exp = 1), or the 3-D expert tensor {n_in, n_out, n_exp}, its rows expert by expert. */
static sd_status add_experts(gen *g, const char *name, int64_t n_in, int64_t n_out, int64_t n_exp, sd_err *err) {
    const int64_t n_out_per = n_out;
    n_out *= n_exp;
    uint64_t row_bytes, bytes;
    if (!ggml_row_bytes(g->type, (uint64_t)n_in, &row_bytes) || !sd_mul_u64(row_bytes, (uint64_t)n_out, &bytes))
        return sd_err_set(err, SD_ERR_ARG, "%s: %lld columns do not fit type %s", name, (long long)n_in,
                          ggml_type_get(g->type)->name);
    uint64_t tensor = ++g->n_tensors;
    if (n_exp > 1 && g->expert_pool > 0)
        return add_pooled(g, name, n_in, n_out_per, n_exp, row_bytes, bytes, tensor, err);
    uint8_t *dst = keep(g, bytes);
    if (!dst) return sd_err_set(err, SD_ERR_NOMEM, "%s: cannot allocate %llu bytes", name, (unsigned long long)bytes);
    if (!random_rows(g, dst, row_bytes, n_in, n_out, tensor))
        return sd_err_set(err, SD_ERR_NOMEM, "%s: cannot allocate a row", name);
    int64_t ne[3] = {n_in, n_out_per, n_exp};
    g->total_bytes += bytes;
    sd_status st = gguf_writer_add_tensor(g->w, name, g->type, n_exp > 1 ? 3 : 2, ne, dst, bytes);
    return st ? sd_err_set(err, st, "%s: cannot add tensor", name) : SD_OK;
}

static sd_status add_matrix(gen *g, const char *name, int64_t n_in, int64_t n_out, sd_err *err) {
    return add_experts(g, name, n_in, n_out, 1, err);
}

/* An f32 vector v[i] = a + b * i / max(n - 1, 1) (norms: a = 1, b = 0). */
static sd_status add_ramp(gen *g, const char *name, int64_t n, float a, float b, sd_err *err) {
    float *v = keep(g, (size_t)n * sizeof *v);
    if (!v) return sd_err_set(err, SD_ERR_NOMEM, "%s: out of memory", name);
    for (int64_t i = 0; i < n; i++) v[i] = a + b * (float)i / (float)(n > 1 ? n - 1 : 1);
    int64_t ne[1] = {n};
    g->total_bytes += (uint64_t)n * sizeof *v;
    sd_status st = gguf_writer_add_tensor(g->w, name, GGML_TYPE_F32, 1, ne, v, (uint64_t)n * sizeof *v);
    return st ? sd_err_set(err, st, "%s: cannot add tensor", name) : SD_OK;
}

/* A norm weight vector of n ones, f32 (llama.cpp keeps norms in f32). */
static sd_status add_norm(gen *g, const char *name, int64_t n, sd_err *err) {
    return add_ramp(g, name, n, 1.0f, 0.0f, err);
}

/* An f32 matrix ne = {n_in, n_out} ~ N(0, sigma), kept f32 whatever the type
 * (ssm_conv1d: llama.cpp's quantizer leaves it alone, its rows are K = 4 wide). */
static sd_status add_f32_matrix(gen *g, const char *name, int64_t n_in, int64_t n_out, float sigma,
                                sd_err *err) {
    size_t n = (size_t)(n_in * n_out);
    float *v = keep(g, n * sizeof *v);
    if (!v) return sd_err_set(err, SD_ERR_NOMEM, "%s: out of memory", name);
    uint64_t tensor = ++g->n_tensors;
    for (int64_t r = 0; r < n_out; r++) normal_row(v + r * n_in, n_in, sigma, g->seed, tensor, r);
    int64_t ne[2] = {n_in, n_out};
    g->total_bytes += n * sizeof *v;
    sd_status st = gguf_writer_add_tensor(g->w, name, GGML_TYPE_F32, 2, ne, v, n * sizeof *v);
    return st ? sd_err_set(err, st, "%s: cannot add tensor", name) : SD_OK;
}

/* The FFN of block il (after its pre-FFN norm): dense, or the routed experts
 * (router f32, as llama.cpp's quantizer keeps it) plus the shared expert. */
static sd_status add_ffn(gen *g, const shape *s, int il, sd_err *err) {
    char name[96];
    sd_status st;
    const uint32_t type = g->type;
#define NAME(suffix) (snprintf(name, sizeof name, "blk.%d." suffix, il), name)
    if (!s->n_expert) {
        if ((st = add_matrix(g, NAME("ffn_gate.weight"), s->n_embd, s->n_ff, err))) return st;
        if ((st = add_matrix(g, NAME("ffn_up.weight"), s->n_embd, s->n_ff, err))) return st;
        return add_matrix(g, NAME("ffn_down.weight"), s->n_ff, s->n_embd, err);
    }
    g->type = GGML_TYPE_F32;
    st = add_matrix(g, NAME("ffn_gate_inp.weight"), s->n_embd, s->n_expert, err);
    g->type = g->expert_type;
    if (!st) st = add_experts(g, NAME("ffn_gate_exps.weight"), s->n_embd, s->n_ff_exp, s->n_expert, err);
    if (!st) st = add_experts(g, NAME("ffn_up_exps.weight"), s->n_embd, s->n_ff_exp, s->n_expert, err);
    if (!st) st = add_experts(g, NAME("ffn_down_exps.weight"), s->n_ff_exp, s->n_embd, s->n_expert, err);
    g->type = type;
    if (st || !s->n_ff_shexp) return st;
    if ((st = add_ramp(g, NAME("ffn_gate_inp_shexp.weight"), s->n_embd, -0.02f, 0.04f, err))) return st;
    if ((st = add_matrix(g, NAME("ffn_gate_shexp.weight"), s->n_embd, s->n_ff_shexp, err))) return st;
    if ((st = add_matrix(g, NAME("ffn_up_shexp.weight"), s->n_embd, s->n_ff_shexp, err))) return st;
    return add_matrix(g, NAME("ffn_down_shexp.weight"), s->n_ff_shexp, s->n_embd, err);
#undef NAME
}

/* qwen35 layer kinds (qwen35.cpp load_arch_hparams): GDN unless (il+1) % interval == 0;
 * the MTP layers after the trunk are gated attention. */
static bool is_recurrent(const shape *s, int il) {
    return il < s->n_layer && (il + 1) % s->interval != 0;
}

/* Gated attention (qwen35.cpp load_block_trunk): attn_q holds [q | gate] per head. */
static sd_status add_gated_attention(gen *g, const shape *s, int il, sd_err *err) {
    char name[96];
    sd_status st;
    int64_t q_dim = (int64_t)s->n_head * s->head_dim, kv_dim = (int64_t)s->n_head_kv * s->head_dim;
#define NAME(suffix) (snprintf(name, sizeof name, "blk.%d." suffix, il), name)
    if ((st = add_matrix(g, NAME("attn_q.weight"), s->n_embd, 2 * q_dim, err))) return st;
    if ((st = add_matrix(g, NAME("attn_k.weight"), s->n_embd, kv_dim, err))) return st;
    if ((st = add_matrix(g, NAME("attn_v.weight"), s->n_embd, kv_dim, err))) return st;
    if ((st = add_matrix(g, NAME("attn_output.weight"), q_dim, s->n_embd, err))) return st;
    if ((st = add_norm(g, NAME("attn_q_norm.weight"), s->head_dim, err))) return st;
    if ((st = add_norm(g, NAME("attn_k_norm.weight"), s->head_dim, err))) return st;
#undef NAME
    return SD_OK;
}

/* Gated DeltaNet (qwen35.cpp load_block_trunk); conv_dim = 2 H_k S + H_v S. */
static sd_status add_gdn(gen *g, const shape *s, int il, sd_err *err) {
    char name[96];
    sd_status st;
    int64_t S = s->ssm_state, hv = s->ssm_v_heads, value_dim = hv * S;
    int64_t conv_dim = 2 * (int64_t)s->ssm_k_heads * S + value_dim;
#define NAME(suffix) (snprintf(name, sizeof name, "blk.%d." suffix, il), name)
    if ((st = add_matrix(g, NAME("attn_qkv.weight"), s->n_embd, conv_dim, err))) return st;
    if ((st = add_matrix(g, NAME("attn_gate.weight"), s->n_embd, value_dim, err))) return st;
    if ((st = add_f32_matrix(g, NAME("ssm_conv1d.weight"), s->conv_kernel, conv_dim, 0.1f, err))) return st;
    if ((st = add_ramp(g, NAME("ssm_dt.bias"), hv, 1.0f, 0.0f, err))) return st;
    if ((st = add_ramp(g, NAME("ssm_a"), hv, -1.0f, -15.0f, err))) return st;
    if ((st = add_matrix(g, NAME("ssm_beta.weight"), s->n_embd, hv, err))) return st;
    if ((st = add_matrix(g, NAME("ssm_alpha.weight"), s->n_embd, hv, err))) return st;
    if ((st = add_norm(g, NAME("ssm_norm.weight"), S, err))) return st;
    if ((st = add_matrix(g, NAME("ssm_out.weight"), value_dim, s->n_embd, err))) return st;
#undef NAME
    return SD_OK;
}

/* One qwen35 block: trunk layer (GDN or gated attention) or MTP layer. */
static sd_status add_layer_qwen35(gen *g, const shape *s, int il, sd_err *err) {
    char name[96];
    sd_status st;
#define NAME(suffix) (snprintf(name, sizeof name, "blk.%d." suffix, il), name)
    if ((st = add_norm(g, NAME("attn_norm.weight"), s->n_embd, err))) return st;
    st = is_recurrent(s, il) ? add_gdn(g, s, il, err) : add_gated_attention(g, s, il, err);
    if (st) return st;
    if ((st = add_norm(g, NAME("post_attention_norm.weight"), s->n_embd, err))) return st;
    if ((st = add_ffn(g, s, il, err))) return st;
    if (il >= s->n_layer) { /* MTP (nextn) block, qwen35.cpp load_block_mtp; shares the embedding */
        if ((st = add_matrix(g, NAME("nextn.eh_proj.weight"), 2 * (int64_t)s->n_embd, s->n_embd, err))) return st;
        if ((st = add_norm(g, NAME("nextn.enorm.weight"), s->n_embd, err))) return st;
        if ((st = add_norm(g, NAME("nextn.hnorm.weight"), s->n_embd, err))) return st;
        if ((st = add_norm(g, NAME("nextn.shared_head_norm.weight"), s->n_embd, err))) return st;
    }
#undef NAME
    return SD_OK;
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
    if ((st = add_ffn(g, s, il, err))) return st;
#undef NAME
    return SD_OK;
}

/* qwen35 hparams (qwen35.cpp load_arch_hparams; conversion/qwen.py writes the
 * same keys, recurrent_layers included, MTP entries false). */
/* The expert keys (llama.cpp gguf-py constants.py Keys.LLM.EXPERT_*), none for a dense shape. */
static sd_status add_moe_hparams(gguf_writer *w, const char *arch, const shape *s) {
    char k[96];
    sd_status st = SD_OK;
    if (!s->n_expert) return SD_OK;
#define KEY(suffix) (snprintf(k, sizeof k, "%s." suffix, arch), k)
    st = st ? st : gguf_writer_set_u32(w, KEY("expert_count"), (uint32_t)s->n_expert);
    st = st ? st : gguf_writer_set_u32(w, KEY("expert_used_count"), (uint32_t)s->n_expert_used);
    st = st ? st : gguf_writer_set_u32(w, KEY("expert_feed_forward_length"), (uint32_t)s->n_ff_exp);
    if (s->n_ff_shexp) st = st ? st : gguf_writer_set_u32(w, KEY("expert_shared_feed_forward_length"), (uint32_t)s->n_ff_shexp);
#undef KEY
    return st;
}

static sd_status add_qwen35_hparams(gguf_writer *w, const shape *s) {
    const char *arch = s->n_expert ? "qwen35moe" : "qwen35";
    char k[96];
#define KEY(suffix) (snprintf(k, sizeof k, "%s." suffix, arch), k)
    int n_all = s->n_layer + s->n_mtp;
    bool rec[64];
    if (n_all > 64) return SD_ERR_ARG;
    for (int i = 0; i < n_all; i++) rec[i] = is_recurrent(s, i);
    sd_status st = SD_OK;
    /* block_count (trunk + MTP), sizes and eps: the keys qwen3 has too */
    const tool_qwen3_shape common = {n_all, s->n_embd, s->n_ff, s->n_head, s->n_head_kv, s->head_dim, 1e-6f, arch};
    st = st ? st : tool_write_qwen3_shape(w, &common);
    st = st ? st : gguf_writer_set_u32(w, KEY("nextn_predict_layers"), (uint32_t)s->n_mtp);
    st = st ? st : gguf_writer_set_u32(w, KEY("context_length"), 262144);
    st = st ? st : gguf_writer_set_f32(w, KEY("rope.freq_base"), 10000000.0f);
    st = st ? st : gguf_writer_set_u32(w, KEY("rope.dimension_count"), (uint32_t)s->n_rot);
    st = st ? st : gguf_writer_set_arr_data(w, KEY("rope.dimension_sections"), GGUF_TYPE_INT32, s->sections, 4);
    st = st ? st : gguf_writer_set_u32(w, KEY("ssm.conv_kernel"), (uint32_t)s->conv_kernel);
    st = st ? st : gguf_writer_set_u32(w, KEY("ssm.state_size"), (uint32_t)s->ssm_state);
    st = st ? st : gguf_writer_set_u32(w, KEY("ssm.inner_size"), (uint32_t)(s->ssm_state * s->ssm_v_heads));
    st = st ? st : gguf_writer_set_u32(w, KEY("ssm.time_step_rank"), (uint32_t)s->ssm_v_heads);
    st = st ? st : gguf_writer_set_u32(w, KEY("ssm.group_count"), (uint32_t)s->ssm_k_heads);
    st = st ? st : gguf_writer_set_arr_data(w, KEY("attention.recurrent_layers"), GGUF_TYPE_BOOL, rec,
                                            (uint64_t)n_all);
    st = st ? st : gguf_writer_set_u32(w, KEY("full_attention_interval"), (uint32_t)s->interval);
    st = st ? st : add_moe_hparams(w, arch, s);
#undef KEY
    return st;
}

/* tokenizer.ggml.tokens / token_type: the vocab's, then the added tokens
 * (type 4, USER_DEFINED: as Qwen3's <think> and </think> are in its GGUFs),
 * then "[PAD<i>]" of type 5 (UNUSED) up to n_rows entries, as llama.cpp's
 * converter pads to a checkpoint's vocab_size. */
static sd_status add_padded_vocab(gguf_writer *w, const gguf_ctx *vocab, const char *const *added, int n_added,
                                  int64_t n_rows, sd_err *err) {
    uint64_t n = 0, nt = 0;
    gguf_type et;
    const void *types = NULL;
    if (!gguf_get_arr_str_n(vocab, "tokenizer.ggml.tokens", &n) ||
        !gguf_get_arr_data(vocab, "tokenizer.ggml.token_type", &et, &nt, &types) || et != GGUF_TYPE_INT32 ||
        nt != n || (int64_t)n + n_added > n_rows)
        return sd_err_set(err, SD_ERR_FORMAT, "vocab: cannot pad tokens/token_type to %lld", (long long)n_rows);
    const char **strs = sd_malloc_array((size_t)n_rows, sizeof *strs);
    uint64_t *lens = sd_malloc_array((size_t)n_rows, sizeof *lens);
    int32_t *tt = sd_malloc_array((size_t)n_rows, sizeof *tt);
    char *pads = sd_malloc_array((size_t)(n_rows - (int64_t)n) + 1, 16);
    sd_status st = (strs && lens && tt && pads) ? SD_OK : sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    for (int64_t i = 0; !st && i < n_rows; i++) {
        if (i < (int64_t)n) {
            gguf_get_arr_str(vocab, "tokenizer.ggml.tokens", (uint64_t)i, &strs[i], &lens[i]);
            memcpy(&tt[i], (const char *)types + 4 * i, 4);
        } else if (i < (int64_t)n + n_added) {
            strs[i] = added[i - (int64_t)n], lens[i] = strlen(strs[i]), tt[i] = 4;
        } else {
            char *p = pads + 16 * (i - (int64_t)n);
            lens[i] = (uint64_t)snprintf(p, 16, "[PAD%lld]", (long long)i);
            strs[i] = p, tt[i] = 5;
        }
    }
    if (!st && (gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", strs, lens, (uint64_t)n_rows) ||
                gguf_writer_set_arr_data(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, tt, (uint64_t)n_rows)))
        st = sd_err_set(err, SD_ERR_NOMEM, "cannot set the padded vocabulary");
    free(strs), free(lens), free(tt), free(pads);
    return st;
}

/* The vocab's tokenizer.* keys, tokens and token_type rewritten by
 * add_padded_vocab when replace (padding, --add-token), and add_bos_token
 * false unless the vocab says: Qwen3's own GGUFs say so explicitly, no BOS
 * is prepended. */
static sd_status add_tokenizer(gguf_writer *w, const gguf_ctx *vocab, const gen *g, int64_t n_vocab, bool replace,
                               sd_err *err) {
    sd_status st;
    if (replace && (st = add_padded_vocab(w, vocab, g->added, g->n_added, n_vocab, err))) return st;
    for (int64_t i = 0; i < gguf_n_kv(vocab); i++) {
        const char *key = gguf_kv_key(vocab, i);
        if (strncmp(key, "tokenizer.", 10) != 0) continue;
        if (replace && (!strcmp(key, "tokenizer.ggml.tokens") || !strcmp(key, "tokenizer.ggml.token_type")))
            continue;
        if ((st = gguf_writer_copy_kv(w, vocab, i))) return sd_err_set(err, st, "cannot copy %s", key);
    }
    if (gguf_find_key(vocab, "tokenizer.ggml.add_bos_token") < 0 &&
        (st = gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", false)))
        return sd_err_set(err, st, "cannot set tokenizer.ggml.add_bos_token");
    return SD_OK;
}

/* Metadata: qwen3 / qwen35 hparams + every tokenizer.* key of the vocab file
 * (tokens and token_type padded to n_vocab rows if the shape asks for it). */
static sd_status add_metadata(gen *g, const shape *s, const gguf_ctx *vocab, int64_t n_vocab, sd_err *err) {
    gguf_writer *w = g->w;
    char gname[96];
    snprintf(gname, sizeof gname, "random %s %s", s->name, ggml_type_get(g->type)->name);
    if (s->n_expert && g->expert_type != g->type) /* says the mix, as a Q3_K_M file's name does */
        snprintf(gname + strlen(gname), sizeof gname - strlen(gname), ", experts %s",
                 ggml_type_get(g->expert_type)->name);
    sd_status st = SD_OK;
    if (s->hybrid) {
        const char *arch = s->n_expert ? "qwen35moe" : "qwen35";
        st = st ? st : gguf_writer_set_str(w, "general.architecture", arch, strlen(arch));
        st = st ? st : gguf_writer_set_str(w, "general.name", gname, strlen(gname));
        st = st ? st : gguf_writer_set_u32(w, "general.file_type", tool_file_type(g->type));
        st = st ? st : gguf_writer_set_u32(w, "general.quantization_version", 2);
        st = st ? st : add_qwen35_hparams(w, s);
        if (st) return sd_err_set(err, st, "cannot set metadata");
        return add_tokenizer(w, vocab, g, n_vocab, s->n_vocab_pad > 0 || g->n_added, err);
    }
    const char *arch = s->n_expert ? "qwen3moe" : "qwen3";
    char k[96];
    st = st ? st : gguf_writer_set_str(w, "general.architecture", arch, strlen(arch));
    st = st ? st : gguf_writer_set_str(w, "general.name", gname, strlen(gname));
    st = st ? st : gguf_writer_set_u32(w, "general.file_type", tool_file_type(g->type));
    st = st ? st : gguf_writer_set_u32(w, "general.quantization_version", 2);
    snprintf(k, sizeof k, "%s.context_length", arch);
    st = st ? st : gguf_writer_set_u32(w, k, 40960);
    snprintf(k, sizeof k, "%s.rope.freq_base", arch);
    st = st ? st : gguf_writer_set_f32(w, k, 1000000.0f);
    const tool_qwen3_shape q3 = {s->n_layer, s->n_embd, s->n_ff, s->n_head, s->n_head_kv, s->head_dim, 1e-6f, arch};
    st = st ? st : tool_write_qwen3_shape(w, &q3);
    st = st ? st : add_moe_hparams(w, arch, s);
    if (st) return sd_err_set(err, st, "cannot set metadata");
    return add_tokenizer(w, vocab, g, n_vocab, g->n_added > 0, err);
}

static sd_status generate(const shape *s, uint32_t type, uint32_t expert_type, int64_t expert_pool,
                          const char *vocab_path, const char *const *added, int n_added, const char *out,
                          uint64_t seed, sd_err *err) {
    gguf_ctx *vocab = NULL;
    sd_status st = gguf_open(vocab_path, &vocab, err);
    if (st) return st;
    uint64_t n_vocab = 0;
    if (!gguf_get_arr_str_n(vocab, "tokenizer.ggml.tokens", &n_vocab) || n_vocab == 0 || n_vocab > INT32_MAX) {
        gguf_close(vocab);
        return sd_err_set(err, SD_ERR_FORMAT, "%s: no tokenizer.ggml.tokens", vocab_path);
    }
    n_vocab += (uint64_t)n_added;
    if (s->hybrid && s->n_vocab_pad > 0) {
        if ((int64_t)n_vocab > s->n_vocab_pad) {
            gguf_close(vocab);
            return sd_err_set(err, SD_ERR_FORMAT, "%s: %llu tokens, more than the shape's %lld rows", vocab_path,
                              (unsigned long long)n_vocab, (long long)s->n_vocab_pad);
        }
        n_vocab = (uint64_t)s->n_vocab_pad;
    }
    gen g = {.w = gguf_writer_init(), .type = type, .expert_type = expert_type, .expert_pool = expert_pool,
             .seed = seed, .added = added, .n_added = n_added};
    if (!g.w) st = sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    if (!st) st = add_metadata(&g, s, vocab, (int64_t)n_vocab, err);
    /* Tied output (Qwen3-0.6B/1.7B and Qwen3.5-0.8B/2B tie_word_embeddings): no output.weight. */
    if (!st) st = add_matrix(&g, "token_embd.weight", s->n_embd, (int64_t)n_vocab, err);
    if (!st && s->untied) st = add_matrix(&g, "output.weight", s->n_embd, (int64_t)n_vocab, err);
    int n_all = s->n_layer + (s->hybrid ? s->n_mtp : 0);
    for (int il = 0; !st && il < n_all; il++) {
        st = s->hybrid ? add_layer_qwen35(&g, s, il, err) : add_layer(&g, s, il, err);
        fprintf(stderr, "\rsd-genmodel: layer %d/%d   ", il + 1, n_all);
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
            "usage: sd-genmodel --shape NAME [--type TYPE] -o OUT.gguf [--vocab VOCAB.gguf] [--seed N]\n"
            "                   [--expert-type TYPE] [--expert-pool P] [--add-token TEXT]...\n"
            "  random-weight qwen3 / qwen35 / MoE model with a real tokenizer, for speed measurements\n"
            "  --shape   qwen3-0.6b | qwen3-1.7b | draft | tiny            (qwen3)\n"
            "            qwen35-0.8b | qwen35-2b | qwen35-draft | qwen35-tiny (qwen35)\n"
            "            qwen3-30b-a3b[-L4] | qwen3moe-tiny (qwen3moe),\n"
            "            qwen35-35b-a3b[-L4] | qwen35moe-tiny (qwen35moe): MoE,\n"
            "            -L4 = the same layers, 4 of them\n"
            "  --type    q8_0 (default) | q4_k | q3_k | ... | f16 | f32 (norm weights are always f32);\n"
            "            K types need rows of 256, so not the 64-wide -tiny shapes\n"
            "  --vocab   vocab-only GGUF whose tokenizer.* keys are copied (default\n"
            "            tests/data/tokenizer/ggml-vocab-qwen2.gguf, ggml-vocab-qwen35.gguf for qwen35)\n"
            "  --seed    random seed (default 1)\n"
            "  --add-token TEXT  append TEXT to the vocabulary as a user-defined token, one token\n"
            "            wherever it occurs (as Qwen3's <think> and </think>); up to 8\n"
            "  --expert-type TYPE  type of the ffn_*_exps tensors (default: --type), e.g. q3_k\n"
            "            beside --type q4_k to fit a full MoE shape in memory, or iq2_xxs /\n"
            "            iq3_xxs / iq3_s as the low-bit files have them (unit importance weights)\n"
            "  --expert-pool P     draw each expert row from a pool of P random rows (16..1048576):\n"
            "            the file is written at disk speed (minutes, not half an hour, for a\n"
            "            full MoE shape) and expert tensors are never held in memory\n"
            "   or: sd-genmodel --grow SMALL.gguf --shape NAME -o OUT.gguf [--type TYPE]\n"
            "  a trained small qwen3 model grown to a realistic shape (sd-genmodel --grow x --help)\n");
}

/* The ggml type named, if sd-genmodel can write it (f32, a type with a reference
 * quantizer, or one of the importance-matrix types, written with unit weights:
 * random rows have no activations to weigh them by), else -1. */
static int writable_type(const char *name) {
    int t = ggml_type_from_name(name);
    return t >= 0 && (t == GGML_TYPE_F32 || sd_quantize_can_write((uint32_t)t)) ? t : -1;
}

int main(int argc, char **argv) {
    const char *shape_name = NULL, *type_name = "q8_0", *expert_type_name = NULL, *out = NULL;
    int64_t expert_pool = 0;
    const char *vocab = NULL;
    uint64_t seed = 1;
    const char *added[8];
    int n_added = 0;
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
        else if (!strcmp(a, "--expert-type")) expert_type_name = argv[++i];
        else if (!strcmp(a, "--add-token")) {
            if (n_added == 8 || !*argv[i + 1]) return fprintf(stderr, "sd-genmodel: --add-token: 1 to 8 non-empty texts\n"), 2;
            added[n_added++] = argv[++i];
        }
        else if (!strcmp(a, "--expert-pool")) {
            char *end;
            long long v = strtoll(argv[++i], &end, 10);
            if (*end || v < 16 || v > (1 << 20))
                return fprintf(stderr, "sd-genmodel: --expert-pool must be 16..1048576\n"), 2;
            expert_pool = v;
        }
        else return fprintf(stderr, "sd-genmodel: unknown option %s\n", a), 2;
    }
    if (!shape_name || !out) return usage(stderr), 2;
    const shape *s = NULL;
    for (size_t i = 0; i < N_SHAPES; i++)
        if (!strcmp(SHAPES[i].name, shape_name)) s = &SHAPES[i];
    if (!s) return fprintf(stderr, "sd-genmodel: unknown shape '%s'\n", shape_name), 2;
    if (!vocab)
        vocab = s->hybrid ? "tests/data/tokenizer/ggml-vocab-qwen35.gguf" : "tests/data/tokenizer/ggml-vocab-qwen2.gguf";
    int t = writable_type(type_name);
    if (t < 0) return fprintf(stderr, "sd-genmodel: cannot write type '%s'\n", type_name), 2;
    int te = expert_type_name ? writable_type(expert_type_name) : t;
    if (te < 0) return fprintf(stderr, "sd-genmodel: cannot write expert type '%s'\n", expert_type_name), 2;
    if ((expert_type_name || expert_pool) && !s->n_expert)
        return fprintf(stderr, "sd-genmodel: --expert-type/--expert-pool need a MoE shape\n"), 2;
    sd_err err = {0};
    if (generate(s, (uint32_t)t, (uint32_t)te, expert_pool, vocab, added, n_added, out, seed, &err)) {
        fprintf(stderr, "sd-genmodel: %s\n", err.msg);
        return 1;
    }
    return 0;
}
