/* Helpers shared by the public-API tests (header-only: tests/api/ files other
 * than test_*.c are not compiled on their own). Each fails the running cmocka
 * test with the library's message when the call does. */
#ifndef SD_TESTS_API_UTIL_H
#define SD_TESTS_API_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "specdec.h"

/* The model at path (default params). */
/* Under the sanitizers (SD_ASAN, a Debug build) or an emulator (SD_TEST_EMULATED:
 * scripts/test_aarch64.sh) forwards are slow: the sweeps then cover every
 * path once rather than every combination. */
static inline bool api_test_slow(void) { return getenv("SD_ASAN") || getenv("SD_TEST_EMULATED"); }

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

/* A bench prompt file's text (malloc'd, the caller frees it) with its first
 * line "class: NAME" dropped; NAME into cls[cls_cap] when cls is not NULL
 * ("" without such a line). Fails the test if the file cannot be read. */
static inline char *api_bench_prompt(const char *path, char *cls, size_t cls_cap) {
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("cannot open %s", path);
    char *buf = calloc(1, 1 << 16);
    if (!buf) fail_msg("out of memory");
    size_t len = fread(buf, 1, (1 << 16) - 1, f);
    fclose(f);
    buf[len] = 0;
    if (cls && cls_cap) cls[0] = 0;
    char *nl = strchr(buf, '\n');
    if (!strncmp(buf, "class:", 6) && nl) {
        if (cls && cls_cap) {
            char fmt[32]; /* " %<20 digits>s" fits */
            snprintf(fmt, sizeof fmt, " %%%zus", cls_cap - 1);
            sscanf(buf + 6, fmt, cls);
        }
        memmove(buf, nl + 1, strlen(nl + 1) + 1);
    }
    return buf;
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
