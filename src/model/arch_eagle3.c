/* eagle3: an EAGLE-3 draft head (Li et al. 2025, "EAGLE-3: Scaling up
 * Inference Acceleration of Large Language Models via Training-Time Test") in
 * llama.cpp's GGUF layout, src/models/eagle3.cpp (load_arch_hparams,
 * load_arch_tensors); the converter is conversion/llama.py.
 *
 * Keys (eagle3.*): target_layers (exactly 3 ints: target layer INPUT ids),
 * target_hidden_size, optional norm_before_residual / norm_before_fc, plus the
 * usual embedding_length, block_count (must be 1), head counts,
 * feed_forward_length, rope.*. RoPE is NORM (adjacent pairs,
 * llama-model.cpp's rope type table): the converter permuted Q/K as for Llama.
 * Tensors: fc {3 * n_embd_tgt, n_embd}; enc.output_norm {3 * n_embd_tgt}
 * (norm_before_fc only); output_norm; optional output {n_embd, n_draft_vocab}
 * and token_embd {n_embd, n_vocab} (else the target's); optional d2t (I64,
 * {n_draft_vocab}, ABSOLUTE target ids: conversion/llama.py adds arange to
 * the HF offsets); blk.0: attn_norm (on the token embedding), attn_norm_2
 * (hidden_norm, on g), attn_q/k/v {2 * n_embd, ...} (input [e ; g]),
 * attn_output, ffn_norm, ffn_gate/up/down; optional rope_freqs. */
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "model/arch.h"

static sd_status get_target_layers(sd_loader *L, sd_hparams *hp) {
    const int64_t i = gguf_find_key(L->gguf, "eagle3.target_layers");
    gguf_type elem;
    uint64_t n = 0;
    if (i < 0) return sd_err_set(L->err, SD_ERR_FORMAT, "missing key eagle3.target_layers");
    gguf_kv_array_info(L->gguf, i, &elem, &n);
    if (gguf_kv_type(L->gguf, i) != GGUF_TYPE_ARRAY || n != 3)
        return sd_err_set(L->err, SD_ERR_FORMAT, "eagle3.target_layers must be an array of exactly 3 ids");
    for (uint64_t j = 0; j < 3; j++) {
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
        if (id < 0 || id > INT32_MAX)
            return sd_err_set(L->err, SD_ERR_FORMAT, "eagle3.target_layers[%d] is not a layer id", (int)j);
        hp->target_layers[j] = (int32_t)id;
    }
    return SD_OK;
}

static sd_status eagle3_hparams(sd_loader *L, sd_hparams *hp) {
    hp->rope_neox = false; /* LLAMA_ROPE_TYPE_NORM */
    hp->qkv_bias = false;
    hp->qk_norm = false;
    if (hp->n_layer != 1)
        return sd_err_set(L->err, SD_ERR_UNSUPPORTED, "eagle3.block_count = %d, an EAGLE-3 head has 1 layer",
                          hp->n_layer);
    sd_status st = get_target_layers(L, hp);
    if (st != SD_OK) return st;
    int64_t v;
    if (!gguf_get_i64(L->gguf, "eagle3.target_hidden_size", &v))
        return sd_err_set(L->err, SD_ERR_FORMAT, "missing key eagle3.target_hidden_size");
    if (v <= 0 || v > (1 << 20))
        return sd_err_set(L->err, SD_ERR_FORMAT, "eagle3.target_hidden_size = %lld out of range", (long long)v);
    hp->n_embd_tgt = (int32_t)v;
    hp->norm_before_residual = hp->norm_before_fc = false;
    if (gguf_find_key(L->gguf, "eagle3.norm_before_residual") >= 0 &&
        !gguf_get_bool(L->gguf, "eagle3.norm_before_residual", &hp->norm_before_residual))
        return sd_err_set(L->err, SD_ERR_FORMAT, "eagle3.norm_before_residual is not a bool");
    if (gguf_find_key(L->gguf, "eagle3.norm_before_fc") >= 0 &&
        !gguf_get_bool(L->gguf, "eagle3.norm_before_fc", &hp->norm_before_fc))
        return sd_err_set(L->err, SD_ERR_FORMAT, "eagle3.norm_before_fc is not a bool");
    return SD_OK;
}

