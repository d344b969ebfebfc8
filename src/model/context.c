/* sd_context: KV cache, recurrent state and scratch buffers, sized once at
 * init so a forward never allocates; truncation and state snapshots. */
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "model/context.h"
#include "model/moe.h"
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
    if (hp->mtp_only)
        return sd_err_set(err, SD_ERR_ARG, "an MTP sidecar (a qwen35 file with only the nextn block) is no model to "
                                           "run: give it with -md as a target's MTP drafter");
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
    c->n_kv_layers = hp->n_layer - hp->n_layer_gdn;
    const size_t q_dim = (size_t)hp->n_head * (size_t)hp->head_dim, kv = (size_t)c->kv_dim;
    const size_t nb = (size_t)n_batch;
    bool ok = true;
    const size_t kv_layers = c->n_kv_layers > 0 ? (size_t)c->n_kv_layers : 1;
    c->k_cache = alloc_array(kv_layers, (size_t)n_ctx, kv, sizeof(uint16_t), &ok);
    c->v_cache = alloc_array(kv_layers, (size_t)n_ctx, kv, sizeof(uint16_t), &ok);
    c->x = alloc_f32(nb, (size_t)hp->n_embd, 1, &ok);
    /* a head's input rows are [embedding ; hidden], twice as wide */
    const bool head = hp->arch == SD_ARCH_EAGLE3 || hp->arch == SD_ARCH_QWEN35_MTP;
    c->pos_shift = hp->arch == SD_ARCH_QWEN35_MTP; /* index i holds the MTP pair of position i + 1 */
    c->xb = alloc_f32(nb, (size_t)hp->n_embd, head ? 2 : 1, &ok);
    c->q = alloc_f32(nb, q_dim, 1, &ok);
    c->k = alloc_f32(nb, kv, 1, &ok);
    c->v = alloc_f32(nb, kv, 1, &ok);
    c->att_out = alloc_f32(nb, q_dim, 1, &ok);
    c->hb = alloc_f32(nb, (size_t)hp->n_ff, 1, &ok);
    c->hb2 = alloc_f32(nb, (size_t)hp->n_ff, 1, &ok);
    c->att = alloc_f32((size_t)n_threads, (size_t)n_ctx, SD_ATT_QUERIES, &ok);
    if (hp->arch == SD_ARCH_QWEN35 || hp->arch == SD_ARCH_QWEN35MOE || hp->arch == SD_ARCH_QWEN35_MTP) {
        const size_t vd = (size_t)hp->ssm_n_v_heads * (size_t)hp->ssm_state, hv = (size_t)hp->ssm_n_v_heads;
        c->qg = alloc_f32(nb, 2 * q_dim, 1, &ok);
        c->gate = alloc_f32(nb, q_dim, 1, &ok);
        c->mix = alloc_f32(nb, (size_t)hp->ssm_conv_dim, 1, &ok);
        c->conv = alloc_f32(nb, (size_t)hp->ssm_conv_dim, 1, &ok);
        c->z = alloc_f32(nb, vd, 1, &ok);
        c->gdn_o = alloc_f32(nb, vd, 1, &ok);
        c->beta = alloc_f32(nb, hv, 1, &ok);
        c->alpha = alloc_f32(nb, hv, 1, &ok);
    }
    if (ok && sd_recurrent_init(&c->rec, hp, NULL) != SD_OK) ok = false;
    if (ok && sd_moe_scratch_init(m, n_batch, &c->moe) != SD_OK) ok = false; /* MoE scratch (moe.h) */
    c->cap_from = INT32_MAX;
    if (!ok) {
        sd_context_free(c);
        return sd_err_set(err, SD_ERR_NOMEM, "out of memory for a context of %d positions (KV cache %.1f MiB)",
                          n_ctx, 2.0 * (double)kv_layers * (double)n_ctx * (double)kv * sizeof(uint16_t) / (1 << 20));
    }
    *out = c;
    return SD_OK;
}

void sd_context_free(sd_context *c) {
    if (!c) return;
    free(c->k_cache);
    free(c->v_cache);
    free(c->hid);
    free(c->cap);
    free(c->cap_pos);
    float *bufs[] = {c->x, c->xb, c->q, c->k, c->v, c->att_out, c->hb, c->hb2, c->att,
                     c->qg, c->gate, c->mix, c->conv, c->z, c->gdn_o, c->beta, c->alpha};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    sd_recurrent_free(&c->rec);
    sd_moe_scratch_free(c->moe);
    free(c);
}

int32_t sd_context_n_ctx(const sd_context *c) { return c->n_ctx; }
int32_t sd_context_n_batch(const sd_context *c) { return c->n_batch; }
const sd_model *sd_context_model(const sd_context *c) { return c->m; }

int sd_context_n_threads(const sd_context *c) { return c->n_threads; }
int32_t sd_context_len(const sd_context *c) { return c->len; }

sd_status sd_context_truncate(sd_context *c, int32_t n) {
    if (n < 0) n = 0;
    if (n >= c->len) return SD_OK;
    if (c->rec.n_layers > 0) {
        if (n > 0) return SD_ERR_UNSUPPORTED; /* the recurrent state has absorbed positions n..len-1 */
        sd_recurrent_reset(&c->rec);
    }
    c->len = n;
    c->head_S = 0; /* the rows sd_forward_more would resume are gone */
    c->tree_n = 0; /* and so are a tree's nodes */
    return SD_OK;
}

