/* `specdec bench`: the measurement tables of ARCHITECTURE.md §8. Shared between
 * cmd_bench.c (options, order of work), bench_prompts.c (prompt files),
 * bench_run.c (timed generations and forwards), bench_tables.c (the four
 * measurements), bench_rollback.c / bench_gate.c / bench_ab.c (one table
 * each), bench_report.c (markdown + JSON) and bench_svg.c (plots).
 *
 * Timing definitions (the same in bench/vs-llamacpp, so ratios are fair):
 *   decode tok/s  = (n − 1) / (time from the 1st generated token to the n-th):
 *                   the prefill forward that yields the first token is not in it;
 *   prefill tok/s = n_prompt / time of the prefill forwards;
 *   c_v(S)        = median time of an S-token sd_forward (all S logits rows)
 *                   on a warmed KV cache / the same for S = 1.
 * Speed figures are medians of R runs; greedy and speculative runs alternate
 * within each repetition so machine noise hits both alike. */
#ifndef SD_CLI_BENCH_H
#define SD_CLI_BENCH_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "decode/compose.h"
#include "decode/spec.h"
#include "model/model.h"
#include "numerics/membw.h"

#define BENCH_MAX_S 17      /* c_v(S) for S = 1..17 */
#define BENCH_MAX_K 16      /* K sweep 1..16 */
#define BENCH_MAX_ALPHAS 8
#define BENCH_N_DRAFTERS 5  /* ngram, draft, auto, eagle3, mtp */
#define BENCH_MAX_WINDOWS 4 /* S values of the window sweep */
#define BENCH_MAX_KS 8      /* K values of the window sweep */
#define BENCH_N_GATE 4      /* gate table drafters: oracle(α=0), the same at the draft's cost, draft, MTP */
#define BENCH_N_AB 2        /* the ab table's drafts: A (-md) and B (--draft-b) */
#define BENCH_MAX_SEEDS 16     /* --seeds of the class table at --temp > 0 */
#define BENCH_MAX_MOE_LAYERS 64 /* the experts table counts at most this many MoE layers */

typedef struct bench_opts {
    const char *target, *draft, *prompts_dir, *json, *plot;
    const char *head;  /* an EAGLE-3 head (-md FILE of architecture eagle3), or NULL */
    const char *draft_b; /* the ab table's draft B (--draft-b), or NULL */
    int n_predict, reps, threads, k;
    uint32_t kv_type_k, kv_type_v; /* the target's KV cache types (ggml ids; --cache-type-k / -v, default f16) */
    int membw_mb;   /* bandwidth probe array size, MiB */
    int gate;       /* class table: the hit-rate gate's G (0 = never closes), -1 = the decode default */
    bool fixed_k;   /* class table: every round drafts k (no adaptive K) */
    bool no_repack; /* every model read from its mapped file, no repacked copy (--no-repack) */
    /* class table: temperature (0 = greedy) and the sampling seeds; rep r
     * samples with seeds[r % n_seeds], every run of that rep (plain and each
     * drafter) with the same seed, so each speculative output must equal the
     * plain output of its seed byte for byte */
    double temp;
    uint64_t seeds[BENCH_MAX_SEEDS];
    int n_seeds;
    bool t_classes, t_cv, t_ksweep, t_oracle, t_rollback, t_window, t_gate, t_ab, t_experts;
    bool oracle_gate; /* oracle table: the decode defaults (adaptive K up to k, gate on) instead of a fixed K */
    bool drafters[BENCH_N_DRAFTERS]; /* which of BENCH_DRAFTER_NAMES the class table runs */
    double alphas[BENCH_MAX_ALPHAS];
    int n_alphas;
    /* the window table: S values, K values (pairs with K < S run) and the oracle's α */
    int windows[BENCH_MAX_WINDOWS], n_windows;
    int ks[BENCH_MAX_KS], n_ks;
    double window_alpha;
    uint64_t seed;
} bench_opts;

typedef struct bench_prompt {
    char name[128];
    char cls[32];    /* code, rag, free, repeat, ... */
    int32_t *ids;    /* owned */
    int32_t n_ids;
} bench_prompt;

