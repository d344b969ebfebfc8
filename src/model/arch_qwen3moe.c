/* qwen3moe (Qwen3-30B-A3B, Qwen3-235B-A22B): llama.cpp src/models/qwen3moe.cpp;
 * docs/MOE.md. The qwen3 layer (Q/K RMSNorm per head, NEOX RoPE, no biases)
 * with every FFN replaced by routed experts: softmax router over E experts,
 * top k, weights renormalised over the k, no shared expert (moe.h). */
#include "model/arch.h"
#include "model/moe.h"

static sd_status qwen3moe_hparams(sd_loader *L, sd_hparams *hp) {
    hp->rope_neox = true;
    hp->qkv_bias = false;
    hp->qk_norm = true;
    return sd_moe_hparams(L, hp, false);
}

static sd_status qwen3moe_tensors(sd_loader *L, sd_model *m) {
    const sd_hparams *hp = &m->hp;
    sd_status st = sd_bind_embeddings_and_output(L, m);
    for (int il = 0; st == SD_OK && il < hp->n_layer; il++) {
        sd_layer *layer = &m->layers[il];
        st = sd_bind_attn_block(L, layer, il);
        if (st == SD_OK)
            st = sd_bind_vector(L, &layer->q_norm, hp->head_dim, true, "blk.%d.attn_q_norm.weight", il);
        if (st == SD_OK)
            st = sd_bind_vector(L, &layer->k_norm, hp->head_dim, true, "blk.%d.attn_k_norm.weight", il);
        if (st == SD_OK) st = sd_bind_moe_ffn(L, &layer->moe, il, il);
    }
    return st;
}

const sd_arch_def sd_arch_qwen3moe = {"qwen3moe", SD_ARCH_QWEN3MOE, qwen3moe_hparams, qwen3moe_tensors, false, true};
