/* specdec serve: an OpenAI-compatible HTTP server on the public API.
 *
 * Threads: libmicrohttpd runs one thread per connection (the handler and the
 * SSE reader may block); one inference thread (worker.c) owns the batch of
 * --parallel N slots (N = 1 too: a one-slot batch) and runs the jobs of a
 * bounded FIFO, up to N at once by continuous batching with specdec_batch
 * (docs/BATCHING.md); a full queue answers 503. A job is the channel between
 * the two: the inference thread appends generated pieces under its lock, the
 * connection thread turns them into JSON / SSE and sets `cancel` when the
 * client goes away, which the piece callback returns to the decode loop and
 * the worker passes to the batch before each step (between prefill chunks
 * too). Requests never share a job, so outputs never mix. */
#ifndef SD_SERVER_SERVER_H
#define SD_SERVER_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"
#include "server/auth.h"
#include "server/prefix_cache.h"
#include "specdec.h"

/* Command-line settings. */
typedef struct server_opts {
    const char *model_path, *draft_path, *host, *chat_template, *alias;
    int port;                       /* 0: any free port (printed on stderr) */
    int n_ctx, n_threads, queue_max, max_body;
    specdec_cache_type cache_type_k, cache_type_v; /* the slots' KV cache types (--cache-type-k / -v) */
    bool no_repack;                 /* --no-repack */
    bool no_commit_memory;          /* --no-commit-memory: the slots' memory comes in as first written */
    int parallel;                   /* requests served at once: the batch's slots (--parallel) */
    double sse_ping_s;              /* keep-alive comment after this many idle seconds */
    double cache_ram_mib;           /* prefix cache budget (MiB); 0 = off */
    double drain_timeout_s;         /* SIGTERM: how long in-flight requests may take to finish */
    specdec_generate_params gen;    /* defaults for every request (spec mode, K, sampling) */
    bool gen_temp_set;
    int64_t suffix_tokens;          /* the suffix memory's budget in tokens (--suffix-tokens); 0 = none */
    /* Exposure to the network (docs/SECURITY.md). */
    auth_conf auth;                 /* --api-key, --api-key-file, --cors-origin, --metrics-public */
    int max_prompt;                 /* prompt tokens a request may bring (--max-prompt; 0: the context's) */
    int max_tokens;                 /* cap on a request's max_tokens (--max-tokens; 0: none) */
    double request_timeout_s;       /* a request's headers and body must arrive within this (--request-timeout) */
    double write_timeout_s;         /* a stream whose client reads nothing this long is cancelled (--write-timeout) */
    int max_conns, max_conns_per_ip; /* open connections, all and per client address (beyond: refused) */
} server_opts;

/* One generated piece as the inference thread delivered it. */
typedef struct job_piece {
    char *text;
    size_t len;
    int32_t n_tokens, n_drafted;
    specdec_token_logprob *lp; /* the piece's tokens' log-probabilities (n_lp), or NULL */
    int32_t n_lp;
} job_piece;

/* Pieces a job keeps apart while its connection has not formatted them;
 * beyond, new ones are appended to the last (job_on_piece). */
#define JOB_PIECES_BEHIND 64

typedef enum job_kind { JOB_CHAT, JOB_COMPLETION } job_kind;

/* A request's generation and the channel that carries its output. */
typedef struct job {
    /* Set by the connection thread before queueing; read-only afterwards. */
    job_kind kind;
    specdec_token *prompt;
    size_t n_prompt;
    specdec_generate_params gp;
    char *stop[4];
    specdec_grammar *grammar; /* the request's constrained output (oai_grammar.c), owned; NULL without */
    specdec_logit_bias *bias; /* gp.logit_bias (oai_sampling.c), owned; NULL without */
    /* Output, under mu. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job_piece *pieces;
    size_t n_pieces, cap_pieces;
    bool running, done;
    specdec_status status;
    specdec_error err;
    specdec_stats stats;
    atomic_bool cancel;
    int refs; /* the connection and the queue/inference thread; freed at 0 */
} job;

