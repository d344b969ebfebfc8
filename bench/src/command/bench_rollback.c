/* specdec bench, the rollback tables (ARCHITECTURE.md §4): on a hybrid
 * target, each rollback discipline (checkpoint, replay, redecode, window
 * with S = K + 1) runs the
 * oracle drafter at every synthetic α, alternated rep by rep with a plain
 * greedy run, and reports its speedup over that greedy, target forwards per
 * verify round (a redecode's second forward counts, and window's re-anchors
 * and the plain steps it forces), the time and the recurrent-state bytes its
 * rollbacks cost per round, and the bytes it holds. The window table sweeps
 * window's S and K the same way at one α (the source's S/K sweep).
 *
 * The machine's speed drifts by ~10% between runs here, so each block of
 * runs (one discipline, or one window S) gets its own greedy run right
 * before it, the blocks' order rotates rep by rep, and a speedup is the
 * median over reps of tok/s over the block's greedy. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command/bench.h"
#include "core/checked.h"
#include "oracle/oracle_drafter.h"

typedef struct rb_acc {
    double tok_s[64], ratio[64]; /* per rep: tok/s, and over the greedy run of its block */
    int n, ok;
    int64_t rounds, accepted, redecodes, anchor_steps;
    double rb_s;
    uint64_t moved;
} rb_acc;

/* Switches the target's (and a hybrid draft's) discipline; window's S =
 * window, else a ring for the largest K. */
static sd_status use_discipline(bench_env *e, sd_rollback d, int32_t window, sd_err *err) {
    const int32_t n = d == SD_ROLLBACK_WINDOW ? window : BENCH_MAX_K + 1;
    sd_status st = sd_compose_lm_rollback(&e->tl, d, n, err);
    return st ? st : sd_compose_lm_rollback(&e->dl, d, n, err);
}

/* Plain greedy, the baseline of every row: under replay, whose plain steps
 * cost nothing extra (a window discipline left from the previous rep would
 * pad every step to S tokens). */
static sd_status greedy_once(bench_env *e, int32_t **ref, int32_t *n_ref, double *tok_s, sd_err *err) {
    sd_spec_params sp = bench_params(e->o, e->o->k, false, false);
    bench_run run;
    sd_status st = use_discipline(e, SD_ROLLBACK_REPLAY, 0, err);
    if (!st) st = bench_greedy(e, &e->prompts[0], &sp, ref, n_ref, &run, err);
    if (!st) *tok_s = run.tok_s;
    return st;
}

/* One oracle run at alpha with fixed K = k and the current discipline, into
 * a; greedy: the tok/s of its block's greedy run. */
static sd_status oracle_once(bench_env *e, const int32_t *ref, int32_t n_ref, int k, double alpha, uint64_t seed,
                             double greedy, rb_acc *a, sd_err *err) {
    sd_spec_params sp = bench_params(e->o, k, false, false);
    sd_drafter dr;
    sd_status st = sd_drafter_oracle_init(&dr, ref, n_ref, e->prompts[0].n_ids, alpha, e->tm->hp.n_vocab, seed, err);
    if (st) return st;
    e->tl.hybrid->st = (sd_hybrid_stats){0};
    bench_run run;
    st = bench_generate(e, &e->prompts[0], &dr, &sp, ref, n_ref, &run, err);
    sd_drafter_free(&dr);
    if (st) return st;
    if (a->n < 64) a->tok_s[a->n] = run.tok_s, a->ratio[a->n] = run.tok_s / greedy;
    a->n++;
    a->ok += run.same_as_ref;
    a->rounds += run.st.rounds;
    a->accepted += run.st.accepted;
    a->redecodes += e->tl.hybrid->st.redecodes;
    a->anchor_steps += e->tl.hybrid->st.anchor_steps;
    a->rb_s += e->tl.hybrid->st.rollback_s;
    a->moved += e->tl.hybrid->st.bytes_moved;
    return SD_OK;
}

static void fill_row(bench_env *e, sd_rollback d, double alpha, rb_acc *a, bench_rb_row *row) {
    const double rounds = a->rounds > 0 ? (double)a->rounds : NAN;
    *row = (bench_rb_row){
        .disc = sd_rollback_name(d),
        .alpha = alpha,
        .tok_s = bench_median(a->tok_s, a->n < 64 ? a->n : 64),
        .acc_per_round = (double)a->accepted / rounds,
        .fwd_per_round = ((double)a->rounds + (double)a->redecodes + (double)a->anchor_steps) / rounds,
        .rb_ms_per_round = a->rb_s * 1e3 / rounds,
        .mb_moved_per_round = (double)a->moved / 1e6 / rounds,
        .mb_held = ((double)sd_context_state_bytes(e->tc) +
                    (double)(BENCH_MAX_K + 1) * (double)sd_model_capture_bytes(e->tm, sd_rollback_capture_kind(d))) / 1e6,
        .lossless_ok = a->ok,
        .lossless_n = a->n,
    };
    row->speedup = bench_median(a->ratio, a->n < 64 ? a->n : 64);
}

