/* Rollback on real hybrid models (qwen35, decode/lm_hybrid.h over
 * model/rollback.c):
 * - bitwise: after a verify forward of S tokens, rolling back to every
 *   j = 0..S by each discipline leaves exactly the recurrent state (conv
 *   windows and delta-rule states, compared byte for byte) and the next
 *   logits that a plain forward of the kept tokens gives, on a tiny qwen35
 *   model, a tiny qwen35moe (mixture-of-experts FFNs) and on the committed fixture;
 * - LOSSLESS on models/fixture-q35-target.gguf (+ fixture-q35-draft.gguf, a
 *   hybrid draft rolled back through the same code): every discipline x
 *   drafter (n-gram, draft, auto) x context, the three prompts in rotation so
 *   each meets every discipline and every drafter (all of them on every
 *   combination with SD_TEST_LONG, the ctest label `long`), an always-wrong
 *   drafter over 300 tokens (1000 with SD_TEST_LONG),
 *   a drafter rejected at each position j = 0..K in turn, and K running into
 *   the end of the context; the window discipline on every prompt length
 *   mod S from 1 to 2S;
 * - temperature > 0: chi-square of speculative against plain sampling. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "decode/compose.h"
#include "decode/sampler.h"
#include "decode/spec.h"
#include "model/model.h"
#include "support/tiny_model.h"
#include "chi_square.h"

static const char *TP = "models/fixture-q35-target.gguf", *DP = "models/fixture-q35-draft.gguf";

/* The qwen35 fixtures are committed (models/README.md): without them the
 * checkout is broken, which fails the test rather than skipping it. */
static void need_fixtures(void) {
    if (access(TP, R_OK) != 0 || access(DP, R_OK) != 0) fail_msg("%s or %s is missing: run from the repository root", TP, DP);
}
static bool asan(void) { return getenv("SD_ASAN") != NULL; }
static bool long_run(void) { return getenv("SD_TEST_LONG") != NULL; }

static sd_model *load_model(const char *path) {
    sd_model *m = NULL;
    sd_err err = {0};
    assert_int_equal(sd_model_load(path, &m, &err), SD_OK);
    return m;
}

/* The snapshot of c (state + len) into a new buffer. */
static unsigned char *snapshot(sd_context *c) {
    size_t n = sd_context_state_bytes(c);
    unsigned char *b = malloc(n);
    sd_err err = {0};
    assert_int_equal(sd_context_state_save(c, b, n, &err), SD_OK);
    return b;
}

/* For each discipline and every j in 0..S: roll a verify forward of S tokens
 * back to P + j and compare state and next logits with a plain forward. */
static void check_bitwise(sd_model *m) {
    const int32_t P = 7, S = 9, V = m->hp.n_vocab;
    int32_t toks[P + S + 1];
    for (int i = 0; i < P + S + 1; i++) toks[i] = (int32_t)((i * 131 + 7) % V);
    sd_err err = {0};
    float *la = malloc((size_t)(S + 1) * (size_t)V * sizeof *la), *lb = malloc((size_t)V * sizeof *lb);
    sd_context *ref = NULL;
    assert_int_equal(sd_context_init(m, 64, 16, 2, &ref, &err), SD_OK);
    const size_t nb = sd_context_state_bytes(ref);
    for (int d = 0; d < SD_ROLLBACK_WINDOW; d++) /* (window's state sits at its anchor: tested by its output) */
        for (int32_t j = 0; j <= S; j++) {
            sd_context *c = NULL;
            assert_int_equal(sd_context_init(m, 64, 16, 2, &c, &err), SD_OK);
            sd_recm r;
            sd_recm_from_context(&r, c);
            sd_lm_hybrid h;
            assert_int_equal(sd_lm_hybrid_init(&h, &r, (sd_rollback)d, S, true, &err), SD_OK);
            sd_lm lm;
            sd_lm_hybrid_as_lm(&lm, &h);
            assert_int_equal(lm.forward_tail(lm.self, SD_LM_PREFILL, toks, P, 1, la, &err), SD_OK);
            assert_int_equal(lm.forward(lm.self, SD_LM_VERIFY, toks + P, S, la, &err), SD_OK); /* the verify forward */
            assert_int_equal(lm.truncate(lm.self, P + j, &err), SD_OK);
            assert_int_equal(lm.len(lm.self), P + j);
            /* dropping the whole forward (j = 0) never happens in a verify round,
             * and checkpoint keeps no state from before the forward: it re-decodes */
            assert_int_equal(h.st.fallbacks, d == SD_ROLLBACK_CHECKPOINT && j == 0);
            /* the reference: a fresh plain forward of the kept tokens */
            sd_context_truncate(ref, 0);
            assert_int_equal(sd_forward_tail(ref, toks, P + j, 0, NULL, &err), SD_OK);
            unsigned char *a = snapshot(c), *b = snapshot(ref);
            if (memcmp(a, b, nb) != 0) fail_msg("%s: state after rolling back to j = %d differs", sd_rollback_name(d), j);
            /* and the next position's logits */
            assert_int_equal(lm.forward(lm.self, SD_LM_STEP, toks + P + j, 1, la, &err), SD_OK);
            assert_int_equal(sd_forward(ref, toks + P + j, 1, lb, &err), SD_OK);
            assert_memory_equal(la, lb, (size_t)V * sizeof *la);
            free(a);
            free(b);
            sd_lm_hybrid_free(&h);
            sd_context_free(c);
        }
    sd_context_free(ref);
    free(la);
    free(lb);
}

