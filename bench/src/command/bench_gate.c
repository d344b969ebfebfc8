/* specdec bench, the gate table (ARCHITECTURE.md §3; the target: gated
 * speculation at α ≈ 0 on the hybrid runs at >= 0.98x greedy): speculation with the decode
 * defaults (adaptive K, hit-rate gate on) where drafts are (almost) never
 * accepted, alternated rep by rep with plain greedy. What it measures is what
 * a useless drafter costs before and after the gate closes: the first
 * rounds, the shadow probes, and on a hybrid target the rollbacks of those
 * rounds. Drafters: the oracle at α = 0 (free, like n-gram), the same paying
 * the draft model's time (costly, probed every few steps), the draft model
 * itself (a random-weight draft: α ≈ 0 for real), and the target's MTP head
 * where it has one (a costly head; on random weights α ≈ 0 for real). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "command/bench.h"
#include "core/checked.h"
#include "oracle/oracle_drafter.h"

typedef struct gate_acc {
    double tok_s[64], ratio[64]; /* per rep: tok/s, and tok/s over the same rep's greedy */
    int n, ok;
    int64_t rounds, drafted, accepted, probes, closed, forwards;
    double rb_s, draft_s, rounds_s, plain_s, decode_s;
    int64_t plain_steps, draft_redecoded;
} gate_acc;

/* Rows 2 and 3 are the bench drafters of those names (bench_drafter_make). */
enum { GATE_ORACLE, GATE_ORACLE_COSTED, GATE_DRAFT, GATE_MTP };
static const char *const GATE_NAMES[BENCH_N_GATE] = {"oracle(α=0)", "oracle(α=0) at draft cost", "draft", "mtp"};

/* Drafter i of the table (GATE_NAMES) into d; *skip when it needs a draft model or an MTP head there is
 * none of. */
static sd_status gate_drafter(bench_env *e, int i, const int32_t *ref, int32_t n_ref, uint64_t seed, sd_drafter *d,
                              bool *skip, sd_err *err) {
    const int32_t n_vocab = e->tm->hp.n_vocab, n_prompt = e->prompts[0].n_ids;
    *skip = i == GATE_MTP ? !e->tm->nextn.present : i != GATE_ORACLE && !e->dm;
    if (*skip) return SD_OK;
    if (i == GATE_ORACLE) return sd_drafter_oracle_init(d, ref, n_ref, n_prompt, 0.0, n_vocab, seed, err);
    if (i == GATE_DRAFT || i == GATE_MTP) return bench_drafter_make(e, GATE_NAMES[i], d, err);
    sd_drafter cost;
    sd_status st = bench_drafter_make(e, "draft", &cost, err);
    if (!st) st = sd_drafter_oracle_costed_init(d, ref, n_ref, n_prompt, 0.0, n_vocab, seed, &cost, err);
    sd_drafter_free(&cost);
    return st;
}

static void acc_run(bench_env *e, const bench_run *run, gate_acc *a) {
    a->n++;
    a->ok += run->same_as_ref;
    a->rounds += run->st.rounds;
    a->drafted += run->st.drafted;
    a->accepted += run->st.accepted;
    a->probes += run->st.probes;
    a->closed += run->st.gate_closed_steps;
    a->forwards += run->st.target_forwards;
    a->draft_s += run->st.t_draft_s;
    a->rounds_s += run->st.t_rounds_s;
    a->plain_s += run->st.t_plain_s;
    a->decode_s += run->st.t_decode_s;
    a->plain_steps += run->st.target_forwards - run->st.rounds;
    if (e->tl.hybrid) a->rb_s += e->tl.hybrid->st.rollback_s;
    if (e->dl.hybrid) a->draft_redecoded += e->dl.hybrid->st.redecoded;
}

/* The run's decode time over what its target forwards would take at its own
 * plain-step pace, less 1: the drafter's and the rounds' cost as a share of
 * decoding, measured inside each run (at α = 0 every forward commits one
 * token, a round as a plain step). Unlike the speedup it does not move with
 * the machine's speed between runs. */
static double overhead(const gate_acc *a) {
    if (a->plain_steps <= 0 || a->forwards <= 0) return NAN;
    const double step_s = a->plain_s / (double)a->plain_steps;
    return a->decode_s / ((double)a->forwards * step_s) - 1;
}

