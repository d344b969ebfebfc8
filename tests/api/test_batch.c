/* api: specdec_batch. Requests served together (4 slots, speculation on)
 * give bitwise the tokens and text specdec_generate gives each alone on a
 * fresh context, at temperature 0 and at 0.8 with seeds, on the dense
 * fixture (n-gram, and with a draft model) and on the qwen35 hybrid (n-gram +
 * its MTP block). Requests join mid-batch (a new one is added as soon as a
 * slot frees), leave at different lengths, one is cancelled half way (its
 * tokens a prefix of the lone run's). The steps are shared: fewer steps than
 * the requests' forwards. With one suffix memory shared by the slots the
 * tokens are still the lone runs'. Also the refusals of specdec_batch_add
 * and the slot accessors (next_slot, slot_is_free, slot_context, add_at). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_test_util.h"

#define N_REQ 7
#define N_SLOTS 4
#define MAX_TEXT 4096

static const char *prompts[N_REQ] = {
    "Once upon a time there was a little",
    "The cat sat on the mat. The cat sat on the",
    "One, two, three, four, five, six,",
    "def add(a, b):\n    return a + b\n\ndef sub(a, b):\n",
    "Tom and Lily went to the park. Tom and Lily",
    "A B C D E F G",
    "She said hello. He said hello. They said",
};
static const int32_t n_predict[N_REQ] = {40, 12, 32, 24, 40, 20, 16};

/* One request's outcome, from the batch or alone. */
typedef struct outcome {
    char text[MAX_TEXT];
    size_t len;
    specdec_token tokens[128];
    size_t n_tokens;
    specdec_stop_reason stop;
    int64_t forwards; /* target forwards after prefill */
    int64_t drafted, accepted;
    bool done;
    int done_count;
    int32_t slot;
} outcome;

static bool on_piece(const specdec_piece *p, void *user) {
    outcome *o = user;
    if (o->len + p->len < MAX_TEXT) {
        memcpy(o->text + o->len, p->text, p->len);
        o->len += p->len;
    }
    return true;
}

static void on_done(const specdec_batch_result *r, void *user) {
    outcome *o = user;
    if (r->status != SPECDEC_OK) fail_msg("request in slot %d: %s", r->slot, r->err->message);
    assert_true(r->n_tokens <= 128);
    memcpy(o->tokens, r->tokens, r->n_tokens * sizeof *r->tokens);
    o->n_tokens = r->n_tokens;
    o->stop = r->stats->stop_reason;
    o->forwards = r->stats->n_target_forwards;
    o->drafted = r->stats->n_drafted;
    o->accepted = r->stats->n_accepted;
    o->done = true;
    o->done_count++;
}

/* Under the sanitizers (SD_ASAN, scripts/test.sh --asan) the requests are
 * half as long (the cancelled one excepted: it must still be running when
 * the cancel comes) and fewer configurations run. */
static bool asan(void) { return getenv("SD_ASAN") != NULL; }

#define CANCELLED 2 /* the request cancelled half way */

static specdec_generate_params params_of(int i, float temp, specdec_spec_mode spec) {
    specdec_generate_params gp = specdec_generate_default_params();
    gp.n_predict = asan() && i != CANCELLED ? n_predict[i] / 2 : n_predict[i];
    gp.spec = spec;
    gp.temperature = temp;
    gp.seed = 1000 + (uint64_t)i;
    gp.stop_at_eog = false;
    return gp;
}

static specdec_token *tokens_of(const specdec_model *m, int i, size_t *n) {
    specdec_token *t = NULL;
    specdec_error err = {0};
    if (specdec_tokenize(m, prompts[i], strlen(prompts[i]), true, false, &t, n, &err) != SPECDEC_OK)
        fail_msg("tokenize: %s", err.message);
    return t;
}

