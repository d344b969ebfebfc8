/* specdec bench, the draft A/B table (ARCHITECTURE.md §8 "draft A/B (size, quant)";
 * e.g. the qwen35 draft at Q8_0 against the same draft at Q4_K). One
 * target, two draft models with its vocabulary: A (-md) and B (--draft-b).
 * By ARCHITECTURE.md §2 a draft model's speedup is E(α,K) / (K·r + c_v(K+1)): the
 * choice between two drafts comes down to their cost r = t_draft / t_target
 * (one S = 1 step each) and the acceptance α each reaches. The table takes
 * the two apart:
 *   - step ms and r: S = 1 forwards of the target, A and B on KV caches
 *     warmed with the first prompt (bench_forward_ms), in rounds whose order
 *     rotates; r = the median over rounds of the draft's step over the same
 *     round's target step (the oracle table's r, paired);
 *   - the costed oracle (sd_drafter_oracle_costed_init) at each --alphas
 *     value: the oracle's tokens at synthetic α, paying the real draft's
 *     time: at the same α only r differs between A and B;
 *   - the draft itself: its own α (≈ 0 on random weights) and speedup.
 * Every run drafts a fixed K (bench_oracle_k) with the gate off, so a round
 * costs K draft steps and one (K+1)-token verify. Greedy and every cell of A
 * and B run once per rep, in an order rotated rep by rep (and A before B on
 * even reps, B before A on odd ones), so the machine's drift between runs
 * (~10% here) hits all of them alike: speedup = the median over reps of tok/s
 * over the same rep's greedy, B/A = the median over reps of B's tok/s over
 * A's in the same cell. Two bench processes, one per draft, cannot pair them. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "command/bench.h"
#include "oracle/oracle_drafter.h"

#define AB_MAX_REPS 64

/* Per rep figures of one cell (one draft at one α, or the draft itself). */
typedef struct ab_cell_acc {
    double tok_s[AB_MAX_REPS], ratio[AB_MAX_REPS]; /* tok/s, and over the same rep's greedy */
    int ok;
    int64_t drafted, accepted, rounds;
} ab_cell_acc;

typedef struct ab_acc {
    ab_cell_acc cell[BENCH_N_AB][BENCH_MAX_ALPHAS + 1];
    double g_tok[AB_MAX_REPS];
    double b_over_a[BENCH_MAX_ALPHAS + 1][AB_MAX_REPS];
} ab_acc;

/* The context of the target (0), draft A (1), draft B (2). */
static sd_context *step_ctx(bench_env *e, int i) { return i == 0 ? e->tc : i == 1 ? e->dc : e->bc; }

/* Step ms of the target, A and B (each a median of 5 timed S = 1 forwards)
 * in rounds whose order rotates; r of each draft paired within a round. */
static sd_status ab_steps(bench_env *e, bench_results *r, sd_err *err) {
    const int rounds = e->o->reps < 5 ? 5 : e->o->reps > AB_MAX_REPS ? AB_MAX_REPS : e->o->reps;
    double ms[3][AB_MAX_REPS], ratio[BENCH_N_AB][AB_MAX_REPS];
    sd_status st = SD_OK;
    for (int i = 0; !st && i < 3; i++) st = bench_warm(e, step_ctx(e, i), err);
    for (int k = 0; !st && k < rounds; k++) {
        bench_progress("ab: step times round %d/%d", k + 1, rounds);
        for (int t = 0, i = k % 3; !st && t < 3; t++, i = (i + 1) % 3)
            st = bench_forward_ms(e, step_ctx(e, i), 1, 5, &ms[i][k], err);
        for (int d = 0; d < BENCH_N_AB; d++) ratio[d][k] = ms[d + 1][k] / ms[0][k];
    }
    if (st) return st;
    r->ab_target_ms = bench_median(ms[0], rounds);
    for (int d = 0; d < BENCH_N_AB; d++) {
        r->ab[d].step_ms = bench_median(ms[d + 1], rounds);
        r->ab[d].r = bench_median(ratio[d], rounds);
    }
    return SD_OK;
}

/* Cell c of draft d (0 = A, 1 = B) into dr: c < n_alphas the oracle at
 * alphas[c] paying the draft's time, c = n_alphas the draft itself. */
static sd_status ab_drafter(bench_env *e, int d, int c, const int32_t *ref, int32_t n_ref, uint64_t seed,
                            sd_drafter *dr, sd_err *err) {
    if (c == e->o->n_alphas) return bench_draft_model_make(e, d == 1, dr, err);
    sd_drafter cost;
    sd_status st = bench_draft_model_make(e, d == 1, &cost, err);
    if (!st)
        st = sd_drafter_oracle_costed_init(dr, ref, n_ref, e->prompts[0].n_ids, e->o->alphas[c], e->tm->hp.n_vocab,
                                           seed, &cost, err);
    sd_drafter_free(&cost); /* emptied when taken over */
    return st;
}

