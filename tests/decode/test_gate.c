/* decode/gate: the hit-rate gate on synthetic, deterministic costs — the
 * speedup model of ARCHITECTURE.md §2 on measured c_v and r, when it closes, when
 * it cuts K, when it refuses to reopen. (Lossless output under every gate
 * decision is test_spec_property's job.) */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>

#include "decode/gate.h"

static sd_gate make(bool costly, int gate_misses) {
    sd_spec_params p = sd_spec_default_params();
    p.gate_misses = gate_misses;
    sd_gate g;
    sd_gate_init(&g, &p, costly);
    return g;
}

/* Target forwards cost t(S) = 1 + slope·(S-1) (cliff: + jump from S = 5 on);
 * the drafter r per token. */
static void teach_costs(sd_gate *g, double slope, double jump, double r) {
    for (int S = 1; S <= 9; S++) sd_gate_time_forward(g, S, 1 + slope * (S - 1) + (S >= 5 ? jump : 0));
    if (r > 0) sd_gate_time_draft(g, 1, r);
}

/* One round as the decode loop runs it: j of the gate's k accepted with the
 * acceptance pattern of a fixed α (deterministic: accept while the hits stay
 * below the rounded running count α·tried). */
static int play_round(sd_gate *g, double alpha, long *tried, long *hit) {
    int k = sd_gate_k(g);
    if (k == 0) return 0;
    int j = 0;
    while (j < k) {
        ++*tried;
        if ((long)(alpha * (double)*tried + 0.5) <= *hit) break; /* the rounded running count */
        ++*hit, ++j;
    }
    sd_gate_round(g, k, j);
    return k;
}

static void test_model_formula(void **state) {
    (void)state;
    sd_gate g = make(true, 4);
    assert_true(sd_gate_predicted_speedup(&g, 1) < 0); /* t(1) unknown */
    sd_gate_time_forward(&g, 1, 2.0);
    sd_gate_time_forward(&g, 2, 2.2);
    sd_gate_time_draft(&g, 2, 0.4); /* 0.2 s per token: r = 0.1 */
    assert_float_equal(sd_gate_cv(&g, 2), 1.1, 1e-12);
    assert_float_equal(sd_gate_cv(&g, 5), 1.1 + 3 * 0.1, 1e-12); /* unmeasured: extrapolated */
    assert_float_equal(sd_gate_alpha(&g), 0.5, 1e-12);            /* the prior */
    assert_float_equal(sd_gate_predicted_speedup(&g, 1), 1.5 / (1.1 + 0.1), 1e-12);
    /* an outlier (preempted thread) moves the estimate by at most 3x: 0.7·2 + 0.3·6 */
    sd_gate_time_forward(&g, 1, 1000.0);
    assert_float_equal(sd_gate_cv(&g, 2), 2.2 / (0.7 * 2 + 0.3 * 6), 1e-12);
}

/* α = 0, a draft model at r = 0.08, c_v(2) = 1.15: the first step is plain
 * and measures t(1), so the speedup model judges after the second failing
 * round and closes then — not after a third (which drafting first and
 * measuring t(1) later cost). Model probes that miss do not reopen it. */
static void test_closes_at_zero_alpha(void **state) {
    (void)state;
    sd_gate g = make(true, 4);
    assert_int_equal(sd_gate_k(&g), 0); /* t(1) unknown: a plain step first */
    int rounds = 0;
    for (int steps = 0; steps < 200 && g.open; steps++) {
        if (sd_gate_k(&g) == 0) { /* the calibration step: the only t(1) */
            sd_gate_time_forward(&g, 1, 1.0);
            continue;
        }
        /* as the decode loop: the round's draft and window timed, then judged */
        int k = sd_gate_k(&g);
        sd_gate_time_draft(&g, k, 0.08 * k);
        sd_gate_time_forward(&g, k + 1, 1 + 0.15 * k);
        sd_gate_round(&g, k, 0);
        rounds++;
    }
    assert_false(g.open);
    assert_int_equal(rounds, 2);
    bool run_model;
    int probes = 0;
    for (int i = 0; i < 300; i++)
        if (sd_gate_probe_due(&g, &run_model) && run_model) sd_gate_probe_result(&g, false, true), probes++;
    assert_false(g.open);
    assert_true(probes >= 2 && probes <= 300 / 16); /* the interval grows after misses */
}

