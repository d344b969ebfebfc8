/* decode/lm_hybrid: speculative decoding over a state that cannot be
 * truncated is lossless with every rollback discipline. For each discipline,
 * 3000 random cases through the real sd_spec_generate with the recurrent
 * oracle (oracle_rec.h) as the target behind sd_lm_hybrid, and every kind of
 * drafter: n-gram, a draft model (a second recurrent oracle behind its own
 * sd_lm_hybrid, the same seed or another), auto, perfect, always-wrong and
 * random; random capture rings (some too small, so the fallbacks run too).
 * Each output must equal plain greedy computed from scratch. Then the same
 * cases with a deliberately broken rollback (an off-by-one, and a rollback
 * of the length only) must fail: the test can tell. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/lm_hybrid.h"
#include "decode/sampler.h"
#include "decode/spec.h"
#include "oracle_rec.h"
#include "toy_drafter.h"

/* The recurrent oracle's greedy, as toy_drafter.h reaches it. */
static int32_t toy_next(const void *o, const int32_t *t, int32_t n) { return rec_next(o, t, n); }

static int32_t pick(sd_rng *r, int32_t lo, int32_t hi) { return lo + (int32_t)(sd_rng_next(r) % (uint64_t)(hi - lo + 1)); }

static int32_t g_eog = -1;
static bool is_eog(void *user, int32_t tok) {
    (void)user;
    return tok == g_eog;
}

/* Plain greedy from scratch: at most n_predict tokens and n_ctx - n_prompt + 1. */
static int32_t reference(const rec_oracle *o, const int32_t *prompt, int32_t n_prompt, int32_t n_predict,
                         int32_t *out) {
    rec_state s = {0};
    for (int32_t i = 0; i < n_prompt; i++) rec_step(o->salt, &s, prompt[i]);
    int32_t n_out = 0, cap = o->n_ctx - n_prompt + 1;
    while (n_out < n_predict && n_out < cap) {
        int32_t next = rec_argmax_of(o, &s);
        out[n_out++] = next;
        rec_step(o->salt, &s, next);
        if (next == g_eog) break;
    }
    return n_out;
}

typedef struct tally {
    int cases, lossless, misuse, rejects, ctx_limited;
    int64_t rollbacks, fallbacks_target, replayed, redecoded, loads;
} tally;

