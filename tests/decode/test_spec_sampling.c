/* decode/spec: speculative sampling (ARCHITECTURE.md §6) draws from the same
 * distribution as plain sampling. A Markov oracle is the target; for many
 * seeds, the 4-token continuations from the real sd_spec_generate are
 * counted and compared with their exact probabilities (products of the
 * sampler's own distributions) by a chi-square test. Drafters: none (the
 * control), n-gram (one-hot q), a draft model sampling its own q (a second
 * Markov oracle through the real drafter_model), and auto. A deliberately
 * broken acceptance rule must be caught by the same test (it is used for
 * sampled drafts only).
 * Deterministic drafts (n-gram, a draft model proposing its coupled draw
 * (drafter.h couple; its argmax when greedy), auto of both) are verified against the target's own per-position pick: the output
 * must be byte-identical to plain sampling with the same seed, every seed.
 * A draft model with the target's own law, coupled (drafter.h couple), is
 * accepted every time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/spec.h"
#include "decode/verify.h"
#include "chi_square.h"
#include "oracle_lm.h"

enum { V = 4, N_GEN = 4, N_CELLS = V * V * V * V };
/* ---- the exact law of plain sampling, from the sampler's own p ---- */
static void exact_probs(oracle *o, const sd_sampling *s, const int32_t *prompt, int32_t n_prompt,
                        double *prob) {
    sd_sampler sm;
    assert_int_equal(sd_sampler_init(&sm, s, V, NULL), SD_OK);
    float row[V], p[N_GEN][V];
    int32_t t[64];
    memcpy(t, prompt, (size_t)n_prompt * sizeof *t);
    for (int c = 0; c < N_CELLS; c++) {
        double pr = 1;
        for (int i = 0, code = c; i < N_GEN; i++, code /= V) {
            oracle_row(o, t, n_prompt + i, row);
            sd_sampler_probs(&sm, row, p[i]);
            t[n_prompt + i] = code % V;
            pr *= p[i][code % V];
        }
        prob[c] = pr;
    }
    sd_sampler_free(&sm);
}

/* A broken rule: right acceptance test, but a rejection redraws from p instead
 * of the residual max(0, p - q): the rejected token is over-represented. */
static int32_t broken_rule(const float *p, const float *q, int32_t d, int32_t n_vocab, sd_rng *rng,
                           float *scratch) {
    (void)scratch;
    float q_d = q ? q[d] : 1.0f;
    if (q_d > 0 && sd_rng_uniform(rng) * q_d < p[d]) return -1;
    return sd_sample_probs(p, n_vocab, rng);
}

typedef enum { NONE, NGRAM, DRAFT, AUTO, DRAFT_ARGMAX, AUTO_ARGMAX } which;
static const char *WHICH[] = {"plain", "ngram", "draft", "auto", "draft det", "auto det"};

typedef struct setup {
    sd_sampling s;
    sd_accept_rule rule;
} setup;

