/* sd_context: the composition of the memory components (model/memory/),
 * sized once at init so a forward never allocates; truncation, state
 * snapshots and the hidden-state hook's public calls, each handed to the
 * component that holds the state. */
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "model/context.h"
#include "numerics/pool.h"

sd_status sd_context_init(const sd_model *m, int32_t n_ctx, int32_t n_batch, int n_threads,
                          sd_context **out, sd_err *err) {
    return sd_context_init_kv(m, n_ctx, n_batch, n_threads, GGML_TYPE_F16, GGML_TYPE_F16, out, err);
}

sd_status sd_context_init_kv(const sd_model *m, int32_t n_ctx, int32_t n_batch, int n_threads, uint32_t type_k,
                             uint32_t type_v, sd_context **out, sd_err *err) {
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
    sd_hidden_hook_build(&c->hid, n_ctx, hp->n_embd);
    sd_status kst = sd_kv_cache_build_typed(&c->kv, hp, n_ctx, type_k, type_v, err);
    if (kst == SD_ERR_ARG) {
        sd_context_free(c);
        return kst;
    }
    bool ok = kst == SD_OK;
    ok = ok && sd_scratch_build(&c->sc, hp, n_batch, n_ctx, n_threads, NULL) == SD_OK;
    ok = ok && sd_recurrent_build(&c->rec, hp, NULL) == SD_OK;
    if (!ok) {
        const double kv_mib = sd_kv_cache_plan_bytes(hp, n_ctx, type_k, type_v) / (1 << 20);
        sd_context_free(c);
        return sd_err_set(err, SD_ERR_NOMEM, "out of memory for a context of %d positions (KV cache %.1f MiB)",
                          n_ctx, kv_mib);
    }
    *out = c;
    return SD_OK;
}

void sd_context_free(sd_context *c) {
    if (!c) return;
    sd_kv_cache_free(&c->kv);
    sd_recurrent_free(&c->rec);
    sd_scratch_free(&c->sc);
    sd_hidden_hook_free(&c->hid);
    free(c);
}

void sd_context_commit(sd_context *c, bool activations) {
    sd_kv_cache_commit(&c->kv);
    sd_hidden_hook_commit(&c->hid);
    if (activations) sd_scratch_commit(&c->sc);
}

void sd_context_reset_pending(sd_context *c) {
    sd_kv_cache_reset_pending(&c->kv);
    sd_scratch_reset_pending(&c->sc);
}

void sd_context_kv_types(const sd_context *c, uint32_t *type_k, uint32_t *type_v) {
    *type_k = c->kv.type_k;
    *type_v = c->kv.type_v;
}

int32_t sd_context_n_ctx(const sd_context *c) { return c->n_ctx; }
int32_t sd_context_n_batch(const sd_context *c) { return c->n_batch; }
const sd_model *sd_context_model(const sd_context *c) { return c->m; }

int sd_context_n_threads(const sd_context *c) { return c->n_threads; }
int32_t sd_context_len(const sd_context *c) { return sd_kv_cache_len(&c->kv, 0); }

sd_status sd_context_truncate(sd_context *c, int32_t n) {
    if (n < 0) n = 0;
    if (n >= c->kv.len) return SD_OK;
    if (c->rec.n_layers > 0) {
        if (n > 0) return SD_ERR_UNSUPPORTED; /* the recurrent state has absorbed positions n..len-1 */
        sd_recurrent_reset(&c->rec, 0);
    }
    sd_kv_cache_truncate(&c->kv, 0, n);
    sd_context_reset_pending(c); /* the rows sd_forward_more would resume are gone, and so are a tree's nodes */
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
    snap_header h = {.len = c->kv.len, .payload = sd_recurrent_bytes(&c->rec)};
    memcpy(h.magic, snap_magic, sizeof h.magic);
    memcpy(buf, &h, sizeof h);
    sd_recurrent_save(&c->rec, 0, (char *)buf + sizeof h);
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
    if (h.len < 0 || h.len > c->kv.len)
        return sd_err_set(err, SD_ERR_CONTEXT, "snapshot at length %lld, the context holds %d", (long long)h.len,
                          c->kv.len);
    sd_recurrent_load(&c->rec, 0, (const char *)buf + sizeof h);
    if (h.len < c->kv.len) {
        sd_kv_cache_truncate(&c->kv, 0, (int32_t)h.len);
        sd_context_reset_pending(c);
    }
    return SD_OK;
}

sd_status sd_context_state_copy(sd_context *dst, const sd_context *src, sd_err *err) {
    if (dst->m != src->m) return sd_err_set(err, SD_ERR_ARG, "state copy between contexts of different models");
    if (dst->kv.type_k != src->kv.type_k || dst->kv.type_v != src->kv.type_v)
        return sd_err_set(err, SD_ERR_ARG, "state copy between contexts of different KV cache types");
    if (src->kv.len > dst->n_ctx)
        return sd_err_set(err, SD_ERR_CONTEXT, "state copy: %d positions do not fit n_ctx %d", src->kv.len,
                          dst->n_ctx);
    sd_kv_cache_copy(&dst->kv, &src->kv, 0);
    sd_recurrent_load(&dst->rec, 0, src->rec.data);
    sd_context_reset_pending(dst);
    return SD_OK;
}

sd_status sd_context_request_hidden(sd_context *c, const int32_t *layer_ids, int n_ids, sd_err *err) {
    return sd_hidden_hook_request(&c->hid, layer_ids, n_ids, c->m->hp.n_layer, err);
}

bool sd_context_hidden_is(const sd_context *c, const int32_t *layer_ids, int n_ids) {
    return sd_hidden_hook_is(&c->hid, layer_ids, n_ids);
}

const float *sd_context_hidden(const sd_context *c, int32_t pos) {
    if (pos < 0 || pos >= c->kv.len) return NULL;
    return sd_hidden_hook_row(&c->hid, pos);
}
