/* Repetition penalties and logit bias under speculation (decode/penalty.h),
 * on the model-free oracles (oracle_lm.h), where penalties decide most
 * tokens: a Markov oracle over 40 tokens with integer logits in [0, 6)
 * (ties everywhere), so a penalty of 1 moves a token past many others.
 *  - The formulas on hand-made rows (llama.cpp's repeat penalty, OpenAI's
 *    frequency and presence penalties, the -100 ban).
 *  - LOSSLESS: speculative output == penalised plain decoding's, greedy and
 *    at temperature 0.9 (deterministic drafts: byte-identical), for each
 *    penalty alone and all together, with drafters that are right (a
 *    drafter that knows the penalties: every draft accepted, the bonus row
 *    decides), wrong, random and the real n-gram drafter; chains of K = 3
 *    and 6, the two-pass head, and token trees.
 *  - Mutants (a build of src/decode/penalty.c with SD_TEST_MUTANTS): counts
 *    from the committed text only, or a draft prefix one token short; each
 *    must fail LOSSLESS somewhere. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "decode/penalty.h"
#include "decode/spec.h"
#include "oracle_lm.h"
#include "toy_drafter.h"

enum { V = 40, N_PROMPT = 5, N_PREDICT = 48 };

static const sd_logit_bias BIAS[] = {{3, -100}, {7, 2.5f}, {11, -1.5f}, {7, 0.5f}};

/* The penalty settings swept: each alone, then all together. */
static sd_penalties settings(int i) {
    sd_penalties p = {.repeat = 1, .repeat_last_n = 64};
    switch (i) {
    case 0: p.repeat = 1.7f, p.repeat_last_n = 8; break;
    case 1: p.presence = 1.5f; break;
    case 2: p.frequency = 0.8f; break;
    case 3: p.bias = BIAS, p.n_bias = 4; break;
    default:
        p.repeat = 1.3f, p.repeat_last_n = -1, p.presence = 0.6f, p.frequency = -0.3f;
        p.bias = BIAS, p.n_bias = 4;
    }
    return p;
}
#define N_SETTINGS 5

/* ---- the formulas ---- */

static void test_formulas(void **state) {
    (void)state;
    int32_t count[8] = {0};
    const int32_t hist[] = {1, 2, 2, 5, 2, 6}; /* prompt 1 2; generated 2 5 2 6 */
    sd_penalties p = {.repeat = 2, .repeat_last_n = 3, .presence = 0.25f, .frequency = 0.5f};
    sd_rowpen rp = {.p = &p, .hist = hist, .n_hist = 6, .n_prompt = 2, .count = count};
    float row[8] = {4, 4, -4, 4, 4, 4, 4, 4};
    const int32_t ext[] = {1};
    sd_penalty_row(&rp, ext, 1, row, 8); /* text 1 2 | 2 5 2 6 1 (prompt | generated); window 2 6 1 */
    assert_true(row[0] == 4);
    assert_true(row[1] == 2.0f - 0.5f - 0.25f);       /* in the window; generated once (the draft token) */
    assert_true(row[3] == 4);                         /* never seen */
    assert_true(row[2] == -8.0f - 2 * 0.5f - 0.25f);  /* negative: times 2; generated twice */
    assert_true(row[5] == 4.0f - 0.5f - 0.25f);       /* generated once, outside the window */
    assert_true(row[6] == 2.0f - 0.5f - 0.25f);       /* both */
    for (int i = 0; i < 8; i++) assert_int_equal(count[i], 0); /* scratch left zero */
    sd_penalties b = {.repeat = 1, .bias = BIAS, .n_bias = 4};
    rp.p = &b;
    float r2[16] = {0};
    sd_penalty_row(&rp, NULL, 0, r2, 16);
    assert_true(isinf(r2[3]) && r2[3] < 0);
    assert_true(r2[7] == 3.0f && r2[11] == -1.5f);
    sd_penalties off = {.repeat = 1, .repeat_last_n = 64};
    assert_false(sd_penalties_active(&off));
    assert_false(sd_penalties_active(NULL));
}

/* ---- a drafter that knows the penalties ---- */

typedef struct knower {
    const oracle *o;
    const sd_penalties *p;
    int32_t count[V];
} knower;

/* The penalised greedy token after t[0..n): what plain decoding picks. */
static int32_t knower_next(const void *self, const int32_t *t, int32_t n) {
    knower *k = (knower *)self;
    float row[V];
    oracle_row(k->o, t, n, row);
    sd_rowpen rp = {.p = k->p, .hist = t, .n_hist = n, .n_prompt = N_PROMPT, .count = k->count};
    sd_penalty_row(&rp, NULL, 0, row, V);
    return sd_argmax(row, V);
}

static int32_t plain_next(const void *o, const int32_t *t, int32_t n) {
    float row[V];
    oracle_row(o, t, n, row);
    return sd_argmax(row, V);
}

/* ---- one run ---- */

