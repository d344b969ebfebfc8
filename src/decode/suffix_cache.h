/* The cross-request memory of suffix drafting: the outputs of earlier
 * requests, whole, in one suffix trie (suffix_tree.h), under a budget in
 * tokens. When a new output would pass the budget, whole earlier outputs
 * leave, least recently used first (SuffixDecoding's global tree, with
 * eviction by recency instead of Arctic Inference's cap on the request
 * count). An output is used when it is added and when a draft the target
 * accepted came from a trie node it was the latest to pass (the drafter
 * calls sd_suffix_cache_touch). Memory: the copies of the outputs (4 bytes a
 * token) and the trie (at most sd_stree_bytes_per_token_max(depth) a token).
 * Shared by concurrent generations (the slots of a batch, each drafting on its
 * own thread): add and touch take mu; a reader of tree or doc (the drafter)
 * holds mu while it reads. */
#ifndef SD_DECODE_SUFFIX_CACHE_H
#define SD_DECODE_SUFFIX_CACHE_H

#include <pthread.h>
#include <stdint.h>

#include "core/status.h"
#include "decode/suffix_tree.h"

#define SD_SUFFIX_DEPTH 24 /* vLLM's suffix_decoding_max_tree_depth default */

typedef struct sd_suffix_doc {
    uint32_t serial; /* never 0 */
    int32_t n;
    int32_t *tok;
} sd_suffix_doc;

typedef struct sd_suffix_cache {
    sd_stree tree;
    int64_t max_tokens, n_tokens;
    int64_t n_added, n_evicted; /* outputs added and evicted so far */
    sd_suffix_doc *doc;         /* least recently used first */
    int32_t n_doc, cap_doc;
    uint32_t next_serial;
    pthread_mutex_t mu; /* guards everything above between generations on several threads */
} sd_suffix_cache;

/* An empty memory of at most max_tokens tokens (>= 1) and trie depth
 * (1..SD_STREE_MAX_DEPTH). Errors: SD_ERR_ARG, SD_ERR_NOMEM. */
sd_status sd_suffix_cache_init(sd_suffix_cache *c, int64_t max_tokens, int depth, sd_err *err);
void sd_suffix_cache_free(sd_suffix_cache *c);

/* Adds the output tok[0..n) (copied) as the most recent, first evicting the
 * least recently used outputs until it fits; an output longer than the
 * budget keeps only its last max_tokens tokens. n = 0 adds nothing.
 * Errors: SD_ERR_NOMEM (the memory is then as before, less what was evicted). */
sd_status sd_suffix_cache_add(sd_suffix_cache *c, const int32_t *tok, int32_t n, sd_err *err);
/* Marks the output of that serial used now; nothing if it is gone. Takes mu
 * (as add does): the caller must not hold it. */
void sd_suffix_cache_touch(sd_suffix_cache *c, uint32_t serial);
/* Whether the output of that serial is still held (caller holds mu, or no
 * other thread uses c). */
bool sd_suffix_cache_holds(const sd_suffix_cache *c, uint32_t serial);
/* Bytes held: trie, token copies, the output list (caller holds mu, or no
 * other thread uses c). */
size_t sd_suffix_cache_bytes(const sd_suffix_cache *c);
/* The most bytes c can ever hold: the trie's initial pool and table, the
 * trie's bound per token for max_tokens + 1 tokens (one token of headroom:
 * an insertion reserves room for its nodes first), the token copies, and an
 * output list of up to 2 * max_tokens entries (the list doubles). */
size_t sd_suffix_cache_bytes_max(const sd_suffix_cache *c);

#endif
