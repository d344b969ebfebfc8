/* The cross-request memory (suffix_cache.h): a list of whole outputs in
 * recency order over one suffix trie. */
#include "decode/suffix_cache.h"

#include <stdlib.h>
#include <string.h>

#include "core/checked.h"

sd_status sd_suffix_cache_init(sd_suffix_cache *c, int64_t max_tokens, int depth, sd_err *err) {
    memset(c, 0, sizeof *c);
    if (max_tokens < 1 || max_tokens > INT32_MAX)
        return sd_err_set(err, SD_ERR_ARG, "suffix memory: %lld tokens (1..%d)", (long long)max_tokens, INT32_MAX);
    if (depth < 1 || depth > SD_STREE_MAX_DEPTH)
        return sd_err_set(err, SD_ERR_ARG, "suffix memory: depth %d (1..%d)", depth, SD_STREE_MAX_DEPTH);
    if (!sd_stree_init(&c->tree, depth)) return sd_err_set(err, SD_ERR_NOMEM, "suffix memory: out of memory");
    c->max_tokens = max_tokens;
    c->next_serial = 1;
    pthread_mutex_init(&c->mu, NULL);
    return SD_OK;
}

void sd_suffix_cache_free(sd_suffix_cache *c) {
    if (!c) return;
    for (int32_t i = 0; i < c->n_doc; i++) free(c->doc[i].tok);
    free(c->doc);
    sd_stree_free(&c->tree);
    pthread_mutex_destroy(&c->mu);
    memset(c, 0, sizeof *c);
}

/* Takes doc[0], the least recently used, out of the trie and the list. */
static void evict_oldest(sd_suffix_cache *c) {
    sd_suffix_doc *d = &c->doc[0];
    sd_stree_remove(&c->tree, d->tok, d->n);
    c->n_tokens -= d->n;
    free(d->tok);
    memmove(c->doc, c->doc + 1, (size_t)(c->n_doc - 1) * sizeof *c->doc);
    c->n_doc--;
    c->n_evicted++;
}

static sd_status add_locked(sd_suffix_cache *c, const int32_t *tok, int32_t n, sd_err *err) {
    if (n > c->max_tokens) { /* its end is what a next request most likely repeats */
        tok += n - c->max_tokens;
        n = (int32_t)c->max_tokens;
    }
    while (c->n_doc > 0 && c->n_tokens + n > c->max_tokens) evict_oldest(c);
    if (c->n_doc == c->cap_doc) {
        int32_t cap = c->cap_doc ? 2 * c->cap_doc : 16;
        sd_suffix_doc *d = realloc(c->doc, (size_t)cap * sizeof *d);
        if (!d) return sd_err_set(err, SD_ERR_NOMEM, "suffix memory: out of memory");
        c->doc = d;
        c->cap_doc = cap;
    }
    int32_t *copy = sd_malloc_array((size_t)n, sizeof *copy);
    if (!copy) return sd_err_set(err, SD_ERR_NOMEM, "suffix memory: out of memory");
    memcpy(copy, tok, (size_t)n * sizeof *copy);
    const uint32_t serial = c->next_serial++;
    if (c->next_serial == 0) c->next_serial = 1;
    sd_stree_cursor cur;
    sd_stree_cursor_start(&cur);
    for (int32_t i = 0; i < n; i++)
        if (!sd_stree_append(&c->tree, &cur, copy[i], serial)) {
            sd_stree_remove(&c->tree, copy, i); /* the part inserted, whole token by token */
            free(copy);
            return sd_err_set(err, SD_ERR_NOMEM, "suffix memory: out of memory");
        }
    c->doc[c->n_doc++] = (sd_suffix_doc){.serial = serial, .n = n, .tok = copy};
    c->n_tokens += n;
    c->n_added++;
    return SD_OK;
}

sd_status sd_suffix_cache_add(sd_suffix_cache *c, const int32_t *tok, int32_t n, sd_err *err) {
    if (n <= 0) return SD_OK;
    pthread_mutex_lock(&c->mu);
    const sd_status st = add_locked(c, tok, n, err);
    pthread_mutex_unlock(&c->mu);
    return st;
}

static int32_t index_of(const sd_suffix_cache *c, uint32_t serial) {
    for (int32_t i = c->n_doc - 1; i >= 0; i--) /* recent outputs are the likely ones */
        if (c->doc[i].serial == serial) return i;
    return -1;
}

void sd_suffix_cache_touch(sd_suffix_cache *c, uint32_t serial) {
    pthread_mutex_lock(&c->mu);
    int32_t i = index_of(c, serial);
    if (i >= 0 && i < c->n_doc - 1) {
        sd_suffix_doc d = c->doc[i];
        memmove(c->doc + i, c->doc + i + 1, (size_t)(c->n_doc - 1 - i) * sizeof *c->doc);
        c->doc[c->n_doc - 1] = d;
    }
    pthread_mutex_unlock(&c->mu);
}

bool sd_suffix_cache_holds(const sd_suffix_cache *c, uint32_t serial) { return index_of(c, serial) >= 0; }

size_t sd_suffix_cache_bytes(const sd_suffix_cache *c) {
    return sd_stree_bytes(&c->tree) + (size_t)c->n_tokens * sizeof(int32_t) + (size_t)c->cap_doc * sizeof *c->doc;
}

size_t sd_suffix_cache_bytes_max(const sd_suffix_cache *c) {
    const size_t n = (size_t)c->max_tokens;
    const size_t list = 2 * n > 16 ? 2 * n : 16;
    return SD_STREE_BYTES_INIT + (n + 1) * sd_stree_bytes_per_token_max(c->tree.depth) + n * sizeof(int32_t) +
           list * sizeof(sd_suffix_doc);
}