typedef enum { DK_NONE, DK_KNOWER, DK_WRONG, DK_RANDOM, DK_NGRAM, DK_N } dkind;
static const char *const DK_NAME[DK_N] = {"plain", "knower", "wrong", "random", "ngram"};

static sd_token_lp *g_lp; /* when set, generate() asks for log-probabilities (5 alternatives) into it */

static int32_t generate(const sd_penalties *pen, dkind dk, float temp, int K, int variant, uint64_t seed,
                        int32_t *out) {
    static const int32_t prompt[N_PROMPT] = {4, 9, 4, 17, 9};
    oracle o;
    oracle_init(&o, ORACLE_MARKOV, V, 1, 256, 4242 + seed, 6);
    o.two_pass = variant == 1;
    o.tree = variant == 2;
    sd_lm lm = oracle_lm(&o);
    knower kn = {.o = &o, .p = pen};
    sd_drafter dr = {0};
    sd_err err = {0};
    if (dk == DK_KNOWER) dr = toy_drafter(&kn, knower_next, V, D_PERFECT, seed, 512);
    else if (dk == DK_WRONG) dr = toy_drafter(&o, plain_next, V, D_WRONG, seed, 512);
    else if (dk == DK_RANDOM) dr = toy_drafter(&o, plain_next, V, D_RANDOM, seed, 512);
    else if (dk == DK_NGRAM) assert_int_equal(sd_drafter_ngram_init(&dr, 1, 3, &err), SD_OK);
    sd_spec_params p = sd_spec_default_params();
    p.n_predict = N_PREDICT;
    p.draft_max = K;
    p.adaptive_k = false;
    p.gate_misses = 0;
    p.stop_at_eog = false;
    p.sampling.temp = temp;
    p.sampling.seed = seed;
    p.tree_nodes = variant == 2 ? 8 : 0;
    p.tree_width = 2;
    p.penalties = pen;
    p.logprobs = g_lp;
    p.top_logprobs = 5;
    int32_t n = 0;
    sd_spec_stats st;
    assert_int_equal(sd_spec_generate(&lm, dk == DK_NONE ? NULL : &dr, prompt, N_PROMPT, &p, NULL, NULL, out, &n,
                                      &st, &err),
                     SD_OK);
    assert_int_equal(o.misuse, 0);
    if (dk != DK_NONE) sd_drafter_free(&dr);
    oracle_free(&o);
    return n;
}

typedef struct outcome {
    int runs, fails;
    int accepted_rounds; /* knower runs whose rounds accepted drafts (the check has teeth) */
} outcome;

static outcome run_lossless(int verbose) {
    outcome oc = {0};
    for (int si = 0; si < N_SETTINGS; si++) {
        sd_penalties pen = settings(si);
        for (int ti = 0; ti < 2; ti++) {
            float temp = ti ? 0.9f : 0;
            for (uint64_t seed = 1; seed <= 3; seed++) {
                int32_t want[N_PREDICT], got[N_PREDICT];
                int32_t nw = generate(&pen, DK_NONE, temp, 1, 0, seed, want);
                assert_int_equal(nw, N_PREDICT);
                for (int dk = DK_KNOWER; dk < DK_N; dk++)
                    for (int v = 0; v < 4; v++) { /* K 3, K 6 two-pass, a tree, K 6 */
                        int K = v == 0 ? 3 : 6;
                        int32_t ng = generate(&pen, (dkind)dk, temp, K, v == 3 ? 0 : v, seed, got);
                        oc.runs++;
                        if (ng != nw || memcmp(got, want, (size_t)nw * sizeof *got)) {
                            oc.fails++;
                            if (verbose)
                                printf("  diverged: setting %d temp %.1f seed %d drafter %s variant %d\n", si,
                                       (double)temp, (int)seed, DK_NAME[dk], v);
                        }
                    }
            }
        }
    }
    return oc;
}

/* Penalties change the output (else the sweep proves nothing): each
 * setting's plain greedy text differs from the unpenalised one. */
static void test_penalties_matter(void **state) {
    (void)state;
    int32_t base[N_PREDICT], pen_out[N_PREDICT];
    sd_penalties off = {.repeat = 1, .repeat_last_n = 64};
    generate(&off, DK_NONE, 0, 1, 0, 1, base);
    for (int si = 0; si < N_SETTINGS; si++) {
        sd_penalties pen = settings(si);
        generate(&pen, DK_NONE, 0, 1, 0, 1, pen_out);
        assert_true(memcmp(base, pen_out, sizeof base) != 0);
    }
}

static void test_lossless(void **state) {
    (void)state;
    outcome oc = run_lossless(1);
    printf("penalties oracle: LOSSLESS %d/%d runs\n", oc.runs - oc.fails, oc.runs);
    assert_int_equal(oc.fails, 0);
}

/* The knower's drafts are all accepted at temperature 0: rounds of K drafts
 * where every row past the first is penalised along the draft path. */
