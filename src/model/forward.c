/* The forward pass of a decoder-only transformer (llama, qwen2, qwen3, and
 * the hybrid qwen35), over a batch of S tokens at positions len..len+S-1,
 * returning logits for every position. Shape of one layer (llama.cpp
 * src/models/llama.cpp, qwen2.cpp, qwen3.cpp):
 *
 *   h   = x + mixer(n),  n = rmsnorm(x) * attn_norm
 *   out = h + ffn(m),    m = rmsnorm(h) * ffn_norm
 *
 * where the mixer is the layer kind's (the table below: layer_attn.c,
 * layer_attn_gated.c, layer_gdn.c) and the FFN is layer_ffn.c's (or
 * layer_moe.c's routed experts).
 *
 * Batch invariance (ARCHITECTURE.md §5): every step computes each row (position)
 * with a reduction order that does not depend on S or on the thread count —
 * sd_matmul by contract, rmsnorm/rope/softmax per row, and attention per
 * (position, head) over keys 0..pos in position order (layer_attn.c). So the
 * logits of a position are bitwise the same whether it ran alone or inside a
 * verify batch. */
#include <string.h>

#include "model/layers.h"
#include "numerics/ops.h"

void sd_fwd_rmsnorm_rows(float *out, const float *x, const float *w, int S, int64_t n, float eps) {
    for (int s = 0; s < S; s++) sd_rmsnorm(out + s * n, x + s * n, w, n, eps);
}

/* The hidden-state hook (model.h sd_context_request_hidden): the S rows
 * entering layer il (il == n_layer: after output_norm, the same per-row norm
 * output_head applies) go to the rows of positions pos0..pos0+S-1, in the
 * slot of every requested id equal to il. Copies only: the forward's own
 * arithmetic is untouched. */
void sd_fwd_hidden_store(sd_context *c, int il, int S, int32_t pos0) {
    const sd_model *m = c->m;
    const int64_t n_embd = m->hp.n_embd;
    for (int i = 0; i < c->hid.n; i++) {
        if (c->hid.ids[i] != il) continue;
        for (int s = 0; s < S; s++) {
            float *dst = sd_hidden_hook_row(&c->hid, pos0 + s) + i * n_embd;
            if (il < m->hp.n_layer)
                memcpy(dst, c->sc.x + s * n_embd, (size_t)n_embd * sizeof *dst);
            else
                sd_rmsnorm(dst, c->sc.x + s * n_embd, m->output_norm, n_embd, m->hp.rms_eps);
        }
    }
}

/* The output head on rows [r0, r1) of the batch whose final residual rows
 * are in c->sc.x: logits[r1 - r0][n_vocab]. Row-wise norm and matmul, so the
 * bits do not depend on which rows run together. */
void sd_fwd_output_head(sd_context *c, int r0, int r1, float *logits) {
    const sd_model *m = c->m;
    const int64_t n_embd = m->hp.n_embd;
    if (r0 >= r1) return;
    sd_fwd_rmsnorm_rows(c->sc.xb, c->sc.x + r0 * n_embd, m->output_norm, r1 - r0, n_embd, m->hp.rms_eps);
    sd_matmul(&m->output, c->sc.xb, r1 - r0, logits, c->n_threads);
}

/* The layer kinds (model.h sd_layer_kind), each a mixer in three steps
 * (layers.h). The single, ragged and head forwards all dispatch here, so a
 * new kind is its sd_layer_kind, one row here and one layer file. */
static const sd_mixer mixers[] = {
    [SD_LAYER_ATTN] = {sd_layer_attn_in, sd_layer_attn_seq, sd_layer_attn_out},
    [SD_LAYER_ATTN_GATED] = {sd_layer_attn_gated_in, sd_layer_attn_gated_seq, sd_layer_attn_gated_out},
    [SD_LAYER_GDN] = {sd_gdn_project, sd_gdn_recur, sd_gdn_out},
};
_Static_assert(sizeof mixers / sizeof *mixers == SD_LAYER_GDN + 1, "one mixer per sd_layer_kind");

const sd_mixer *sd_mixer_of(const sd_layer *L) { return &mixers[L->kind]; }

