/* libmicrohttpd front: one thread per connection, bodies collected up to
 * --max-body bytes (then 413), JSON parsed with jansson (400 on malformed
 * JSON or invalid UTF-8), routes dispatched by method and path. */
#define _DEFAULT_SOURCE /* MSG_DONTWAIT, clock_gettime */
#include "server/http.h"
#include "server/conn_guard.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

int64_t now_unix(void) { return (int64_t)time(NULL); }

double now_mono(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* OpenAI / llama-server error types by status (llama.cpp server-common.cpp). */
static const char *type_of(unsigned status) {
    switch (status) {
    case 400: return "invalid_request_error";
    case 401: return "invalid_request_error";
    case 403: return "invalid_request_error";
    case 404: return "not_found_error";
    case 405: return "invalid_request_error";
    case 413: return "invalid_request_error";
    case 501: return "not_supported_error";
    case 503: return "unavailable_error";
    default: return "server_error";
    }
}

bool http_fail(http_err *e, unsigned status, const char *param, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    e->status = status;
    e->type = type_of(status);
    e->param = param;
    vsnprintf(e->message, sizeof e->message, fmt, ap);
    va_end(ap);
    return false;
}

json_t *http_err_json(const http_err *e) {
    json_t *o = json_object();
    json_object_set_new(o, "message", json_text(e->message, strlen(e->message)));
    json_object_set_new(o, "type", json_string(e->type ? e->type : type_of(e->status)));
    json_object_set_new(o, "param", e->param ? json_string(e->param) : json_null());
    json_object_set_new(o, "code", e->code ? json_string(e->code) : json_null());
    if (e->type && !strcmp(e->type, "exceed_context_size_error")) {
        json_object_set_new(o, "n_prompt_tokens", json_integer(e->n_prompt_tokens));
        json_object_set_new(o, "n_ctx", json_integer(e->n_ctx));
    }
    json_t *root = json_object();
    json_object_set_new(root, "error", o);
    return root;
}

/* The request this connection thread is answering (one thread per connection). */
typedef struct req req;
static _Thread_local req *current;
static void add_cors(struct MHD_Response *r);

/* A whole response; allow (405 only) becomes the Allow header. */
static enum MHD_Result send_buffer(struct MHD_Connection *c, unsigned status, const char *type, const char *text,
                                   size_t len, const char *allow) {
    struct MHD_Response *r = MHD_create_response_from_buffer(len, (void *)text, MHD_RESPMEM_MUST_COPY);
    if (!r) return MHD_NO;
    MHD_add_response_header(r, "Content-Type", type);
    if (status >= 400 && status != 503) MHD_add_response_header(r, "x-should-retry", "false");
    if (status == 503) MHD_add_response_header(r, "Retry-After", "1");
    if (allow) MHD_add_response_header(r, "Allow", allow);
    if (status == 401) MHD_add_response_header(r, "WWW-Authenticate", "Bearer");
    add_cors(r);
    http_note_status(status);
    enum MHD_Result rc = MHD_queue_response(c, status, r);
    MHD_destroy_response(r);
    return rc;
}

enum MHD_Result http_send_text(struct MHD_Connection *c, unsigned status, const char *type, const char *text,
                               size_t len) {
    return send_buffer(c, status, type, text, len, NULL);
}

static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, json_t *body, const char *allow) {
    char *s = body ? json_dumps(body, HTTP_JSON_FLAGS) : NULL;
    json_decref(body);
    if (!s) return http_send_text(c, 500, "text/plain", "out of memory", 13);
    enum MHD_Result rc = send_buffer(c, status, "application/json; charset=utf-8", s, strlen(s), allow);
    free(s);
    return rc;
}

enum MHD_Result http_send_json(struct MHD_Connection *c, unsigned status, json_t *body) {
    return send_json(c, status, body, NULL);
}

enum MHD_Result http_send_error(struct MHD_Connection *c, const http_err *e) {
    return send_json(c, e->status, http_err_json(e), e->allow);
}