static void test_knower_accepted(void **state) {
    (void)state;
    sd_penalties pen = settings(4);
    oracle o;
    oracle_init(&o, ORACLE_MARKOV, V, 1, 256, 4243, 6);
    sd_lm lm = oracle_lm(&o);
    knower kn = {.o = &o, .p = &pen};
    sd_drafter dr = toy_drafter(&kn, knower_next, V, D_PERFECT, 1, 512);
    sd_spec_params p = sd_spec_default_params();
    p.n_predict = N_PREDICT;
    p.draft_max = 6;
    p.adaptive_k = false;
    p.gate_misses = 0;
    p.stop_at_eog = false;
    p.penalties = &pen;
    static const int32_t prompt[N_PROMPT] = {4, 9, 4, 17, 9};
    int32_t out[N_PREDICT], n = 0;
    sd_spec_stats st;
    sd_err err = {0};
    assert_int_equal(sd_spec_generate(&lm, &dr, prompt, N_PROMPT, &p, NULL, NULL, out, &n, &st, &err), SD_OK);
    printf("knower: %lld of %lld drafts accepted in %lld rounds\n", (long long)st.accepted, (long long)st.drafted,
           (long long)st.rounds);
    assert_true(st.rounds > 0);
    assert_int_equal(st.accepted, st.drafted);
    sd_drafter_free(&dr);
    oracle_free(&o);
}

static void test_mutants(void **state) {
    (void)state;
    static const struct {
        int id;
        const char *name;
    } muts[] = {
        {SD_PMUT_COMMITTED_ONLY, "counts from the committed text only"},
        {SD_PMUT_SHORT_PREFIX, "draft prefix one token short"},
    };
    for (size_t i = 0; i < sizeof muts / sizeof *muts; i++) {
        sd_penalty_mutant = muts[i].id;
        outcome oc = run_lossless(0);
        sd_penalty_mutant = SD_PMUT_NONE;
        printf("mutant \"%s\": LOSSLESS failed %d/%d -> %s\n", muts[i].name, oc.fails, oc.runs,
               oc.fails ? "caught" : "NOT CAUGHT");
        if (!oc.fails) fail_msg("mutant \"%s\" was not caught", muts[i].name);
    }
}

/* Two runs' log-probabilities are bitwise equal over n tokens. */
static int lp_equal(const sd_token_lp *a, const sd_token_lp *b, int32_t n) {
    for (int32_t i = 0; i < n; i++) {
        if (a[i].token != b[i].token || memcmp(&a[i].logprob, &b[i].logprob, sizeof(float)) || a[i].n_top != b[i].n_top)
            return 0;
        if (memcmp(a[i].top_token, b[i].top_token, (size_t)a[i].n_top * sizeof(int32_t)) ||
            memcmp(a[i].top_logprob, b[i].top_logprob, (size_t)a[i].n_top * sizeof(float)))
            return 0;
    }
    return 1;
}

/* Log-probabilities (decode/logprob.h) with speculation are bitwise those of
 * plain decoding, token by token, for every drafter, chains, the two-pass
 * head and trees, penalised or not; and they describe the row the token was
 * picked from: the token is listed among the alternatives where it is one
 * of the best, greedy picks are the best, and the alternatives are ordered. */
static void test_logprobs(void **state) {
    (void)state;
    static sd_token_lp want[N_PREDICT + 1], got[N_PREDICT + 1];
    int runs = 0;
    for (int si = -1; si < N_SETTINGS; si += 2) {
        sd_penalties pen = si < 0 ? (sd_penalties){.repeat = 1} : settings(si);
        for (int ti = 0; ti < 2; ti++) {
            float temp = ti ? 0.9f : 0;
            int32_t w_out[N_PREDICT], g_out[N_PREDICT];
            g_lp = want;
            int32_t nw = generate(&pen, DK_NONE, temp, 1, 0, 1, w_out);
            for (int32_t i = 0; i < nw; i++) {
                assert_int_equal(want[i].token, w_out[i]);
                assert_true(want[i].logprob <= 0 && want[i].n_top == 5);
                for (int j = 1; j < want[i].n_top; j++) assert_true(want[i].top_logprob[j] <= want[i].top_logprob[j - 1]);
                if (temp == 0) assert_true(want[i].top_token[0] == w_out[i] && want[i].top_logprob[0] == want[i].logprob);
            }
            for (int dk = DK_KNOWER; dk < DK_N; dk++)
                for (int v = 0; v < 3; v++) {
                    g_lp = got;
                    int32_t ng = generate(&pen, (dkind)dk, temp, v == 0 ? 3 : 6, v, 1, g_out);
                    runs++;
                    assert_int_equal(ng, nw);
                    if (!lp_equal(want, got, nw))
                        fail_msg("setting %d temp %.1f drafter %s variant %d: log-probabilities differ from plain", si,
                                 (double)temp, DK_NAME[dk], v);
                }
        }
    }
    g_lp = NULL;
    printf("log-probabilities bitwise equal to plain decoding's in %d runs\n", runs);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_formulas),
        cmocka_unit_test(test_penalties_matter),
        cmocka_unit_test(test_knower_accepted),
        cmocka_unit_test(test_lossless),
        cmocka_unit_test(test_mutants),
        cmocka_unit_test(test_logprobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
