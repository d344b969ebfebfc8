/* qwen2 (Qwen2, Qwen2.5): llama.cpp src/models/qwen2.cpp.
 * Differs from llama in two places: Q/K/V projections carry biases
 * (attn_q/k/v.bias, required), and RoPE rotates the half-split pairs
 * (i, i + n_rot/2), LLAMA_ROPE_TYPE_NEOX. */
#include "model/arch.h"

static sd_status qwen2_hparams(sd_loader *L, sd_hparams *hp) {
    (void)L;
    hp->rope_neox = true;
    hp->qkv_bias = true;
    hp->qk_norm = false;
    return SD_OK;
}

static sd_status qwen2_tensors(sd_loader *L, sd_model *m) {
    const sd_hparams *hp = &m->hp;
    sd_status st = sd_bind_embeddings_and_output(L, m);
    const int64_t q_dim = (int64_t)hp->n_head * hp->head_dim;
    const int64_t kv_dim = (int64_t)hp->n_head_kv * hp->head_dim;
    for (int il = 0; st == SD_OK && il < hp->n_layer; il++) {
        sd_layer *layer = &m->layers[il];
        st = sd_bind_dense_layer(L, layer, il);
        if (st == SD_OK) st = sd_bind_vector(L, &layer->bq, q_dim, true, "blk.%d.attn_q.bias", il);
        if (st == SD_OK) st = sd_bind_vector(L, &layer->bk, kv_dim, true, "blk.%d.attn_k.bias", il);
        if (st == SD_OK) st = sd_bind_vector(L, &layer->bv, kv_dim, true, "blk.%d.attn_v.bias", il);
    }
    return st;
}

const sd_arch_def sd_arch_qwen2 = {"qwen2", SD_ARCH_QWEN2, qwen2_hparams, qwen2_tensors, false, false};