void sd_layer_mixer(sd_context *c, const sd_layer *L, int S) {
    const sd_mixer *mx = sd_mixer_of(L);
    mx->in(c, L, S);
    mx->seq(c, L, S);
    mx->out(c, L, S);
}

void sd_fwd_layers(sd_context *rows, int R, sd_context *seqs, const int *S, int n_seq) {
    const sd_hparams *hp = &rows->m->hp;
    const int64_t n_embd = hp->n_embd;
    for (int il = 0; il < hp->n_layer; il++) {
        const sd_layer *L = &rows->m->layers[il];
        const sd_mixer *mx = sd_mixer_of(L);
        for (int i = 0; i < n_seq; i++)
            if (seqs[i].hid.rows) sd_fwd_hidden_store(&seqs[i], il, S[i], seqs[i].kv.len);
        /* mixer block: its output rows in xb */
        sd_fwd_rmsnorm_rows(rows->sc.xb, rows->sc.x, L->attn_norm, R, n_embd, hp->rms_eps);
        mx->in(rows, L, R);
        for (int i = 0; i < n_seq; i++) mx->seq(&seqs[i], L, S[i]);
        mx->out(rows, L, R);
        sd_add(rows->sc.x, rows->sc.xb, R * n_embd);

        sd_layer_ffn(rows, L, R);
    }
    for (int i = 0; i < n_seq; i++)
        if (seqs[i].hid.rows) sd_fwd_hidden_store(&seqs[i], hp->n_layer, S[i], seqs[i].kv.len);
}

/* One batch of S <= n_batch tokens; the caller checked ids and room. Logits
 * of rows r0..r1-1 only go to logits[r1 - r0][n_vocab] (r0 = r1: none). */
void sd_fwd_batch(sd_context *c, const int32_t *tokens, int S, int r0, int r1, float *logits) {
    const sd_model *m = c->m;
    const int64_t n_embd = m->hp.n_embd;
    const int32_t pos0 = c->kv.len;

    for (int s = 0; s < S; s++) sd_matrix_get_row(&m->tok_embd, tokens[s], c->sc.x + s * n_embd);
    sd_fwd_layers(c, S, c, &S, 1); /* one sequence: its rows are the batch */
    /* The output head is the largest matrix (n_vocab rows): rows nobody reads are skipped. */
    sd_fwd_output_head(c, r0, r1, logits);
    sd_recurrent_capture_commit(&c->rec, pos0, S); /* the ring now holds these steps (layer_gdn.c wrote them) */
    c->kv.len += S;
}

/* The checks every forward makes before touching the state. */
sd_status sd_fwd_check_batch(const sd_context *c, const int32_t *tokens, int32_t S, int32_t n_rows,
                             const float *logits, sd_err *err) {
    const int32_t n_vocab = c->m->hp.n_vocab;
    if (c->m->hp.arch == SD_ARCH_EAGLE3)
        return sd_err_set(err, SD_ERR_UNSUPPORTED, "an EAGLE-3 head is not a language model (sd_eagle3_forward runs it)");
    if (c->m->hp.arch == SD_ARCH_QWEN35_MTP)
        return sd_err_set(err, SD_ERR_UNSUPPORTED, "an MTP head is not a language model (sd_mtp_forward runs it)");
    if (c->m->hp.arch == SD_ARCH_DFLASH)
        return sd_err_set(err, SD_ERR_UNSUPPORTED, "a DFlash draft is not a language model (sd_dflash_block runs it)");
    if (S < 0 || n_rows < 0 || n_rows > S || (S > 0 && !tokens) || (n_rows > 0 && !logits))
        return sd_err_set(err, SD_ERR_ARG, "forward: bad batch (S = %d, %d logits rows)", S, n_rows);
    if (S > c->n_ctx - c->kv.len)
        return sd_err_set(err, SD_ERR_CONTEXT, "context full: %d + %d tokens > n_ctx %d", c->kv.len, S, c->n_ctx);
    for (int32_t s = 0; s < S; s++)
        if (tokens[s] < 0 || tokens[s] >= n_vocab)
            return sd_err_set(err, SD_ERR_ARG, "token id %d out of range [0, %d)", tokens[s], n_vocab);
    return SD_OK;
}

sd_status sd_forward(sd_context *c, const int32_t *tokens, int32_t S, float *logits, sd_err *err) {
    return sd_forward_tail(c, tokens, S, S, logits, err);
}

