/* Test support: writes tiny random-weight GGUF models of each architecture
 * (llama, qwen2, qwen3, and the hybrid qwen35) and weight type, loadable by sd_model_load, for the
 * model and decode tests. Shapes, keys and tensor names are llama.cpp's; the
 * 2-D weights are random floats quantized with sd_quantize_row, norms and
 * biases are f32. The vocabulary is synthetic but well-formed: SentencePiece
 * (tokenizer.ggml.model "llama": <unk> <s> </s>, 256 byte tokens <0xNN>, then
 * "▁xy" pieces) for arch llama, byte-level BPE (model "gpt2", pre "qwen2":
 * 256 byte tokens, merges "x y" -> "xy", then <|endoftext|> <|im_start|>
 * <|im_end|>) otherwise.
 *
 * Usage:
 *   tiny_model_spec sp = tiny_model_default("qwen3", GGML_TYPE_Q8_0);
 *   sp.seed = 7;
 *   char path[256];
 *   tiny_model_temp_path(path, sizeof path, "q8");
 *   assert(tiny_model_write(&sp, path, &err) == SD_OK);
 *   ... sd_model_load(path, ...) ...; remove(path);
 *
 * Same spec + seed -> byte-identical file. Each tensor's values come from its
 * own stream (seed, tensor name), so omitting or altering one tensor leaves
 * the others unchanged. */
#ifndef SD_TESTS_TINY_MODEL_H
#define SD_TESTS_TINY_MODEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

typedef struct tiny_model_spec {
    const char *arch;      /* general.architecture: "llama", "qwen2", "qwen3" (any string, for error tests) */
    uint32_t type;         /* ggml type of the 2-D weights (token_embd, attn_*, ffn_*, output) */
    int32_t n_vocab;       /* 300..18000 (SPM: 259 fixed tokens; BPE: 256 bytes + 3 specials) */
    int32_t n_embd;        /* multiple of the type's block size (256 for k-quants) */
    int32_t n_layer;
    int32_t n_head, n_head_kv;
    int32_t head_dim;      /* written as {arch}.attention.key_length/value_length; n_head*head_dim must be whole blocks */
    int32_t n_ff;          /* whole blocks */
    int32_t n_ctx_train;
    float rope_base;       /* {arch}.rope.freq_base */
    float rope_scale;      /* > 0: writes rope.scaling.type "linear" and rope.scaling.factor */
    float rms_eps;
    bool tied;             /* no output.weight: the lm head is token_embd */
    bool rope_freqs;       /* writes rope_freqs.weight {head_dim/2}, factors in [1, 8] (Llama 3.1 style) */
    uint64_t seed;
    /* qwen35 only (tiny_model_default("qwen35", t) fills them): n_layer is
     * block_count, the trunk plus n_nextn MTP blocks. */
    int32_t n_rot;             /* rope.dimension_count (0 = head_dim); sections written for it */
    int32_t n_nextn;           /* nextn_predict_layers; their blocks get MTP tensors */
    int32_t ssm_state, ssm_n_v_heads, ssm_n_k_heads, ssm_conv_kernel;
    int32_t attn_interval;     /* > 0: writes full_attention_interval (layer i is attention iff (i+1) % it == 0) */
    const char *pattern;       /* non-NULL: writes attention.recurrent_layers from it, one char per trunk
                                  layer, 'G' Gated DeltaNet, 'A' attention (overrides attn_interval) */
    /* qwen3moe / qwen35moe only (tiny_model_default fills them): every FFN is
     * E routed experts (3-D tensors), k per token, plus (qwen35moe) a shared
     * expert of n_ff_shexp behind a sigmoid gate. */
    int32_t n_expert, n_expert_used, n_ff_exp, n_ff_shexp;
    bool router_zero;          /* router weights all 0: every token ties, so all pick experts 0..k-1 */
    bool fused_gate_up;        /* one ffn_gate_up_exps tensor instead of ffn_gate_exps + ffn_up_exps */
    /* Hostile variants, for loader error tests (NULL/0 = off): */
    int32_t expert_count_key;  /* >= 0: written as expert_count instead of n_expert (tensors keep n_expert) */
    const char *omit;          /* tensor name left out of the file */
    const char *alter;         /* tensor written with the changes below */
    int alter_extra_rows;      /* ... this many extra rows (ne[1], or ne[0] for a 1-D tensor; 3-D: ne[1]) */
    int alter_type;            /* ... stored as this ggml type (random bytes if not quantizable); -1 = unchanged */
    int32_t ssm_inner_delta;   /* qwen35: added to ssm.inner_size */
    int32_t pattern_extra;     /* qwen35: entries added to (negative: removed from) recurrent_layers */
    const char *chat_template; /* non-NULL: written as tokenizer.chat_template */
} tiny_model_spec;

/* A small, valid spec for arch and type: n_vocab 320, n_embd 256, 2 layers,
 * 4 heads (2 KV heads, GQA) of 64 (qwen3: 8 heads of 64, 2 KV heads, so
 * n_head * head_dim = 512 != n_embd as on real Qwen3), n_ff 512, untied, seed 1,
 * rope_base 10000 (qwen*: 1000000), rms_eps 1e-5 (qwen*: 1e-6). */
tiny_model_spec tiny_model_default(const char *arch, uint32_t type);

/* qwen35 defaults: n_vocab 320, n_embd 256, 4 layers in the pattern of
 * full_attention_interval 4 (GDN, GDN, GDN, attention), 4 heads (2 KV) of 64
 * with n_rot 16 (partial RoPE), GDN heads of S = 64 with H_v = 4 V heads over
 * H_k = 2 Q/K heads (tiled), conv kernel 4, n_ff 512, no MTP block. */

/* qwen3moe: the qwen3 defaults with E = 16 experts, k = 4, n_ff_exp = 64;
 * qwen35moe: the qwen35 defaults with the same experts and a shared expert of 64. */

/* Writes the model to path. Errors: SD_ERR_ARG (spec not realizable: sizes
 * not whole blocks, n_vocab too small), SD_ERR_NOMEM, SD_ERR_IO. */
sd_status tiny_model_write(const tiny_model_spec *spec, const char *path, sd_err *err);

/* A fresh path "$TMPDIR/sd-tiny-<pid>-<counter>-<tag>.gguf" (TMPDIR default /tmp). */
void tiny_model_temp_path(char *buf, size_t cap, const char *tag);

#endif
