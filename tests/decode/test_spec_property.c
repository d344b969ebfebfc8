/* decode/spec: the fused verify round (ARCHITECTURE.md §1) is lossless. 3000 random
 * cases through the real sd_spec_generate, with model-free oracles as the
 * target (hash and Markov models behind sd_lm) and every kind of drafter:
 * n-gram (real), draft model (real, over a second oracle), auto (real),
 * perfect, always-wrong and random. Each output must equal plain greedy
 * computed independently, token for token; the count is printed. Half the
 * cases ask for token trees (decode/tree.h) on an oracle that offers them
 * half the time: tree rounds must be as lossless as chains. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/spec.h"
#include "oracle_lm.h"
#include "toy_drafter.h"

static int32_t ref_argmax(const float *x, int32_t n) {
    int32_t b = 0;
    for (int32_t i = 1; i < n; i++)
        if (x[i] > x[b]) b = i;
    return b;
}

/* The oracle's greedy next token after t[0..len). */
static int32_t oracle_next(const oracle *o, const int32_t *t, int32_t len) {
    float *row = malloc((size_t)o->V * sizeof *row);
    oracle_row(o, t, len, row);
    int32_t b = ref_argmax(row, o->V);
    free(row);
    return b;
}

/* The same, as toy_drafter.h reaches an oracle. */
static int32_t toy_next(const void *o, const int32_t *t, int32_t len) { return oracle_next(o, t, len); }

/* ---- one random case ---- */
typedef struct rnd {
    sd_rng r;
} rnd;
static int32_t pick(rnd *r, int32_t lo, int32_t hi) { /* inclusive */
    return lo + (int32_t)(sd_rng_next(&r->r) % (uint64_t)(hi - lo + 1));
}

static int32_t g_eog = -1;
static bool is_eog(void *user, int32_t tok) {
    (void)user;
    return tok == g_eog;
}

/* Plain greedy, independently of the decode loop: at most n_predict tokens,
 * at most n_ctx - n_prompt + 1 (the last token needs no forward), EOG stops. */
static int32_t reference(const oracle *o, const int32_t *prompt, int32_t n_prompt, int32_t n_predict,
                         int32_t *out) {
    int32_t *t = malloc((size_t)(n_prompt + n_predict + 1) * sizeof *t);
    memcpy(t, prompt, (size_t)n_prompt * sizeof *t);
    int32_t n = n_prompt, n_out = 0, cap = o->n_ctx - n_prompt + 1;
    while (n_out < n_predict && n_out < cap) {
        int32_t next = oracle_next(o, t, n);
        t[n++] = next;
        out[n_out++] = next;
        if (next == g_eog) break;
    }
    free(t);
    return n_out;
}

typedef struct tally {
    int cases, lossless, per_kind[D_KINDS], rounds_with_rejects, ctx_limited, drafted, accepted;
    int tree_cases, tree_lossless, tree_rounds, tree_moves;
} tally;

