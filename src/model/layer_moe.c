/* The mixture-of-experts FFN (moe.h; docs/MOE.md; llama.cpp
 * src/llama-graph.cpp build_moe_ffn with softmax gating and renormalised
 * weights, and the shared expert of src/models/qwen35moe.cpp).
 *
 * A batch of S tokens is routed first; the selections are then grouped by
 * expert (counting sort, tokens ascending), and each expert that any token
 * chose runs ONE gate/up/down product over all its rows: its weights are read
 * once per batch, not once per token, so a verify window pays for the union
 * u(S) of its experts (ARCHITECTURE.md §2). sd_matmul computes every row alone, so
 * a token's expert output is bitwise the same whichever rows share the
 * expert; each token then sums its k weighted outputs in its own selection
 * rank order (largest probability first, as llama.cpp adds its expert views
 * 0..k-1). Hence row t of the output does not depend on S. */
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "model/layers.h"
#include "model/moe.h"
#include "numerics/ops.h"

/* Smallest normal f16: llama.cpp clamps the renormalising sum to it. */
#define MOE_MIN_WEIGHT_SUM 6.103515625e-5f

sd_status sd_moe_scratch_init(const sd_hparams *hp, int32_t n_batch, sd_moe_scratch **out) {
    *out = NULL;
    if (hp->n_expert <= 0) return SD_OK;
    sd_moe_scratch *s = calloc(1, sizeof *s);
    if (!s) return SD_ERR_NOMEM;
    const size_t B = (size_t)n_batch, E = (size_t)hp->n_expert, k = (size_t)hp->n_expert_used, D = (size_t)hp->n_embd;
    const size_t F = (size_t)(hp->n_ff_exp > hp->n_ff_shexp ? hp->n_ff_exp : hp->n_ff_shexp);
    s->n_batch = n_batch;
    s->n_counters = hp->n_layer > 0 ? hp->n_layer : 1;
    s->logits = sd_malloc_array(B * E, sizeof *s->logits);
    s->sel = sd_malloc_array(B * k, sizeof *s->sel);
    s->w = sd_malloc_array(B * k, sizeof *s->w);
    s->count = sd_malloc_array(E, sizeof *s->count);
    s->start = sd_malloc_array(E + 1, sizeof *s->start);
    s->order = sd_malloc_array(B * k, sizeof *s->order);
    s->xg = sd_malloc_array(B * D, sizeof *s->xg);
    s->g = sd_malloc_array(B * F, sizeof *s->g);
    s->u = sd_malloc_array(B * F, sizeof *s->u);
    s->d = sd_malloc_array(B * D, sizeof *s->d);
    s->eo = sd_malloc_array(B * k * D, sizeof *s->eo);
    s->y = sd_malloc_array(B * D, sizeof *s->y);
    s->sg = sd_malloc_array(B, sizeof *s->sg);
    s->distinct = sd_calloc((size_t)s->n_counters, sizeof *s->distinct);
    if (!s->logits || !s->sel || !s->w || !s->count || !s->start || !s->order || !s->xg || !s->g || !s->u || !s->d ||
        !s->eo || !s->y || !s->sg || !s->distinct) {
        sd_moe_scratch_free(s);
        return SD_ERR_NOMEM;
    }
    *out = s;
    return SD_OK;
}

void sd_moe_scratch_free(sd_moe_scratch *s) {
    if (!s) return;
    void *bufs[] = {s->logits, s->sel, s->w, s->count, s->start, s->order, s->xg,
                    s->g,      s->u,   s->d, s->eo,    s->y,     s->sg,    s->distinct};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    free(s);
}

/* The k largest of p[E] into sel[k] in descending order; on equal values the
 * lower expert id ranks first (a fixed rule, so ties route the same way in
 * any batch). Weights: the selected probabilities over their sum, summed in
 * rank order. */
static void route_token(const float *p, int32_t E, int32_t k, int32_t *sel, float *w) {
    for (int32_t j = 0; j < k; j++) {
        int32_t best = -1;
        for (int32_t e = 0; e < E; e++) {
            bool taken = false;
            for (int32_t i = 0; i < j && !taken; i++) taken = sel[i] == e;
            if (!taken && (best < 0 || p[e] > p[best])) best = e;
        }
        sel[j] = best;
    }
    float sum = 0.0f;
    for (int32_t j = 0; j < k; j++) sum += p[sel[j]];
    if (!(sum >= MOE_MIN_WEIGHT_SUM)) sum = MOE_MIN_WEIGHT_SUM;
    for (int32_t j = 0; j < k; j++) w[j] = p[sel[j]] / sum;
}

/* Routes the S normed rows of c->sc.xb and groups the selections by expert:
 * order[start[e]..start[e + 1]) are the entries t * k + j with sel[t][j] = e,
 * t ascending. Returns the number of distinct experts. */
