/* The suffix memory behind its public handle (include/specdec.h): the
 * decode layer's sd_suffix_cache at SuffixDecoding's default depth. */
#include <pthread.h>
#include <stdlib.h>

#include "api/api_internal.h"

specdec_status specdec_suffix_cache_init(int64_t max_tokens, specdec_suffix_cache **out, specdec_error *err) {
    if (!out) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_suffix_cache_init: NULL out");
    *out = NULL;
    specdec_suffix_cache *c = calloc(1, sizeof *c);
    if (!c) return sd_api_fail(err, SPECDEC_ERR_NOMEM, "suffix memory: out of memory");
    sd_err e = {0};
    if (sd_suffix_cache_init(&c->mem, max_tokens, SD_SUFFIX_DEPTH, &e) != SD_OK) {
        free(c);
        return sd_api_error(err, &e);
    }
    *out = c;
    return SPECDEC_OK;
}

void specdec_suffix_cache_free(specdec_suffix_cache *cache) {
    if (!cache) return;
    sd_suffix_cache_free(&cache->mem);
    free(cache);
}

specdec_status specdec_suffix_cache_add(specdec_suffix_cache *cache, const specdec_token *tokens, size_t n,
                                        specdec_error *err) {
    if (!cache || (!tokens && n)) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_suffix_cache_add: NULL argument");
    for (size_t i = 0; i < n; i++)
        if (tokens[i] < 0) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_suffix_cache_add: token %zu is negative", i);
    const specdec_token *t = tokens;
    if (n > (size_t)INT32_MAX) { /* the memory keeps an output's tail anyway */
        t += n - (size_t)INT32_MAX;
        n = INT32_MAX;
    }
    sd_err e = {0};
    return sd_suffix_cache_add(&cache->mem, t, (int32_t)n, &e) == SD_OK ? SPECDEC_OK : sd_api_error(err, &e);
}

void specdec_suffix_cache_get_info(const specdec_suffix_cache *cache, specdec_suffix_cache_info *info) {
    *info = (specdec_suffix_cache_info){0};
    if (!cache) return;
    sd_suffix_cache *m = (sd_suffix_cache *)&cache->mem; /* the lock only: generations may be adding */
    pthread_mutex_lock(&m->mu);
    *info = (specdec_suffix_cache_info){.max_tokens = m->max_tokens,
                                        .n_tokens = m->n_tokens,
                                        .n_outputs = m->n_doc,
                                        .n_added = m->n_added,
                                        .n_evicted = m->n_evicted,
                                        .bytes = sd_suffix_cache_bytes(m),
                                        .bytes_max = sd_suffix_cache_bytes_max(m)};
    pthread_mutex_unlock(&m->mu);
}
