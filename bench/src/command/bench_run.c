/* Timed generations and forwards for `specdec bench` (see bench.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "command/bench.h"
#include "core/checked.h"
#include "core/clock.h"

const char *const BENCH_DRAFTER_NAMES[BENCH_N_DRAFTERS] = {"ngram", "draft", "auto", "eagle3", "mtp"};

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

double bench_median(double *xs, int n) {
    if (n <= 0) return NAN;
    qsort(xs, (size_t)n, sizeof *xs, cmp_double);
    return n % 2 ? xs[n / 2] : 0.5 * (xs[n / 2 - 1] + xs[n / 2]);
}

int bench_oracle_k(const bench_opts *o) { return o->k > BENCH_MAX_S - 1 ? BENCH_MAX_S - 1 : o->k; }

sd_spec_params bench_params(const bench_opts *o, int k, bool adaptive, bool gate) {
    sd_spec_params p = sd_spec_default_params();
    p.n_predict = o->n_predict;
    p.draft_max = k;
    p.adaptive_k = adaptive;
    if (!gate) p.gate_misses = 0;
    p.stop_at_eog = false;
    p.sampling.temp = 0;
    return p;
}

sd_spec_params bench_sampled(const bench_opts *o, sd_spec_params p, int rep) {
    if (o->temp > 0) {
        p.sampling.temp = (float)o->temp;
        p.sampling.seed = o->seeds[rep % o->n_seeds];
    }
    return p;
}

/* Token callback: timestamps of the first and latest committed token. */
typedef struct clock_cb {
    double t_first, t_last;
    int n;
} clock_cb;

static bool on_token(void *user, int32_t token) {
    (void)token;
    clock_cb *c = user;
    double t = sd_now_s();
    if (c->n++ == 0) c->t_first = t;
    c->t_last = t;
    return true;
}

sd_status bench_generate(bench_env *e, const bench_prompt *p, sd_drafter *dr,
                         const sd_spec_params *sp, const int32_t *ref, int32_t n_ref,
                         bench_run *out, sd_err *err) {
    sd_context_truncate(e->tc, 0);
    clock_cb clk = {0};
    int32_t n = 0;
    memset(out, 0, sizeof *out);
    sd_status st = sd_spec_generate(&e->tl.lm, dr, p->ids, p->n_ids, sp, on_token, &clk,
                                    e->scratch_ids, &n, &out->st, err);
    if (st) return st;
    out->n = n;
    out->tok_s = n > 1 && clk.t_last > clk.t_first ? (n - 1) / (clk.t_last - clk.t_first) : NAN;
    out->prefill_tok_s = out->st.t_prefill_s > 0 ? p->n_ids / out->st.t_prefill_s : NAN;
    out->same_as_ref = ref && n == n_ref && !memcmp(ref, e->scratch_ids, (size_t)n * sizeof *ref);
    return SD_OK;
}

const char *bench_head_name(const bench_env *e) {
    return e->hm ? "eagle3" : e->tm->nextn.present ? "mtp" : NULL;
}

sd_status bench_greedy(bench_env *e, const bench_prompt *p, const sd_spec_params *plain, int32_t **ref,
                       int32_t *n_ref, bench_run *run, sd_err *err) {
    sd_status st = bench_generate(e, p, NULL, plain, *ref, *n_ref, run, err);
    if (st || *ref) return st;
    *ref = sd_malloc_array((size_t)run->n + 1, sizeof **ref);
    if (!*ref) return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    memcpy(*ref, e->scratch_ids, (size_t)run->n * sizeof **ref);
    *n_ref = run->n;
    return SD_OK;
}

/* The bench's drafter of kind k over its env (decode/compose.h); b: the
 * ab table's draft B instead of the -md model. */
static sd_status make(bench_env *e, sd_drafter_kind k, bool b, sd_drafter *d, sd_err *err) {
    sd_spec_params sp = bench_params(e->o, e->o->k, false, false);
    sd_model_lm *dl = b ? &e->bl : &e->dl;
    const sd_drafter_inputs in = {.target = e->tc,
                                  .draft_lm = dl->lm.self ? &dl->lm : NULL,
                                  .draft_sampling = &sp.sampling,
                                  .eagle3 = e->hm,
                                  .n_threads = e->o->threads,
                                  .n_batch = 64,
                                  .ngram_min = 1,
                                  .ngram_max = 3};
    return sd_compose_drafter(d, k, &in, err);
}

sd_status bench_draft_model_make(bench_env *e, bool b, sd_drafter *d, sd_err *err) {
    return make(e, SD_DRAFTER_MODEL, b, d, err);
}

sd_status bench_drafter_make(bench_env *e, const char *name, sd_drafter *d, sd_err *err) {
    for (int k = 0; k < SD_DRAFTER_KIND_N; k++)
        if (!strcmp(name, sd_drafter_kind_name((sd_drafter_kind)k))) return make(e, (sd_drafter_kind)k, false, d, err);
    memset(d, 0, sizeof *d);
    return sd_err_set(err, SD_ERR_ARG, "drafter %s unknown", name);
}

sd_status bench_warm(bench_env *e, sd_context *c, sd_err *err) {
    const bench_prompt *p = &e->prompts[0];
    sd_context_truncate(c, 0);
    sd_status st = SD_OK;
    /* BENCH_MAX_S rows at a time: the size of e->logits */
    for (int32_t i = 0; !st && i < p->n_ids; i += BENCH_MAX_S) {
        int32_t m = p->n_ids - i < BENCH_MAX_S ? p->n_ids - i : BENCH_MAX_S;
        st = sd_forward(c, p->ids + i, m, e->logits, err);
    }
    return st;
}

sd_status bench_forward_ms(bench_env *e, sd_context *c, int S, int reps, double *ms, sd_err *err) {
    const bench_prompt *p = &e->prompts[0];
    int32_t toks[BENCH_MAX_S];
    for (int i = 0; i < S; i++) toks[i] = p->ids[i % p->n_ids];
    double t[64];
    if (reps > 64) reps = 64;
    /* Back to the starting length after each rep: a snapshot, since a model with recurrent
     * layers (qwen35) cannot drop positions by truncation. */
    size_t snap_n = sd_context_state_bytes(c);
    void *snap = malloc(snap_n);
    if (!snap) return sd_err_set(err, SD_ERR_NOMEM, "out of memory for a state snapshot");
    sd_status st = sd_context_state_save(c, snap, snap_n, err);
    for (int r = 0; !st && r < reps; r++) {
        double t0 = sd_now_s();
        st = sd_forward(c, toks, S, e->logits, err);
        t[r] = sd_now_s() - t0;
        sd_status st2 = sd_context_state_restore(c, snap, snap_n, err);
        if (!st) st = st2;
    }
    free(snap);
    if (st) return st;
    *ms = 1e3 * bench_median(t, reps);
    return SD_OK;
}

double bench_expected_tokens(double alpha, int k) {
    if (alpha >= 1.0) return k + 1.0;
    return (1.0 - pow(alpha, k + 1)) / (1.0 - alpha);
}

double bench_alpha_geo(double acc_per_round, int k) {
    if (acc_per_round <= 0) return 0;
    if (acc_per_round >= k) return 1;
    double lo = 0, hi = 1;
    for (int i = 0; i < 60; i++) {
        double mid = 0.5 * (lo + hi);
        if (bench_expected_tokens(mid, k) - 1.0 < acc_per_round) lo = mid;
        else hi = mid;
    }
    return 0.5 * (lo + hi);
}
