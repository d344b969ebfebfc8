/* A sequence's state exported to a caller's buffer and imported back (model.h
 * sd_context_seq_export): what a prefix cache keeps per token prefix. Each
 * component of the context contributes its part (kv_cache: K and V rows,
 * recurrent: the GDN state, hidden_hook: the draft heads' rows), in that
 * order after a header that says what the buffer holds. */
#include <string.h>

#include "core/checked.h"
#include "model/context.h"

typedef struct seq_header {
    char magic[8];     /* "SDSEQST2" */
    int64_t n;         /* positions held */
    int64_t kv_dim, n_layers;
    uint32_t type_k, type_v; /* the rows' cache types: a state restores only into a cache of the same */
    uint64_t rec_bytes;
    int32_t n_ids, ids[SD_HIDDEN_MAX_IDS];
    int64_t n_embd;
} seq_header;
static const char seq_magic[8] = {'S', 'D', 'S', 'E', 'Q', 'S', 'T', '2'};

/* Bytes of n positions' rows of K (or V) over every attention layer, in the cache's own types. */
static size_t kv_part_of(const sd_kv_cache *kv, int32_t n, size_t row) {
    return (size_t)kv->n_layers * (size_t)kv->n_head_kv * (size_t)n * row;
}
static size_t kv_part(const sd_kv_cache *kv, int32_t n) {
    return kv_part_of(kv, n, kv->row_k) + kv_part_of(kv, n, kv->row_v);
}

static size_t hid_part(const sd_hidden_hook *h, int32_t n) {
    return h->rows ? (size_t)n * (size_t)h->n * (size_t)h->n_embd * sizeof(float) : 0;
}

size_t sd_context_seq_bytes(const sd_context *c, int32_t n) {
    if (n < 0) n = 0;
    return sizeof(seq_header) + kv_part(&c->kv, n) + sd_recurrent_bytes(&c->rec) + hid_part(&c->hid, n);
}

/* Copies n rows of each (layer, head) between the cache (stride n_ctx) and a
 * packed buffer (stride m): out true exports, false imports. */
static void kv_rows(sd_kv_cache *kv, char *buf, int32_t m, int32_t n, bool out) {
    const size_t part = kv_part_of(kv, m, kv->row_k);
    for (int32_t l = 0; l < kv->n_layers; l++)
        for (int h = 0; h < kv->n_head_kv; h++) {
            const size_t at = ((size_t)l * (size_t)kv->n_head_kv + (size_t)h) * (size_t)m;
            uint8_t *k = sd_kv_cache_krow(kv, l, h, 0), *v = sd_kv_cache_vrow(kv, l, h, 0);
            char *bk = buf + at * kv->row_k, *bv = buf + part + at * kv->row_v;
            if (out) {
                memcpy(bk, k, (size_t)n * kv->row_k);
                memcpy(bv, v, (size_t)n * kv->row_v);
            } else {
                memcpy(k, bk, (size_t)n * kv->row_k);
                memcpy(v, bv, (size_t)n * kv->row_v);
            }
        }
}

sd_status sd_context_seq_export(const sd_context *c, int32_t n, void *buf, size_t size, sd_err *err) {
    const int32_t len = c->kv.len;
    if (n < 0 || n > len) return sd_err_set(err, SD_ERR_ARG, "state export of %d positions, the context holds %d", n, len);
    if (c->rec.n_layers > 0 && n != len)
        return sd_err_set(err, SD_ERR_ARG,
                          "state export of %d positions: the recurrent state exists only at the context's length %d",
                          n, len);
    const size_t need = sd_context_seq_bytes(c, n);
    if (!buf || size < need) return sd_err_set(err, SD_ERR_ARG, "state export needs %zu bytes, got %zu", need, size);
    seq_header h = {.n = n, .kv_dim = c->kv.kv_dim, .n_layers = c->kv.n_layers,
                    .type_k = c->kv.type_k, .type_v = c->kv.type_v, .rec_bytes = sd_recurrent_bytes(&c->rec),
                    .n_ids = c->hid.rows ? c->hid.n : 0, .n_embd = c->hid.n_embd};
    memcpy(h.magic, seq_magic, sizeof h.magic);
    for (int i = 0; i < h.n_ids; i++) h.ids[i] = c->hid.ids[i];
    char *p = (char *)buf;
    memcpy(p, &h, sizeof h);
    p += sizeof h;
    kv_rows((sd_kv_cache *)&c->kv, p, n, n, true);
    p += kv_part(&c->kv, n);
    sd_recurrent_save(&c->rec, 0, p);
    p += h.rec_bytes;
    if (c->hid.rows) memcpy(p, sd_hidden_hook_row(&c->hid, 0), hid_part(&c->hid, n));
    return SD_OK;
}

sd_status sd_context_seq_import(sd_context *c, const void *buf, size_t size, int32_t n_keep, sd_err *err) {
    seq_header h;
    if (!buf || size < sizeof h) return sd_err_set(err, SD_ERR_ARG, "not a sequence state (%zu bytes)", size);
    memcpy(&h, buf, sizeof h);
    if (memcmp(h.magic, seq_magic, sizeof h.magic) || h.kv_dim != c->kv.kv_dim || h.n_layers != c->kv.n_layers ||
        h.type_k != c->kv.type_k || h.type_v != c->kv.type_v ||
        h.rec_bytes != sd_recurrent_bytes(&c->rec) || h.n_embd != c->hid.n_embd || h.n_ids < 0 ||
        h.n_ids > SD_HIDDEN_MAX_IDS)
        return sd_err_set(err, SD_ERR_ARG, "not a sequence state of this model's shape");
    if (h.n < 0 || h.n > c->n_ctx)
        return sd_err_set(err, SD_ERR_CONTEXT, "a state of %lld positions does not fit n_ctx %d", (long long)h.n,
                          c->n_ctx);
    const int32_t m = (int32_t)h.n;
    if (n_keep < 0 || n_keep > m || (c->rec.n_layers > 0 && n_keep != m))
        return sd_err_set(err, SD_ERR_ARG, "cannot restore %d of a state's %d positions%s", n_keep, m,
                          c->rec.n_layers > 0 ? " (a recurrent state exists only at its own length)" : "");
    const size_t hid = (size_t)m * (size_t)h.n_ids * (size_t)h.n_embd * sizeof(float);
    if (size != sizeof h + kv_part(&c->kv, m) + h.rec_bytes + hid)
        return sd_err_set(err, SD_ERR_ARG, "a sequence state of %zu bytes does not match its header", size);
    sd_status st = sd_context_request_hidden(c, h.ids, h.n_ids, err); /* the state's hook, or none */
    if (st != SD_OK) return st;
    const char *p = (const char *)buf + sizeof h;
    kv_rows(&c->kv, (char *)p, m, n_keep, false);
    p += kv_part(&c->kv, m);
    sd_recurrent_load(&c->rec, 0, p);
    p += h.rec_bytes;
    if (h.n_ids > 0)
        memcpy(sd_hidden_hook_row(&c->hid, 0), p, (size_t)n_keep * (size_t)h.n_ids * (size_t)h.n_embd * sizeof(float));
    c->kv.len = n_keep;
    sd_context_reset_pending(c);
    return SD_OK;
}
