/* The server's prefix cache over many conversations: the context's state
 * (specdec_state_save: KV rows, and a hybrid's recurrent state at the end of
 * what it holds) kept per token prefix, matched by the longest common prefix
 * across all of them (specdec_state_match), evicted least recently used
 * under a byte budget (--cache-ram MiB, 0 = off). It is shared by the
 * --parallel slots' contexts, each with a pc_use of its own: the inference
 * thread (worker.c) calls prefix_cache_restore before a slot's request (and
 * runs a hybrid's checkpoint as a request of its own, then
 * prefix_cache_checkpointed) and prefix_cache_leave in its done callback;
 * the counters are read by /metrics under the lock. */
#ifndef SD_SERVER_PREFIX_CACHE_H
#define SD_SERVER_PREFIX_CACHE_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"
#include "specdec.h"

typedef struct pc_entry {
    specdec_state *st;
    size_t bytes;
    uint64_t used; /* the tick of its last store or restore: the LRU order */
    uint64_t id;   /* never reused: a context's pc_use.live names it */
} pc_entry;

/* One batch slot context's use of the cache, touched only by the inference
 * thread. */
typedef struct pc_use {
    uint64_t live; /* the id of the entry the context holds unchanged since (0: unknown) */
    /* This request's: tokens reused from the cache (-1: the library's own count
     * stands) and the prefill time of a hybrid's prompt checkpoint (ms). */
    int32_t reused;
    double pre_ms;
} pc_use;

typedef struct prefix_cache {
    size_t cap;        /* byte budget; 0 = off */
    bool hybrid;       /* the model has recurrent layers: states restore only whole */
    pthread_mutex_t mu; /* guards everything below against /metrics */
    pc_entry *e;
    size_t n, n_alloc, bytes;
    uint64_t tick, hits, misses, evictions, stores, restored_tokens, next_id;
} prefix_cache;

void prefix_cache_init(prefix_cache *pc, size_t cap_bytes, const specdec_model *model);
void prefix_cache_free(prefix_cache *pc);
/* Before a request of prompt[n] on ctx: restores the entry sharing the
 * longest usable prefix with the prompt into ctx, unless ctx holds it
 * (u->reused says what it gives; u->pre_ms is left as it is). Returns whether a hybrid's
 * checkpoint at n - 1 tokens is wanted: the caller then generates with
 * n_predict 0 over prompt[0..n-1) on ctx and calls prefix_cache_checkpointed.
 * count: whether this is the request's first look (hits, misses and restored
 * tokens count once a request: not again after its checkpoint). */
bool prefix_cache_restore(prefix_cache *pc, pc_use *u, specdec_context *ctx, const specdec_token *prompt, size_t n,
                          bool count);
/* After that checkpoint's prefill (prefill_ms): stores ctx's state. */
void prefix_cache_checkpointed(prefix_cache *pc, pc_use *u, specdec_context *ctx, double prefill_ms);
/* After it (rc its status): the request's stats say what the cache gave
 * (n_cached, the checkpoint's prefill time), and ctx's state is stored. */
void prefix_cache_leave(prefix_cache *pc, pc_use *u, specdec_context *ctx, specdec_status rc, specdec_stats *st);
/* Prometheus lines: entries, bytes, budget, hits, misses, evictions. */
void prefix_cache_metrics(prefix_cache *pc, sd_strbuf *out);

#endif