static int32_t route(sd_context *c, const sd_moe *x, int S) {
    sd_moe_scratch *s = c->sc.moe;
    const int32_t E = c->m->hp.n_expert, k = c->m->hp.n_expert_used;
    sd_matmul(&x->router, c->sc.xb, S, s->logits, c->n_threads);
    memset(s->count, 0, (size_t)E * sizeof *s->count);
    for (int t = 0; t < S; t++) {
        float *p = s->logits + (int64_t)t * E;
        sd_softmax(p, E);
        route_token(p, E, k, s->sel + (int64_t)t * k, s->w + (int64_t)t * k);
        for (int32_t j = 0; j < k; j++) s->count[s->sel[(int64_t)t * k + j]]++;
    }
    int32_t distinct = 0;
    s->start[0] = 0;
    for (int32_t e = 0; e < E; e++) {
        s->start[e + 1] = s->start[e] + s->count[e];
        distinct += s->count[e] > 0;
        s->count[e] = 0; /* reused as the fill cursor */
    }
    for (int t = 0; t < S; t++)
        for (int32_t j = 0; j < k; j++) {
            const int32_t e = s->sel[(int64_t)t * k + j];
            s->order[s->start[e] + s->count[e]++] = t * k + j;
        }
    return distinct;
}

/* Expert e over its n rows: gather, the FFN (layer_ffn.c), then each output
 * row to its (token, rank) place in eo. */
static void run_expert(sd_context *c, const sd_moe *x, int32_t e) {
    sd_moe_scratch *s = c->sc.moe;
    const int64_t D = c->m->hp.n_embd, k = c->m->hp.n_expert_used;
    const int32_t *entries = s->order + s->start[e];
    const int n = s->start[e + 1] - s->start[e];
    for (int i = 0; i < n; i++)
        memcpy(s->xg + i * D, c->sc.xb + (entries[i] / k) * D, (size_t)D * sizeof(float));
    sd_ffn_swiglu(&x->gate[e], &x->up[e], &x->down[e], s->xg, n, s->g, s->u, s->d, c->n_threads);
    for (int i = 0; i < n; i++) memcpy(s->eo + (int64_t)entries[i] * D, s->d + i * D, (size_t)D * sizeof(float));
}

/* y[t] = sum over ranks j of w[t][j] * eo[t][j], left to right. */
static void combine(sd_moe_scratch *s, int S, int64_t D, int32_t k) {
    for (int t = 0; t < S; t++) {
        float *y = s->y + t * D;
        const float *w = s->w + (int64_t)t * k, *eo = s->eo + (int64_t)t * k * D;
        for (int64_t i = 0; i < D; i++) y[i] = eo[i] * w[0];
        for (int32_t j = 1; j < k; j++)
            for (int64_t i = 0; i < D; i++) y[i] += eo[j * D + i] * w[j];
    }
}

/* qwen35moe: y[t] += sigmoid(gate_inp · m_t) * shexp(m_t). */
static void shared_expert(sd_context *c, const sd_moe *x, int S) {
    sd_moe_scratch *s = c->sc.moe;
    const int64_t D = c->m->hp.n_embd;
    sd_ffn_swiglu(&x->sh_gate, &x->sh_up, &x->sh_down, c->sc.xb, S, s->g, s->u, s->d, c->n_threads);
    for (int t = 0; t < S; t++) {
        const float gate = 1.0f / (1.0f + sd_expf(-sd_dot_f32(x->sh_gate_inp, c->sc.xb + t * D, D)));
        for (int64_t i = 0; i < D; i++) s->y[t * D + i] += s->d[t * D + i] * gate;
    }
}

void sd_layer_moe(sd_context *c, const sd_layer *L, int S) {
    const sd_hparams *hp = &c->m->hp;
    const sd_moe *x = L->moe;
    sd_moe_scratch *s = c->sc.moe;
    const int64_t D = hp->n_embd;
    for (int t = 0; t < S; t++) sd_rmsnorm(c->sc.xb + t * D, c->sc.x + t * D, L->ffn_norm, D, hp->rms_eps);
    const int32_t distinct = route(c, x, S);
    if (x->counter >= 0 && x->counter < s->n_counters) s->distinct[x->counter] = distinct;
    for (int32_t e = 0; e < hp->n_expert; e++)
        if (s->start[e + 1] > s->start[e]) run_expert(c, x, e);
    combine(s, S, D, hp->n_expert_used);
    if (x->has_shexp) shared_expert(c, x, S);
    sd_add(c->sc.x, s->y, S * D);
}

int32_t sd_context_moe_distinct(const sd_context *c, int32_t il) {
    const sd_model *m = c->m;
    if (il < 0 || il >= m->hp.n_layer || !m->layers[il].moe || !c->sc.moe) return -1;
    const int32_t slot = m->layers[il].moe->counter;
    return slot >= 0 && slot < c->sc.moe->n_counters ? c->sc.moe->distinct[slot] : -1;
}
