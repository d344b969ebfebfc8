/* The four measurements of `specdec bench` (ARCHITECTURE.md §8): per prompt class,
 * c_v(S) + roofline, K sweep, synthetic acceptance. See bench.h. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "command/bench.h"
#include "core/checked.h"
#include "core/clock.h"
#include "oracle/oracle_drafter.h"

/* On a terminal, one line rewritten in place; redirected to a log, one line
 * per stage (the words before the first ':' or digit change), not per rep. */
void bench_progress(const char *fmt, ...) {
    static char stage[32];
    char line[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (isatty(STDERR_FILENO)) {
        fprintf(stderr, "\rbench: %-72s", line);
        fflush(stderr);
        return;
    }
    size_t n = strcspn(line, ":0123456789");
    if (n >= sizeof stage) n = sizeof stage - 1;
    if (strlen(stage) == n && !strncmp(stage, line, n)) return;
    memcpy(stage, line, n);
    stage[n] = '\0';
    fprintf(stderr, "bench: %s\n", line);
}

/* Sums over the repetitions of one drafter on one prompt. */
typedef struct mode_acc {
    double tok_s[64];
    int n;
    int64_t drafted, accepted, rounds, fwd, gen;
    int ok;
} mode_acc;

static void acc_add(mode_acc *a, const bench_run *run) {
    if (a->n < 64) a->tok_s[a->n] = run->tok_s;
    a->n++;
    a->drafted += run->st.drafted, a->accepted += run->st.accepted, a->rounds += run->st.rounds;
    a->fwd += run->st.target_forwards, a->gen += run->n > 0 ? run->n - 1 : 0;
    a->ok += run->same_as_ref;
}

static void acc_row(mode_acc *a, double greedy_tok_s, bench_mode_row *row) {
    row->present = true;
    row->tok_s = bench_median(a->tok_s, a->n < 64 ? a->n : 64);
    row->speedup = row->tok_s / greedy_tok_s;
    row->alpha = a->drafted ? (double)a->accepted / (double)a->drafted : 0;
    row->acc_per_round = a->rounds ? (double)a->accepted / (double)a->rounds : 0;
    row->tok_per_fwd = a->fwd ? (double)a->gen / (double)a->fwd : 0;
    row->lossless_ok = a->ok, row->lossless_n = a->n;
}

static bool drafter_available(const bench_env *e, int d) {
    const char *n = BENCH_DRAFTER_NAMES[d];
    if (!e->o->drafters[d]) return false;
    if (!strcmp(n, "draft")) return e->dm != NULL;
    if (!strcmp(n, "auto")) return e->dm || bench_head_name(e);
    if (!strcmp(n, "eagle3")) return e->hm != NULL;
    if (!strcmp(n, "mtp")) return e->tm->nextn.present;
    return true;
}

/* How much of out (n tokens after prompt p) repeats itself: the share of its
 * tokens whose 8-gram ending there occurred anywhere earlier in prompt +
 * output. Random-weight and tiny trained models fall into loops; a speedup
 * from a run that loops says little about real text (ARCHITECTURE.md §10). */
#define LOOP_NGRAM 8
static double loop_share(const bench_prompt *p, const int32_t *out, int32_t n) {
    const int32_t N = p->n_ids + n;
    int32_t *t = malloc((size_t)N * sizeof *t);
    if (!t || n <= 0) return free(t), NAN;
    memcpy(t, p->ids, (size_t)p->n_ids * sizeof *t);
    memcpy(t + p->n_ids, out, (size_t)n * sizeof *t);
    int32_t looped = 0;
    for (int32_t i = p->n_ids; i < N; i++) {
        if (i + 1 < LOOP_NGRAM) continue;
        bool seen = false;
        for (int32_t j = LOOP_NGRAM - 1; j < i && !seen; j++)
            seen = !memcmp(t + j + 1 - LOOP_NGRAM, t + i + 1 - LOOP_NGRAM, LOOP_NGRAM * sizeof *t);
        looped += seen;
    }
    free(t);
    return (double)looped / n;
}

/* Greedy: every rep's plain run is compared with the first one's output (the
 * reference). At --temp > 0 each rep samples with its own seed, so its plain
 * run is the reference of that rep's drafters. */
static sd_status class_prompt(bench_env *e, const bench_prompt *p, bench_prompt_row *row, int idx,
                              sd_err *err) {
    const bench_opts *o = e->o;
    int32_t *ref = NULL, n_ref = 0;
    double g_tok[64], g_pre[64], loop = 0;
    mode_acc acc[BENCH_N_DRAFTERS];
    memset(acc, 0, sizeof acc);
    /* Decode defaults for the drafters (adaptive K up to k, hit-rate gate on):
     * what a user of `specdec generate` gets; --fixed-k / --gate change them. */
    sd_spec_params spec0 = bench_params(o, o->k, !o->fixed_k, true);
    if (o->gate >= 0) spec0.gate_misses = o->gate;
    sd_status st = SD_OK;
    int reps = o->reps > 64 ? 64 : o->reps;
    const char *plain_name = o->temp > 0 ? "sampled" : "greedy";
    for (int r = 0; !st && r < reps; r++) {
        sd_spec_params plain = bench_sampled(o, bench_params(o, o->k, false, false), r);
        sd_spec_params spec = bench_sampled(o, spec0, r);
        if (o->temp > 0) free(ref), ref = NULL, n_ref = 0;
        bench_run run;
        bench_progress("classes %d/%d %s: %s rep %d/%d", idx + 1, e->n_prompts, p->name, plain_name, r + 1, reps);
        st = bench_greedy(e, p, &plain, &ref, &n_ref, &run, err); /* the first plain run's ids: the reference */
        g_tok[r] = run.tok_s, g_pre[r] = run.prefill_tok_s;
        if (!st && (r == 0 || o->temp > 0)) loop += loop_share(p, ref, n_ref);
        for (int d = 0; !st && d < BENCH_N_DRAFTERS; d++) {
            if (!drafter_available(e, d)) continue;
            bench_progress("classes %d/%d %s: %s rep %d/%d", idx + 1, e->n_prompts, p->name, BENCH_DRAFTER_NAMES[d], r + 1, reps);
            sd_drafter dr;
            st = bench_drafter_make(e, BENCH_DRAFTER_NAMES[d], &dr, err);
            if (!st) st = bench_generate(e, p, &dr, &spec, ref, n_ref, &run, err);
            sd_drafter_free(&dr);
            if (!st) acc_add(&acc[d], &run);
        }
    }
    free(ref);
    if (st) return st;
    row->loop_share = loop / (o->temp > 0 ? reps : 1);
    row->p = p;
    row->greedy_tok_s = bench_median(g_tok, reps);
    row->prefill_tok_s = bench_median(g_pre, reps);
    for (int d = 0; d < BENCH_N_DRAFTERS; d++)
        if (drafter_available(e, d)) acc_row(&acc[d], row->greedy_tok_s, &row->mode[d]);
    return SD_OK;
}

sd_status bench_classes(bench_env *e, bench_results *r, sd_err *err) {
    r->rows = sd_calloc((size_t)e->n_prompts, sizeof *r->rows);
    if (!r->rows) return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    for (int i = 0; i < e->n_prompts; i++) {
        sd_status st = class_prompt(e, &e->prompts[i], &r->rows[i], i, err);
        if (st) return st;
        r->n_rows = i + 1;
    }
    return SD_OK;
}

/* Prefill tok/s when the class table did not run: R plain runs of prompt 0. */
static sd_status prefill_only(bench_env *e, double *tok_s, double *decode_tok_s, sd_err *err) {
    sd_spec_params sp = bench_params(e->o, e->o->k, false, false);
    double pre[64], dec[64];
    int reps = e->o->reps > 64 ? 64 : e->o->reps;
    for (int r = 0; r < reps; r++) {
        bench_run run;
        bench_progress("prefill/greedy rep %d/%d", r + 1, reps);
        sd_status st = bench_generate(e, &e->prompts[0], NULL, &sp, NULL, 0, &run, err);
        if (st) return st;
        pre[r] = run.prefill_tok_s, dec[r] = run.tok_s;
    }
    *tok_s = bench_median(pre, reps);
    *decode_tok_s = bench_median(dec, reps);
    return SD_OK;
}

/* Median ms of one head step (what drafting one token costs: EAGLE-3: fc of
 * a feature row, one decoder-layer position, its output head; MTP: eh_proj,
 * the block, the target's lm head) after as many positions as the first
 * prompt, rolled back after each timing. The hidden inputs are zeros: the
 * time does not depend on their values. */
static sd_status head_step_ms(bench_env *e, int reps, double *ms, sd_err *err) {
    const bool e3 = e->hm != NULL;
    sd_model *view = NULL;
    sd_status st = e3 ? SD_OK : sd_mtp_view_init(e->tm, &view, err);
    if (st) return st;
    const sd_model *h = e3 ? e->hm : view;
    const int32_t n = e->prompts[0].n_ids > 1 ? e->prompts[0].n_ids : 1, E = h->hp.n_embd;
    const int32_t F = e3 ? 3 * h->hp.n_embd_tgt : E, V = e3 ? h->hp.n_draft_vocab : h->hp.n_vocab;
    sd_context *hc = NULL;
    st = sd_context_init(h, sd_context_n_ctx(e->tc), 64, e->o->threads, &hc, err);
    float *feat = sd_calloc((size_t)n, (size_t)F * sizeof *feat);
    float *g = sd_calloc((size_t)n, (size_t)E * sizeof *g);
    float *y = sd_calloc((size_t)n, (size_t)E * sizeof *y);
    float *logits = sd_malloc_array((size_t)V, sizeof *logits);
    if (!st && (!feat || !g || !y || !logits)) st = sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    if (!st && e3) sd_eagle3_encode(hc, feat, n, g);
    if (!st) st = e3 ? sd_eagle3_forward(hc, e->tm, e->prompts[0].ids, g, n, y, 0, NULL, err)
                     : sd_mtp_forward(hc, e->prompts[0].ids, g, n, y, 0, NULL, err);
    double t[64];
    for (int i = 0; !st && i < reps && i < 64; i++) {
        double t0 = sd_now_s();
        if (e3) sd_eagle3_encode(hc, feat, 1, g);
        st = e3 ? sd_eagle3_forward(hc, e->tm, e->prompts[0].ids, g, 1, y, 1, logits, err)
                : sd_mtp_forward(hc, e->prompts[0].ids, g, 1, y, 1, logits, err);
        t[i] = (sd_now_s() - t0) * 1e3;
        sd_context_truncate(hc, n);
    }
    if (!st) *ms = bench_median(t, reps < 64 ? reps : 64);
    free(feat), free(g), free(y), free(logits);
    sd_context_free(hc);
    sd_mtp_view_free(view);
    return st;
}

/* The distinct experts of c's last forward, mean over the MoE layers of m; NAN without any. */
static double moe_distinct_mean(const sd_context *c, const sd_model *m) {
    double sum = 0;
    int n = 0;
    for (int32_t il = 0; il < m->hp.n_layer; il++) {
        const int32_t u = sd_context_moe_distinct(c, il);
        if (u >= 0) sum += u, n++;
    }
    return n ? sum / n : NAN;
}

sd_status bench_cv_measure(bench_env *e, bench_results *r, sd_err *err) {
    bench_cv *cv = &r->cv;
    int reps = e->o->reps < 5 ? 5 : e->o->reps;
    bench_progress("c_v(S): warming the KV cache");
    sd_status st = bench_warm(e, e->tc, err);
    for (int S = 1; !st && S <= BENCH_MAX_S; S++) {
        bench_progress("c_v(S): S=%d/%d", S, BENCH_MAX_S);
        st = bench_forward_ms(e, e->tc, S, reps, &cv->ms[S], err);
        cv->u[S] = moe_distinct_mean(e->tc, e->tm);
    }
    if (!st && e->dc) {
        bench_progress("draft model step");
        st = bench_warm(e, e->dc, err);
        if (!st) st = bench_forward_ms(e, e->dc, 1, reps, &cv->draft_ms1, err);
        cv->r = cv->draft_ms1 / cv->ms[1];
    }
    if (!st && bench_head_name(e)) {
        bench_progress("head step");
        st = head_step_ms(e, reps, &cv->head_ms1, err);
        cv->r_head = cv->head_ms1 / cv->ms[1];
    }
    if (st) return st;
    for (int S = 1; S <= BENCH_MAX_S; S++) cv->cv[S] = cv->ms[S] / cv->ms[1];
    double decode_tok_s = NAN;
    if (r->n_rows > 0) {
        double pre[r->n_rows], dec[r->n_rows];
        for (int i = 0; i < r->n_rows; i++) pre[i] = r->rows[i].prefill_tok_s, dec[i] = r->rows[i].greedy_tok_s;
        cv->prefill_tok_s = bench_median(pre, r->n_rows);
        decode_tok_s = bench_median(dec, r->n_rows);
    } else if ((st = prefill_only(e, &cv->prefill_tok_s, &decode_tok_s, err))) {
        return st;
    }
    cv->decode_ms = 1e3 / decode_tok_s;
    bench_progress("memory bandwidth probe");
    if ((st = sd_membw_measure((size_t)e->o->membw_mb << 20, e->o->threads, 5, &cv->bw, err))) return st;
    cv->weight_bytes = sd_model_weight_bytes(e->tm);
    cv->floor_ms = (double)cv->weight_bytes / (cv->bw.read_gbs * 1e9) * 1e3;
    cv->present = true;
    return SD_OK;
}

/* The sweep's drafter: the draft model if given, else the oracle at α = 0.7. */
static sd_status sweep_drafter(bench_env *e, const int32_t *ref, int32_t n_ref, int rep, sd_drafter *d,
                               sd_err *err) {
    if (e->dm) return bench_drafter_make(e, "draft", d, err);
    return sd_drafter_oracle_init(d, ref, n_ref, e->prompts[0].n_ids, 0.7, e->tm->hp.n_vocab,
                                  e->o->seed + (uint64_t)rep, err);
}

sd_status bench_ksweep(bench_env *e, bench_results *r, sd_err *err) {
    const bench_opts *o = e->o;
    const bench_prompt *p = &e->prompts[0];
    int reps = o->reps > 64 ? 64 : o->reps;
    int32_t *ref = NULL, n_ref = 0;
    double g_tok[64];
    mode_acc acc[BENCH_MAX_K + 1];
    memset(acc, 0, sizeof acc);
    sd_spec_params plain = bench_params(o, o->k, false, false);
    sd_status st = SD_OK;
    r->sweep_drafter = e->dm ? "draft" : "oracle(α=0.7)";
    for (int rep = 0; !st && rep < reps; rep++) {
        bench_run run;
        bench_progress("K sweep: greedy rep %d/%d", rep + 1, reps);
        st = bench_greedy(e, p, &plain, &ref, &n_ref, &run, err); /* the first run's ids: the reference */
        g_tok[rep] = run.tok_s;
        for (int k = 1; !st && k <= BENCH_MAX_K; k++) {
            bench_progress("K sweep: K=%d rep %d/%d", k, rep + 1, reps);
            sd_spec_params sp = bench_params(o, k, false, false);
            sd_drafter dr;
            st = sweep_drafter(e, ref, n_ref, rep, &dr, err);
            if (!st) st = bench_generate(e, p, &dr, &sp, ref, n_ref, &run, err);
            sd_drafter_free(&dr);
            if (!st) acc_add(&acc[k], &run);
        }
    }
    free(ref);
    if (st) return st;
    r->sweep_greedy_tok_s = bench_median(g_tok, reps);
    for (int k = 1; k <= BENCH_MAX_K; k++) {
        bench_mode_row m;
        acc_row(&acc[k], r->sweep_greedy_tok_s, &m);
        bench_k_row *row = &r->ksweep[r->n_k++];
        row->k = k;
        row->ms_per_tok = 1e3 / m.tok_s;
        row->speedup = m.speedup;
        row->acc_per_round = m.acc_per_round;
        row->alpha_geo = bench_alpha_geo(m.acc_per_round, k);
        double draft_cost = e->dm ? k * r->cv.r : 0.0;
        row->predicted = bench_expected_tokens(row->alpha_geo, k) / (draft_cost + r->cv.cv[k + 1]);
        row->lossless_ok = m.lossless_ok, row->lossless_n = m.lossless_n;
    }
    return SD_OK;
}

sd_status bench_oracle(bench_env *e, bench_results *r, sd_err *err) {
    const bench_opts *o = e->o;
    const bench_prompt *p = &e->prompts[0];
    int reps = o->reps > 64 ? 64 : o->reps, k = bench_oracle_k(o);
    int32_t *ref = NULL, n_ref = 0;
    double g_tok[64];
    mode_acc acc[BENCH_MAX_ALPHAS], acc_cost[2][BENCH_MAX_ALPHAS]; /* free, + draft model, + head (bench_head_name) */
    memset(acc, 0, sizeof acc);
    memset(acc_cost, 0, sizeof acc_cost);
    /* --oracle-gate 1: K adaptive up to k and the hit-rate gate on, as generate decodes */
    sd_spec_params plain = bench_params(o, k, false, false), sp = bench_params(o, k, o->oracle_gate, o->oracle_gate);
    sd_status st = SD_OK;
    for (int rep = 0; !st && rep < reps; rep++) {
        bench_run run;
        bench_progress("oracle: greedy rep %d/%d", rep + 1, reps);
        st = bench_greedy(e, p, &plain, &ref, &n_ref, &run, err); /* the first run's ids: the reference */
        g_tok[rep] = run.tok_s;
        for (int a = 0; !st && a < o->n_alphas; a++) {
            bench_progress("oracle: α=%.2f rep %d/%d", o->alphas[a], rep + 1, reps);
            sd_drafter dr;
            st = sd_drafter_oracle_init(&dr, ref, n_ref, p->n_ids, o->alphas[a], e->tm->hp.n_vocab,
                                        o->seed + (uint64_t)rep, err);
            if (!st) st = bench_generate(e, p, &dr, &sp, ref, n_ref, &run, err);
            sd_drafter_free(&dr);
            if (!st) acc_add(&acc[a], &run);
            for (int c = 0; c < 2 && !st; c++) { /* the same α at a draft model's / a head's cost */
                const char *costly = c == 0 ? (e->dm ? "draft" : NULL) : bench_head_name(e);
                if (!costly) continue;
                sd_drafter cost;
                st = bench_drafter_make(e, costly, &cost, err);
                if (!st) st = sd_drafter_oracle_costed_init(&dr, ref, n_ref, p->n_ids, o->alphas[a], e->tm->hp.n_vocab,
                                                            o->seed + (uint64_t)rep, &cost, err);
                sd_drafter_free(&cost);
                if (!st) st = bench_generate(e, p, &dr, &sp, ref, n_ref, &run, err);
                sd_drafter_free(&dr);
                if (!st) acc_add(&acc_cost[c][a], &run);
            }
        }
    }
    free(ref);
    if (st) return st;
    r->oracle_greedy_tok_s = bench_median(g_tok, reps);
    for (int a = 0; a < o->n_alphas; a++) {
        bench_mode_row m;
        acc_row(&acc[a], r->oracle_greedy_tok_s, &m);
        bench_oracle_row *row = &r->oracle[r->n_oracle++];
        row->alpha = o->alphas[a];
        row->measured_alpha = bench_alpha_geo(m.acc_per_round, k);
        row->acc_per_round = m.acc_per_round;
        row->tok_s = m.tok_s;
        row->speedup = m.speedup;
        /* n-gram-like economics: proposing costs nothing (ARCHITECTURE.md §2). */
        row->predicted = r->cv.present ? bench_expected_tokens(o->alphas[a], k) / r->cv.cv[k + 1] : NAN;
        row->lossless_ok = m.lossless_ok, row->lossless_n = m.lossless_n;
        double *sc[2] = {&row->speedup_draft, &row->speedup_head};
        for (int c = 0; c < 2; c++) {
            *sc[c] = NAN;
            if (!acc_cost[c][a].n) continue;
            acc_row(&acc_cost[c][a], r->oracle_greedy_tok_s, &m);
            *sc[c] = m.speedup;
            if (m.lossless_ok != m.lossless_n) row->lossless_ok = 0; /* a costed run that differs fails the row */
        }
    }
    return SD_OK;
}