/* Runs n seeds and returns the chi-square p-value of the 4-token sequences. */
static double run(which w, const setup *su, int n, double *alpha) {
    const int32_t prompt[] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 3, 2, 0, 1};
    int32_t n_prompt = (int32_t)(sizeof prompt / sizeof *prompt);
    oracle target, draft_o;
    oracle_init(&target, ORACLE_MARKOV, V, 1, 64, 11, 4);
    oracle_init(&draft_o, ORACLE_MARKOV, V, 1, 64, 12, 4);
    sd_lm lm = oracle_lm(&target), draft_lm = oracle_lm(&draft_o);
    sd_drafter dr = {0}, ng = {0}, dm = {0};
    bool argmax = w == DRAFT_ARGMAX || w == AUTO_ARGMAX; /* sampling NULL: the draft proposes its coupled draw (drafter.h couple) */
    if (w == NGRAM || w == AUTO || w == AUTO_ARGMAX) assert_int_equal(sd_drafter_ngram_init(&ng, 1, 2, NULL), SD_OK);
    if (w >= DRAFT && w != NGRAM)
        assert_int_equal(sd_drafter_model_init(&dm, &draft_lm, argmax ? NULL : &su->s, 4, NULL), SD_OK);
    if (w == NGRAM) dr = ng, ng = (sd_drafter){0};
    if (w == DRAFT || w == DRAFT_ARGMAX) dr = dm, dm = (sd_drafter){0};
    if (w == AUTO || w == AUTO_ARGMAX) assert_int_equal(sd_drafter_auto_init(&dr, &ng, &dm, V, NULL), SD_OK);
    double prob[N_CELLS];
    exact_probs(&target, &su->s, prompt, n_prompt, prob);
    int count[N_CELLS] = {0};
    int64_t drafted = 0, accepted = 0;
    sd_spec_params p = sd_spec_default_params();
    p.n_predict = N_GEN;
    p.draft_max = 3;
    p.adaptive_k = false;
    p.gate_misses = 0;
    p.accept = su->rule;
    for (int i = 0; i < n; i++) {
        p.sampling = su->s;
        p.sampling.seed = 1000 + (uint64_t)i;
        int32_t out[N_GEN], n_out = 0;
        sd_spec_stats st;
        target.len = 0;
        assert_int_equal(sd_spec_generate(&lm, w == NONE ? NULL : &dr, prompt, n_prompt, &p, NULL,
                                          NULL, out, &n_out, &st, NULL),
                         SD_OK);
        assert_int_equal(n_out, N_GEN);
        int code = 0;
        for (int t = N_GEN - 1; t >= 0; t--) code = code * V + out[t];
        count[code]++;
        drafted += st.drafted;
        accepted += st.accepted;
    }
    *alpha = drafted ? (double)accepted / (double)drafted : 0;
    if (w != NONE) assert_true(drafted > n); /* the drafter really drafted */
    sd_drafter_free(&dr);
    sd_drafter_free(&ng);
    sd_drafter_free(&dm);
    oracle_free(&target);
    oracle_free(&draft_o);
    return chi_square_p(count, prob, N_CELLS, n);
}

static int n_seeds(void) { return getenv("SD_ASAN") ? 12000 : 30000; }

static void check_all(const setup *su, const char *label) {
    for (which w = NONE; w <= AUTO; w++) {
        double alpha, pv = run(w, su, n_seeds(), &alpha);
        printf("%-22s %-6s α %.2f  chi-square p = %.4f\n", label, WHICH[w], alpha, pv);
        assert_true(pv > P_FAIL);
    }
}

static void test_same_law_temp1(void **state) {
    (void)state;
    setup su = {.s = {.temp = 1.0f, .top_p = 1}};
    check_all(&su, "temp 1");
}

static void test_same_law_filters(void **state) {
    (void)state;
    setup su = {.s = {.temp = 0.8f, .top_k = 3, .top_p = 0.9f, .min_p = 0.05f}};
    check_all(&su, "temp .8 k3 p.9 minp.05");
}

/* The rule is what sampled drafts go through (a deterministic draft never
 * reaches it: test_deterministic_byte_identical). */
static void test_broken_rule_is_caught(void **state) {
    (void)state;
    setup su = {.s = {.temp = 1.0f, .top_p = 1}, .rule = broken_rule};
    for (which w = DRAFT; w <= AUTO; w++) {
        double alpha, pv = run(w, &su, n_seeds(), &alpha);
        printf("broken rule            %-6s α %.2f  chi-square p = %.3g (must be < %g)\n", WHICH[w],
               alpha, pv, P_FAIL);
        assert_true(pv < P_FAIL);
    }
}

/* Generates from prompt twice with the same params, plainly and with the
 * drafter dr, and fails the test unless the two outputs are byte-identical;
 * st gets the speculative run's stats. target is the oracle behind lm (its
 * history is reset before each run). */
static void expect_plain_equal(sd_lm *lm, oracle *target, sd_drafter *dr, const int32_t *prompt, int32_t n_prompt,
                               const sd_spec_params *p, sd_spec_stats *st, const char *what, int seed) {
    int32_t plain[32], spec[32], n_plain = 0, n_spec = 0;
    target->len = 0;
    assert_int_equal(sd_spec_generate(lm, NULL, prompt, n_prompt, p, NULL, NULL, plain, &n_plain, NULL, NULL), SD_OK);
    target->len = 0;
    assert_int_equal(sd_spec_generate(lm, dr, prompt, n_prompt, p, NULL, NULL, spec, &n_spec, st, NULL), SD_OK);
    assert_int_equal(n_plain, n_spec);
    if (memcmp(plain, spec, (size_t)n_plain * sizeof *plain) != 0)
        fail_msg("%s, seed %d: speculative sampling differs from plain sampling", what, seed);
}

