/* The inference thread of `specdec serve`, for every --parallel N (1 too: a
 * one-slot batch), and the bounded FIFO of jobs it takes from. Continuous
 * batching with specdec_batch (docs/BATCHING.md): each turn it moves waiting
 * jobs into free slots (they join at the next step), tells the batch which
 * jobs' clients have gone (cancel), and runs one step: one forward over the
 * rows every running job needs next (a prefill chunk, a decode token or a
 * verify window, so a client that leaves during a long prompt frees its slot
 * at the next chunk). Pieces reach each job through its own channel
 * (job_on_piece, inside the step, on this thread), so outputs never mix; a
 * job that ends frees its slot for the next waiting one.
 *
 * The prefix cache (--cache-ram) is shared by the slots: before a job's
 * request goes into a batch slot, the cached state sharing the longest
 * prefix with its prompt is restored into that slot's context; when it
 * ends (its done callback), the slot's state is stored. Both happen on this
 * thread while the slot holds no running request, so the cache needs no
 * more than its own lock (for /metrics). A hybrid's prompt checkpoint (its
 * recurrent state at all but the last prompt token, prefix_cache.h) is a
 * request of its own (n_predict 0) that runs in the batch first; the job's
 * generation then starts from it in the same slot. Slots are chosen so a
 * conversation stays where its state is (choose_slot). The suffix
 * memory (--suffix-tokens) is handed to every slot's request: it locks
 * itself while a slot drafts from it or adds its output. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/server.h"

/* A job holder: the job, the batch slot its request runs in, and whether
 * that request is the job's checkpoint (or the checkpoint has ended and
 * the generation is to start at the next turn). */
typedef struct bw_slot {
    server *s;
    job *j;
    int32_t id;
    bool checkpoint, resume;
    double pre_ms;   /* the checkpoint's prefill time, added to the job's */
    int32_t reused;  /* the cache's first look for the job (pc_use.reused): what the job reports */
} bw_slot;

/* What a batch slot's context keeps between requests. */
typedef struct slot_mem {
    pc_use use;     /* its use of the prefix cache */
    uint64_t ended; /* when its last request ended (a tick of worker.ticks; 0: never) */
} slot_mem;

struct worker {
    /* The queue of waiting jobs (FIFO), and the count of jobs the holders
     * hold; under mu. At most cap jobs wait for a slot (--queue): the queue
     * also takes, beyond them, one job per free slot (a burst that arrives
     * together finds its slots free, not a full queue, until this thread
     * moves the jobs in at its next turn); its ring has cap + n entries. */
    pthread_mutex_t mu;
    pthread_cond_t cv;
    job **queue;
    int cap, ring, head, len;
    int n_active;            /* holders holding a job (its checkpoint or its generation) */
    bool stopping, draining; /* draining: SIGTERM came, new requests get 503 */
    pthread_t thread;
    /* The inference thread's own. */
    int n;            /* holders and batch slots: --parallel */
    bw_slot *holders; /* [n]; a holder's j is written under mu */
    slot_mem *mem;    /* [n], by batch slot */
    uint64_t ticks;   /* requests ended so far: slot_mem.ended's clock */
};

static bool bw_piece(const specdec_piece *p, void *user) {
    bw_slot *b = user;
    if (b->checkpoint) return !atomic_load(&b->j->cancel); /* a prefill: nothing for the client */
    return job_on_piece(p, b->j);
}

/* The job leaves its holder (after job_finish). */
static void end_job(bw_slot *b) {
    worker *w = b->s->w;
    job *j = b->j;
    pthread_mutex_lock(&w->mu);
    b->j = NULL;
    b->checkpoint = b->resume = false;
    w->n_active--;
    pthread_mutex_unlock(&w->mu);
    job_release(j);
}

/* Ends a job that never ran or whose checkpoint was cancelled. */
static void finish_unrun(server *s, job *j, specdec_status rc, const specdec_error *err) {
    specdec_stats st;
    memset(&st, 0, sizeof st);
    st.stop_reason = SPECDEC_STOP_CANCELLED;
    job_finish(s, j, rc, err, &st);
}

