/* The inference thread of `specdec serve --parallel N` (N > 1): continuous
 * batching with specdec_batch (docs/BATCHING.md). Each turn it moves waiting
 * jobs into free slots (they join at the next step), tells the batch which
 * jobs' clients have gone (cancel), and runs one step: one forward over the
 * rows every running job needs next. Pieces reach each job through its own
 * channel (job_on_piece, inside the step, on this thread), so outputs never
 * mix; a job that ends frees its slot for the next waiting one. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"

/* A slot's job and the batch's id for it. */
typedef struct bw_slot {
    server *s;
    job *j;
    int32_t id;
} bw_slot;

static bool bw_piece(const specdec_piece *p, void *user) {
    bw_slot *b = user;
    return job_on_piece(p, b->j);
}

static void bw_done(const specdec_batch_result *r, void *user) {
    bw_slot *b = user;
    job *j = b->j;
    job_finish(b->s, j, r->status, r->err, r->stats);
    pthread_mutex_lock(&b->s->qmu);
    b->j = NULL;
    b->s->n_active--;
    b->s->busy = b->s->n_active > 0;
    pthread_mutex_unlock(&b->s->qmu);
    job_release(j);
}

/* Ends a job that never ran (cancelled while waiting, or refused by the batch). */
static void finish_unrun(server *s, job *j, specdec_status rc, const specdec_error *err) {
    specdec_stats st;
    memset(&st, 0, sizeof st);
    st.stop_reason = SPECDEC_STOP_CANCELLED;
    job_finish(s, j, rc, err, &st);
    job_release(j);
}

/* Starts job j in the free slot b. Token trees are a single-sequence path:
 * a batched job verifies chains (the same tokens, both are lossless). */
static void start_job(server *s, bw_slot *b, job *j) {
    specdec_error err = {0};
    if (atomic_load(&j->cancel)) {
        finish_unrun(s, j, SPECDEC_OK, &err);
        return;
    }
    pthread_mutex_lock(&j->mu);
    j->running = true;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    specdec_generate_params gp = j->gp;
    gp.abort = NULL;
    gp.tree_nodes = 0;
    pthread_mutex_lock(&s->qmu);
    b->j = j;
    s->n_active++;
    s->busy = true;
    pthread_mutex_unlock(&s->qmu);
    specdec_status rc = specdec_batch_add(s->batch, j->prompt, j->n_prompt, &gp, bw_piece, bw_done, b, &b->id, &err);
    if (rc != SPECDEC_OK) {
        pthread_mutex_lock(&s->qmu);
        b->j = NULL;
        s->n_active--;
        s->busy = s->n_active > 0;
        pthread_mutex_unlock(&s->qmu);
        specdec_stats st;
        memset(&st, 0, sizeof st);
        job_finish(s, j, rc, &err, &st);
        job_release(j);
    }
}

/* Under qmu: a free slot, or NULL. */
static bw_slot *free_slot(server *s) {
    for (int i = 0; i < s->opts.parallel; i++)
        if (!s->slots[i].j) return &s->slots[i];
    return NULL;
}

void *batch_worker_main(void *arg) {
    server *s = arg;
    s->slots = calloc((size_t)s->opts.parallel, sizeof *s->slots);
    if (!s->slots) {
        fprintf(stderr, "specdec: out of memory for the slots; the server cannot run requests\n");
        return NULL;
    }
    for (int i = 0; i < s->opts.parallel; i++) s->slots[i].s = s;
    for (;;) {
        pthread_mutex_lock(&s->qmu);
        while (!s->stopping && s->q_len == 0 && s->n_active == 0) pthread_cond_wait(&s->qcv, &s->qmu);
        if (s->stopping && s->q_len == 0 && s->n_active == 0) {
            pthread_mutex_unlock(&s->qmu);
            break;
        }
        /* waiting jobs into free slots: they join at the next step */
        bw_slot *b;
        while (s->q_len > 0 && (b = free_slot(s))) {
            job *j = s->queue[s->q_head];
            s->q_head = (s->q_head + 1) % s->opts.queue_max;
            s->q_len--;
            pthread_mutex_unlock(&s->qmu);
            start_job(s, b, j);
            pthread_mutex_lock(&s->qmu);
        }
        /* clients that left, or a shutdown: their requests stop */
        for (int i = 0; i < s->opts.parallel; i++)
            if (s->slots[i].j && (s->stopping || atomic_load(&s->slots[i].j->cancel)))
                specdec_batch_cancel(s->batch, s->slots[i].id);
        pthread_mutex_unlock(&s->qmu);
        specdec_error err = {0};
        if (specdec_batch_step(s->batch, &err) != SPECDEC_OK)
            fprintf(stderr, "specdec serve: a batched step failed: %s\n", err.message);
    }
    free(s->slots);
    s->slots = NULL;
    return NULL;
}