static void run_case(uint64_t seed, tally *tl) {
    rnd R;
    sd_rng_seed(&R.r, seed);
    static const int KS[] = {1, 2, 3, 4, 8};
    oracle_kind kind = pick(&R, 0, 1) ? ORACLE_MARKOV : ORACLE_HASH;
    int32_t V = pick(&R, 2, 5) == 2 ? pick(&R, 2, 8) : pick(&R, 9, 160);
    int32_t n_prompt = pick(&R, 0, 3) ? pick(&R, 1, 3) : pick(&R, 4, 40);
    int32_t n_predict = pick(&R, 0, 60);
    int32_t n_ctx = pick(&R, 0, 2) ? n_prompt + pick(&R, 0, 12) : n_prompt + n_predict + pick(&R, 0, 10);
    oracle target;
    oracle_init(&target, kind, V, pick(&R, 1, 3), n_ctx, seed * 3 + 1, pick(&R, 2, 6));
    int32_t *prompt = malloc((size_t)n_prompt * sizeof *prompt);
    for (int32_t i = 0; i < n_prompt; i++)
        prompt[i] = i == 0 || pick(&R, 0, 3) ? pick(&R, 0, V - 1) : prompt[pick(&R, 0, i - 1)];
    g_eog = pick(&R, 0, 3) == 0 ? pick(&R, 0, V - 1) : -1;

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

    /* The draft model: another oracle, the same one (perfect) or a different
     * seed (partial agreement), with its own n_ctx, sometimes shorter. */
    oracle draft_o;
    bool same = pick(&R, 0, 1);
    oracle_init(&draft_o, kind, V, target.w, pick(&R, 0, 3) ? n_ctx + 8 : pick(&R, 1, n_ctx + 1),
                same ? seed * 3 + 1 : seed * 7 + 5, pick(&R, 2, 6));
    sd_lm draft_lm = oracle_lm(&draft_o);
    sd_drafter dr = {0}, ng = {0}, dm = {0};
    sd_err err = {0};
    if (dk == D_NGRAM || dk == D_AUTO) assert_int_equal(sd_drafter_ngram_init(&ng, nmin, nmax, &err), SD_OK);
    if (dk == D_DRAFT || dk == D_AUTO)
        assert_int_equal(sd_drafter_model_init(&dm, &draft_lm, NULL, pick(&R, 1, 8), &err), SD_OK);
    if (dk == D_NGRAM) dr = ng, ng = (sd_drafter){0};
    else if (dk == D_DRAFT) dr = dm, dm = (sd_drafter){0};
    else if (dk == D_AUTO) assert_int_equal(sd_drafter_auto_init(&dr, &ng, &dm, V, &err), SD_OK);
    else dr = toy_drafter(&target, toy_next, target.V, dk, seed, n_prompt + n_predict + 16);

    int32_t *want = malloc((size_t)(n_predict + 1) * sizeof *want);
    int32_t *got = malloc((size_t)(n_predict + 1) * sizeof *got);
    int32_t *plain = malloc((size_t)(n_predict + 1) * sizeof *plain);
    int32_t n_want = reference(&target, prompt, n_prompt, n_predict, want), n_got = -1, n_plain = -1;
    target.two_pass = pick(&R, 0, 1); /* half the cases verify with the two-pass head */
    target.tree = pick(&R, 0, 1);     /* half offer token trees, */
    if (pick(&R, 0, 1)) {             /* and half of all ask for them */
        p.tree_nodes = p.draft_max + pick(&R, 0, 8);
        p.tree_width = pick(&R, 1, 4);
    }
    sd_lm lm = oracle_lm(&target);
    sd_spec_stats st;
    sd_status rc = sd_spec_generate(&lm, &dr, prompt, n_prompt, &p, NULL, NULL, got, &n_got, &st, &err);
    if (rc != SD_OK) fprintf(stderr, "case %llu: %s\n", (unsigned long long)seed, err.msg);
    assert_int_equal(rc, SD_OK);
    int misuse = target.misuse + draft_o.misuse;
    target.len = 0;
    assert_int_equal(sd_spec_generate(&lm, NULL, prompt, n_prompt, &p, NULL, NULL, plain, &n_plain, NULL, &err), SD_OK);

    bool ok = misuse == 0 && target.misuse == 0 && n_got == n_want && n_plain == n_want &&
              !memcmp(got, want, (size_t)n_want * sizeof *got) &&
              !memcmp(plain, want, (size_t)n_want * sizeof *got) && st.accepted <= st.drafted &&
              st.n_gen == n_got;
    if (!ok)
        fprintf(stderr, "case %llu FAILED: %s V=%d prompt=%d n_predict=%d n_ctx=%d K=%d drafter=%s"
                        " want %d got %d plain %d misuse %d\n",
                (unsigned long long)seed, kind == ORACLE_HASH ? "hash" : "markov", V, n_prompt,
                n_predict, n_ctx, p.draft_max, KIND_NAME[dk], n_want, n_got, n_plain, misuse);
    tl->cases++;
    tl->lossless += ok;
    tl->per_kind[dk] += ok;
    tl->rounds_with_rejects += st.drafted > st.accepted;
    tl->ctx_limited += n_want < n_predict && n_want == n_ctx - n_prompt + 1;
    tl->tree_cases += st.tree_rounds > 0;
    tl->tree_lossless += st.tree_rounds > 0 && ok;
    tl->tree_rounds += (int)st.tree_rounds;
    tl->tree_moves += (int)target.tree_moves;
    tl->drafted += (int)st.drafted;
    tl->accepted += (int)st.accepted;
    sd_drafter_free(&dr);
    sd_drafter_free(&ng);
    sd_drafter_free(&dm);
    oracle_free(&target);
    oracle_free(&draft_o);
    free(prompt);
    free(want);
    free(got);
    free(plain);
}

