/* The report of `specdec generate`: one stats line on stderr, or --json. */
#include <jansson.h>
#include <stdlib.h>
#include <stdio.h>

#include "cli/generate.h"

static double ratio(double a, double b) { return b > 0 ? a / b : 0; }

double gen_decode_tok_s(const sd_spec_stats *st) {
    return st->n_gen > 1 ? ratio((double)(st->n_gen - 1), st->t_decode_s) : 0;
}

static double tokens_per_forward(const sd_spec_stats *st) {
    /* The prefill's last row gives the first token: count it as a forward. */
    return ratio((double)st->n_gen, (double)(st->target_forwards + 1));
}

void gen_print_stats(const gen_result *r) {
    const sd_spec_stats *st = &r->st;
    fprintf(stderr, "prefill %.1f tok/s (%lld tokens) | decode %.2f tok/s (%lld tokens) | spec %s",
            ratio((double)st->n_prompt, st->t_prefill_s), (long long)st->n_prompt,
            gen_decode_tok_s(st), (long long)st->n_gen, r->spec_label);
    if (st->rounds || st->drafted)
        fprintf(stderr, " | rounds %lld | α %.3f (%lld/%lld) | accepted/round %.2f",
                (long long)st->rounds, ratio((double)st->accepted, (double)st->drafted),
                (long long)st->accepted, (long long)st->drafted,
                ratio((double)st->accepted, (double)st->rounds));
    if (st->gate_closed_steps)
        fprintf(stderr, " | gate closed %lld steps (probes %lld/%lld)", (long long)st->gate_closed_steps,
                (long long)st->probe_hits, (long long)st->probes);
    fprintf(stderr, " | tokens/forward %.2f", tokens_per_forward(st));
    if (r->checked) {
        double g = gen_decode_tok_s(&r->greedy);
        fprintf(stderr, " | greedy %.2f tok/s | speedup %.2fx | ", g, ratio(gen_decode_tok_s(st), g));
        if (r->lossless)
            fprintf(stderr, "LOSSLESS %d/%d", r->n_tokens, r->n_greedy);
        else
            fprintf(stderr, "MISMATCH at token %d", r->first_diff);
    }
    fprintf(stderr, "\n");
}

bool gen_print_json(const gen_result *r) {
    const sd_spec_stats *st = &r->st;
    json_t *tokens = json_array();
    for (int32_t i = 0; i < r->n_tokens; i++) json_array_append_new(tokens, json_integer(r->tokens[i]));
    double greedy = r->checked ? gen_decode_tok_s(&r->greedy) : 0;
    json_t *o = json_pack(
        "{s:s, s:I, s:I, s:f, s:f, s:o, s:s, s:I, s:I, s:I, s:f, s:f, s:f, s:I, s:I, s:o, s:o, s:o}",
        "text", r->text ? r->text : "", "n_prompt", (json_int_t)st->n_prompt, "n_gen",
        (json_int_t)st->n_gen, "prefill_tok_s", ratio((double)st->n_prompt, st->t_prefill_s),
        "decode_tok_s", gen_decode_tok_s(st), "tokens", tokens, "spec", r->spec_label, "rounds",
        (json_int_t)st->rounds, "drafted", (json_int_t)st->drafted, "accepted",
        (json_int_t)st->accepted, "acceptance", ratio((double)st->accepted, (double)st->drafted),
        "accepted_per_round", ratio((double)st->accepted, (double)st->rounds), "tokens_per_forward",
        tokens_per_forward(st), "target_forwards", (json_int_t)st->target_forwards,
        "draft_forwards", (json_int_t)st->draft_forwards, "lossless",
        r->checked ? json_boolean(r->lossless) : json_null(), "greedy_tok_s",
        r->checked ? json_real(greedy) : json_null(), "speedup",
        r->checked ? json_real(ratio(gen_decode_tok_s(st), greedy)) : json_null());
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
