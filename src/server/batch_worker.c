/* The inference thread of `specdec serve --parallel N` (N > 1): continuous
 * batching with specdec_batch (docs/BATCHING.md). Each turn it moves waiting
 * jobs into free slots (they join at the next step), tells the batch which
 * jobs' clients have gone (cancel), and runs one step: one forward over the
 * rows every running job needs next. Pieces reach each job through its own
 * channel (job_on_piece, inside the step, on this thread), so outputs never
 * mix; a job that ends frees its slot for the next waiting one.
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

static bool bw_piece(const specdec_piece *p, void *user) {
    bw_slot *b = user;
    if (b->checkpoint) return !atomic_load(&b->j->cancel); /* a prefill: nothing for the client */
    return job_on_piece(p, b->j);
}

/* The job leaves its holder (after job_finish). */
static void end_job(bw_slot *b) {
    job *j = b->j;
    pthread_mutex_lock(&b->s->qmu);
    b->j = NULL;
    b->checkpoint = b->resume = false;
    b->s->n_active--;
    pthread_mutex_unlock(&b->s->qmu);
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
    pc_use *u = &s->slot_use[r->slot];
    s->slot_ended[r->slot] = ++s->ticks;
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
static bool reserved(const server *s, int32_t i) {
    for (int k = 0; k < s->opts.parallel; k++)
        if (s->slots[k].j && s->slots[k].resume && s->slots[k].id == i) return true;
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
    for (int32_t i = 0; i < s->opts.parallel; i++) {
        if (!specdec_batch_slot_is_free(s->batch, i) || reserved(s, i)) continue;
        size_t n_held = 0;
        const size_t m = held_prefix(specdec_batch_slot_context(s->batch, i), b->j->prompt, b->j->n_prompt, &n_held);
        if (n_held > 0 && 2 * m >= n_held && m > best_m) best = i, best_m = m;
        if (idle < 0 || s->slot_ended[i] < s->slot_ended[idle]) idle = i;
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
    pc_use *u = ctx ? &s->slot_use[slot] : NULL;
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
    pthread_mutex_lock(&s->qmu);
    b->j = j;
    b->pre_ms = 0;
    s->n_active++;
    pthread_mutex_unlock(&s->qmu);
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
    for (int i = 0; i < s->opts.parallel; i++) {
        bw_slot *b = &s->slots[i];
        if (!b->j || !b->resume) continue;
        b->resume = false;
        if (s->stopping || atomic_load(&b->j->cancel)) {
            specdec_error err = {0};
            finish_unrun(s, b->j, SPECDEC_OK, &err);
            end_job(b);
        } else {
            run_request(s, b, false);
        }
    }
}

/* Under qmu: a free holder, or NULL. */
static bw_slot *free_slot(server *s) {
    for (int i = 0; i < s->opts.parallel; i++)
        if (!s->slots[i].j) return &s->slots[i];
    return NULL;
}

static void free_slots(server *s) {
    free(s->slots);
    free(s->slot_use);
    free(s->slot_ended);
    s->slots = NULL;
    s->slot_use = NULL;
    s->slot_ended = NULL;
}

void *batch_worker_main(void *arg) {
    server *s = arg;
    s->slots = calloc((size_t)s->opts.parallel, sizeof *s->slots);
    s->slot_use = calloc((size_t)s->opts.parallel, sizeof *s->slot_use);
    s->slot_ended = calloc((size_t)s->opts.parallel, sizeof *s->slot_ended);
    if (!s->slots || !s->slot_use || !s->slot_ended) {
        fprintf(stderr, "specdec: out of memory for the slots; the server cannot run requests\n");
        free_slots(s);
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
        pthread_mutex_unlock(&s->qmu);
        resume_jobs(s);
        pthread_mutex_lock(&s->qmu);
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
            if (s->slots[i].j && !s->slots[i].resume && (s->stopping || atomic_load(&s->slots[i].j->cancel)))
                specdec_batch_cancel(s->batch, s->slots[i].id);
        pthread_mutex_unlock(&s->qmu);
        specdec_error err = {0};
        if (specdec_batch_step(s->batch, &err) != SPECDEC_OK)
            fprintf(stderr, "specdec serve: a batched step failed: %s\n", err.message);
    }
    free_slots(s);
    return NULL;
}