json_t *json_float(float f) {
    char buf[32];
    for (int prec = 6; prec <= 9; prec++) { /* 9 significant digits always round-trip a float */
        snprintf(buf, sizeof buf, "%.*g", prec, (double)f);
        if ((float)strtod(buf, NULL) == f) break;
    }
    return json_real(strtod(buf, NULL));
}

bool http_peer_closed(struct MHD_Connection *c) {
    const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
    if (!ci) return false;
    char b;
    ssize_t r = recv(ci->connect_fd, &b, 1, MSG_PEEK | MSG_DONTWAIT);
    return r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR);
}

json_t *json_text(const char *p, size_t n) {
    json_t *v = json_stringn(p, n);
    if (v) return v;
    sd_strbuf b = {0};
    const unsigned char *u = (const unsigned char *)p;
    for (size_t i = 0; i < n;) {
        size_t len = u[i] < 0x80 ? 1 : (u[i] & 0xE0) == 0xC0 ? 2 : (u[i] & 0xF0) == 0xE0 ? 3
                   : (u[i] & 0xF8) == 0xF0 ? 4 : 0;
        bool ok = len > 0 && i + len <= n && !(len == 1 && u[i] == 0);
        for (size_t k = 1; ok && k < len; k++) ok = (u[i + k] & 0xC0) == 0x80;
        json_t *probe = ok ? json_stringn(p + i, len) : NULL; /* rejects overlongs and surrogates */
        if (probe) { sd_strbuf_add(&b, p + i, len); json_decref(probe); i += len; }
        else { sd_strbuf_puts(&b, "\xEF\xBF\xBD"); i += 1; }
    }
    v = json_stringn(sd_strbuf_str(&b), b.len);
    sd_strbuf_free(&b);
    return v ? v : json_string("");
}

/* Per-request state across MHD's calls of the access handler, and what the
 * access log prints when the request completes. */
struct req {
    sd_strbuf body;
    bool too_large, unauthorized;
    const char *cors; /* the Access-Control-Allow-Origin to send, or NULL */
    char method[8], route[64];
    double t0;
    unsigned status;
    int32_t n_prompt, n_gen;
    bool has_tokens;
};

static void add_cors(struct MHD_Response *r) {
    if (!current || !current->cors) return;
    MHD_add_response_header(r, "Access-Control-Allow-Origin", current->cors);
    MHD_add_response_header(r, "Vary", "Origin");
}

void http_add_common_headers(struct MHD_Response *r) { add_cors(r); }

void http_note_status(unsigned status) {
    if (current) current->status = status;
}

void http_note_tokens(int32_t n_prompt, int32_t n_gen) {
    if (!current) return;
    current->n_prompt = n_prompt, current->n_gen = n_gen;
    current->has_tokens = true;
}

static void access_log(const req *r) {
    char tokens[48] = "";
    if (r->has_tokens) snprintf(tokens, sizeof tokens, " tokens %d+%d", (int)r->n_prompt, (int)r->n_gen);
    fprintf(stderr, "%s %s %u%s %.0f ms\n", r->method, r->route, r->status, tokens, (now_mono() - r->t0) * 1e3);
}

static enum MHD_Result method_not_allowed(struct MHD_Connection *c, const char *method, const char *url,
                                          const char *allow) {
    http_err e = {0};
    http_fail(&e, 405, NULL, "%s %s: method not allowed (this route takes %s)", method, url, allow);
    e.allow = allow;
    return http_send_error(c, &e);
}

static enum MHD_Result too_large(server *s, struct MHD_Connection *c) {
    http_err e = {0};
    metrics_refuse(&s->m, REFUSE_BODY);
    http_fail(&e, 413, NULL, "request body larger than %d bytes (--max-body)", s->opts.max_body);
    return http_send_error(c, &e);
}