/* The speedup model judges from the first round: a costly head on a steep
 * c_v (a mixture of experts: c_v(2) = 1.42, r = 0.15) closes after one
 * failed round, since even α̂ = 0.24 (the prior and one miss) predicts a
 * loss; a cheap draft on a dense model (c_v(2) = 1.05, r = 0.06) stays open
 * after the same miss. */
static int rounds_to_close(double cv2, double r) {
    sd_gate g = make(true, 4);
    sd_gate_time_forward(&g, 1, 1.0); /* the calibration step */
    int rounds = 0;
    while (g.open && rounds < 10) {
        int k = sd_gate_k(&g);
        sd_gate_time_draft(&g, k, r * k);
        sd_gate_time_forward(&g, k + 1, 1 + (cv2 - 1) * k);
        sd_gate_round(&g, k, 0);
        rounds++;
    }
    return rounds;
}

static void test_first_round_judged(void **state) {
    (void)state;
    assert_int_equal(rounds_to_close(1.42, 0.15), 1);
    assert_true(rounds_to_close(1.05, 0.06) >= 2);
}

/* A model probe that costs as much as 2 plain steps is spaced at least
 * 2 / 0.005 = 400 steps apart, not 16. */
static void test_probe_budget(void **state) {
    (void)state;
    sd_gate g = make(true, 4);
    sd_gate_time_forward(&g, 1, 1.0);
    g.open = false; /* as after closing */
    sd_gate_time_probe(&g, 2.0);
    bool run_model;
    int first = -1;
    for (int i = 1; i <= 1000 && first < 0; i++)
        if (sd_gate_probe_due(&g, &run_model) && run_model) first = i;
    assert_int_equal(first, 400);
}

/* α = 0.5 with an expensive draft (r = 0.6): no K pays (K = 1: 1.5 / 1.65),
 * so it closes even though rounds keep accepting some tokens (the miss rule
 * alone would not), and a probe hit at that α does not reopen it. */
static void test_closes_when_not_paying(void **state) {
    (void)state;
    sd_gate g = make(true, 4);
    teach_costs(&g, 0.05, 0, 0.6);
    long tried = 0, hit = 0;
    for (int i = 0; i < 40 && g.open; i++) play_round(&g, 0.5, &tried, &hit);
    assert_false(g.open);
    assert_true(hit > 0);
    sd_gate_probe_result(&g, true, true);
    assert_false(g.open);
    /* a drafter that turns good: hits reopen it */
    for (int i = 0; i < 10 && !g.open; i++) sd_gate_probe_result(&g, true, true);
    assert_true(g.open);
}

/* A free drafter at α = 0.9 on cheap verification stays open and grows K to
 * the maximum; with a cliff in c_v from S = 5 on, K is held below it. */
static void test_k_follows_costs(void **state) {
    (void)state;
    sd_gate g = make(false, 4);
    teach_costs(&g, 0.03, 0, 0);
    long tried = 0, hit = 0;
    for (int i = 0; i < 30; i++) play_round(&g, 0.9, &tried, &hit);
    assert_true(g.open);
    assert_int_equal(sd_gate_k(&g), 8);

    sd_gate c = make(false, 4);
    teach_costs(&c, 0.05, 1.2, 0);
    tried = hit = 0;
    int max_k = 0;
    for (int i = 0; i < 30; i++) {
        int k = play_round(&c, 0.9, &tried, &hit);
        if (i >= 5 && k > max_k) max_k = k;
    }
    assert_true(c.open);
    assert_true(max_k >= 2 && max_k <= 4);
}

/* A mixture-of-experts target (docs/MOE.md): a window of S rows reads the
 * union u(S) of their experts. Modelled as E = 128, k = 8, independent
 * routing, u(S) = E (1 - (1 - k/E)^S), expert bytes 60 % of a token's reads:
 * c_v(S) = 0.4 + 0.6 u(S) / k (c_v(2) = 1.56, c_v(9) = 4.7). */
