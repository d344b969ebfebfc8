/* A ragged batch: the rows of several sequences (each an sd_context with its
 * own KV rows and recurrent state) in one forward. Every row-wise step — the
 * embeddings, the norms, every matmul (projections, FFN, MoE experts, the
 * output head) — runs once over all R rows in the group's scratch, so each
 * weight matrix is streamed once per step, not once per sequence; the steps
 * that read a sequence's memory (RoPE at its positions, writing its KV rows,
 * attention over its causal prefix, the GDN recurrence over its state) run
 * per sequence on a view of its context whose scratch rows are its own run of
 * the group's rows. Since every row-wise kernel computes a row from that row
 * alone in a fixed order (numerics/matmul.h, ops.h) and the per-sequence
 * steps are the single-sequence code, a sequence's bits do not depend on
 * what else is in the batch (docs/BATCHING.md). */
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "model/context.h"
#include "model/layers.h"
#include "numerics/ops.h"
#include "numerics/pool.h"

struct sd_ctx_group {
    sd_context lead;  /* scratch of max_rows rows; its kv/rec hold no rows (shapes only) */
    float *logits;    /* [cap_logits][n_vocab]: the output head over every row asked for (grown on demand) */
    int32_t cap_logits;
    int32_t *row_of;  /* [max_rows]: scratch row of each logits row */
};

sd_status sd_ctx_group_init(const sd_model *m, int32_t n_ctx, int32_t max_rows, int n_threads, sd_ctx_group **out,
                            sd_err *err) {
    *out = NULL;
    const sd_hparams *hp = &m->hp;
    if (hp->arch == SD_ARCH_EAGLE3 || hp->arch == SD_ARCH_QWEN35_MTP || hp->arch == SD_ARCH_DFLASH || hp->mtp_only)
        return sd_err_set(err, SD_ERR_ARG, "a draft head is no model to batch");
    if (max_rows < 1 || n_ctx < 1) return sd_err_set(err, SD_ERR_ARG, "group: %d rows, n_ctx %d", max_rows, n_ctx);
    if (n_threads <= 0) n_threads = sd_default_threads();
    sd_ctx_group *g = calloc(1, sizeof *g);
    if (!g) return sd_err_set(err, SD_ERR_NOMEM, "out of memory for a batch group");
    sd_context *c = &g->lead;
    c->m = m;
    c->n_ctx = n_ctx;
    c->n_batch = max_rows;
    c->n_threads = n_threads;
    c->kv.n_head_kv = hp->n_head_kv;
    c->kv.head_dim = hp->head_dim;
    c->kv.kv_dim = (int64_t)hp->n_head_kv * hp->head_dim;
    sd_status st = sd_scratch_build(&c->sc, hp, max_rows, n_ctx, n_threads, err);
    if (st == SD_OK) {
        g->row_of = sd_malloc_array((size_t)max_rows, sizeof *g->row_of);
        if (!g->row_of) st = sd_err_set(err, SD_ERR_NOMEM, "out of memory for a batch group");
    }
    if (st != SD_OK) {
        sd_ctx_group_free(g);
        return st;
    }
    *out = g;
    return SD_OK;
}

void sd_ctx_group_free(sd_ctx_group *g) {
    if (!g) return;
    sd_scratch_free(&g->lead.sc);
    free(g->logits);
    free(g->row_of);
    free(g);
}

static sd_status logits_room(sd_ctx_group *g, int32_t n, sd_err *err);

sd_status sd_ctx_group_commit(sd_ctx_group *g, sd_err *err) {
    sd_status st = logits_room(g, g->lead.n_batch, err);
    if (st != SD_OK) return st;
    sd_scratch_commit(&g->lead.sc);
    sd_memory_commit(g->logits);
    sd_memory_commit(g->row_of);
    return SD_OK;
}

