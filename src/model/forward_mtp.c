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

sd_status sd_mtp_view_init(const sd_model *t, sd_model **out, sd_err *err) {
    *out = NULL;
    if (t->hp.arch != SD_ARCH_QWEN35 || !t->nextn.present)
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
static void mtp_chunk(sd_context *c, const int32_t *tokens, const float *h, int S, float *y, int r0, float *logits) {
    const sd_model *m = c->m;
    const sd_hparams *hp = &m->hp;
    const sd_nextn *x = &m->nextn;
    const sd_layer *L = &m->layers[0];
    const int64_t E = hp->n_embd;
    for (int s = 0; s < S; s++) {
        float *in = c->xb + s * 2 * E;
        sd_matrix_get_row(&m->tok_embd, tokens[s], in);
        sd_rmsnorm(in, in, x->enorm, E, hp->rms_eps);
        sd_rmsnorm(in + E, h + s * E, x->hnorm, E, hp->rms_eps);
    }
    sd_matmul(&x->eh_proj, c->xb, S, c->x, c->n_threads);
    for (int s = 0; s < S; s++) sd_rmsnorm(c->xb + s * E, c->x + s * E, L->attn_norm, E, hp->rms_eps);
    sd_layer_attn_gated(c, L, S);
    sd_add(c->x, c->xb, S * E);
    sd_layer_ffn(c, L, S);
    for (int s = 0; s < S; s++) sd_rmsnorm(c->x + s * E, c->x + s * E, m->output_norm, E, hp->rms_eps);
    if (y) memcpy(y, c->x, (size_t)S * (size_t)E * sizeof *y);
    if (r0 < S) sd_matmul(&m->output, c->x + r0 * E, S - r0, logits, c->n_threads);
    c->len += S;
}

sd_status sd_mtp_forward(sd_context *c, const int32_t *tokens, const float *h, int32_t S, float *y, int32_t n_tail,
                         float *logits, sd_err *err) {
    const sd_hparams *hp = &c->m->hp;
    if (hp->arch != SD_ARCH_QWEN35_MTP) return sd_err_set(err, SD_ERR_ARG, "sd_mtp_forward: not an MTP view");
    if (S < 0 || n_tail < 0 || n_tail > S || (S > 0 && (!tokens || !h)) || (n_tail > 0 && !logits))
        return sd_err_set(err, SD_ERR_ARG, "mtp forward: bad batch (S = %d, %d logits rows)", S, n_tail);
    if (S > c->n_ctx - c->len)
        return sd_err_set(err, SD_ERR_CONTEXT, "MTP head context full: %d + %d > n_ctx %d", c->len, S, c->n_ctx);
    for (int32_t s = 0; s < S; s++)
        if (tokens[s] < 0 || tokens[s] >= hp->n_vocab)
            return sd_err_set(err, SD_ERR_ARG, "token id %d out of range [0, %d)", tokens[s], hp->n_vocab);
    const int64_t E = hp->n_embd, first = S - n_tail;
    for (int32_t done = 0; done < S;) {
        int32_t n = S - done < c->n_batch ? S - done : c->n_batch;
        int32_t r0 = first > done ? (first - done < n ? (int32_t)(first - done) : n) : 0;
        float *lg = r0 < n ? logits + (done + r0 - first) * (int64_t)hp->n_vocab : NULL;
        mtp_chunk(c, tokens + done, h + done * E, n, y ? y + done * E : NULL, r0, lg);
        done += n;
    }
    c->head_S = 0;
    return SD_OK;
}
