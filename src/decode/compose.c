/* Composition of lms and drafters (compose.h). */
#include "decode/compose.h"

#include <stdlib.h>
#include <string.h>

sd_status sd_compose_lm(sd_model_lm *out, sd_context *c, const sd_model *m, sd_rollback d, int32_t n_slots,
                        sd_lm_role role, sd_err *err) {
    memset(out, 0, sizeof *out);
    if ((unsigned)role >= SD_LM_ROLE_N) return sd_err_set(err, SD_ERR_ARG, "lm: role %d is not target or draft", (int)role);
    if ((unsigned)d >= SD_ROLLBACK_N) return sd_err_set(err, SD_ERR_ARG, "lm: rollback discipline %d unknown", (int)d);
    if (!sd_model_is_recurrent(m)) {
        sd_lm_from_context(&out->lm, c, m);
        return SD_OK;
    }
    sd_lm_hybrid *h = calloc(1, sizeof *h);
    if (!h) return sd_err_set(err, SD_ERR_NOMEM, "lm: out of memory");
    sd_recm r;
    sd_recm_from_context(&r, c);
    sd_status st = sd_lm_hybrid_init(h, &r, d, n_slots, role == SD_LM_TARGET, err);
    if (st != SD_OK) {
        free(h);
        return st;
    }
    out->hybrid = h;
    sd_lm_hybrid_as_lm(&out->lm, h);
    return SD_OK;
}

sd_status sd_compose_lm_rollback(sd_model_lm *l, sd_rollback d, int32_t n_slots, sd_err *err) {
    sd_lm_hybrid *h = l->hybrid;
    if (!h) return SD_OK;
    if (h->disc != d || h->n_slots != n_slots) {
        sd_status st = sd_lm_hybrid_configure(h, d, n_slots, err);
        if (st != SD_OK) return st;
    }
    h->st = (sd_hybrid_stats){0};
    sd_lm_hybrid_as_lm(&l->lm, h);
    return SD_OK;
}

void sd_model_lm_free(sd_model_lm *l) {
    if (!l) return;
    sd_lm_hybrid_free(l->hybrid);
    free(l->hybrid);
    memset(l, 0, sizeof *l);
}

static const char *const KIND_NAMES[SD_DRAFTER_KIND_N] = {"ngram", "draft", "eagle3", "mtp", "mtp-sidecar", "auto",
                                                                   "suffix", "dflash"};

const char *sd_drafter_kind_name(sd_drafter_kind k) {
    return (unsigned)k < SD_DRAFTER_KIND_N ? KIND_NAMES[k] : NULL;
}

sd_drafter_kind sd_drafter_auto_costly(const sd_drafter_inputs *in) {
    /* the target's own head before a separate draft */
    if (in->mtp_sidecar) return SD_DRAFTER_MTP_SIDECAR;
    if (in->dflash) return SD_DRAFTER_DFLASH;
    if (!in->eagle3 && in->target && sd_context_model(in->target)->nextn.present) return SD_DRAFTER_MTP;
    if (in->eagle3) return SD_DRAFTER_EAGLE3;
    return in->draft_lm ? SD_DRAFTER_MODEL : SD_DRAFTER_NGRAM;
}

/* What kind k needs from in, missing: a one-line error. */
static sd_status check_inputs(sd_drafter_kind k, const sd_drafter_inputs *in, sd_err *err) {
    const char *name = sd_drafter_kind_name(k);
    const bool head =
        k == SD_DRAFTER_EAGLE3 || k == SD_DRAFTER_MTP || k == SD_DRAFTER_MTP_SIDECAR || k == SD_DRAFTER_DFLASH;
    if ((head || k == SD_DRAFTER_AUTO) && !in->target) return sd_err_set(err, SD_ERR_ARG, "drafter %s: no target context", name);
    if (k == SD_DRAFTER_MODEL && !in->draft_lm) return sd_err_set(err, SD_ERR_ARG, "drafter %s needs a draft model", name);
    if (k == SD_DRAFTER_EAGLE3 && !in->eagle3) return sd_err_set(err, SD_ERR_ARG, "drafter %s needs an EAGLE-3 head", name);
    if (k == SD_DRAFTER_DFLASH && !in->dflash) return sd_err_set(err, SD_ERR_ARG, "drafter %s needs a DFlash draft", name);
    if (k == SD_DRAFTER_MTP_SIDECAR && !in->mtp_sidecar)
        return sd_err_set(err, SD_ERR_ARG, "drafter %s needs an MTP sidecar file", name);
    if (k == SD_DRAFTER_MTP && !sd_context_model(in->target)->nextn.present)
        return sd_err_set(err, SD_ERR_UNSUPPORTED, "drafter %s needs a target with an MTP block", name);
    return SD_OK;
}

