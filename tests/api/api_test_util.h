/* Helpers shared by the public-API tests (header-only: tests/api/ files other
 * than test_*.c are not compiled on their own). Each fails the running cmocka
 * test with the library's message when the call does. */
#ifndef SD_TESTS_API_UTIL_H
#define SD_TESTS_API_UTIL_H

#include <string.h>

#include "specdec.h"

/* The model at path (default params). */
static inline specdec_model *api_load(const char *path) {
    specdec_model *m = NULL;
    specdec_error err = {0};
    if (specdec_model_load(path, NULL, &m, &err) != SPECDEC_OK) fail_msg("load %s: %s", path, err.message);
    return m;
}

/* A one-thread context of m with draft (NULL: none); n_ctx 0 = the default. */
static inline specdec_context *api_context(const specdec_model *m, const specdec_model *draft, int32_t n_ctx) {
    specdec_context_params cp = specdec_context_default_params();
    cp.n_threads = 1;
    cp.n_ctx = n_ctx;
    cp.draft = draft;
    specdec_context *c = NULL;
    specdec_error err = {0};
    if (specdec_context_init(m, &cp, &c, &err) != SPECDEC_OK) fail_msg("context: %s", err.message);
    return c;
}

/* Generates after text on c (emptied first); the new tokens into out[cap],
 * their count returned (more than cap fails the test). */
static inline int32_t api_generate_after(specdec_context *c, const specdec_model *m, const char *text,
                                         const specdec_generate_params *gp, specdec_token *out, size_t cap,
                                         specdec_stats *st) {
    specdec_token *t = NULL;
    size_t n = 0, n_hist = 0;
    specdec_error err = {0};
    if (specdec_tokenize(m, text, strlen(text), true, false, &t, &n, &err) != SPECDEC_OK) fail_msg("%s", err.message);
    specdec_context_reset(c);
    if (specdec_generate(c, t, n, gp, NULL, NULL, st, &err) != SPECDEC_OK) fail_msg("generate: %s", err.message);
    const specdec_token *h = specdec_context_tokens(c, &n_hist);
    assert_true(n_hist >= n && n_hist - n <= cap);
    memcpy(out, h + n, (n_hist - n) * sizeof *out);
    specdec_free(t);
    return (int32_t)(n_hist - n);
}

#endif
