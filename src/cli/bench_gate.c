/* specdec bench, the gate table (DESIGN.md §3; issue 12: "gated speculation
 * at α ≈ 0 on the hybrid: >= 0.98x greedy"): speculation with the decode
 * defaults (adaptive K, hit-rate gate on) where drafts are (almost) never
 * accepted, alternated rep by rep with plain greedy. What it measures is what
 * a useless drafter costs before and after the gate closes: the first
 * rounds, the shadow probes, and on a hybrid target the rollbacks of those
 * rounds. Drafters: the oracle at α = 0 (free, like n-gram), the same paying
 * the draft model's time (costly, probed every few steps), and the draft
 * model itself (a random-weight draft: α ≈ 0 for real). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "cli/bench.h"
#include "core/checked.h"
#include "decode/drafter_oracle.h"

typedef struct gate_acc {
    double tok_s[64];
    int n, ok;
    int64_t rounds, drafted, accepted, probes, closed;
    double rb_s;
    int64_t draft_redecoded;
} gate_acc;

static const char *const GATE_NAMES[BENCH_N_GATE] = {"oracle(α=0)", "oracle(α=0) at draft cost", "draft"};

/* Drafter i of the table (GATE_NAMES) into d; *skip when it needs a draft model there is none of. */
static sd_status gate_drafter(bench_env *e, int i, const int32_t *ref, int32_t n_ref, uint64_t seed, sd_drafter *d,
                              bool *skip, sd_err *err) {
    const int32_t n_vocab = e->tm->hp.n_vocab, n_prompt = e->prompts[0].n_ids;
    *skip = i > 0 && !e->dm;
    if (*skip) return SD_OK;
    if (i == 0) return sd_drafter_oracle_init(d, ref, n_ref, n_prompt, 0.0, n_vocab, seed, err);
    if (i == 2) return bench_drafter_make(e, "draft", d, err);
    sd_drafter cost;
    sd_status st = bench_drafter_make(e, "draft", &cost, err);
    if (!st) st = sd_drafter_oracle_costed_init(d, ref, n_ref, n_prompt, 0.0, n_vocab, seed, &cost, err);
    sd_drafter_free(&cost);
    return st;
}

static void acc_run(bench_env *e, const bench_run *run, gate_acc *a) {
    if (a->n < 64) a->tok_s[a->n] = run->tok_s;
    a->n++;
    a->ok += run->same_as_ref;
    a->rounds += run->st.rounds;
    a->drafted += run->st.drafted;
    a->accepted += run->st.accepted;
    a->probes += run->st.probes;
    a->closed += run->st.gate_closed_steps;
    if (e->th) a->rb_s += e->th->st.rollback_s;
    if (e->dh) a->draft_redecoded += e->dh->st.redecoded;
}

static void fill(int i, const gate_acc *a, double greedy, bench_gate_row *row) {
    double tok[64];
    const int n = a->n < 64 ? a->n : 64;
    memcpy(tok, a->tok_s, (size_t)n * sizeof *tok);
    const double runs = a->n > 0 ? a->n : NAN;
    *row = (bench_gate_row){
        .drafter = GATE_NAMES[i], .present = a->n > 0, .tok_s = bench_median(tok, n),
        .alpha = a->drafted > 0 ? (double)a->accepted / (double)a->drafted : NAN,
        .rounds = (double)a->rounds / runs, .drafted = (double)a->drafted / runs,
        .probes = (double)a->probes / runs, .closed_steps = (double)a->closed / runs,
        .rb_ms = a->rb_s * 1e3 / runs, .draft_redecoded = (double)a->draft_redecoded / runs, .lossless_ok = a->ok, .lossless_n = a->n};
    row->speedup = row->tok_s / greedy;
}

sd_status bench_gate(bench_env *e, bench_results *r, sd_err *err) {
    const bench_opts *o = e->o;
    const bench_prompt *p = &e->prompts[0];
    const int reps = o->reps > 64 ? 64 : o->reps;
    sd_spec_params plain = bench_params(o, o->k, false, false), spec = bench_params(o, o->k, true, true);
    int32_t *ref = NULL, n_ref = 0;
    double g_tok[64];
    gate_acc acc[BENCH_N_GATE];
    memset(acc, 0, sizeof acc);
    sd_status st = SD_OK;
    for (int rep = 0; !st && rep < reps; rep++) {
        bench_run run;
        bench_progress("gate: greedy rep %d/%d", rep + 1, reps);
        st = bench_generate(e, p, NULL, &plain, ref, n_ref, &run, err);
        if (!st && !ref) {
            ref = sd_malloc_array((size_t)run.n + 1, sizeof *ref);
            if (!ref) st = sd_err_set(err, SD_ERR_NOMEM, "out of memory");
            else memcpy(ref, e->scratch_ids, (size_t)run.n * sizeof *ref), n_ref = run.n;
        }
        g_tok[rep] = run.tok_s;
        for (int i = 0; !st && i < BENCH_N_GATE; i++) {
            sd_drafter dr = {0};
            bool skip;
            st = gate_drafter(e, i, ref, n_ref, o->seed + (uint64_t)rep, &dr, &skip, err);
            if (st || skip) continue;
            bench_progress("gate: %s rep %d/%d", GATE_NAMES[i], rep + 1, reps);
            if (e->th) e->th->st = (sd_hybrid_stats){0};
            if (e->dh) e->dh->st = (sd_hybrid_stats){0};
            st = bench_generate(e, p, &dr, &spec, ref, n_ref, &run, err);
            sd_drafter_free(&dr);
            if (!st) acc_run(e, &run, &acc[i]);
        }
    }
    free(ref);
    if (st) return st;
    r->gate_greedy_tok_s = bench_median(g_tok, reps);
    for (int i = 0; i < BENCH_N_GATE; i++) fill(i, &acc[i], r->gate_greedy_tok_s, &r->gate[i]);
    r->gate_present = true;
    return SD_OK;
}