/* Inside the step, the slot's run over: its state into the cache. */
static void bw_done(const specdec_batch_result *r, void *user) {
    bw_slot *b = user;
    server *s = b->s;
    specdec_context *ctx = specdec_batch_slot_context(s->batch, r->slot);
    slot_mem *m = &s->w->mem[r->slot];
    pc_use *u = &m->use;
    m->ended = ++s->w->ticks;
    if (b->checkpoint) {
        const bool cancelled = r->stats->stop_reason == SPECDEC_STOP_CANCELLED || atomic_load(&b->j->cancel);
        if (r->status == SPECDEC_OK && !cancelled) {
            b->pre_ms = r->stats->t_prefill_ms;
            prefix_cache_checkpointed(&s->pc, u, ctx, b->pre_ms);
        } else {
            u->live = 0;
        }
        if (!cancelled) { /* a failed checkpoint is only a cache miss: the generation goes on */
            b->resume = true;
            return;
        }
        specdec_error err = {0};
        finish_unrun(s, b->j, SPECDEC_OK, &err);
        end_job(b);
        return;
    }
    specdec_stats st = *r->stats;
    u->pre_ms = b->pre_ms;
    prefix_cache_leave(&s->pc, u, ctx, r->status, &st);
    job_finish(s, b->j, r->status, r->err, &st);
    end_job(b);
}

/* Whether a shutdown has begun (the holders' jobs are cancelled, queued ones too). */
static bool stopping(worker *w) {
    pthread_mutex_lock(&w->mu);
    const bool st = w->stopping;
    pthread_mutex_unlock(&w->mu);
    return st;
}

/* Tokens of prompt[n] that ctx holds from its start (*n_held: all it holds). */
static size_t held_prefix(specdec_context *ctx, const specdec_token *prompt, size_t n, size_t *n_held) {
    const specdec_token *t = specdec_context_tokens(ctx, n_held);
    size_t m = 0;
    while (t && m < *n_held && m < n && t[m] == prompt[m]) m++;
    return m;
}

/* Whether ctx holds exactly prompt[0..m) (and so the state after it). */
static bool holds_exactly(specdec_context *ctx, const specdec_token *prompt, size_t m) {
    size_t n_held = 0;
    return held_prefix(ctx, prompt, m, &n_held) == m && n_held == m;
}

/* The prefix cache's part before b's request in ctx (slot u); returns
 * whether a checkpoint is wanted. On the first request: the best state is
 * restored and its count kept as what the job reports. On the generation
 * after a checkpoint: in the checkpoint's own slot (choose_slot), ctx still
 * holds prompt[0..n-1) (stored in the cache or not: a state over
 * --cache-ram, or evicted): generate reuses it as it is, no look. Were that
 * slot ever taken, the look restores the checkpoint from the cache (a copy
 * of the state), or the prompt is prefilled again when the cache lost it.
 * Either way the job reports its first look: its own checkpoint is no
 * cache hit, and a second look worse than the first (the cache lost both)
 * reports that. */
static bool cache_before(server *s, bw_slot *b, specdec_context *ctx, pc_use *u, bool first) {
    const job *j = b->j;
    if (!first && holds_exactly(ctx, j->prompt, j->n_prompt - 1)) {
        u->reused = b->reused;
        return false;
    }
    const bool want = prefix_cache_restore(&s->pc, u, ctx, j->prompt, j->n_prompt, first) && first;
    if (first) b->reused = u->reused;
    else if (u->reused > b->reused) u->reused = b->reused;
    return want;
}

/* Whether a job's checkpoint ended in slot i and its generation waits to
 * start there (resume_jobs runs those before new jobs take slots). */
static bool reserved(const worker *w, int32_t i) {
    for (int k = 0; k < w->n; k++)
        if (w->holders[k].j && w->holders[k].resume && w->holders[k].id == i) return true;
    return false;
}

/* The batch slot for b's request, so that a conversation stays where its
 * state is (llama-server's slots choose by prompt similarity likewise):
 * - the generation after a checkpoint: the checkpoint's own slot, which
 *   holds its state (another slot would copy it from the cache, or prefill
 *   the prompt again when the cache dropped it);
 * - else the free slot whose context holds the most of the prompt's start,
 *   counted only where that is at least half of what the slot holds (the
 *   prompt continues that conversation, not just its system prompt);
 * - else the free slot idle longest (never used first), which keeps the
 *   other conversations' states in their slots the longest.
 * -1 when no slot is free. */
