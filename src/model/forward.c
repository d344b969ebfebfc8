/* The forward pass of a decoder-only transformer (llama, qwen2, qwen3, and
 * the hybrid qwen35 whose mixers live in layer_attn_gated.c / layer_gdn.c),
 * over a batch of S tokens at positions len..len+S-1, returning logits for
 * every position. Shape of one layer (llama.cpp src/models/llama.cpp,
 * qwen2.cpp, qwen3.cpp):
 *
 *   h   = x + Wo · attention(rope(norm_q(Wq·n + bq)), rope(norm_k(Wk·n + bk)), Wv·n + bv),
 *         n = rmsnorm(x) * attn_norm
 *   out = h + Wdown · (silu(Wgate·m) * Wup·m),  m = rmsnorm(h) * ffn_norm
 *
 * Batch invariance (ARCHITECTURE.md §5): every step computes each row (position)
 * with a reduction order that does not depend on S or on the thread count —
 * sd_matmul by contract, rmsnorm/rope/softmax per row, and attention per
 * (position, head) over keys 0..pos in position order (several queries share
 * each key load, but each one's arithmetic is that of a lone query). So the logits of a
 * position are bitwise the same whether it ran alone or inside a verify batch. */
#include <math.h>
#include <omp.h>
#include <string.h>

#include "model/layers.h"
#include "model/moe.h"
#include "numerics/ops.h"

static void add_bias(float *x, const float *b, int S, int64_t n) {
    if (!b) return;
    for (int s = 0; s < S; s++) sd_add(x + s * n, b, n);
}

void sd_fwd_rmsnorm_rows(float *out, const float *x, const float *w, int S, int64_t n, float eps) {
    for (int s = 0; s < S; s++) sd_rmsnorm(out + s * n, x + s * n, w, n, eps);
}

/* Per head of every row: optional qwen3 RMSNorm over the head, then RoPE
 * (with the Llama 3.1 frequency factors when the model has them). The sines
 * of a position are computed once for all its heads, ROPE_PAIRS pairs at a time. */
#define ROPE_PAIRS 256
void sd_fwd_norm_rope_heads(const sd_model *m, float *x, const float *norm_w, int S, int n_heads, int32_t pos0,
                            const int32_t *depth) {
    const sd_hparams *hp = &m->hp;
    const int hd = hp->head_dim, half = hp->n_rot / 2;
    float cs[2 * ROPE_PAIRS];
    for (int s = 0; s < S; s++) {
        float *row = x + (int64_t)s * n_heads * hd;
        if (norm_w)
            for (int h = 0; h < n_heads; h++) sd_rmsnorm(row + (int64_t)h * hd, row + (int64_t)h * hd, norm_w, hd, hp->rms_eps);
        for (int i0 = 0; i0 < half; i0 += ROPE_PAIRS) {
            int i1 = half - i0 < ROPE_PAIRS ? half : i0 + ROPE_PAIRS;
            sd_rope_cossin(cs, i0, i1, hp->n_rot, pos0 + (depth ? depth[s] : s), hp->rope_base, hp->rope_freq_scale, m->rope_freqs);
            for (int h = 0; h < n_heads; h++) sd_rope_apply(row + (int64_t)h * hd, cs, i0, i1, hp->n_rot, hp->rope_neox);
        }
    }
}

/* Attention of the queries j0..j1-1 of KV head kvh, numbered position-major
 * (j = s * group + g: position pos0 + s, query head kvh * group + g), so the
 * queries that see a given new key row are a suffix j >= s * group. Each key
 * and value row is read once for all of them (sd_*_rows_mq); each query still
 * gets exactly the operations of a lone query: scores over keys 0..pos0+s,
 * softmax, then the value rows in position order. att: SD_ATT_QUERIES x n_ctx. */