/* Everything loaded once: models, contexts, the lms over them, prompts. */
typedef struct bench_env {
    const bench_opts *o;
    sd_model *tm, *dm;   /* target, draft (NULL without -md) */
    sd_model *hm;        /* EAGLE-3 head (NULL without one) */
    sd_context *tc, *dc;
    sd_model_lm tl, dl;  /* the lms over tc / dc (decode/compose.h); .hybrid: a recurrent model's discipline */
    const char *dm_path; /* the file dm came from (-md given twice: either one) */
    sd_model *bm;        /* the ab table's draft B (--draft-b), NULL without it; its context, lm, hybrid lm: */
    sd_context *bc;
    sd_model_lm bl;
    bench_prompt *prompts;
    int n_prompts;
    int32_t *scratch_ids;  /* [n_predict], generation output */
    float *logits;         /* [BENCH_MAX_S][n_vocab] for timed forwards */
} bench_env;

/* One timed generation. */
typedef struct bench_run {
    double tok_s, prefill_tok_s;
    sd_spec_stats st;
    int32_t n;
    bool same_as_ref;      /* output == the greedy reference given */
} bench_run;

/* ---- results ---- */
typedef struct bench_mode_row {
    bool present;
    double tok_s, speedup, alpha, acc_per_round, tok_per_fwd;
    int lossless_ok, lossless_n;
} bench_mode_row;

typedef struct bench_prompt_row {
    const bench_prompt *p;
    double greedy_tok_s, prefill_tok_s;
    double loop_share; /* of the plain output (mean over reps at --temp > 0): tokens whose 8-gram (ending there)
                          occurred before in prompt + output */
    bench_mode_row mode[BENCH_N_DRAFTERS];
} bench_prompt_row;

typedef struct bench_cv {
    bool present;
    double ms[BENCH_MAX_S + 1];  /* [S], S = 1..17 */
    double cv[BENCH_MAX_S + 1];
    double u[BENCH_MAX_S + 1];   /* MoE target: distinct experts the S-token forward ran, mean over its MoE
                                    layers (u(S), ARCHITECTURE.md §2); NAN for a dense target */
    double draft_ms1;            /* draft model S=1 forward (0 without -md) */
    double r;                    /* draft_ms1 / ms[1] */
    double head_ms1;             /* head step (bench_head_name): EAGLE-3: fc of one row + the decoder layer + its lm head;
                                    MTP: eh_proj + the block + the target's lm head (0 without a head) */
    double r_head;               /* head_ms1 / ms[1] */
    double prefill_tok_s;        /* median over prompts */
    sd_membw bw;
    uint64_t weight_bytes;
    double floor_ms;             /* weight_bytes / read bandwidth */
    double decode_ms;            /* 1 / median greedy tok/s, or ms[1] */
} bench_cv;

typedef struct bench_k_row {
    int k;
    double ms_per_tok, speedup, alpha_geo, acc_per_round, predicted;
    int lossless_ok, lossless_n;
} bench_k_row;

typedef struct bench_oracle_row {
    double alpha, measured_alpha, acc_per_round, tok_s, speedup, predicted;
    /* the same α paying a real drafter's time (sd_drafter_oracle_costed_init): NAN when absent */
    double speedup_draft, speedup_head;
    int lossless_ok, lossless_n;
} bench_oracle_row;

/* One discipline at one synthetic α (the rollback table, hybrid targets). */
typedef struct bench_rb_row {
    const char *disc;
    double alpha, tok_s, speedup, acc_per_round;
    double fwd_per_round;      /* target forwards per verify round, re-decodes included */
    double rb_ms_per_round;    /* time in rollbacks and their snapshots, per round */
    double mb_moved_per_round; /* recurrent-state bytes copied per round */
    double mb_held;            /* snapshot + capture ring */
    int lossless_ok, lossless_n;
} bench_rb_row;

/* One (S, K) of the window discipline's sweep (hybrid targets). */
typedef struct bench_win_row {
    int S, k;
    double ms_per_tok, tok_s, speedup, acc_per_round;
    double fwd_per_round;     /* target forwards per verify round: re-anchors and forced plain steps included */
    double rb_ms_per_round;   /* snapshots, restores and re-anchor forwards, per round */
    int lossless_ok, lossless_n;
} bench_win_row;

/* One drafter of the gate table: speculation with the decode defaults
 * (adaptive K, hit-rate gate on) where drafts are (almost) never accepted. */
typedef struct bench_gate_row {
    const char *drafter;
    bool present;
    double tok_s, speedup, alpha;                 /* speedup: median over reps of tok/s over the rep's greedy */
    double rounds, drafted, probes, closed_steps; /* per run (means) */
    double rb_ms;                                 /* target rollback ms per run (mean) */
    double draft_redecoded;                       /* tokens a hybrid draft model re-decoded per run (mean) */
    double draft_ms, rounds_ms;                   /* per run (means): in the drafter, in verify rounds */
    double step_ms;                               /* per plain step (mean over all runs' steps) */
    double overhead; /* decode time over the runs' forwards at their own plain-step pace, less 1 */
    int lossless_ok, lossless_n;
} bench_gate_row;

