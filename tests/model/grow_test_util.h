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
#include "support/tiny_model.h"
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

static inline void grow_run(const char *cmd) {
    if (system(cmd) != 0) fail_msg("failed: %s", cmd);
}

/* sd-genmodel --grow SMALL --shape SHAPE --type TYPE into a fresh temp path
 * (returned in out; tag names it). */
static inline void grow_file(const char *small, const char *shape, const char *type, const char *tag, char *out,
                             size_t cap) {
    const char *dir = getenv("SD_BUILD_DIR");
    assert_non_null(dir);
    tiny_model_temp_path(out, cap, tag);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s/sd-genmodel' --grow '%s' --shape %s --type %s -o '%s' 2>/dev/null", dir, small,
             shape, type, out);
    grow_run(cmd);
}

/* `specdec quantize IN OUT f32` into a fresh temp path (returned in out). */
static inline void grow_to_f32(const char *in, const char *tag, char *out, size_t cap) {
    const char *bin = getenv("SD_SPECDEC_BIN");
    assert_non_null(bin);
    tiny_model_temp_path(out, cap, tag);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "'%s' quantize '%s' '%s' f32 >/dev/null", bin, in, out);
    grow_run(cmd);
}

/* Trunk logits [n][n_vocab] of tokens[0..n) and the hiddens after output_norm
 * [n][n_embd] (*h; the caller frees both). min_distinct (may be NULL): the
 * fewest distinct experts any MoE layer ran (INT32_MAX for a dense model). */
static inline float *grow_trunk(const sd_model *m, const int32_t *tokens, int32_t n, float **h,
                                int32_t *min_distinct) {
    float *out = malloc((size_t)n * (size_t)m->hp.n_vocab * sizeof *out);
    *h = malloc((size_t)n * (size_t)m->hp.n_embd * sizeof **h);
    assert_non_null(out);
    assert_non_null(*h);
    sd_context *c = NULL;
    sd_err err = {0};
    assert_int_equal(sd_context_init(m, n, n, 2, &c, &err), SD_OK);
    const int32_t id = m->hp.n_layer;
    assert_int_equal(sd_context_request_hidden(c, &id, 1, &err), SD_OK);
    assert_int_equal(sd_forward(c, tokens, n, out, &err), SD_OK);
    for (int32_t p = 0; p < n; p++)
        memcpy(*h + (size_t)p * m->hp.n_embd, sd_context_hidden(c, p), (size_t)m->hp.n_embd * sizeof **h);
    if (min_distinct) {
        *min_distinct = INT32_MAX;
        for (int32_t il = 0; il < m->hp.n_layer; il++) {
            int32_t u = sd_context_moe_distinct(c, il);
            if (u >= 0 && u < *min_distinct) *min_distinct = u;
        }
    }
    sd_context_free(c);
    return out;
}

#endif
