/* `specdec bench` output: markdown tables on stdout and the same data as JSON
 * (jansson). See bench.h for what each figure means. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "command/bench.h"
#include "numerics/matmul.h"

/* ---- markdown ---- */
static void md_header(const bench_env *e) {
    const bench_opts *o = e->o;
    printf("# specdec bench\n\n");
    printf("target `%s` (%s, %.1f MB of weights)", o->target, e->tm->hp.arch_name,
           (double)sd_model_weight_bytes(e->tm) / 1e6);
    if (e->dm) printf(", draft (%.1f MB)", (double)sd_model_weight_bytes(e->dm) / 1e6);
    if (e->bm) printf(", draft B (%.1f MB)", (double)sd_model_weight_bytes(e->bm) / 1e6);
    if (e->hm) printf(", EAGLE-3 head (%.1f MB)", (double)sd_model_weight_bytes(e->hm) / 1e6);
    printf("; %d threads, %s kernels, n = %d tokens, medians of %d run%s, K = %d\n\n", o->threads,
           sd_matmul_backend(), o->n_predict, o->reps, o->reps == 1 ? "" : "s", o->k);
}

static void md_classes(const bench_env *e, const bench_results *r) {
    printf("## Per prompt class\n\n");
    const bench_opts *o = e->o;
    if (o->fixed_k || o->gate >= 0)
        printf("Drafters run with %s K = %d, hit-rate gate %s. ", o->fixed_k ? "fixed" : "adaptive", o->k,
               o->gate == 0 ? "off" : o->gate > 0 ? "on" : "as the decode default");
    else
        printf("Drafters run with the decode defaults (adaptive K up to %d, hit-rate gate on). ", o->k);
    if (o->temp > 0) {
        printf("Sampling at temperature %g, seeds", o->temp);
        for (int i = 0; i < o->n_seeds; i++) printf("%s %llu", i ? "," : "", (unsigned long long)o->seeds[i]);
        printf(" (one per rep in turn): \"greedy\" columns are plain sampling with the rep's seed, and LOSSLESS "
               "counts speculative outputs byte-equal to plain sampling with the same seed. ");
    }
    printf("α = accepted / drafted; tok/fwd = generated tokens per target forward after prefill; loop = share of "
           "the plain output whose 8-gram ending there occurred earlier in prompt + output%s.\n\n",
           o->temp > 0 ? " (mean over reps)" : "");
    printf("| prompt | class | n_prompt | prefill tok/s | greedy tok/s | loop | drafter | spec tok/s | speedup | α | accepted/round | tok/fwd | LOSSLESS |\n");
    printf("|---|---|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---|\n");
    for (int i = 0; i < r->n_rows; i++) {
        const bench_prompt_row *row = &r->rows[i];
        int shown = 0;
        for (int d = 0; d < BENCH_N_DRAFTERS; d++) {
            const bench_mode_row *m = &row->mode[d];
            if (!m->present) continue;
            shown++;
            printf("| %s | %s | %d | %.1f | %.2f | %.2f | %s | %.2f | %.2f× | %.3f | %.2f | %.2f | %d/%d |\n",
                   row->p->name, row->p->cls, row->p->n_ids, row->prefill_tok_s, row->greedy_tok_s, row->loop_share,
                   BENCH_DRAFTER_NAMES[d], m->tok_s, m->speedup, m->alpha, m->acc_per_round,
                   m->tok_per_fwd, m->lossless_ok, m->lossless_n);
        }
        if (!shown) /* --drafters none: greedy only */
            printf("| %s | %s | %d | %.1f | %.2f | %.2f | – | | | | | | |\n", row->p->name, row->p->cls,
                   row->p->n_ids, row->prefill_tok_s, row->greedy_tok_s, row->loop_share);
    }
    printf("\n");
}