static double moe_cv(int S) {
    return 0.4 + 0.6 * 128.0 * (1 - pow(1 - 8.0 / 128.0, S)) / 8.0;
}

/* Only t(1) and t(2) measured on that curve: the extrapolation follows the
 * measured slope, so at α = 0.7 a K = 8 window is predicted to lose and
 * K = 1 to win (a fixed +0.1 per row would predict c_v(9) = 2.26 and a
 * K = 8 speedup of 1.41). */
static void test_moe_extrapolation(void **state) {
    (void)state;
    sd_gate g = make(false, 4);
    sd_gate_time_forward(&g, 1, moe_cv(1));
    sd_gate_time_forward(&g, 2, moe_cv(2));
    const double cv2 = moe_cv(2) / moe_cv(1);
    assert_float_equal(sd_gate_cv(&g, 9), cv2 + 7 * (cv2 - 1), 1e-12);
    assert_true(sd_gate_cv(&g, 9) >= moe_cv(9) / moe_cv(1)); /* errs on the expensive side */
    g.hits = 0.7, g.trials = 1.0;
    assert_true(sd_gate_predicted_speedup(&g, 8) < 1.0);
    assert_true(sd_gate_predicted_speedup(&g, 1) > 1.0);
}

/* The decode loop on that MoE curve with a free drafter of fixed α: the gate
 * times what it runs (plain steps, windows of k + 1), chooses K and closes
 * by itself. Its tokens per unit of target time must never fall below
 * plain decoding's (1 per c_v(1)) by more than the calibration and probing
 * margin, at any α; and where a short window pays (α = 0.9) it must gain. */
static double moe_decode_ratio(double alpha) {
    sd_gate g = make(false, 4);
    long tried = 0, hit = 0;
    double cost = 0, tokens = 0;
    for (int step = 0; step < 2000; step++) {
        int k = sd_gate_k(&g);
        if (k == 0) { /* a plain step; closed: a shadow probe of the free drafter */
            cost += moe_cv(1), tokens += 1;
            sd_gate_time_forward(&g, 1, moe_cv(1));
            bool run_model;
            if (sd_gate_probe_due(&g, &run_model)) {
                ++tried;
                bool h = (long)(alpha * (double)tried + 0.5) > hit;
                hit += h;
                sd_gate_probe_result(&g, h, run_model);
            }
            continue;
        }
        int j = 0;
        while (j < k) {
            ++tried;
            if ((long)(alpha * (double)tried + 0.5) <= hit) break;
            ++hit, ++j;
        }
        cost += moe_cv(k + 1), tokens += j + 1;
        sd_gate_time_forward(&g, k + 1, moe_cv(k + 1));
        sd_gate_round(&g, k, j);
    }
    return tokens / cost * moe_cv(1);
}

static void test_moe_never_slower(void **state) {
    (void)state;
    const double alphas[] = {0.0, 0.3, 0.5, 0.7, 0.9};
    for (size_t i = 0; i < sizeof alphas / sizeof alphas[0]; i++) {
        double ratio = moe_decode_ratio(alphas[i]);
        printf("MoE c_v curve, α %.1f: speedup %.3f\n", alphas[i], ratio);
        assert_true(ratio >= 0.98);
    }
    assert_true(moe_decode_ratio(0.9) > 1.1);
}

/* G = 0: the gate is off, whatever the costs say. */

/* Block mode (a DFlash drafter): the draft cost is paid once per round, the
 * acceptance is per position, and K is the argmax of the §2 model over those,
 * checked against a brute-force evaluation from the same inputs; a cheap long
 * window lengthens K, a cliff in c_v shortens it, and where no K pays the gate
 * closes. With the gate off, K is the fixed k_max (the block, at most). */
static double block_speedup(const double *a, int k, double cv, double r) {
    double e = 1, run = 1;
    for (int i = 1; i <= k; i++) e += run *= a[i];
    return e / (cv + r);
}

static void teach_positions(sd_gate *g, const double *a, int n_block) {
    for (int rep = 0; rep < 60; rep++) /* exact running rates: hit while below round(a·trials) */
        for (int i = 1; i <= n_block; i++) {
            double h = g->pos_hits[i], t = g->pos_trials[i];
            sd_gate_position(g, i, h + 1 <= a[i] * (t + 1) + 0.5 * (1 - a[i]));
        }
}

