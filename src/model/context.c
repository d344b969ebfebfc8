/* sd_context: KV cache and scratch buffers, sized once at init so a forward
 * never allocates. */
#include <stdlib.h>

#include "core/checked.h"
#include "model/context.h"
#include "numerics/pool.h"

/* a * b * c elements of elem bytes, every product checked; clears *ok on failure. */
static void *alloc_array(size_t a, size_t b, size_t c, size_t elem, bool *ok) {
    size_t n;
    if (!*ok || !sd_mul_size(a, b, &n) || !sd_mul_size(n, c, &n)) {
        *ok = false;
        return NULL;
    }
    void *p = sd_malloc_array(n, elem);
    if (!p) *ok = false;
    return p;
}

static float *alloc_f32(size_t a, size_t b, size_t c, bool *ok) { return alloc_array(a, b, c, sizeof(float), ok); }

sd_status sd_context_init(const sd_model *m, int32_t n_ctx, int32_t n_batch, int n_threads,
                          sd_context **out, sd_err *err) {
    *out = NULL;
    const sd_hparams *hp = &m->hp;
    if (n_ctx <= 0) n_ctx = hp->n_ctx_train < 4096 ? hp->n_ctx_train : 4096;
    if (n_batch <= 0) n_batch = 64;
    if (n_batch > n_ctx) n_batch = n_ctx;
    if (n_threads <= 0) n_threads = sd_default_threads();
    sd_context *c = calloc(1, sizeof *c);
    if (!c) return sd_err_set(err, SD_ERR_NOMEM, "out of memory for the context");
    c->m = m;
    c->n_ctx = n_ctx;
    c->n_batch = n_batch;
    c->n_threads = n_threads;
    c->kv_dim = (int64_t)hp->n_head_kv * hp->head_dim;
    const size_t q_dim = (size_t)hp->n_head * (size_t)hp->head_dim, kv = (size_t)c->kv_dim;
    const size_t nb = (size_t)n_batch;
    bool ok = true;
    c->k_cache = alloc_array((size_t)hp->n_layer, (size_t)n_ctx, kv, sizeof(uint16_t), &ok);
    c->v_cache = alloc_array((size_t)hp->n_layer, (size_t)n_ctx, kv, sizeof(uint16_t), &ok);
    c->x = alloc_f32(nb, (size_t)hp->n_embd, 1, &ok);
    c->xb = alloc_f32(nb, (size_t)hp->n_embd, 1, &ok);
    c->q = alloc_f32(nb, q_dim, 1, &ok);
    c->k = alloc_f32(nb, kv, 1, &ok);
    c->v = alloc_f32(nb, kv, 1, &ok);
    c->att_out = alloc_f32(nb, q_dim, 1, &ok);
    c->hb = alloc_f32(nb, (size_t)hp->n_ff, 1, &ok);
    c->hb2 = alloc_f32(nb, (size_t)hp->n_ff, 1, &ok);
    c->att = alloc_f32((size_t)n_threads, (size_t)n_ctx, SD_ATT_QUERIES, &ok);
    if (!ok) {
        sd_context_free(c);
        return sd_err_set(err, SD_ERR_NOMEM, "out of memory for a context of %d positions (KV cache %.1f MiB)",
                          n_ctx, 2.0 * hp->n_layer * (double)n_ctx * (double)kv * sizeof(uint16_t) / (1 << 20));
    }
    *out = c;
    return SD_OK;
}

void sd_context_free(sd_context *c) {
    if (!c) return;
    free(c->k_cache);
    free(c->v_cache);
    free(c->hid);
    float *bufs[] = {c->x, c->xb, c->q, c->k, c->v, c->att_out, c->hb, c->hb2, c->att};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    free(c);
}

int32_t sd_context_n_ctx(const sd_context *c) { return c->n_ctx; }
int32_t sd_context_n_batch(const sd_context *c) { return c->n_batch; }
const sd_model *sd_context_model(const sd_context *c) { return c->m; }
int32_t sd_context_len(const sd_context *c) { return c->len; }

void sd_context_truncate(sd_context *c, int32_t n) {
    if (n < 0) n = 0;
    if (n < c->len) c->len = n, c->head_S = 0; /* the rows sd_forward_more would resume are gone */
}

sd_status sd_context_request_hidden(sd_context *c, const int32_t *layer_ids, int n_ids, sd_err *err) {
    const sd_hparams *hp = &c->m->hp;
    if (n_ids < 0 || n_ids > SD_HIDDEN_MAX_IDS || (n_ids > 0 && !layer_ids))
        return sd_err_set(err, SD_ERR_ARG, "hidden states: %d layer ids (1..%d allowed)", n_ids, SD_HIDDEN_MAX_IDS);
    for (int i = 0; i < n_ids; i++)
        if (layer_ids[i] < 0 || layer_ids[i] > hp->n_layer)
            return sd_err_set(err, SD_ERR_ARG, "hidden states: layer id %d out of range 0..%d (n_layer)",
                              layer_ids[i], hp->n_layer);
    free(c->hid);
    c->hid = NULL;
    c->hid_n = 0;
    if (n_ids == 0) return SD_OK;
    bool ok = true;
    float *hid = alloc_f32((size_t)c->n_ctx, (size_t)n_ids, (size_t)hp->n_embd, &ok);
    if (!ok)
        return sd_err_set(err, SD_ERR_NOMEM, "hidden states: out of memory for %d x %d x %d floats", c->n_ctx,
                          n_ids, hp->n_embd);
    c->hid = hid;
    c->hid_n = n_ids;
    for (int i = 0; i < n_ids; i++) c->hid_ids[i] = layer_ids[i];
    return SD_OK;
}

const float *sd_context_hidden(const sd_context *c, int32_t pos) {
    if (!c->hid || pos < 0 || pos >= c->len) return NULL;
    return c->hid + (size_t)pos * (size_t)c->hid_n * (size_t)c->m->hp.n_embd;
}