static void test_bitwise_tiny(void **state) {
    tiny_model_spec sp = tiny_model_default(*state ? (const char *)*state : "qwen35", GGML_TYPE_Q8_0);
    char path[256];
    sd_err err = {0};
    tiny_model_temp_path(path, sizeof path, "q35rb");
    assert_int_equal(tiny_model_write(&sp, path, &err), SD_OK);
    sd_model *m = load_model(path);
    check_bitwise(m);
    sd_model_free(m);
    remove(path);
}

static void test_bitwise_fixture(void **state) {
    (void)state;
    need_fixtures();
    sd_model *m = load_model(TP);
    check_bitwise(m);
    sd_model_free(m);
}

/* ---- decoding on the fixtures ---- */
typedef enum { K_NGRAM, K_DRAFT, K_AUTO, K_WRONG, K_REJECT_AT, K_KINDS } kind;
static const char *KIND[K_KINDS] = {"ngram", "draft", "auto", "always-wrong", "rejected at j"};

/* Scripted drafters over the known greedy text want[] (after the prompt):
 * always-wrong proposes want + 1 everywhere; reject-at proposes the right
 * tokens up to a position j that moves 0, 1, .., K, 0, .. round by round,
 * and a wrong one there (j = K: all right). */
typedef struct script {
    const int32_t *want;
    int32_t n_want, n_prompt, V;
    kind k;
    int round;
} script;

static int script_propose(void *self, const int32_t *ctx, int32_t n, int k, int32_t *out, float *q, sd_err *err) {
    (void)ctx, (void)q, (void)err;
    script *s = self;
    int j = s->round++ % (k + 1);
    for (int i = 0; i < k; i++) {
        int32_t at = n - s->n_prompt + i, right = at < s->n_want ? s->want[at] : 0;
        out[i] = s->k == K_WRONG || i == j ? (right + 1) % s->V : right;
    }
    return k;
}

typedef struct run_cfg {
    sd_rollback disc;
    kind k;
    int32_t n_ctx, n_predict, K;
} run_cfg;

/* Plain greedy of prompt in a context of n_ctx into want[n_predict]; returns the count. */
static int32_t greedy(sd_model *t, const int32_t *prompt, int32_t n_prompt, int32_t n_ctx, int32_t n_predict,
                      int32_t *want) {
    sd_err err = {0};
    sd_context *tc = NULL;
    assert_int_equal(sd_context_init(t, n_ctx, 16, 2, &tc, &err), SD_OK);
    sd_lm lm;
    sd_lm_from_context(&lm, tc, t);
    sd_spec_params p = sd_spec_default_params();
    p.n_predict = n_predict;
    p.n_batch = 16;
    p.stop_at_eog = false;
    int32_t n = 0;
    assert_int_equal(sd_spec_generate(&lm, NULL, prompt, n_prompt, &p, NULL, NULL, want, &n, NULL, &err), SD_OK);
    sd_context_free(tc);
    return n;
}