/* Why a request or a connection was refused before generating (/metrics). */
typedef enum refusal {
    REFUSE_AUTH,         /* no or a wrong API key: 401 */
    REFUSE_CORS,         /* a preflight from an origin not allowed: 403 */
    REFUSE_BODY,         /* body over --max-body: 413 */
    REFUSE_PROMPT,       /* prompt over --max-prompt: 400 */
    REFUSE_MAX_TOKENS,   /* max_tokens over --max-tokens: 400 */
    REFUSE_REQ_TIMEOUT,  /* request not received within --request-timeout: 408 or closed */
    REFUSE_WRITE_TIMEOUT,/* a client that stopped reading its stream: cancelled, closed */
    REFUSE_CONN_IP,      /* over --max-conns-per-ip: connection closed at accept */
    REFUSE_CONN_ALL,     /* over --max-conns: connection closed at accept */
    REFUSE_N
} refusal;

typedef struct metrics {
    pthread_mutex_t mu;
    uint64_t refused[REFUSE_N];
    uint64_t requests_ok, requests_error, requests_cancelled, requests_rejected;
    uint64_t prompt_tokens, prompt_tokens_cached, predicted_tokens;
    double prompt_ms, predicted_ms;
    uint64_t draft_tokens, accepted_tokens, drafts;
} metrics;

/* The inference thread and its queue (worker.c). */
typedef struct worker worker;

/* What the HTTP front and the inference thread share. */
typedef struct server {
    server_opts opts;
    specdec_model *model, *draft;
    specdec_batch *batch; /* --parallel slots, each a context of n_ctx positions */
    int32_t n_ctx;
    /* The outputs of earlier requests, for suffix drafting (--spec suffix,
     * auto): kept for the server's lifetime, shared by the batch's slots (it
     * locks itself). */
    specdec_suffix_cache *suffix;
    const char *template_family; /* resolved chat formatter, NULL if none fits (chat requests get 400) */
    char template_error[512];
    char model_id[256];
    char fingerprint[64]; /* "specdec-VERSION", the system_fingerprint */
    int64_t started;      /* unix seconds */
    metrics m;
    prefix_cache pc; /* used by the inference thread; /metrics reads it */
    worker *w;       /* the queue and the inference thread (server_worker_start) */
} server;

/* Jobs (job.c). */
job *job_new(job_kind kind);
void job_release(job *j); /* drops one reference; frees at zero */
/* The piece callback (user = the job) and the end of a job (its outcome
 * stored, its waiters woken, metrics), on the inference thread. */
bool job_on_piece(const specdec_piece *p, void *user);
void job_finish(server *s, job *j, specdec_status rc, const specdec_error *err, const specdec_stats *st);
/* Jobs alive (queued, running, or still being answered), for the SIGTERM drain. */
int job_live_count(void);

/* The inference thread and its queue (worker.c). Start: the queue of
 * opts.queue_max jobs and the thread over s->batch; -1 when either cannot be
 * made. Stop: cancels the queued and the running jobs and waits for the
 * thread to end; the queue goes on refusing (server_submit false) until
 * free, which comes after the HTTP daemon has stopped. */
int server_worker_start(server *s);
void server_worker_stop(server *s);
void server_worker_free(server *s);
/* Queues j (taking a reference); false when opts.queue_max jobs already wait
 * for a slot (counting beyond one per free slot), or the server drains or
 * stops (the caller answers 503). */
bool server_submit(server *s, job *j);
/* Waiting jobs and running ones (in the batch's slots), for /metrics and /props. */
void server_queue_state(server *s, int *waiting, int *running);
/* SIGTERM: new requests are refused (503) from now on; the queued and the
 * running ones go on. */
void server_drain_start(server *s);
bool server_draining(server *s);

/* The HTTP front (http.c): starts the daemon; returns the bound port or -1. */
struct MHD_Daemon;
struct MHD_Daemon *http_start(server *s, int *port);
/* Stops the connection watchdog and the daemon (closing every connection). */
void http_stop(struct MHD_Daemon *d);

/* Metrics (metrics.c). */
void metrics_record(metrics *m, const job *j);
void metrics_reject(metrics *m);
void metrics_refuse(metrics *m, refusal why);
void metrics_text(server *s, sd_strbuf *out);

#endif
