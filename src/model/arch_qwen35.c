/* qwen35 (Qwen3.5 / Qwen3.6 dense): llama.cpp src/models/qwen35.cpp; fact
 * sheet ../shared/facts/qwen35-mtp-eagle3.md §1-§3, §7.
 * A hybrid: most layers are Gated DeltaNet (layer_gdn.c, a recurrent state
 * per layer), the others gated full attention (layer_attn_gated.c). The
 * traps this file handles:
 * - block_count counts the MTP (nextn) blocks too: the trunk is
 *   block_count - nextn_predict_layers layers; the MTP blocks are not run by
 *   the forward. One MTP block is bound (m->nextn) for the MTP drafter.
 * - layer pattern: attention.recurrent_layers (one flag per block), else
 *   full_attention_interval (default 4): layer i is GDN iff (i+1) mod interval != 0.
 * - ssm.time_step_rank is the number of V heads H_v, ssm.group_count the
 *   number of Q/K heads H_k, ssm.state_size the head size S.
 * - attn_q is twice as wide (per head [q | gate]); RoPE covers n_rot < head_dim dims.
 * - post_attention_norm is the pre-FFN norm; every norm weight already holds
 *   its +1 and ssm_a already holds -exp(A_log): used as stored. */
#include <stdio.h>

#include "model/arch.h"
#include "model/moe.h"
#include "numerics/gdn.h"

/* Reads {arch}.key as a positive int32 in [1, max] into *out (dflt when absent and not required). */
static sd_status get_int(sd_loader *L, const char *suffix, bool required, int32_t dflt, int32_t max, int32_t *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", L->m->hp.arch_name, suffix); /* qwen35 or qwen35moe */
    int64_t v = dflt;
    if (!gguf_get_i64(L->gguf, key, &v)) {
        if (gguf_find_key(L->gguf, key) >= 0)
            return sd_err_set(L->err, SD_ERR_FORMAT, "key %s is not an integer", key);
        if (required) return sd_err_set(L->err, SD_ERR_FORMAT, "missing key %s", key);
    }
    if (v < 1 || v > max) return sd_err_set(L->err, SD_ERR_FORMAT, "key %s = %lld out of range [1, %d]", key, (long long)v, max);
    *out = (int32_t)v;
    return SD_OK;
}

/* The GDN sizes: ssm.* keys, checked against each other. */
static sd_status ssm_hparams(sd_loader *L, sd_hparams *hp) {
    int32_t inner = 0;
    sd_status st = get_int(L, "ssm.conv_kernel", true, 0, 64, &hp->ssm_conv_kernel);
    if (st == SD_OK) st = get_int(L, "ssm.state_size", true, 0, SD_GDN_MAX_STATE, &hp->ssm_state);
    if (st == SD_OK) st = get_int(L, "ssm.time_step_rank", true, 0, 4096, &hp->ssm_n_v_heads);
    if (st == SD_OK) st = get_int(L, "ssm.group_count", true, 0, 4096, &hp->ssm_n_k_heads);
    if (st == SD_OK) st = get_int(L, "ssm.inner_size", true, 0, 1 << 24, &inner);
    if (st != SD_OK) return st;
    if ((int64_t)hp->ssm_state * hp->ssm_n_v_heads != inner)
        return sd_err_set(L->err, SD_ERR_FORMAT,
                          "qwen35.ssm.inner_size %d != ssm.state_size %d x ssm.time_step_rank %d", inner,
                          hp->ssm_state, hp->ssm_n_v_heads);
    if (hp->ssm_n_v_heads % hp->ssm_n_k_heads != 0)
        return sd_err_set(L->err, SD_ERR_FORMAT, "qwen35.ssm.group_count %d does not divide ssm.time_step_rank %d",
                          hp->ssm_n_k_heads, hp->ssm_n_v_heads);
    hp->ssm_conv_dim = (2 * hp->ssm_n_k_heads + hp->ssm_n_v_heads) * hp->ssm_state; /* <= 3 * 2^12 * 2^9 */
    return SD_OK;
}

/* Only text positions run here: llama.cpp's IMROPE (ggml-cpu/ops.cpp
 * ggml_mrope_cache_init) gives rotary pair p the t, h or w position (all
 * equal to p for text) when its sector p mod sum(sections) falls in those
 * sections, else the 4th stream's (0 for text: no rotation). The 4th case is
 * refused rather than run as NEOX. */
