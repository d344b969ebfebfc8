/* dflash: a DFlash block drafter (Chen et al. 2026, "DFlash: Block Diffusion
 * for Flash Speculative Decoding") in llama.cpp's GGUF layout,
 * src/models/dflash.cpp (load_arch_hparams, load_arch_tensors); the converter
 * is conversion/qwen.py DFlashModel, a Qwen3 layer stack.
 *
 * Keys: dflash.block_size (tokens per block: the anchor and block - 1
 * drafts; llama.cpp's default when absent is 16), dflash.target_layers (the
 * target layer INPUT ids whose hidden rows it reads: the HF ids + 1), the
 * usual dflash.embedding_length, block_count, head counts, key_length,
 * feed_forward_length, rope.*, and tokenizer.ggml.mask_token_id (the token of
 * the undrafted block slots; the file carries the target's tokenizer).
 * RoPE is NEOX (llama-model.cpp's rope type for a DFlash backbone; a draft
 * for an M-RoPE target writes the degenerate sections [n_rot/2, 0, 0, 0],
 * which rope every pair with the one position: NEOX again).
 * Tensors: fc {n_ids * n_embd, n_embd}; enc.output_norm {n_embd} (after fc);
 * output_norm; optional output {n_embd, n_draft_vocab} and token_embd (else
 * the target's); optional d2t (I64, absolute target ids); per layer the
 * Qwen3 block: attn_norm, attn_q/k/v/output, attn_q_norm, attn_k_norm,
 * ffn_norm, ffn_gate/up/down.
 * Refused, one line each: the variants this engine does not run — DFlash2's
 * convolutions and selector, DSpark's Markov head, the DeepSeek-V4 stages,
 * sliding-window layers, a shared K/V, causal blocks, post norms, sinks,
 * embedding / logit scales, soft-capping, a GELU FFN. */
#include <string.h>

#include "model/arch.h"

#define BLOCK_MAX 64 /* a block is one forward of the draft: at most one batch of rows */

static sd_status get_int_array(sd_loader *L, const char *key, int32_t *out, int max, int *n_out) {
    const int64_t i = gguf_find_key(L->gguf, key);
    gguf_type elem;
    uint64_t n = 0;
    if (i < 0) return sd_err_set(L->err, SD_ERR_FORMAT, "missing key %s", key);
    if (gguf_kv_type(L->gguf, i) != GGUF_TYPE_ARRAY) return sd_err_set(L->err, SD_ERR_FORMAT, "%s is not an array", key);
    gguf_kv_array_info(L->gguf, i, &elem, &n);
    if (n < 1 || n > (uint64_t)max)
        return sd_err_set(L->err, SD_ERR_UNSUPPORTED, "%s has %llu ids; 1 to %d are supported", key,
                          (unsigned long long)n, max);
    for (uint64_t j = 0; j < n; j++) {
        gguf_value v;
        int64_t id = -1;
        if (gguf_kv_value(L->gguf, i, j, &v)) {
            if (v.type == GGUF_TYPE_INT8 || v.type == GGUF_TYPE_INT16 || v.type == GGUF_TYPE_INT32 ||
                v.type == GGUF_TYPE_INT64)
                id = v.v.i;
            else if (v.type == GGUF_TYPE_UINT8 || v.type == GGUF_TYPE_UINT16 || v.type == GGUF_TYPE_UINT32 ||
                     v.type == GGUF_TYPE_UINT64)
                id = v.v.u <= INT32_MAX ? (int64_t)v.v.u : -1;
        }
        if (id < 0 || id > INT32_MAX) return sd_err_set(L->err, SD_ERR_FORMAT, "%s[%d] is not a layer id", key, (int)j);
        out[j] = (int32_t)id;
    }
    *n_out = (int)n;
    return SD_OK;
}

/* Keys of the variants not run here: present (and not the neutral value) = refused. */
static sd_status refuse_variants(sd_loader *L) {
    static const char *const keys[] = {"dflash.hyper_connection_count", "dflash.selector_rank",
                                       "dflash.conv_kernel_size", "dflash.attention.sliding_window",
                                       "dflash.embedding_scale", "dflash.logit_scale", "dflash.attention.scale",
                                       "dflash.final_logit_softcapping"};
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        float f;
        int64_t v;
        if (gguf_find_key(L->gguf, keys[k]) < 0) continue;
        if ((gguf_get_i64(L->gguf, keys[k], &v) && v == 0) || (gguf_get_f32(L->gguf, keys[k], &f) && f == 0)) continue;
        return sd_err_set(L->err, SD_ERR_UNSUPPORTED, "DFlash variant with %s is not supported", keys[k]);
    }
    bool causal = false;
    if (gguf_find_key(L->gguf, "dflash.attention.causal") >= 0 &&
        (!gguf_get_bool(L->gguf, "dflash.attention.causal", &causal) || causal))
        return sd_err_set(L->err, SD_ERR_UNSUPPORTED, "DFlash draft with causal block attention is not supported");
    const char *act;
    uint64_t len;
    if (gguf_get_str(L->gguf, "dflash.hidden_act", &act, &len) && !(len == 4 && !memcmp(act, "silu", 4)))
        return sd_err_set(L->err, SD_ERR_UNSUPPORTED, "DFlash hidden activation '%.*s' is not supported (silu only)",
                          (int)(len > 32 ? 32 : len), act);
    return SD_OK;
}