/* Request i alone on a fresh context (stop after max_tokens when >= 0: the cancelled one's prefix). */
static void run_alone(const specdec_model *m, const specdec_model *draft, int i, float temp, specdec_spec_mode spec,
                      outcome *o) {
    memset(o, 0, sizeof *o);
    specdec_context *c = api_context(m, draft, 256);
    size_t n = 0;
    specdec_token *t = tokens_of(m, i, &n);
    specdec_generate_params gp = params_of(i, temp, spec);
    specdec_stats st;
    specdec_error err = {0};
    if (specdec_generate(c, t, n, &gp, on_piece, o, &st, &err) != SPECDEC_OK) fail_msg("alone: %s", err.message);
    size_t nh = 0;
    const specdec_token *h = specdec_context_tokens(c, &nh);
    o->n_tokens = nh - n;
    memcpy(o->tokens, h + n, o->n_tokens * sizeof *h);
    o->stop = st.stop_reason;
    o->drafted = st.n_drafted;
    o->accepted = st.n_accepted;
    if (getenv("SD_TEST_VERBOSE"))
        fprintf(stderr, "alone %d: %zu tokens, drafted %lld accepted %lld\n", i, o->n_tokens, (long long)o->drafted,
                (long long)o->accepted);
    specdec_free(t);
    specdec_context_free(c);
}

/* The suffix memory every batched request shares (test_batch_suffix), or NULL. */
static specdec_suffix_cache *shared_mem;

static void add(specdec_batch *b, const specdec_model *m, int i, float temp, specdec_spec_mode spec, outcome *o) {
    memset(o, 0, sizeof *o);
    size_t n = 0;
    specdec_token *t = tokens_of(m, i, &n);
    specdec_generate_params gp = params_of(i, temp, spec);
    gp.suffix_cache = shared_mem;
    specdec_error err = {0};
    if (specdec_batch_add(b, t, n, &gp, on_piece, on_done, o, &o->slot, &err) != SPECDEC_OK)
        fail_msg("add %d: %s", i, err.message);
    specdec_free(t); /* copied by add */
}

static void check_config(const char *target, const char *draft_path, specdec_spec_mode spec, float temp) {
    specdec_model *m = api_load(target), *draft = draft_path ? api_load(draft_path) : NULL;
    outcome alone[N_REQ], got[N_REQ];
    for (int i = 0; i < N_REQ; i++) run_alone(m, draft, i, temp, spec, &alone[i]);

    specdec_batch_params bp = specdec_batch_default_params();
    bp.n_slots = N_SLOTS;
    bp.ctx.n_ctx = 256;
    bp.ctx.n_threads = 2; /* not the lone runs' 1: results do not depend on it */
    bp.ctx.draft = draft;
    specdec_batch *b = NULL;
    specdec_error err = {0};
    if (specdec_batch_init(m, &bp, &b, &err) != SPECDEC_OK) fail_msg("batch: %s", err.message);
    /* as the server does: every slot's memory resident first; the answers
     * below must still be the lone runs' (a commit changes no byte) */
    if (specdec_batch_commit_memory(b, &err) != SPECDEC_OK) fail_msg("commit: %s", err.message);
    assert_int_equal(specdec_batch_n_slots(b), N_SLOTS);
    int next = 0, steps = 0, max_active = 0;
    for (; next < N_SLOTS; next++) add(b, m, next, temp, spec, &got[next]);
    while (specdec_batch_n_active(b) > 0) {
        if (specdec_batch_step(b, &err) != SPECDEC_OK) fail_msg("step: %s", err.message);
        steps++;
        if (steps == 6) specdec_batch_cancel(b, got[CANCELLED].slot);
        /* join mid-batch: a new request as soon as a slot is free */
        while (next < N_REQ && specdec_batch_n_active(b) < N_SLOTS) {
            add(b, m, next, temp, spec, &got[next]);
            next++;
        }
        int a = specdec_batch_n_active(b);
        if (a > max_active) max_active = a;
        assert_true(steps < 2000);
    }
    assert_int_equal(next, N_REQ);
    assert_int_equal(max_active, N_SLOTS);
    int64_t forwards = 0, accepted = 0, drafted = 0;
    for (int i = 0; i < N_REQ; i++) {
        assert_int_equal(got[i].done_count, 1);
        forwards += got[i].forwards;
        accepted += got[i].accepted;
        drafted += got[i].drafted;
        if (getenv("SD_TEST_VERBOSE"))
            fprintf(stderr, "batch %d: %zu tokens, drafted %lld accepted %lld\n", i, got[i].n_tokens,
                    (long long)got[i].drafted, (long long)got[i].accepted);
        if (i == CANCELLED) { /* a prefix of the lone run, cut short */
            assert_int_equal(got[i].stop, SPECDEC_STOP_CANCELLED);
            assert_true(got[i].n_tokens < alone[i].n_tokens);
            assert_memory_equal(got[i].tokens, alone[i].tokens, got[i].n_tokens * sizeof(specdec_token));
            continue;
        }
        if (got[i].n_tokens != alone[i].n_tokens ||
            memcmp(got[i].tokens, alone[i].tokens, alone[i].n_tokens * sizeof(specdec_token)))
            fail_msg("%s temp %.1f: request %d: %zu tokens in the batch, %zu alone, or different ones", target, temp,
                     i, got[i].n_tokens, alone[i].n_tokens);
        assert_int_equal(got[i].len, alone[i].len);
        assert_memory_equal(got[i].text, alone[i].text, alone[i].len);
        assert_int_equal(got[i].stop, alone[i].stop);
        assert_true(alone[i].n_tokens > 0);
    }
    /* the requests shared steps: fewer steps than their decode forwards;
     * and speculation ran (at temperature 0 drafts were accepted; sampled
     * text at 0.8 rarely repeats itself, so the gate may close at once) */
    assert_true(steps < forwards);
    assert_true(drafted > 0);
    if (temp == 0) assert_true(accepted > 0);
    specdec_batch_free(b);
    specdec_model_free(draft);
    specdec_model_free(m);
}

