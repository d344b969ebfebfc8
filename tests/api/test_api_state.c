/* Saved states (include/specdec.h specdec_state_*), the prefix cache's
 * library door, on the dense fixture (with its draft model) and the qwen35
 * hybrid fixture (with its MTP block). A context that served other prompts in
 * between and then restores a saved state must continue exactly as the
 * context that never left that conversation: the same tokens, the same reuse
 * (n_cached), and the same drafts accepted (so the draft heads' hidden rows
 * came back too). A restored dense prefix, a restore into another context,
 * and a hybrid restored then cut short (re-decoded from the known tokens)
 * give a fresh context's tokens. Misuse gets SPECDEC_ERR_ARG. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_test_util.h"

#define DENSE "models/fixture-target.gguf"
#define DRAFT "models/fixture-draft.gguf"
#define HYBRID "models/fixture-q35-target.gguf"

typedef struct run_out {
    specdec_token tok[512];
    size_t n;
    specdec_stats st;
} run_out;

static specdec_token *tokenize(const specdec_model *m, const char *text, size_t *n) {
    specdec_token *t = NULL;
    specdec_error err = {0};
    if (specdec_tokenize(m, text, strlen(text), true, false, &t, n, &err) != SPECDEC_OK) fail_msg("%s", err.message);
    return t;
}

/* Generates 24 tokens after text (greedy, spec mode, no gate) and keeps the history. */
static void gen(specdec_context *c, const char *text, specdec_spec_mode mode, run_out *o) {
    size_t n = 0;
    specdec_token *p = tokenize(specdec_context_model(c), text, &n);
    specdec_generate_params gp = specdec_generate_default_params();
    gp.n_predict = 24;
    gp.spec = mode;
    gp.gate = 0; /* the gate decides on measured times: off, so drafts depend on the tokens alone */
    specdec_error err = {0};
    if (specdec_generate(c, p, n, &gp, NULL, NULL, &o->st, &err) != SPECDEC_OK) fail_msg("%s", err.message);
    specdec_free(p);
    const specdec_token *h = specdec_context_tokens(c, &o->n);
    assert_true(o->n <= 512);
    memcpy(o->tok, h, o->n * sizeof *h);
}

static void same(const run_out *a, const run_out *b) {
    assert_int_equal(a->n, b->n);
    assert_memory_equal(a->tok, b->tok, a->n * sizeof *a->tok);
}

static const char *P1 = "def add(a, b):\n    return a + b\n\ndef mul(a, b):";
static const char *P2 = "Write a haiku about rain.";

/* The text of history h (prompt + output) with more appended: the next turn. */
static char *next_turn(const specdec_model *m, const run_out *h, const char *more) {
    char *text = NULL;
    size_t len = 0;
    specdec_error err = {0};
    /* skip BOS-like specials: detokenize without specials, tokenize adds them back */
    if (specdec_detokenize(m, h->tok, h->n, false, &text, &len, &err) != SPECDEC_OK) fail_msg("%s", err.message);
    char *t = malloc(len + strlen(more) + 1);
    assert_non_null(t);
    memcpy(t, text, len);
    strcpy(t + len, more);
    specdec_free(text);
    return t;
}

/* X stays in conversation 1; Y serves another prompt in between and restores. */
static void check_resume(const char *path, const char *draft, specdec_spec_mode mode) {
    specdec_model *m = api_load(path), *d = draft ? api_load(draft) : NULL;
    specdec_context *x = api_context(m, d, 1024), *y = api_context(m, d, 1024);
    run_out *a = calloc(6, sizeof *a);
    assert_non_null(a);
    gen(x, P1, mode, &a[0]);
    gen(y, P1, mode, &a[1]);
    same(&a[0], &a[1]);
    specdec_state *s = NULL;
    specdec_error err = {0};
    assert_int_equal(specdec_state_save(y, &s, &err), SPECDEC_OK);
    size_t ns = 0;
    specdec_state_tokens(s, &ns);
    assert_int_equal(ns, a[1].n - 1); /* the last token generated was never forwarded */
    assert_true(specdec_state_bytes(s) >= specdec_state_size(y) - 64);
    gen(y, P2, mode, &a[2]);
    char *t2 = next_turn(m, &a[0], "\n\ndef sub(a, b):");
    size_t n2 = 0;
    specdec_token *p2 = tokenize(m, t2, &n2);
    size_t match = specdec_state_match(y, s, p2, n2);
    assert_true(match > 0);
    assert_int_equal(specdec_state_restore(y, s, match, &err), SPECDEC_OK);
    gen(x, t2, mode, &a[3]);
    gen(y, t2, mode, &a[4]);
    same(&a[3], &a[4]);
    assert_int_equal(a[4].st.n_cached, (int32_t)match);
    assert_int_equal(a[3].st.n_cached, a[4].st.n_cached);
    assert_int_equal(a[3].st.n_drafted, a[4].st.n_drafted);
    assert_int_equal(a[3].st.n_accepted, a[4].st.n_accepted);
    /* the same state into a third context, after the second moved on */
    specdec_context *z = api_context(m, d, 1024);
    assert_int_equal(specdec_state_restore(z, s, match, &err), SPECDEC_OK);
    gen(z, t2, mode, &a[5]);
    same(&a[3], &a[5]);
    specdec_context_free(z);
    free(p2);
    free(t2);
    specdec_state_free(s);
    specdec_context_free(x);
    specdec_context_free(y);
    specdec_model_free(d);
    specdec_model_free(m);
    free(a);
}

static void test_dense_resume(void **state) {
    (void)state;
    check_resume(DENSE, DRAFT, SPECDEC_SPEC_DRAFT);
    check_resume(DENSE, NULL, SPECDEC_SPEC_NGRAM);
}

