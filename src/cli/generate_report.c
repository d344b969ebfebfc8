/* The report of `specdec generate`: one stats line on stderr, or --json.
 * A figure with nothing to measure (a rate over zero time or zero tokens) is
 * NAN here, printed as n/a and written as JSON null, never as a made-up 0. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/generate.h"
#include "cli/json_text.h"

static double ratio(double a, double b) { return b > 0 ? a / b : NAN; }

double gen_decode_tok_s(int64_t n_gen, double t_decode_ms) {
    /* The first token comes from the prefill: the decode rate needs two. */
    return n_gen > 1 ? ratio((double)(n_gen - 1), t_decode_ms / 1e3) : NAN;
}

static double decode_tok_s(const specdec_stats *st) { return gen_decode_tok_s(st->n_gen, st->t_decode_ms); }

static double prefill_tok_s(const specdec_stats *st) { return ratio((double)st->n_prompt, st->t_prefill_ms / 1e3); }

static double tokens_per_forward(const specdec_stats *st) {
    /* The prefill's last row gives the first token: count it as a forward. */
    return st->n_gen > 0 ? ratio((double)st->n_gen, (double)(st->n_target_forwards + 1)) : NAN;
}

static double greedy_tok_s(const gen_result *r) {
    return r->st.lossless_checked ? gen_decode_tok_s(r->st.plain_n_gen, r->st.plain_decode_ms) : NAN;
}

static double speedup(const gen_result *r) { return ratio(decode_tok_s(&r->st), greedy_tok_s(r)); }

/* x in fmt, or n/a for NAN. */
static void print_figure(const char *fmt, double x) {
    if (isnan(x)) fprintf(stderr, "n/a");
    else fprintf(stderr, fmt, x);
}

static void print_drafting(const specdec_stats *st) {
    fprintf(stderr, " | rounds %lld | α ", (long long)st->n_rounds);
    print_figure("%.3f", ratio((double)st->n_accepted, (double)st->n_drafted));
    fprintf(stderr, " (%lld/%lld) | accepted/round ", (long long)st->n_accepted, (long long)st->n_drafted);
    print_figure("%.2f", ratio((double)st->n_accepted, (double)st->n_rounds));
    if (st->gate_closed_steps)
        fprintf(stderr, " | gate closed %lld steps (probes %lld/%lld)", (long long)st->gate_closed_steps,
                (long long)st->n_probe_hits, (long long)st->n_probes);
}

static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }

/* Load time; the weights' memory (repacked and f32 copies + file pages still
 * resident; n/a when pagemap could not be read); the process's peak RSS. */
static void print_memory(const gen_result *r) {
    const specdec_model_memory *w = &r->mem;
    fprintf(stderr, " | isa %s | load %.2f s | weights resident ", specdec_isa_name(specdec_isa_get()), w->load_ms / 1e3);
    print_figure("%.1f MiB", w->file_measured ? mib(w->packed_bytes + w->f32_bytes + w->file_bytes) : NAN);
    fprintf(stderr, " (repacked %.1f, file pages ", mib(w->packed_bytes));
    print_figure("%.1f)", w->file_measured ? mib(w->file_bytes) : NAN);
    fprintf(stderr, " | peak RSS ");
    print_figure("%.1f MiB", r->peak_rss ? mib(r->peak_rss) : NAN);
}