/* OpenAI's answer to a missing or wrong key; the key sent is never echoed. */
static enum MHD_Result unauthorized(server *s, struct MHD_Connection *c) {
    http_err e = {0};
    metrics_refuse(&s->m, REFUSE_AUTH);
    http_fail(&e, 401, NULL, "Incorrect or missing API key: send it as the header 'Authorization: Bearer KEY'");
    e.code = "invalid_api_key";
    return http_send_error(c, &e);
}

/* OPTIONS: a CORS preflight (it has an Origin) is answered with the CORS
 * headers for an allowed origin and refused (403) for any other; a plain
 * OPTIONS gets 204. */
static enum MHD_Result options(server *s, struct MHD_Connection *c, req *r) {
    const char *origin = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
    if (!origin) return http_send_text(c, 204, "text/plain", "", 0);
    if (!r->cors) {
        http_err e = {0};
        metrics_refuse(&s->m, REFUSE_CORS);
        http_fail(&e, 403, NULL, "cross-origin requests from this origin are not allowed (--cors-origin)");
        e.code = "cors_origin_not_allowed";
        return http_send_error(c, &e);
    }
    struct MHD_Response *resp = MHD_create_response_from_buffer(0, (void *)"", MHD_RESPMEM_PERSISTENT);
    if (!resp) return MHD_NO;
    add_cors(resp);
    MHD_add_response_header(resp, "Access-Control-Allow-Methods", "GET, HEAD, POST, OPTIONS");
    MHD_add_response_header(resp, "Access-Control-Allow-Headers", "Authorization, Content-Type");
    MHD_add_response_header(resp, "Access-Control-Max-Age", "600");
    http_note_status(204);
    enum MHD_Result rc = MHD_queue_response(c, 204, resp);
    MHD_destroy_response(resp);
    return rc;
}

