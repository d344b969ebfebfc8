/* The recurrent memory of the Gated DeltaNet layers and its capture ring:
 * see recurrent.h. */
#include "model/memory/recurrent.h"

#include <stdlib.h>
#include <string.h>

#include "core/checked.h"

sd_status sd_recurrent_build(sd_recurrent *r, const sd_hparams *hp, sd_err *err) {
    memset(r, 0, sizeof *r);
    r->cap.from = INT32_MAX;
    if (hp->n_layer_gdn <= 0) return SD_OK;
    /* The loader bounded every factor (SD_MAX_DIM each, checked products), so these fit. */
    r->conv_floats = sd_recurrent_conv_floats(hp);
    r->ssm_floats = sd_recurrent_ssm_floats(hp);
    size_t n = 0;
    if (!sd_mul_size((size_t)(r->conv_floats + r->ssm_floats), (size_t)hp->n_layer_gdn, &n) ||
        !(r->data = sd_calloc(n, sizeof(float))))
        return sd_err_set(err, SD_ERR_NOMEM, "out of memory for the recurrent state (%d layers)", hp->n_layer_gdn);
    r->n_layers = hp->n_layer_gdn;
    return SD_OK;
}

void sd_recurrent_free(sd_recurrent *r) {
    free(r->data);
    free(r->cap.data);
    free(r->cap.pos);
    memset(r, 0, sizeof *r);
}

size_t sd_recurrent_bytes(const sd_recurrent *r) {
    return (size_t)r->n_layers * (size_t)(r->conv_floats + r->ssm_floats) * sizeof(float);
}

sd_status sd_recurrent_reset(sd_recurrent *r, int32_t seq) {
    if (!sd_memory_seq_ok(seq)) return SD_ERR_ARG;
    if (r->data) memset(r->data, 0, sd_recurrent_bytes(r));
    return SD_OK;
}

sd_status sd_recurrent_save(const sd_recurrent *r, int32_t seq, void *dst) {
    if (!sd_memory_seq_ok(seq)) return SD_ERR_ARG;
    if (r->data) memcpy(dst, r->data, sd_recurrent_bytes(r));
    return SD_OK;
}

sd_status sd_recurrent_load(sd_recurrent *r, int32_t seq, const void *src) {
    if (!sd_memory_seq_ok(seq)) return SD_ERR_ARG;
    if (r->data) memcpy(r->data, src, sd_recurrent_bytes(r));
    return SD_OK;
}

/* ---- the capture ring ---- */

int64_t sd_capture_layer_floats(const sd_hparams *hp, sd_capture_kind kind) {
    if (kind == SD_CAPTURE_STATE) return sd_recurrent_conv_floats(hp) + sd_recurrent_ssm_floats(hp);
    if (kind == SD_CAPTURE_INPUTS) return 2 * (int64_t)hp->ssm_conv_dim + 2 * (int64_t)hp->ssm_n_v_heads;
    return 0;
}

sd_status sd_recurrent_capture_init(sd_recurrent *r, const sd_hparams *hp, sd_capture_kind kind, int32_t n_slots,
                                    sd_err *err) {
    if ((unsigned)kind > SD_CAPTURE_INPUTS || (kind != SD_CAPTURE_NONE && n_slots < 1))
        return sd_err_set(err, SD_ERR_ARG, "capture: kind %d with %d slots", (int)kind, n_slots);
    const int64_t lf = sd_capture_layer_floats(hp, kind), all = lf * r->n_layers;
    float *data = NULL;
    int32_t *pos = NULL;
    if (kind != SD_CAPTURE_NONE && all > 0) {
        data = sd_malloc_array((size_t)n_slots, (size_t)all * sizeof(float));
        pos = sd_malloc_array((size_t)n_slots, sizeof *pos);
        if (!data || !pos) {
            free(data);
            free(pos);
            return sd_err_set(err, SD_ERR_NOMEM, "capture: out of memory for %d positions of %.1f MiB", n_slots,
                              (double)all * sizeof(float) / (1 << 20));
        }
        for (int32_t i = 0; i < n_slots; i++) pos[i] = -1;
    }
    sd_capture_ring *c = &r->cap;
    free(c->data);
    free(c->pos);
    c->data = data;
    c->pos = pos;
    c->kind = data ? kind : SD_CAPTURE_NONE;
    c->slots = data ? n_slots : 0;
    c->layer_floats = lf;
    c->floats = all;
    c->from = INT32_MAX;
    c->touched = false;
    return SD_OK;
}

void sd_recurrent_capture_touch(sd_recurrent *r) {
    sd_capture_ring *c = &r->cap;
    if (c->touched || !c->data) return;
    for (int32_t s = 0; s < c->slots; s++)
        if (c->pos[s] < 0) memset(c->data + (int64_t)s * c->floats, 0, (size_t)c->floats * sizeof(float));
    c->touched = true;
}

void sd_recurrent_capture_from(sd_recurrent *r, int32_t p_first) { r->cap.from = p_first < 1 ? 1 : p_first; }

bool sd_recurrent_captured(const sd_recurrent *r, sd_capture_kind kind, int32_t p) {
    return r->cap.kind == kind && p >= 1 && r->cap.pos[p % r->cap.slots] == p;
}

int sd_recurrent_capture_start(const sd_recurrent *r, sd_capture_kind kind, int32_t len, int S) {
    if (r->cap.kind != kind || r->cap.from > len + S) return S;
    const int t = r->cap.from - len - 1;
    return t > 0 ? t : 0;
}

void sd_recurrent_capture_commit(sd_recurrent *r, int32_t len, int S) {
    if (!r->cap.data) return;
    for (int t = 0; t < S; t++)
        if (len + t + 1 >= r->cap.from) r->cap.pos[(len + t + 1) % r->cap.slots] = len + t + 1;
}

sd_status sd_recurrent_capture_load(sd_recurrent *r, int32_t seq, int32_t p) {
    if (!sd_memory_seq_ok(seq)) return SD_ERR_ARG;
    memcpy(r->data, sd_capture_slot(r, p, 0), (size_t)r->cap.floats * sizeof(float));
    return SD_OK;
}