/* One draft of the ab table (bench_ab.c). Cells: the costed oracle at each
 * --alphas value, then the draft model itself ([n_alphas]). Speedups are
 * medians over reps of tok/s over the same rep's greedy. */
typedef struct bench_ab_cell {
    double tok_s, speedup;
    double alpha, acc_per_round; /* measured: accepted / drafted, accepted per round */
    int lossless_ok, lossless_n;
} bench_ab_cell;

typedef struct bench_ab_row {
    const char *file;
    double weight_mb;
    double step_ms; /* median S = 1 forward on the warmed draft */
    double r;       /* median over rounds of step_ms / the same round's target step */
    bench_ab_cell cell[BENCH_MAX_ALPHAS + 1];
} bench_ab_row;

/* The experts table (bench_experts.c): per window size S, the distinct
 * experts per MoE layer u(S) on real text and the bytes they make a window read. */
typedef struct bench_experts_row {
    bool present;
    int n_layers, n_windows;
    double u[BENCH_MAX_S + 1][BENCH_MAX_MOE_LAYERS]; /* [S][MoE layer]: mean over windows */
    double u_mean[BENCH_MAX_S + 1], u_random[BENCH_MAX_S + 1];
    double expert_bytes, rest_bytes;                 /* one expert (gate + up + down); the rest of one step */
    double bytes[BENCH_MAX_S + 1], cv_bytes[BENCH_MAX_S + 1];
} bench_experts_row;

typedef struct bench_results {
    bench_prompt_row *rows;  /* [n_prompts] */
    int n_rows;
    bench_cv cv;
    const char *sweep_drafter; /* "draft" or "oracle(α=0.7)" */
    bench_k_row ksweep[BENCH_MAX_K + 1];
    int n_k;
    double sweep_greedy_tok_s;
    bench_oracle_row oracle[BENCH_MAX_ALPHAS];
    int n_oracle;
    double oracle_greedy_tok_s;
    bench_rb_row rb[SD_ROLLBACK_N * BENCH_MAX_ALPHAS];
    int n_rb;
    double rb_greedy_tok_s;
    bench_win_row win[BENCH_MAX_WINDOWS * BENCH_MAX_KS];
    int n_win;
    double win_greedy_tok_s;
    bench_gate_row gate[BENCH_N_GATE];
    double gate_greedy_tok_s, gate_greedy_step_ms; /* step: mean over all greedy steps */
    bool gate_present;
    bench_ab_row ab[BENCH_N_AB];
    double ab_b_over_a[BENCH_MAX_ALPHAS + 1]; /* per cell: median over reps of B's tok/s over A's */
    double ab_greedy_tok_s, ab_target_ms;
    bool ab_present;
    bench_experts_row experts;
} bench_results;

extern const char *const BENCH_DRAFTER_NAMES[BENCH_N_DRAFTERS];

/* bench_prompts.c: reads DIR/ *.txt (sorted by name). The class is the first
 * line "class: NAME" (not part of the prompt), else the file name up to the
 * first '-', '_' or '.'. Tokenizes with the target's tokenizer (BOS as the
 * model asks, special-token texts not parsed). */
sd_status bench_prompts_load(bench_env *e, const char *dir, sd_err *err);
void bench_prompts_free(bench_env *e);

/* bench_run.c */
double bench_median(double *xs, int n);  /* sorts xs */
/* The K of the oracle and rollback tables: o->k cut so that K + 1 stays on
 * the timed c_v curve (BENCH_MAX_S). */
int bench_oracle_k(const bench_opts *o);
/* Decode parameters for bench runs: budget n_predict, no stop at EOG (every
 * run makes exactly n tokens), K = k fixed or adaptive, gate on or off. */
sd_spec_params bench_params(const bench_opts *o, int k, bool adaptive, bool gate);
/* p at the class table's --temp with the seed of rep (bench_opts.seeds);
 * p unchanged at temp 0. */
sd_spec_params bench_sampled(const bench_opts *o, sd_spec_params p, int rep);
/* Runs one generation from an empty KV cache; ref (n_ref tokens, may be NULL)
 * is compared with the output. The output stays in e->scratch_ids. */
