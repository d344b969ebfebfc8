/* Rollback captures of the recurrent layers (model.h sd_context_capture_*):
 * the ring the forward fills (layer_gdn.c writes the slots), loading a
 * captured state back, and replaying captured recurrence inputs. The
 * disciplines built on these (checkpoint, replay, redecode) are in
 * decode/lm_hybrid.c. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "model/context.h"
#include "numerics/gdn.h"

/* Floats one GDN layer keeps per captured position: STATE its whole
 * recurrent state (recurrent.h layout), INPUTS [mix | conv | decay | beta]. */
static int64_t layer_floats(const sd_hparams *hp, sd_capture_kind kind) {
    if (kind == SD_CAPTURE_STATE) return sd_recurrent_conv_floats(hp) + sd_recurrent_ssm_floats(hp);
    if (kind == SD_CAPTURE_INPUTS) return 2 * (int64_t)hp->ssm_conv_dim + 2 * (int64_t)hp->ssm_n_v_heads;
    return 0;
}

uint64_t sd_model_capture_bytes(const sd_model *m, sd_capture_kind kind) {
    return (uint64_t)layer_floats(&m->hp, kind) * (uint64_t)m->hp.n_layer_gdn * sizeof(float);
}

sd_status sd_context_capture_init(sd_context *c, sd_capture_kind kind, int32_t n_slots, sd_err *err) {
    if ((unsigned)kind > SD_CAPTURE_INPUTS || (kind != SD_CAPTURE_NONE && n_slots < 1))
        return sd_err_set(err, SD_ERR_ARG, "capture: kind %d with %d slots", (int)kind, n_slots);
    const int64_t lf = layer_floats(&c->m->hp, kind), all = lf * c->rec.n_layers;
    float *cap = NULL;
    int32_t *pos = NULL;
    if (kind != SD_CAPTURE_NONE && all > 0) {
        cap = sd_malloc_array((size_t)n_slots, (size_t)all * sizeof(float));
        pos = sd_malloc_array((size_t)n_slots, sizeof *pos);
        if (!cap || !pos) {
            free(cap);
            free(pos);
            return sd_err_set(err, SD_ERR_NOMEM, "capture: out of memory for %d positions of %.1f MiB", n_slots,
                              (double)all * sizeof(float) / (1 << 20));
        }
        for (int32_t i = 0; i < n_slots; i++) pos[i] = -1;
    }
    free(c->cap);
    free(c->cap_pos);
    c->cap = cap;
    c->cap_pos = pos;
    c->cap_kind = cap ? kind : SD_CAPTURE_NONE;
    c->cap_slots = cap ? n_slots : 0;
    c->cap_layer_floats = lf;
    c->cap_floats = all;
    c->cap_from = INT32_MAX;
    c->cap_touched = false;
    return SD_OK;
}

void sd_context_capture_touch(sd_context *c) {
    if (c->cap_touched || !c->cap) return;
    for (int32_t s = 0; s < c->cap_slots; s++)
        if (c->cap_pos[s] < 0) memset(c->cap + (int64_t)s * c->cap_floats, 0, (size_t)c->cap_floats * sizeof(float));
    c->cap_touched = true;
}

void sd_context_capture_from(sd_context *c, int32_t p_first) { c->cap_from = p_first < 1 ? 1 : p_first; }

/* Whether the ring holds step p of the given kind. */
static bool captured(const sd_context *c, sd_capture_kind kind, int32_t p) {
    return c->cap_kind == kind && p >= 1 && c->cap_pos[p % c->cap_slots] == p;
}

sd_status sd_context_capture_load(sd_context *c, int32_t p, sd_err *err) {
    if (c->rec.n_layers == 0 && p >= 0 && p <= c->len) { /* dense: the KV counter is all there is */
        c->len = p;
        c->head_S = 0;
        return SD_OK;
    }
    if (p > c->len || !captured(c, SD_CAPTURE_STATE, p))
        return sd_err_set(err, SD_ERR_ARG, "capture: no state of position %d to load (length %d)", p, c->len);
    memcpy(c->rec.data, sd_cap_slot(c, p, 0), (size_t)c->cap_floats * sizeof(float));
    c->len = p;
    c->head_S = 0;
    return SD_OK;
}

/* Steps p0 + 1 .. p0 + T of GDN layer `layer` (slot), contiguous in the ring:
 * the conv window takes each captured conv input (the output row is scratch,
 * its value unused), then every V head runs the delta rule over the T steps. */
static void replay_layer(sd_context *c, const sd_layer *L, int32_t p0, int T) {
    const sd_hparams *hp = &c->m->hp;
    const int Sd = hp->ssm_state, Hk = hp->ssm_n_k_heads, Hv = hp->ssm_n_v_heads, K = hp->ssm_conv_kernel;
    const int64_t cd = hp->ssm_conv_dim, vd = (int64_t)Hv * Sd, ld = c->cap_floats;
    const float *in = sd_cap_slot(c, p0 + 1, L->slot); /* [mix | conv | decay | beta], rows ld apart */
    float *win = sd_recurrent_conv(&c->rec, L->slot);
    for (int t = 0; t < T; t++) sd_conv_step(c->conv, win, L->conv_w, in + t * ld, K, cd, cd);
    const float *qkv = in + cd, *decay = in + 2 * cd, *beta = decay + Hv;
#pragma omp parallel for num_threads(c->n_threads) schedule(static)
    for (int h = 0; h < Hv; h++) {
        const int kh = h % Hk; /* as layer_gdn.c head_tokens */
        float *st = sd_recurrent_ssm(&c->rec, L->slot) + (int64_t)h * Sd * Sd;
        sd_gdn_tokens(st, Sd, T, qkv + (int64_t)kh * Sd, qkv + (int64_t)(Hk + kh) * Sd, qkv + (int64_t)(2 * Hk + h) * Sd,
                      ld, decay + h, beta + h, ld, 1.0f / sqrtf((float)Sd), c->gdn_o + (int64_t)h * Sd, vd);
    }
}

sd_status sd_context_replay(sd_context *c, int32_t p, sd_err *err) {
    if (p <= c->len || p > c->n_ctx)
        return sd_err_set(err, SD_ERR_ARG, "replay: position %d is not past the length %d", p, c->len);
    if (c->rec.n_layers > 0)
        for (int32_t q = c->len + 1; q <= p; q++)
            if (!captured(c, SD_CAPTURE_INPUTS, q))
                return sd_err_set(err, SD_ERR_ARG, "replay: the inputs of position %d are not captured", q);
    const sd_model *m = c->m;
    for (int32_t p0 = c->len; p0 < p && c->rec.n_layers > 0;) {
        /* a run of steps contiguous in the ring, at most n_batch (the scratch rows of gdn_o) */
        int32_t T = p - p0, to_wrap = c->cap_slots - (p0 + 1) % c->cap_slots;
        if (T > to_wrap) T = to_wrap;
        if (T > c->n_batch) T = c->n_batch;
        for (int il = 0; il < m->hp.n_layer; il++)
            if (m->layers[il].kind == SD_LAYER_GDN) replay_layer(c, &m->layers[il], p0, T);
        p0 += T;
    }
    c->len = p;
    c->head_S = 0;
    return SD_OK;
}