static void test_batch_dense(void **state) {
    (void)state;
    if (!asan()) check_config("models/fixture-target.gguf", NULL, SPECDEC_SPEC_NGRAM, 0);
    check_config("models/fixture-target.gguf", NULL, SPECDEC_SPEC_NGRAM, 0.8f);
}

static void test_batch_dense_draft(void **state) {
    (void)state;
    check_config("models/fixture-target.gguf", "models/fixture-draft.gguf", SPECDEC_SPEC_AUTO, 0);
    if (!asan()) check_config("models/fixture-target.gguf", "models/fixture-draft.gguf", SPECDEC_SPEC_AUTO, 0.8f);
}

static void test_batch_hybrid(void **state) {
    (void)state;
    check_config("models/fixture-q35-target.gguf", NULL, SPECDEC_SPEC_AUTO, 0);
    check_config("models/fixture-q35-target.gguf", NULL, SPECDEC_SPEC_AUTO, 0.8f);
}

/* One suffix memory shared by the slots (their drafters read it on their own
 * threads, finished requests add to it while others draft): every request's
 * tokens are still those it gets alone without a memory, and the memory
 * holds the outputs. */
static void test_batch_suffix(void **state) {
    (void)state;
    specdec_error err = {0};
    assert_int_equal(specdec_suffix_cache_init(4096, &shared_mem, &err), SPECDEC_OK);
    check_config("models/fixture-target.gguf", NULL, SPECDEC_SPEC_SUFFIX, 0);
    specdec_suffix_cache_info info;
    specdec_suffix_cache_get_info(shared_mem, &info);
    assert_true(info.n_added >= N_REQ - 1); /* the cancelled one may end before it has any output */
    specdec_suffix_cache_free(shared_mem);
    shared_mem = NULL;
}

/* specdec_batch_add refuses what it cannot serve, with nothing added; the
 * slot accessors; specdec_batch_add_at puts a request into the slot asked
 * for, and refuses one out of range or holding a request. */
