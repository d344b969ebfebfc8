/* Connection registry and watchdog (conn_guard.h). Every open connection is
 * in a list under one lock: its socket, its client address, when its current
 * request began to arrive, and whether a stream waits on its client. The
 * watchdog scans the list ten times a second. */
#define _DEFAULT_SOURCE
#include "server/conn_guard.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include "server/http.h"

#define CONN_SNDBUF (256 * 1024) /* bytes; the kernel doubles it for its bookkeeping */

typedef enum conn_phase { PHASE_RECEIVING, PHASE_ANSWERING, PHASE_STREAM_WAIT } conn_phase;

typedef struct conn {
    struct conn *prev, *next;
    int fd;
    struct sockaddr_storage addr;
    socklen_t addrlen;
    conn_phase phase;
    double since; /* when the phase began (monotonic seconds) */
    bool killed;
} conn;

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    conn *head;
    int n;
    server *s;
    pthread_t thread;
    bool running, stop;
} g = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

/* The address part of a socket address (the port is not part of a client's identity). */
static bool same_host(const struct sockaddr *a, const struct sockaddr *b) {
    if (a->sa_family != b->sa_family) return false;
    if (a->sa_family == AF_INET)
        return ((const struct sockaddr_in *)a)->sin_addr.s_addr == ((const struct sockaddr_in *)b)->sin_addr.s_addr;
    if (a->sa_family == AF_INET6)
        return !memcmp(&((const struct sockaddr_in6 *)a)->sin6_addr, &((const struct sockaddr_in6 *)b)->sin6_addr,
                       sizeof(struct in6_addr));
    return false;
}

enum MHD_Result conn_guard_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen) {
    server *s = cls;
    (void)addrlen;
    pthread_mutex_lock(&g.mu);
    int same = 0;
    for (conn *c = g.head; c; c = c->next)
        if (!c->killed && same_host((const struct sockaddr *)&c->addr, addr)) same++;
    int total = g.n;
    pthread_mutex_unlock(&g.mu);
    if (total >= s->opts.max_conns) { metrics_refuse(&s->m, REFUSE_CONN_ALL); return MHD_NO; }
    if (same >= s->opts.max_conns_per_ip) { metrics_refuse(&s->m, REFUSE_CONN_IP); return MHD_NO; }
    return MHD_YES;
}

void conn_guard_notify(void *cls, struct MHD_Connection *mc, void **socket_context,
                       enum MHD_ConnectionNotificationCode code) {
    (void)cls;
    if (code == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *fi = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
        conn *c = calloc(1, sizeof *c);
        if (!c) { /* out of memory: unguarded it would escape the limits and deadlines, so it is closed */
            if (fi) shutdown(fi->connect_fd, SHUT_RDWR);
            return;
        }
        const union MHD_ConnectionInfo *ai = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CLIENT_ADDRESS);
        c->fd = fi ? fi->connect_fd : -1;
        /* A fixed send buffer: Linux would grow it up to tcp_wmem's maximum
         * (4 MiB), so a client that never reads could pin that much kernel
         * memory per connection, and a whole answer could vanish into the
         * buffer before the write timeout had anything to notice. */
        int sndbuf = CONN_SNDBUF;
        if (c->fd >= 0) setsockopt(c->fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof sndbuf);
        if (ai && ai->client_addr) {
            c->addrlen = ai->client_addr->sa_family == AF_INET6 ? sizeof(struct sockaddr_in6) : sizeof(struct sockaddr_in);
            memcpy(&c->addr, ai->client_addr, c->addrlen);
        }
        c->phase = PHASE_RECEIVING;
        c->since = now_mono();
        pthread_mutex_lock(&g.mu);
        c->next = g.head;
        if (g.head) g.head->prev = c;
        g.head = c;
        g.n++;
        pthread_mutex_unlock(&g.mu);
        *socket_context = c;
    } else if (code == MHD_CONNECTION_NOTIFY_CLOSED) {
        conn *c = *socket_context;
        if (!c) return;
        pthread_mutex_lock(&g.mu);
        if (c->prev) c->prev->next = c->next;
        else g.head = c->next;
        if (c->next) c->next->prev = c->prev;
        g.n--;
        pthread_mutex_unlock(&g.mu);
        free(c);
        *socket_context = NULL;
    }
}

static conn *conn_of(struct MHD_Connection *mc) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return ci ? ci->socket_context : NULL;
}

static void set_phase(struct MHD_Connection *mc, conn_phase phase) {
    conn *c = conn_of(mc);
    if (!c) return;
    pthread_mutex_lock(&g.mu);
    c->phase = phase;
    c->since = now_mono();
    pthread_mutex_unlock(&g.mu);
}

void conn_guard_request_received(struct MHD_Connection *c) { set_phase(c, PHASE_ANSWERING); }
void conn_guard_request_done(struct MHD_Connection *c) { set_phase(c, PHASE_RECEIVING); }
void conn_guard_stream_waiting(struct MHD_Connection *c, bool waiting) {
    set_phase(c, waiting ? PHASE_STREAM_WAIT : PHASE_ANSWERING);
}

/* One scan: connections over a deadline are shut down (both directions, so a
 * blocked recv, send or poll on them returns) and counted once. */
static void scan(void) {
    double now = now_mono();
    const server_opts *o = &g.s->opts;
    for (conn *c = g.head; c; c = c->next) {
        if (c->killed || c->fd < 0) continue;
        refusal why;
        if (c->phase == PHASE_RECEIVING && now - c->since > o->request_timeout_s) why = REFUSE_REQ_TIMEOUT;
        else if (c->phase == PHASE_STREAM_WAIT && now - c->since > o->write_timeout_s) why = REFUSE_WRITE_TIMEOUT;
        else continue;
        c->killed = true;
        shutdown(c->fd, SHUT_RDWR);
        metrics_refuse(&g.s->m, why);
    }
}

static void *watchdog(void *arg) {
    (void)arg;
    pthread_mutex_lock(&g.mu);
    while (!g.stop) {
        scan();
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
        pthread_cond_timedwait(&g.cv, &g.mu, &ts);
    }
    pthread_mutex_unlock(&g.mu);
    return NULL;
}

int conn_guard_start(server *s) {
    g.s = s;
    g.stop = false;
    if (pthread_create(&g.thread, NULL, watchdog, NULL)) return -1;
    g.running = true;
    return 0;
}

void conn_guard_stop(void) {
    if (!g.running) return;
    pthread_mutex_lock(&g.mu);
    g.stop = true;
    pthread_cond_signal(&g.cv);
    pthread_mutex_unlock(&g.mu);
    pthread_join(g.thread, NULL);
    g.running = false;
}
