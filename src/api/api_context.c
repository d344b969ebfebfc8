/* Contexts of the public API: the target's KV cache, the draft model's when
 * the context has one, and the token history behind prefix reuse. */
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "format/ggml_type.h"

specdec_context_params specdec_context_default_params(void) { return (specdec_context_params){0}; }

/* Rows per forward: 64 unless asked. Kept as asked, not cut to n_ctx (the
 * forward splits what does not fit), so the decode loop's prefill chunks do
 * not depend on n_ctx. */
static int32_t resolve_n_batch(int32_t n_batch) { return n_batch > 0 ? n_batch : 64; }

/* A hybrid model's discipline until a generate call asks for its own:
 * replay with a ring for the default K = 8. */
#define INITIAL_SLOTS 9

/* specdec_cache_type in enum order: the ggml type ids and llama.cpp's names. */
static const struct {
    uint32_t ggml;
    const char *name;
} CACHE_TYPES[] = {
    {GGML_TYPE_F16, "f16"},   {GGML_TYPE_F32, "f32"},       {GGML_TYPE_BF16, "bf16"},
    {GGML_TYPE_Q8_0, "q8_0"}, {GGML_TYPE_Q4_0, "q4_0"},     {GGML_TYPE_Q4_1, "q4_1"},
    {GGML_TYPE_IQ4_NL, "iq4_nl"}, {GGML_TYPE_Q5_0, "q5_0"}, {GGML_TYPE_Q5_1, "q5_1"},
};
#define N_CACHE_TYPES (sizeof CACHE_TYPES / sizeof *CACHE_TYPES)

const char *specdec_cache_type_name(specdec_cache_type t) {
    return (unsigned)t < N_CACHE_TYPES ? CACHE_TYPES[t].name : NULL;
}

bool specdec_cache_type_parse(const char *name, specdec_cache_type *t) {
    for (size_t i = 0; name && i < N_CACHE_TYPES; i++)
        if (!strcmp(name, CACHE_TYPES[i].name)) {
            *t = (specdec_cache_type)i;
            return true;
        }
    return false;
}

bool sd_api_cache_ggml_type(specdec_cache_type t, uint32_t *out) {
    if ((unsigned)t >= N_CACHE_TYPES) return false;
    *out = CACHE_TYPES[t].ggml;
    return true;
}

static sd_status cache_ggml_type(specdec_cache_type t, const char *field, uint32_t *out, sd_err *e) {
    if ((unsigned)t >= N_CACHE_TYPES)
        return sd_err_set(e, SD_ERR_ARG, "specdec_context_init: %s %d is not a specdec_cache_type", field, (int)t);
    *out = CACHE_TYPES[t].ggml;
    return SD_OK;
}

