/* MTP drafter (DESIGN.md §7; llama.cpp common/speculative.cpp, the "single
 * trained head" MTP mode): the target file's own MTP block drafts a chain of
 * K greedy tokens, one head step per token (drafter_head.c).
 *
 * Head index i holds the pair of position p = i + 1, (ctx[p], h_{p-1}), h
 * the target's hidden after output_norm (model.h: the view's index i is
 * position i + 1); a chained step feeds the head's own output after
 * head_norm back as h. */
#include "decode/drafter_head.h"

static sd_status mtp_forward(sd_context *hc, const sd_model *target, const int32_t *tokens, const float *h,
                             int32_t S, float *y, int32_t n_tail, float *logits, sd_err *err) {
    (void)target; /* the view borrows the target's weights already */
    return sd_mtp_forward(hc, tokens, h, S, y, n_tail, logits, err);
}

static const sd_head_kind mtp = {.name = "mtp", .forward = mtp_forward, .free_head = sd_mtp_view_free};

sd_status sd_drafter_mtp_init(sd_drafter *d, sd_context *target, int n_threads, int32_t n_batch, sd_err *err) {
    const sd_model *tm = sd_context_model(target);
    sd_model *view = NULL;
    sd_status st = sd_mtp_view_init(tm, &view, err);
    if (st != SD_OK) return st;
    const int32_t id = tm->hp.n_layer; /* the hidden after output_norm */
    return sd_drafter_head_init(d, &mtp, view, view, target, &id, 1, tm->hp.n_vocab, n_threads, n_batch, err);
}
