/* The prefix cache of specdec serve: see prefix_cache.h. A linear scan over
 * the entries is enough (each holds a whole turn; a budget of GiB holds
 * hundreds, and a match is a token comparison per entry). */
#include "server/prefix_cache.h"

#include <stdlib.h>
#include <string.h>

void prefix_cache_init(prefix_cache *pc, size_t cap_bytes, const specdec_model *model) {
    memset(pc, 0, sizeof *pc);
    pc->cap = cap_bytes;
    specdec_model_layout l;
    pc->hybrid = specdec_model_layout_get(model, &l, NULL) == SPECDEC_OK && l.n_layer_gdn > 0;
    pthread_mutex_init(&pc->mu, NULL);
}

void prefix_cache_free(prefix_cache *pc) {
    for (size_t i = 0; i < pc->n; i++) specdec_state_free(pc->e[i].st);
    free(pc->e);
    pthread_mutex_destroy(&pc->mu);
    memset(pc, 0, sizeof *pc);
}

/* Drops entry i (under mu). */
static void drop(prefix_cache *pc, size_t i) {
    pc->bytes -= pc->e[i].bytes;
    specdec_state_free(pc->e[i].st);
    pc->e[i] = pc->e[--pc->n];
}

/* Evicts least recently used entries until need more bytes fit (under mu). */
static void make_room(prefix_cache *pc, size_t need) {
    while (pc->n > 0 && pc->bytes + need > pc->cap) {
        size_t lru = 0;
        for (size_t i = 1; i < pc->n; i++)
            if (pc->e[i].used < pc->e[lru].used) lru = i;
        drop(pc, lru);
        pc->evictions++;
    }
}

/* Whether a's tokens are a prefix of b's (a dense state a then adds nothing b lacks). */
static bool is_prefix(const specdec_state *a, const specdec_state *b) {
    size_t na, nb;
    const specdec_token *ta = specdec_state_tokens(a, &na), *tb = specdec_state_tokens(b, &nb);
    return na <= nb && !memcmp(ta, tb, na * sizeof *ta);
}

/* Saves ctx's state as a new entry (the budget never exceeded: room is made
 * before the copy). Entries it makes useless go: for a dense model those
 * whose tokens it extends, for a hybrid only one with the same tokens. */
static void store(prefix_cache *pc, pc_use *u, specdec_context *ctx) {
    const size_t need = specdec_state_size(ctx);
    size_t n_tok = 0;
    specdec_context_tokens(ctx, &n_tok);
    u->live = 0; /* ctx has moved on from whatever entry it held */
    pthread_mutex_lock(&pc->mu);
    if (need > pc->cap || n_tok < 2) { pthread_mutex_unlock(&pc->mu); return; }
    make_room(pc, need);
    specdec_state *st = NULL;
    if (pc->n == pc->n_alloc) {
        size_t na = pc->n_alloc ? 2 * pc->n_alloc : 16;
        pc_entry *ne = realloc(pc->e, na * sizeof *ne);
        if (!ne) { pthread_mutex_unlock(&pc->mu); return; }
        pc->e = ne;
        pc->n_alloc = na;
    }
    if (specdec_state_save(ctx, &st, NULL) != SPECDEC_OK) { pthread_mutex_unlock(&pc->mu); return; }
    for (size_t i = pc->n; i-- > 0;) {
        size_t na, nb;
        specdec_state_tokens(pc->e[i].st, &na);
        specdec_state_tokens(st, &nb);
        if (is_prefix(pc->e[i].st, st) && (!pc->hybrid || na == nb)) drop(pc, i);
    }
    pc->e[pc->n++] = (pc_entry){st, specdec_state_bytes(st), ++pc->tick, ++pc->next_id};
    pc->bytes += specdec_state_bytes(st);
    pc->stores++;
    u->live = pc->next_id;
    pthread_mutex_unlock(&pc->mu);
}

/* The entry sharing the longest usable prefix with the prompt (the most
 * recent among equals), or -1; its reusable token count in *best_n. */
static long best_entry(prefix_cache *pc, specdec_context *ctx, const specdec_token *prompt, size_t n,
                       size_t *best_n) {
    long best = -1;
    *best_n = 0;
    for (size_t i = 0; i < pc->n; i++) {
        size_t m = specdec_state_match(ctx, pc->e[i].st, prompt, n);
        if (m > *best_n || (m > 0 && m == *best_n && pc->e[i].used > pc->e[best].used)) {
            best = (long)i;
            *best_n = m;
        }
    }
    return best;
}