/* Deterministic drafts at temperature > 0: for every seed, the speculative
 * output is plain sampling's output with that seed, token for token (longer
 * runs than the chi-square's, so rounds span many positions); the drafts are
 * really accepted now and then, and a broken rule plugged in changes nothing. */
static void test_deterministic_byte_identical(void **state) {
    (void)state;
    const int32_t prompt[] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 3, 2, 0, 1};
    const int32_t n_prompt = (int32_t)(sizeof prompt / sizeof *prompt), n_gen = 24;
    const sd_sampling settings[2] = {{.temp = 1.0f, .top_p = 1}, {.temp = 0.7f, .top_k = 3, .top_p = 0.9f}};
    for (int si = 0; si < 2; si++) {
        for (which w = NGRAM; w <= AUTO_ARGMAX; w++) {
            if (w == DRAFT || w == AUTO) continue; /* sampled drafts: chi-square above */
            oracle target, draft_o;
            oracle_init(&target, ORACLE_MARKOV, V, 1, 64, 11, 4);
            oracle_init(&draft_o, ORACLE_MARKOV, V, 1, 64, 12, 4);
            sd_lm lm = oracle_lm(&target), draft_lm = oracle_lm(&draft_o);
            int64_t drafted = 0, accepted = 0;
            for (int i = 0; i < 400; i++) {
                sd_drafter dr = {0}, ng = {0}, dm = {0};
                if (w != DRAFT_ARGMAX) assert_int_equal(sd_drafter_ngram_init(&ng, 1, 2, NULL), SD_OK);
                if (w != NGRAM) assert_int_equal(sd_drafter_model_init(&dm, &draft_lm, NULL, 4, NULL), SD_OK);
                if (w == NGRAM) dr = ng, ng = (sd_drafter){0};
                if (w == DRAFT_ARGMAX) dr = dm, dm = (sd_drafter){0};
                if (w == AUTO_ARGMAX) assert_int_equal(sd_drafter_auto_init(&dr, &ng, &dm, V, NULL), SD_OK);
                assert_false(dr.stochastic);
                sd_spec_params p = sd_spec_default_params();
                p.n_predict = n_gen;
                p.draft_max = 1 + i % 5;
                p.adaptive_k = i % 2;
                p.gate_misses = 0;
                p.sampling = settings[si];
                p.sampling.seed = 7000 + (uint64_t)i;
                p.accept = i % 3 == 0 ? broken_rule : NULL;
                sd_spec_stats st;
                expect_plain_equal(&lm, &target, &dr, prompt, n_prompt, &p, &st, WHICH[w], 7000 + i);
                drafted += st.drafted, accepted += st.accepted;
                sd_drafter_free(&dr);
                sd_drafter_free(&ng);
                sd_drafter_free(&dm);
            }
            printf("byte-identical  %-12s settings %d: α %.2f (%lld/%lld)\n", WHICH[w], si,
                   drafted ? (double)accepted / (double)drafted : 0.0, (long long)accepted, (long long)drafted);
            assert_true(accepted > 0 && accepted < drafted);
            oracle_free(&target);
            oracle_free(&draft_o);
        }
    }
}

/* Token trees at temperature > 0 (decode/tree.h): a node is accepted iff
 * it is the target's own pick at its position, so the output is plain
 * sampling's, byte for byte, for every seed; also with a draft model that
 * samples its chain proposals (a tree drafts its best candidates instead). */
