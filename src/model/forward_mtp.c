/* The qwen35 MTP head's forward (llama.cpp src/models/qwen35.cpp graph_mtp;
 * fact sheet §5.5), on a view of the target's MTP block:
 *
 *   c = eh_proj · [RMSNorm(Emb(x); enorm) ; RMSNorm(h; hnorm)]      (embedding first)
 *   c = c + gated_attention(RMSNorm(c; attn_norm))                   (layer_attn_gated.c)
 *   c = c + FFN(RMSNorm(c; post_attention_norm))                     (sd_layer_ffn)
 *   y = RMSNorm(c; shared_head_norm or output_norm)   -> the next chained step's h
 *   logits = head · y                                  (shared_head_head or output)
 *
 * Every step is row-wise or the cache's causal attention, so a row's bits do
 * not depend on which rows run together. */
#include <stdlib.h>
#include <string.h>

#include "model/context.h"
#include "model/layers.h"
#include "numerics/ops.h"

sd_status sd_mtp_check(const sd_model *mtp, const sd_model *target, sd_err *err) {
    if ((mtp->hp.arch != SD_ARCH_QWEN35 && mtp->hp.arch != SD_ARCH_QWEN35MOE) || !mtp->nextn.present)
        return sd_err_set(err, SD_ERR_UNSUPPORTED, "no MTP block (architecture '%s', nextn_predict_layers %d)",
                          mtp->hp.arch_name, mtp->hp.n_nextn);
    if (mtp->hp.n_embd != target->hp.n_embd)
        return sd_err_set(err, SD_ERR_ARG, "MTP block of n_embd %d does not fit a target of n_embd %d",
                          mtp->hp.n_embd, target->hp.n_embd);
    return SD_OK;
}

sd_status sd_mtp_view_init(const sd_model *t, sd_model **out, sd_err *err) {
    *out = NULL;
    if ((t->hp.arch != SD_ARCH_QWEN35 && t->hp.arch != SD_ARCH_QWEN35MOE) || !t->nextn.present)
        return sd_err_set(err, SD_ERR_UNSUPPORTED, "the model has no MTP block (architecture '%s', nextn_predict_layers %d)",
                          t->hp.arch_name, t->hp.n_nextn);
    sd_model *v = calloc(1, sizeof *v);
    sd_layer *l = calloc(1, sizeof *l);
    if (!v || !l) {
        free(v), free(l);
        return sd_err_set(err, SD_ERR_NOMEM, "out of memory for the MTP view");
    }
    *l = t->nextn.layer; /* shallow: the matrices stay the target's */
    v->hp = t->hp;
    v->hp.arch = SD_ARCH_QWEN35_MTP;
    v->hp.n_layer = v->hp.n_layer_all = 1;
    v->hp.n_nextn = v->hp.n_layer_gdn = 0;
    v->hp.mtp_only = false;
    v->tok = t->tok;
    v->tok_embd = t->nextn.embd.data ? t->nextn.embd : t->tok_embd;
    v->output = t->nextn.head.data ? t->nextn.head : t->output;
    v->output_norm = t->nextn.head_norm;
    v->rope_freqs = t->rope_freqs;
    v->nextn = t->nextn;
    v->layers = l;
    *out = v;
    return SD_OK;
}

void sd_mtp_view_free(sd_model *v) {
    if (!v) return;
    free(v->layers);
    free(v);
}

/* One chunk of S <= n_batch pairs; the caller checked ids and room. */
static void mtp_chunk(sd_context *c, const sd_model *target, const int32_t *tokens, const float *h, int S, float *y,
                      int r0, float *logits) {
    (void)target; /* the view's weights are the target's already */
    const sd_model *m = c->m;
    const sd_hparams *hp = &m->hp;
    const sd_nextn *x = &m->nextn;
    const sd_layer *L = &m->layers[0];
    const int64_t E = hp->n_embd;
    for (int s = 0; s < S; s++) {
        float *in = c->sc.xb + s * 2 * E;
        sd_matrix_get_row(&m->tok_embd, tokens[s], in);
        sd_rmsnorm(in, in, x->enorm, E, hp->rms_eps);
        sd_rmsnorm(in + E, h + s * E, x->hnorm, E, hp->rms_eps);
    }
    sd_matmul(&x->eh_proj, c->sc.xb, S, c->sc.x, c->n_threads);
    for (int s = 0; s < S; s++) sd_rmsnorm(c->sc.xb + s * E, c->sc.x + s * E, L->attn_norm, E, hp->rms_eps);
    sd_layer_mixer(c, L, S); /* kind SD_LAYER_ATTN_GATED */
    sd_add(c->sc.x, c->sc.xb, S * E);
    sd_layer_ffn(c, L, S);
    for (int s = 0; s < S; s++) sd_rmsnorm(c->sc.x + s * E, c->sc.x + s * E, m->output_norm, E, hp->rms_eps);
    if (y) memcpy(y, c->sc.x, (size_t)S * (size_t)E * sizeof *y);
    if (r0 < S) sd_matmul(&m->output, c->sc.x + r0 * E, S - r0, logits, c->n_threads);
    c->kv.len += S;
}

sd_status sd_mtp_forward(sd_context *c, const int32_t *tokens, const float *h, int32_t S, float *y, int32_t n_tail,
                         float *logits, sd_err *err) {
    const sd_hparams *hp = &c->m->hp;
    if (hp->arch != SD_ARCH_QWEN35_MTP) return sd_err_set(err, SD_ERR_ARG, "sd_mtp_forward: not an MTP view");
    return sd_fwd_head(c, mtp_chunk, "MTP head", NULL, tokens, h, S, y, n_tail, logits, hp->n_vocab, err);
}