static int32_t choose_slot(server *s, const bw_slot *b, bool first) {
    if (!first && specdec_batch_slot_is_free(s->batch, b->id)) return b->id;
    int32_t best = -1, idle = -1;
    size_t best_m = 0;
    const worker *w = s->w;
    for (int32_t i = 0; i < w->n; i++) {
        if (!specdec_batch_slot_is_free(s->batch, i) || reserved(w, i)) continue;
        size_t n_held = 0;
        const size_t m = held_prefix(specdec_batch_slot_context(s->batch, i), b->j->prompt, b->j->n_prompt, &n_held);
        if (n_held > 0 && 2 * m >= n_held && m > best_m) best = i, best_m = m;
        if (idle < 0 || w->mem[i].ended < w->mem[idle].ended) idle = i;
    }
    return best >= 0 ? best : idle;
}

/* Puts b's job into the batch slot choose_slot names: the prefix cache's best state
 * restored there first, then its checkpoint (when one is wanted, on the
 * job's first request) or its generation. Token trees are a single-sequence
 * path: a batched job verifies chains (the same tokens, both are lossless). */
static void run_request(server *s, bw_slot *b, bool first) {
    job *j = b->j;
    specdec_error err = {0};
    const int32_t slot = choose_slot(s, b, first);
    specdec_context *ctx = specdec_batch_slot_context(s->batch, slot);
    pc_use *u = ctx ? &s->w->mem[slot].use : NULL;
    const bool want = u && cache_before(s, b, ctx, u, first);
    specdec_generate_params gp = j->gp;
    gp.abort = NULL;
    gp.tree_nodes = 0;
    gp.suffix_cache = s->suffix; /* the server's memory of earlier outputs, shared by the slots */
    size_t n = j->n_prompt;
    if (want) {
        gp.n_predict = 0;
        gp.check_lossless = false;
        n--;
    }
    b->checkpoint = want;
    specdec_status rc = specdec_batch_add_at(s->batch, slot, j->prompt, n, &gp, bw_piece, bw_done, b, &b->id, &err);
    if (rc != SPECDEC_OK) {
        if (u) u->live = 0;
        b->checkpoint = false;
        specdec_stats st;
        memset(&st, 0, sizeof st);
        job_finish(s, j, rc, &err, &st);
        end_job(b);
    }
}

/* Starts job j in the free holder b. */
static void start_job(server *s, bw_slot *b, job *j) {
    pthread_mutex_lock(&s->w->mu);
    b->j = j;
    b->pre_ms = 0;
    s->w->n_active++;
    pthread_mutex_unlock(&s->w->mu);
    if (atomic_load(&j->cancel)) {
        specdec_error err = {0};
        finish_unrun(s, j, SPECDEC_OK, &err);
        end_job(b);
        return;
    }
    pthread_mutex_lock(&j->mu);
    j->running = true;
    pthread_cond_broadcast(&j->cv);
    pthread_mutex_unlock(&j->mu);
    run_request(s, b, true);
}

/* The jobs whose checkpoint ended: their generation starts now (a job
 * cancelled meanwhile ends instead). */
static void resume_jobs(server *s) {
    for (int i = 0; i < s->w->n; i++) {
        bw_slot *b = &s->w->holders[i];
        if (!b->j || !b->resume) continue;
        b->resume = false;
        if (stopping(s->w) || atomic_load(&b->j->cancel)) {
            specdec_error err = {0};
            finish_unrun(s, b->j, SPECDEC_OK, &err);
            end_job(b);
        } else {
            run_request(s, b, false);
        }
    }
}

/* Under mu: a free holder, or NULL. */
static bw_slot *free_holder(worker *w) {
    for (int i = 0; i < w->n; i++)
        if (!w->holders[i].j) return &w->holders[i];
    return NULL;
}