/* Speculative decoding with cfg must give want[n_want] (plain greedy). Returns tokens compared. */
static int32_t run_one(sd_model *t, sd_model *dm, const int32_t *prompt, int32_t n_prompt, run_cfg cfg,
                       const int32_t *want, int32_t n_want, int64_t *rollbacks) {
    sd_err err = {0};
    sd_context *tc = NULL, *dc = NULL;
    assert_int_equal(sd_context_init(t, cfg.n_ctx, 16, 2, &tc, &err), SD_OK);
    sd_model_lm tl, dl = {0};
    assert_int_equal(sd_compose_lm(&tl, tc, t, cfg.disc, cfg.K + 1, SD_LM_TARGET, &err), SD_OK);
    const sd_lm_hybrid *th = tl.hybrid;
    sd_spec_params p = sd_spec_default_params();
    p.n_predict = cfg.n_predict;
    p.draft_max = cfg.K;
    p.adaptive_k = false;
    p.n_batch = 16;
    p.gate_misses = 0; /* draft every round */
    p.stop_at_eog = false;
    int32_t *got = malloc((size_t)cfg.n_predict * sizeof *got), n_got = 0;
    sd_drafter ng = {0}, dmod = {0}, d = {0};
    script sc = {want, n_want, n_prompt, t->hp.n_vocab, cfg.k, 0};
    if (cfg.k == K_NGRAM || cfg.k == K_AUTO) assert_int_equal(sd_drafter_ngram_init(&ng, 1, 3, &err), SD_OK);
    if (cfg.k == K_DRAFT || cfg.k == K_AUTO) {
        assert_int_equal(sd_context_init(dm, cfg.n_ctx, 16, 2, &dc, &err), SD_OK);
        assert_int_equal(sd_compose_lm(&dl, dc, dm, cfg.disc, cfg.K + 1, SD_LM_DRAFT, &err), SD_OK);
        assert_int_equal(sd_drafter_model_init(&dmod, &dl.lm, NULL, 16, &err), SD_OK);
    }
    if (cfg.k == K_NGRAM) d = ng, ng = (sd_drafter){0};
    else if (cfg.k == K_DRAFT) d = dmod, dmod = (sd_drafter){0};
    else if (cfg.k == K_AUTO) assert_int_equal(sd_drafter_auto_init(&d, &ng, &dmod, t->hp.n_vocab, &err), SD_OK);
    else d = (sd_drafter){.name = KIND[cfg.k], .self = &sc, .propose = script_propose};
    sd_spec_stats st;
    assert_int_equal(sd_spec_generate(&tl.lm, &d, prompt, n_prompt, &p, NULL, NULL, got, &n_got, &st, &err), SD_OK);
    if (n_got != n_want) fail_msg("%s %s: %d tokens, greedy %d", sd_rollback_name(cfg.disc), KIND[cfg.k], n_got, n_want);
    for (int32_t i = 0; i < n_want; i++)
        if (got[i] != want[i])
            fail_msg("%s %s: token %d differs: spec %d, greedy %d (prompt %d, n_ctx %d, K %d)",
                     sd_rollback_name(cfg.disc), KIND[cfg.k], i, got[i], want[i], n_prompt, cfg.n_ctx, cfg.K);
    if (cfg.k == K_WRONG) assert_int_equal(st.accepted, 0);
    if (cfg.k >= K_WRONG) assert_true(th->st.rollbacks > 0);
    assert_int_equal(th->st.fallbacks, 0);
    *rollbacks += th->st.rollbacks;
    if (d.free) sd_drafter_free(&d);
    sd_model_lm_free(&dl);
    sd_model_lm_free(&tl);
    sd_context_free(dc);
    sd_context_free(tc);
    free(got);
    return n_want;
}

static int32_t *tokens_of(sd_model *m, const char *text, int32_t *n) {
    int32_t *ids = NULL;
    size_t k = 0;
    sd_err err = {0};
    assert_int_equal(sd_tokenize(m->tok, text, strlen(text), false, false, &ids, &k, &err), SD_OK);
    *n = (int32_t)k;
    return ids;
}

