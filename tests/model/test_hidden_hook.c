/* model: the hidden-state hook (sd_context_request_hidden). With the hook on,
 * the logits are bitwise those of a context without it, for every way of
 * running the positions (one forward, single steps, splits, n_batch splits,
 * the two-pass head, a rollback and re-forward); the stored rows are
 * batch-invariant themselves; the layer-0 row is the token's embedding (the
 * residual stream entering layer 0) and the id == n_layer row is the normed
 * final hidden; bad requests are refused. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model_test_util.h"

#define N_TOK 11

typedef struct run_out {
    float *logits; /* [N_TOK][n_vocab] */
    float *hid;    /* [N_TOK][n_ids * n_embd] */
} run_out;

/* Runs tokens in the given splits on a fresh context (hook on when ids is
 * not NULL; the last split goes through the two-pass head when two_pass). */
static void run(const sd_model *m, const int32_t *tokens, const int *splits, int n_splits, int n_batch,
                int n_threads, const int32_t *ids, int n_ids, bool two_pass, run_out *o) {
    const size_t V = (size_t)m->hp.n_vocab, row = (size_t)n_ids * (size_t)m->hp.n_embd;
    sd_context *c = NULL;
    sd_err err = {0};
    assert_int_equal(sd_context_init(m, 32, n_batch, n_threads, &c, &err), SD_OK);
    if (ids) assert_int_equal(sd_context_request_hidden(c, ids, n_ids, &err), SD_OK);
    int done = 0;
    for (int i = 0; i < n_splits; i++) {
        float *l = o->logits + (size_t)done * V;
        if (two_pass && i == n_splits - 1) {
            assert_int_equal(sd_forward_head(c, tokens + done, splits[i], 1, l, &err), SD_OK);
            if (splits[i] > 1) assert_int_equal(sd_forward_more(c, l + V, &err), SD_OK);
        } else {
            assert_int_equal(sd_forward(c, tokens + done, splits[i], l, &err), SD_OK);
        }
        done += splits[i];
    }
    assert_int_equal(done, N_TOK);
    for (int p = 0; ids && p < N_TOK; p++) {
        const float *h = sd_context_hidden(c, p);
        assert_non_null(h);
        memcpy(o->hid + (size_t)p * row, h, row * sizeof *h);
    }
    assert_null(sd_context_hidden(c, N_TOK)); /* past len */
    sd_context_free(c);
}

static void assert_same(const float *a, const float *b, size_t n, const char *what) {
    if (memcmp(a, b, n * sizeof *a) != 0) fail_msg("%s differ bitwise", what);
}

