/* model/forward_ragged: several sequences in one ragged batch. Each of four
 * sequences follows its own schedule of prefill chunks, decode tokens and
 * verify windows with rollbacks (a truncate for the dense fixture; a state
 * snapshot restored for the qwen35 hybrid, whose recurrent state cannot be
 * truncated); step t runs op t of every sequence in ONE sd_forward_ragged.
 * Every logits row of every sequence must be bitwise the row the same
 * schedule gives on a context of its own (sd_forward_tail), with another
 * thread count: batch invariance per sequence (docs/BATCHING.md). The same
 * on tiny mixture-of-experts models (qwen3moe, qwen35moe). Also the
 * refusals of a bad ragged batch. */
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
#include "support/fixture_load.h"

#define N_SEQ 4
#define MAX_OPS 8
#define N_CTX 96

/* One op of a schedule: forward S tokens (logits of the last n_tail), or
 * (S = 0) roll back: keep `keep` of the last forward's rows. */
typedef struct op {
    int S, n_tail, keep;
} op;

/* Four different shapes: A a prompt then decode and verify windows, B long
 * prefill chunks, C decode tokens, D verify windows of 3 with rollbacks. */
static const op sched[N_SEQ][MAX_OPS] = {
    {{7, 1, 0}, {1, 1, 0}, {4, 4, 0}, {0, 0, 2}, {1, 1, 0}, {5, 5, 0}, {0, 0, 1}, {1, 1, 0}},
    {{12, 0, 0}, {12, 1, 0}, {9, 1, 0}, {1, 1, 0}, {1, 1, 0}, {3, 3, 0}, {0, 0, 3}, {2, 1, 0}},
    {{3, 1, 0}, {1, 1, 0}, {1, 1, 0}, {1, 1, 0}, {1, 1, 0}, {1, 1, 0}, {1, 1, 0}, {1, 1, 0}},
    {{5, 1, 0}, {3, 3, 0}, {0, 0, 1}, {3, 3, 0}, {0, 0, 0}, {3, 3, 0}, {0, 0, 2}, {1, 1, 0}},
};

/* The state of one sequence as its schedule goes. */
typedef struct seq {
    sd_context *c;
    int32_t tokens[N_CTX];
    int next;             /* tokens used so far */
    void *snap;           /* hybrid: the state before the last forward */
    size_t snap_bytes;
    int last_S;
    float *logits;        /* [rows of all ops][n_vocab] */
    int rows;
} seq;

static void seq_init(seq *q, const sd_model *m, int i, int n_threads) {
    memset(q, 0, sizeof *q);
    sd_err err = {0};
    assert_int_equal(sd_context_init(m, N_CTX, 16, n_threads, &q->c, &err), SD_OK);
    test_tokens(q->tokens, N_CTX, m->hp.n_vocab, 100u + (uint32_t)i);
    q->snap_bytes = sd_context_state_bytes(q->c);
    q->snap = malloc(q->snap_bytes);
    q->logits = calloc((size_t)MAX_OPS * 16, (size_t)m->hp.n_vocab * sizeof(float));
    assert_non_null(q->snap);
    assert_non_null(q->logits);
}

static void seq_free(seq *q) {
    sd_context_free(q->c);
    free(q->snap);
    free(q->logits);
}

/* Before a forward: a hybrid keeps a snapshot for a later rollback. */
static void before_forward(seq *q, const op *o) {
    sd_err err = {0};
    if (sd_model_is_recurrent(sd_context_model(q->c)))
        assert_int_equal(sd_context_state_save(q->c, q->snap, q->snap_bytes, &err), SD_OK);
    q->last_S = o->S;
}

/* A rollback op: keep `keep` rows of the last forward. Dense: truncate. Hybrid:
 * restore the snapshot and take the kept tokens again in the next forward
 * (their token ids are reused: the schedule rewinds). */