static void run_case(uint64_t seed, sd_rollback disc, sd_hybrid_mutant mutant, tally *tl) {
    sd_rng R;
    sd_rng_seed(&R, seed);
    static const int KS[] = {1, 2, 3, 4, 8};
    int32_t V = pick(&R, 0, 3) == 0 ? pick(&R, 2, 8) : pick(&R, 9, 64);
    int32_t n_prompt = pick(&R, 0, 3) ? pick(&R, 1, 4) : pick(&R, 5, 40);
    int32_t n_predict = pick(&R, 0, 60);
    int32_t n_ctx = pick(&R, 0, 2) ? n_prompt + pick(&R, 0, 12) : n_prompt + n_predict + pick(&R, 0, 10);
    rec_oracle target, draft_o;
    rec_oracle_init(&target, V, n_ctx, seed * 3 + 1);
    int32_t *prompt = malloc((size_t)n_prompt * sizeof *prompt);
    for (int32_t i = 0; i < n_prompt; i++)
        prompt[i] = i == 0 || pick(&R, 0, 3) ? pick(&R, 0, V - 1) : prompt[pick(&R, 0, i - 1)];
    g_eog = pick(&R, 0, 5) == 0 ? pick(&R, 0, V - 1) : -1;

    sd_spec_params p = sd_spec_default_params();
    p.n_predict = n_predict;
    p.draft_max = KS[pick(&R, 0, 4)];
    p.adaptive_k = pick(&R, 0, 1);
    p.gate_misses = pick(&R, 0, 2) == 0 ? 0 : pick(&R, 1, 4);
    p.gate_probe = pick(&R, 1, 8);
    p.n_batch = pick(&R, 1, 16);
    p.is_eog = is_eog;
    drafter_kind dk = (drafter_kind)pick(&R, 0, D_KINDS - 1);
    int nmin = pick(&R, 1, 3), nmax = pick(&R, nmin, 3);
    /* rings from too small (fallbacks) to roomy */
    int32_t slots = pick(&R, 0, 3) == 0 ? pick(&R, 1, p.draft_max + 1) : p.draft_max + 1 + pick(&R, 0, 4);
    if (disc == SD_ROLLBACK_WINDOW) slots = pick(&R, 2, 12); /* the window S */
    sd_err err = {0};

    sd_lm_hybrid th, dh;
    sd_recm tm = rec_oracle_recm(&target);
    assert_int_equal(sd_lm_hybrid_init(&th, &tm, disc, slots, true, &err), SD_OK);
    th.mutant = mutant;
    sd_lm lm;
    sd_lm_hybrid_as_lm(&lm, &th);

    bool same = pick(&R, 0, 1);
    rec_oracle_init(&draft_o, V, pick(&R, 0, 3) ? n_ctx + 8 : pick(&R, 1, n_ctx + 1), same ? seed * 3 + 1 : seed * 7 + 5);
    sd_recm dmm = rec_oracle_recm(&draft_o);
    assert_int_equal(sd_lm_hybrid_init(&dh, &dmm, disc, pick(&R, 2, 12), false, &err), SD_OK);
    dh.mutant = mutant;
    sd_lm draft_lm;
    sd_lm_hybrid_as_lm(&draft_lm, &dh);

    sd_drafter dr = {0}, ng = {0}, dm = {0};
    if (dk == D_NGRAM || dk == D_AUTO) assert_int_equal(sd_drafter_ngram_init(&ng, nmin, nmax, &err), SD_OK);
    if (dk == D_DRAFT || dk == D_AUTO)
        assert_int_equal(sd_drafter_model_init(&dm, &draft_lm, NULL, pick(&R, 1, 8), &err), SD_OK);
    if (dk == D_NGRAM) dr = ng, ng = (sd_drafter){0};
    else if (dk == D_DRAFT) dr = dm, dm = (sd_drafter){0};
    else if (dk == D_AUTO) assert_int_equal(sd_drafter_auto_init(&dr, &ng, &dm, V, &err), SD_OK);
    else dr = toy_drafter(&target, toy_next, target.V, dk, seed, n_prompt + n_predict + 16);

    int32_t *want = malloc((size_t)(n_predict + 1) * sizeof *want);
    int32_t *got = malloc((size_t)(n_predict + 1) * sizeof *got);
    int32_t n_want = reference(&target, prompt, n_prompt, n_predict, want), n_got = -1;
    sd_spec_stats st;
    sd_status rc = sd_spec_generate(&lm, &dr, prompt, n_prompt, &p, NULL, NULL, got, &n_got, &st, &err);
    bool ok = rc == SD_OK && target.misuse == 0 && draft_o.misuse == 0 && n_got == n_want &&
              !memcmp(got, want, (size_t)n_want * sizeof *got);
    if (!ok && mutant == SD_MUTANT_NONE)
        fprintf(stderr, "case %llu FAILED (%s): V=%d prompt=%d n_predict=%d n_ctx=%d K=%d slots=%d drafter=%s"
                        " want %d got %d misuse %d/%d rc %d %s\n",
                (unsigned long long)seed, sd_rollback_name(disc), V, n_prompt, n_predict, n_ctx, p.draft_max, slots,
                KIND_NAME[dk], n_want, n_got, target.misuse, draft_o.misuse, rc, rc ? err.msg : "");
    tl->cases++;
    tl->lossless += ok;
    tl->misuse += target.misuse + draft_o.misuse;
    tl->rejects += st.drafted > st.accepted;
    tl->ctx_limited += n_want < n_predict && n_want == n_ctx - n_prompt + 1;
    tl->rollbacks += th.st.rollbacks;
    if (disc == SD_ROLLBACK_WINDOW || slots >= p.draft_max + 1) tl->fallbacks_target += th.st.fallbacks;
    tl->replayed += th.st.replayed;
    tl->redecoded += th.st.redecoded;
    tl->loads += th.st.loads;
    sd_drafter_free(&dr);
    sd_drafter_free(&ng);
    sd_drafter_free(&dm);
    sd_lm_hybrid_free(&th);
    sd_lm_hybrid_free(&dh);
    rec_oracle_free(&target);
    rec_oracle_free(&draft_o);
    free(prompt);
    free(want);
    free(got);
}