/* One drafter that is not AUTO. */
static sd_status make_one(sd_drafter *out, sd_drafter_kind k, const sd_drafter_inputs *in, sd_err *err) {
    sd_status st = check_inputs(k, in, err);
    if (st != SD_OK) return st;
    switch (k) {
    case SD_DRAFTER_NGRAM:
        return sd_drafter_ngram_init(out, in->ngram_min, in->ngram_max, err);
    case SD_DRAFTER_SUFFIX:
        return sd_drafter_suffix_init(out, in->suffix_cache,
                                      in->target ? sd_context_model(in->target)->hp.n_vocab : INT32_MAX, err);
    case SD_DRAFTER_MODEL:
        st = in->draft_lm->truncate(in->draft_lm->self, 0, err);
        return st == SD_OK ? sd_drafter_model_init(out, in->draft_lm, in->draft_sampling, in->n_batch, err) : st;
    case SD_DRAFTER_EAGLE3:
        return sd_drafter_eagle3_init(out, in->eagle3, in->target, in->n_threads, in->n_batch, err);
    case SD_DRAFTER_MTP:
        return sd_drafter_mtp_init(out, in->target, in->n_threads, in->n_batch, err);
    case SD_DRAFTER_MTP_SIDECAR:
        return sd_drafter_mtp_sidecar_init(out, in->mtp_sidecar, in->target, in->n_threads, in->n_batch, err);
    case SD_DRAFTER_DFLASH:
        return sd_drafter_dflash_init(out, in->dflash, in->target, in->n_threads, in->n_batch, err);
    default:
        return sd_err_set(err, SD_ERR_ARG, "drafter kind %d unknown", (int)k);
    }
}

sd_status sd_compose_drafter(sd_drafter *out, sd_drafter_kind k, const sd_drafter_inputs *in, sd_err *err) {
    memset(out, 0, sizeof *out);
    if ((unsigned)k >= SD_DRAFTER_KIND_N) return sd_err_set(err, SD_ERR_ARG, "drafter kind %d unknown", (int)k);
    if (k != SD_DRAFTER_AUTO) return make_one(out, k, in, err);
    sd_status st = check_inputs(k, in, err);
    if (st != SD_OK) return st;
    const sd_drafter_kind costly = sd_drafter_auto_costly(in);
    sd_drafter ng = {0}, dm = {0};
    st = make_one(&ng, SD_DRAFTER_NGRAM, in, err);
    if (st == SD_OK && costly != SD_DRAFTER_NGRAM) st = make_one(&dm, costly, in, err);
    const int32_t n_vocab = sd_context_model(in->target)->hp.n_vocab;
    if (st == SD_OK) st = sd_drafter_auto_init(out, &ng, costly != SD_DRAFTER_NGRAM ? &dm : NULL, n_vocab, err);
    if (st != SD_OK) { /* not taken over */
        sd_drafter_free(&ng);
        sd_drafter_free(&dm);
        return st;
    }
    if (in->suffix_cache) {
        sd_drafter sx;
        st = sd_drafter_suffix_init(&sx, in->suffix_cache, n_vocab, err);
        if (st == SD_OK) sd_drafter_auto_put_first(out, &sx);
        else sd_drafter_free(out);
    }
    return st;
}