static void rollback(seq *q, const op *o) {
    sd_err err = {0};
    const int32_t len = sd_context_len(q->c), drop = q->last_S - o->keep;
    if (sd_model_is_recurrent(sd_context_model(q->c))) {
        assert_int_equal(sd_context_state_restore(q->c, q->snap, q->snap_bytes, &err), SD_OK);
        q->next -= q->last_S;
    } else {
        assert_int_equal(sd_context_truncate(q->c, len - drop), SD_OK);
        q->next -= drop;
    }
}

static float *out_rows(seq *q, const op *o, int32_t V) {
    float *p = q->logits + (size_t)q->rows * V;
    q->rows += o->n_tail;
    return p;
}

/* The reference: sequence i's schedule alone. */
static void run_alone(seq *q, const sd_model *m, int i) {
    sd_err err = {0};
    for (int t = 0; t < MAX_OPS; t++) {
        const op *o = &sched[i][t];
        if (o->S == 0) {
            rollback(q, o);
            continue;
        }
        before_forward(q, o);
        float *lg = out_rows(q, o, m->hp.n_vocab);
        assert_int_equal(sd_forward_tail(q->c, q->tokens + q->next, o->S, o->n_tail, lg, &err), SD_OK);
        q->next += o->S;
    }
}

/* All four together: step t is one ragged forward over every sequence whose
 * op t is a forward (the rollbacks happen between steps). */
static void run_mixed(seq *qs, const sd_model *m, sd_ctx_group *g) {
    sd_err err = {0};
    for (int t = 0; t < MAX_OPS; t++) {
        sd_ragged_seq rs[N_SEQ];
        int n = 0;
        for (int i = 0; i < N_SEQ; i++) {
            const op *o = &sched[i][t];
            if (o->S == 0) {
                rollback(&qs[i], o);
                continue;
            }
            before_forward(&qs[i], o);
            rs[n++] = (sd_ragged_seq){.c = qs[i].c, .tokens = qs[i].tokens + qs[i].next, .S = o->S,
                                      .n_tail = o->n_tail, .logits = out_rows(&qs[i], o, m->hp.n_vocab)};
            qs[i].next += o->S;
        }
        if (sd_forward_ragged(g, rs, n, &err) != SD_OK) fail_msg("step %d: %s", t, err.msg);
    }
}

static void check_model(sd_model *m, const char *path) {
    const int32_t V = m->hp.n_vocab;
    seq alone[N_SEQ], mixed[N_SEQ];
    for (int i = 0; i < N_SEQ; i++) {
        seq_init(&alone[i], m, i, 1);
        run_alone(&alone[i], m, i);
        seq_init(&mixed[i], m, i, 2);
    }
    sd_ctx_group *g = NULL;
    sd_err err = {0};
    assert_int_equal(sd_ctx_group_init(m, N_CTX, 64, 2, &g, &err), SD_OK);
    run_mixed(mixed, m, g);
    for (int i = 0; i < N_SEQ; i++) {
        assert_int_equal(mixed[i].rows, alone[i].rows);
        assert_int_equal(sd_context_len(mixed[i].c), sd_context_len(alone[i].c));
        for (int r = 0; r < alone[i].rows; r++)
            if (memcmp(alone[i].logits + (size_t)r * V, mixed[i].logits + (size_t)r * V, (size_t)V * sizeof(float)))
                fail_msg("%s: sequence %d, logits row %d differs bitwise in the ragged batch", path, i, r);
        /* rows that carry information: finite and not all equal */
        const float *l = mixed[i].logits;
        assert_true(isfinite(l[0]) && isfinite(l[V - 1]));
        assert_true(memcmp(l, l + V, (size_t)V * sizeof(float)) != 0);
    }
    /* The sequences differ, so a mix-up of rows between them would show. */
    assert_true(memcmp(mixed[0].logits, mixed[1].logits, (size_t)V * sizeof(float)) != 0);
    sd_ctx_group_free(g);
    for (int i = 0; i < N_SEQ; i++) {
        seq_free(&alone[i]);
        seq_free(&mixed[i]);
    }
}

