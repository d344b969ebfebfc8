/* The hidden-state hook's rows: see hidden_hook.h. */
#include "model/memory/hidden_hook.h"

#include <stdlib.h>
#include <string.h>

#include "model/memory/memory.h"

void sd_hidden_hook_build(sd_hidden_hook *h, int32_t n_ctx, int32_t n_embd) {
    memset(h, 0, sizeof *h);
    h->n_ctx = n_ctx;
    h->n_embd = n_embd;
}

void sd_hidden_hook_free(sd_hidden_hook *h) {
    free(h->rows);
    h->rows = NULL;
    h->n = 0;
}

void sd_hidden_hook_commit(sd_hidden_hook *h) { sd_memory_commit(h->rows); }

sd_status sd_hidden_hook_request(sd_hidden_hook *h, const int32_t *layer_ids, int n_ids, int32_t n_layer,
                                 sd_err *err) {
    if (n_ids < 0 || n_ids > SD_HIDDEN_MAX_IDS || (n_ids > 0 && !layer_ids))
        return sd_err_set(err, SD_ERR_ARG, "hidden states: %d layer ids (1..%d allowed)", n_ids, SD_HIDDEN_MAX_IDS);
    for (int i = 0; i < n_ids; i++)
        if (layer_ids[i] < 0 || layer_ids[i] > n_layer)
            return sd_err_set(err, SD_ERR_ARG, "hidden states: layer id %d out of range 0..%d (n_layer)",
                              layer_ids[i], n_layer);
    if (n_ids > 0 && sd_hidden_hook_is(h, layer_ids, n_ids)) return SD_OK;
    sd_hidden_hook_free(h);
    if (n_ids == 0) return SD_OK;
    bool ok = true;
    float *rows = sd_memory_alloc((size_t)h->n_ctx, (size_t)n_ids, (size_t)h->n_embd, sizeof(float), &ok);
    if (!ok)
        return sd_err_set(err, SD_ERR_NOMEM, "hidden states: out of memory for %d x %d x %d floats", h->n_ctx,
                          n_ids, h->n_embd);
    h->rows = rows;
    h->n = n_ids;
    for (int i = 0; i < n_ids; i++) h->ids[i] = layer_ids[i];
    return SD_OK;
}

bool sd_hidden_hook_is(const sd_hidden_hook *h, const int32_t *layer_ids, int n_ids) {
    if (!h->rows || h->n != n_ids) return false;
    for (int i = 0; i < n_ids; i++)
        if (h->ids[i] != layer_ids[i]) return false;
    return true;
}

float *sd_hidden_hook_row(const sd_hidden_hook *h, int32_t pos) {
    return h->rows ? h->rows + (size_t)pos * (size_t)h->n * (size_t)h->n_embd : NULL;
}

void sd_hidden_hook_move_row(sd_hidden_hook *h, int32_t from, int32_t to) {
    if (!h->rows) return;
    memcpy(sd_hidden_hook_row(h, to), sd_hidden_hook_row(h, from), (size_t)h->n * (size_t)h->n_embd * sizeof(float));
}