static void test_fixture_matrix(void **state) {
    (void)state;
    need_fixtures();
    sd_model *t = load_model(TP), *dm = load_model(DP);
    static const char *texts[] = {
        "static int parse_args(int argc, char **argv) {\n    for (int i = 1; i < argc; i++) {\n",
        "The following copyright notice applies. The following copyright notice",
        "def",
    };
    int runs = 0;
    int64_t compared = 0, rollbacks = 0;
    const int32_t n_predict = asan() ? 16 : 48;
    const size_t n_texts = asan() ? 2 : sizeof texts / sizeof *texts;
    int32_t want[2][64];
    for (size_t i = 0; i < n_texts; i++) {
        int32_t n;
        int32_t *ids = tokens_of(t, texts[i], &n);
        /* a roomy context, and one that K runs into the end of */
        const int32_t ctx[2] = {512, n + 13}, pred[2] = {n_predict, 64};
        int32_t n_want[2];
        for (int c = 0; c < 2; c++) n_want[c] = greedy(t, ids, n, ctx[c], pred[c], want[c]);
        for (int d = 0; d < SD_ROLLBACK_N; d++)
            for (kind k = K_NGRAM; k < K_KINDS; k++)
                for (int c = 0; c < 2; c++) {
                    /* a Latin square: prompt i runs (d, k) when d + k = i mod n_texts */
                    if (!long_run() && (size_t)(d + (int)k) % n_texts != i) continue;
                    run_cfg cfg = {(sd_rollback)d, k, ctx[c], pred[c], 8};
                    compared += run_one(t, dm, ids, n, cfg, want[c], n_want[c], &rollbacks);
                    runs++;
                }
        free(ids);
    }
    printf("qwen35 fixtures: LOSSLESS %d/%d runs (%d disciplines x %d drafters x 2 contexts, %zu prompts %s), %lld"
           " tokens compared, %lld target rollbacks\n",
           runs, runs, SD_ROLLBACK_N, K_KINDS, n_texts, long_run() ? "each" : "in rotation", (long long)compared,
           (long long)rollbacks);
    sd_model_free(t);
    sd_model_free(dm);
}

/* An always-wrong drafter over 300 tokens (1000 in the long run): every round rolls back. */
static void test_fixture_always_wrong_long(void **state) {
    (void)state;
    need_fixtures();
    sd_model *t = load_model(TP);
    int32_t n;
    int32_t *ids = tokens_of(t, "int main(void) {\n", &n);
    const int32_t N = asan() ? 200 : long_run() ? 1000 : 300;
    int32_t *want = malloc((size_t)N * sizeof *want);
    assert_int_equal(greedy(t, ids, n, n + N + 8, N, want), N);
    for (int d = 0; d < SD_ROLLBACK_N; d++) {
        int64_t rollbacks = 0;
        run_cfg cfg = {(sd_rollback)d, K_WRONG, n + N + 8, N, 4};
        assert_int_equal(run_one(t, NULL, ids, n, cfg, want, N, &rollbacks), N);
        printf("%s: always-wrong drafter, LOSSLESS %d/%d tokens, %lld rollbacks\n", sd_rollback_name(d), N, N,
               (long long)rollbacks);
        /* every round rolls back; window's loop also takes plain steps when the tail fills its window */
        assert_true(rollbacks >= (d == SD_ROLLBACK_WINDOW ? N / 2 : N - 2));
    }
    free(ids);
    free(want);
    sd_model_free(t);
}

/* window: every prompt length mod S from 1 to 2S (the length = 0 mod S case,
 * S and 2S, included: a pad row must never be read as a0), with the n-gram
 * drafter and the hybrid draft model, S = 5 and K = 8 (cut to the window). */
