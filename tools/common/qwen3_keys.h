/* The GGUF metadata sd-genmodel writes for a qwen3 model, shared by its
 * random shapes (genmodel.c) and --grow (grow/grow.c). Key names are
 * llama.cpp's (src/llama-arch.cpp LLM_KV_*, LLM_ARCH_QWEN3). */
#ifndef SD_TOOLS_QWEN3_KEYS_H
#define SD_TOOLS_QWEN3_KEYS_H

#include <stdint.h>

#include "core/status.h"
#include "format/gguf.h"

/* llama.cpp's general.file_type (enum llama_ftype in include/llama.h) of a
 * file whose matrices are all of ggml type t: F16 1, Q8_0 7, Q4_K 14 (Q4_K_S);
 * 0 (ALL_F32) for F32 and any type without a mapping here. */
uint32_t tool_file_type(uint32_t t);

/* The shape of a qwen3 model, as its hparams keys hold it. */
typedef struct tool_qwen3_shape {
    int n_layer, n_embd, n_ff, n_head, n_head_kv, head_dim;
    float eps; /* attention.layer_norm_rms_epsilon */
    const char *arch; /* key prefix: NULL = "qwen3" (qwen3moe has the same keys) */
} tool_qwen3_shape;

/* Writes <arch>.block_count, embedding_length, feed_forward_length,
 * attention.head_count, head_count_kv, key_length and value_length (both
 * head_dim) and attention.layer_norm_rms_epsilon, in that order. The caller
 * writes the rest (context_length, rope.freq_base, general.*). Returns the
 * writer's first error (SD_ERR_NOMEM), SD_OK otherwise. */
sd_status tool_write_qwen3_shape(gguf_writer *w, const tool_qwen3_shape *s);

#endif