static void md_cv(const bench_env *e, const bench_results *r) {
    const bench_cv *cv = &r->cv;
    printf("## Verify cost c_v(S)\n\n");
    printf("S-token forward (all S logits rows) on a KV cache warmed with prompt `%s` (%d tokens), "
           "median of %d; c_v(S) = t(S) / t(1).\n\n", e->prompts[0].name, e->prompts[0].n_ids,
           e->o->reps < 5 ? 5 : e->o->reps);
    printf("| S |");
    for (int S = 1; S <= BENCH_MAX_S; S++) printf(" %d |", S);
    printf("\n|---|");
    for (int S = 1; S <= BENCH_MAX_S; S++) printf("---:|");
    printf("\n| ms |");
    for (int S = 1; S <= BENCH_MAX_S; S++) printf(" %.2f |", cv->ms[S]);
    printf("\n| c_v |");
    for (int S = 1; S <= BENCH_MAX_S; S++) printf(" %.2f |", cv->cv[S]);
    if (e->tm->hp.n_expert > 0) { /* the union of the window's experts, what its weight reads scale with */
        printf("\n| u(S) |");
        for (int S = 1; S <= BENCH_MAX_S; S++) printf(" %.1f |", cv->u[S]);
        printf("\n\nu(S): distinct experts the S-token forward ran per MoE layer (mean over layers), of %d; "
               "one token runs %d.", e->tm->hp.n_expert, e->tm->hp.n_expert_used);
    }
    printf("\n\n");
    printf("prefill: %.1f tok/s (median over prompts)\n\n", cv->prefill_tok_s);
    if (e->dm) printf("draft step: %.2f ms, r = draft step / target step = %.3f\n\n", cv->draft_ms1, cv->r);
    if (e->hm)
        printf("EAGLE-3 head step (fc + decoder layer + its lm head, per drafted token): %.3f ms, "
               "r = head step / target step = %.3f\n\n", cv->head_ms1, cv->r_head);
    else if (bench_head_name(e))
        printf("MTP head step (eh_proj + the MTP block + the target's lm head, per drafted token): %.3f ms, "
               "r = head step / target step = %.3f\n\n", cv->head_ms1, cv->r_head);
    printf("roofline: %.1f MB of weights per token / %.1f GB/s read bandwidth (STREAM-style, %d threads; "
           "triad %.1f GB/s) = %.2f ms floor per token; measured greedy decode %.2f ms/token "
           "(S=1 forward %.2f ms) = %.0f%% of the roofline\n\n",
           (double)cv->weight_bytes / 1e6, cv->bw.read_gbs, cv->bw.n_threads, cv->bw.triad_gbs,
           cv->floor_ms, cv->decode_ms, cv->ms[1], 100.0 * cv->floor_ms / cv->decode_ms);
}

static void md_ksweep(const bench_env *e, const bench_results *r) {
    printf("## K sweep (drafter: %s, prompt `%s`, fixed K, gate off)\n\n", r->sweep_drafter, e->prompts[0].name);
    printf("predicted = E(α,K) / (K·r + c_v(K+1)) with α fitted to the measured accepted/round "
           "(geometric model, ARCHITECTURE.md §2)%s; greedy %.2f tok/s.\n\n",
           e->dm ? "" : ", r = 0", r->sweep_greedy_tok_s);
    printf("| K | ms/token | accepted/round | α (fit) | c_v(K+1) | measured speedup | predicted | LOSSLESS |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (int i = 0; i < r->n_k; i++) {
        const bench_k_row *k = &r->ksweep[i];
        printf("| %d | %.2f | %.2f | %.3f | %.2f | %.2f× | %.2f× | %d/%d |\n", k->k, k->ms_per_tok,
               k->acc_per_round, k->alpha_geo, r->cv.cv[k->k + 1], k->speedup, k->predicted,
               k->lossless_ok, k->lossless_n);
    }
    printf("\n");
}