static void test_fixture_window_prompt_lengths(void **state) {
    (void)state;
    need_fixtures();
    sd_model *t = load_model(TP), *dm = load_model(DP);
    int32_t n;
    int32_t *ids = tokens_of(t, "The following copyright notice applies to the following files and to all of them", &n);
    const int32_t W = 5, n_predict = asan() ? 12 : 32;
    assert_true(n >= 2 * W);
    int runs = 0;
    for (int32_t len = 1; len <= 2 * W; len++) {
        int32_t want[64];
        int32_t n_want = greedy(t, ids, len, 256, n_predict, want);
        for (kind k = K_NGRAM; k <= K_DRAFT; k++) {
            int64_t rollbacks = 0;
            run_cfg cfg = {SD_ROLLBACK_WINDOW, k, 256, n_predict, W - 1};
            assert_int_equal(run_one(t, dm, ids, len, cfg, want, n_want, &rollbacks), n_want);
            runs++;
        }
    }
    printf("window S = %d: LOSSLESS %d/%d runs, prompt lengths 1..%d (%d and %d = 0 mod S), ngram and draft\n", W,
           runs, runs, 2 * W, W, 2 * W);
    free(ids);
    sd_model_free(t);
    sd_model_free(dm);
}

/* ---- temperature > 0: speculative sampling keeps plain sampling's law ----
 * Pearson chi-square (chi_square.h), as tests/decode/test_spec_sampling.c (there on Markov
 * oracles, here on the hybrid fixture): 3-token continuations at temperature
 * 1 with top-k 3, so each of them is one of 27 cells whose exact probability
 * is the product of the sampler's own distributions along the path. */
enum { TOPK = 3, NG = 3, CELLS = 27 };

/* The law's tree: node = a path of 0..2 choices; tok[node][i] the i-th token
 * (ascending id) with nonzero probability, pr its probability. */
typedef struct law {
    int32_t tok[13][TOPK];
    double pr[13][TOPK];
} law;

static int node_of(int depth, int code) { return depth == 0 ? 0 : depth == 1 ? 1 + code : 4 + code; }

static void exact_law(sd_model *t, const sd_sampling *s, const int32_t *prompt, int32_t n_prompt, law *L) {
    const int32_t V = t->hp.n_vocab;
    sd_sampler sm;
    sd_err err = {0};
    assert_int_equal(sd_sampler_init(&sm, s, V, &err), SD_OK);
    float *logits = malloc((size_t)V * sizeof *logits), *p = malloc((size_t)V * sizeof *p);
    int32_t path[64];
    memcpy(path, prompt, (size_t)n_prompt * sizeof *path);
    for (int depth = 0; depth < NG; depth++)
        for (int code = 0; code < (depth == 0 ? 1 : depth == 1 ? 3 : 9); code++) {
            int parent = depth == 0 ? -1 : depth == 1 ? 0 : 1 + code / 3;
            if (depth >= 1) path[n_prompt + depth - 1] = L->tok[parent][code % 3];
            if (depth == 2) path[n_prompt] = L->tok[0][code / 3];
            sd_context *c = NULL;
            assert_int_equal(sd_context_init(t, 64, 16, 2, &c, &err), SD_OK);
            assert_int_equal(sd_forward_tail(c, path, n_prompt + depth, 1, logits, &err), SD_OK);
            sd_context_free(c);
            sd_sampler_probs(&sm, logits, p);
            int n = 0, node = node_of(depth, code);
            for (int32_t v = 0; v < V; v++)
                if (p[v] > 0) {
                    assert_true(n < TOPK);
                    L->tok[node][n] = v, L->pr[node][n] = p[v], n++;
                }
            assert_int_equal(n, TOPK);
        }
    free(logits);
    free(p);
    sd_sampler_free(&sm);
}

static int index_in(const int32_t *toks, int32_t t) {
    for (int i = 0; i < TOPK; i++)
        if (toks[i] == t) return i;
    fail_msg("token %d outside the top-k", t);
    return -1;
}