static void attend_queries(sd_context *c, int il, int32_t pos0, int kvh, int j0, int j1, const float *q,
                           float *out, float *att) {
    const sd_hparams *hp = &c->m->hp;
    const int hd = hp->head_dim, group = hp->n_head / hp->n_head_kv, nq = j1 - j0;
    const int64_t q_dim = (int64_t)hp->n_head * hd;
    const float scale = 1.0f / sqrtf((float)hd);
    const int s_first = j0 / group, s_last = (j1 - 1) / group;
    float *sc[SD_ATT_QUERIES], *oh[SD_ATT_QUERIES];
    const float *qh[SD_ATT_QUERIES], *w[SD_ATT_QUERIES];
    for (int k = 0; k < nq; k++) {
        const int s = (j0 + k) / group, h = kvh * group + (j0 + k) % group;
        qh[k] = q + s * q_dim + (int64_t)h * hd;
        oh[k] = out + s * q_dim + (int64_t)h * hd;
        sc[k] = att + (int64_t)k * c->n_ctx;
    }
    /* Scores of every query over the keys of the last one: the few past a
     * query's own position are computed but never read. */
    const uint16_t *keys = sd_kv_cache_k(&c->kv, il, kvh), *vals = sd_kv_cache_v(&c->kv, il, kvh);
    sd_dot_f16_rows_mq(sc, qh, nq, keys, hd, pos0 + s_last + 1, hd);
    int64_t n_kv[SD_ATT_QUERIES];
    for (int k = 0; k < nq; k++) {
        n_kv[k] = pos0 + (j0 + k) / group + 1;
        memset(oh[k], 0, (size_t)hd * sizeof *oh[k]);
    }
    sd_softmax_mq(sc, n_kv, nq, scale);
    /* Values: the rows every query sees, then the causal tail row by row,
     * each to the queries at or after its position. */
    sd_axpy_f16_rows_mq(oh, (const float *const *)sc, nq, vals, hd, pos0 + s_first + 1, hd);
    for (int t = s_first + 1; t <= s_last; t++) {
        const int k0 = t * group - j0;
        for (int k = k0; k < nq; k++) w[k] = sc[k] + pos0 + t;
        sd_axpy_f16_rows_mq(oh + k0, w + k0, nq - k0, vals + (int64_t)(pos0 + t) * hd, hd, 1, hd);
    }
}

/* Causal attention of S query rows at positions pos0..pos0+S-1 against the
 * KV cache of layer il (which already holds those positions). Work items are
 * a KV head x a run of at most SD_ATT_QUERIES of its group's S * group
 * queries (split evenly); one thread computes an item start to finish, and
 * no query's result depends on which item or thread it falls in, so the
 * output is the same for every S and thread count. GQA: query head h reads
 * KV head h / (n_head / n_head_kv). */
