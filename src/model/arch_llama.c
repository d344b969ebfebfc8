/* llama (Llama 2 / Llama 3): llama.cpp src/models/llama.cpp.
 * RoPE on adjacent pairs (2i, 2i+1), LLAMA_ROPE_TYPE_NORM: the converter
 * (convert_hf_to_gguf.py LlamaModel.permute) already reordered the rows of
 * attn_q/attn_k from Hugging Face's half-split layout, so no permutation
 * happens here. Q/K/V biases are optional (some fine-tunes carry them).
 * Llama 3.1+ files carry rope_freqs.weight {n_rot/2}: theta_i is divided by
 * factor i (llama.cpp get_rope_factors / ggml_rope_ext freq_factors). */
#include "model/arch.h"

static sd_status llama_hparams(sd_loader *L, sd_hparams *hp) {
    (void)L;
    hp->rope_neox = false;
    hp->qkv_bias = false;  /* set by llama_tensors if the file has them */
    hp->qk_norm = false;
    return SD_OK;
}

static sd_status llama_tensors(sd_loader *L, sd_model *m) {
    const sd_hparams *hp = &m->hp;
    sd_status st = sd_bind_embeddings_and_output(L, m);
    if (st == SD_OK) st = sd_bind_vector(L, &m->rope_freqs, hp->n_rot / 2, false, "rope_freqs.weight", 0);
    const int64_t q_dim = (int64_t)hp->n_head * hp->head_dim;
    const int64_t kv_dim = (int64_t)hp->n_head_kv * hp->head_dim;
    for (int il = 0; st == SD_OK && il < hp->n_layer; il++) {
        sd_layer *layer = &m->layers[il];
        st = sd_bind_dense_layer(L, layer, il);
        if (st == SD_OK) st = sd_bind_vector(L, &layer->bq, q_dim, false, "blk.%d.attn_q.bias", il);
        if (st == SD_OK) st = sd_bind_vector(L, &layer->bk, kv_dim, false, "blk.%d.attn_k.bias", il);
        if (st == SD_OK) st = sd_bind_vector(L, &layer->bv, kv_dim, false, "blk.%d.attn_v.bias", il);
    }
    for (int il = 0; st == SD_OK && il < hp->n_layer; il++) {
        const sd_layer *layer = &m->layers[il];
        if (layer->bq || layer->bk || layer->bv) m->hp.qkv_bias = true;
    }
    return st;
}

const sd_arch_def sd_arch_llama = {"llama", SD_ARCH_LLAMA, llama_hparams, llama_tensors, false, false};
