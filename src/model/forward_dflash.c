/* The DFlash drafter's forward (llama.cpp src/models/dflash.cpp, the decoder
 * graph's two modes: a batch of target features, and a block of tokens):
 *
 *   inject   g = RMSNorm(fc(features); enc.output_norm)
 *            per layer: K = rope(RMSNorm_head(Wk g; k_norm)), V = Wv g  -> KV cache at P
 *   block    x = Emb(tokens)  at positions len..len+B-1
 *            per layer: n = RMSNorm(x; attn_norm)
 *                       x += Wo · attention(rope(norm_q(Wq n)), rope(norm_k(Wk n)), Wv n)
 *                            over every injected position and EVERY block row (non-causal)
 *                       x += SwiGLU FFN (layers.h sd_layer_ffn)
 *            logits = W_out · RMSNorm(x; output_norm), rows 1..B-1
 *
 * The pieces are the dense forward's (layers.h: Q/K/V projection, per-head
 * norm + NEOX RoPE, f16 KV rows, the FFN). Non-causal attention is the
 * causal kernel run for each block row as a lone query at the block's last
 * position, which attends to keys 0..len+B-1 whatever the row's own RoPE
 * position: per row the same operations for any thread count. */
#include <string.h>

#include "model/context.h"
#include "model/layers.h"
#include "numerics/ops.h"

sd_status sd_dflash_check(const sd_model *head, const sd_model *target, sd_err *err) {
    const sd_hparams *h = &head->hp, *t = &target->hp;
    if (h->arch != SD_ARCH_DFLASH) return sd_err_set(err, SD_ERR_ARG, "not a DFlash draft (architecture '%s')", h->arch_name);
    if (t->arch == SD_ARCH_DFLASH || t->arch == SD_ARCH_EAGLE3 || t->mtp_only)
        return sd_err_set(err, SD_ERR_ARG, "the target (architecture '%s') is not a language model", t->arch_name);
    if (h->n_embd != t->n_embd)
        return sd_err_set(err, SD_ERR_ARG, "DFlash draft of n_embd %d reads target hidden rows of %d, the target's n_embd is %d",
                          h->n_embd, h->n_embd, t->n_embd);
    for (int i = 0; i < h->n_target_layers; i++)
        if (h->target_layers[i] > t->n_layer)
            return sd_err_set(err, SD_ERR_ARG, "DFlash target_layers[%d] = %d, the target has %d layers", i,
                              h->target_layers[i], t->n_layer);
    if (h->n_vocab != t->n_vocab)
        return sd_err_set(err, SD_ERR_ARG, "DFlash draft vocabulary %d tokens, the target's %d", h->n_vocab, t->n_vocab);
    return SD_OK;
}

sd_status sd_dflash_inject(sd_context *c, const float *features, int32_t S, sd_err *err) {
    const sd_model *m = c->m;
    const sd_hparams *hp = &m->hp;
    if (hp->arch != SD_ARCH_DFLASH) return sd_err_set(err, SD_ERR_ARG, "sd_dflash_inject: not a DFlash context");
    if (S < 0 || S > c->n_batch || (S > 0 && !features))
        return sd_err_set(err, SD_ERR_ARG, "DFlash inject: bad batch of %d rows (n_batch %d)", S, c->n_batch);
    if (S > c->n_ctx - c->kv.len)
        return sd_err_set(err, SD_ERR_CONTEXT, "DFlash context full: %d + %d > n_ctx %d", c->kv.len, S, c->n_ctx);
    if (S == 0) return SD_OK;
    const int64_t E = hp->n_embd;
    sd_matmul(&m->fc, features, S, c->sc.xb, c->n_threads);
    sd_fwd_rmsnorm_rows(c->sc.xb, c->sc.xb, m->enc_norm, S, E, hp->rms_eps);
    for (int il = 0; il < hp->n_layer; il++) {
        const sd_layer *L = &m->layers[il];
        const sd_matrix *kv[2] = {&L->wk, &L->wv};
        float *out[2] = {c->sc.k, c->sc.v};
        sd_matmul_multi(kv, 2, c->sc.xb, S, out, c->n_threads);
        sd_fwd_norm_rope_heads(m, c->sc.k, L->k_norm, S, hp->n_head_kv, c->kv.len, NULL);
        sd_fwd_kv_store(c, L->slot, c->kv.len, S);
    }
    c->kv.len += S;
    return SD_OK;
}

/* One layer over the block's B rows in c->sc.x (positions len..len+B-1). */
static void block_layer(sd_context *c, const sd_layer *L, int B) {
    const sd_model *m = c->m;
    const sd_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd, q_dim = (int64_t)hp->n_head * hp->head_dim;
    const int32_t len = c->kv.len;
    sd_fwd_rmsnorm_rows(c->sc.xb, c->sc.x, L->attn_norm, B, E, hp->rms_eps);
    sd_layer_attn_in(c, L, B);
    sd_fwd_norm_rope_heads(m, c->sc.q, L->q_norm, B, hp->n_head, len, NULL);
    sd_fwd_norm_rope_heads(m, c->sc.k, L->k_norm, B, hp->n_head_kv, len, NULL);
    sd_fwd_kv_store(c, L->slot, len, B);
    for (int s = 0; s < B; s++) /* every row sees the whole block */
        sd_fwd_attention(c, L->slot, len + B - 1, 1, c->sc.q + s * q_dim, c->sc.att_out + s * q_dim);
    sd_layer_attn_out(c, L, B);
    sd_add(c->sc.x, c->sc.xb, B * E);
    sd_layer_ffn(c, L, B);
}

sd_status sd_dflash_block(sd_context *c, const sd_model *target, const int32_t *tokens, int32_t B, float *logits,
                          sd_err *err) {
    const sd_model *m = c->m;
    const sd_hparams *hp = &m->hp;
    if (hp->arch != SD_ARCH_DFLASH) return sd_err_set(err, SD_ERR_ARG, "sd_dflash_block: not a DFlash context");
    if (B < 2 || B > hp->dflash_block || B > c->n_batch || !tokens || !logits)
        return sd_err_set(err, SD_ERR_ARG, "DFlash block of %d rows (2..%d, n_batch %d)", B, hp->dflash_block,
                          c->n_batch);
    if (B > c->n_ctx - c->kv.len)
        return sd_err_set(err, SD_ERR_CONTEXT, "DFlash context full: %d + %d > n_ctx %d", c->kv.len, B, c->n_ctx);
    for (int32_t s = 0; s < B; s++)
        if (tokens[s] < 0 || tokens[s] >= hp->n_vocab)
            return sd_err_set(err, SD_ERR_ARG, "token id %d out of range [0, %d)", tokens[s], hp->n_vocab);
    const sd_matrix *emb = m->tok_embd.data ? &m->tok_embd : &target->tok_embd;
    const sd_matrix *out = m->output.data ? &m->output : &target->output;
    const int64_t E = hp->n_embd;
    for (int s = 0; s < B; s++) sd_matrix_get_row(emb, tokens[s], c->sc.x + s * E);
    for (int il = 0; il < hp->n_layer; il++) block_layer(c, &m->layers[il], B);
    sd_fwd_rmsnorm_rows(c->sc.xb, c->sc.x + E, m->output_norm, B - 1, E, hp->rms_eps);
    sd_matmul(out, c->sc.xb, B - 1, logits, c->n_threads);
    return SD_OK; /* the block's K/V rows past len are scratch: the next forward overwrites them */
}
