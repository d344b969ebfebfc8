/* Internal to src/model: what the memory components of a context share.
 * A context's memory is split as llama.cpp splits its own (llama-kv-cache,
 * llama-memory-recurrent, llama-memory-hybrid behind one interface), in our
 * C style: each component is a struct with sd_X_build / sd_X_free, and one
 * sd_X_reset_pending when it holds state that only the next call may use
 * (a resumable output head, a token tree awaiting keep_path):
 *   kv_cache.h     f16 K/V rows of the attention layers, the length, tree slots
 *   recurrent.h    Gated DeltaNet state, snapshots, the rollback capture ring
 *   scratch.h      one batch's activations, the two-pass head resume
 *   hidden_hook.h  hidden-state rows for draft heads
 * model/context.h composes them into sd_context.
 * Sequences: the calls that would need a per-sequence view if a context
 * held several sequences (a length, a truncate, a recurrent state) take a
 * sequence id. Only sequence 0 exists; any other id is refused. Several
 * sequences served together are several contexts, each with its own
 * components, whose forwards one ragged batch runs (model.h sd_ctx_group,
 * forward_ragged.c, docs/BATCHING.md): every single-sequence call (truncate,
 * snapshots, capture, replay) then works per sequence unchanged. */
#ifndef SD_MODEL_MEMORY_MEMORY_H
#define SD_MODEL_MEMORY_MEMORY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/checked.h"

/* Sequences a context holds (ids 0..SD_MEMORY_N_SEQ-1). */
#define SD_MEMORY_N_SEQ 1

static inline bool sd_memory_seq_ok(int32_t seq) { return seq >= 0 && seq < SD_MEMORY_N_SEQ; }

/* a * b * c elements of elem bytes, every product checked; NULL and *ok
 * cleared on failure (and nothing tried once *ok is false), so a component's
 * build can allocate all its buffers and check once. */
static inline void *sd_memory_alloc(size_t a, size_t b, size_t c, size_t elem, bool *ok) {
    size_t n;
    if (!*ok || !sd_mul_size(a, b, &n) || !sd_mul_size(n, c, &n)) {
        *ok = false;
        return NULL;
    }
    void *p = sd_malloc_array(n, elem);
    if (!p) *ok = false;
    return p;
}

/* Makes every page of the malloc'd block p resident now (NULL: no-op), its
 * bytes unchanged: each page is read and written back. A buffer sized for
 * n_ctx positions is otherwise paged in as positions are first reached, so
 * a long-running process's RSS creeps up to its working size over hours
 * (each slot's longest request so far); committed at start, the RSS is at
 * that size from the start (llama.cpp clears its KV buffers at init, to
 * the same effect). The block's size is the C library's
 * (malloc_usable_size); where that is not known (not glibc) nothing is done.
 * Not while another thread uses the block. memory_commit.c. */
void sd_memory_commit(void *p);

#endif
