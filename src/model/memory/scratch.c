/* The activations of one batch: see scratch.h. */
#include "model/memory/scratch.h"

#include <stdlib.h>
#include <string.h>

#include "model/memory/memory.h"
#include "model/moe.h"

static float *alloc_f32(size_t a, size_t b, size_t c, bool *ok) {
    return sd_memory_alloc(a, b, c, sizeof(float), ok);
}

sd_status sd_scratch_build(sd_scratch *sc, const sd_hparams *hp, int32_t n_batch, int32_t n_ctx, int n_threads,
                           sd_err *err) {
    memset(sc, 0, sizeof *sc);
    const size_t q_dim = (size_t)hp->n_head * (size_t)hp->head_dim, kv = (size_t)hp->n_head_kv * (size_t)hp->head_dim;
    const size_t nb = (size_t)n_batch;
    bool ok = true;
    sc->x = alloc_f32(nb, (size_t)hp->n_embd, 1, &ok);
    /* a head's input rows are [embedding ; hidden], twice as wide */
    const bool head = hp->arch == SD_ARCH_EAGLE3 || hp->arch == SD_ARCH_QWEN35_MTP;
    sc->xb = alloc_f32(nb, (size_t)hp->n_embd, head ? 2 : 1, &ok);
    sc->q = alloc_f32(nb, q_dim, 1, &ok);
    sc->k = alloc_f32(nb, kv, 1, &ok);
    sc->v = alloc_f32(nb, kv, 1, &ok);
    sc->att_out = alloc_f32(nb, q_dim, 1, &ok);
    sc->hb = alloc_f32(nb, (size_t)hp->n_ff, 1, &ok);
    sc->hb2 = alloc_f32(nb, (size_t)hp->n_ff, 1, &ok);
    sc->att = alloc_f32((size_t)n_threads, (size_t)n_ctx, SD_ATT_QUERIES, &ok);
    if (hp->arch == SD_ARCH_QWEN35 || hp->arch == SD_ARCH_QWEN35MOE || hp->arch == SD_ARCH_QWEN35_MTP) {
        const size_t vd = (size_t)hp->ssm_n_v_heads * (size_t)hp->ssm_state, hv = (size_t)hp->ssm_n_v_heads;
        sc->qg = alloc_f32(nb, 2 * q_dim, 1, &ok);
        sc->gate = alloc_f32(nb, q_dim, 1, &ok);
        sc->mix = alloc_f32(nb, (size_t)hp->ssm_conv_dim, 1, &ok);
        sc->conv = alloc_f32(nb, (size_t)hp->ssm_conv_dim, 1, &ok);
        sc->z = alloc_f32(nb, vd, 1, &ok);
        sc->gdn_o = alloc_f32(nb, vd, 1, &ok);
        sc->beta = alloc_f32(nb, hv, 1, &ok);
        sc->alpha = alloc_f32(nb, hv, 1, &ok);
    }
    if (ok && sd_moe_scratch_init(hp, n_batch, &sc->moe) != SD_OK) ok = false;
    if (!ok) {
        sd_scratch_free(sc);
        return sd_err_set(err, SD_ERR_NOMEM, "out of memory for the activations of a batch of %d", n_batch);
    }
    return SD_OK;
}

void sd_scratch_free(sd_scratch *sc) {
    float *bufs[] = {sc->x,   sc->xb,   sc->q,   sc->k,    sc->v, sc->att_out, sc->hb,   sc->hb2,  sc->att,
                     sc->qg,  sc->gate, sc->mix, sc->conv, sc->z, sc->gdn_o,   sc->beta, sc->alpha};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) free(bufs[i]);
    sd_moe_scratch_free(sc->moe);
    memset(sc, 0, sizeof *sc);
}

void sd_scratch_commit(sd_scratch *sc) {
    float *bufs[] = {sc->x,   sc->xb,   sc->q,   sc->k,    sc->v, sc->att_out, sc->hb,   sc->hb2,  sc->att,
                     sc->qg,  sc->gate, sc->mix, sc->conv, sc->z, sc->gdn_o,   sc->beta, sc->alpha};
    for (size_t i = 0; i < sizeof bufs / sizeof bufs[0]; i++) sd_memory_commit(bufs[i]);
}

void sd_scratch_reset_pending(sd_scratch *sc) {
    sc->head_S = 0;
    sc->head_n = 0;
}
