/* specdec serve: load, start the inference thread and the HTTP daemon, run
 * until SIGINT or SIGTERM. */
#define _POSIX_C_SOURCE 200809L
#include <microhttpd.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "server/front.h"
#include "server/http.h"

int cmd_serve(int argc, char **argv);

int cmd_serve(int argc, char **argv) {
    static server s; /* big and one per process */
    memset(&s, 0, sizeof s);
    int rc = front_parse(argc, argv, true, &s.opts);
    if (rc) return rc < 0 ? 0 : rc;
    /* Signals go to sigwait below, not to whichever thread runs. */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);
    if (!front_load(&s)) { front_unload(&s); return 1; }
    pthread_mutex_init(&s.m.mu, NULL);
    s.started = now_unix();
    if (server_worker_start(&s)) {
        fprintf(stderr, "specdec: cannot start the inference thread\n");
        front_unload(&s);
        return 1;
    }
    int port = 0;
    struct MHD_Daemon *d = http_start(&s, &port);
    if (!d) {
        fprintf(stderr, "specdec: cannot listen on %s:%d\n", s.opts.host, s.opts.port);
        server_worker_stop(&s);
        front_unload(&s);
        return 1;
    }
    fprintf(stderr, "specdec serve: listening on http://%s:%d (model %s, chat template %s, spec %s%s%s, parallel %d)\n",
            s.opts.host, port, s.model_id, s.template_family ? s.template_family : "none",
            specdec_spec_mode_name(s.opts.gen.spec), s.draft ? ", draft " : "",
            s.draft ? specdec_model_path(s.draft) : "", s.opts.parallel);
    fflush(stderr);
    int sig = 0;
    sigwait(&set, &sig);
    fprintf(stderr, "specdec serve: %s, stopping\n", sig == SIGINT ? "SIGINT" : "SIGTERM");
    /* Stop taking requests, cancel the waiting ones, let the running one end. */
    MHD_quiesce_daemon(d);
    server_worker_stop(&s);
    MHD_stop_daemon(d);
    front_unload(&s);
    return 0;
}
