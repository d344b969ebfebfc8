/* The hit-rate gate: when to draft, and how much (see gate.h). */
#include "decode/gate.h"

#include <math.h>

#define ALPHA_DECAY 0.9   /* per update: about the last 10 rounds or probes count */
#define TIME_KEEP 0.7     /* smoothing of the measured times */
#define OUTLIER 3.0       /* a time above 3x the estimate is clipped (preemption) */
#define REOPEN_GAIN 1.05  /* predicted speedup needed to reopen: hysteresis */
#define CV_SLOPE 0.1      /* c_v per extra row where S was never measured */
#define PROBE_SHARE 0.005 /* most of the decode time model probes may take */

void sd_gate_init(sd_gate *g, const sd_spec_params *p, bool costly_drafter) {
    *g = (sd_gate){
        .k_max = p->draft_max,
        .misses_to_close = p->gate_misses,
        .probe0 = p->gate_probe > 0 ? p->gate_probe : 1,
        .adaptive = p->adaptive_k,
        .costly = costly_drafter,
        .economic = p->gate_misses > 0,
        .open = true,
        .probation = !costly_drafter,
        .hits = 0.5, /* prior α̂ = 0.5 worth one token: the first rounds decide */
        .trials = 1.0,
    };
    g->k = g->adaptive ? 1 : g->k_max;
    g->interval = g->probe0;
}

static bool t1_known(const sd_gate *g) { return g->t_fwd[1] > 0; }

int32_t sd_gate_k(const sd_gate *g) {
    if (!g->open) return 0;
    /* The first step is plain: it measures t(1), so the speedup model can
     * judge the first round (sd_gate_round). Drafting first and measuring
     * later cost a costly drafter two more failing rounds (an MTP head at
     * α = 0 on a mixture of experts lost ~5% of a 64-token decode). */
    if (g->economic && !t1_known(g)) return 0;
    if (g->block > 0 && g->economic) return sd_gate_best_k(g, &(double){0}); /* on the newest evidence */
    return g->k;
}

static void close_gate(sd_gate *g) {
    g->open = false;
    g->interval = g->probe0;
    g->since_probe = 0;
    g->streak = 0;
}

static void add_evidence(sd_gate *g, double hits, double trials) {
    g->hits = ALPHA_DECAY * g->hits + hits;
    g->trials = ALPHA_DECAY * g->trials + trials;
}

double sd_gate_alpha(const sd_gate *g) { return g->trials > 0 ? g->hits / g->trials : 0; }

/* Past the largest measured S' the curve continues at the steeper of
 * CV_SLOPE and its own mean slope (c_v(S') - 1) / (S' - 1). A dense model's
 * c_v grows by a few percent per row, so CV_SLOPE rules; a mixture of experts
 * reads the union of its rows' experts (docs/MOE.md), c_v(2) can be 1.5 or
 * more, and a fixed +0.1 per row would promise a K = 8 window for the price
 * of c_v(3) or so. The union saturates, so the straight line through
 * (1, 1) and (S', c_v(S')) errs on the expensive side: K grows only once a
 * longer window was actually timed. */
double sd_gate_cv(const sd_gate *g, int32_t S) {
    if (!t1_known(g) || S < 1) return -1;
    int32_t s = S <= SD_GATE_MAX_S ? S : SD_GATE_MAX_S;
    while (g->t_fwd[s] <= 0) s--; /* stops at 1 */
    const double cv = g->t_fwd[s] / g->t_fwd[1];
    const double slope = s > 1 && (cv - 1) / (s - 1) > CV_SLOPE ? (cv - 1) / (s - 1) : CV_SLOPE;
    return cv + slope * (double)(S - s);
}

void sd_gate_set_block(sd_gate *g, int32_t n) {
    if (n < 1) n = 1;
    if (n > SD_GATE_MAX_BLOCK) n = SD_GATE_MAX_BLOCK;
    g->block = n;
    if (g->k_max > n) g->k_max = n;
    for (int32_t i = 0; i <= SD_GATE_MAX_BLOCK; i++) g->pos_hits[i] = 0.5, g->pos_trials[i] = 1.0;
    g->k = g->adaptive && g->economic ? 1 : g->k_max;
}

void sd_gate_position(sd_gate *g, int32_t i, bool hit) {
    if (g->block < 1 || i < 1 || i > g->block) return;
    g->pos_hits[i] = ALPHA_DECAY * g->pos_hits[i] + hit;
    g->pos_trials[i] = ALPHA_DECAY * g->pos_trials[i] + 1;
}

double sd_gate_accept_at(const sd_gate *g, int32_t i) {
    if (g->block < 1 || i < 1 || i > g->block) return 0;
    return g->pos_hits[i] / g->pos_trials[i];
}