sd_status bench_generate(bench_env *e, const bench_prompt *p, sd_drafter *dr,
                         const sd_spec_params *sp, const int32_t *ref, int32_t n_ref,
                         bench_run *out, sd_err *err);
/* A plain greedy run of p; the first (*ref NULL) keeps its output as the
 * reference (*ref allocated, caller frees), later ones are compared with it. */
sd_status bench_greedy(bench_env *e, const bench_prompt *p, const sd_spec_params *plain, int32_t **ref,
                       int32_t *n_ref, bench_run *run, sd_err *err);
/* A draft-model drafter (greedy) over draft A (-md, b false) or B
 * (--draft-b, b true), its KV cache emptied. SD_ERR_ARG without that model. */
sd_status bench_draft_model_make(bench_env *e, bool b, sd_drafter *d, sd_err *err);
/* The drafter of the kind named name (decode/compose.h sd_drafter_kind_name:
 * "ngram", "draft", "eagle3", "mtp", "auto") over the env, built by
 * sd_compose_drafter: its errors for a kind the env cannot serve. */
sd_status bench_drafter_make(bench_env *e, const char *name, sd_drafter *d, sd_err *err);
/* The head the costed oracle column and the head step time use: "eagle3"
 * (a head given with -md), else "mtp" (the target's MTP block), else NULL. */
const char *bench_head_name(const bench_env *e);
/* Empties c and fills its KV cache with the first prompt (the state a
 * verify forward meets after prefill). */
sd_status bench_warm(bench_env *e, sd_context *c, sd_err *err);
/* Median ms of an S-token forward on the warmed c, rolled back after each
 * of reps timings. */
sd_status bench_forward_ms(bench_env *e, sd_context *c, int S, int reps, double *ms, sd_err *err);
/* Geometric-model α whose E(α,K) − 1 equals acc_per_round (bisection). */
double bench_alpha_geo(double acc_per_round, int k);
/* ARCHITECTURE.md §2: E(α,K) = (1 − α^(K+1)) / (1 − α). */
double bench_expected_tokens(double alpha, int k);

/* bench_tables.c: the four measurements. */
sd_status bench_classes(bench_env *e, bench_results *r, sd_err *err);
sd_status bench_cv_measure(bench_env *e, bench_results *r, sd_err *err);
sd_status bench_ksweep(bench_env *e, bench_results *r, sd_err *err);
sd_status bench_oracle(bench_env *e, bench_results *r, sd_err *err);
/* bench_rollback.c: a hybrid target's rollback disciplines side by side at
 * the synthetic α's (oracle drafter, K = -k): speedup, forwards per round,
 * rollback ms and bytes per round. Nothing for a dense target. */
sd_status bench_rollback(bench_env *e, bench_results *r, sd_err *err);
/* bench_rollback.c: the window discipline's S/K sweep (ARCHITECTURE.md §4, §8): for
 * each S of o->windows and K of o->ks with K < S, the oracle at
 * o->window_alpha with fixed K, alternated rep by rep with greedy: ms per
 * token, forwards per round, LOSSLESS. Nothing for a dense target. */
sd_status bench_window(bench_env *e, bench_results *r, sd_err *err);
/* bench_gate.c: speculation at α ≈ 0 with the decode defaults (gate on)
 * against greedy, alternated: the oracle at α = 0, the same paying the draft
 * model's time (with -md), and the draft model itself (with -md). */
sd_status bench_gate(bench_env *e, bench_results *r, sd_err *err);
/* bench_ab.c: draft A (-md) against draft B (--draft-b) on the same target,
 * alternated rep by rep with greedy: each draft's step time and r, the oracle
 * at each --alphas value paying that draft's time, the draft itself. */
sd_status bench_ab(bench_env *e, bench_results *r, sd_err *err);
/* bench_experts.c: on an MoE target, u(S) per layer for S = 1..17 on windows
 * of the prompts' text, the expert bytes read and the c_v(S) they predict
 * (nothing for a dense target); and its markdown. */
sd_status bench_experts(bench_env *e, bench_results *r, sd_err *err);
void bench_experts_print(const bench_env *e, const bench_results *r);
void bench_progress(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* bench_report.c */
void bench_print_markdown(const bench_env *e, const bench_results *r);
sd_status bench_write_json(const bench_env *e, const bench_results *r, const char *path, sd_err *err);
/* bench_svg.c: c_v(S) and speedup vs K, side by side. */
sd_status bench_write_svg(const bench_results *r, const char *path, sd_err *err);

#endif