sd_status sd_bind_d2t(sd_loader *L, sd_model *m) {
    const gguf_tensor_info *t = gguf_find_tensor(L->gguf, "d2t");
    m->hp.n_draft_vocab = m->hp.n_vocab;
    if (!t) return SD_OK;
    if (t->type != GGML_TYPE_I64 || t->n_dims != 1 || t->ne[0] < 1 || t->ne[0] > m->hp.n_vocab)
        return sd_err_set(L->err, SD_ERR_FORMAT, "tensor d2t must be i64 [n] with 1 <= n <= n_vocab %d",
                          m->hp.n_vocab);
    const int32_t n = (int32_t)t->ne[0];
    m->d2t = sd_calloc((size_t)n, sizeof *m->d2t);
    uint8_t *seen = sd_calloc((size_t)m->hp.n_vocab, 1);
    sd_status st = m->d2t && seen ? SD_OK : sd_err_set(L->err, SD_ERR_NOMEM, "out of memory for d2t");
    for (int32_t i = 0; st == SD_OK && i < n; i++) {
        int64_t id;
        memcpy(&id, (const char *)t->data + (size_t)i * 8, 8); /* little-endian file, as every supported host */
        if (id < 0 || id >= m->hp.n_vocab || seen[id])
            st = sd_err_set(L->err, SD_ERR_FORMAT, "d2t[%d] = %lld: not a distinct target id below %d", i,
                            (long long)id, m->hp.n_vocab);
        else
            m->d2t[i] = (int32_t)id, seen[id] = 1;
    }
    free(seen);
    m->hp.n_draft_vocab = n;
    return st;
}

static sd_status eagle3_tensors(sd_loader *L, sd_model *m) {
    sd_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, n_in = 3 * (int64_t)hp->n_embd_tgt, n_ff = hp->n_ff;
    const int64_t q_dim = (int64_t)hp->n_head * hp->head_dim, kv_dim = (int64_t)hp->n_head_kv * hp->head_dim;
    sd_layer *l = &m->layers[0];
    sd_status st = sd_bind_d2t(L, m);
    if (st == SD_OK) st = sd_bind_matrix(L, &m->fc, n_in, E, "fc.weight", 0);
    if (st == SD_OK && hp->norm_before_fc)
        st = sd_bind_vector(L, &m->enc_norm, n_in, true, "enc.output_norm.weight", 0);
    if (st == SD_OK) st = sd_bind_vector(L, &m->output_norm, E, true, "output_norm.weight", 0);
    if (st == SD_OK && gguf_find_tensor(L->gguf, "output.weight"))
        st = sd_bind_matrix(L, &m->output, E, hp->n_draft_vocab, "output.weight", 0);
    else if (st == SD_OK && m->d2t)
        st = sd_err_set(L->err, SD_ERR_FORMAT, "d2t without output.weight (the target's head has every token)");
    if (st == SD_OK && gguf_find_tensor(L->gguf, "token_embd.weight"))
        st = sd_bind_matrix(L, &m->tok_embd, E, hp->n_vocab, "token_embd.weight", 0);
    if (st == SD_OK) st = sd_bind_vector(L, &l->attn_norm, E, true, "blk.%d.attn_norm.weight", 0);
    if (st == SD_OK) st = sd_bind_vector(L, &l->attn_norm_2, E, true, "blk.%d.attn_norm_2.weight", 0);
    if (st == SD_OK) st = sd_bind_matrix(L, &l->wq, 2 * E, q_dim, "blk.%d.attn_q.weight", 0);
    if (st == SD_OK) st = sd_bind_matrix(L, &l->wk, 2 * E, kv_dim, "blk.%d.attn_k.weight", 0);
    if (st == SD_OK) st = sd_bind_matrix(L, &l->wv, 2 * E, kv_dim, "blk.%d.attn_v.weight", 0);
    if (st == SD_OK) st = sd_bind_matrix(L, &l->wo, q_dim, E, "blk.%d.attn_output.weight", 0);
    if (st == SD_OK) st = sd_bind_vector(L, &l->ffn_norm, E, true, "blk.%d.ffn_norm.weight", 0);
    if (st == SD_OK) st = sd_bind_matrix(L, &l->w_gate, E, n_ff, "blk.%d.ffn_gate.weight", 0);
    if (st == SD_OK) st = sd_bind_matrix(L, &l->w_up, E, n_ff, "blk.%d.ffn_up.weight", 0);
    if (st == SD_OK) st = sd_bind_matrix(L, &l->w_down, n_ff, E, "blk.%d.ffn_down.weight", 0);
    if (st == SD_OK) st = sd_bind_vector(L, &m->rope_freqs, hp->n_rot / 2, false, "rope_freqs.weight", 0);
    return st;
}

const sd_arch_def sd_arch_eagle3 = {"eagle3", SD_ARCH_EAGLE3, eagle3_hparams, eagle3_tensors, false, false};
