/* `specdec bench --tables experts`: what a verify window of S tokens reads on
 * a mixture-of-experts target (docs/MOE.md, ARCHITECTURE.md §2). A window runs the
 * union of the experts its S tokens route to, so per MoE layer it reads
 * u(S) experts, between k (every token agrees) and min(E, S·k).
 *
 * Measured on real text: for each bench prompt, windows of S = 1..17 of the
 * prompt's own tokens (what an accepted draft is) at two positions (the
 * middle and the end of the prompt), each forwarded after the prompt's
 * prefix and undone with a state snapshot (so qwen35moe works too), reading
 * sd_context_moe_distinct per layer. Reported per S: u(S) per layer (mean
 * over windows), the expert bytes the window reads, and c_v(S) as those
 * bytes predict it:
 *   bytes(S) = B_rest + b_e · sum_l u_l(S),   c_v^bytes(S) = bytes(S) / bytes(1)
 * with b_e the stored bytes of one expert (gate + up + down) and B_rest
 * everything else one step reads (sd_model_weight_bytes less its k experts
 * per layer): the memory-bound model of the verify cost. Next to it the
 * u(S) that independent uniform routing would give, E (1 − (1 − k/E)^S), and
 * the timed c_v(S) when the cv table ran too. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "command/bench.h"
#include "core/checked.h"

#define MAX_LAYERS_SHOWN 8 /* per-layer columns up to this many MoE layers, else the mean only */

/* The first row of e->logits is big enough for BENCH_MAX_S rows. */
static sd_status forward_chunks(bench_env *e, const int32_t *ids, int32_t n, sd_err *err) {
    sd_status st = SD_OK;
    for (int32_t i = 0; !st && i < n; i += BENCH_MAX_S) {
        int32_t m = n - i < BENCH_MAX_S ? n - i : BENCH_MAX_S;
        st = sd_forward(e->tc, ids + i, m, e->logits, err);
    }
    return st;
}

/* The S = 1..17 windows at position w of p (the prefix ids[0..w) already in
 * e->tc): adds each layer's u to sum[S][l]. */
static sd_status windows_at(bench_env *e, const bench_prompt *p, int32_t w, double (*sum)[BENCH_MAX_MOE_LAYERS],
                            void *snap, size_t snap_n, sd_err *err) {
    sd_status st = sd_context_state_save(e->tc, snap, snap_n, err);
    for (int S = 1; !st && S <= BENCH_MAX_S; S++) {
        st = sd_forward(e->tc, p->ids + w, S, e->logits, err);
        for (int32_t il = 0, l = 0; !st && il < e->tm->hp.n_layer && l < BENCH_MAX_MOE_LAYERS; il++) {
            int32_t u = sd_context_moe_distinct(e->tc, il);
            if (u >= 0) sum[S][l++] += u;
        }
        sd_status st2 = sd_context_state_restore(e->tc, snap, snap_n, err);
        if (!st) st = st2;
    }
    return st;
}

static int count_moe_layers(const bench_env *e) {
    int n = 0;
    for (int32_t il = 0; il < e->tm->hp.n_layer; il++) n += sd_context_moe_distinct(e->tc, il) >= 0;
    return n < BENCH_MAX_MOE_LAYERS ? n : BENCH_MAX_MOE_LAYERS;
}

