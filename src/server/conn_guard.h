/* Limits on what a client's connection holds: how many connections an
 * address and everyone together may have open (checked at accept), how long
 * a request may take to arrive, and how long a stream may wait for its
 * client to read. libmicrohttpd's own timeout is an idle timeout that any
 * byte resets, so a client sending a byte a second would hold its thread
 * forever; a watchdog thread of ours enforces whole-request deadlines by
 * shutting the socket down, which every blocked call on it notices (the
 * connection then ends, and a running generation is cancelled through the
 * same path as for a client that disconnected). */
#ifndef SD_SERVER_CONN_GUARD_H
#define SD_SERVER_CONN_GUARD_H

#include <microhttpd.h>

#include "server/server.h"

/* The daemon options that route connections through the guard: the accept
 * policy and the connection notifications. Call before MHD_start_daemon;
 * conn_guard_start after it (the watchdog thread), conn_guard_stop before
 * MHD_stop_daemon. One server per process. */
enum MHD_Result conn_guard_accept(void *cls, const struct sockaddr *addr, socklen_t addrlen);
void conn_guard_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                       enum MHD_ConnectionNotificationCode code);
int conn_guard_start(server *s);
void conn_guard_stop(void);

/* The request on c has arrived whole (its deadline no longer applies). */
void conn_guard_request_received(struct MHD_Connection *c);
/* The request on c has been answered; the next one's deadline starts now. */
void conn_guard_request_done(struct MHD_Connection *c);
/* A stream's content reader: waiting true when it has handed bytes to MHD
 * and waits to be called again (the client has to read them), false while
 * it runs. A stream that waits longer than --write-timeout is closed. */
void conn_guard_stream_waiting(struct MHD_Connection *c, bool waiting);

#endif
