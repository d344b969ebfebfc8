/* The MTP drafter (decode/drafter_mtp.c) on the committed qwen35 fixture,
 * without the decode loop (a recurrent target rolls back through state
 * snapshots here):
 *  - its chain of K drafts equals the head run by hand: the real pairs
 *    (token p, h_{p-1}) in one batch, then each draft fed back with the
 *    head's own output (sd_mtp_forward);
 *  - after the target's context changes (restored to a snapshot, then other
 *    tokens), a proposal equals a fresh drafter's on the new context: the
 *    head's pairs roll back with the target;
 *  - the first step of the head agrees with the target's own greedy token
 *    two positions ahead somewhere (the block is trained: α > 0);
 *  - a target without an MTP block is refused. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "decode/drafter.h"
#include "decode/sampler.h"
#include "model/model.h"
#include "support/fixture_load.h"

#define TARGET "models/fixture-q35-target.gguf"
#define K 4

static const char TEXT[] = "def parse(self, text):\n    tokens = []\n    for line in text.splitlines():\n";

/* TEXT's tokens (n of them, 8 <= n < 60: one batch, room for the drafts). */
static int32_t *text_ids(const sd_model *m, int *n) {
    int32_t *ids = NULL;
    size_t n_ids = 0;
    sd_err err = {0};
    assert_int_equal(sd_tokenize(m->tok, TEXT, strlen(TEXT), true, false, &ids, &n_ids, &err), SD_OK);
    assert_true(n_ids >= 8 && n_ids < 60);
    *n = (int)n_ids;
    return ids;
}

/* Forwards tokens into c (in one batch; n <= 64). */
static void feed(sd_context *c, const int32_t *tokens, int n, float *logits) {
    sd_err err = {0};
    if (sd_forward_tail(c, tokens, n, 1, logits, &err) != SD_OK) fail_msg("%s", err.msg);
}

/* The chain by hand: ctx[0..n) committed, the target holding rows 0..n-2. */
static void chain_by_hand(const sd_model *m, sd_context *tc, const int32_t *ctx, int n, int k, int32_t *out) {
    sd_model *v = NULL;
    sd_context *hc = NULL;
    sd_err err = {0};
    assert_int_equal(sd_mtp_view_init(m, &v, &err), SD_OK);
    assert_int_equal(sd_context_init(v, 256, 64, 1, &hc, &err), SD_OK);
    const int64_t E = m->hp.n_embd, V = m->hp.n_vocab;
    float *h = malloc((size_t)(n - 1) * E * sizeof *h), *y = malloc((size_t)(n - 1) * E * sizeof *y);
    float *lg = malloc((size_t)V * sizeof *lg);
    for (int p = 0; p < n - 1; p++) memcpy(h + p * E, sd_context_hidden(tc, p), (size_t)E * sizeof *h);
    assert_int_equal(sd_mtp_forward(hc, ctx + 1, h, n - 1, y, 1, lg, &err), SD_OK);
    float *last = y + (int64_t)(n - 2) * E;
    for (int i = 0; i < k; i++) {
        out[i] = sd_argmax(lg, (int32_t)V);
        if (i + 1 == k) break;
        memcpy(h, last, (size_t)E * sizeof *h);
        assert_int_equal(sd_mtp_forward(hc, &out[i], h, 1, y, 1, lg, &err), SD_OK);
        last = y;
    }
    free(h), free(y), free(lg);
    sd_context_free(hc);
    sd_mtp_view_free(v);
}