/* Under mu: the next waiting job, out of the queue. */
static job *dequeue(worker *w) {
    job *j = w->queue[w->head];
    w->head = (w->head + 1) % w->ring;
    w->len--;
    return j;
}

/* One turn: the checkpointed jobs' generations and the waiting jobs into
 * slots, the requests of clients that left (or of a shutdown) cancelled,
 * then one step of the batch. */
static void turn(server *s) {
    worker *w = s->w;
    resume_jobs(s);
    pthread_mutex_lock(&w->mu);
    bw_slot *b;
    while (w->len > 0 && (b = free_holder(w))) {
        job *j = dequeue(w);
        pthread_mutex_unlock(&w->mu);
        start_job(s, b, j);
        pthread_mutex_lock(&w->mu);
    }
    for (int i = 0; i < w->n; i++)
        if (w->holders[i].j && !w->holders[i].resume && (w->stopping || atomic_load(&w->holders[i].j->cancel)))
            specdec_batch_cancel(s->batch, w->holders[i].id);
    pthread_mutex_unlock(&w->mu);
    specdec_error err = {0};
    if (specdec_batch_step(s->batch, &err) != SPECDEC_OK)
        fprintf(stderr, "specdec serve: a batched step failed: %s\n", err.message);
}

static void *worker_main(void *arg) {
    server *s = arg;
    worker *w = s->w;
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (!w->stopping && w->len == 0 && w->n_active == 0) pthread_cond_wait(&w->cv, &w->mu);
        const bool done = w->stopping && w->len == 0 && w->n_active == 0;
        pthread_mutex_unlock(&w->mu);
        if (done) return NULL;
        turn(s);
    }
}

static void worker_free(worker *w) {
    if (!w) return;
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    free(w->queue);
    free(w->holders);
    free(w->mem);
    free(w);
}

int server_worker_start(server *s) {
    worker *w = calloc(1, sizeof *w);
    if (!w) return -1;
    w->cap = s->opts.queue_max;
    w->n = specdec_batch_n_slots(s->batch);
    w->ring = w->cap + w->n;
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    w->queue = calloc((size_t)w->ring, sizeof *w->queue);
    w->holders = calloc((size_t)w->n, sizeof *w->holders);
    w->mem = calloc((size_t)w->n, sizeof *w->mem);
    if (w->n < 1 || !w->queue || !w->holders || !w->mem) {
        worker_free(w);
        return -1;
    }
    for (int i = 0; i < w->n; i++) w->holders[i].s = s;
    s->w = w;
    if (pthread_create(&w->thread, NULL, worker_main, s) != 0) {
        s->w = NULL;
        worker_free(w);
        return -1;
    }
    return 0;
}

void server_worker_stop(server *s) {
    worker *w = s->w;
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->stopping = true;
    for (int i = 0; i < w->len; i++) atomic_store(&w->queue[(w->head + i) % w->ring]->cancel, true);
    pthread_cond_broadcast(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->thread, NULL);
}

void server_worker_free(server *s) {
    worker_free(s->w);
    s->w = NULL;
}

bool server_submit(server *s, job *j) {
    worker *w = s->w;
    pthread_mutex_lock(&w->mu);
    const bool ok = !w->stopping && !w->draining && w->len < w->cap + (w->n - w->n_active);
    if (ok) {
        pthread_mutex_lock(&j->mu);
        j->refs++;
        pthread_mutex_unlock(&j->mu);
        w->queue[(w->head + w->len) % w->ring] = j;
        w->len++;
        pthread_cond_signal(&w->cv);
    }
    pthread_mutex_unlock(&w->mu);
    return ok;
}

void server_queue_state(server *s, int *waiting, int *running) {
    worker *w = s->w;
    pthread_mutex_lock(&w->mu);
    *waiting = w->len;
    *running = w->n_active;
    pthread_mutex_unlock(&w->mu);
}

void server_drain_start(server *s) {
    pthread_mutex_lock(&s->w->mu);
    s->w->draining = true;
    pthread_mutex_unlock(&s->w->mu);
}

bool server_draining(server *s) {
    pthread_mutex_lock(&s->w->mu);
    const bool d = s->w->draining;
    pthread_mutex_unlock(&s->w->mu);
    return d;
}
