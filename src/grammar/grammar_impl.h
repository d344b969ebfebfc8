/* Inside of sd_grammar, shared by the files of src/grammar/ (not an interface).
 *
 * A compiled grammar is a flat array of elements. Each rule is a list of
 * alternatives; an alternative is a run of elements ending in G_END. A parse
 * position is an element index; a parse stack is a position plus the stack to
 * return to when the alternative ends (the pushdown recognizer llama.cpp's
 * grammar engine also uses; this one works on bytes). */
#ifndef SD_GRAMMAR_IMPL_H
#define SD_GRAMMAR_IMPL_H

#include <stdint.h>

#include "grammar/grammar.h"

typedef enum sd_gelem_kind {
    G_END = 0,  /* end of an alternative: return to the caller */
    G_BYTES,    /* one byte in set arg (index into bytesets) */
    G_RULE,     /* call rule arg */
    G_TOKEN,    /* the token with id arg */
    G_NOT_TOKEN /* any one token but arg (and never an end-of-generation token) */
} sd_gelem_kind;

typedef struct sd_gelem {
    uint8_t kind;
    int32_t arg;
} sd_gelem;

typedef struct sd_byteset {
    uint32_t bits[8];
} sd_byteset;

static inline int sd_byteset_has(const sd_byteset *s, uint8_t b) { return (s->bits[b >> 5] >> (b & 31)) & 1; }

typedef struct sd_grule {
    int32_t alt_first; /* index into alts */
    int32_t n_alts;
    int32_t name_off; /* rule name in names (generated rules: parent name + "_N") */
} sd_grule;

struct sd_grammar {
    sd_gelem *elems;
    int32_t n_elems;
    int32_t *alts; /* element index where each alternative starts */
    int32_t n_alts;
    sd_grule *rules;
    int32_t n_rules;
    sd_byteset *bytesets;
    int32_t n_bytesets;
    char *names;
    int32_t root;
    int32_t n_tokens; /* number of G_TOKEN / G_NOT_TOKEN elements */
};

static inline const char *sd_grule_name(const sd_grammar *g, int32_t r) { return g->names + g->rules[r].name_off; }

/* Left-recursion check (grammar_check.c): refuses a rule that can reach
 * itself without consuming input, which the recognizer could never close. */
sd_status sd_grammar_check(const sd_grammar *g, sd_err *err);

/* Appends to `out` (an sd_gbuild, gbnf_parse.c) the UTF-8 byte-range
 * sequences covering code points [lo, hi]: each sequence is 1-4 byte ranges.
 * cb is called once per sequence. */
typedef int (*sd_utf8_seq_cb)(void *ctx, const uint8_t *lo, const uint8_t *hi, int n);
int sd_utf8_ranges(uint32_t lo, uint32_t hi, sd_utf8_seq_cb cb, void *ctx);

#endif