static sd_status check(const sd_ctx_group *g, const sd_ragged_seq *seqs, int32_t n_seq, sd_err *err) {
    const sd_context *lead = &g->lead;
    int64_t rows = 0;
    if (n_seq < 0 || (n_seq > 0 && !seqs)) return sd_err_set(err, SD_ERR_ARG, "ragged forward: %d sequences", n_seq);
    for (int32_t i = 0; i < n_seq; i++) {
        const sd_ragged_seq *q = &seqs[i];
        if (!q->c || q->c->m != lead->m)
            return sd_err_set(err, SD_ERR_ARG, "ragged forward: sequence %d is not a context of the group's model", i);
        if (q->c->n_ctx > lead->n_ctx)
            return sd_err_set(err, SD_ERR_ARG, "ragged forward: sequence %d has n_ctx %d > the group's %d", i,
                              q->c->n_ctx, lead->n_ctx);
        if (q->c->kv.tree.active) return sd_err_set(err, SD_ERR_ARG, "ragged forward: a token tree is active");
        for (int32_t j = 0; j < i; j++)
            if (seqs[j].c == q->c) return sd_err_set(err, SD_ERR_ARG, "ragged forward: sequence %d given twice", i);
        sd_status st = sd_fwd_check_batch(q->c, q->tokens, q->S, q->n_tail, q->logits, err);
        if (st != SD_OK) return st;
        if (q->S < 1) return sd_err_set(err, SD_ERR_ARG, "ragged forward: sequence %d has no rows", i);
        rows += q->S;
    }
    if (rows > lead->n_batch)
        return sd_err_set(err, SD_ERR_ARG, "ragged forward: %lld rows > the group's %d", (long long)rows,
                          lead->n_batch);
    return SD_OK;
}

/* Room for n rows of logits (the rows asked for grow with the verify
 * windows; a step of prefill chunks asks for few). Errors: SD_ERR_NOMEM. */
static sd_status logits_room(sd_ctx_group *g, int32_t n, sd_err *err) {
    if (n <= g->cap_logits) return SD_OK;
    size_t bytes = 0;
    float *l = sd_mul_size((size_t)n, (size_t)g->lead.m->hp.n_vocab * sizeof *l, &bytes) ? realloc(g->logits, bytes)
                                                                                          : NULL;
    if (!l) return sd_err_set(err, SD_ERR_NOMEM, "out of memory for the logits of %d rows", n);
    g->logits = l;
    g->cap_logits = n;
    return SD_OK;
}

/* v becomes member c as the per-sequence steps see it, with the scratch rows
 * row.. of the group's batch as its rows 0..: every buffer a _seq step or
 * the hidden hook reads or writes is offset (the per-thread attention
 * scores are shared: one step runs at a time). */
static void seq_view(sd_context *v, const sd_context *c, const sd_context *lead, int64_t row) {
    const sd_hparams *hp = &c->m->hp;
    const int64_t q_dim = (int64_t)hp->n_head * hp->head_dim, kv_dim = c->kv.kv_dim;
    const int64_t cd = hp->ssm_conv_dim, vd = (int64_t)hp->ssm_n_v_heads * hp->ssm_state, hv = hp->ssm_n_v_heads;
    const sd_scratch *s = &lead->sc;
    *v = *c;
    v->n_threads = lead->n_threads;
    v->sc = *s;
    v->sc.x = s->x + row * hp->n_embd;
    v->sc.q = s->q + row * q_dim;
    v->sc.k = s->k + row * kv_dim;
    v->sc.v = s->v + row * kv_dim;
    v->sc.att_out = s->att_out + row * q_dim;
    if (s->mix) { /* qwen35 */
        v->sc.mix = s->mix + row * cd;
        v->sc.conv = s->conv + row * cd;
        v->sc.z = s->z + row * vd;
        v->sc.gdn_o = s->gdn_o + row * vd;
        v->sc.beta = s->beta + row * hv;
        v->sc.alpha = s->alpha + row * hv;
        v->sc.qg = s->qg + row * 2 * q_dim;
        v->sc.gate = s->gate + row * q_dim;
    }
    v->sc.xb = v->sc.hb = v->sc.hb2 = NULL; /* row-wise steps only: they run on the lead */
}

