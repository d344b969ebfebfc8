/* GET /metrics: Prometheus text format 0.0.4. Names follow llama-server's
 * (`llamacpp:prompt_tokens_total`, `llamacpp:spec_decode_num_draft_tokens_total`,
 * tools/server/README.md) with the prefix `specdec_`. */
#include "server/server.h"

#if defined(__GLIBC__) && (__GLIBC__ > 2 || (__GLIBC__ == 2 && __GLIBC_MINOR__ >= 33))
#include <malloc.h> /* mallinfo2 */
#define SD_HAVE_MALLINFO2 1
#endif

void metrics_record(metrics *m, const job *j) {
    const specdec_stats *st = &j->stats;
    pthread_mutex_lock(&m->mu);
    if (j->status != SPECDEC_OK) m->requests_error++;
    else if (st->stop_reason == SPECDEC_STOP_CANCELLED) m->requests_cancelled++;
    else m->requests_ok++;
    m->prompt_tokens += (uint64_t)(st->n_prompt - st->n_cached);
    m->prompt_tokens_cached += (uint64_t)st->n_cached;
    m->predicted_tokens += (uint64_t)st->n_gen;
    m->prompt_ms += st->t_prefill_ms;
    m->predicted_ms += st->t_decode_ms;
    m->draft_tokens += (uint64_t)st->n_drafted;
    m->accepted_tokens += (uint64_t)st->n_accepted;
    m->drafts += (uint64_t)st->n_rounds;
    pthread_mutex_unlock(&m->mu);
}

void metrics_reject(metrics *m) {
    pthread_mutex_lock(&m->mu);
    m->requests_rejected++;
    pthread_mutex_unlock(&m->mu);
}

void metrics_refuse(metrics *m, refusal why) {
    pthread_mutex_lock(&m->mu);
    m->refused[why]++;
    pthread_mutex_unlock(&m->mu);
}

static void counter(sd_strbuf *o, const char *name, const char *help, double v) {
    sd_strbuf_printf(o, "# HELP specdec_%s %s\n# TYPE specdec_%s counter\nspecdec_%s %.17g\n", name, help, name, name, v);
}

static void gauge(sd_strbuf *o, const char *name, const char *help, double v) {
    sd_strbuf_printf(o, "# HELP specdec_%s %s\n# TYPE specdec_%s gauge\nspecdec_%s %.17g\n", name, help, name, name, v);
}

void metrics_text(server *s, sd_strbuf *o) {
    metrics m;
    pthread_mutex_lock(&s->m.mu);
    m = s->m;
    pthread_mutex_unlock(&s->m.mu);
    int waiting;
    int running;
    server_queue_state(s, &waiting, &running);
    sd_strbuf_printf(o, "# HELP specdec_requests_total Generation requests finished, by outcome.\n"
                   "# TYPE specdec_requests_total counter\n"
                   "specdec_requests_total{outcome=\"ok\"} %llu\n"
                   "specdec_requests_total{outcome=\"cancelled\"} %llu\n"
                   "specdec_requests_total{outcome=\"error\"} %llu\n"
                   "specdec_requests_total{outcome=\"rejected\"} %llu\n",
                (unsigned long long)m.requests_ok, (unsigned long long)m.requests_cancelled,
                (unsigned long long)m.requests_error, (unsigned long long)m.requests_rejected);
    static const char *const why[REFUSE_N] = {"auth", "cors", "body_size", "prompt_tokens", "max_tokens",
                                              "request_timeout", "write_timeout", "connections_per_ip",
                                              "connections"};
    sd_strbuf_puts(o, "# HELP specdec_refused_total Requests and connections refused by a limit or a key check.\n"
                      "# TYPE specdec_refused_total counter\n");
    for (int i = 0; i < REFUSE_N; i++)
        sd_strbuf_printf(o, "specdec_refused_total{reason=\"%s\"} %llu\n", why[i], (unsigned long long)m.refused[i]);
    counter(o, "prompt_tokens_total", "Prompt tokens prefilled (not counting reused ones).", (double)m.prompt_tokens);
    counter(o, "prompt_tokens_cached_total", "Prompt tokens reused from the KV cache.", (double)m.prompt_tokens_cached);
    counter(o, "prompt_seconds_total", "Prompt prefill time.", m.prompt_ms / 1e3);
    counter(o, "tokens_predicted_total", "Generated tokens.", (double)m.predicted_tokens);
    counter(o, "tokens_predicted_seconds_total", "Generation time.", m.predicted_ms / 1e3);
    counter(o, "spec_decode_num_draft_tokens_total", "Draft tokens checked by the target.", (double)m.draft_tokens);
    counter(o, "spec_decode_num_accepted_tokens_total", "Draft tokens accepted.", (double)m.accepted_tokens);
    counter(o, "spec_decode_num_drafts_total", "Verify rounds (target forwards that checked drafts).", (double)m.drafts);
    gauge(o, "spec_decode_acceptance_rate", "Accepted / drafted tokens since start.",
          m.draft_tokens ? (double)m.accepted_tokens / (double)m.draft_tokens : 0);
    gauge(o, "requests_processing", "Requests generating now (one per busy slot).", running);
    gauge(o, "requests_deferred", "Requests waiting in the queue.", waiting);
    prefix_cache_metrics(&s->pc, o);
    /* The suffix memory (--suffix-tokens) fills up to its budget as answers come: a
     * growth an operator (or the soak) must be able to tell from a leak. */
    specdec_suffix_cache_info si;
    specdec_suffix_cache_get_info(s->suffix, &si);
    gauge(o, "suffix_cache_tokens", "Tokens the suffix memory holds (--suffix-tokens).", (double)si.n_tokens);
    gauge(o, "suffix_cache_bytes", "Bytes the suffix memory holds now.", (double)si.bytes);
#ifdef SD_HAVE_MALLINFO2
    /* The C library's heap (glibc, summed over its arenas): what the process holds
     * live against what malloc keeps free inside its arenas. A growing live figure
     * is a structure that grows; a growing free figure with a flat live one is
     * fragmentation (memory freed but not given back). */
    struct mallinfo2 mi = mallinfo2();
    gauge(o, "malloc_in_use_bytes", "Bytes allocated by malloc and not freed (arenas and mmapped blocks).",
          (double)(mi.uordblks + mi.hblkhd));
    gauge(o, "malloc_mmapped_bytes", "Of those, bytes in blocks malloc mmapped on their own.", (double)mi.hblkhd);
    gauge(o, "malloc_free_bytes", "Bytes free inside malloc's arenas (kept, not returned to the system).",
          (double)mi.fordblks);
    gauge(o, "malloc_arena_bytes", "Bytes of the arenas (in use and free, mmapped blocks not counted).",
          (double)mi.arena);
#endif
}
