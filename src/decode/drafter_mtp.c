/* MTP drafter (ARCHITECTURE.md §7; llama.cpp common/speculative.cpp, the "single
 * trained head" MTP mode): the target file's own MTP block drafts a chain of
 * K greedy tokens, one head step per token (drafter_head.c).
 *
 * Head index i holds the pair of position p = i + 1, (ctx[p], h_{p-1}), h
 * the target's hidden after output_norm (model.h: the view's index i is
 * position i + 1); a chained step feeds the head's own output after
 * head_norm back as h. The block is the target file's own or a sidecar's
 * (an mtp_only file, llama.cpp's mtp-*.gguf): the same view either way. */
#include "decode/drafter_head.h"

static sd_status mtp_forward(sd_context *hc, const sd_model *target, const int32_t *tokens, const float *h,
                             int32_t S, float *y, int32_t n_tail, float *logits, sd_err *err) {
    (void)target; /* the view borrows the target's weights already */
    return sd_mtp_forward(hc, tokens, h, S, y, n_tail, logits, err);
}

static const sd_head_kind mtp_kind = {.name = "mtp", .forward = mtp_forward, .free_head = sd_mtp_view_free};

/* mtp: the model whose MTP block drafts (the target's own, or a sidecar). */
static sd_status mtp_init(sd_drafter *d, const sd_model *mtp, sd_context *target, int n_threads, int32_t n_batch,
                          sd_err *err) {
    const sd_model *tm = sd_context_model(target);
    sd_status st = sd_mtp_check(mtp, tm, err);
    sd_model *view = NULL;
    if (st == SD_OK) st = sd_mtp_view_init(mtp, &view, err);
    if (st != SD_OK) return st;
    const int32_t id = tm->hp.n_layer; /* the target's hidden after output_norm */
    return sd_drafter_head_init(d, &mtp_kind, view, view, target, &id, 1, tm->hp.n_vocab, n_threads, n_batch, err);
}

sd_status sd_drafter_mtp_init(sd_drafter *d, sd_context *target, int n_threads, int32_t n_batch, sd_err *err) {
    return mtp_init(d, sd_context_model(target), target, n_threads, n_batch, err);
}

sd_status sd_drafter_mtp_sidecar_init(sd_drafter *d, const sd_model *sidecar, sd_context *target, int n_threads,
                                      int32_t n_batch, sd_err *err) {
    return mtp_init(d, sidecar, target, n_threads, n_batch, err);
}
