/* EAGLE-3 drafter (ARCHITECTURE.md §7; llama.cpp common/speculative.cpp,
 * common_speculative_impl_draft_eagle3): a one-layer head that reads the
 * target's hidden states at its target_layers and drafts a chain of K greedy
 * tokens, one head step per token (drafter_head.c).
 *
 * Head KV position P holds the pair (ctx[P+1], g_P), g_P = fc(target hidden
 * rows of position P); a chained step feeds the head's own pre-norm output
 * back as g. Its logits are in the draft vocabulary, mapped through d2t. */
#include "decode/drafter_head.h"

static const sd_head_kind eagle3 = {
    .name = "eagle3", .encode = sd_eagle3_encode, .forward = sd_eagle3_forward, .token = sd_eagle3_token};

sd_status sd_drafter_eagle3_init(sd_drafter *d, const sd_model *head, sd_context *target, int n_threads,
                                 int32_t n_batch, sd_err *err) {
    const sd_model *tm = sd_context_model(target);
    sd_status st = sd_eagle3_check(head, tm, err);
    if (st == SD_OK) st = sd_lm_check_same_vocab(tm, head, err);
    if (st != SD_OK) return st;
    return sd_drafter_head_init(d, &eagle3, head, NULL, target, head->hp.target_layers, 3, head->hp.n_draft_vocab,
                                n_threads, n_batch, err);
}