bool prefix_cache_restore(prefix_cache *pc, pc_use *u, specdec_context *ctx, const specdec_token *prompt, size_t n,
                          bool count) {
    u->reused = -1;
    if (pc->cap == 0 || n < 2) return false;
    pthread_mutex_lock(&pc->mu);
    size_t best_n = 0;
    long best = best_entry(pc, ctx, prompt, n, &best_n);
    bool restored = false;
    if (best >= 0) {
        pc->e[best].used = ++pc->tick;
        if (count) {
            pc->hits++;
            pc->restored_tokens += best_n;
        }
        const bool held = pc->e[best].id == u->live;
        restored = held || specdec_state_restore(ctx, pc->e[best].st, best_n, NULL) == SPECDEC_OK;
        if (!held) u->live = 0; /* ctx holds a prefix of it now */
    } else {
        pc->misses += count;
        if (pc->hybrid) specdec_context_reset(ctx); /* no re-decode of another conversation's tokens */
        u->live = 0;
    }
    pthread_mutex_unlock(&pc->mu);
    u->reused = restored ? (int32_t)best_n : pc->hybrid ? 0 : -1; /* -1: the library's own reuse stands */
    /* A hybrid's checkpoint at the prompt's end: its recurrent state exists
     * only where it is taken, and the next turn's prompt repeats this one. */
    return pc->hybrid && best_n + 1 < n - 1;
}

void prefix_cache_checkpointed(prefix_cache *pc, pc_use *u, specdec_context *ctx, double prefill_ms) {
    u->pre_ms = prefill_ms;
    store(pc, u, ctx);
}

void prefix_cache_leave(prefix_cache *pc, pc_use *u, specdec_context *ctx, specdec_status rc, specdec_stats *st) {
    if (pc->cap == 0) return;
    if (u->reused >= 0 && rc == SPECDEC_OK) {
        st->n_cached = u->reused;
        st->t_prefill_ms += u->pre_ms;
    }
    if (rc != SPECDEC_OK) {
        u->live = 0;
        return;
    }
    store(pc, u, ctx);
}

void prefix_cache_metrics(prefix_cache *pc, sd_strbuf *o) {
    pthread_mutex_lock(&pc->mu);
    sd_strbuf_printf(o,
                     "# HELP specdec_prefix_cache_entries Saved conversation states.\n"
                     "# TYPE specdec_prefix_cache_entries gauge\nspecdec_prefix_cache_entries %zu\n"
                     "# HELP specdec_prefix_cache_bytes Bytes the saved states hold.\n"
                     "# TYPE specdec_prefix_cache_bytes gauge\nspecdec_prefix_cache_bytes %zu\n"
                     "# HELP specdec_prefix_cache_capacity_bytes The budget (--cache-ram).\n"
                     "# TYPE specdec_prefix_cache_capacity_bytes gauge\nspecdec_prefix_cache_capacity_bytes %zu\n"
                     "# HELP specdec_prefix_cache_hits_total Requests that restored a saved state.\n"
                     "# TYPE specdec_prefix_cache_hits_total counter\nspecdec_prefix_cache_hits_total %llu\n"
                     "# HELP specdec_prefix_cache_misses_total Requests no saved state matched.\n"
                     "# TYPE specdec_prefix_cache_misses_total counter\nspecdec_prefix_cache_misses_total %llu\n"
                     "# HELP specdec_prefix_cache_evictions_total States dropped to stay under the budget.\n"
                     "# TYPE specdec_prefix_cache_evictions_total counter\nspecdec_prefix_cache_evictions_total %llu\n"
                     "# HELP specdec_prefix_cache_restored_tokens_total Prompt tokens restored from saved states.\n"
                     "# TYPE specdec_prefix_cache_restored_tokens_total counter\n"
                     "specdec_prefix_cache_restored_tokens_total %llu\n",
                     pc->n, pc->bytes, pc->cap, (unsigned long long)pc->hits, (unsigned long long)pc->misses,
                     (unsigned long long)pc->evictions, (unsigned long long)pc->restored_tokens);
    pthread_mutex_unlock(&pc->mu);
}
