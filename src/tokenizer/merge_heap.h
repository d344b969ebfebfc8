/* The work queue shared by both BPE encoders (llama.cpp src/llama-vocab.cpp
 * llm_tokenizer_spm_session / llm_tokenizer_bpe_session): a word is a doubly
 * linked list of symbols (byte ranges); candidate merges of two neighbours
 * wait in a binary min-heap ordered by key, ties broken by the leftmost
 * position. A merge popped after one of its symbols changed is stale and
 * skipped, so each merge costs O(log n) and a word of n bytes O(n log n). */
#ifndef SD_TOKENIZER_MERGE_HEAP_H
#define SD_TOKENIZER_MERGE_HEAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct sd_symbol {
    uint32_t off, n;     /* byte range in the word; n == 0 once merged away */
    int32_t prev, next;  /* neighbours in the list, -1 at the ends */
} sd_symbol;

typedef struct sd_merge {
    double key;              /* BPE: merge rank; SPM: -score. Smaller pops first. */
    int32_t left, right;     /* symbol indices */
    uint32_t left_n, right_n; /* their lengths when queued: the staleness check */
} sd_merge;

typedef struct sd_merge_heap {
    sd_merge *v;
    size_t n, cap;
} sd_merge_heap;

/* False on allocation failure. */
bool sd_merge_heap_push(sd_merge_heap *h, sd_merge m);
/* Removes the first merge into *out; false if empty. */
bool sd_merge_heap_pop(sd_merge_heap *h, sd_merge *out);

/* Scratch memory reused across the words of one encode call. */
typedef struct sd_bpe_scratch {
    sd_symbol *sym;
    size_t sym_cap;
    sd_merge_heap heap;
    char *buf; /* SPM: the escaped text */
    size_t buf_cap;
} sd_bpe_scratch;

/* Ensures room for n symbols (and clears the heap). False on failure. */
bool sd_bpe_scratch_reserve(sd_bpe_scratch *s, size_t n);
void sd_bpe_scratch_free(sd_bpe_scratch *s);

/* Links sym[0..n) into one list and returns n. */
void sd_symbols_link(sd_symbol *sym, size_t n);

/* Merges sym[m.right] into sym[m.left]; true if done, false if m was stale. */
bool sd_symbols_apply(sd_symbol *sym, const sd_merge *m);

#endif