static void md_oracle(const bench_env *e, const bench_results *r) {
    const int k = bench_oracle_k(e->o);
    printf("## Synthetic acceptance (oracle drafter, %s, prompt `%s`)\n\n",
           e->o->oracle_gate ? "adaptive K, gate on" : "fixed K, gate off", e->prompts[0].name);
    printf("K = %d%s.\n\n", k, e->o->oracle_gate ? " at most" : "");
    printf("The drafter proposes the target's own greedy continuation with each token corrupted with "
           "probability 1 − α; predicted = E(α,K) / c_v(K+1) (free drafts). greedy %.2f tok/s.\n\n",
           r->oracle_greedy_tok_s);
    printf("With a draft model, an EAGLE-3 head or the target's MTP block, the same drafts also pay that drafter's real time "
           "(it runs, its tokens are replaced by the oracle's): the speedup columns compare them at the same α. "
           "LOSSLESS counts the free oracle's runs; any costed run that differs sets it to 0.\n\n");
    const char *head = bench_head_name(e);
    printf("| α | α (fit) | accepted/round | spec tok/s | measured speedup | predicted | at draft-model cost | "
           "at %s head cost | LOSSLESS |\n", head && !strcmp(head, "mtp") ? "MTP" : "EAGLE-3");
    printf("|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (int i = 0; i < r->n_oracle; i++) {
        const bench_oracle_row *a = &r->oracle[i];
        char sd[16] = "–", sh[16] = "–";
        if (isfinite(a->speedup_draft)) snprintf(sd, sizeof sd, "%.2f×", a->speedup_draft);
        if (isfinite(a->speedup_head)) snprintf(sh, sizeof sh, "%.2f×", a->speedup_head);
        printf("| %.2f | %.3f | %.2f | %.2f | %.2f× | %.2f× | %s | %s | %d/%d |\n", a->alpha, a->measured_alpha,
               a->acc_per_round, a->tok_s, a->speedup, a->predicted, sd, sh, a->lossless_ok, a->lossless_n);
    }
    printf("\n");
}

static void md_rollback(const bench_env *e, const bench_results *r) {
    const int k = bench_oracle_k(e->o);
    printf("## Hybrid rollback (oracle drafter, K = %d, prompt `%s`)\n\n", k, e->prompts[0].name);
    printf("Each discipline rolls the recurrent state back past rejected drafts (ARCHITECTURE.md §4); greedy %.2f tok/s "
           "(median; each discipline's runs follow a greedy run of their own, the order rotating rep by rep, and "
           "speedup = the median over reps of tok/s over that greedy). "
           "forwards/round counts a redecode's second forward, window's re-anchors and the plain steps its full tail forces (window: S = K + 1, K cut to fit); rollback ms and MB moved are per verify round "
           "(snapshots, restores, replays, checkpoint copies); MB held = snapshot + capture ring (%d positions).\n\n",
           r->rb_greedy_tok_s, BENCH_MAX_K + 1);
    printf("| discipline | α | accepted/round | forwards/round | rollback ms/round | MB moved/round | MB held |"
           " spec tok/s | speedup | LOSSLESS |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (int i = 0; i < r->n_rb; i++) {
        const bench_rb_row *a = &r->rb[i];
        printf("| %s | %.2f | %.2f | %.3f | %.3f | %.1f | %.1f | %.2f | %.2f× | %d/%d |\n", a->disc, a->alpha,
               a->acc_per_round, a->fwd_per_round, a->rb_ms_per_round, a->mb_moved_per_round, a->mb_held, a->tok_s,
               a->speedup, a->lossless_ok, a->lossless_n);
    }
    printf("\n");
}

static void md_window(const bench_env *e, const bench_results *r) {
    printf("## Window discipline S/K sweep (oracle drafter, α = %.2f, fixed K, prompt `%s`)\n\n", e->o->window_alpha,
           e->prompts[0].name);
    printf("Every round feeds exactly S tokens: the committed tail since the anchor, a0, up to K drafts (cut to fit "
           "S), pad (ARCHITECTURE.md §4). forwards/round counts the re-anchors and the plain steps a full tail forces; "
           "rollback ms/round = snapshots, restores and re-anchors. greedy %.2f tok/s (%.2f ms/token; median; each S "
           "follows a greedy run of its own, speedup = the median over reps of tok/s over that greedy).\n\n",
           r->win_greedy_tok_s, 1e3 / r->win_greedy_tok_s);
    printf("| S | K | ms/token | accepted/round | forwards/round | rollback ms/round | speedup | LOSSLESS |\n");
    printf("|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (int i = 0; i < r->n_win; i++) {
        const bench_win_row *w = &r->win[i];
        printf("| %d | %d | %.2f | %.2f | %.3f | %.3f | %.2f× | %d/%d |\n", w->S, w->k, w->ms_per_tok, w->acc_per_round,
               w->fwd_per_round, w->rb_ms_per_round, w->speedup, w->lossless_ok, w->lossless_n);
    }
    printf("\n");
}