static void test_hybrid_resume(void **state) {
    (void)state;
    check_resume(HYBRID, NULL, SPECDEC_SPEC_MTP);
    check_resume(HYBRID, NULL, SPECDEC_SPEC_NONE);
}

/* A dense state restored only in part: the prefix's rows alone, the rest prefilled. */
static void test_dense_partial(void **state) {
    (void)state;
    specdec_model *m = api_load(DENSE);
    specdec_context *c = api_context(m, NULL, 1024), *f = api_context(m, NULL, 1024);
    run_out *a = calloc(3, sizeof *a);
    assert_non_null(a);
    gen(c, P1, SPECDEC_SPEC_NGRAM, &a[0]);
    specdec_state *s = NULL;
    specdec_error err = {0};
    assert_int_equal(specdec_state_save(c, &s, &err), SPECDEC_OK);
    gen(c, P2, SPECDEC_SPEC_NGRAM, &a[1]);
    assert_int_equal(specdec_state_restore(c, s, 6, &err), SPECDEC_OK);
    size_t nh = 0;
    specdec_context_tokens(c, &nh);
    assert_int_equal(nh, 6);
    gen(c, "def add(a, b):\n    return a - b", SPECDEC_SPEC_NGRAM, &a[1]);
    gen(f, "def add(a, b):\n    return a - b", SPECDEC_SPEC_NGRAM, &a[2]);
    same(&a[1], &a[2]);
    assert_true(a[1].st.n_cached > 0 && a[1].st.n_cached <= 6);
    specdec_state_free(s);
    specdec_context_free(c);
    specdec_context_free(f);
    specdec_model_free(m);
    free(a);
}

/* A hybrid restores whole only; a prompt that leaves the state part way
 * matches nothing, and cutting the restored state short through generate
 * (its own prefix reuse) re-decodes the restored tokens: a fresh result. */
static void test_hybrid_rules(void **state) {
    (void)state;
    specdec_model *m = api_load(HYBRID);
    specdec_context *c = api_context(m, NULL, 1024), *f = api_context(m, NULL, 1024);
    run_out *a = calloc(3, sizeof *a);
    assert_non_null(a);
    gen(c, P1, SPECDEC_SPEC_NONE, &a[0]);
    specdec_state *s = NULL;
    specdec_error err = {0};
    assert_int_equal(specdec_state_save(c, &s, &err), SPECDEC_OK);
    size_t ns = 0;
    const specdec_token *st = specdec_state_tokens(s, &ns);
    assert_int_equal(specdec_state_restore(c, s, ns - 1, &err), SPECDEC_ERR_ARG);
    assert_non_null(strstr(err.message, "whole"));
    specdec_token *p = malloc((ns + 4) * sizeof *p);
    assert_non_null(p);
    memcpy(p, st, ns * sizeof *p);
    p[ns] = p[ns + 1] = 11;
    assert_int_equal(specdec_state_match(c, s, p, ns + 2), ns);
    p[ns / 2] ^= 1; /* leaves the state half way */
    assert_int_equal(specdec_state_match(c, s, p, ns + 2), 0);
    gen(c, P2, SPECDEC_SPEC_NONE, &a[1]);
    assert_int_equal(specdec_state_restore(c, s, ns, &err), SPECDEC_OK);
    gen(c, "def add(a, b):\n    return a - b", SPECDEC_SPEC_NONE, &a[1]);
    gen(f, "def add(a, b):\n    return a - b", SPECDEC_SPEC_NONE, &a[2]);
    same(&a[1], &a[2]);
    free(p);
    specdec_state_free(s);
    specdec_context_free(c);
    specdec_context_free(f);
    specdec_model_free(m);
    free(a);
}

static void test_misuse(void **state) {
    (void)state;
    specdec_model *m = api_load(DENSE), *h = api_load(HYBRID);
    specdec_context *c = api_context(m, NULL, 512), *ch = api_context(h, NULL, 512);
    run_out *a = calloc(1, sizeof *a);
    assert_non_null(a);
    gen(c, P1, SPECDEC_SPEC_NONE, &a[0]);
    specdec_state *s = NULL;
    specdec_error err = {0};
    assert_int_equal(specdec_state_save(NULL, &s, &err), SPECDEC_ERR_ARG);
    assert_null(s);
    assert_int_equal(specdec_state_save(c, NULL, &err), SPECDEC_ERR_ARG);
    assert_int_equal(specdec_state_save(c, &s, &err), SPECDEC_OK);
    assert_int_equal(specdec_state_restore(ch, s, 1, &err), SPECDEC_ERR_ARG);
    assert_non_null(strstr(err.message, "another model"));
    assert_int_equal(specdec_state_match(ch, s, a->tok, a->n), 0);
    size_t ns = 0;
    specdec_state_tokens(s, &ns);
    assert_int_equal(specdec_state_restore(c, s, ns + 1, &err), SPECDEC_ERR_ARG);
    assert_int_equal(specdec_state_restore(c, NULL, 0, &err), SPECDEC_ERR_ARG);
    assert_int_equal(specdec_state_match(c, s, a->tok, 1), 0); /* the last prompt token is never reused */
    assert_int_equal(specdec_state_match(c, s, a->tok, 2), 1);
    assert_int_equal(specdec_state_size(NULL), 0);
    assert_int_equal(specdec_state_bytes(NULL), 0);
    specdec_state_free(NULL);
    specdec_state_free(s);
    specdec_context_free(c);
    specdec_context_free(ch);
    specdec_model_free(m);
    specdec_model_free(h);
    free(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_dense_resume),  cmocka_unit_test(test_hybrid_resume), cmocka_unit_test(test_dense_partial),
        cmocka_unit_test(test_hybrid_rules), cmocka_unit_test(test_misuse),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
