#include "decode/gate.h"

void sd_gate_init(sd_gate *g, const sd_spec_params *p, bool costly_drafter) {
    *g = (sd_gate){
        .k_max = p->draft_max,
        .misses_to_close = p->gate_misses,
        .probe0 = p->gate_probe > 0 ? p->gate_probe : 1,
        .adaptive = p->adaptive_k,
        .costly = costly_drafter,
        .open = true,
        .probation = !costly_drafter,
    };
    g->k = g->adaptive ? 1 : g->k_max;
    g->interval = g->probe0;
}

int32_t sd_gate_k(const sd_gate *g) { return g->open ? g->k : 0; }

static void close_gate(sd_gate *g) {
    g->open = false;
    g->interval = g->probe0;
    g->since_probe = 0;
    g->streak = 0;
}

void sd_gate_round(sd_gate *g, int32_t k, int32_t j) {
    if (g->adaptive) {
        if (j == k && g->k < g->k_max) g->k = 2 * g->k < g->k_max ? 2 * g->k : g->k_max;
        if (j == 0 && g->k > 1) g->k /= 2;
    }
    if (j > 0) {
        g->misses = 0;
        g->probation = false;
        return;
    }
    g->misses++;
    if (g->misses_to_close > 0 && (g->misses >= g->misses_to_close || g->probation)) close_gate(g);
}

bool sd_gate_probe_due(sd_gate *g, bool *may_run_model) {
    *may_run_model = false;
    if (g->open) return false;
    if (!g->costly) return true;
    if (++g->since_probe >= g->interval) {
        g->since_probe = 0;
        *may_run_model = true;
    }
    return true;
}

void sd_gate_probe_result(sd_gate *g, bool hit, bool ran_model) {
    g->streak = hit ? g->streak + 1 : 0;
    if (!hit && ran_model && g->interval < 8 * g->probe0) g->interval *= 2;
    /* A free probe runs at every step, so one hit can be chance: two in a
     * row reopen. A model probe is rare (the interval grows): one hit does. */
    if (g->streak < (ran_model ? 1 : 2)) return;
    g->open = true;
    g->probation = !g->costly;
    g->misses = 0;
    g->k = g->adaptive ? 1 : g->k_max;
}