void gen_print_stats(const gen_result *r) {
    const specdec_stats *st = &r->st;
    fprintf(stderr, "prefill ");
    print_figure("%.1f tok/s", prefill_tok_s(st));
    fprintf(stderr, " (%lld token%s) | decode ", (long long)st->n_prompt, st->n_prompt == 1 ? "" : "s");
    print_figure("%.2f tok/s", decode_tok_s(st));
    fprintf(stderr, " (%lld token%s) | spec %s", (long long)st->n_gen, st->n_gen == 1 ? "" : "s", st->drafter);
    if (st->n_rounds || st->n_drafted || st->gate_closed_steps) print_drafting(st);
    fprintf(stderr, " | tokens/forward ");
    print_figure("%.2f", tokens_per_forward(st));
    if (strcmp(st->rollback, "none") != 0 && st->n_rounds > 0) /* a hybrid target: what its rollbacks cost */
        fprintf(stderr, " | rollback %s: %lld of %lld rounds, %.3f ms/round, %.1f MB moved/round, %.1f MB held",
                st->rollback, (long long)st->n_rollbacks, (long long)st->n_rounds, st->rollback_ms / (double)st->n_rounds,
                (double)st->rollback_bytes_moved / 1e6 / (double)st->n_rounds, (double)st->rollback_bytes_held / 1e6);
    if (st->grammar_ms > 0) /* constrained: what the masks cost, per generated token and per verify round */
        fprintf(stderr, " | grammar %.3f ms/token, %.3f ms/round, %lld full masks",
                st->n_gen ? st->grammar_ms / (double)st->n_gen : 0.0,
                st->n_rounds ? st->grammar_rounds_ms / (double)st->n_rounds : 0.0, (long long)st->n_grammar_masks);
    if (st->lossless_checked) {
        fprintf(stderr, " | greedy ");
        print_figure("%.2f tok/s", greedy_tok_s(r));
        fprintf(stderr, " | speedup ");
        print_figure("%.2fx", speedup(r));
        if (st->lossless) fprintf(stderr, " | LOSSLESS %d/%d", st->n_gen, st->plain_n_gen);
        else fprintf(stderr, " | MISMATCH at token %d", st->lossless_first_diff);
    }
    print_memory(r);
    fprintf(stderr, "\n");
}

/* A token's bytes (show_special: control tokens give their text), at most cap. */
static size_t token_bytes(const specdec_model *m, specdec_token t, char *buf, size_t cap) {
    int32_t n = specdec_token_to_piece(m, t, true, buf, cap);
    return n < 0 ? 0 : (size_t)n > cap ? cap : (size_t)n;
}

/* A token's text for the terminal: printable ASCII as it is, \n \t \\ \"
 * escaped, every other byte as \xNN, in quotes. */
static void print_token(const specdec_model *m, specdec_token t) {
    char buf[256];
    size_t n = token_bytes(m, t, buf, sizeof buf);
    fputc('"', stderr);
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)buf[i];
        if (c == '\n') fputs("\\n", stderr);
        else if (c == '\t') fputs("\\t", stderr);
        else if (c == '\\' || c == '"') fprintf(stderr, "\\%c", c);
        else if (c >= 0x20 && c < 0x7f) fputc(c, stderr);
        else fprintf(stderr, "\\x%02x", c);
    }
    fputc('"', stderr);
}

void gen_print_logprobs(const gen_result *r) {
    fprintf(stderr, "log-probabilities (natural log; after bias, penalties and grammar, before temperature):\n");
    for (int32_t i = 0; i < r->n_lp; i++) {
        const specdec_token_logprob *lp = &r->lp[i];
        fprintf(stderr, "%5d %10.6f %6d ", i, lp->logprob, lp->token);
        print_token(r->model, lp->token);
        for (int32_t k = 0; k < lp->n_top && k < r->n_top; k++) {
            fputs(k ? ", " : "  | top: ", stderr);
            print_token(r->model, lp->top_token[k]);
            fprintf(stderr, " %.6f", lp->top_logprob[k]);
        }
        fputc('\n', stderr);
    }
}

/* A token's text as a JSON string (bytes that are not UTF-8: U+FFFD each). */
static json_t *token_json(const specdec_model *m, specdec_token t) {
    char buf[256];
    json_t *v = cli_json_text(buf, token_bytes(m, t, buf, sizeof buf));
    return v ? v : json_string("");
}

/* "logprobs": [{token, text, logprob, top_logprobs: [{token, text, logprob}]}]. */
static json_t *logprobs_json(const gen_result *r) {
    json_t *a = json_array();
    for (int32_t i = 0; i < r->n_lp; i++) {
        const specdec_token_logprob *lp = &r->lp[i];
        json_t *tops = json_array();
        for (int32_t k = 0; k < lp->n_top && k < r->n_top; k++)
            json_array_append_new(tops, json_pack("{s:i, s:o, s:f}", "token", lp->top_token[k], "text",
                                                  token_json(r->model, lp->top_token[k]), "logprob",
                                                  (double)lp->top_logprob[k]));
        json_array_append_new(a, json_pack("{s:i, s:o, s:f, s:o}", "token", lp->token, "text",
                                           token_json(r->model, lp->token), "logprob", (double)lp->logprob,
                                           "top_logprobs", tops));
    }
    return a;
}

/* A number, or null for NAN (jansson refuses NAN). */
static json_t *number(double x) { return isnan(x) ? json_null() : json_real(x); }