static void test_lossless_random_cases(void **state) {
    (void)state;
    tally tl = {0};
    int n = 3000;
    for (int i = 0; i < n; i++) run_case(0x5eed0000ull + (uint64_t)i, &tl);
    printf("spec vs greedy: LOSSLESS %d/%d (", tl.lossless, tl.cases);
    for (int k = 0; k < D_KINDS; k++) printf("%s%s %d", k ? ", " : "", KIND_NAME[k], tl.per_kind[k]);
    printf("); %d cases with rejected drafts, %d stopped by a full context; α overall %d/%d\n",
           tl.rounds_with_rejects, tl.ctx_limited, tl.accepted, tl.drafted);
    printf("token trees: LOSSLESS %d/%d cases with tree rounds (%d rounds, %d rows moved by keep_path)\n",
           tl.tree_lossless, tl.tree_cases, tl.tree_rounds, tl.tree_moves);
    assert_int_equal(tl.lossless, n);
    assert_true(tl.tree_cases > n / 10 && tl.tree_moves > 0); /* siblings were accepted too */
    /* The cases must exercise what they claim to: rejections and full contexts. */
    assert_true(tl.rounds_with_rejects > n / 10);
    assert_true(tl.ctx_limited > n / 20);
    assert_true(tl.accepted > 0 && tl.accepted < tl.drafted);
}

/* The n-gram drafter proposes the most recent earlier continuation, highest order first. */
static void test_ngram_lookup(void **state) {
    (void)state;
    sd_drafter d;
    sd_err err;
    assert_int_equal(sd_drafter_ngram_init(&d, 1, 3, &err), SD_OK);
    int32_t out[8];
    /* ... 1 2 3 7 ... 5 2 3 9 ... 2 3 : order 2 "2 3" most recent is followed by 9;
     * order 3 "x 2 3" with x=4 is followed by 8. */
    const int32_t ctx1[] = {1, 2, 3, 7, 4, 2, 3, 8, 5, 2, 3, 9, 6, 2, 3};
    int got = d.propose(d.self, ctx1, 15, 4, out, NULL, &err);
    assert_int_equal(got, 4);
    assert_int_equal(out[0], 9);
    assert_int_equal(out[1], 6);
    const int32_t ctx2[] = {1, 2, 3, 7, 4, 2, 3, 8, 5, 2, 3, 9, 4, 2, 3};
    d.reset(d.self);
    got = d.propose(d.self, ctx2, 15, 2, out, NULL, &err);
    assert_int_equal(got, 2);
    assert_int_equal(out[0], 8); /* "4 2 3" -> 8 beats the more recent "2 3" -> 9 */
    assert_int_equal(out[1], 5);
    /* No earlier occurrence at all: nothing. */
    const int32_t ctx3[] = {1, 2, 3, 4};
    d.reset(d.self);
    assert_int_equal(d.propose(d.self, ctx3, 4, 3, out, NULL, &err), 0);
    /* Past the end of the context the continuation repeats the period. */
    const int32_t ctx4[] = {5, 6, 7, 5};
    d.reset(d.self);
    assert_int_equal(d.propose(d.self, ctx4, 4, 8, out, NULL, &err), 8);
    const int32_t want4[8] = {6, 7, 5, 6, 7, 5, 6, 7};
    assert_memory_equal(out, want4, sizeof want4);
    /* Growing the context incrementally gives the same answers as building it at once. */
    d.reset(d.self);
    for (int32_t n = 1; n <= 15; n++) d.propose(d.self, ctx1, n, 1, out, NULL, &err);
    assert_int_equal(d.propose(d.self, ctx1, 15, 1, out, NULL, &err), 1);
    assert_int_equal(out[0], 9);
    sd_drafter_free(&d);
    assert_int_equal(sd_drafter_ngram_init(&d, 0, 3, &err), SD_ERR_ARG);
    assert_int_equal(sd_drafter_ngram_init(&d, 3, 2, &err), SD_ERR_ARG);
}

/* A prompt longer than the context is refused before any forward. */
/* auto picks by what is accepted: with an always-wrong free source and a
 * perfect draft it drafts with the draft after the first rounds (the
 * lookup used to win whenever it had a proposal: α 0); with a perfect free
 * source and an always-wrong draft it keeps the free source. Lossless both
 * ways. */