static sd_status dflash_hparams(sd_loader *L, sd_hparams *hp) {
    hp->rope_neox = true;
    hp->qkv_bias = false;
    hp->qk_norm = true;
    if (hp->n_rot != hp->head_dim)
        return sd_err_set(L->err, SD_ERR_UNSUPPORTED, "DFlash rope.dimension_count %d != head size %d", hp->n_rot,
                          hp->head_dim);
    sd_status st = refuse_variants(L);
    int n = 0;
    if (st == SD_OK) st = get_int_array(L, "dflash.target_layers", hp->target_layers, SD_HIDDEN_MAX_IDS, &n);
    if (st != SD_OK) return st;
    hp->n_target_layers = n;
    hp->n_embd_tgt = hp->n_embd; /* fc reads n_ids rows of the draft's own width (llama.cpp n_embd_inp_enc) */
    int64_t v = 16;
    if (gguf_find_key(L->gguf, "dflash.block_size") >= 0 && !gguf_get_i64(L->gguf, "dflash.block_size", &v))
        return sd_err_set(L->err, SD_ERR_FORMAT, "dflash.block_size is not an integer");
    if (v < 2 || v > BLOCK_MAX)
        return sd_err_set(L->err, SD_ERR_UNSUPPORTED, "dflash.block_size = %lld; 2 to %d are supported", (long long)v,
                          BLOCK_MAX);
    hp->dflash_block = (int32_t)v;
    if (!gguf_get_i64(L->gguf, "tokenizer.ggml.mask_token_id", &v))
        return sd_err_set(L->err, SD_ERR_FORMAT, "missing key tokenizer.ggml.mask_token_id (the DFlash block's mask token)");
    if (v < 0 || v > INT32_MAX) return sd_err_set(L->err, SD_ERR_FORMAT, "tokenizer.ggml.mask_token_id out of range");
    hp->mask_token = (int32_t)v;
    return SD_OK;
}

static sd_status refuse_tensors(sd_loader *L) {
    static const char *const names[] = {"markov_w1.weight",           "selector_hidden.weight",
                                        "blk.0.attn_post_norm.weight", "blk.0.ffn_post_norm.weight",
                                        "blk.0.layer_output_scale.weight", "blk.0.attn_sinks.weight",
                                        "blk.0.attn_conv_proj.weight"};
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++)
        if (gguf_find_tensor(L->gguf, names[k]))
            return sd_err_set(L->err, SD_ERR_UNSUPPORTED, "DFlash variant with tensor %s is not supported", names[k]);
    if (!gguf_find_tensor(L->gguf, "blk.0.attn_v.weight"))
        return sd_err_set(L->err, SD_ERR_UNSUPPORTED, "DFlash draft without attn_v (shared K/V) is not supported");
    return SD_OK;
}

static sd_status dflash_tensors(sd_loader *L, sd_model *m) {
    sd_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, n_in = (int64_t)hp->n_target_layers * E;
    if (hp->mask_token >= hp->n_vocab)
        return sd_err_set(L->err, SD_ERR_FORMAT, "tokenizer.ggml.mask_token_id %d past the vocabulary of %d",
                          hp->mask_token, hp->n_vocab);
    sd_status st = refuse_tensors(L);
    if (st == SD_OK) st = sd_bind_d2t(L, m);
    if (st == SD_OK) st = sd_bind_matrix(L, &m->fc, n_in, E, "fc.weight", 0);
    if (st == SD_OK) st = sd_bind_vector(L, &m->enc_norm, E, true, "enc.output_norm.weight", 0);
    if (st == SD_OK) st = sd_bind_vector(L, &m->output_norm, E, true, "output_norm.weight", 0);
    if (st == SD_OK && gguf_find_tensor(L->gguf, "output.weight"))
        st = sd_bind_matrix(L, &m->output, E, hp->n_draft_vocab, "output.weight", 0);
    else if (st == SD_OK && m->d2t)
        st = sd_err_set(L->err, SD_ERR_FORMAT, "d2t without output.weight (the target's head has every token)");
    if (st == SD_OK && gguf_find_tensor(L->gguf, "token_embd.weight"))
        st = sd_bind_matrix(L, &m->tok_embd, E, hp->n_vocab, "token_embd.weight", 0);
    for (int il = 0; st == SD_OK && il < hp->n_layer; il++) {
        sd_layer *l = &m->layers[il];
        l->kind = SD_LAYER_ATTN;
        st = sd_bind_dense_layer(L, l, il);
        if (st == SD_OK) st = sd_bind_vector(L, &l->q_norm, hp->head_dim, true, "blk.%d.attn_q_norm.weight", il);
        if (st == SD_OK) st = sd_bind_vector(L, &l->k_norm, hp->head_dim, true, "blk.%d.attn_k_norm.weight", il);
    }
    return st;
}

const sd_arch_def sd_arch_dflash = {"dflash", SD_ARCH_DFLASH, dflash_hparams, dflash_tensors, false, false};
