/* Dense decoder-only transformers read from GGUF: llama (Llama 2/3), qwen2,
 * qwen3. Key and tensor names are llama.cpp's (src/llama-arch.cpp):
 * `{arch}.embedding_length`, `blk.N.attn_q.weight`, ... One file per
 * architecture (arch_llama.c, arch_qwen2.c, arch_qwen3.c) fills the weights;
 * the forward is shared in forward.c with the per-arch switches in hparams. */
#ifndef SD_MODEL_MODEL_H
#define SD_MODEL_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "format/gguf.h"
#include "numerics/matmul.h"
#include "tokenizer/tokenizer.h"

typedef enum sd_arch { SD_ARCH_LLAMA = 1, SD_ARCH_QWEN2, SD_ARCH_QWEN3 } sd_arch;

typedef struct sd_hparams {
    sd_arch arch;
    char arch_name[32];   /* general.architecture */
    int32_t n_vocab;
    int32_t n_embd;       /* {arch}.embedding_length */
    int32_t n_layer;      /* {arch}.block_count */
    int32_t n_head;       /* {arch}.attention.head_count */
    int32_t n_head_kv;    /* {arch}.attention.head_count_kv (default n_head) */
    int32_t head_dim;     /* {arch}.attention.key_length (default n_embd / n_head) */
    int32_t n_ff;         /* {arch}.feed_forward_length */
    int32_t n_ctx_train;  /* {arch}.context_length */
    int32_t n_rot;        /* {arch}.rope.dimension_count (default head_dim) */
    float rope_base;      /* {arch}.rope.freq_base (default 10000) */
    float rope_freq_scale;/* 1 / {arch}.rope.scaling.factor for linear scaling, else 1 */
    float rms_eps;        /* {arch}.attention.layer_norm_rms_epsilon */
    bool rope_neox;       /* qwen2/qwen3: true; llama: false */
    bool qkv_bias;        /* qwen2 */
    bool qk_norm;         /* qwen3 */
    bool tied_output;     /* no output.weight: token_embd is reused */
} sd_hparams;

typedef struct sd_layer {
    const float *attn_norm;        /* [n_embd] (f32 copy, owned) */
    sd_matrix wq, wk, wv, wo;
    const float *bq, *bk, *bv;     /* qwen2 biases or NULL */
    const float *q_norm, *k_norm;  /* qwen3 [head_dim] or NULL */
    const float *ffn_norm;
    sd_matrix w_gate, w_up, w_down;
} sd_layer;

typedef struct sd_model {
    sd_hparams hp;
    gguf_ctx *gguf;          /* owned; weights point into its mapping */
    sd_tokenizer *tok;       /* owned */
    sd_matrix tok_embd;      /* [n_vocab][n_embd] */
    const float *output_norm;
    sd_matrix output;        /* lm head: output.weight, or token_embd if tied */
    sd_layer *layers;        /* [n_layer] */
    float **owned_f32;       /* f32 copies of norm/bias vectors, freed with the model */
    int n_owned_f32;
} sd_model;

/* Loads a model file: reads hparams, builds the tokenizer, binds every tensor
 * (checking its type is supported and its shape is what the hparams imply).
 * Errors: SD_ERR_IO, SD_ERR_FORMAT, SD_ERR_UNSUPPORTED ("unknown architecture
 * 'x'", "missing tensor blk.3.attn_q.weight", "tensor type q3_k not
 * supported"), SD_ERR_NOMEM. Messages start with the file path. */
sd_status sd_model_load(const char *path, sd_model **out, sd_err *err);
void sd_model_free(sd_model *m);

/* Bytes of weights read by one forward step (all matrices once), for the
 * roofline figure. */
uint64_t sd_model_weight_bytes(const sd_model *m);
uint64_t sd_model_n_params(const sd_model *m);

/* ---- inference state: KV cache + scratch ---- */
typedef struct sd_context sd_context;

/* KV cache of n_ctx positions (f32), scratch sized for batches up to n_batch.
 * n_ctx <= 0 means min(n_ctx_train, 4096). The model must outlive the context. */
sd_status sd_context_init(const sd_model *m, int32_t n_ctx, int32_t n_batch, int n_threads,
                          sd_context **out, sd_err *err);
void sd_context_free(sd_context *c);

int32_t sd_context_n_ctx(const sd_context *c);
/* Number of positions in the KV cache (the committed + speculative length). */
int32_t sd_context_len(const sd_context *c);
/* Rolls the KV cache back to n positions (n <= len): a counter, no copying. */
void sd_context_truncate(sd_context *c, int32_t n);

/* Runs tokens[S] at positions len..len+S-1, appends them to the KV cache, and
 * writes logits[S][n_vocab] (every position). Batches larger than n_batch are
 * split internally. Errors: SD_ERR_CONTEXT if len + S > n_ctx (state
 * unchanged), SD_ERR_ARG for a token id out of range (state unchanged). */
sd_status sd_forward(sd_context *c, const int32_t *tokens, int32_t S, float *logits, sd_err *err);

#endif