double sd_gate_predicted_speedup(const sd_gate *g, int32_t k) {
    double cv = sd_gate_cv(g, k + 1);
    if (cv < 0 || k < 1) return -1;
    if (g->block > 0) { /* E from the per-position products; one draft forward per round */
        double e = 1, run = 1;
        for (int32_t i = 1; i <= k && i <= g->block; i++) e += run *= sd_gate_accept_at(g, i);
        return e / (cv + g->t_draft / g->t_fwd[1]);
    }
    double a = sd_gate_alpha(g);
    double e = a >= 1 ? k + 1.0 : (1 - pow(a, k + 1)) / (1 - a);
    double r = g->t_draft / g->t_fwd[1]; /* 0 until the drafter was timed */
    return e / (cv + k * r);
}

int32_t sd_gate_best_k(const sd_gate *g, double *speedup) {
    int32_t best = 1;
    *speedup = sd_gate_predicted_speedup(g, 1);
    for (int32_t k = 2; k <= g->k_max; k++) {
        double s = sd_gate_predicted_speedup(g, k);
        if (s > *speedup) *speedup = s, best = k;
    }
    return best;
}

void sd_gate_round(sd_gate *g, int32_t k, int32_t j) {
    if (g->adaptive && g->block == 0) {
        if (j == k && g->k < g->k_max) g->k = 2 * g->k < g->k_max ? 2 * g->k : g->k_max;
        if (j == 0 && g->k > 1) g->k /= 2;
    }
    /* j hits, and one miss unless every draft token was accepted: the tokens
     * after the first rejection were never tried (§2's geometric model). */
    add_evidence(g, j, j + (j < k));
    if (j > 0) {
        g->misses = 0;
        g->probation = false;
    } else {
        g->misses++;
        if (g->misses_to_close > 0 && (g->misses >= g->misses_to_close || g->probation)) {
            close_gate(g);
            return;
        }
    }
    /* From the first round on: α̂ carries a prior worth one token (0.5), so
     * one failed round reads as α̂ ≈ 0.24, not 0, and a drafter closes on it
     * only where even that would not pay (c_v(2) + r > 1.24: a costly head on
     * a mixture of experts, not a cheap draft on a dense model). */
    if (!g->economic || !t1_known(g)) return;
    double speedup;
    int32_t kb = sd_gate_best_k(g, &speedup);
    if (speedup < 1.0) close_gate(g);
    else if (g->block > 0) g->k = kb; /* the model picks the block length outright */
    else if (g->k > kb) g->k = kb;
}

bool sd_gate_probe_due(sd_gate *g, bool *may_run_model) {
    *may_run_model = false;
    if (g->open) return false;
    if (!g->costly) return true;
    double budget = t1_known(g) ? g->t_probe / (PROBE_SHARE * g->t_fwd[1]) : 0; /* steps per probe */
    if (++g->since_probe >= g->interval && g->since_probe >= budget) {
        g->since_probe = 0;
        *may_run_model = true;
    }
    return true;
}

void sd_gate_probe_result(sd_gate *g, bool hit, bool ran_model) {
    add_evidence(g, hit, 1);
    g->streak = hit ? g->streak + 1 : 0;
    if (!hit && ran_model && g->interval < 8 * g->probe0) g->interval *= 2;
    /* A free probe runs at every step, so one hit can be chance: two in a
     * row reopen. A model probe is rare (the interval grows): one hit does. */
    if (g->streak < (ran_model ? 1 : 2)) return;
    if (g->economic && t1_known(g)) {
        double speedup;
        (void)sd_gate_best_k(g, &speedup);
        if (speedup < REOPEN_GAIN) return;
    }
    g->open = true;
    g->probation = !g->costly;
    g->misses = 0;
    g->k = g->adaptive ? 1 : g->k_max;
    if (g->block > 0 && g->economic && t1_known(g)) g->k = sd_gate_best_k(g, &(double){0});
}

static void smooth(double *est, double x) {
    if (x < 1e-9) x = 1e-9; /* a 0 would read as "unseen" */
    if (*est <= 0) {
        *est = x;
        return;
    }
    if (x > OUTLIER * *est) x = OUTLIER * *est;
    *est = TIME_KEEP * *est + (1 - TIME_KEEP) * x;
}

void sd_gate_time_forward(sd_gate *g, int32_t S, double seconds) {
    if (S >= 1 && S <= SD_GATE_MAX_S && isfinite(seconds)) smooth(&g->t_fwd[S], seconds);
}

void sd_gate_time_probe(sd_gate *g, double seconds) {
    if (isfinite(seconds)) smooth(&g->t_probe, seconds);
}

void sd_gate_time_draft(sd_gate *g, int32_t k, double seconds) {
    if (k >= 1 && isfinite(seconds)) smooth(&g->t_draft, g->block > 0 ? seconds : seconds / k);
}