sd_status sd_forward_tail(sd_context *c, const int32_t *tokens, int32_t S, int32_t n_tail, float *logits,
                          sd_err *err) {
    const int32_t n_vocab = c->m->hp.n_vocab;
    sd_status st = sd_fwd_check_batch(c, tokens, S, n_tail, logits, err);
    if (st != SD_OK) return st;
    if (c->fwd_hook) return S > 0 ? c->fwd_hook(c->fwd_hook_user, c, tokens, S, n_tail, logits, err) : SD_OK;
    const int32_t first = S - n_tail; /* first row with logits */
    for (int32_t done = 0; done < S;) {
        int32_t n = S - done < c->n_batch ? S - done : c->n_batch;
        int32_t r0 = first > done ? (first - done < n ? first - done : n) : 0;
        float *out = r0 < n ? logits + (int64_t)(done + r0 - first) * n_vocab : NULL;
        sd_fwd_batch(c, tokens + done, n, r0, n, out);
        done += n;
    }
    sd_context_reset_pending(c);
    return SD_OK;
}

sd_status sd_fwd_head(sd_context *c, sd_head_chunk chunk, const char *what, const sd_model *target,
                      const int32_t *tokens, const float *g, int32_t S, float *y, int32_t n_tail, float *logits,
                      int32_t n_logits, sd_err *err) {
    const sd_hparams *hp = &c->m->hp;
    if (S < 0 || n_tail < 0 || n_tail > S || (S > 0 && (!tokens || !g)) || (n_tail > 0 && !logits))
        return sd_err_set(err, SD_ERR_ARG, "%s forward: bad batch (S = %d, %d logits rows)", what, S, n_tail);
    if (S > c->n_ctx - c->kv.len)
        return sd_err_set(err, SD_ERR_CONTEXT, "%s context full: %d + %d > n_ctx %d", what, c->kv.len, S, c->n_ctx);
    for (int32_t s = 0; s < S; s++)
        if (tokens[s] < 0 || tokens[s] >= hp->n_vocab)
            return sd_err_set(err, SD_ERR_ARG, "token id %d out of range [0, %d)", tokens[s], hp->n_vocab);
    const int64_t E = hp->n_embd, first = S - n_tail;
    for (int32_t done = 0; done < S;) { /* the split of sd_forward_tail */
        int32_t n = S - done < c->n_batch ? S - done : c->n_batch;
        int32_t r0 = first > done ? (first - done < n ? (int32_t)(first - done) : n) : 0;
        float *lg = r0 < n ? logits + (done + r0 - first) * (int64_t)n_logits : NULL;
        chunk(c, target, tokens + done, g + done * E, n, y ? y + done * E : NULL, r0, lg);
        done += n;
    }
    sd_context_reset_pending(c);
    return SD_OK;
}

sd_status sd_forward_head(sd_context *c, const int32_t *tokens, int32_t S, int32_t n_head, float *logits,
                          sd_err *err) {
    if (S < 1 || S > c->n_batch)
        return sd_err_set(err, SD_ERR_ARG, "forward_head: S = %d is not in 1..n_batch (%d)", S, c->n_batch);
    sd_status st = sd_fwd_check_batch(c, tokens, S, n_head, logits, err);
    if (st != SD_OK) return st;
    if (c->fwd_hook) return sd_err_set(err, SD_ERR_UNSUPPORTED, "forward_head: a batched sequence has no two-pass head");
    sd_context_reset_pending(c);
    sd_fwd_batch(c, tokens, S, 0, n_head, logits);
    c->sc.head_S = S; /* pending until the next forward, truncate or restore */
    c->sc.head_n = n_head;
    return SD_OK;
}

int32_t sd_model_head_pass_rows(const sd_model *m) { return sd_matmul_pass_rows(&m->output); }

sd_status sd_forward_more(sd_context *c, float *logits, sd_err *err) {
    if (c->sc.head_S == 0 || c->sc.head_n >= c->sc.head_S || !logits)
        return sd_err_set(err, SD_ERR_ARG, "forward_more: no logits rows are pending");
    sd_fwd_output_head(c, c->sc.head_n, c->sc.head_S, logits);
    c->sc.head_n = c->sc.head_S;
    return SD_OK;
}