static void check_hook(const sd_model *m, uint32_t seed) {
    const int V = m->hp.n_vocab, E = m->hp.n_embd, L = m->hp.n_layer;
    const int32_t ids[3] = {0, L / 2, L}; /* layer inputs and the final normed hidden */
    const size_t nl = (size_t)N_TOK * V, nh = (size_t)N_TOK * 3 * E;
    int32_t tokens[N_TOK];
    test_tokens(tokens, N_TOK, V, seed);
    run_out ref = {malloc(nl * sizeof(float)), malloc(nh * sizeof(float))};
    run_out off = {malloc(nl * sizeof(float)), NULL};
    run_out got = {malloc(nl * sizeof(float)), malloc(nh * sizeof(float))};
    assert_true(ref.logits && ref.hid && off.logits && got.logits && got.hid);

    const int whole[1] = {N_TOK}, singles[N_TOK] = {1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1};
    const int mixed[3] = {4, 6, 1}, verify[3] = {2, 3, 6};
    run(m, tokens, whole, 1, 16, 2, NULL, 0, false, &off);
    run(m, tokens, singles, N_TOK, 16, 1, ids, 3, false, &ref);
    assert_same(off.logits, ref.logits, nl, "logits with the hook (single steps) and without");

    struct { const int *s; int n, nb, nt; bool two; const char *what; } v[] = {
        {whole, 1, 16, 2, false, "one forward"},
        {mixed, 3, 4, 2, false, "splits 4+6+1, n_batch 4"},
        {verify, 3, 16, 1, true, "splits 2+3+6, two-pass head last"},
    };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) {
        memset(got.hid, 0, nh * sizeof(float));
        run(m, tokens, v[i].s, v[i].n, v[i].nb, v[i].nt, ids, 3, v[i].two, &got);
        assert_same(off.logits, got.logits, nl, v[i].what);
        assert_same(ref.hid, got.hid, nh, v[i].what);
    }

    /* What the rows hold: layer 0's input is the embedding row; the final row
     * is finite, not the raw residual (it is normed: mean square ~ w^2), and
     * differs between positions. */
    float *emb = malloc((size_t)E * sizeof *emb);
    assert_non_null(emb);
    for (int p = 0; p < N_TOK; p++) {
        sd_matrix_get_row(&m->tok_embd, tokens[p], emb);
        assert_same(emb, ref.hid + (size_t)p * 3 * E, (size_t)E, "layer-0 row vs token embedding");
        const float *fin = ref.hid + (size_t)p * 3 * E + 2 * E;
        for (int i = 0; i < E; i++) assert_true(isfinite(fin[i]));
    }
    assert_true(memcmp(ref.hid + 2 * E, ref.hid + 3 * E + 2 * E, (size_t)E * sizeof(float)) != 0);
    free(emb);

    /* Rollback: rows of rejected positions are rewritten by the re-forward. */
    sd_context *c = NULL;
    sd_err err = {0};
    assert_int_equal(sd_context_init(m, 32, 16, 2, &c, &err), SD_OK);
    assert_int_equal(sd_context_request_hidden(c, ids, 3, &err), SD_OK);
    assert_int_equal(sd_forward(c, tokens, 6, got.logits, &err), SD_OK);
    int32_t junk[4];
    test_tokens(junk, 4, V, seed + 99);
    assert_int_equal(sd_forward(c, junk, 4, got.logits, &err), SD_OK);
    sd_context_truncate(c, 6);
    assert_null(sd_context_hidden(c, 6));
    assert_int_equal(sd_forward(c, tokens + 6, N_TOK - 6, got.logits, &err), SD_OK);
    for (int p = 0; p < N_TOK; p++)
        assert_same(ref.hid + (size_t)p * 3 * E, sd_context_hidden(c, p), (size_t)3 * E, "row after rollback");

    /* Refusals, and turning the hook off. */
    const int32_t bad[2] = {0, L + 1}, neg[1] = {-1};
    assert_int_equal(sd_context_request_hidden(c, bad, 2, &err), SD_ERR_ARG);
    assert_non_null(strstr(err.msg, "out of range"));
    assert_int_equal(sd_context_request_hidden(c, neg, 1, &err), SD_ERR_ARG);
    assert_int_equal(sd_context_request_hidden(c, ids, SD_HIDDEN_MAX_IDS + 1, &err), SD_ERR_ARG);
    assert_non_null(sd_context_hidden(c, 0)); /* a refused request leaves the hook as it was */
    assert_int_equal(sd_context_request_hidden(c, NULL, 0, &err), SD_OK);
    assert_null(sd_context_hidden(c, 0));
    sd_context_free(c);
    free(ref.logits), free(ref.hid), free(off.logits), free(got.logits), free(got.hid);
}

static void test_tiny(void **state) {
    const char *arch = *state;
    char path[256];
    sd_model *m = tiny_load_small(arch, path, sizeof path);
    assert_non_null(m);
    check_hook(m, 5);
    sd_model_free(m);
    remove(path);
}

static void test_fixture_target(void **state) {
    (void)state;
    sd_model *m = NULL;
    sd_err err = {0};
    if (sd_model_load("models/fixture-target.gguf", &m, &err) != SD_OK) fail_msg("%s", err.msg);
    check_hook(m, 7);
    sd_model_free(m);
}

int main(int argc, char **argv) {
    (void)argc;
    test_passive_omp(argv);
    static const char *archs[] = {"llama", "qwen2", "qwen3"};
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_prestate(test_tiny, (void *)archs[0]),
        cmocka_unit_test_prestate(test_tiny, (void *)archs[1]),
        cmocka_unit_test_prestate(test_tiny, (void *)archs[2]),
        cmocka_unit_test(test_fixture_target),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
