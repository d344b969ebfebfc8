/* Helpers of the grow tests (test_grow.c, test_grow_q35.c, test_grow_q35moe.c),
 * which compare a small model with the same model grown into a bigger shape.
 * Header-only; include it after cmocka.h (the helpers assert). */
#ifndef SD_TESTS_GROW_UTIL_H
#define SD_TESTS_GROW_UTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "tokenizer/tokenizer.h"

/* The first n tokens of bench/prompts/code-py.txt in m's vocabulary. */
static inline void grow_prompt_tokens(const sd_model *m, int32_t *tokens, size_t n) {
    FILE *f = fopen("bench/prompts/code-py.txt", "rb");
    assert_non_null(f);
    char text[4096];
    size_t len = fread(text, 1, sizeof text, f);
    fclose(f);
    int32_t *ids = NULL;
    size_t got = 0;
    sd_err err = {0};
    assert_int_equal(sd_tokenize(m->tok, text, len, false, false, &ids, &got, &err), SD_OK);
    assert_true(got >= n);
    memcpy(tokens, ids, n * sizeof *tokens);
    free(ids);
}

/* MTP logits [n - 1][n_vocab] of the pairs (tokens[p], h[p - 1]), p = 1..n-1,
 * h: the trunk's hidden rows [n][n_embd]. The caller frees the result. */
static inline float *grow_mtp_logits(const sd_model *m, const int32_t *tokens, const float *h, int32_t n) {
    sd_model *v = NULL;
    sd_context *c = NULL;
    sd_err err = {0};
    float *out = malloc((size_t)(n - 1) * (size_t)m->hp.n_vocab * sizeof *out);
    assert_non_null(out);
    assert_int_equal(sd_mtp_view_init(m, &v, &err), SD_OK);
    assert_int_equal(sd_context_init(v, n, n, 2, &c, &err), SD_OK);
    assert_int_equal(sd_mtp_forward(c, tokens + 1, h, n - 1, NULL, n - 1, out, &err), SD_OK);
    sd_context_free(c);
    sd_mtp_view_free(v);
    return out;
}

#endif