static enum MHD_Result handler(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                               const char *version, const char *upload, size_t *upload_size, void **con_cls) {
    (void)version;
    server *s = cls;
    req *r = *con_cls;
    if (!r) {
        r = calloc(1, sizeof *r);
        if (!r) return MHD_NO;
        *con_cls = r;
        snprintf(r->method, sizeof r->method, "%s", method);
        snprintf(r->route, sizeof r->route, "%s", url); /* a long unknown path is cut */
        r->t0 = now_mono();
        /* A declared length over the cap is refused before reading it. */
        const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Content-Length");
        if (cl && strtoull(cl, NULL, 10) > (unsigned long long)s->opts.max_body) r->too_large = true;
        r->cors = auth_cors_origin(&s->opts.auth, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin"));
        /* The key is checked before the body is read: a request without one
         * has its body discarded, not kept. */
        if (!auth_route_public(&s->opts.auth, method, url) &&
            !auth_check(&s->opts.auth, MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Authorization")))
            r->unauthorized = true;
        return MHD_YES;
    }
    if (*upload_size) {
        if (!r->too_large && r->body.len + *upload_size > (size_t)s->opts.max_body) r->too_large = true;
        if (!r->too_large && !r->unauthorized) sd_strbuf_add(&r->body, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    current = r;
    conn_guard_request_received(c);
    if (r->unauthorized) return unauthorized(s, c);
    if (r->too_large) return too_large(s, c);
    if (r->body.oom) { /* the body did not fit in memory: what was kept is not the request */
        http_err e = {0};
        http_fail(&e, 503, NULL, "out of memory while receiving the request body");
        return http_send_error(c, &e);
    }
    const char *allow = route_allow(url);
    bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD"), post = !strcmp(method, "POST");
    if (!strcmp(method, "OPTIONS")) return options(s, c, r);
    /* a known route asked with a method it does not take: 405 and Allow (RFC 9110 15.5.6) */
    if (allow && !(strcmp(allow, "POST") ? get : post))
        return method_not_allowed(c, method, url, allow);
    if (get) return route_get(s, c, url);
    if (post) {
        specdec_error bad = {0};
        if (specdec_utf8_check(r->body.s, r->body.len, &bad)) { /* as `specdec generate -p` refuses it */
            http_err e = {0};
            http_fail(&e, 400, NULL, "the request body is %s", bad.message);
            return http_send_error(c, &e);
        }
        json_error_t je;
        /* A duplicate key is refused: parsers disagree on which copy wins (jansson
         * keeps the last, others the first), so a proxy that checked one copy
         * could pass a request whose other copy we would act on. */
        json_t *body = json_loadb(r->body.s ? r->body.s : "", r->body.len, JSON_REJECT_DUPLICATES, &je);
        /* The bytes are not needed once parsed: a request that then waits for
         * its answer does not keep up to --max-body of them meanwhile. */
        sd_strbuf_free(&r->body);
        if (!body) {
            http_err e = {0};
            /* jansson names its own flag for a \u0000 escape; say what the client sent */
            const char *why = strstr(je.text, "JSON_ALLOW_NUL") ? "\\u0000 (a NUL character) is not allowed" : je.text;
            http_fail(&e, 400, NULL, "malformed JSON body: %s (line %d, column %d)", why, je.line, je.column);
            return http_send_error(c, &e);
        }
        return route_post(s, c, url, body); /* takes the tree */
    }
    http_err e = {0};
    http_fail(&e, 404, NULL, "no route for %s %s", method, url);
    return http_send_error(c, &e);
}

static void completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)cls;
    (void)toe;
    conn_guard_request_done(c);
    req *r = *con_cls;
    if (r) {
        if (r->status) access_log(r);
        if (current == r) current = NULL;
        sd_strbuf_free(&r->body);
        free(r);
        *con_cls = NULL;
    }
}

static int hex_digit(char c) {
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* URL unescaping (%HH) that leaves "%00" as it is: decoded, a NUL would cut
 * the path where MHD hands it over as a C string ("/v1/models%00.css" would
 * read as "/v1/models"), so a path a proxy saw as one thing would route as
 * another. Undecodable escapes stay as written too. In place, never longer. */
static size_t unescape(void *cls, struct MHD_Connection *c, char *s) {
    (void)cls;
    (void)c;
    char *w = s;
    for (const char *r = s; *r;) {
        int hi, lo;
        if (r[0] == '%' && (hi = hex_digit(r[1])) >= 0 && (lo = hex_digit(r[2])) >= 0 && (hi | lo)) {
            *w++ = (char)(hi * 16 + lo);
            r += 3;
        } else {
            *w++ = *r++;
        }
    }
    *w = 0;
    return (size_t)(w - s);
}

struct MHD_Daemon *http_start(server *s, int *port) {
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)s->opts.port)};
    if (inet_pton(AF_INET, s->opts.host, &addr.sin_addr) != 1) {
        fprintf(stderr, "specdec: --host %s: not an IPv4 address\n", s->opts.host);
        return NULL;
    }
    /* The connection limits are ours (conn_guard_accept, counted in /metrics);
     * MHD's own limit sits above them as a backstop. */
    struct MHD_Daemon *d = MHD_start_daemon(
        MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_THREAD_PER_CONNECTION | MHD_USE_POLL | MHD_USE_ERROR_LOG |
            MHD_USE_ITC, /* MHD_quiesce_daemon needs it in this mode */
        (uint16_t)s->opts.port, conn_guard_accept, s, handler, s, MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&addr,
        MHD_OPTION_CONNECTION_LIMIT, (unsigned)s->opts.max_conns + 8, MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)600,
        MHD_OPTION_NOTIFY_COMPLETED, completed, NULL, MHD_OPTION_NOTIFY_CONNECTION, conn_guard_notify, NULL,
        MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL, MHD_OPTION_END);
    if (!d) return NULL;
    if (conn_guard_start(s)) {
        MHD_stop_daemon(d);
        return NULL;
    }
    const union MHD_DaemonInfo *di = MHD_get_daemon_info(d, MHD_DAEMON_INFO_BIND_PORT);
    *port = di ? di->port : s->opts.port;
    return d;
}

void http_stop(struct MHD_Daemon *d) {
    conn_guard_stop();
    MHD_stop_daemon(d);
}
