/* Jobs, the bounded queue and the inference thread. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "server/server.h"

static atomic_int jobs_live;

int job_live_count(void) { return atomic_load(&jobs_live); }

job *job_new(job_kind kind) {
    job *j = calloc(1, sizeof *j);
    if (!j) return NULL;
    j->kind = kind;
    j->gp = specdec_generate_default_params();
    pthread_mutex_init(&j->mu, NULL);
    pthread_cond_init(&j->cv, NULL);
    atomic_init(&j->cancel, false);
    j->refs = 1;
    atomic_fetch_add(&jobs_live, 1);
    return j;
}

void job_release(job *j) {
    if (!j) return;
    pthread_mutex_lock(&j->mu);
    int left = --j->refs;
    pthread_mutex_unlock(&j->mu);
    if (left > 0) return;
    for (size_t i = 0; i < j->n_pieces; i++) free(j->pieces[i].text);
    free(j->pieces);
    for (int i = 0; i < 4; i++) free(j->stop[i]);
    specdec_grammar_free(j->grammar);
    specdec_free(j->prompt);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
    atomic_fetch_sub(&jobs_live, 1);
}

bool server_submit(server *s, job *j) {
    pthread_mutex_lock(&s->qmu);
    bool ok = !s->stopping && !s->draining && s->q_len < s->opts.queue_max;
    if (ok) {
        pthread_mutex_lock(&j->mu);
        j->refs++;
        pthread_mutex_unlock(&j->mu);
        s->queue[(s->q_head + s->q_len) % s->opts.queue_max] = j;
        s->q_len++;
        pthread_cond_signal(&s->qcv);
    }
    pthread_mutex_unlock(&s->qmu);
    return ok;
}

void server_queue_state(server *s, int *waiting, int *running) {
    pthread_mutex_lock(&s->qmu);
    *waiting = s->q_len;
    *running = s->n_active;
    pthread_mutex_unlock(&s->qmu);
}

/* The decode loop's streaming callback: append the piece, wake the
 * connection thread, and go on unless the client has gone. */
bool job_on_piece(const specdec_piece *p, void *user) {
    job *j = user;
    pthread_mutex_lock(&j->mu);
    if (j->n_pieces == j->cap_pieces) {
        size_t cap = j->cap_pieces ? j->cap_pieces * 2 : 64;
        job_piece *np = realloc(j->pieces, cap * sizeof *np);
        if (!np) { pthread_mutex_unlock(&j->mu); return false; }
        j->pieces = np;
        j->cap_pieces = cap;
    }
    char *t = malloc(p->len + 1);
    if (!t) { pthread_mutex_unlock(&j->mu); return false; }
    memcpy(t, p->text, p->len);
    t[p->len] = 0;
    j->pieces[j->n_pieces++] = (job_piece){t, p->len, p->n_tokens, p->n_drafted};
    j->stats = *p->stats; /* running counters for timings_per_token */
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return !atomic_load(&j->cancel);
}

/* The abort hook: polled between prefill chunks, where no piece is delivered
 * and on_piece cannot say stop, so a client that left during a long prompt
 * frees the inference thread at the next chunk. */
static bool job_cancelled(void *user) {
    job *j = user;
    return atomic_load(&j->cancel);
}

static void run_job(server *s, job *j) {
    specdec_stats st;
    specdec_error err = {0};
    specdec_status rc = SPECDEC_OK;
    memset(&st, 0, sizeof st);
    if (atomic_load(&j->cancel)) {
        st.stop_reason = SPECDEC_STOP_CANCELLED;
    } else {
        pthread_mutex_lock(&j->mu);
        j->running = true;
        pthread_cond_broadcast(&j->cv);
        pthread_mutex_unlock(&j->mu);
        specdec_generate_params gp = j->gp;
        gp.abort = job_cancelled;
        gp.suffix_cache = s->suffix; /* the server's memory of earlier outputs */
        prefix_cache_enter(&s->pc, &s->pcu, s->ctx, j->prompt, j->n_prompt, &gp, j);
        rc = specdec_generate(s->ctx, j->prompt, j->n_prompt, &gp, job_on_piece, j, &st, &err);
        prefix_cache_leave(&s->pc, &s->pcu, s->ctx, rc, &st);
    }
    job_finish(s, j, rc, &err, &st);
}

void job_finish(server *s, job *j, specdec_status rc, const specdec_error *err, const specdec_stats *st) {
    pthread_mutex_lock(&j->mu);
    j->status = rc;
    j->err = *err;
    j->stats = *st;
    j->done = true;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    metrics_record(&s->m, j);
}

static void *worker_main(void *arg) {
    server *s = arg;
    for (;;) {
        pthread_mutex_lock(&s->qmu);
        while (!s->stopping && s->q_len == 0) pthread_cond_wait(&s->qcv, &s->qmu);
        if (s->stopping && s->q_len == 0) { pthread_mutex_unlock(&s->qmu); return NULL; }
        job *j = s->queue[s->q_head];
        s->q_head = (s->q_head + 1) % s->opts.queue_max;
        s->q_len--;
        s->n_active = 1;
        s->current = j;
        pthread_mutex_unlock(&s->qmu);
        run_job(s, j);
        pthread_mutex_lock(&s->qmu);
        s->n_active = 0;
        s->current = NULL;
        pthread_mutex_unlock(&s->qmu);
        job_release(j);
    }
}

int server_worker_start(server *s) {
    s->queue = calloc((size_t)s->opts.queue_max, sizeof *s->queue);
    if (!s->queue) return -1;
    pthread_mutex_init(&s->qmu, NULL);
    pthread_cond_init(&s->qcv, NULL);
    return pthread_create(&s->worker, NULL, s->batch ? batch_worker_main : worker_main, s);
}

void server_drain_start(server *s) {
    pthread_mutex_lock(&s->qmu);
    s->draining = true;
    pthread_mutex_unlock(&s->qmu);
}

bool server_draining(server *s) {
    pthread_mutex_lock(&s->qmu);
    bool d = s->draining;
    pthread_mutex_unlock(&s->qmu);
    return d;
}

void server_worker_stop(server *s) {
    pthread_mutex_lock(&s->qmu);
    s->stopping = true;
    if (s->current) atomic_store(&s->current->cancel, true);
    for (int i = 0; i < s->q_len; i++) atomic_store(&s->queue[(s->q_head + i) % s->opts.queue_max]->cancel, true);
    pthread_cond_broadcast(&s->qcv);
    pthread_mutex_unlock(&s->qmu);
    pthread_join(s->worker, NULL);
    free(s->queue);
    s->queue = NULL;
}
