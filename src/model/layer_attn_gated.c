/* The full-attention layer of qwen35 (llama.cpp src/models/qwen35.cpp
 * build_layer_attn, fact sheet qwen35-mtp-eagle3.md §2.1):
 *   [q_h | gate_h] = attn_q · n          per head h, interleaved (2 * head_dim each)
 *   q_h = rope(rmsnorm(q_h) * attn_q_norm), k_j = rope(rmsnorm(k_j) * attn_k_norm), v = attn_v · n
 *   o_h = attention(q_h, K, V) * sigmoid(gate_h),  out = attn_output · o
 * RoPE is NEOX on the first n_rot dims only (pairs (i, i + n_rot/2)); the
 * IMROPE of the file equals that for text positions (p, p, p, 0) when every
 * rotary pair falls in the t/h/w sections (checked by arch_qwen35.c). */
#include <string.h>

#include "model/layers.h"
#include "numerics/ops.h"

void sd_layer_attn_gated_in(sd_context *c, const sd_layer *L, int S) {
    const sd_hparams *hp = &c->m->hp;
    const int64_t hd = hp->head_dim, q_dim = (int64_t)hp->n_head * hd;
    const sd_matrix *qkv[3] = {&L->wq, &L->wk, &L->wv};
    float *qkv_out[3] = {c->sc.qg, c->sc.k, c->sc.v};
    sd_matmul_multi(qkv, 3, c->sc.xb, S, qkv_out, c->n_threads);
    /* split the per-head [q | gate] pairs */
    for (int s = 0; s < S; s++)
        for (int h = 0; h < hp->n_head; h++) {
            const float *src = c->sc.qg + (int64_t)s * 2 * q_dim + (int64_t)h * 2 * hd;
            memcpy(c->sc.q + (int64_t)s * q_dim + h * hd, src, (size_t)hd * sizeof(float));
            memcpy(c->sc.gate + (int64_t)s * q_dim + h * hd, src + hd, (size_t)hd * sizeof(float));
        }
}

void sd_layer_attn_gated_seq(sd_context *c, const sd_layer *L, int S) {
    const sd_model *m = c->m;
    const sd_hparams *hp = &m->hp;
    const int32_t pos0 = c->kv.len;
    sd_fwd_norm_rope_heads(m, c->sc.q, L->q_norm, S, hp->n_head, pos0 + c->kv.pos_shift, NULL);
    sd_fwd_norm_rope_heads(m, c->sc.k, L->k_norm, S, hp->n_head_kv, pos0 + c->kv.pos_shift, NULL);
    sd_fwd_kv_store(c, L->slot, pos0, S);
    sd_fwd_attention(c, L->slot, pos0, S, c->sc.q, c->sc.att_out);
}

void sd_layer_attn_gated_out(sd_context *c, const sd_layer *L, int S) {
    const int64_t q_dim = (int64_t)c->m->hp.n_head * c->m->hp.head_dim;
    for (int64_t i = 0; i < S * q_dim; i++) c->sc.att_out[i] *= 1.0f / (1.0f + sd_expf(-c->sc.gate[i]));
    sd_matmul(&L->wo, c->sc.att_out, S, c->sc.xb, c->n_threads);
}