static void test_chain_and_rollback(void **state) {
    (void)state;
    sd_model *m = load(TARGET);
    sd_err err = {0};
    int n;
    int32_t *ids = text_ids(m, &n);
    float *lg = malloc((size_t)m->hp.n_vocab * sizeof *lg);
    sd_context *tc = NULL;
    assert_int_equal(sd_context_init(m, 256, 64, 1, &tc, &err), SD_OK);
    sd_drafter d = {0};
    assert_int_equal(sd_drafter_mtp_init(&d, tc, 1, 64, &err), SD_OK);
    assert_string_equal(d.name, "mtp");
    assert_false(d.stochastic);
    /* context = ids (ids[n-1] plays a0): the target holds rows 0..n-2 */
    const int keep = n - 5;
    feed(tc, ids, keep, lg);
    void *snap = malloc(sd_context_state_bytes(tc));
    assert_int_equal(sd_context_state_save(tc, snap, sd_context_state_bytes(tc), &err), SD_OK);
    feed(tc, ids + keep, n - 1 - keep, lg);
    int32_t got[K], want[K];
    assert_int_equal(d.propose(d.self, ids, n, K, got, NULL, &err), K);
    chain_by_hand(m, tc, ids, n, K, want);
    assert_memory_equal(got, want, sizeof got);
    /* the same context again: the same drafts (the chain's own positions are dropped) */
    assert_int_equal(d.propose(d.self, ids, n, K, got, NULL, &err), K);
    assert_memory_equal(got, want, sizeof got);
    /* another continuation after the snapshot */
    int32_t *alt = malloc((size_t)n * sizeof *alt);
    memcpy(alt, ids, (size_t)n * sizeof *alt);
    for (int i = keep; i < n; i++) alt[i] = (alt[i] * 7 + 11) % m->hp.n_vocab;
    assert_int_equal(sd_context_state_restore(tc, snap, sd_context_state_bytes(tc), &err), SD_OK);
    feed(tc, alt + keep, n - 1 - keep, lg);
    assert_int_equal(d.propose(d.self, alt, n, K, got, NULL, &err), K);
    chain_by_hand(m, tc, alt, n, K, want);
    assert_memory_equal(got, want, sizeof got);
    /* too little of the context run by the target: no proposal */
    assert_int_equal(d.propose(d.self, alt, n + 1, K, got, NULL, &err), 0);
    sd_drafter_free(&d);
    /* the drafter turned its hook off again */
    assert_null(sd_context_hidden(tc, 0));
    free(alt), free(snap), free(lg), free(ids);
    sd_context_free(tc);
    sd_model_free(m);
}

/* Greedy text of the target; the head's first draft at each position vs
 * the target's own token two ahead. */
static void test_head_is_trained(void **state) {
    (void)state;
    sd_model *m = load(TARGET);
    sd_err err = {0};
    int P;
    int32_t *ids = text_ids(m, &P);
    const int G = 40, V = m->hp.n_vocab;
    int32_t seq[256];
    memcpy(seq, ids, (size_t)P * sizeof *ids);
    float *lg = malloc((size_t)V * sizeof *lg);
    sd_context *tc = NULL;
    assert_int_equal(sd_context_init(m, 256, 64, 1, &tc, &err), SD_OK);
    feed(tc, seq, P, lg);
    for (int i = 0; i < G; i++) {
        seq[P + i] = sd_argmax(lg, V);
        feed(tc, seq + P + i, 1, lg);
    }
    sd_context_free(tc);
    assert_int_equal(sd_context_init(m, 256, 64, 1, &tc, &err), SD_OK);
    sd_drafter d = {0};
    assert_int_equal(sd_drafter_mtp_init(&d, tc, 1, 64, &err), SD_OK);
    feed(tc, seq, P - 1, lg);
    int hits = 0;
    for (int N = P; N < P + G; N++) { /* ctx[0..N), the target holding N-1 rows */
        int32_t dft;
        assert_int_equal(d.propose(d.self, seq, N, 1, &dft, NULL, &err), 1);
        hits += dft == seq[N];
        feed(tc, seq + N - 1, 1, lg);
    }
    print_message("MTP first-step hits %d / %d\n", hits, G);
    assert_true(hits > 0);
    sd_drafter_free(&d);
    sd_context_free(tc);
    free(lg), free(ids);
    sd_model_free(m);
}

static void test_refused(void **state) {
    (void)state;
    sd_model *m = load("models/fixture-target.gguf");
    sd_context *tc = NULL;
    sd_err err = {0};
    assert_int_equal(sd_context_init(m, 64, 16, 1, &tc, &err), SD_OK);
    sd_drafter d = {0};
    assert_int_equal(sd_drafter_mtp_init(&d, tc, 1, 16, &err), SD_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "no MTP block"));
    sd_context_free(tc);
    sd_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_chain_and_rollback),
        cmocka_unit_test(test_head_is_trained),
        cmocka_unit_test(test_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