static void test_batch_refusals(void **state) {
    (void)state;
    specdec_model *m = api_load("models/fixture-target.gguf");
    specdec_batch_params bp = specdec_batch_default_params();
    bp.n_slots = 2;
    bp.ctx.n_ctx = 64;
    bp.ctx.n_threads = 1;
    specdec_batch *b = NULL;
    specdec_error err = {0};
    assert_int_equal(specdec_batch_init(m, &bp, &b, &err), SPECDEC_OK);
    specdec_token t[100] = {1, 2, 3};
    specdec_generate_params gp = specdec_generate_default_params();
    gp.tree_nodes = 4;
    assert_int_equal(specdec_batch_add(b, t, 3, &gp, NULL, NULL, NULL, NULL, &err), SPECDEC_ERR_ARG);
    gp = specdec_generate_default_params();
    gp.draft_max = 0;
    assert_int_equal(specdec_batch_add(b, t, 3, &gp, NULL, NULL, NULL, NULL, &err), SPECDEC_ERR_ARG);
    assert_int_equal(specdec_batch_add(b, t, 0, NULL, NULL, NULL, NULL, NULL, &err), SPECDEC_ERR_ARG);
    assert_int_equal(specdec_batch_add(b, t, 100, NULL, NULL, NULL, NULL, NULL, &err), SPECDEC_ERR_CONTEXT);
    assert_int_equal(specdec_batch_n_active(b), 0);
    int32_t slot = -1;
    assert_int_equal(specdec_batch_next_slot(b), 0);
    assert_non_null(specdec_batch_slot_context(b, 1));
    assert_null(specdec_batch_slot_context(b, 2));
    assert_null(specdec_batch_slot_context(NULL, 0));
    assert_int_equal(specdec_batch_commit_memory(NULL, &err), SPECDEC_ERR_ARG);
    gp = specdec_generate_default_params();
    assert_int_equal(specdec_context_reserve_hidden(NULL, &gp, &err), SPECDEC_ERR_ARG);
    assert_int_equal(specdec_context_reserve_hidden(specdec_batch_slot_context(b, 0), NULL, &err), SPECDEC_ERR_ARG);
    /* no head to draft with: nothing to reserve, no error */
    assert_int_equal(specdec_context_reserve_hidden(specdec_batch_slot_context(b, 0), &gp, &err), SPECDEC_OK);
    assert_true(specdec_batch_slot_is_free(b, 0) && specdec_batch_slot_is_free(b, 1));
    assert_false(specdec_batch_slot_is_free(b, 2) || specdec_batch_slot_is_free(b, -1) ||
                 specdec_batch_slot_is_free(NULL, 0));
    assert_int_equal(specdec_batch_add_at(b, 2, t, 3, NULL, NULL, NULL, NULL, &slot, &err), SPECDEC_ERR_ARG);
    assert_non_null(strstr(err.message, "out of range"));
    assert_int_equal(slot, -1);
    /* slot 1 asked for while 0 is the lowest free one */
    assert_int_equal(specdec_batch_add_at(b, 1, t, 3, NULL, NULL, NULL, NULL, &slot, &err), SPECDEC_OK);
    assert_int_equal(slot, 1);
    assert_false(specdec_batch_slot_is_free(b, 1));
    assert_int_equal(specdec_batch_next_slot(b), 0);
    assert_int_equal(specdec_batch_add_at(b, 1, t, 3, NULL, NULL, NULL, NULL, &slot, &err), SPECDEC_ERR_ARG);
    assert_non_null(strstr(err.message, "holds a request"));
    assert_int_equal(specdec_batch_n_active(b), 1);
    assert_int_equal(specdec_batch_add(b, t, 3, NULL, NULL, NULL, NULL, &slot, &err), SPECDEC_OK);
    assert_int_equal(slot, 0);
    assert_int_equal(specdec_batch_next_slot(b), -1);
    assert_int_equal(specdec_batch_add(b, t, 3, NULL, NULL, NULL, NULL, NULL, &err), SPECDEC_ERR_ARG);
    assert_non_null(strstr(err.message, "no free slot"));
    specdec_batch_free(b); /* cancels the running request */
    bp.n_slots = 65;
    assert_int_equal(specdec_batch_init(m, &bp, &b, &err), SPECDEC_ERR_ARG);
    specdec_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_batch_dense),
        cmocka_unit_test(test_batch_dense_draft),
        cmocka_unit_test(test_batch_hybrid),
        cmocka_unit_test(test_batch_suffix),
        cmocka_unit_test(test_batch_refusals),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