static sd_status check_rope_sections(sd_loader *L, const sd_hparams *hp) {
    char key[96];
    snprintf(key, sizeof key, "%s.rope.dimension_sections", hp->arch_name);
    int64_t ki = gguf_find_key(L->gguf, key);
    if (ki < 0) return SD_OK;
    gguf_type elem;
    uint64_t n = 0;
    int64_t sec[4] = {0};
    gguf_kv_array_info(L->gguf, ki, &elem, &n);
    if (gguf_kv_type(L->gguf, ki) != GGUF_TYPE_ARRAY || n < 1 || n > 4)
        return sd_err_set(L->err, SD_ERR_FORMAT, "key %s is not an array of up to 4 integers", key);
    for (uint64_t j = 0; j < n; j++) {
        gguf_value v;
        if (!gguf_kv_value(L->gguf, ki, j, &v) || v.type == GGUF_TYPE_FLOAT32 || v.type == GGUF_TYPE_FLOAT64 ||
            v.type == GGUF_TYPE_STRING || v.type == GGUF_TYPE_BOOL)
            return sd_err_set(L->err, SD_ERR_FORMAT, "key %s is not an array of up to 4 integers", key);
        sec[j] = v.type == GGUF_TYPE_UINT64 ? (int64_t)(v.v.u > 4096 ? 4096 : v.v.u) : v.v.i;
        if (sec[j] < 0 || sec[j] > 4096) return sd_err_set(L->err, SD_ERR_FORMAT, "key %s: section %lld out of range", key, (long long)sec[j]);
    }
    const int64_t total = sec[0] + sec[1] + sec[2] + sec[3];
    for (int p = 0; total > 0 && p < hp->n_rot / 2; p++) {
        const int64_t s = p % total;
        bool text = (s % 3 == 0 && s < 3 * sec[0]) || (s % 3 == 1 && s < 3 * sec[1]) || (s % 3 == 2 && s < 3 * sec[2]);
        if (!text)
            return sd_err_set(L->err, SD_ERR_UNSUPPORTED,
                              "%s [%lld, %lld, %lld, %lld] puts rotary pair %d on the 4th stream: not supported", key,
                              (long long)sec[0], (long long)sec[1], (long long)sec[2], (long long)sec[3], p);
    }
    return SD_OK;
}

/* is_gdn[il] for the trunk layers, from attention.recurrent_layers or full_attention_interval. */
static sd_status layer_pattern(sd_loader *L, sd_model *m) {
    const sd_hparams *hp = &m->hp;
    char key[96];
    snprintf(key, sizeof key, "%s.attention.recurrent_layers", hp->arch_name);
    int64_t ki = gguf_find_key(L->gguf, key);
    if (ki >= 0) {
        gguf_type elem;
        uint64_t n = 0;
        gguf_kv_array_info(L->gguf, ki, &elem, &n);
        if (gguf_kv_type(L->gguf, ki) != GGUF_TYPE_ARRAY || elem == GGUF_TYPE_STRING || elem == GGUF_TYPE_ARRAY)
            return sd_err_set(L->err, SD_ERR_FORMAT, "key %s is not an array of flags", key);
        if (n != (uint64_t)hp->n_layer_all)
            return sd_err_set(L->err, SD_ERR_FORMAT, "key %s has %llu entries, block_count is %d", key,
                              (unsigned long long)n, hp->n_layer_all);
        for (int il = 0; il < hp->n_layer; il++) {
            gguf_value v;
            if (!gguf_kv_value(L->gguf, ki, (uint64_t)il, &v))
                return sd_err_set(L->err, SD_ERR_FORMAT, "key %s: entry %d unreadable", key, il);
            bool on = v.type == GGUF_TYPE_BOOL ? v.v.b : v.type == GGUF_TYPE_FLOAT32 || v.type == GGUF_TYPE_FLOAT64 ? v.v.f != 0 : v.v.u != 0;
            m->layers[il].kind = on ? SD_LAYER_GDN : SD_LAYER_ATTN_GATED;
        }
        return SD_OK;
    }
    int32_t interval = 4;
    sd_status st = get_int(L, "full_attention_interval", false, 4, 1 << 20, &interval);
    for (int il = 0; st == SD_OK && il < hp->n_layer; il++)
        m->layers[il].kind = (il + 1) % interval != 0 ? SD_LAYER_GDN : SD_LAYER_ATTN_GATED;
    return st;
}

sd_status sd_qwen35_hparams(sd_loader *L, sd_hparams *hp) {
    hp->rope_neox = true;
    hp->qkv_bias = false;
    hp->qk_norm = true;
    int64_t nextn = 0;
    char key[96];
    snprintf(key, sizeof key, "%s.nextn_predict_layers", hp->arch_name);
    if (gguf_find_key(L->gguf, key) >= 0 && (!gguf_get_i64(L->gguf, key, &nextn) || nextn < 0 || nextn >= hp->n_layer_all))
        return sd_err_set(L->err, SD_ERR_FORMAT, "key %s out of range [0, block_count %d)", key, hp->n_layer_all);
    hp->n_nextn = (int32_t)nextn;
    hp->n_layer = hp->n_layer_all - hp->n_nextn;
    sd_status st = ssm_hparams(L, hp);
    if (st == SD_OK) st = check_rope_sections(L, hp);
    return st;
}