bool gen_print_json(const gen_result *r) {
    const specdec_stats *st = &r->st;
    json_t *tokens = json_array();
    for (int32_t i = 0; i < r->n_tokens; i++) json_array_append_new(tokens, json_integer(r->tokens[i]));
    json_t *o = json_pack(
        "{s:s, s:I, s:I, s:o, s:o, s:o, s:s, s:I, s:I, s:I, s:o, s:o, s:o, s:I, s:I, s:o, s:o, s:o}",
        "text", r->text ? r->text : "", "n_prompt", (json_int_t)st->n_prompt, "n_gen",
        (json_int_t)st->n_gen, "prefill_tok_s", number(prefill_tok_s(st)),
        "decode_tok_s", number(decode_tok_s(st)), "tokens", tokens, "spec", st->drafter, "rounds",
        (json_int_t)st->n_rounds, "drafted", (json_int_t)st->n_drafted, "accepted", (json_int_t)st->n_accepted,
        "acceptance", number(ratio((double)st->n_accepted, (double)st->n_drafted)), "accepted_per_round",
        number(ratio((double)st->n_accepted, (double)st->n_rounds)), "tokens_per_forward",
        number(tokens_per_forward(st)), "target_forwards", (json_int_t)st->n_target_forwards,
        "draft_forwards", (json_int_t)st->n_draft_forwards, "lossless",
        st->lossless_checked ? json_boolean(st->lossless) : json_null(), "greedy_tok_s", number(greedy_tok_s(r)),
        "speedup", number(speedup(r)));
    if (!o) return false;
    json_object_set_new(o, "gate_closed_steps", json_integer(st->gate_closed_steps));
    json_object_set_new(o, "probes", json_integer(st->n_probes));
    json_object_set_new(o, "probe_hits", json_integer(st->n_probe_hits));
    const specdec_model_memory *w = &r->mem;
    json_t *file = w->file_measured ? json_integer((json_int_t)w->file_bytes) : json_null();
    json_object_set_new(o, "load_s", json_real(w->load_ms / 1e3));
    json_object_set_new(o, "weights_resident_bytes",
                        w->file_measured ? json_integer((json_int_t)(w->packed_bytes + w->f32_bytes + w->file_bytes))
                                         : json_null());
    json_object_set_new(o, "weights_packed_bytes", json_integer((json_int_t)w->packed_bytes));
    json_object_set_new(o, "weights_f32_bytes", json_integer((json_int_t)w->f32_bytes));
    json_object_set_new(o, "weights_file_resident_bytes", file);
    json_object_set_new(o, "peak_rss_bytes", r->peak_rss ? json_integer((json_int_t)r->peak_rss) : json_null());
    json_object_set_new(o, "rollback", json_string(st->rollback));
    json_object_set_new(o, "rollbacks", json_integer(st->n_rollbacks));
    json_object_set_new(o, "rollback_ms", json_real(st->rollback_ms));
    json_object_set_new(o, "rollback_bytes_moved", json_integer((json_int_t)st->rollback_bytes_moved));
    json_object_set_new(o, "rollback_bytes_held", json_integer((json_int_t)st->rollback_bytes_held));
    json_object_set_new(o, "redecoded", json_integer(st->n_redecoded));
    json_object_set_new(o, "grammar_ms", json_real(st->grammar_ms));
    json_object_set_new(o, "grammar_rounds_ms", json_real(st->grammar_rounds_ms));
    json_object_set_new(o, "grammar_masks", json_integer(st->n_grammar_masks));
    json_object_set_new(o, "gate_k", json_integer(st->gate_k));
    json_object_set_new(o, "gate_r", json_real(st->gate_r));
    json_t *cv = json_array(), *acc = json_array();
    for (int S = 1; S < SPECDEC_GATE_N; S++) {
        json_array_append_new(cv, json_real(st->gate_cv[S]));
        json_array_append_new(acc, json_real(st->gate_accept[S]));
    }
    json_object_set_new(o, "gate_cv", cv);           /* c_v(S) for S = 1.. */
    json_object_set_new(o, "gate_accept", acc);      /* a block drafter's acceptance at position 1.. */
    if (r->n_top >= 0 && r->model) json_object_set_new(o, "logprobs", logprobs_json(r));
    char *s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(o);
    if (!s) return false;
    printf("%s\n", s);
    free(s);
    return true;
}