static void test_auto_prefers_accepted(void **state) {
    (void)state;
    enum { V = 64, N_CTX = 256, N_GEN = 96 };
    const int32_t prompt[] = {5, 9, 2, 33, 7, 1, 60, 12};
    const int32_t n_prompt = (int32_t)(sizeof prompt / sizeof *prompt);
    for (int perfect_free = 0; perfect_free <= 1; perfect_free++) {
        oracle target;
        oracle_init(&target, ORACLE_MARKOV, V, 1, N_CTX, 77, 4);
        sd_drafter fr = toy_drafter(&target, toy_next, V, perfect_free ? D_PERFECT : D_WRONG, 1, N_CTX + 16);
        sd_drafter dm = toy_drafter(&target, toy_next, V, perfect_free ? D_WRONG : D_PERFECT, 2, N_CTX + 16);
        sd_drafter dr = {0};
        sd_err err = {0};
        assert_int_equal(sd_drafter_auto_init(&dr, &fr, &dm, V, &err), SD_OK);
        sd_spec_params p = sd_spec_default_params();
        p.n_predict = N_GEN;
        p.draft_max = 4;
        p.adaptive_k = false;
        p.gate_misses = 0;
        p.stop_at_eog = false;
        int32_t want[N_GEN + 1], got[N_GEN + 1], n_got = 0;
        const int32_t n_want = reference(&target, prompt, n_prompt, N_GEN, want);
        sd_lm lm = oracle_lm(&target);
        sd_spec_stats st;
        assert_int_equal(sd_spec_generate(&lm, &dr, prompt, n_prompt, &p, NULL, NULL, got, &n_got, &st, &err), SD_OK);
        assert_int_equal(n_got, n_want);
        assert_memory_equal(got, want, (size_t)n_got * sizeof *got);
        const double alpha = st.drafted ? (double)st.accepted / (double)st.drafted : 0;
        printf("auto, %s free source, %s draft: α %.3f over %lld drafted\n", perfect_free ? "perfect" : "wrong",
               perfect_free ? "wrong" : "perfect", alpha, (long long)st.drafted);
        assert_true(alpha > 0.85);
        sd_drafter_free(&dr);
        oracle_free(&target);
    }
}

static void test_prompt_too_long(void **state) {
    (void)state;
    oracle o;
    oracle_init(&o, ORACLE_HASH, 10, 1, 4, 1, 2);
    sd_lm lm = oracle_lm(&o);
    int32_t prompt[5] = {1, 2, 3, 4, 5}, out[4], n_out = -1;
    sd_spec_params p = sd_spec_default_params();
    p.n_predict = 4;
    sd_err err = {0};
    assert_int_equal(sd_spec_generate(&lm, NULL, prompt, 5, &p, NULL, NULL, out, &n_out, NULL, &err),
                     SD_ERR_CONTEXT);
    assert_non_null(strstr(err.msg, "context"));
    assert_int_equal(o.forwards, 0);
    assert_int_equal(n_out, 0);
    oracle_free(&o);
}

/* A rollback the lm cannot carry out (its truncate fails) stops the decode
 * loop with that error: no forward after it, fewer tokens than asked, with
 * and without a drafter (every verify round, a plain step's too, ends in a
 * truncate). */
static void test_truncate_failure_stops(void **state) {
    (void)state;
    for (int with_drafter = 0; with_drafter < 2; with_drafter++) {
        oracle o;
        oracle_init(&o, ORACLE_HASH, 16, 1, 64, 5, 2);
        o.fail_truncate_at = 3;
        sd_lm lm = oracle_lm(&o);
        sd_drafter dr = toy_drafter(&o, toy_next, o.V, D_PERFECT, 9, 64);
        int32_t prompt[4] = {1, 2, 3, 4}, out[20], n_out = -1;
        sd_spec_params p = sd_spec_default_params();
        p.n_predict = 20;
        p.stop_at_eog = false;
        sd_err err = {0};
        assert_int_equal(sd_spec_generate(&lm, with_drafter ? &dr : NULL, prompt, 4, &p, NULL, NULL, out, &n_out,
                                          NULL, &err),
                         SD_ERR_UNSUPPORTED);
        assert_non_null(strstr(err.msg, "rollback 3 refused"));
        assert_int_equal(o.truncates, 3);
        assert_int_equal(o.forwards, o.forwards_at_fail);
        assert_true(n_out < p.n_predict);
        sd_drafter_free(&dr);
        oracle_free(&o);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_truncate_failure_stops),
        cmocka_unit_test(test_ngram_lookup),
        cmocka_unit_test(test_prompt_too_long),
        cmocka_unit_test(test_auto_prefers_accepted),
        cmocka_unit_test(test_lossless_random_cases),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
