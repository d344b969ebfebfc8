/* Jobs: a request's generation and the channel its output goes through
 * (server.h), shared by the HTTP front and the inference thread (worker.c). */
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
    for (size_t i = 0; i < j->n_pieces; i++) free(j->pieces[i].text), free(j->pieces[i].lp);
    free(j->pieces);
    for (int i = 0; i < 4; i++) free(j->stop[i]);
    specdec_grammar_free(j->grammar);
    free(j->bias);
    specdec_free(j->prompt);
    pthread_mutex_destroy(&j->mu);
    pthread_cond_destroy(&j->cv);
    free(j);
    atomic_fetch_sub(&jobs_live, 1);
}

/* Appends p to the last piece, which the connection has not formatted yet
 * (drain keeps j->n_pieces at 0 once it has formatted them all); false when
 * out of memory. */
static bool merge_last(job *j, const specdec_piece *p) {
    job_piece *l = &j->pieces[j->n_pieces - 1];
    char *t = realloc(l->text, l->len + p->len + 1);
    if (!t) return false;
    l->text = t;
    memcpy(t + l->len, p->text, p->len);
    l->len += p->len;
    t[l->len] = 0;
    if (p->n_logprobs > 0) {
        specdec_token_logprob *lp = realloc(l->lp, (size_t)(l->n_lp + p->n_logprobs) * sizeof *lp);
        if (!lp) return false;
        memcpy(lp + l->n_lp, p->logprobs, (size_t)p->n_logprobs * sizeof *lp);
        l->lp = lp;
        l->n_lp += p->n_logprobs;
    }
    l->n_tokens += p->n_tokens;
    l->n_drafted += p->n_drafted;
    return true;
}

/* The decode loop's streaming callback: append the piece, wake the
 * connection thread, and go on unless the client has gone. */
bool job_on_piece(const specdec_piece *p, void *user) {
    job *j = user;
    pthread_mutex_lock(&j->mu);
    /* A client far behind (a slow or stalled reader) gets the rest of what it
     * has not read as one piece: the job holds the answer's text, not a piece
     * (and an allocation) per token. The text and counts are unchanged; only
     * how it is cut into stream events differs. */
    if (j->n_pieces >= JOB_PIECES_BEHIND) {
        bool ok = merge_last(j, p);
        j->stats = *p->stats;
        pthread_cond_broadcast(&j->cv);
        pthread_mutex_unlock(&j->mu);
        return ok && !atomic_load(&j->cancel);
    }
    if (j->n_pieces == j->cap_pieces) {
        size_t cap = j->cap_pieces ? j->cap_pieces * 2 : 64;
        job_piece *np = realloc(j->pieces, cap * sizeof *np);
        if (!np) { pthread_mutex_unlock(&j->mu); return false; }
        j->pieces = np;
        j->cap_pieces = cap;
    }
    char *t = malloc(p->len + 1);
    specdec_token_logprob *lp = p->n_logprobs > 0 ? malloc((size_t)p->n_logprobs * sizeof *lp) : NULL;
    if (!t || (p->n_logprobs > 0 && !lp)) { free(t); free(lp); pthread_mutex_unlock(&j->mu); return false; }
    memcpy(t, p->text, p->len);
    t[p->len] = 0;
    if (lp) memcpy(lp, p->logprobs, (size_t)p->n_logprobs * sizeof *lp);
    j->pieces[j->n_pieces++] = (job_piece){t, p->len, p->n_tokens, p->n_drafted, lp, lp ? p->n_logprobs : 0};
    j->stats = *p->stats; /* running counters for timings_per_token */
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    return !atomic_load(&j->cancel);
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