static tally run_all(sd_rollback disc, sd_hybrid_mutant mutant, int n) {
    tally tl = {0};
    for (int i = 0; i < n; i++) run_case(0x4b1d0000ull + (uint64_t)i, disc, mutant, &tl);
    return tl;
}

static void check_discipline(sd_rollback disc) {
    const int n = 3000;
    tally tl = run_all(disc, SD_MUTANT_NONE, n);
    printf("%s: LOSSLESS %d/%d; %d cases with rejections, %d stopped by a full context; target rollbacks %lld"
           " (loads %lld, replayed positions %lld, re-decoded tokens %lld), fallbacks with a ring >= K+1: %lld\n",
           sd_rollback_name(disc), tl.lossless, tl.cases, tl.rejects, tl.ctx_limited, (long long)tl.rollbacks,
           (long long)tl.loads, (long long)tl.replayed, (long long)tl.redecoded, (long long)tl.fallbacks_target);
    assert_int_equal(tl.lossless, n);
    assert_int_equal(tl.misuse, 0);
    assert_true(tl.rejects > n / 10);
    assert_true(tl.ctx_limited > n / 20);
    assert_true(tl.rollbacks > n);
    /* the discipline itself served the target's rollbacks, not the fallback */
    assert_int_equal(tl.fallbacks_target, 0);
    if (disc == SD_ROLLBACK_CHECKPOINT) assert_true(tl.loads > n);
    if (disc == SD_ROLLBACK_REPLAY) assert_true(tl.replayed > n);
}

static void test_checkpoint(void **state) {
    (void)state;
    check_discipline(SD_ROLLBACK_CHECKPOINT);
}
static void test_replay(void **state) {
    (void)state;
    check_discipline(SD_ROLLBACK_REPLAY);
}
static void test_redecode(void **state) {
    (void)state;
    check_discipline(SD_ROLLBACK_REDECODE);
}
static void test_window(void **state) {
    (void)state;
    check_discipline(SD_ROLLBACK_WINDOW);
}

/* The mutants: the same cases must catch a broken rollback. */
static void test_mutants_fail(void **state) {
    (void)state;
    const int n = 3000;
    for (int d = 0; d < SD_ROLLBACK_N; d++)
        for (int mu = SD_MUTANT_SHORT; mu <= (d == SD_ROLLBACK_WINDOW ? SD_MUTANT_SHORT : SD_MUTANT_COUNTER); mu++) {
            tally tl = run_all((sd_rollback)d, (sd_hybrid_mutant)mu, n);
            printf("mutant %s on %s: LOSSLESS %d/%d (the test fails it)\n",
                   mu == SD_MUTANT_SHORT ? "off-by-one" : "length-only", sd_rollback_name((sd_rollback)d),
                   tl.lossless, tl.cases);
            assert_true(tl.lossless < n - n / 10);
        }
}

/* A hybrid lm of discipline d over a fresh recurrent oracle (V = 50, n_ctx 64), and toks[40] = (i * mul + add) % 50. */
typedef struct rig {
    rec_oracle o;
    sd_recm m;
    sd_lm_hybrid h;
    sd_lm lm;
    int32_t toks[40];
} rig;

static void rig_open(rig *r, int d, uint64_t seed, int32_t slots, bool commit_on_forward, int mul, int add) {
    sd_err err = {0};
    rec_oracle_init(&r->o, 50, 64, seed);
    r->m = rec_oracle_recm(&r->o);
    assert_int_equal(sd_lm_hybrid_init(&r->h, &r->m, (sd_rollback)d, slots, commit_on_forward, &err), SD_OK);
    sd_lm_hybrid_as_lm(&r->lm, &r->h);
    for (int i = 0; i < 40; i++) r->toks[i] = (i * mul + add) % 50;
}

/* The oracle's state is the one n plain steps over toks give; nothing misused. */
static void rig_expect_state(const rig *r, int32_t n) {
    assert_int_equal(r->lm.len(r->lm.self), n);
    rec_state s = {0};
    for (int i = 0; i < n; i++) rec_step(r->o.salt, &s, r->toks[i]);
    assert_true(s.h == r->o.s.h && s.w0 == r->o.s.w0 && s.w1 == r->o.s.w1);
    assert_int_equal(r->o.misuse, 0);
}