static void md_gate(const bench_env *e, const bench_results *r) {
    printf("## Gated speculation at α ≈ 0 (decode defaults: adaptive K up to %d, gate on; prompt `%s`)\n\n", e->o->k,
           e->prompts[0].name);
    printf("Per run means of verify rounds, drafted tokens, shadow probes, plain steps with the gate closed, the "
           "target's rollback time, the tokens a hybrid draft model re-decoded to roll back, the time spent in the "
           "drafter (proposals and probes) and in verify rounds (rollback included); step ms: the mean plain step. "
           "Greedy and the drafters run in a rotating order each rep; speedup = the median over reps of tok/s over "
           "the same rep's greedy. In-run overhead = decode time over what the run's target forwards take at its own "
           "plain-step pace, less 1 (each forward commits one token at α = 0): the drafter's cost, immune to the "
           "machine's speed changing between runs. Greedy %.2f tok/s, %.3f ms per step.\n\n",
           r->gate_greedy_tok_s, r->gate_greedy_step_ms);
    printf("| drafter | spec tok/s | speedup | α | rounds | drafted | probes | gate-closed steps | rollback ms |"
           " draft re-decoded | drafter ms | rounds ms | step ms | in-run overhead | LOSSLESS |\n");
    printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n");
    for (int i = 0; i < BENCH_N_GATE; i++) {
        const bench_gate_row *g = &r->gate[i];
        if (!g->present) continue;
        printf("| %s | %.2f | %.3f× | %.3f | %.1f | %.1f | %.1f | %.1f | %.2f | %.1f | %.1f | %.1f | %.3f | %+.2f%% |"
               " %d/%d |\n",
               g->drafter, g->tok_s, g->speedup, g->alpha, g->rounds, g->drafted, g->probes, g->closed_steps, g->rb_ms,
               g->draft_redecoded, g->draft_ms, g->rounds_ms, g->step_ms, 100 * g->overhead, g->lossless_ok,
               g->lossless_n);
    }
    printf("\n");
}

/* One ab cell: its speedup, or "–" when there is no figure. */
static void ab_speedup(char *buf, size_t n, double x) {
    if (isfinite(x)) snprintf(buf, n, "%.2f×", x);
    else snprintf(buf, n, "–");
}

static void md_ab_row(const bench_env *e, const bench_results *r, int d) {
    const bench_ab_row *a = &r->ab[d];
    const int na = e->o->n_alphas;
    const bench_ab_cell *dr = &a->cell[na];
    char buf[32];
    printf("| %c | `%s` | %.1f | %.3f | %.3f |", "AB"[d], a->file, a->weight_mb, a->step_ms, a->r);
    for (int c = 0; c <= na; c++) ab_speedup(buf, sizeof buf, a->cell[c].speedup), printf(" %s |", buf);
    printf(" %.3f | %.2f |", dr->alpha, dr->acc_per_round);
    for (int c = 0; c <= na; c++) printf("%s%d/%d", c ? " " : " ", a->cell[c].lossless_ok, a->cell[c].lossless_n);
    printf(" |\n");
}

static void md_ab(const bench_env *e, const bench_results *r) {
    const int na = e->o->n_alphas;
    printf("## Draft A/B (K = %d fixed, gate off; prompt `%s`)\n\n", bench_oracle_k(e->o), e->prompts[0].name);
    printf("Two draft models on one target, run in one process: step ms = median S = 1 forward on a warmed KV cache, "
           "r = draft step / target step (paired per round; target step %.3f ms). At each α the oracle's drafts pay "
           "that draft model's real time (so only r differs between A and B); \"draft\" is the draft model itself, "
           "its α = accepted / drafted. Greedy and every cell run once per rep in a rotating order; speedup = median "
           "over reps of tok/s over the same rep's greedy (%.2f tok/s); B/A = median over reps of B's tok/s over A's "
           "in the same cell. LOSSLESS: runs whose tokens equal greedy's, one per cell in column order.\n\n",
           r->ab_target_ms, r->ab_greedy_tok_s);
    printf("| draft | file | weights MB | step ms | r |");
    for (int c = 0; c < na; c++) printf(" α=%.2f |", e->o->alphas[c]);
    printf(" draft | draft α | draft accepted/round | LOSSLESS |\n|---|---|---:|---:|---:|");
    for (int c = 0; c <= na; c++) printf("---:|");
    printf("---:|---:|---|\n");
    for (int d = 0; d < BENCH_N_AB; d++) md_ab_row(e, r, d);
    printf("| B/A | | %.2f | %.2f | |", r->ab[1].weight_mb / r->ab[0].weight_mb, r->ab[1].step_ms / r->ab[0].step_ms);
    for (int c = 0; c <= na; c++) printf(" %.3f |", r->ab_b_over_a[c]);
    printf(" | | |\n\n");
}