specdec_status specdec_context_init(const specdec_model *model, const specdec_context_params *params,
                                    specdec_context **out, specdec_error *err) {
    if (!out) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_context_init: out is NULL");
    *out = NULL;
    if (!model) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_context_init: model is NULL");
    specdec_status isa_st = sd_api_isa_check(err);
    if (isa_st != SPECDEC_OK) return isa_st;
    specdec_context_params p = params ? *params : specdec_context_default_params();
    sd_err e = {0};
    const bool head = p.draft && p.draft->m->hp.arch == SD_ARCH_EAGLE3;
    const bool dflash = p.draft && p.draft->m->hp.arch == SD_ARCH_DFLASH;
    if (dflash && sd_dflash_check(p.draft->m, model->m, &e) != SD_OK) {
        sd_err_prefix(&e, "%s", p.draft->path);
        return sd_api_error(err, &e);
    }
    if (head && sd_eagle3_check(p.draft->m, model->m, &e) != SD_OK) {
        sd_err_prefix(&e, "%s", p.draft->path);
        return sd_api_error(err, &e);
    }
    if (p.draft && sd_lm_check_same_vocab(model->m, p.draft->m, &e) != SD_OK) {
        sd_err_prefix(&e, "%s", p.draft->path);
        return sd_api_error(err, &e);
    }
    /* an mtp_only file (llama.cpp's mtp-*.gguf): its MTP block drafts for the target */
    const bool sidecar = p.draft && p.draft->m->hp.mtp_only;
    if (sidecar && sd_mtp_check(p.draft->m, model->m, &e) != SD_OK) {
        sd_err_prefix(&e, "%s: MTP sidecar", p.draft->path);
        return sd_api_error(err, &e);
    }
    specdec_context *c = calloc(1, sizeof *c);
    if (!c) return sd_api_fail(err, SPECDEC_ERR_NOMEM, "out of memory");
    c->model = model;
    c->draft = p.draft;
    c->draft_kind = !p.draft ? SD_API_DRAFT_NONE
                    : head   ? SD_API_DRAFT_EAGLE3
                    : dflash ? SD_API_DRAFT_DFLASH
                    : sidecar ? SD_API_DRAFT_MTP_SIDECAR
                              : SD_API_DRAFT_MODEL;
    c->n_batch = resolve_n_batch(p.n_batch);
    uint32_t tk = GGML_TYPE_F16, tv = GGML_TYPE_F16;
    sd_status st = cache_ggml_type(p.cache_type_k, "cache_type_k", &tk, &e);
    if (st == SD_OK) st = cache_ggml_type(p.cache_type_v, "cache_type_v", &tv, &e);
    if (st == SD_OK) st = sd_context_init_kv(model->m, p.n_ctx, c->n_batch, p.n_threads, tk, tv, &c->tctx, &e);
    if (st == SD_OK) {
        st = sd_compose_lm(&c->tl, c->tctx, model->m, SD_ROLLBACK_REPLAY, INITIAL_SLOTS, SD_LM_TARGET, &e);
    }
    if (st == SD_OK) {
        c->hist = malloc(((size_t)sd_context_n_ctx(c->tctx) + 1) * sizeof *c->hist);
        if (!c->hist) st = sd_err_set(&e, SD_ERR_NOMEM, "out of memory");
    }
    if (st == SD_OK && c->draft_kind == SD_API_DRAFT_MODEL) {
        st = sd_context_init(p.draft->m, sd_context_n_ctx(c->tctx), c->n_batch, p.n_threads, &c->dctx, &e);
        if (st == SD_OK)
            st = sd_compose_lm(&c->dl, c->dctx, p.draft->m, SD_ROLLBACK_REPLAY, INITIAL_SLOTS, SD_LM_DRAFT, &e);
    }
    if (st != SD_OK) {
        specdec_context_free(c);
        return sd_api_error(err, &e);
    }
    *out = c;
    return SPECDEC_OK;
}

void specdec_context_free(specdec_context *c) {
    if (!c) return;
    sd_model_lm_free(&c->tl);
    sd_model_lm_free(&c->dl);
    sd_context_free(c->dctx);
    sd_context_free(c->tctx);
    free(c->hist);
    free(c);
}

const specdec_model *specdec_context_model(const specdec_context *c) { return c->model; }
const specdec_model *specdec_context_draft(const specdec_context *c) { return c->draft; }

int32_t specdec_context_n_ctx(const specdec_context *c) { return sd_context_n_ctx(c->tctx); }

const specdec_token *specdec_context_tokens(const specdec_context *c, size_t *n) {
    if (n) *n = (size_t)c->n_hist;
    return c->hist;
}

void specdec_context_reset(specdec_context *c) {
    c->n_hist = c->n_kv = 0;
    sd_context_truncate(c->tctx, 0);
    if (c->dctx) sd_context_truncate(c->dctx, 0);
}

const char *specdec_spec_mode_name(specdec_spec_mode mode) {
    static const char *names[] = {"none", "ngram", "draft", "auto", "eagle3", "mtp", "suffix", "grammar", "dflash"};
    return (unsigned)mode < sizeof names / sizeof *names ? names[mode] : NULL;
}

bool specdec_spec_mode_parse(const char *name, specdec_spec_mode *mode) {
    for (specdec_spec_mode m = SPECDEC_SPEC_NONE; name && m <= SPECDEC_SPEC_DFLASH; m++)
        if (!strcmp(name, specdec_spec_mode_name(m))) {
            *mode = m;
            return true;
        }
    return false;
}

const char *specdec_rollback_name(specdec_rollback r) {
    static const char *names[] = {"auto", "checkpoint", "replay", "redecode", "window"};
    return (unsigned)r < sizeof names / sizeof *names ? names[r] : NULL;
}

bool specdec_rollback_parse(const char *name, specdec_rollback *r) {
    for (specdec_rollback m = SPECDEC_ROLLBACK_AUTO; name && m <= SPECDEC_ROLLBACK_WINDOW; m++)
        if (!strcmp(name, specdec_rollback_name(m))) {
            *r = m;
            return true;
        }
    return false;
}

const char *specdec_stop_reason_name(specdec_stop_reason reason) {
    static const char *names[] = {"length", "eog", "stop", "cancelled", "context", "grammar"};
    return (unsigned)reason < sizeof names / sizeof *names ? names[reason] : "unknown";
}
