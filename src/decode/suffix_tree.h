/* A depth-limited suffix trie with occurrence counts, the structure behind
 * suffix drafting (drafter_suffix.c; SuffixDecoding, Oliaro et al. 2024,
 * arXiv:2411.04975, as Arctic Inference and vLLM's `suffix` method build it).
 *
 * Every suffix of every inserted token string is a root path, cut at `depth`
 * tokens; a node's count is the number of (string, start) occurrences of the
 * token string its path spells (each occurrence at most depth long). So the
 * frequency with which x continued with t is count(x t) / count(x).
 *
 * Memory is bounded by the tokens held: at most depth new nodes per token
 * (sd_stree_bytes_per_token_max), usually far fewer (shared paths). Nodes
 * live in one pool with a free list; children are found through one hash
 * table keyed by (parent, token) (so a node with thousands of children costs
 * no more to look up than one with two) and enumerated through a doubly
 * linked sibling list. A string can be removed again (its counts taken back,
 * nodes reaching zero freed): that is how the cross-request memory evicts a
 * whole earlier output (suffix_cache.c). */
#ifndef SD_DECODE_SUFFIX_TREE_H
#define SD_DECODE_SUFFIX_TREE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define SD_STREE_MAX_DEPTH 64 /* the deepest trie allowed */
#define SD_STREE_MAX_DRAFT 64 /* the longest proposal */
#define SD_STREE_INIT_NODES 256 /* the pool and table an empty trie starts with */
#define SD_STREE_INIT_SLOTS 512
#define SD_STREE_BYTES_INIT \
    (SD_STREE_INIT_NODES * sizeof(sd_snode) + SD_STREE_INIT_SLOTS * (sizeof(uint64_t) + sizeof(int32_t)))

typedef struct sd_snode {
    int32_t tok;   /* the token on the edge into this node */
    int32_t count; /* occurrences of this node's string */
    int32_t parent;
    int32_t child, next, prev; /* first child; siblings (-1 = none) */
    int32_t best;  /* the child of highest count (lowest token on ties); -1 = not known, rescan */
    uint32_t doc;  /* the latest string inserted through this node (a caller's serial; 0 = none) */
} sd_snode;

typedef struct sd_stree {
    int depth;
    sd_snode *node; /* node[0] is the root: count = tokens inserted */
    int32_t n_node, cap_node, free_head, n_live;
    uint64_t *hkey; /* (parent, token) -> node, linear probing; UINT64_MAX = empty */
    int32_t *hval;
    size_t hcap, hused; /* hcap a power of two, hused <= hcap / 2 */
} sd_stree;

/* Where an insertion stands: act[i] is the node of the last i tokens
 * appended (act[0] the root), for i < n_act <= depth + 1. */
typedef struct sd_stree_cursor {
    int32_t act[SD_STREE_MAX_DEPTH + 1];
    int n_act;
} sd_stree_cursor;

/* A proposal: the chain tok[0..n), its score (the sum over the chain of
 * the product of count ratios up to each token: the expected number of
 * accepted tokens if the counts were the law), the pattern length it
 * matched, the nodes of the chain (node[i] holds tok[i]) and the node it
 * continued from. */
typedef struct sd_stree_draft {
    int n, match_len;
    float score;
    int32_t from;
    int32_t tok[SD_STREE_MAX_DRAFT], node[SD_STREE_MAX_DRAFT];
} sd_stree_draft;

/* An empty trie of the given depth (1..SD_STREE_MAX_DEPTH). false = out of memory or bad depth. */
bool sd_stree_init(sd_stree *t, int depth);
void sd_stree_free(sd_stree *t);
/* Back to empty, keeping the allocations. */
void sd_stree_clear(sd_stree *t);

/* Room for n_new more nodes, so that inserting them cannot fail. false = out of memory. */
bool sd_stree_reserve(sd_stree *t, int64_t n_new);

/* A cursor at the start of a new string. */
void sd_stree_cursor_start(sd_stree_cursor *c);
/* Appends tok to the string c is inserting: every suffix of it that ends
 * here (at most depth long) is counted once more; doc marks the nodes it
 * passes. Needs room for depth nodes (sd_stree_reserve): false = out of
 * memory, the trie then unchanged. */
bool sd_stree_append(sd_stree *t, sd_stree_cursor *c, int32_t tok, uint32_t doc);
/* Takes the string s[0..n) back out of the trie, which must hold it
 * (inserted with append, whole, and not removed since). */
void sd_stree_remove(sd_stree *t, const int32_t *s, int32_t n);

/* The child of node for tok, or -1. */
int32_t sd_stree_child(const sd_stree *t, int32_t node, int32_t tok);
/* The node of s[0..n) from the root, or -1. */
int32_t sd_stree_find(const sd_stree *t, const int32_t *s, int32_t n);
/* The child of node with the highest count, the lowest token on ties; -1 = a leaf. */
int32_t sd_stree_best_child(sd_stree *t, int32_t node);
/* Up to w children of node, by count descending then token ascending, into
 * out[w] (-1 past the last). Returns how many. */
int sd_stree_top_children(const sd_stree *t, int32_t node, int w, int32_t *out);

/* SuffixDecoding's chain proposal for the context pat[0..n): for every
 * match length m from min(n, depth) down to 1 whose pattern pat[n-m..n) is
 * in the trie, the greedy chain from its node (each step the most frequent
 * child; p *= count(child) / count(node); stop before a token whose p <
 * min_prob) of at most min(max_tokens, floor(m * spec_factor)) tokens; the
 * chain of highest score wins, the longer match on ties. d->n = 0 when none. */
void sd_stree_speculate(sd_stree *t, const int32_t *pat, int32_t n, int max_tokens, float spec_factor,
                        float min_prob, sd_stree_draft *d);

/* Bytes held (pool and hash table, allocated capacity). */
size_t sd_stree_bytes(const sd_stree *t);
/* The most bytes one inserted token can add at this depth (depth nodes and
 * their hash slots at the table's worst load, pool growth by doubling). */
size_t sd_stree_bytes_per_token_max(int depth);

#endif
