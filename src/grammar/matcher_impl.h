/* Inside of sd_gmatch, shared by matcher.c (states, transitions) and mask.c
 * (the vocabulary trie and token masks). Not an interface. */
#ifndef SD_GRAMMAR_MATCHER_IMPL_H
#define SD_GRAMMAR_MATCHER_IMPL_H

#include "grammar/grammar_impl.h"

typedef struct gstate {
    int32_t off, n;  /* stacks in pool[off..off+n), sorted */
    int32_t *trans;  /* 256 next states (TRANS_UNKNOWN until asked), or NULL */
    int32_t mask;    /* slot in the mask cache, -1 if none */
    uint8_t accept;  /* the root can end here */
    uint8_t has_tokens; /* some stack's top is a token reference */
    int8_t any;         /* some token is allowed: 1/0, -1 not yet known */
} gstate;

/* The vocabulary's token texts in a trie laid out in preorder: node i's
 * subtree is [i, end[i]); the tokens whose bytes end at node i are
 * ids[first[i] .. first[i] + count[i]). A mask walk skips a refused subtree
 * by jumping to end[i]. */
typedef struct vocab_trie {
    uint8_t *byte;
    int32_t *end, *first, *count;
    int32_t n_nodes;
    int32_t *ids;
    int32_t max_depth;
} vocab_trie;

/* A vocabulary prepared for matching (grammar.h sd_gvocab): immutable
 * after sd_gvocab_init, shared by any number of matchers. */
struct sd_gvocab {
    const sd_tokenizer *tok;
    int32_t n_vocab, n_words;
    char *tok_bytes; /* every matchable token's bytes */
    int64_t *tok_off;
    int32_t *tok_len; /* 0: matches only by reference (control, end-of-generation, empty) */
    uint8_t *tok_eog;
    int32_t *eog_ids;
    int32_t n_eog;
    vocab_trie trie;
};

struct sd_gmatch {
    const sd_grammar *g;
    sd_err err;
    int32_t start;

    /* interned parse stacks */
    int32_t *stack_pos, *stack_parent, *visit;
    int64_t cap_stacks_pos, cap_stacks_parent, cap_visit;
    int32_t n_stacks;
    int32_t *stack_slots;
    uint32_t n_stack_slots;

    /* interned states */
    gstate *states;
    int32_t n_states, cap_states;
    int32_t *state_slots;
    uint32_t n_state_slots;
    int32_t *pool;
    int64_t n_pool, cap_pool;

    /* closure scratch */
    int32_t *work, *out;
    int64_t cap_work, cap_out;
    int32_t n_out;
    int32_t stamp;

    /* the vocabulary (mask.c): shared, or owned when made for this matcher */
    const sd_gvocab *v;
    sd_gvocab *own_vocab;
    int32_t *frames_state, *frames_end; /* mask walk stack, max_depth + 1 */
    uint32_t *masks; /* cache: max_masks bitsets of n_words */
    int32_t *mask_owner;
    int32_t n_masks, max_masks;
    int64_t n_masks_built;
    double t_constrain_s; /* added by the decode layer (sd_gmatch_add_seconds) */
};

/* The matcher's per-vocabulary scratch (mask.c): walk stack and mask cache. */
sd_status sd_gmatch_vocab_attach(sd_gmatch *m, const sd_gvocab *v, sd_err *err);
void sd_gmatch_vocab_detach(sd_gmatch *m);

#endif