static void test_fixture_sampling_law(void **state) {
    (void)state;
    need_fixtures();
    sd_model *t = load_model(TP), *dm = load_model(DP);
    sd_err err = {0};
    int32_t n_prompt;
    int32_t *prompt = tokens_of(t, "The following copyright notice applies. The following", &n_prompt);
    const sd_sampling s = {.temp = 1.0f, .top_k = TOPK, .top_p = 1};
    law L;
    exact_law(t, &s, prompt, n_prompt, &L);
    double prob[CELLS];
    for (int c = 0; c < CELLS; c++)
        prob[c] = L.pr[0][c / 9] * L.pr[node_of(1, c / 9)][(c / 3) % 3] * L.pr[node_of(2, c / 3)][c % 3];
    const int n = asan() ? 300 : 1200;
    for (int w = 0; w < 3; w++) { /* plain, ngram, draft model (a hybrid, sampling its own q) */
        sd_context *tc = NULL, *dc = NULL;
        assert_int_equal(sd_context_init(t, 64, 16, 2, &tc, &err), SD_OK);
        sd_model_lm tl, dl = {0};
        assert_int_equal(sd_compose_lm(&tl, tc, t, SD_ROLLBACK_REPLAY, 4, SD_LM_TARGET, &err), SD_OK);
        sd_drafter d = {0};
        if (w == 1) assert_int_equal(sd_drafter_ngram_init(&d, 1, 3, &err), SD_OK);
        if (w == 2) {
            assert_int_equal(sd_context_init(dm, 64, 16, 2, &dc, &err), SD_OK);
            assert_int_equal(sd_compose_lm(&dl, dc, dm, SD_ROLLBACK_CHECKPOINT, 4, SD_LM_DRAFT, &err), SD_OK);
            assert_int_equal(sd_drafter_model_init(&d, &dl.lm, &s, 16, &err), SD_OK);
        }
        /* the prompt but its last token once, then each seed from there (n_past) */
        assert_int_equal(sd_forward_tail(tc, prompt, n_prompt - 1, 0, NULL, &err), SD_OK);
        size_t nb = sd_context_state_bytes(tc);
        void *snap = malloc(nb);
        assert_int_equal(sd_context_state_save(tc, snap, nb, &err), SD_OK);
        sd_spec_params p = sd_spec_default_params();
        p.n_predict = NG;
        p.draft_max = 2;
        p.adaptive_k = false;
        p.gate_misses = 0;
        p.stop_at_eog = false;
        p.n_past = n_prompt - 1;
        int count[CELLS] = {0};
        int64_t drafted = 0, accepted = 0, rollbacks = 0;
        for (int i = 0; i < n; i++) {
            p.sampling = s;
            p.sampling.seed = 7000 + (uint64_t)i;
            assert_int_equal(sd_context_state_restore(tc, snap, nb, &err), SD_OK);
            int32_t out[NG], n_out = 0;
            sd_spec_stats st;
            assert_int_equal(sd_spec_generate(&tl.lm, w ? &d : NULL, prompt, n_prompt, &p, NULL, NULL, out, &n_out, &st, &err),
                             SD_OK);
            assert_int_equal(n_out, NG);
            int i0 = index_in(L.tok[0], out[0]), i1 = index_in(L.tok[node_of(1, i0)], out[1]);
            int i2 = index_in(L.tok[node_of(2, i0 * 3 + i1)], out[2]);
            count[i0 * 9 + i1 * 3 + i2]++;
            drafted += st.drafted, accepted += st.accepted;
        }
        rollbacks = tl.hybrid->st.rollbacks;
        double pv = chi_square_p(count, prob, CELLS, n);
        printf("qwen35 fixture, temp 1 top-k 3, %s: %d seeds, α %lld/%lld, %lld rollbacks, chi-square p = %.4f\n",
               w == 0 ? "plain" : w == 1 ? "ngram" : "draft", n, (long long)accepted, (long long)drafted,
               (long long)rollbacks, pv);
        assert_true(pv > P_FAIL);
        /* n-gram drafts only when the sampled a0 occurred in the prompt: counted, not required */
        if (w == 2) assert_true(drafted > n / 2 && rollbacks > 0);
        free(snap);
        sd_drafter_free(&d);
        sd_model_lm_free(&dl);
        sd_model_lm_free(&tl);
        sd_context_free(dc);
        sd_context_free(tc);
    }
    free(prompt);
    sd_model_free(t);
    sd_model_free(dm);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bitwise_tiny),
        cmocka_unit_test_prestate(test_bitwise_tiny, (void *)"qwen35moe"), /* experts in every FFN */
        cmocka_unit_test(test_bitwise_fixture),
        cmocka_unit_test(test_fixture_matrix),
        cmocka_unit_test(test_fixture_always_wrong_long),
        cmocka_unit_test(test_fixture_window_prompt_lengths),
        cmocka_unit_test(test_fixture_sampling_law),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