static void rig_close(rig *r) {
    sd_lm_hybrid_free(&r->h);
    rec_oracle_free(&r->o);
}

/* Rollback primitives misused from outside: a truncate below the snapshot
 * (further back than the caller's contract) still lands right, by re-decoding. */
static void test_deep_truncate(void **state) {
    (void)state;
    for (int d = 0; d < SD_ROLLBACK_WINDOW; d++) { /* (window's state sits at its anchor, not at len) */
        rig r;
        rig_open(&r, d, 11, 4, true, 7, 0);
        sd_err err = {0};
        float logits[50];
        for (int i = 0; i < 40; i += 5)
            assert_int_equal(r.lm.forward_tail(r.lm.self, SD_LM_PREFILL, r.toks + i, 5, 1, logits, &err), SD_OK);
        for (int32_t n = 39; n >= 1; n -= 6) {
            assert_int_equal(r.lm.truncate(r.lm.self, n, &err), SD_OK);
            rig_expect_state(&r, n);
        }
        assert_true(r.h.st.fallbacks > 0);
        rig_close(&r);
    }
}

/* A draft model's lm (commit_on_forward false) under a forward longer than
 * its ring, then a truncate to that forward's start (drafter_model.c's gate
 * probe feeds a gap of uncommitted tokens and drops it at the next probe):
 * restored from the snapshot at the start, never re-decoded from position 0. */
static void test_long_forward_dropped(void **state) {
    (void)state;
    for (int d = 0; d < SD_ROLLBACK_WINDOW; d++) {
        rig r;
        rig_open(&r, d, 12, 4, false, 7, 3);
        sd_err err = {0};
        float logits[50];
        assert_int_equal(r.lm.forward_tail(r.lm.self, SD_LM_PREFILL, r.toks, 20, 1, logits, &err), SD_OK); /* a catch-up */
        for (int round = 0; round < 3; round++) {
            assert_int_equal(r.lm.truncate(r.lm.self, 20, &err), SD_OK);
            assert_int_equal(r.lm.forward_tail(r.lm.self, SD_LM_PREFILL, r.toks + 20 + round, 10, 1, logits, &err), SD_OK); /* the gap */
        }
        assert_int_equal(r.lm.truncate(r.lm.self, 20, &err), SD_OK);
        rig_expect_state(&r, 20);
        assert_int_equal(r.h.st.redecoded, 0);
        rig_close(&r);
    }
}

/* sd_lm warm (the decode loop calls it after prefill, a draft model's lm at
 * its prefill) faults the snapshot and the capture ring in; called while a
 * snapshot is held and captures are in the ring, it must leave both intact:
 * every rollback after it lands on the state plain steps give, by its own
 * discipline (no fallback, no re-decode). */
static void test_warm_keeps_snapshot(void **state) {
    (void)state;
    for (int d = 0; d < SD_ROLLBACK_WINDOW; d++) {
        rig r;
        rig_open(&r, d, 13, 8, true, 11, 5);
        assert_non_null(r.lm.warm);
        sd_err err = {0};
        float logits[6 * 50];
        assert_int_equal(r.lm.forward_tail(r.lm.self, SD_LM_PREFILL, r.toks, 10, 1, logits, &err), SD_OK); /* prefill */
        for (int32_t n = 10, j = 0; n + 6 <= 40; j = (j + 1) % 5) {
            assert_int_equal(r.lm.forward(r.lm.self, SD_LM_VERIFY, r.toks + n, 6, logits, &err), SD_OK); /* a verify of 6 rows */
            r.lm.warm(r.lm.self); /* the first call (the one that writes) with a snapshot and captures held */
            n += 1 + j;           /* a0 and j drafts kept */
            assert_int_equal(r.lm.truncate(r.lm.self, n, &err), SD_OK);
            rig_expect_state(&r, n);
        }
        assert_int_equal(r.h.st.fallbacks, 0);
        rig_close(&r);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_deep_truncate), cmocka_unit_test(test_checkpoint), cmocka_unit_test(test_replay),
        cmocka_unit_test(test_redecode), cmocka_unit_test(test_window), cmocka_unit_test(test_mutants_fail),
        cmocka_unit_test(test_long_forward_dropped), cmocka_unit_test(test_warm_keeps_snapshot),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