static void test_tree_byte_identical(void **state) {
    (void)state;
    const int32_t prompt[] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 3, 2, 0, 1};
    const int32_t n_prompt = (int32_t)(sizeof prompt / sizeof *prompt), n_gen = 24;
    const sd_sampling settings[2] = {{.temp = 1.0f, .top_p = 1}, {.temp = 0.7f, .top_k = 3, .top_p = 0.9f}};
    for (int si = 0; si < 2; si++) {
        oracle target, draft_o;
        oracle_init(&target, ORACLE_MARKOV, V, 1, 64, 11, 4);
        oracle_init(&draft_o, ORACLE_MARKOV, V, 1, 64, 12, 4);
        target.tree = true;
        sd_lm lm = oracle_lm(&target), draft_lm = oracle_lm(&draft_o);
        int64_t drafted = 0, accepted = 0, tree_rounds = 0;
        for (int i = 0; i < 400; i++) {
            sd_drafter dr = {0};
            sd_sampling ds = settings[si];
            assert_int_equal(sd_drafter_model_init(&dr, &draft_lm, i % 2 ? &ds : NULL, 4, NULL), SD_OK);
            sd_spec_params p = sd_spec_default_params();
            p.n_predict = n_gen;
            p.draft_max = 1 + i % 5;
            p.adaptive_k = i % 2;
            p.gate_misses = 0;
            p.tree_nodes = p.draft_max + i % 4;
            p.tree_width = 1 + i % 3;
            p.sampling = settings[si];
            p.sampling.seed = 9000 + (uint64_t)i;
            sd_spec_stats st;
            expect_plain_equal(&lm, &target, &dr, prompt, n_prompt, &p, &st, "tree", 9000 + i);
            drafted += st.drafted, accepted += st.accepted, tree_rounds += st.tree_rounds;
            sd_drafter_free(&dr);
        }
        printf("byte-identical  tree draft   settings %d: %lld tree rounds, %lld/%lld nodes accepted\n", si,
               (long long)tree_rounds, (long long)accepted, (long long)drafted);
        assert_true(tree_rounds > 400 && accepted > 0 && accepted < drafted);
        assert_int_equal(target.misuse, 0);
        oracle_free(&target);
        oracle_free(&draft_o);
    }
}

/* Coupled drafting (drafter.h couple): a draft model with exactly the
 * target's distributions proposes, at temperature > 0, the token the
 * target's own per-position draw picks, so every proposal is accepted
 * (α = 1) and the output is plain sampling's, for every seed; the same
 * drafter with coupling taken away (couple = NULL: argmax proposals) is
 * accepted only when the sample happens to be the argmax (α < 1). */
static void test_coupled_self_draft(void **state) {
    (void)state;
    const int32_t prompt[] = {0, 1, 2, 3, 0, 1, 2, 3, 0, 1, 3, 2, 0, 1};
    const int32_t n_prompt = (int32_t)(sizeof prompt / sizeof *prompt), n_gen = 24;
    const sd_sampling settings[2] = {{.temp = 1.0f, .top_p = 1}, {.temp = 0.7f, .top_k = 3, .top_p = 0.9f}};
    for (int si = 0; si < 2; si++)
        for (int coupled = 1; coupled >= 0; coupled--) {
            oracle target, twin; /* the same Markov law twice: the draft is the target */
            oracle_init(&target, ORACLE_MARKOV, V, 1, 64, 11, 4);
            oracle_init(&twin, ORACLE_MARKOV, V, 1, 64, 11, 4);
            sd_lm lm = oracle_lm(&target), draft_lm = oracle_lm(&twin);
            int64_t drafted = 0, accepted = 0;
            for (int i = 0; i < 200; i++) {
                sd_drafter dr = {0};
                assert_int_equal(sd_drafter_model_init(&dr, &draft_lm, NULL, 4, NULL), SD_OK);
                assert_non_null(dr.couple);
                if (!coupled) dr.couple = NULL;
                sd_spec_params p = sd_spec_default_params();
                p.n_predict = n_gen;
                p.draft_max = 1 + i % 5;
                p.adaptive_k = false;
                p.gate_misses = 0;
                p.sampling = settings[si];
                p.sampling.seed = 5000 + (uint64_t)i;
                sd_spec_stats st;
                expect_plain_equal(&lm, &target, &dr, prompt, n_prompt, &p, &st, coupled ? "coupled" : "argmax",
                                   5000 + i);
                drafted += st.drafted, accepted += st.accepted;
                sd_drafter_free(&dr);
            }
            printf("self-draft %-8s settings %d: α %.3f (%lld/%lld)\n", coupled ? "coupled" : "argmax", si,
                   drafted ? (double)accepted / (double)drafted : 0.0, (long long)accepted, (long long)drafted);
            assert_true(drafted > 200);
            if (coupled) assert_int_equal(accepted, drafted);
            else assert_true(accepted < drafted);
            oracle_free(&target);
            oracle_free(&twin);
        }
}

