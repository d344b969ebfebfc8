/* specdec serve: load, start the inference thread and the HTTP daemon, run
 * until SIGINT (stop at once: cancel what runs) or SIGTERM (drain: stop
 * accepting, let in-flight requests finish within --drain-timeout, exit 0;
 * a second signal ends the wait). */
#define _POSIX_C_SOURCE 200809L
#ifdef __linux__
#include <malloc.h> /* mallopt, M_ARENA_MAX where the C library has them (glibc) */
#endif
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "server/front.h"
#include "server/http.h"

int cmd_serve(int argc, char **argv);

/* SIGTERM's drain: requests on open connections get 503 from now on; the
 * queued and running ones finish and are answered, until --drain-timeout
 * or another signal. */
static void drain(server *s, const sigset_t *set) {
    server_drain_start(s);
    const double t_end = now_mono() + s->opts.drain_timeout_s;
    const struct timespec tick = {0, 20 * 1000 * 1000};
    while (job_live_count() > 0 && now_mono() < t_end)
        if (sigtimedwait(set, NULL, &tick) > 0) break;
    int left = job_live_count();
    if (left > 0) fprintf(stderr, "specdec serve: %d requests still in flight after the drain, cancelling them\n", left);
    else fprintf(stderr, "specdec serve: drained\n");
}

/* Once a second, when requests have ended since the last time: the free
 * pages inside malloc's arenas go back to the system (glibc malloc_trim).
 * Requests allocate and free all the time from several threads (bodies,
 * parsed JSON, prompts, answers, streams); what they free inside an arena,
 * not at its top, stays resident (/metrics: specdec_malloc_free_bytes), so
 * the RSS wanders with the heap's layout, not with what is live. Trimming
 * keeps it near the live bytes; the walk over two arenas of a few MB took
 * 0.2 ms (median; 0.65 ms at the 90th percentile) in the soak
 * (bench/RESULTS.md). */
static void trim_heap(server *s, uint64_t *seen) {
#ifdef __GLIBC__
    pthread_mutex_lock(&s->m.mu);
    uint64_t n = s->m.requests_ok + s->m.requests_cancelled + s->m.requests_error + s->m.requests_rejected;
    for (int i = 0; i < REFUSE_N; i++) n += s->m.refused[i];
    pthread_mutex_unlock(&s->m.mu);
    if (n == *seen) return;
    *seen = n;
    malloc_trim(0);
#else
    (void)s;
    (void)seen;
#endif
}

int cmd_serve(int argc, char **argv) {
    static server s; /* big and one per process */
    memset(&s, 0, sizeof s);
    int rc = front_parse(argc, argv, &s.opts);
    if (rc) return rc < 0 ? 0 : rc;
    /* Signals go to sigwait below, not to whichever thread runs. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
#if defined(M_ARENA_MAX) && defined(M_MMAP_THRESHOLD)
    /* A server's RSS should settle, not step up hours in (glibc malloc):
     * - one thread per HTTP connection: a thread that meets contention gets
     *   a new arena (up to 8 per core), each keeping what it freed; the
     *   connection threads only parse and format JSON, two arenas serve them;
     * - glibc raises its mmap threshold each time an mmapped block is freed
     *   (up to 32 MiB); after that the prefix cache's saved states (100 KB
     *   to MBs each, stored and evicted all the time) come from the heap
     *   and fragment it. A fixed threshold (setting it turns the raising
     *   off) keeps them mmapped: a freed state goes back to the system. */
    mallopt(M_ARENA_MAX, 2);
    mallopt(M_MMAP_THRESHOLD, 128 * 1024);
#endif
    if (!front_load(&s)) { front_unload(&s); return 1; }
    pthread_mutex_init(&s.m.mu, NULL);
    prefix_cache_init(&s.pc, (size_t)(s.opts.cache_ram_mib * 1048576.0), s.model);
    s.started = now_unix();
    if (server_worker_start(&s)) {
        fprintf(stderr, "specdec: cannot start the inference thread\n");
        prefix_cache_free(&s.pc);
        front_unload(&s);
        return 1;
    }
    int port = 0;
    struct MHD_Daemon *d = http_start(&s, &port);
    if (!d) {
        fprintf(stderr, "specdec: cannot listen on %s:%d\n", s.opts.host, s.opts.port);
        server_worker_stop(&s);
        server_worker_free(&s);
        prefix_cache_free(&s.pc);
        front_unload(&s);
        return 1;
    }
    fprintf(stderr, "specdec serve: listening on http://%s:%d (model %s, chat template %s, spec %s%s%s, parallel %d)\n",
            s.opts.host, port, s.model_id, s.template_family ? s.template_family : "none",
            specdec_spec_mode_name(s.opts.gen.spec), s.draft ? ", draft " : "",
            s.draft ? specdec_model_path(s.draft) : "", s.opts.parallel);
    fflush(stderr);
    int sig = 0;
    uint64_t seen = 0;
    for (;;) {
        const struct timespec second = {1, 0};
        sig = sigtimedwait(&set, NULL, &second);
        if (sig > 0) break;
        trim_heap(&s, &seen);
    }
    fprintf(stderr, "specdec serve: %s, %s\n", sig == SIGINT ? "SIGINT" : "SIGTERM",
            sig == SIGINT ? "stopping" : "draining");
    /* Stop accepting: closing the listening socket makes new connections
     * fail at once (a load balancer moves on), not wait in the backlog. */
    MHD_socket lfd = MHD_quiesce_daemon(d);
    if (lfd != MHD_INVALID_SOCKET) close(lfd);
    if (sig == SIGTERM) drain(&s, &set);
    /* Cancel what is left, let the running generate end, close the connections. */
    server_worker_stop(&s);
    http_stop(d);
    server_worker_free(&s);
    prefix_cache_free(&s.pc);
    front_unload(&s);
    return 0;
}
