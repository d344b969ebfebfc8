/* Rollback captures of the recurrent layers (model.h sd_context_capture_*):
 * the context's calls on the ring (memory/recurrent.h holds it; layer_gdn.c
 * writes the slots), loading a captured state back, and replaying captured
 * recurrence inputs, which needs the layers' conv weights and the batch
 * scratch, so it runs here rather than in the recurrent memory. The
 * disciplines built on these (checkpoint, replay, redecode) are in
 * decode/lm_hybrid.c. */
#include <math.h>
#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "model/context.h"
#include "numerics/gdn.h"

uint64_t sd_model_capture_bytes(const sd_model *m, sd_capture_kind kind) {
    return (uint64_t)sd_capture_layer_floats(&m->hp, kind) * (uint64_t)m->hp.n_layer_gdn * sizeof(float);
}

sd_status sd_context_capture_init(sd_context *c, sd_capture_kind kind, int32_t n_slots, sd_err *err) {
    return sd_recurrent_capture_init(&c->rec, &c->m->hp, kind, n_slots, err);
}

void sd_context_capture_touch(sd_context *c) { sd_recurrent_capture_touch(&c->rec); }

void sd_context_capture_from(sd_context *c, int32_t p_first) { sd_recurrent_capture_from(&c->rec, p_first); }

sd_status sd_context_capture_load(sd_context *c, int32_t p, sd_err *err) {
    if (c->rec.n_layers == 0 && p >= 0 && p <= c->kv.len) { /* dense: the KV counter is all there is */
        sd_kv_cache_truncate(&c->kv, 0, p);
        sd_context_reset_pending(c);
        return SD_OK;
    }
    if (p > c->kv.len || !sd_recurrent_captured(&c->rec, SD_CAPTURE_STATE, p))
        return sd_err_set(err, SD_ERR_ARG, "capture: no state of position %d to load (length %d)", p, c->kv.len);
    sd_recurrent_capture_load(&c->rec, 0, p);
    sd_kv_cache_truncate(&c->kv, 0, p);
    sd_context_reset_pending(c);
    return SD_OK;
}

/* Steps p0 + 1 .. p0 + T of GDN layer `layer` (slot), contiguous in the ring:
 * the conv window takes each captured conv input (the output row is scratch,
 * its value unused), then every V head runs the delta rule over the T steps. */
static void replay_layer(sd_context *c, const sd_layer *L, int32_t p0, int T) {
    const sd_hparams *hp = &c->m->hp;
    const int Sd = hp->ssm_state, Hk = hp->ssm_n_k_heads, Hv = hp->ssm_n_v_heads, K = hp->ssm_conv_kernel;
    const int64_t cd = hp->ssm_conv_dim, vd = (int64_t)Hv * Sd, ld = c->rec.cap.floats;
    const float *in = sd_capture_slot(&c->rec, p0 + 1, L->slot); /* [mix | conv | decay | beta], rows ld apart */
    float *win = sd_recurrent_conv(&c->rec, 0, L->slot);
    for (int t = 0; t < T; t++) sd_conv_step(c->sc.conv, win, L->conv_w, in + t * ld, K, cd, cd);
    const float *qkv = in + cd, *decay = in + 2 * cd, *beta = decay + Hv;
#pragma omp parallel for num_threads(c->n_threads) schedule(static)
    for (int h = 0; h < Hv; h++) {
        const int kh = h % Hk; /* as layer_gdn.c head_tokens */
        float *st = sd_recurrent_ssm(&c->rec, 0, L->slot) + (int64_t)h * Sd * Sd;
        sd_gdn_tokens(st, Sd, T, qkv + (int64_t)kh * Sd, qkv + (int64_t)(Hk + kh) * Sd, qkv + (int64_t)(2 * Hk + h) * Sd,
                      ld, decay + h, beta + h, ld, 1.0f / sqrtf((float)Sd), c->sc.gdn_o + (int64_t)h * Sd, vd);
    }
}

sd_status sd_context_replay(sd_context *c, int32_t p, sd_err *err) {
    if (p <= c->kv.len || p > c->n_ctx)
        return sd_err_set(err, SD_ERR_ARG, "replay: position %d is not past the length %d", p, c->kv.len);
    if (c->rec.n_layers > 0)
        for (int32_t q = c->kv.len + 1; q <= p; q++)
            if (!sd_recurrent_captured(&c->rec, SD_CAPTURE_INPUTS, q))
                return sd_err_set(err, SD_ERR_ARG, "replay: the inputs of position %d are not captured", q);
    const sd_model *m = c->m;
    for (int32_t p0 = c->kv.len; p0 < p && c->rec.n_layers > 0;) {
        /* a run of steps contiguous in the ring, at most n_batch (the scratch rows of gdn_o) */
        int32_t T = p - p0, to_wrap = c->rec.cap.slots - (p0 + 1) % c->rec.cap.slots;
        if (T > to_wrap) T = to_wrap;
        if (T > c->n_batch) T = c->n_batch;
        for (int il = 0; il < m->hp.n_layer; il++)
            if (m->layers[il].kind == SD_LAYER_GDN) replay_layer(c, &m->layers[il], p0, T);
        p0 += T;
    }
    c->kv.len = p; /* the KV rows up to p are the capturing forward's (model.h) */
    sd_context_reset_pending(c);
    return SD_OK;
}
