/* specdec serve: an OpenAI-compatible HTTP server on the public API.
 *
 * Threads: libmicrohttpd runs one thread per connection (the handler and the
 * SSE reader may block); one inference thread owns the context and runs the
 * jobs of a bounded FIFO one at a time (a full queue answers 503). A job is
 * the channel between the two: the inference thread appends generated pieces
 * under its lock, the connection thread turns them into JSON / SSE and sets
 * `cancel` when the client goes away, which the piece callback and the abort
 * hook (polled between prefill chunks) return to the decode loop. Requests
 * never share a job, so outputs never mix. With --parallel N > 1 the
 * inference thread runs up to N jobs at once instead (batch_worker.c:
 * continuous batching with specdec_batch), each job still its own channel. */
#ifndef SD_SERVER_SERVER_H
#define SD_SERVER_SERVER_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/strbuf.h"
#include "server/prefix_cache.h"
#include "specdec.h"

/* Command-line settings. */
typedef struct server_opts {
    const char *model_path, *draft_path, *host, *chat_template, *alias;
    int port;                       /* 0: any free port (printed on stderr) */
    int n_ctx, n_threads, queue_max, max_body;
    int parallel;                   /* requests served at once (--parallel; 1: one at a time, the classic loop) */
    double sse_ping_s;              /* keep-alive comment after this many idle seconds */
    double cache_ram_mib;           /* prefix cache budget (MiB); 0 = off */
    double drain_timeout_s;         /* SIGTERM: how long in-flight requests may take to finish */
    specdec_generate_params gen;    /* defaults for every request (spec mode, K, sampling) */
    bool gen_temp_set;
    int64_t suffix_tokens;          /* the suffix memory's budget in tokens (--suffix-tokens); 0 = none */
    bool n_predict_given;           /* -n on the command line (chat: else answers fit the context, front.h) */
} server_opts;

/* One generated piece as the inference thread delivered it. */
typedef struct job_piece {
    char *text;
    size_t len;
    int32_t n_tokens, n_drafted;
} job_piece;

typedef enum job_kind { JOB_CHAT, JOB_COMPLETION } job_kind;

/* A request's generation and the channel that carries its output. */
typedef struct job {
    /* Set by the connection thread before queueing; read-only afterwards. */
    job_kind kind;
    specdec_token *prompt;
    size_t n_prompt;
    specdec_generate_params gp;
    char *stop[4];
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

typedef struct metrics {
    pthread_mutex_t mu;
    uint64_t requests_ok, requests_error, requests_cancelled, requests_rejected;
    uint64_t prompt_tokens, prompt_tokens_cached, predicted_tokens;
    double prompt_ms, predicted_ms;
    uint64_t draft_tokens, accepted_tokens, drafts;
} metrics;

typedef struct server {
    server_opts opts;
    specdec_model *model, *draft;
    specdec_context *ctx; /* the one-at-a-time loop's (--parallel 1; NULL with a batch) */
    int32_t n_ctx;        /* positions of a request's context (ctx's or each batch slot's) */
    /* The outputs of earlier requests, for suffix drafting (--spec suffix,
     * auto): kept for the server's lifetime, shared by the batch's slots (it
     * locks itself). */
    specdec_suffix_cache *suffix;
    const char *template_family; /* resolved chat formatter, NULL if none fits (chat requests get 400) */
    char template_error[512];
    char model_id[256];
    char fingerprint[64]; /* "specdec-VERSION", the system_fingerprint */
    int64_t started; /* unix seconds */
    /* The queue of waiting jobs (FIFO), under qmu. */
    pthread_mutex_t qmu;
    pthread_cond_t qcv;
    job **queue;
    int q_head, q_len;
    bool stopping, draining; /* draining: SIGTERM came, new requests get 503 */
    job *current; /* the running job, under qmu */
    pthread_t worker;
    metrics m;
    /* --parallel N > 1 (batch_worker.c): the engine serving N requests per
     * step, and the job of each of its slots (NULL: free), under qmu. */
    specdec_batch *batch;
    struct bw_slot *slots;
    int n_active; /* jobs running, under qmu: slots holding a job (its checkpoint or its generation),
                     or 0/1 for the one-at-a-time loop */
    prefix_cache pc; /* used by the inference thread; /metrics reads it */
    pc_use pcu;      /* ctx's use of it */
    pc_use *slot_use; /* [parallel]: each batch slot context's use of it (batch_worker.c) */
    uint64_t *slot_ended; /* [parallel]: when each batch slot's last request ended (a tick, 0: never) */
    uint64_t ticks;       /* the worker's tick counter for slot_ended */
} server;

/* Jobs (job.c). */
job *job_new(job_kind kind);
void job_release(job *j); /* drops one reference; frees at zero */
/* Queues j (taking a reference); false when the queue is full (the caller answers 503). */
bool server_submit(server *s, job *j);
/* Waiting jobs and running ones (in the batch's slots, or the one of the
 * one-at-a-time loop), for /metrics and /props. */
void server_queue_state(server *s, int *waiting, int *running);
int server_worker_start(server *s);
void server_worker_stop(server *s);
/* job.c, for the batched worker too: the piece callback (user = the job) and
 * the end of a job (its outcome stored, its waiters woken, metrics). */
bool job_on_piece(const specdec_piece *p, void *user);
void job_finish(server *s, job *j, specdec_status rc, const specdec_error *err, const specdec_stats *st);
/* The batched inference thread (batch_worker.c), --parallel N > 1: continuous
 * batching of up to N jobs with specdec_batch (docs/BATCHING.md). */
void *batch_worker_main(void *arg);
/* Jobs alive (queued, running, or still being answered), for the SIGTERM drain. */
int job_live_count(void);
/* SIGTERM: new requests are refused (503) from now on; the queued and the
 * running ones go on. */
void server_drain_start(server *s);
bool server_draining(server *s);

/* The HTTP front (http.c): starts the daemon; returns the bound port or -1. */
struct MHD_Daemon;
struct MHD_Daemon *http_start(server *s, int *port);

/* Metrics (metrics.c). */
void metrics_record(metrics *m, const job *j);
void metrics_reject(metrics *m);
void metrics_text(server *s, sd_strbuf *out);

#endif