sd_status bench_experts(bench_env *e, bench_results *r, sd_err *err) {
    bench_experts_row *x = &r->experts;
    const sd_hparams *hp = &e->tm->hp;
    if (hp->n_expert <= 0) return SD_OK; /* a dense target: nothing to report */
    x->n_layers = count_moe_layers(e);
    size_t snap_n = sd_context_state_bytes(e->tc);
    void *snap = malloc(snap_n);
    if (!snap) return sd_err_set(err, SD_ERR_NOMEM, "out of memory for a state snapshot");
    double sum[BENCH_MAX_S + 1][BENCH_MAX_MOE_LAYERS];
    memset(sum, 0, sizeof sum);
    sd_status st = SD_OK;
    for (int i = 0; !st && i < e->n_prompts; i++) {
        const bench_prompt *p = &e->prompts[i];
        if (p->n_ids < BENCH_MAX_S + 2) continue;
        /* every window of up to BENCH_MAX_S tokens must fit in the prompt */
        const int32_t last = p->n_ids - BENCH_MAX_S, mid = p->n_ids / 2;
        const int32_t at[2] = {mid < last ? mid : last, last};
        bench_progress("experts: prompt %d/%d", i + 1, e->n_prompts);
        sd_context_truncate(e->tc, 0);
        int32_t done = 0;
        for (int j = 0; !st && j < 2; j++) {
            if (j == 1 && at[1] <= at[0]) break;
            st = forward_chunks(e, p->ids + done, at[j] - done, err);
            done = at[j];
            if (!st) st = windows_at(e, p, at[j], sum, snap, snap_n, err);
            if (!st) x->n_windows++;
        }
    }
    free(snap);
    if (st) return st;
    if (!x->n_windows) return sd_err_set(err, SD_ERR_ARG, "experts table: no prompt has %d tokens", BENCH_MAX_S + 2);
    const uint64_t all = sd_model_matrix_bytes(e->tm), step = sd_model_weight_bytes(e->tm);
    const int E = hp->n_expert, k = hp->n_expert_used, L = x->n_layers;
    x->expert_bytes = (double)(all - step) / ((double)L * (E - k)); /* the E − k experts a step skips */
    x->rest_bytes = (double)step - x->expert_bytes * k * L;
    for (int S = 1; S <= BENCH_MAX_S; S++) {
        double tot = 0;
        for (int l = 0; l < L; l++) x->u[S][l] = sum[S][l] / x->n_windows, tot += x->u[S][l];
        x->u_mean[S] = tot / L;
        x->u_random[S] = E * (1 - pow(1 - (double)k / E, S));
        x->bytes[S] = x->rest_bytes + x->expert_bytes * tot;
        x->cv_bytes[S] = x->bytes[S] / x->bytes[1];
    }
    x->present = true;
    return SD_OK;
}

void bench_experts_print(const bench_env *e, const bench_results *r) {
    const bench_experts_row *x = &r->experts;
    if (!x->present) return;
    const sd_hparams *hp = &e->tm->hp;
    const bool per_layer = x->n_layers <= MAX_LAYERS_SHOWN;
    printf("\n\n## Experts per verify window (E = %d, k = %d, %d MoE layers; %d windows of real prompt text)\n\n",
           hp->n_expert, hp->n_expert_used, x->n_layers, x->n_windows);
    printf("One expert (gate + up + down) %.3f MiB as stored; the rest of a step %.1f MiB. Expert MiB: read by the "
           "window in all layers. c_v bytes: bytes(S) / bytes(1).%s\n\n",
           x->expert_bytes / 1048576.0, x->rest_bytes / 1048576.0,
           r->cv.present ? " c_v timed: the cv table's." : "");
    printf("| S | u(S) mean |");
    if (per_layer)
        for (int l = 0; l < x->n_layers; l++) printf(" u L%d |", l);
    printf(" u random | expert MiB | c_v bytes |%s\n", r->cv.present ? " c_v timed |" : "");
    printf("|---:|---:|");
    if (per_layer)
        for (int l = 0; l < x->n_layers; l++) printf("---:|");
    printf("---:|---:|---:|%s\n", r->cv.present ? "---:|" : "");
    for (int S = 1; S <= BENCH_MAX_S; S++) {
        printf("| %d | %.2f |", S, x->u_mean[S]);
        if (per_layer)
            for (int l = 0; l < x->n_layers; l++) printf(" %.2f |", x->u[S][l]);
        printf(" %.2f | %.1f | %.2f |", x->u_random[S], x->expert_bytes * x->u_mean[S] * x->n_layers / 1048576.0,
               x->cv_bytes[S]);
        if (r->cv.present) printf(" %.2f |", r->cv.cv[S]);
        printf("\n");
    }
}