static void fill(int i, const gate_acc *a, bench_gate_row *row) {
    double tok[64], ratio[64];
    const int n = a->n < 64 ? a->n : 64;
    memcpy(tok, a->tok_s, (size_t)n * sizeof *tok);
    memcpy(ratio, a->ratio, (size_t)n * sizeof *ratio);
    const double runs = a->n > 0 ? a->n : NAN;
    *row = (bench_gate_row){
        .drafter = GATE_NAMES[i], .present = a->n > 0, .tok_s = bench_median(tok, n),
        .speedup = bench_median(ratio, n),
        .alpha = a->drafted > 0 ? (double)a->accepted / (double)a->drafted : NAN,
        .rounds = (double)a->rounds / runs, .drafted = (double)a->drafted / runs,
        .probes = (double)a->probes / runs, .closed_steps = (double)a->closed / runs,
        .rb_ms = a->rb_s * 1e3 / runs, .draft_redecoded = (double)a->draft_redecoded / runs,
        .draft_ms = a->draft_s * 1e3 / runs, .rounds_ms = a->rounds_s * 1e3 / runs,
        .step_ms = a->plain_steps > 0 ? a->plain_s * 1e3 / (double)a->plain_steps : NAN,
        .overhead = overhead(a), .lossless_ok = a->ok, .lossless_n = a->n};
}

/* One rep: greedy and each drafter once, in an order rotated by rep (slot 0
 * greedy), so that no drafter always runs right after greedy or first. The
 * greedy run's tok/s goes to *g_tok, each drafter's tok/s over it to its
 * accumulator once the rep is done. */
static sd_status gate_rep(bench_env *e, int rep, const sd_spec_params *plain, const sd_spec_params *spec,
                          int32_t **ref, int32_t *n_ref, double *g_tok, double *g_step_s, int64_t *g_steps,
                          gate_acc *acc, sd_err *err) {
    const bench_prompt *p = &e->prompts[0];
    const int reps = e->o->reps > 64 ? 64 : e->o->reps;
    double tok[BENCH_N_GATE + 1] = {0};
    bool ran[BENCH_N_GATE + 1] = {0};
    sd_status st = SD_OK;
    /* the first rep runs greedy first: the other runs check against its tokens */
    for (int t = 0; !st && t <= BENCH_N_GATE; t++) {
        const int slot = (t + (BENCH_N_GATE + 1) - rep % (BENCH_N_GATE + 1)) % (BENCH_N_GATE + 1);
        bench_run run;
        if (slot == 0) {
            bench_progress("gate: greedy rep %d/%d", rep + 1, reps);
            st = bench_greedy(e, p, plain, ref, n_ref, &run, err);
            if (!st) *g_tok = run.tok_s, *g_step_s += run.st.t_plain_s, *g_steps += run.st.target_forwards;
            continue;
        }
        const int i = slot - 1;
        sd_drafter dr = {0};
        bool skip;
        if (!*ref) return sd_err_set(err, SD_ERR_ARG, "gate: no greedy reference"); /* rep 0 runs greedy first */
        st = gate_drafter(e, i, *ref, *n_ref, e->o->seed + (uint64_t)rep, &dr, &skip, err);
        if (st || skip) continue;
        bench_progress("gate: %s rep %d/%d", GATE_NAMES[i], rep + 1, reps);
        if (e->tl.hybrid) e->tl.hybrid->st = (sd_hybrid_stats){0};
        if (e->dl.hybrid) e->dl.hybrid->st = (sd_hybrid_stats){0};
        st = bench_generate(e, p, &dr, spec, *ref, *n_ref, &run, err);
        sd_drafter_free(&dr);
        if (!st) acc_run(e, &run, &acc[i]), tok[slot] = run.tok_s, ran[slot] = true;
    }
    for (int i = 0; !st && i < BENCH_N_GATE; i++)
        if (ran[i + 1] && acc[i].n <= 64) {
            acc[i].tok_s[acc[i].n - 1] = tok[i + 1];
            acc[i].ratio[acc[i].n - 1] = tok[i + 1] / *g_tok;
        }
    return st;
}

sd_status bench_gate(bench_env *e, bench_results *r, sd_err *err) {
    const bench_opts *o = e->o;
    const int reps = o->reps > 64 ? 64 : o->reps;
    sd_spec_params plain = bench_params(o, o->k, false, false), spec = bench_params(o, o->k, true, true);
    int32_t *ref = NULL, n_ref = 0;
    double g_tok[64], g_step_s = 0;
    int64_t g_steps = 0;
    gate_acc acc[BENCH_N_GATE];
    memset(acc, 0, sizeof acc);
    sd_status st = SD_OK;
    for (int rep = 0; !st && rep < reps; rep++)
        st = gate_rep(e, rep, &plain, &spec, &ref, &n_ref, &g_tok[rep], &g_step_s, &g_steps, acc, err);
    free(ref);
    if (st) return st;
    r->gate_greedy_tok_s = bench_median(g_tok, reps);
    r->gate_greedy_step_ms = g_steps > 0 ? g_step_s * 1e3 / (double)g_steps : NAN;
    for (int i = 0; i < BENCH_N_GATE; i++) fill(i, &acc[i], &r->gate[i]);
    r->gate_present = true;
    return SD_OK;
}
