/* qwen3 (Qwen3 dense): llama.cpp src/models/qwen3.cpp.
 * Differs from qwen2: no Q/K/V biases; each head of Q and of K goes through
 * an RMSNorm with its own weight (attn_q_norm / attn_k_norm, {head_dim}, same
 * eps as the block norms) before RoPE. NEOX RoPE. head_dim comes from
 * qwen3.attention.key_length (128 on every released size, so n_head *
 * head_dim != n_embd on e.g. Qwen3-0.6B). */
#include "model/arch.h"

static sd_status qwen3_hparams(sd_loader *L, sd_hparams *hp) {
    (void)L;
    hp->rope_neox = true;
    hp->qkv_bias = false;
    hp->qk_norm = true;
    return SD_OK;
}

static sd_status qwen3_tensors(sd_loader *L, sd_model *m) {
    const sd_hparams *hp = &m->hp;
    sd_status st = sd_bind_embeddings_and_output(L, m);
    for (int il = 0; st == SD_OK && il < hp->n_layer; il++) {
        sd_layer *layer = &m->layers[il];
        st = sd_bind_dense_layer(L, layer, il);
        if (st == SD_OK)
            st = sd_bind_vector(L, &layer->q_norm, hp->head_dim, true, "blk.%d.attn_q_norm.weight", il);
        if (st == SD_OK)
            st = sd_bind_vector(L, &layer->k_norm, hp->head_dim, true, "blk.%d.attn_k_norm.weight", il);
    }
    return st;
}

const sd_arch_def sd_arch_qwen3 = {"qwen3", SD_ARCH_QWEN3, qwen3_hparams, qwen3_tensors, false, false};