static sd_status bind_attention(sd_loader *L, sd_layer *l, int il) {
    const sd_hparams *hp = &L->m->hp;
    const int64_t n_embd = hp->n_embd, q_dim = (int64_t)hp->n_head * hp->head_dim;
    const int64_t kv_dim = (int64_t)hp->n_head_kv * hp->head_dim;
    sd_status st = sd_bind_matrix(L, &l->wq, n_embd, 2 * q_dim, "blk.%d.attn_q.weight", il);
    if (st == SD_OK) st = sd_bind_matrix(L, &l->wk, n_embd, kv_dim, "blk.%d.attn_k.weight", il);
    if (st == SD_OK) st = sd_bind_matrix(L, &l->wv, n_embd, kv_dim, "blk.%d.attn_v.weight", il);
    if (st == SD_OK) st = sd_bind_matrix(L, &l->wo, q_dim, n_embd, "blk.%d.attn_output.weight", il);
    if (st == SD_OK) st = sd_bind_vector(L, &l->q_norm, hp->head_dim, true, "blk.%d.attn_q_norm.weight", il);
    if (st == SD_OK) st = sd_bind_vector(L, &l->k_norm, hp->head_dim, true, "blk.%d.attn_k_norm.weight", il);
    return st;
}

static sd_status bind_gdn(sd_loader *L, sd_layer *l, int il) {
    const sd_hparams *hp = &L->m->hp;
    const int64_t n_embd = hp->n_embd, vd = (int64_t)hp->ssm_n_v_heads * hp->ssm_state, hv = hp->ssm_n_v_heads;
    sd_status st = sd_bind_matrix(L, &l->ssm_qkv, n_embd, hp->ssm_conv_dim, "blk.%d.attn_qkv.weight", il);
    if (st == SD_OK) st = sd_bind_matrix(L, &l->ssm_z, n_embd, vd, "blk.%d.attn_gate.weight", il);
    if (st == SD_OK) st = sd_bind_matrix(L, &l->ssm_beta, n_embd, hv, "blk.%d.ssm_beta.weight", il);
    if (st == SD_OK) st = sd_bind_matrix(L, &l->ssm_alpha, n_embd, hv, "blk.%d.ssm_alpha.weight", il);
    if (st == SD_OK) st = sd_bind_matrix(L, &l->ssm_out, vd, n_embd, "blk.%d.ssm_out.weight", il);
    if (st == SD_OK)
        st = sd_bind_f32_2d(L, &l->conv_w, hp->ssm_conv_kernel, hp->ssm_conv_dim, true, "blk.%d.ssm_conv1d.weight", il);
    if (st == SD_OK) st = sd_bind_vector(L, &l->dt_bias, hv, true, "blk.%d.ssm_dt.bias", il);
    if (st == SD_OK) st = sd_bind_vector(L, &l->ssm_a, hv, true, "blk.%d.ssm_a", il);
    if (st == SD_OK) st = sd_bind_vector(L, &l->ssm_norm, hp->ssm_state, true, "blk.%d.ssm_norm.weight", il);
    return st;
}

/* The FFN of block il after its post_attention_norm: dense SwiGLU, or (qwen35moe) the experts. */
static sd_status bind_ffn(sd_loader *L, sd_layer *l, int il, int32_t counter) {
    const sd_hparams *hp = &L->m->hp;
    const int64_t n_embd = hp->n_embd, n_ff = hp->n_ff;
    if (hp->n_expert > 0) return sd_bind_moe_ffn(L, &l->moe, il, counter);
    sd_status st = sd_bind_matrix(L, &l->w_gate, n_embd, n_ff, "blk.%d.ffn_gate.weight", il);
    if (st == SD_OK) st = sd_bind_matrix(L, &l->w_up, n_embd, n_ff, "blk.%d.ffn_up.weight", il);
    if (st == SD_OK) st = sd_bind_matrix(L, &l->w_down, n_ff, n_embd, "blk.%d.ffn_down.weight", il);
    return st;
}

/* The MTP block blk.<n_layer> (qwen35.cpp load_arch_tensors: the tensors of
 * a full-attention layer plus nextn.*), when there is exactly one (llama.cpp
 * runs only n_layer_nextn == 1). Optional embed_tokens / shared_head_head /
 * shared_head_norm fall back to the trunk's token_embd / output / output_norm. */