/* The exponential race (sd_race_pick): its law is p (chi-square, a zero
 * never drawn), its skipping of tokens that cannot win changes nothing (a
 * full scan of argmin -ln(u_i) / p_i agrees on every key), and two
 * distributions raced with one key agree at least (1 - TV) / (1 + TV) of
 * the time, where one shared inverse-CDF uniform agrees much less. */
static void test_race(void **state) {
    (void)state;
    enum { N = 64, KEYS = 200000 };
    float p[N], q[N];
    double prob[N], sum = 0, tv = 0;
    for (int i = 0; i < N; i++) sum += p[i] = i % 7 == 3 ? 0.0f : (float)(1.0 + (i * 37 % 11)) / (float)(1 + i % 5);
    for (int i = 0; i < N; i++) p[i] = (float)(p[i] / sum), prob[i] = p[i];
    sum = 0; /* q: p with every mass moved a little, zeros kept */
    for (int i = 0; i < N; i++) sum += q[i] = p[i] * (float)(1.0 + 0.6 * sin(1.7 * i));
    for (int i = 0; i < N; i++) q[i] = (float)(q[i] / sum), tv += 0.5 * fabs((double)p[i] - (double)q[i]);
    int count[N] = {0}, same_race = 0, same_cdf = 0;
    for (int k = 0; k < KEYS; k++) {
        const uint64_t key = 0x1234567ull * (uint64_t)(k + 1);
        const int32_t r = sd_race_pick(p, N, k % N, key); /* any start: the same winner */
        assert_true(r >= 0 && r < N && p[r] > 0);
        count[r]++;
        if (k < 20000) { /* the full scan */
            int32_t b = -1;
            double bv = INFINITY;
            for (int32_t i = 0; i < N; i++) {
                const double e = p[i] > 0 ? -log(sd_race_uniform(key, i)) / (double)p[i] : INFINITY;
                if (e < bv) bv = e, b = i;
            }
            assert_int_equal(r, b);
        }
        same_race += r == sd_race_pick(q, N, sd_argmax(q, N), key);
        sd_rng a, c;
        sd_rng_seed(&a, key), sd_rng_seed(&c, key);
        same_cdf += sd_sample_probs(p, N, &a) == sd_sample_probs(q, N, &c);
    }
    const double pv = chi_square_p(count, prob, N, KEYS), bound = (1 - tv) / (1 + tv);
    printf("race: chi-square p = %.4f; TV %.3f: race agrees %.3f (bound %.3f), one inverse-CDF uniform %.3f\n", pv, tv,
           (double)same_race / KEYS, bound, (double)same_cdf / KEYS);
    assert_true(pv > P_FAIL);
    assert_true((double)same_race / KEYS > bound);
    assert_true(same_race > same_cdf);
}

/* The rule itself, on a case small enough to enumerate: P(output = x) equals p(x). */
static void test_rule_exact_law(void **state) {
    (void)state;
    const float p[3] = {0.5f, 0.3f, 0.2f}, q[3] = {0.2f, 0.7f, 0.1f};
    int count[3] = {0};
    sd_rng rng;
    sd_rng_seed(&rng, 5);
    float scratch[3];
    int n = 200000;
    for (int i = 0; i < n; i++) {
        int32_t d = sd_sample_probs(q, 3, &rng);
        int32_t r = sd_accept_speculative(p, q, d, 3, &rng, scratch);
        count[r < 0 ? d : r]++;
    }
    double prob[3] = {0.5, 0.3, 0.2};
    assert_true(chi_square_p(count, prob, 3, n) > P_FAIL);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rule_exact_law),
        cmocka_unit_test(test_same_law_temp1),
        cmocka_unit_test(test_same_law_filters),
        cmocka_unit_test(test_broken_rule_is_caught),
        cmocka_unit_test(test_deterministic_byte_identical),
        cmocka_unit_test(test_tree_byte_identical),
        cmocka_unit_test(test_coupled_self_draft),
        cmocka_unit_test(test_race),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