sd_status bench_rollback(bench_env *e, bench_results *r, sd_err *err) {
    if (!e->tl.hybrid) return SD_OK;
    const bench_opts *o = e->o;
    const int reps = o->reps > 64 ? 64 : o->reps;
    int32_t *ref = NULL, n_ref = 0;
    double g_tok[64 * SD_ROLLBACK_N];
    int n_g = 0;
    rb_acc acc[SD_ROLLBACK_N][BENCH_MAX_ALPHAS];
    memset(acc, 0, sizeof acc);
    sd_status st = SD_OK;
    for (int rep = 0; !st && rep < reps; rep++) {
        for (int t = 0; !st && t < SD_ROLLBACK_N; t++) {
            const int d = (t + rep) % SD_ROLLBACK_N; /* the blocks' order rotates */
            double g = 0;
            bench_progress("rollback: greedy before %s, rep %d/%d", sd_rollback_name((sd_rollback)d), rep + 1, reps);
            st = greedy_once(e, &ref, &n_ref, &g, err);
            if (!st) g_tok[n_g++] = g;
            if (!st) st = use_discipline(e, (sd_rollback)d, bench_oracle_k(o) + 1, err); /* window: S = K + 1 */
            for (int a = 0; !st && a < o->n_alphas; a++) {
                bench_progress("rollback: %s α=%.2f rep %d/%d", sd_rollback_name((sd_rollback)d), o->alphas[a],
                               rep + 1, reps);
                st = oracle_once(e, ref, n_ref, bench_oracle_k(o), o->alphas[a], o->seed + (uint64_t)rep, g,
                                 &acc[d][a], err);
            }
        }
    }
    if (!st) st = use_discipline(e, SD_ROLLBACK_REPLAY, 0, err);
    free(ref);
    if (st) return st;
    r->rb_greedy_tok_s = bench_median(g_tok, n_g);
    for (int d = 0; d < SD_ROLLBACK_N; d++)
        for (int a = 0; a < o->n_alphas; a++)
            fill_row(e, (sd_rollback)d, o->alphas[a], &acc[d][a], &r->rb[r->n_rb++]);
    return SD_OK;
}

sd_status bench_window(bench_env *e, bench_results *r, sd_err *err) {
    if (!e->tl.hybrid) return SD_OK;
    const bench_opts *o = e->o;
    const int reps = o->reps > 64 ? 64 : o->reps;
    int32_t *ref = NULL, n_ref = 0;
    double g_tok[64 * BENCH_MAX_WINDOWS];
    int n_g = 0;
    rb_acc acc[BENCH_MAX_WINDOWS][BENCH_MAX_KS];
    memset(acc, 0, sizeof acc);
    sd_status st = SD_OK;
    for (int rep = 0; !st && rep < reps; rep++) {
        for (int t = 0; !st && t < o->n_windows; t++) {
            const int w = (t + rep) % o->n_windows; /* the blocks' order rotates */
            double g = 0;
            bench_progress("window: greedy before S=%d, rep %d/%d", o->windows[w], rep + 1, reps);
            st = greedy_once(e, &ref, &n_ref, &g, err);
            if (!st) g_tok[n_g++] = g;
            if (!st) st = use_discipline(e, SD_ROLLBACK_WINDOW, o->windows[w], err);
            for (int k = 0; !st && k < o->n_ks; k++) {
                if (o->ks[k] >= o->windows[w]) continue;
                bench_progress("window: S=%d K=%d rep %d/%d", o->windows[w], o->ks[k], rep + 1, reps);
                st = oracle_once(e, ref, n_ref, o->ks[k], o->window_alpha, o->seed + (uint64_t)rep, g, &acc[w][k],
                                 err);
            }
        }
    }
    if (!st) st = use_discipline(e, SD_ROLLBACK_REPLAY, 0, err);
    free(ref);
    if (st) return st;
    r->win_greedy_tok_s = bench_median(g_tok, n_g);
    for (int w = 0; w < o->n_windows; w++)
        for (int k = 0; k < o->n_ks; k++) {
            if (o->ks[k] >= o->windows[w]) continue;
            bench_rb_row rb;
            fill_row(e, SD_ROLLBACK_WINDOW, o->window_alpha, &acc[w][k], &rb);
            r->win[r->n_win++] = (bench_win_row){
                .S = o->windows[w], .k = o->ks[k], .ms_per_tok = 1e3 / rb.tok_s, .tok_s = rb.tok_s,
                .speedup = rb.speedup, .acc_per_round = rb.acc_per_round, .fwd_per_round = rb.fwd_per_round,
                .rb_ms_per_round = rb.rb_ms_per_round, .lossless_ok = rb.lossless_ok, .lossless_n = rb.lossless_n};
        }
    return SD_OK;
}