/* ---- snapshots ---- */

/* The header of a snapshot: what restore checks before it copies. */
typedef struct snap_header {
    char magic[8];      /* "SDSTATE1" */
    int64_t len;        /* context length at the snapshot */
    uint64_t payload;   /* recurrent-state bytes that follow */
    uint64_t reserved;
} snap_header;
static const char snap_magic[8] = {'S', 'D', 'S', 'T', 'A', 'T', 'E', '1'};

size_t sd_context_state_bytes(const sd_context *c) { return sizeof(snap_header) + sd_recurrent_bytes(&c->rec); }

sd_status sd_context_state_save(const sd_context *c, void *buf, size_t size, sd_err *err) {
    const size_t need = sd_context_state_bytes(c);
    if (!buf || size < need)
        return sd_err_set(err, SD_ERR_ARG, "state snapshot needs %zu bytes, got %zu", need, buf ? size : 0);
    snap_header h = {.len = c->len, .payload = sd_recurrent_bytes(&c->rec)};
    memcpy(h.magic, snap_magic, sizeof h.magic);
    memcpy(buf, &h, sizeof h);
    if (h.payload) memcpy((char *)buf + sizeof h, c->rec.data, (size_t)h.payload);
    return SD_OK;
}

sd_status sd_context_state_restore(sd_context *c, const void *buf, size_t size, sd_err *err) {
    const size_t need = sd_context_state_bytes(c);
    snap_header h;
    if (!buf || size < sizeof h) return sd_err_set(err, SD_ERR_ARG, "not a state snapshot (%zu bytes)", buf ? size : 0);
    memcpy(&h, buf, sizeof h);
    if (memcmp(h.magic, snap_magic, sizeof h.magic) != 0) return sd_err_set(err, SD_ERR_ARG, "not a state snapshot");
    if (size != need || h.payload != need - sizeof h)
        return sd_err_set(err, SD_ERR_ARG, "snapshot of %zu bytes, this model's is %zu", size, need);
    if (h.len < 0 || h.len > c->len)
        return sd_err_set(err, SD_ERR_CONTEXT, "snapshot at length %lld, the context holds %d", (long long)h.len,
                          c->len);
    if (h.payload) memcpy(c->rec.data, (const char *)buf + sizeof h, (size_t)h.payload);
    if (h.len < c->len) c->len = (int32_t)h.len, c->head_S = 0;
    return SD_OK;
}

sd_status sd_context_state_copy(sd_context *dst, const sd_context *src, sd_err *err) {
    if (dst->m != src->m) return sd_err_set(err, SD_ERR_ARG, "state copy between contexts of different models");
    if (src->len > dst->n_ctx)
        return sd_err_set(err, SD_ERR_CONTEXT, "state copy: %d positions do not fit n_ctx %d", src->len, dst->n_ctx);
    const int64_t hd = src->m->hp.head_dim;
    for (int32_t l = 0; l < src->n_kv_layers; l++)
        for (int h = 0; h < src->m->hp.n_head_kv; h++) {
            const size_t n = (size_t)src->len * (size_t)hd * sizeof(uint16_t);
            memcpy(sd_kv_head(dst, dst->k_cache, l, h), sd_kv_head(src, src->k_cache, l, h), n);
            memcpy(sd_kv_head(dst, dst->v_cache, l, h), sd_kv_head(src, src->v_cache, l, h), n);
        }
    if (src->rec.n_layers) memcpy(dst->rec.data, src->rec.data, sd_recurrent_bytes(&src->rec));
    dst->len = src->len;
    dst->head_S = 0;
    return SD_OK;
}

sd_status sd_context_request_hidden(sd_context *c, const int32_t *layer_ids, int n_ids, sd_err *err) {
    const sd_hparams *hp = &c->m->hp;
    if (n_ids < 0 || n_ids > SD_HIDDEN_MAX_IDS || (n_ids > 0 && !layer_ids))
        return sd_err_set(err, SD_ERR_ARG, "hidden states: %d layer ids (1..%d allowed)", n_ids, SD_HIDDEN_MAX_IDS);
    for (int i = 0; i < n_ids; i++)
        if (layer_ids[i] < 0 || layer_ids[i] > hp->n_layer)
            return sd_err_set(err, SD_ERR_ARG, "hidden states: layer id %d out of range 0..%d (n_layer)",
                              layer_ids[i], hp->n_layer);
    if (n_ids > 0 && sd_context_hidden_is(c, layer_ids, n_ids)) return SD_OK;
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

bool sd_context_hidden_is(const sd_context *c, const int32_t *layer_ids, int n_ids) {
    if (!c->hid || c->hid_n != n_ids) return false;
    for (int i = 0; i < n_ids; i++)
        if (c->hid_ids[i] != layer_ids[i]) return false;
    return true;
}

const float *sd_context_hidden(const sd_context *c, int32_t pos) {
    if (!c->hid || pos < 0 || pos >= c->len) return NULL;
    return c->hid + (size_t)pos * (size_t)c->hid_n * (size_t)c->m->hp.n_embd;
}