/* The output head once over every row whose logits are asked for, gathered
 * in order, then each sequence's rows to its buffer. */
static void heads(sd_ctx_group *g, const sd_ragged_seq *seqs, int32_t n_seq, const int64_t *row0) {
    sd_context *lead = &g->lead;
    const sd_model *m = lead->m;
    const int64_t E = m->hp.n_embd, V = m->hp.n_vocab;
    int n = 0;
    for (int32_t i = 0; i < n_seq; i++)
        for (int32_t t = seqs[i].S - seqs[i].n_tail; t < seqs[i].S; t++) g->row_of[n++] = (int32_t)(row0[i] + t);
    if (n == 0) return;
    for (int j = 0; j < n; j++)
        sd_fwd_rmsnorm_rows(lead->sc.xb + j * E, lead->sc.x + (int64_t)g->row_of[j] * E, m->output_norm, 1, E,
                            m->hp.rms_eps);
    sd_matmul(&m->output, lead->sc.xb, n, g->logits, lead->n_threads);
    int j = 0;
    for (int32_t i = 0; i < n_seq; i++) {
        if (seqs[i].n_tail == 0) continue;
        memcpy(seqs[i].logits, g->logits + j * V, (size_t)seqs[i].n_tail * (size_t)V * sizeof *g->logits);
        j += seqs[i].n_tail;
    }
}

/* Views and row offsets live on the stack for up to this many sequences. */
#define RAGGED_MAX_SEQ 64

sd_status sd_forward_ragged(sd_ctx_group *g, const sd_ragged_seq *seqs, int32_t n_seq, sd_err *err) {
    if (n_seq > RAGGED_MAX_SEQ)
        return sd_err_set(err, SD_ERR_ARG, "ragged forward: more than %d sequences", RAGGED_MAX_SEQ);
    sd_status st = check(g, seqs, n_seq, err);
    if (st != SD_OK) return st;
    int32_t n_logits = 0;
    for (int32_t i = 0; i < n_seq; i++) n_logits += seqs[i].n_tail;
    if ((st = logits_room(g, n_logits, err)) != SD_OK) return st;
    if (n_seq == 0) return SD_OK;
    sd_context *lead = &g->lead, views[RAGGED_MAX_SEQ];
    const sd_model *m = lead->m;
    const sd_hparams *hp = &m->hp;
    const int64_t E = hp->n_embd;
    int64_t row0[RAGGED_MAX_SEQ];
    int S_of[RAGGED_MAX_SEQ], R = 0;
    for (int32_t i = 0; i < n_seq; i++) {
        sd_context_reset_pending(seqs[i].c);
        row0[i] = R;
        for (int32_t t = 0; t < seqs[i].S; t++)
            sd_matrix_get_row(&m->tok_embd, seqs[i].tokens[t], lead->sc.x + (R + t) * E);
        seq_view(&views[i], seqs[i].c, lead, R);
        S_of[i] = seqs[i].S;
        R += seqs[i].S;
    }
    sd_fwd_layers(lead, R, views, S_of, n_seq);
    heads(g, seqs, n_seq, row0);
    for (int32_t i = 0; i < n_seq; i++) { /* as sd_fwd_batch ends */
        sd_context *c = seqs[i].c;
        sd_recurrent_capture_commit(&c->rec, c->kv.len, seqs[i].S);
        c->kv.len += seqs[i].S;
    }
    return SD_OK;
}

void sd_context_set_forward_hook(sd_context *c, sd_forward_hook fn, void *user) {
    c->fwd_hook = fn;
    c->fwd_hook_user = fn ? user : NULL;
}

bool sd_context_forward_hooked(const sd_context *c) { return c->fwd_hook != NULL; }