static sd_status bind_nextn(sd_loader *L, sd_model *m) {
    const sd_hparams *hp = &m->hp;
    const int64_t n_embd = hp->n_embd;
    const int il = hp->n_layer;
    sd_nextn *x = &m->nextn;
    sd_layer *l = &x->layer;
    l->kind = SD_LAYER_ATTN_GATED;
    l->slot = 0;
    sd_status st = sd_bind_vector(L, &l->attn_norm, n_embd, true, "blk.%d.attn_norm.weight", il);
    if (st == SD_OK) st = bind_attention(L, l, il);
    if (st == SD_OK) st = sd_bind_vector(L, &l->ffn_norm, n_embd, true, "blk.%d.post_attention_norm.weight", il);
    if (st == SD_OK) st = bind_ffn(L, l, il, 0); /* counter 0: the MTP view's one layer */
    if (st == SD_OK) st = sd_bind_matrix(L, &x->eh_proj, 2 * n_embd, n_embd, "blk.%d.nextn.eh_proj.weight", il);
    if (st == SD_OK) st = sd_bind_vector(L, &x->enorm, n_embd, true, "blk.%d.nextn.enorm.weight", il);
    if (st == SD_OK) st = sd_bind_vector(L, &x->hnorm, n_embd, true, "blk.%d.nextn.hnorm.weight", il);
    if (st == SD_OK) st = sd_bind_vector(L, &x->head_norm, n_embd, false, "blk.%d.nextn.shared_head_norm.weight", il);
    if (st == SD_OK && !x->head_norm) x->head_norm = m->output_norm;
    char name[96];
    snprintf(name, sizeof name, "blk.%d.nextn.embed_tokens.weight", il);
    if (st == SD_OK && gguf_find_tensor(L->gguf, name))
        st = sd_bind_matrix(L, &x->embd, n_embd, hp->n_vocab, "blk.%d.nextn.embed_tokens.weight", il);
    snprintf(name, sizeof name, "blk.%d.nextn.shared_head_head.weight", il);
    if (st == SD_OK && gguf_find_tensor(L->gguf, name))
        st = sd_bind_matrix(L, &x->head, n_embd, hp->n_vocab, "blk.%d.nextn.shared_head_head.weight", il);
    x->present = st == SD_OK;
    return st;
}

/* An "mtp_only" file (llama.cpp convert_hf_to_gguf.py --mtp, conversion/qwen.py
 * _QwenMtpMixin: mtp-*.gguf) keeps the keys of the whole model, token_embd,
 * output_norm, output and the MTP block, and drops the trunk; llama.cpp tells
 * it by blk.0.attn_norm.weight missing (src/models/qwen35.cpp load_arch_tensors). */
static sd_status detect_mtp_only(sd_loader *L, sd_model *m) {
    m->hp.mtp_only = m->hp.n_nextn > 0 && !gguf_find_tensor(L->gguf, "blk.0.attn_norm.weight");
    if (m->hp.mtp_only && m->hp.n_nextn != 1)
        return sd_err_set(L->err, SD_ERR_UNSUPPORTED, "MTP sidecar with %d nextn blocks: only 1 is supported",
                          m->hp.n_nextn);
    return SD_OK;
}

sd_status sd_qwen35_tensors(sd_loader *L, sd_model *m) {
    const sd_hparams *hp = &m->hp;
    const int64_t n_embd = hp->n_embd;
    sd_status st = layer_pattern(L, m);
    if (st == SD_OK) st = detect_mtp_only(L, m);
    if (st == SD_OK) st = sd_bind_embeddings_and_output(L, m);
    for (int il = 0; st == SD_OK && !hp->mtp_only && il < hp->n_layer; il++) {
        sd_layer *l = &m->layers[il];
        st = sd_bind_vector(L, &l->attn_norm, n_embd, true, "blk.%d.attn_norm.weight", il);
        if (st == SD_OK) st = l->kind == SD_LAYER_GDN ? bind_gdn(L, l, il) : bind_attention(L, l, il);
        if (st == SD_OK) st = sd_bind_vector(L, &l->ffn_norm, n_embd, true, "blk.%d.post_attention_norm.weight", il);
        if (st == SD_OK) st = bind_ffn(L, l, il, il);
    }
    if (st == SD_OK && hp->n_nextn == 1) st = bind_nextn(L, m);
    return st;
}

const sd_arch_def sd_arch_qwen35 = {"qwen35", SD_ARCH_QWEN35, sd_qwen35_hparams, sd_qwen35_tensors, true, false};
