/* HTTP plumbing shared by the routes: responses, errors, the request record. */
#ifndef SD_SERVER_HTTP_H
#define SD_SERVER_HTTP_H

#include <jansson.h>
#include <microhttpd.h>

#include "server/server.h"

/* An error to answer with: OpenAI's {"error":{"message","type","param","code"}}. */
typedef struct http_err {
    unsigned status;   /* 400, 404, 405, 413, 500, 501, 503 */
    const char *type;  /* invalid_request_error, not_found_error, ... (static) */
    const char *param; /* the offending request field, or NULL (static) */
    const char *code;  /* OpenAI's machine-readable code (a string), or NULL: sent as null (static) */
    const char *allow; /* 405 only: the Allow header, the methods the route takes (static) */
    char message[512];
    int n_prompt_tokens, n_ctx; /* exceed_context_size_error only */
} http_err;

/* Fills e; returns false so parsers can `return http_fail(...)`. */
bool http_fail(http_err *e, unsigned status, const char *param, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* The error object (also sent in-stream as data: {"error":...}). New reference. */
json_t *http_err_json(const http_err *e);

enum MHD_Result http_send_json(struct MHD_Connection *c, unsigned status, json_t *body); /* steals body */
enum MHD_Result http_send_error(struct MHD_Connection *c, const http_err *e);
enum MHD_Result http_send_text(struct MHD_Connection *c, unsigned status, const char *type, const char *text,
                               size_t len);

/* True when the client has closed its end of the connection (checked with a
 * non-blocking peek, so a pipelined next request does not count). */
bool http_peer_closed(struct MHD_Connection *c);

/* Headers every response gets for this request (CORS for an allowed
 * origin); for responses built outside http.c (the SSE stream). */
void http_add_common_headers(struct MHD_Response *r);

/* Flags of every JSON body and SSE chunk: compact, and reals with 15 significant
 * digits, so a double parsed from a short decimal prints as that decimal. */
#define HTTP_JSON_FLAGS (JSON_COMPACT | JSON_REAL_PRECISION(15))

/* A float setting as a JSON real that prints as the float's shortest decimal
 * (0.8f as 0.8, not 0.800000011920929). New reference. */
json_t *json_float(float f);

/* The access log: the status and token counts of the request this connection
 * thread is answering (MHD runs one thread per connection), printed as one
 * line on stderr when the request completes. */
void http_note_status(unsigned status);
void http_note_tokens(int32_t n_prompt, int32_t n_gen);

/* Replaces bytes that are not valid UTF-8 by U+FFFD, so jansson accepts the text. */
json_t *json_text(const char *p, size_t n);

/* Seconds since the epoch and a monotonic clock in seconds. */
int64_t now_unix(void);
double now_mono(void);

/* Routes (routes.c, oai.c). Each answers the request and returns MHD's result. */
/* The methods a known route takes ("GET, HEAD" or "POST", for the Allow header), NULL for an unknown path. */
const char *route_allow(const char *url);
enum MHD_Result route_get(server *s, struct MHD_Connection *c, const char *url);
/* route_post and oai_handle take body (the parsed request, owned): a completion
 * releases it once parsed, before it waits for its answer. */
enum MHD_Result route_post(server *s, struct MHD_Connection *c, const char *url, json_t *body);
enum MHD_Result oai_handle(server *s, struct MHD_Connection *c, job_kind kind, json_t *body);

#endif