static void ab_progress(const bench_env *e, int d, int c, int rep, int reps) {
    if (d < 0) bench_progress("ab: greedy rep %d/%d", rep + 1, reps);
    else if (c == e->o->n_alphas) bench_progress("ab: %c draft rep %d/%d", "AB"[d], rep + 1, reps);
    else bench_progress("ab: %c oracle α=%.2f rep %d/%d", "AB"[d], e->o->alphas[c], rep + 1, reps);
}

/* One rep: greedy (run 0) and run j = 1 + 2c + (d xor rep parity) for cell c
 * of draft d, once each, starting at run (−rep mod N): rep 0 runs greedy
 * first, whose tokens are the reference every other run is checked against. */
static sd_status ab_rep(bench_env *e, int rep, int reps, const sd_spec_params *sp, int32_t **ref, int32_t *n_ref,
                        ab_acc *a, sd_err *err) {
    const bench_prompt *p = &e->prompts[0];
    const int n_cells = e->o->n_alphas + 1, N = 1 + BENCH_N_AB * n_cells;
    sd_status st = SD_OK;
    for (int t = 0; !st && t < N; t++) {
        const int j = (t + N - rep % N) % N;
        bench_run run;
        if (j == 0) {
            ab_progress(e, -1, 0, rep, reps);
            st = bench_greedy(e, p, sp, ref, n_ref, &run, err);
            a->g_tok[rep] = run.tok_s;
            continue;
        }
        const int c = (j - 1) / 2, d = ((j - 1) % 2) ^ (rep & 1);
        ab_progress(e, d, c, rep, reps);
        sd_drafter dr = {0};
        st = ab_drafter(e, d, c, *ref, *n_ref, e->o->seed + (uint64_t)rep, &dr, err);
        if (!st) st = bench_generate(e, p, &dr, sp, *ref, *n_ref, &run, err);
        sd_drafter_free(&dr);
        if (st) break;
        ab_cell_acc *x = &a->cell[d][c];
        x->tok_s[rep] = run.tok_s;
        x->ok += run.same_as_ref;
        x->drafted += run.st.drafted, x->accepted += run.st.accepted, x->rounds += run.st.rounds;
    }
    for (int c = 0; !st && c < n_cells; c++) {
        for (int d = 0; d < BENCH_N_AB; d++) a->cell[d][c].ratio[rep] = a->cell[d][c].tok_s[rep] / a->g_tok[rep];
        a->b_over_a[c][rep] = a->cell[1][c].tok_s[rep] / a->cell[0][c].tok_s[rep];
    }
    return st;
}

static void ab_fill_cell(ab_cell_acc *x, int reps, bench_ab_cell *out) {
    *out = (bench_ab_cell){
        .tok_s = bench_median(x->tok_s, reps), .speedup = bench_median(x->ratio, reps),
        .alpha = x->drafted > 0 ? (double)x->accepted / (double)x->drafted : NAN,
        .acc_per_round = x->rounds > 0 ? (double)x->accepted / (double)x->rounds : NAN,
        .lossless_ok = x->ok, .lossless_n = reps};
}

static void ab_fill(const bench_env *e, ab_acc *a, int reps, bench_results *r) {
    r->ab_greedy_tok_s = bench_median(a->g_tok, reps);
    for (int d = 0; d < BENCH_N_AB; d++) {
        bench_ab_row *row = &r->ab[d];
        row->file = d ? e->o->draft_b : e->dm_path;
        row->weight_mb = (double)sd_model_weight_bytes(d ? e->bm : e->dm) / 1e6;
        for (int c = 0; c <= e->o->n_alphas; c++) ab_fill_cell(&a->cell[d][c], reps, &row->cell[c]);
    }
    for (int c = 0; c <= e->o->n_alphas; c++) r->ab_b_over_a[c] = bench_median(a->b_over_a[c], reps);
    r->ab_present = true;
}

sd_status bench_ab(bench_env *e, bench_results *r, sd_err *err) {
    if (!e->dm || !e->bm)
        return sd_err_set(err, SD_ERR_ARG, "the ab table needs a draft model A (-md) and B (--draft-b)");
    const int reps = e->o->reps > AB_MAX_REPS ? AB_MAX_REPS : e->o->reps;
    const sd_spec_params sp = bench_params(e->o, bench_oracle_k(e->o), false, false);
    ab_acc *a = calloc(1, sizeof *a);
    if (!a) return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    int32_t *ref = NULL, n_ref = 0;
    sd_status st = ab_steps(e, r, err);
    for (int rep = 0; !st && rep < reps; rep++) st = ab_rep(e, rep, reps, &sp, &ref, &n_ref, a, err);
    if (!st) ab_fill(e, a, reps, r);
    free(ref);
    free(a);
    return st;
}