void bench_print_markdown(const bench_env *e, const bench_results *r) {
    md_header(e);
    if (r->n_rows) md_classes(e, r);
    if (r->cv.present) md_cv(e, r);
    if (r->n_k) md_ksweep(e, r);
    if (r->n_oracle) md_oracle(e, r);
    if (r->n_rb) md_rollback(e, r);
    if (r->n_win) md_window(e, r);
    if (r->gate_present) md_gate(e, r);
    if (r->ab_present) md_ab(e, r);
    bench_experts_print(e, r);
    fflush(stdout);
}

/* ---- JSON ---- */
static json_t *num(double x) { return isfinite(x) ? json_real(x) : json_null(); }

static json_t *json_classes(const bench_results *r) {
    json_t *arr = json_array();
    for (int i = 0; i < r->n_rows; i++) {
        const bench_prompt_row *row = &r->rows[i];
        json_t *modes = json_object();
        for (int d = 0; d < BENCH_N_DRAFTERS; d++) {
            const bench_mode_row *m = &row->mode[d];
            if (!m->present) continue;
            json_object_set_new(modes, BENCH_DRAFTER_NAMES[d],
                json_pack("{s:o,s:o,s:o,s:o,s:o,s:i,s:i}", "spec_tok_s", num(m->tok_s),
                          "speedup", num(m->speedup), "alpha", num(m->alpha),
                          "accepted_per_round", num(m->acc_per_round), "tokens_per_target_forward",
                          num(m->tok_per_fwd), "lossless_ok", m->lossless_ok, "lossless_n", m->lossless_n));
        }
        json_array_append_new(arr, json_pack("{s:s,s:s,s:i,s:o,s:o,s:o,s:o}", "prompt", row->p->name,
                                             "class", row->p->cls, "n_prompt", row->p->n_ids,
                                             "prefill_tok_s", num(row->prefill_tok_s),
                                             "greedy_tok_s", num(row->greedy_tok_s),
                                             "loop_share", num(row->loop_share), "drafters", modes));
    }
    return arr;
}

static json_t *json_cv(const bench_results *r) {
    const bench_cv *cv = &r->cv;
    json_t *curve = json_array();
    for (int S = 1; S <= BENCH_MAX_S; S++)
        json_array_append_new(curve, json_pack("{s:i,s:o,s:o,s:o}", "S", S, "ms", num(cv->ms[S]), "c_v", num(cv->cv[S]),
                                               "u", num(cv->u[S])));
    return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:{s:I,s:o,s:o,s:o,s:o,s:o,s:i}}", "curve", curve,
                     "prefill_tok_s", num(cv->prefill_tok_s), "draft_step_ms", num(cv->draft_ms1),
                     "head_step_ms", num(cv->head_ms1), "r_head", num(cv->r_head), "r", num(cv->r), "roofline", "weight_bytes", (json_int_t)cv->weight_bytes,
                     "read_gbs", num(cv->bw.read_gbs), "triad_gbs", num(cv->bw.triad_gbs),
                     "floor_ms", num(cv->floor_ms), "decode_ms", num(cv->decode_ms),
                     "fraction", num(cv->floor_ms / cv->decode_ms), "threads", cv->bw.n_threads);
}

static json_t *json_ksweep(const bench_results *r) {
    json_t *arr = json_array();
    for (int i = 0; i < r->n_k; i++) {
        const bench_k_row *k = &r->ksweep[i];
        json_array_append_new(arr, json_pack("{s:i,s:o,s:o,s:o,s:o,s:o,s:i,s:i}", "K", k->k,
                                             "ms_per_token", num(k->ms_per_tok), "accepted_per_round",
                                             num(k->acc_per_round), "alpha_fit", num(k->alpha_geo),
                                             "measured_speedup", num(k->speedup), "predicted_speedup",
                                             num(k->predicted), "lossless_ok", k->lossless_ok,
                                             "lossless_n", k->lossless_n));
    }
    return json_pack("{s:s,s:o,s:o}", "drafter", r->sweep_drafter, "greedy_tok_s",
                     num(r->sweep_greedy_tok_s), "rows", arr);
}