void sd_fwd_attention(sd_context *c, int il, int32_t pos0, int S, const float *q, float *out) {
    const sd_hparams *hp = &c->m->hp;
    const int nq_kv = S * (hp->n_head / hp->n_head_kv); /* queries per KV head */
    const int n_items = (nq_kv + SD_ATT_QUERIES - 1) / SD_ATT_QUERIES;
    const int per_item = (nq_kv + n_items - 1) / n_items;
#pragma omp parallel for num_threads(c->n_threads) schedule(static)
    for (int it = 0; it < hp->n_head_kv * n_items; it++) {
        const int kvh = it / n_items, j0 = (it % n_items) * per_item;
        const int j1 = j0 + per_item < nq_kv ? j0 + per_item : nq_kv;
        float *att = c->sc.att + (int64_t)omp_get_thread_num() * SD_ATT_QUERIES * c->n_ctx;
        if (j0 < j1) attend_queries(c, il, pos0, kvh, j0, j1, q, out, att);
    }
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

void sd_fwd_kv_store(sd_context *c, int slot, int32_t pos0, int S) {
    const int64_t hd = c->m->hp.head_dim, row = (int64_t)pos0 * hd, kv_dim = c->kv.kv_dim;
    for (int h = 0; h < c->m->hp.n_head_kv; h++) {
        uint16_t *kc = sd_kv_cache_k(&c->kv, slot, h) + row, *vc = sd_kv_cache_v(&c->kv, slot, h) + row;
        for (int s = 0; s < S; s++) { /* rounded to f16 once; every query, its own included, reads these */
            sd_fp32_to_fp16_row(kc + s * hd, c->sc.k + s * kv_dim + h * hd, hd);
            sd_fp32_to_fp16_row(vc + s * hd, c->sc.v + s * kv_dim + h * hd, hd);
        }
    }
}

void sd_layer_attn_in(sd_context *c, const sd_layer *L, int S) {
    const sd_hparams *hp = &c->m->hp;
    const int64_t q_dim = (int64_t)hp->n_head * hp->head_dim;
    const sd_matrix *qkv[3] = {&L->wq, &L->wk, &L->wv};
    float *qkv_out[3] = {c->sc.q, c->sc.k, c->sc.v};
    sd_matmul_multi(qkv, 3, c->sc.xb, S, qkv_out, c->n_threads); /* one activation quantization, one thread wake-up */
    if (hp->qkv_bias) {
        add_bias(c->sc.q, L->bq, S, q_dim);
        add_bias(c->sc.k, L->bk, S, c->kv.kv_dim);
        add_bias(c->sc.v, L->bv, S, c->kv.kv_dim);
    }
}

void sd_layer_attn_seq(sd_context *c, const sd_layer *L, int S) {
    const sd_model *m = c->m;
    const sd_hparams *hp = &m->hp;
    const int32_t pos0 = c->kv.len;
    const int32_t *depth = c->kv.tree.active ? c->kv.tree.depth : NULL; /* a token tree (forward_tree.c) */
    sd_fwd_norm_rope_heads(m, c->sc.q, hp->qk_norm ? L->q_norm : NULL, S, hp->n_head, pos0, depth);
    sd_fwd_norm_rope_heads(m, c->sc.k, hp->qk_norm ? L->k_norm : NULL, S, hp->n_head_kv, pos0, depth);
    sd_fwd_kv_store(c, L->slot, pos0, S);
    if (depth)
        sd_fwd_attention_tree(c, L->slot, pos0, S, c->sc.q, c->sc.att_out);
    else
        sd_fwd_attention(c, L->slot, pos0, S, c->sc.q, c->sc.att_out);
}

void sd_layer_attn_out(sd_context *c, const sd_layer *L, int S) {
    sd_matmul(&L->wo, c->sc.att_out, S, c->sc.xb, c->n_threads);
}

void sd_layer_attn(sd_context *c, const sd_layer *L, int S) {
    sd_layer_attn_in(c, L, S);
    sd_layer_attn_seq(c, L, S);
    sd_layer_attn_out(c, L, S);
}

void sd_layer_ffn(sd_context *c, const sd_layer *L, int S) {
    if (L->moe) { /* routed experts (layer_moe.c) */
        sd_layer_moe(c, L, S);
        return;
    }
    const sd_hparams *hp = &c->m->hp;
    const int64_t n_embd = hp->n_embd, n_ff = hp->n_ff;
    sd_fwd_rmsnorm_rows(c->sc.xb, c->sc.x, L->ffn_norm, S, n_embd, hp->rms_eps);
    const sd_matrix *gate_up[2] = {&L->w_gate, &L->w_up};
    float *gate_up_out[2] = {c->sc.hb, c->sc.hb2};
    sd_matmul_multi(gate_up, 2, c->sc.xb, S, gate_up_out, c->n_threads);
    sd_swiglu(c->sc.hb, c->sc.hb, c->sc.hb2, S * n_ff);
    sd_matmul(&L->w_down, c->sc.hb, S, c->sc.xb, c->n_threads);
    sd_add(c->sc.x, c->sc.xb, S * n_embd);
}

/* One batch of S <= n_batch tokens; the caller checked ids and room. Logits
 * of rows r0..r1-1 only go to logits[r1 - r0][n_vocab] (r0 = r1: none). */
void sd_fwd_batch(sd_context *c, const int32_t *tokens, int S, int r0, int r1, float *logits) {
    const sd_model *m = c->m;
    const sd_hparams *hp = &m->hp;
    const int64_t n_embd = hp->n_embd;
    const int32_t pos0 = c->kv.len;

    for (int s = 0; s < S; s++) sd_matrix_get_row(&m->tok_embd, tokens[s], c->sc.x + s * n_embd);

    for (int il = 0; il < hp->n_layer; il++) {
        const sd_layer *L = &m->layers[il];
        if (c->hid.rows) sd_fwd_hidden_store(c, il, S, pos0);

        /* mixer block: attention or Gated DeltaNet, output rows in xb */
        sd_fwd_rmsnorm_rows(c->sc.xb, c->sc.x, L->attn_norm, S, n_embd, hp->rms_eps);
        if (L->kind == SD_LAYER_GDN) sd_layer_gdn(c, L, S);
        else if (L->kind == SD_LAYER_ATTN_GATED) sd_layer_attn_gated(c, L, S);
        else sd_layer_attn(c, L, S);
        sd_add(c->sc.x, c->sc.xb, S * n_embd);

        sd_layer_ffn(c, L, S);
    }

    if (c->hid.rows) sd_fwd_hidden_store(c, hp->n_layer, S, pos0);
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