static void test_block_mode(void **state) {
    (void)state;
    sd_gate g = make(true, 4);
    sd_gate_set_block(&g, 7);
    assert_int_equal(g.k_max, 7);
    assert_int_equal(sd_gate_k(&g), 0); /* t(1) unknown: a plain step first */
    const double a[8] = {0, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2};
    teach_positions(&g, a, 7);
    for (int i = 1; i <= 7; i++) assert_true(fabs(sd_gate_accept_at(&g, i) - a[i]) < 0.1);
    assert_true(sd_gate_accept_at(&g, 1) > sd_gate_accept_at(&g, 4)); /* per position, not one α */
    /* a cheap window (c_v 1 + 0.02 per row), a block forward of 0.3 target steps */
    for (int S = 1; S <= 8; S++) sd_gate_time_forward(&g, S, 1 + 0.02 * (S - 1));
    sd_gate_time_draft(&g, 7, 0.3); /* per round: NOT divided by the 7 drafts */
    double est[8], sp;
    for (int i = 1; i <= 7; i++) est[i] = sd_gate_accept_at(&g, i);
    int brute = 1;
    for (int k = 1; k <= 7; k++) {
        double want = block_speedup(est, k, sd_gate_cv(&g, k + 1), 0.3);
        assert_float_equal(sd_gate_predicted_speedup(&g, k), want, 1e-12);
        if (want > block_speedup(est, brute, sd_gate_cv(&g, brute + 1), 0.3)) brute = k;
    }
    assert_int_equal(sd_gate_best_k(&g, &sp), brute);
    assert_int_equal(sd_gate_k(&g), brute);
    assert_true(brute >= 4); /* the cheap window pays for the long tail */
    /* the same acceptance behind a costly window (+0.3 per row): a shorter K */
    sd_gate h = make(true, 4);
    sd_gate_set_block(&h, 7);
    teach_positions(&h, a, 7);
    for (int S = 1; S <= 8; S++) sd_gate_time_forward(&h, S, 1 + 0.3 * (S - 1));
    sd_gate_time_draft(&h, 7, 0.3);
    assert_true(sd_gate_k(&h) >= 1 && sd_gate_k(&h) < brute);
    /* a drafter whose first row is rarely right: no K pays, a zero round closes the gate */
    sd_gate z = make(true, 4);
    sd_gate_set_block(&z, 7);
    const double bad[8] = {0, 0.05, 0.9, 0.9, 0.9, 0.9, 0.9, 0.9};
    teach_positions(&z, bad, 7);
    for (int S = 1; S <= 8; S++) sd_gate_time_forward(&z, S, 1 + 0.05 * (S - 1));
    sd_gate_time_draft(&z, 7, 0.3);
    (void)sd_gate_best_k(&z, &sp);
    assert_true(sp < 1);
    sd_gate_round(&z, sd_gate_k(&z), 0);
    assert_int_equal(sd_gate_k(&z), 0);
    /* gate off: the fixed length, whatever the model says */
    sd_gate f = make(true, 0);
    f.adaptive = false;
    sd_gate_set_block(&f, 5);
    teach_positions(&f, bad, 5);
    sd_gate_time_forward(&f, 1, 1.0);
    assert_int_equal(sd_gate_k(&f), 5);
}

static void test_gate_off(void **state) {
    (void)state;
    sd_gate g = make(true, 0);
    teach_costs(&g, 1.0, 0, 2.0);
    long tried = 0, hit = 0;
    for (int i = 0; i < 20; i++) assert_true(play_round(&g, 0.0, &tried, &hit) > 0);
    assert_true(g.open);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_model_formula),
        cmocka_unit_test(test_closes_at_zero_alpha),
        cmocka_unit_test(test_first_round_judged),
        cmocka_unit_test(test_closes_when_not_paying),
        cmocka_unit_test(test_probe_budget),
        cmocka_unit_test(test_k_follows_costs),
        cmocka_unit_test(test_gate_off),
        cmocka_unit_test(test_block_mode),
        cmocka_unit_test(test_moe_extrapolation),
        cmocka_unit_test(test_moe_never_slower),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
