/* The EAGLE-3 head's forward (llama.cpp src/models/eagle3.cpp, the encoder
 * and decoder graphs):
 *
 *   encoder  g = fc(features)               [RMSNorm(features; enc.output_norm) first if norm_before_fc]
 *   decoder  e = RMSNorm(Emb(t); attn_norm),  ĝ = RMSNorm(g; attn_norm_2)
 *            h = (norm_before_residual ? ĝ : g) + Wo · attention(rope(Wq [e;ĝ]), rope(Wk [e;ĝ]), Wv [e;ĝ])
 *            y = h + Wdown · (silu(Wgate·m) * Wup·m),  m = RMSNorm(h; ffn_norm)
 *            logits = W_out · RMSNorm(y; output_norm)    (y pre-norm is the next step's g)
 *
 * The attention and FFN halves are the dense forward's (layers.h sd_layer_attn_*,
 * sd_layer_ffn: NORM RoPE, no Q/K norm, the KV cache of the head's context);
 * only the input differs: [e ; ĝ], 2 * n_embd wide, embedding first. */
#include <string.h>

#include "model/context.h"
#include "model/layers.h"
#include "numerics/ops.h"

sd_status sd_eagle3_check(const sd_model *head, const sd_model *target, sd_err *err) {
    const sd_hparams *h = &head->hp, *t = &target->hp;
    if (h->arch != SD_ARCH_EAGLE3) return sd_err_set(err, SD_ERR_ARG, "not an EAGLE-3 head (architecture '%s')", h->arch_name);
    if (t->arch == SD_ARCH_EAGLE3) return sd_err_set(err, SD_ERR_ARG, "the target is itself an EAGLE-3 head");
    if (h->n_embd_tgt != t->n_embd)
        return sd_err_set(err, SD_ERR_ARG, "EAGLE-3 head for target_hidden_size %d, the target's n_embd is %d",
                          h->n_embd_tgt, t->n_embd);
    for (int i = 0; i < 3; i++)
        if (h->target_layers[i] > t->n_layer)
            return sd_err_set(err, SD_ERR_ARG, "EAGLE-3 target_layers[%d] = %d, the target has %d layers", i,
                              h->target_layers[i], t->n_layer);
    if (h->n_vocab != t->n_vocab)
        return sd_err_set(err, SD_ERR_ARG, "EAGLE-3 head vocabulary %d tokens, the target's %d", h->n_vocab,
                          t->n_vocab);
    if ((!head->tok_embd.data || !head->output.data) && h->n_embd != t->n_embd)
        return sd_err_set(err, SD_ERR_ARG, "EAGLE-3 head of n_embd %d borrows the target's embeddings or head (n_embd %d)",
                          h->n_embd, t->n_embd);
    return SD_OK;
}

int32_t sd_eagle3_token(const sd_model *head, int32_t d) { return head->d2t ? head->d2t[d] : d; }

void sd_eagle3_encode(sd_context *c, float *features, int32_t S, float *g) {
    const sd_model *m = c->m;
    const int64_t n = 3 * (int64_t)m->hp.n_embd_tgt;
    if (m->enc_norm)
        for (int32_t s = 0; s < S; s++) sd_rmsnorm(features + s * n, features + s * n, m->enc_norm, n, m->hp.rms_eps);
    sd_matmul(&m->fc, features, S, g, c->n_threads);
}

/* One chunk of S <= n_batch pairs; the caller checked ids and room. Logits of
 * rows r0..S-1 go to logits[S - r0][n_draft_vocab]. */
static void decode_chunk(sd_context *c, const sd_model *target, const int32_t *tokens, const float *g, int S,
                         float *y, int r0, float *logits) {
    const sd_model *m = c->m;
    const sd_hparams *hp = &m->hp;
    const sd_layer *L = &m->layers[0];
    const int64_t E = hp->n_embd;
    const sd_matrix *emb = m->tok_embd.data ? &m->tok_embd : &target->tok_embd;
    const sd_matrix *out = m->output.data ? &m->output : &target->output;
    for (int s = 0; s < S; s++) {
        float *in = c->sc.xb + s * 2 * E, *res = c->sc.x + s * E;
        sd_matrix_get_row(emb, tokens[s], in);
        sd_rmsnorm(in, in, L->attn_norm, E, hp->rms_eps);
        sd_rmsnorm(in + E, g + s * E, L->attn_norm_2, E, hp->rms_eps);
        memcpy(res, hp->norm_before_residual ? in + E : g + s * E, (size_t)E * sizeof *res);
    }
    sd_layer_mixer(c, L, S); /* kind SD_LAYER_ATTN */
    sd_add(c->sc.x, c->sc.xb, S * E);
    sd_layer_ffn(c, L, S);
    if (y) memcpy(y, c->sc.x, (size_t)S * (size_t)E * sizeof *y);
    if (r0 < S) {
        for (int s = r0; s < S; s++) sd_rmsnorm(c->sc.xb + (s - r0) * E, c->sc.x + s * E, m->output_norm, E, hp->rms_eps);
        sd_matmul(out, c->sc.xb, S - r0, logits, c->n_threads);
    }
    c->kv.len += S;
}

sd_status sd_eagle3_forward(sd_context *c, const sd_model *target, const int32_t *tokens, const float *g,
                            int32_t S, float *y, int32_t n_tail, float *logits, sd_err *err) {
    const sd_hparams *hp = &c->m->hp;
    if (hp->arch != SD_ARCH_EAGLE3) return sd_err_set(err, SD_ERR_ARG, "sd_eagle3_forward: not an EAGLE-3 head");
    return sd_fwd_head(c, decode_chunk, "EAGLE-3 head", target, tokens, g, S, y, n_tail, logits, hp->n_draft_vocab,
                       err);
}