static json_t *json_oracle(const bench_env *e, const bench_results *r) {
    json_t *arr = json_array();
    for (int i = 0; i < r->n_oracle; i++) {
        const bench_oracle_row *a = &r->oracle[i];
        json_array_append_new(arr, json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:i,s:i}", "alpha", num(a->alpha),
                                             "alpha_fit", num(a->measured_alpha), "accepted_per_round",
                                             num(a->acc_per_round), "spec_tok_s", num(a->tok_s),
                                             "measured_speedup", num(a->speedup), "predicted_speedup",
                                             num(a->predicted), "speedup_at_draft_cost", num(a->speedup_draft),
                                             "speedup_at_head_cost", num(a->speedup_head), "lossless_ok", a->lossless_ok,
                                             "lossless_n", a->lossless_n));
    }
    const int k = bench_oracle_k(e->o);
    return json_pack("{s:s,s:i,s:o,s:o}", "prompt", e->prompts[0].name, "K", k, "greedy_tok_s",
                     num(r->oracle_greedy_tok_s), "rows", arr);
}

static json_t *json_window(const bench_env *e, const bench_results *r) {
    json_t *arr = json_array();
    for (int i = 0; i < r->n_win; i++) {
        const bench_win_row *w = &r->win[i];
        json_array_append_new(arr, json_pack("{s:i,s:i,s:o,s:o,s:o,s:o,s:o,s:o,s:i,s:i}", "S", w->S, "K", w->k,
                                             "ms_per_token", num(w->ms_per_tok), "tok_s", num(w->tok_s),
                                             "accepted_per_round", num(w->acc_per_round), "forwards_per_round",
                                             num(w->fwd_per_round), "rollback_ms_per_round", num(w->rb_ms_per_round),
                                             "speedup", num(w->speedup), "lossless_ok", w->lossless_ok,
                                             "lossless_n", w->lossless_n));
    }
    return json_pack("{s:s,s:o,s:o,s:o}", "prompt", e->prompts[0].name, "alpha", num(e->o->window_alpha),
                     "greedy_tok_s", num(r->win_greedy_tok_s), "rows", arr);
}

static json_t *json_gate(const bench_env *e, const bench_results *r) {
    json_t *arr = json_array();
    for (int i = 0; i < BENCH_N_GATE; i++) {
        const bench_gate_row *g = &r->gate[i];
        if (!g->present) continue;
        json_array_append_new(arr, json_pack("{s:s,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:i,s:i}", "drafter",
                                             g->drafter, "tok_s", num(g->tok_s), "speedup", num(g->speedup), "alpha",
                                             num(g->alpha), "rounds", num(g->rounds), "drafted", num(g->drafted),
                                             "probes", num(g->probes), "gate_closed_steps", num(g->closed_steps),
                                             "rollback_ms", num(g->rb_ms), "draft_redecoded", num(g->draft_redecoded),
                                             "drafter_ms", num(g->draft_ms), "rounds_ms", num(g->rounds_ms),
                                             "step_ms", num(g->step_ms), "overhead", num(g->overhead), "lossless_ok", g->lossless_ok, "lossless_n",
                                             g->lossless_n));
    }
    return json_pack("{s:s,s:i,s:o,s:o,s:o}", "prompt", e->prompts[0].name, "K", e->o->k, "greedy_tok_s",
                     num(r->gate_greedy_tok_s), "greedy_step_ms", num(r->gate_greedy_step_ms), "rows", arr);
}

/* An oracle cell (its synthetic α first) or, alpha NAN, the draft itself. */
static json_t *json_ab_cell(const bench_ab_cell *c, double alpha) {
    json_t *o = isfinite(alpha) ? json_pack("{s:f}", "alpha", alpha) : json_object();
    json_object_set_new(o, "tok_s", num(c->tok_s));
    json_object_set_new(o, "speedup", num(c->speedup));
    json_object_set_new(o, "alpha_measured", num(c->alpha));
    json_object_set_new(o, "accepted_per_round", num(c->acc_per_round));
    json_object_set_new(o, "lossless_ok", json_integer(c->lossless_ok));
    json_object_set_new(o, "lossless_n", json_integer(c->lossless_n));
    return o;
}

