/* Saved context states (include/specdec.h specdec_state_save): the tokens a
 * context's cache holds and the model's memory for them (model.h
 * sd_context_seq_export), for a front end's prefix cache. */
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"

struct specdec_state {
    const sd_model *m;     /* the model it was saved from (restore checks it) */
    bool recurrent;        /* restorable only at its own length */
    uint32_t type_k, type_v; /* its KV rows' cache types (restore checks them) */
    specdec_token *tokens; /* [n] */
    int32_t n;
    void *buf;             /* sd_context_seq_export's buffer */
    size_t size;
};

size_t specdec_state_size(const specdec_context *ctx) {
    if (!ctx) return 0;
    return sizeof(specdec_state) + (size_t)ctx->n_kv * sizeof(specdec_token) + sd_context_seq_bytes(ctx->tctx, ctx->n_kv);
}

specdec_status specdec_state_save(const specdec_context *ctx, specdec_state **out, specdec_error *err) {
    if (!out) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_state_save: out is NULL");
    *out = NULL;
    if (!ctx) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_state_save: ctx is NULL");
    specdec_state *s = calloc(1, sizeof *s);
    if (!s) return sd_api_fail(err, SPECDEC_ERR_NOMEM, "out of memory");
    s->m = ctx->model->m;
    s->recurrent = sd_model_is_recurrent(s->m);
    sd_context_kv_types(ctx->tctx, &s->type_k, &s->type_v);
    s->n = ctx->n_kv;
    s->size = sd_context_seq_bytes(ctx->tctx, s->n);
    s->tokens = malloc(((size_t)s->n + 1) * sizeof *s->tokens);
    s->buf = malloc(s->size);
    sd_err e = {0};
    if (!s->tokens || !s->buf) {
        specdec_state_free(s);
        return sd_api_fail(err, SPECDEC_ERR_NOMEM, "out of memory for a state of %zu bytes", specdec_state_size(ctx));
    }
    memcpy(s->tokens, ctx->hist, (size_t)s->n * sizeof *s->tokens);
    if (sd_context_seq_export(ctx->tctx, s->n, s->buf, s->size, &e) != SD_OK) {
        specdec_state_free(s);
        return sd_api_error(err, &e);
    }
    *out = s;
    return SPECDEC_OK;
}

/* Whether st's KV rows are of ctx's cache types. */
static bool same_cache(const specdec_context *ctx, const specdec_state *st) {
    uint32_t k, v;
    sd_context_kv_types(ctx->tctx, &k, &v);
    return k == st->type_k && v == st->type_v;
}

size_t specdec_state_match(const specdec_context *ctx, const specdec_state *st, const specdec_token *prompt,
                           size_t n_prompt) {
    if (!ctx || !st || !prompt || n_prompt < 2 || st->m != ctx->model->m || !same_cache(ctx, st)) return 0;
    size_t max = (size_t)st->n < n_prompt - 1 ? (size_t)st->n : n_prompt - 1, n = 0;
    while (n < max && st->tokens[n] == prompt[n]) n++;
    if (st->recurrent && n != (size_t)st->n) return 0; /* a recurrent state only at its own length */
    return n;
}

specdec_status specdec_state_restore(specdec_context *ctx, const specdec_state *st, size_t n_keep,
                                     specdec_error *err) {
    if (!ctx || !st) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_state_restore: NULL argument");
    if (st->m != ctx->model->m)
        return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_state_restore: the state was saved from another model");
    if (!same_cache(ctx, st))
        return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_state_restore: the state's KV cache types differ from the context's");
    if (n_keep > (size_t)st->n || (st->recurrent && n_keep != (size_t)st->n))
        return sd_api_fail(err, SPECDEC_ERR_ARG, "cannot restore %zu of a state's %d tokens%s", n_keep, st->n,
                           st->recurrent ? " (a recurrent model restores only a whole state)" : "");
    /* a hybrid's lm forgets the old sequence first: its known tokens must not outlive it */
    if (ctx->tl.hybrid) ctx->tl.lm.truncate(ctx->tl.lm.self, 0, NULL);
    sd_err e = {0};
    if (sd_context_seq_import(ctx->tctx, st->buf, st->size, (int32_t)n_keep, &e) != SD_OK) {
        specdec_context_reset(ctx);
        return sd_api_error(err, &e);
    }
    memcpy(ctx->hist, st->tokens, n_keep * sizeof *st->tokens);
    ctx->n_hist = ctx->n_kv = (int32_t)n_keep;
    if (ctx->tl.hybrid) sd_lm_hybrid_adopt(ctx->tl.hybrid, st->tokens, (int32_t)n_keep);
    return SPECDEC_OK;
}

const specdec_token *specdec_state_tokens(const specdec_state *st, size_t *n) {
    if (n) *n = st ? (size_t)st->n : 0;
    return st ? st->tokens : NULL;
}

size_t specdec_state_bytes(const specdec_state *st) {
    return st ? sizeof *st + (size_t)st->n * sizeof *st->tokens + st->size : 0;
}

void specdec_state_free(specdec_state *st) {
    if (!st) return;
    free(st->tokens);
    free(st->buf);
    free(st);
}
