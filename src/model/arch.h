/* Internal to src/model: what an architecture file provides, and the binding
 * helpers it uses. Adding an architecture is a new arch_NAME.c with one
 * sd_arch_def plus a line in the table in arch.c (as llama.cpp's
 * src/models/NAME.cpp plus its entry in llama-arch.cpp).
 *
 * Tensor shapes are written as in llama.cpp's create_tensor calls: ne[0]
 * (elements per row) first, so a weight {n_in, n_out} maps to an sd_matrix
 * with n_in columns and n_out rows. */
#ifndef SD_MODEL_ARCH_H
#define SD_MODEL_ARCH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "format/gguf.h"
#include "model/model.h"

/* Loading state shared by the helpers: the file being bound and where errors go. */
typedef struct sd_loader {
    const char *path;   /* for messages */
    const gguf_ctx *gguf;
    sd_model *m;
    sd_err *err;
    bool no_pack;       /* every matrix read in place from the mapping (sd_load_opts) */
} sd_loader;

typedef struct sd_arch_def {
    const char *name;   /* general.architecture, e.g. "qwen3" */
    sd_arch arch;
    /* Sets the architecture's switches (rope_neox, qkv_bias, qk_norm) after the
     * common {arch}.* keys have been read into hp; may read extra keys. */
    sd_status (*load_hparams)(sd_loader *L, sd_hparams *hp);
    /* Binds every tensor of the model (token_embd, output, blk.N.*) and sets
     * each layer's kind (sd_layer.kind; the slots are numbered by the loader). */
    sd_status (*load_tensors)(sd_loader *L, sd_model *m);
    /* rope.dimension_count may be less than the head size (qwen35: 64 of 256). */
    bool partial_rope;
    /* Mixture of experts: feed_forward_length may be absent (the expert sizes are the keys). */
    bool moe;
} sd_arch_def;

extern const sd_arch_def sd_arch_llama, sd_arch_qwen2, sd_arch_qwen3, sd_arch_qwen35, sd_arch_eagle3;
extern const sd_arch_def sd_arch_qwen3moe, sd_arch_qwen35moe, sd_arch_dflash;

/* The architecture named name, or NULL. */
const sd_arch_def *sd_arch_find(const char *name);

/* Binds a 2-D weight {n_in, n_out} named by the printf format (e.g.
 * "blk.%d.attn_q.weight"). Errors (message names the tensor):
 * SD_ERR_FORMAT missing tensor or wrong shape, SD_ERR_UNSUPPORTED type. */
sd_status sd_bind_matrix(sd_loader *L, sd_matrix *out, int64_t n_in, int64_t n_out,
                         const char *fmt, int il);
/* Binds a 1-D vector {n} (norm weight or bias) as an f32 copy owned by the
 * model. When required is false and the tensor is absent, *out = NULL. */
sd_status sd_bind_vector(sd_loader *L, const float **out, int64_t n, bool required,
                         const char *fmt, int il);

/* Binds a 2-D tensor {ne0, ne1} of any readable type as an f32 copy owned by
 * the model (small tensors, e.g. a conv kernel): row-major [ne1][ne0], or
 * transposed to [ne0][ne1]. Required. Errors as sd_bind_vector. */
sd_status sd_bind_f32_2d(sd_loader *L, const float **out, int64_t ne0, int64_t ne1, bool transpose, const char *fmt,
                         int il);

/* The parts every dense architecture here shares (llama.cpp create_tensor
 * calls of src/models/llama.cpp): token_embd, output_norm, output (or tied to
 * token_embd), and per layer attn_norm, attn_q/k/v/output, ffn_norm,
 * ffn_gate/up/down. Biases and Q/K norms are bound by the arch files. */
sd_status sd_bind_embeddings_and_output(sd_loader *L, sd_model *m);
sd_status sd_bind_dense_layer(sd_loader *L, sd_layer *layer, int il);
/* The attention half of sd_bind_dense_layer plus ffn_norm (a MoE layer binds its own FFN). */
sd_status sd_bind_attn_block(sd_loader *L, sd_layer *layer, int il);

/* The optional reduced draft vocabulary of a draft head (eagle3, dflash;
 * arch_eagle3.c): tensor d2t, I64 absolute target ids, each in range and none
 * twice (the checks of llama.cpp's conversion/llama.py), kept as int32 in
 * m->d2t; hp.n_draft_vocab = its length, n_vocab without one. Errors:
 * SD_ERR_FORMAT, SD_ERR_NOMEM. */
sd_status sd_bind_d2t(sd_loader *L, sd_model *m);

/* qwen35 and qwen35moe share everything but the FFN (arch_qwen35.c): keys
 * under hp->arch_name, each trunk (and MTP) block's FFN dense, or the
 * experts of moe.h when hp->n_expert > 0. */
sd_status sd_qwen35_hparams(sd_loader *L, sd_hparams *hp);
sd_status sd_qwen35_tensors(sd_loader *L, sd_model *m);

#endif
