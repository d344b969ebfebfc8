/* Left recursion: a rule that can call itself before consuming a byte or a
 * token (directly, `a ::= a "x"`, or through nullable prefixes and other
 * rules) would make the recognizer's closure expand forever, so it is
 * refused at compile time, naming the rule. Nullable rules are found first
 * (a fixpoint), then the "may start with" graph is searched for a cycle. */
#include <stdlib.h>

#include "grammar/grammar_impl.h"

static sd_status compute_nullable(const sd_grammar *g, uint8_t *nullable) {
    int changed = 1;
    while (changed) {
        changed = 0;
        for (int32_t r = 0; r < g->n_rules; r++) {
            if (nullable[r]) continue;
            const sd_grule *rule = &g->rules[r];
            for (int32_t a = 0; a < rule->n_alts && !nullable[r]; a++) {
                int32_t e = g->alts[rule->alt_first + a];
                while (g->elems[e].kind == G_RULE && nullable[g->elems[e].arg]) e++;
                if (g->elems[e].kind == G_END) nullable[r] = 1, changed = 1;
            }
        }
    }
    return SD_OK;
}

/* Calls f(rule, callee) for each rule a rule may start with. */
static int32_t next_start_edge(const sd_grammar *g, const uint8_t *nullable, int32_t r, int32_t *a, int32_t *e) {
    const sd_grule *rule = &g->rules[r];
    while (*a < rule->n_alts) {
        if (*e < 0) *e = g->alts[rule->alt_first + *a];
        const sd_gelem *x = &g->elems[*e];
        if (x->kind == G_RULE) {
            int32_t callee = x->arg;
            if (nullable[callee]) (*e)++;
            else (*a)++, *e = -1;
            return callee;
        }
        (*a)++, *e = -1;
    }
    return -1;
}

sd_status sd_grammar_check(const sd_grammar *g, sd_err *err) {
    int32_t n = g->n_rules;
    uint8_t *nullable = calloc((size_t)n + 1, 1);
    uint8_t *color = calloc((size_t)n + 1, 1); /* 0 new, 1 on the path, 2 done */
    int32_t *stack = malloc(sizeof *stack * 3 * ((size_t)n + 1)); /* rule, alt, elem per frame */
    if (!nullable || !color || !stack) {
        free(nullable), free(color), free(stack);
        return sd_err_set(err, SD_ERR_NOMEM, "grammar: out of memory");
    }
    compute_nullable(g, nullable);
    sd_status st = SD_OK;
    for (int32_t s = 0; s < n && st == SD_OK; s++) {
        if (color[s]) continue;
        int32_t top = 0;
        stack[0] = s, stack[1] = 0, stack[2] = -1;
        color[s] = 1;
        while (top >= 0 && st == SD_OK) {
            int32_t *f = &stack[3 * top];
            int32_t c = next_start_edge(g, nullable, f[0], &f[1], &f[2]);
            if (c < 0) {
                color[f[0]] = 2;
                top--;
            } else if (color[c] == 1) {
                st = sd_err_set(err, SD_ERR_FORMAT, "grammar: rule '%.200s' is left-recursive (it can reach itself "
                                "before matching anything)", sd_grule_name(g, c));
            } else if (color[c] == 0) {
                color[c] = 1;
                top++;
                stack[3 * top] = c, stack[3 * top + 1] = 0, stack[3 * top + 2] = -1;
            }
        }
    }
    free(nullable), free(color), free(stack);
    return st;
}
