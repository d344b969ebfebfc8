/* The report of `specdec generate`: one stats line on stderr, or --json.
 * A figure with nothing to measure (a rate over zero time or zero tokens) is
 * NAN here, printed as n/a and written as JSON null, never as a made-up 0. */
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "cli/generate.h"

static double ratio(double a, double b) { return b > 0 ? a / b : NAN; }

double gen_decode_tok_s(const sd_spec_stats *st) {
    /* The first token comes from the prefill: the decode rate needs two. */
    return st->n_gen > 1 ? ratio((double)(st->n_gen - 1), st->t_decode_s) : NAN;
}

static double tokens_per_forward(const sd_spec_stats *st) {
    /* The prefill's last row gives the first token: count it as a forward. */
    return st->n_gen > 0 ? ratio((double)st->n_gen, (double)(st->target_forwards + 1)) : NAN;
}

static double greedy_tok_s(const gen_result *r) { return r->checked ? gen_decode_tok_s(&r->greedy) : NAN; }

static double speedup(const gen_result *r) { return ratio(gen_decode_tok_s(&r->st), greedy_tok_s(r)); }

/* x in fmt, or n/a for NAN. */
static void print_figure(const char *fmt, double x) {
    if (isnan(x)) fprintf(stderr, "n/a");
    else fprintf(stderr, fmt, x);
}

static void print_drafting(const sd_spec_stats *st) {
    fprintf(stderr, " | rounds %lld | α ", (long long)st->rounds);
    print_figure("%.3f", ratio((double)st->accepted, (double)st->drafted));
    fprintf(stderr, " (%lld/%lld) | accepted/round ", (long long)st->accepted, (long long)st->drafted);
    print_figure("%.2f", ratio((double)st->accepted, (double)st->rounds));
    if (st->gate_closed_steps)
        fprintf(stderr, " | gate closed %lld steps (probes %lld/%lld)", (long long)st->gate_closed_steps,
                (long long)st->probe_hits, (long long)st->probes);
}

void gen_print_stats(const gen_result *r) {
    const sd_spec_stats *st = &r->st;
    fprintf(stderr, "prefill ");
    print_figure("%.1f tok/s", ratio((double)st->n_prompt, st->t_prefill_s));
    fprintf(stderr, " (%lld token%s) | decode ", (long long)st->n_prompt, st->n_prompt == 1 ? "" : "s");
    print_figure("%.2f tok/s", gen_decode_tok_s(st));
    fprintf(stderr, " (%lld token%s) | spec %s", (long long)st->n_gen, st->n_gen == 1 ? "" : "s", r->spec_label);
    if (st->rounds || st->drafted || st->gate_closed_steps) print_drafting(st);
    fprintf(stderr, " | tokens/forward ");
    print_figure("%.2f", tokens_per_forward(st));
    if (r->checked) {
        fprintf(stderr, " | greedy ");
        print_figure("%.2f tok/s", greedy_tok_s(r));
        fprintf(stderr, " | speedup ");
        print_figure("%.2fx", speedup(r));
        if (r->lossless) fprintf(stderr, " | LOSSLESS %d/%d", r->n_tokens, r->n_greedy);
        else fprintf(stderr, " | MISMATCH at token %d", r->first_diff);
    }
    fprintf(stderr, "\n");
}

/* A number, or null for NAN (jansson refuses NAN). */
static json_t *number(double x) { return isnan(x) ? json_null() : json_real(x); }

bool gen_print_json(const gen_result *r) {
    const sd_spec_stats *st = &r->st;
    json_t *tokens = json_array();
    for (int32_t i = 0; i < r->n_tokens; i++) json_array_append_new(tokens, json_integer(r->tokens[i]));
    json_t *o = json_pack(
        "{s:s, s:I, s:I, s:o, s:o, s:o, s:s, s:I, s:I, s:I, s:o, s:o, s:o, s:I, s:I, s:o, s:o, s:o}",
        "text", r->text ? r->text : "", "n_prompt", (json_int_t)st->n_prompt, "n_gen",
        (json_int_t)st->n_gen, "prefill_tok_s", number(ratio((double)st->n_prompt, st->t_prefill_s)),
        "decode_tok_s", number(gen_decode_tok_s(st)), "tokens", tokens, "spec", r->spec_label, "rounds",
        (json_int_t)st->rounds, "drafted", (json_int_t)st->drafted, "accepted", (json_int_t)st->accepted,
        "acceptance", number(ratio((double)st->accepted, (double)st->drafted)), "accepted_per_round",
        number(ratio((double)st->accepted, (double)st->rounds)), "tokens_per_forward",
        number(tokens_per_forward(st)), "target_forwards", (json_int_t)st->target_forwards,
        "draft_forwards", (json_int_t)st->draft_forwards, "lossless",
        r->checked ? json_boolean(r->lossless) : json_null(), "greedy_tok_s", number(greedy_tok_s(r)),
        "speedup", number(speedup(r)));
    if (!o) return false;
    json_object_set_new(o, "gate_closed_steps", json_integer(st->gate_closed_steps));
    json_object_set_new(o, "probes", json_integer(st->probes));
    json_object_set_new(o, "probe_hits", json_integer(st->probe_hits));
    char *s = json_dumps(o, JSON_COMPACT | JSON_ENSURE_ASCII);
    json_decref(o);
    if (!s) return false;
    printf("%s\n", s);
    free(s);
    return true;
}