/* rows: A then B, each with its oracle cells (one per --alphas value) and the draft itself. */
static json_t *json_ab(const bench_env *e, const bench_results *r) {
    const int na = e->o->n_alphas;
    json_t *rows = json_array(), *ratio = json_array();
    for (int d = 0; d < BENCH_N_AB; d++) {
        const bench_ab_row *a = &r->ab[d];
        json_t *oracle = json_array();
        for (int c = 0; c < na; c++) json_array_append_new(oracle, json_ab_cell(&a->cell[c], e->o->alphas[c]));
        json_array_append_new(rows, json_pack("{s:s,s:s,s:o,s:o,s:o,s:o,s:o}", "draft", d ? "B" : "A", "file", a->file,
                                              "weight_mb", num(a->weight_mb), "step_ms", num(a->step_ms), "r", num(a->r),
                                              "oracle", oracle, "draft_itself", json_ab_cell(&a->cell[na], NAN)));
    }
    for (int c = 0; c < na; c++) json_array_append_new(ratio, num(r->ab_b_over_a[c]));
    return json_pack("{s:s,s:i,s:o,s:o,s:o,s:{s:o,s:o}}", "prompt", e->prompts[0].name, "K", bench_oracle_k(e->o),
                     "greedy_tok_s", num(r->ab_greedy_tok_s), "target_step_ms", num(r->ab_target_ms), "rows", rows,
                     "b_over_a_tok_s", "oracle", ratio, "draft_itself", num(r->ab_b_over_a[na]));
}

sd_status bench_write_json(const bench_env *e, const bench_results *r, const char *path, sd_err *err) {
    const bench_opts *o = e->o;
    json_t *root = json_pack("{s:s,s:s?,s:s?,s:s,s:i,s:i,s:i,s:i,s:I,s:I}", "target", o->target, "draft", o->draft,
                             "draft_b", o->draft_b,
                             "backend", sd_matmul_backend(), "threads", o->threads, "n_predict",
                             o->n_predict, "reps", o->reps, "k", o->k, "target_weight_bytes",
                             (json_int_t)sd_model_weight_bytes(e->tm), "draft_weight_bytes",
                             (json_int_t)(e->dm ? sd_model_weight_bytes(e->dm) : 0));
    if (!root) return sd_err_set(err, SD_ERR_NOMEM, "json: out of memory");
    if (r->n_rows) {
        json_object_set_new(root, "classes", json_classes(r));
        json_t *seeds = json_array();
        for (int i = 0; o->temp > 0 && i < o->n_seeds; i++) json_array_append_new(seeds, json_integer((json_int_t)o->seeds[i]));
        json_object_set_new(root, "temp", json_real(o->temp));
        json_object_set_new(root, "seeds", seeds);
    }
    if (r->cv.present) json_object_set_new(root, "cv", json_cv(r));
    if (r->n_k) json_object_set_new(root, "ksweep", json_ksweep(r));
    if (r->n_oracle) json_object_set_new(root, "oracle", json_oracle(e, r));
    if (r->n_rb) {
        json_t *arr = json_array();
        for (int i = 0; i < r->n_rb; i++) {
            const bench_rb_row *a = &r->rb[i];
            json_array_append_new(arr, json_pack("{s:s, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:o, s:i, s:i}",
                "discipline", a->disc, "alpha", num(a->alpha), "accepted_per_round", num(a->acc_per_round),
                "forwards_per_round", num(a->fwd_per_round), "rollback_ms_per_round", num(a->rb_ms_per_round),
                "mb_moved_per_round", num(a->mb_moved_per_round), "mb_held", num(a->mb_held), "tok_s", num(a->tok_s),
                "speedup", num(a->speedup), "greedy_tok_s", num(r->rb_greedy_tok_s), "lossless_ok", a->lossless_ok,
                "lossless_n", a->lossless_n));
        }
        json_object_set_new(root, "rollback", arr);
    }
    if (r->n_win) json_object_set_new(root, "window", json_window(e, r));
    if (r->gate_present) json_object_set_new(root, "gate", json_gate(e, r));
    if (r->ab_present) json_object_set_new(root, "ab", json_ab(e, r));
    int rc = json_dump_file(root, path, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    json_decref(root);
    return rc ? sd_err_set(err, SD_ERR_IO, "%s: cannot write JSON", path) : SD_OK;
}