static void check_fixture(const char *path) {
    sd_model *m = load(path);
    check_model(m, path);
    sd_model_free(m);
}

static void test_ragged_dense(void **state) {
    (void)state;
    check_fixture("models/fixture-target.gguf");
}

static void test_ragged_hybrid(void **state) {
    (void)state;
    check_fixture("models/fixture-q35-target.gguf");
}

/* Mixture-of-experts (tiny random models): the sequences' tokens pick
 * different experts, grouped per expert over the whole ragged batch. */
static void test_ragged_moe(void **state) {
    (void)state;
    const char *archs[2] = {"qwen3moe", "qwen35moe"};
    for (int a = 0; a < 2; a++) {
        char path[256];
        tiny_model_spec sp = tiny_model_default(archs[a], GGML_TYPE_Q8_0);
        sd_model *m = tiny_load(&sp, path, sizeof path, archs[a]);
        assert_non_null(m);
        check_model(m, archs[a]);
        sd_model_free(m);
        remove(path);
    }
}

/* A bad batch is refused with nothing changed: a sequence twice, more rows
 * than the group holds, a context longer than the group's, a bad token id,
 * a sequence that would pass its n_ctx. */
static void test_ragged_refusals(void **state) {
    (void)state;
    sd_model *m = load("models/fixture-target.gguf");
    sd_ctx_group *g = NULL;
    sd_context *a = NULL, *b = NULL, *big = NULL;
    sd_err err = {0};
    assert_int_equal(sd_ctx_group_init(m, 32, 8, 1, &g, &err), SD_OK);
    assert_int_equal(sd_context_init(m, 32, 8, 1, &a, &err), SD_OK);
    assert_int_equal(sd_context_init(m, 32, 8, 1, &b, &err), SD_OK);
    assert_int_equal(sd_context_init(m, 64, 8, 1, &big, &err), SD_OK);
    int32_t tok[40] = {0}, bad = m->hp.n_vocab;
    float lg[1];
    sd_ragged_seq twice[2] = {{a, tok, 1, 0, NULL}, {a, tok, 1, 0, NULL}};
    assert_int_equal(sd_forward_ragged(g, twice, 2, &err), SD_ERR_ARG);
    assert_non_null(strstr(err.msg, "twice"));
    sd_ragged_seq many[2] = {{a, tok, 5, 0, NULL}, {b, tok, 5, 0, NULL}};
    assert_int_equal(sd_forward_ragged(g, many, 2, &err), SD_ERR_ARG);
    sd_ragged_seq longer = {big, tok, 1, 0, NULL};
    assert_int_equal(sd_forward_ragged(g, &longer, 1, &err), SD_ERR_ARG);
    sd_ragged_seq badtok[2] = {{a, tok, 1, 0, NULL}, {b, &bad, 1, 1, lg}};
    assert_int_equal(sd_forward_ragged(g, badtok, 2, &err), SD_ERR_ARG);
    sd_ragged_seq empty = {a, tok, 0, 0, NULL};
    assert_int_equal(sd_forward_ragged(g, &empty, 1, &err), SD_ERR_ARG);
    assert_int_equal(sd_context_len(a), 0);
    assert_int_equal(sd_context_len(b), 0);
    sd_ragged_seq fill = {a, tok, 8, 0, NULL};
    for (int i = 0; i < 4; i++) assert_int_equal(sd_forward_ragged(g, &fill, 1, &err), SD_OK);
    assert_int_equal(sd_context_len(a), 32);
    sd_ragged_seq over = {a, tok, 1, 0, NULL};
    assert_int_equal(sd_forward_ragged(g, &over, 1, &err), SD_ERR_CONTEXT);
    sd_context_free(a);
    sd_context_free(b);
    sd_context_free(big);
    sd_ctx_group_free(g);
    sd_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ragged_dense),
        cmocka_unit_test(test_ragged_hybrid),
        cmocka_unit_test(test_ragged_moe),
        cmocka_unit_test(test_ragged_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
