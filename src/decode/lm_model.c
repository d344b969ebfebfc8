/* sd_lm over a model's inference context: the decode loop's calls map one to
 * one onto sd_forward / sd_context_truncate (model/model.h). */
#include "decode/lm.h"
#include "decode/lm_hybrid.h"

#include <string.h>

static int32_t ctx_n_ctx(void *self) { return sd_context_n_ctx(self); }
static int32_t ctx_len(void *self) { return sd_context_len(self); }
/* A context with recurrent layers refuses to drop positions (model.h): its
 * lm is an sd_lm_hybrid over sd_recm_from_context instead (lm_hybrid.h); a
 * truncate reaching here on one is an error. */
static sd_status ctx_truncate(void *self, int32_t n, sd_err *err) {
    sd_status st = sd_context_truncate(self, n);
    return st == SD_OK ? st : sd_err_set(err, st, "rollback to %d positions: the model cannot drop positions", n);
}
/* A KV cache truncates exactly whatever the forward was for: use is not needed. */
static sd_status ctx_forward(void *self, sd_lm_use use, const int32_t *tokens, int32_t S, float *logits,
                             sd_err *err) {
    (void)use;
    return sd_forward(self, tokens, S, logits, err);
}

static sd_status ctx_forward_tail(void *self, sd_lm_use use, const int32_t *tokens, int32_t S, int32_t n_tail,
                                  float *logits, sd_err *err) {
    (void)use;
    return sd_forward_tail(self, tokens, S, n_tail, logits, err);
}

/* sd_recm's forward_tail (a primitive: the discipline above it knows the use). */
static sd_status rec_forward_tail(void *self, const int32_t *tokens, int32_t S, int32_t n_tail, float *logits,
                                  sd_err *err) {
    return sd_forward_tail(self, tokens, S, n_tail, logits, err);
}

/* The first pass covers what the head's kernel serves in one pass over its
 * weights; a batch longer than n_batch has no second pass (one batch only). */
static sd_status ctx_forward_first(void *self, const int32_t *tokens, int32_t S, float *logits, int32_t *n_first,
                                   sd_err *err) {
    int32_t n = sd_model_head_pass_rows(sd_context_model(self));
    if (n > S || S > sd_context_n_batch(self) || sd_context_forward_hooked(self)) n = S; /* a batched sequence: one pass */
    *n_first = n;
    return n < S ? sd_forward_head(self, tokens, S, n, logits, err) : sd_forward(self, tokens, S, logits, err);
}

static sd_status ctx_logits_rest(void *self, float *logits, sd_err *err) { return sd_forward_more(self, logits, err); }

static sd_status ctx_forward_tree(void *self, const int32_t *tokens, const int32_t *parent, int32_t S, float *logits,
                                  sd_err *err) {
    return sd_forward_tree(self, tokens, parent, S, logits, err);
}

static sd_status ctx_keep_path(void *self, const int32_t *path, int32_t m, sd_err *err) {
    return sd_context_keep_path(self, path, m, err);
}

void sd_lm_from_context(sd_lm *lm, sd_context *c, const sd_model *m) {
    const bool tree = !sd_model_is_recurrent(m); /* one recurrent state cannot hold several branches */
    *lm = (sd_lm){.self = c, .n_vocab = m->hp.n_vocab, .n_ctx = ctx_n_ctx, .len = ctx_len,
                  .forward = ctx_forward, .forward_tail = ctx_forward_tail, .forward_first = ctx_forward_first,
                  .logits_rest = ctx_logits_rest, .truncate = ctx_truncate,
                  .forward_tree = tree ? ctx_forward_tree : NULL, .keep_path = tree ? ctx_keep_path : NULL};
}

sd_status sd_lm_forward_tail(sd_lm *lm, sd_lm_use use, const int32_t *tokens, int32_t S, int32_t n_tail,
                             float *logits, sd_err *err) {
    if (lm->forward_tail) return lm->forward_tail(lm->self, use, tokens, S, n_tail, logits, err);
    sd_status st = lm->forward(lm->self, use, tokens, S, logits, err);
    if (st == SD_OK && n_tail < S && n_tail > 0)
        memmove(logits, logits + (size_t)(S - n_tail) * (size_t)lm->n_vocab,
                (size_t)n_tail * (size_t)lm->n_vocab * sizeof *logits);
    return st;
}

sd_status sd_lm_check_same_vocab(const sd_model *target, const sd_model *draft, sd_err *err) {
    if (target->hp.n_vocab == draft->hp.n_vocab && sd_tokenizer_same_vocab(target->tok, draft->tok))
        return SD_OK;
    return sd_err_set(err, SD_ERR_VOCAB,
                      "the draft model's vocabulary (%d tokens) differs from the target's (%d tokens): "
                      "a draft must share the target's tokenizer",
                      draft->hp.n_vocab, target->hp.n_vocab);
}

/* ---- the rollback primitives of lm_hybrid.h over a context ---- */
static sd_status ctx_capture_init(void *self, sd_capture_kind kind, int32_t n_slots, sd_err *err) {
    return sd_context_capture_init(self, kind, n_slots, err);
}
static void ctx_capture_from(void *self, int32_t p) { sd_context_capture_from(self, p); }
static sd_status ctx_load(void *self, int32_t p, sd_err *err) { return sd_context_capture_load(self, p, err); }
static sd_status ctx_replay(void *self, int32_t p, sd_err *err) { return sd_context_replay(self, p, err); }
static sd_status ctx_save(void *self, void *buf, sd_err *err) {
    return sd_context_state_save(self, buf, sd_context_state_bytes(self), err);
}
static sd_status ctx_restore(void *self, const void *buf, sd_err *err) {
    return sd_context_state_restore(self, buf, sd_context_state_bytes(self), err);
}
static void ctx_reset(void *self) { (void)sd_context_truncate(self, 0); }
static void ctx_touch(void *self) { sd_context_capture_touch(self); }

void sd_recm_from_context(sd_recm *r, sd_context *c) {
    const sd_model *m = sd_context_model(c);
    *r = (sd_recm){.self = c, .n_vocab = m->hp.n_vocab, .n_ctx = ctx_n_ctx, .len = ctx_len,
                   .forward_tail = rec_forward_tail, .forward_first = ctx_forward_first,
                   .logits_rest = ctx_logits_rest, .capture_init = ctx_capture_init,
                   .capture_from = ctx_capture_from, .load = ctx_load, .replay = ctx_replay, .save = ctx_save,
                   .restore = ctx_restore, .reset = ctx_reset, .touch = ctx_touch, .state_bytes = sd_context_state_bytes(c),
                   .state_bytes_moved = sd_model_recurrent_bytes(m)};
}
