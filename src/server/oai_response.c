/* Responses of the OpenAI routes. Streams follow OpenAI and llama-server
 * (tools/server/server-task.cpp): a first chunk with delta {role, content:
 * null}, one chunk per piece of text, a chunk with finish_reason and an empty
 * delta (carrying `timings`), a usage chunk with no choices when
 * stream_options.include_usage, then `data: [DONE]`. An idle stream gets a
 * `:` comment every --sse-ping seconds (undici drops silent streams). Each
 * chunk also carries "x_spec": {"tokens", "drafted"}: how many generated
 * tokens ended in it and how many of those were accepted draft tokens. */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>

#include "server/conn_guard.h"
#include "server/oai.h"

const char *oai_finish_reason(specdec_stop_reason reason) {
    return reason == SPECDEC_STOP_LENGTH || reason == SPECDEC_STOP_CONTEXT ? "length" : "stop";
}

static double per(double a, double b) { return b > 0 ? a / b : 0; }

json_t *oai_timings(const specdec_stats *st, bool speculative) {
    int prompt_n = st->n_prompt - st->n_cached;
    json_t *t = json_object();
    json_object_set_new(t, "cache_n", json_integer(st->n_cached));
    json_object_set_new(t, "prompt_n", json_integer(prompt_n));
    json_object_set_new(t, "prompt_ms", json_real(st->t_prefill_ms));
    json_object_set_new(t, "prompt_per_token_ms", json_real(per(st->t_prefill_ms, prompt_n)));
    json_object_set_new(t, "prompt_per_second", json_real(per(prompt_n * 1e3, st->t_prefill_ms)));
    json_object_set_new(t, "predicted_n", json_integer(st->n_gen));
    json_object_set_new(t, "predicted_ms", json_real(st->t_decode_ms));
    json_object_set_new(t, "predicted_per_token_ms", json_real(per(st->t_decode_ms, st->n_gen)));
    json_object_set_new(t, "predicted_per_second", json_real(per(st->n_gen * 1e3, st->t_decode_ms)));
    json_object_set_new(t, "draft_n", json_integer(st->n_drafted));
    json_object_set_new(t, "draft_n_accepted", json_integer(st->n_accepted));
    /* Ours: verify rounds, α, accepted per round, vLLM's mean acceptance length, the drafter and gate. */
    json_object_set_new(t, "speculative", json_boolean(speculative));
    json_object_set_new(t, "spec_mode", json_string(st->drafter ? st->drafter : "none"));
    json_object_set_new(t, "draft_rounds", json_integer(st->n_rounds));
    json_object_set_new(t, "acceptance_rate", json_real(per((double)st->n_accepted, (double)st->n_drafted)));
    json_object_set_new(t, "accepted_per_round", json_real(per((double)st->n_accepted, (double)st->n_rounds)));
    json_object_set_new(t, "mean_acceptance_length",
                        json_real(st->n_rounds ? 1 + per((double)st->n_accepted, (double)st->n_rounds) : 0));
    json_object_set_new(t, "gate", json_string(st->gate_open ? "open" : "closed"));
    json_object_set_new(t, "gate_closed_steps", json_integer(st->gate_closed_steps));
    json_object_set_new(t, "target_forwards", json_integer(st->n_target_forwards));
    return t;
}

json_t *oai_usage(const specdec_stats *st) {
    json_t *u = json_object(), *d = json_object();
    json_object_set_new(u, "prompt_tokens", json_integer(st->n_prompt));
    json_object_set_new(u, "completion_tokens", json_integer(st->n_gen));
    json_object_set_new(u, "total_tokens", json_integer(st->n_prompt + st->n_gen));
    json_object_set_new(d, "cached_tokens", json_integer(st->n_cached));
    json_object_set_new(u, "prompt_tokens_details", d);
    return u;
}

/* The state of one response while it is produced. */
typedef struct resp {
    server *s;
    struct MHD_Connection *c;
    oai_req r;
    job *j;
    char id[48];
    int64_t created;
    specdec_reasoning *think; /* chat only: splits <think> blocks into reasoning_content */
    sd_strbuf content, reasoning;  /* non-stream: the whole answer */
    /* stream */
    sd_strbuf out;                 /* SSE bytes not yet handed to MHD */
    size_t next;              /* next job piece to format */
    int32_t pend_tokens, pend_drafted; /* counts of pieces whose text the splitter still holds */
    bool sent_role, finished;
    double last_send;
    /* log-probabilities (r.logprobs >= 0): those of the pieces not yet sent */
    specdec_token_logprob *pend_lp;
    int32_t n_pend_lp, cap_pend_lp;
    size_t lp_offset; /* completions: text offset of the next token */
    oai_calls calls; /* chat with tools: the answer's tool calls (oai_tools.c) */
    bool stream;
} resp;

/* Keeps a piece's log-probabilities until the chunk (or the answer) that carries them. */
static void hold_logprobs(resp *p, const job_piece *pc) {
    if (p->r.logprobs < 0 || pc->n_lp <= 0) return;
    if (p->n_pend_lp + pc->n_lp > p->cap_pend_lp) {
        int32_t cap = p->cap_pend_lp ? p->cap_pend_lp : 64;
        while (cap < p->n_pend_lp + pc->n_lp) cap *= 2;
        specdec_token_logprob *n = realloc(p->pend_lp, (size_t)cap * sizeof *n);
        if (!n) { p->out.oom = true; return; }
        p->pend_lp = n;
        p->cap_pend_lp = cap;
    }
    memcpy(p->pend_lp + p->n_pend_lp, pc->lp, (size_t)pc->n_lp * sizeof *pc->lp);
    p->n_pend_lp += pc->n_lp;
}

/* The logprobs value of a choice: null when off or when nothing is held
 * (want false: a chunk without text), else the held ones, now released. */
static json_t *take_logprobs(resp *p, bool want) {
    if (p->r.logprobs < 0 || !want || (p->n_pend_lp == 0 && p->r.stream)) return json_null();
    json_t *v;
    if (p->r.kind == JOB_CHAT) {
        json_t *content = json_array();
        oai_logprobs_chat_add(p->s, content, p->pend_lp, p->n_pend_lp, p->r.logprobs);
        v = oai_logprobs_chat(content);
    } else {
        v = oai_logprobs_completion(p->s, p->pend_lp, p->n_pend_lp, p->r.logprobs, &p->lp_offset);
    }
    p->n_pend_lp = 0;
    return v;
}

static json_t *chunk_base(resp *p) {
    json_t *o = json_object();
    json_object_set_new(o, "id", json_string(p->id));
    json_object_set_new(o, "object", json_string(p->r.kind == JOB_CHAT ? "chat.completion.chunk" : "text_completion"));
    json_object_set_new(o, "created", json_integer(p->created));
    json_object_set_new(o, "model", json_string(p->s->model_id));
    json_object_set_new(o, "system_fingerprint", json_string(p->s->fingerprint));
    return o;
}

static void sse(resp *p, json_t *o) {
    char *s = json_dumps(o, HTTP_JSON_FLAGS);
    json_decref(o);
    if (!s) { p->out.oom = true; return; }
    sd_strbuf_puts(&p->out, "data: ");
    sd_strbuf_puts(&p->out, s);
    sd_strbuf_puts(&p->out, "\n\n");
    free(s);
}

/* One chunk with text (content or reasoning) or, with finish, the final one. */
static void emit(resp *p, const char *content, size_t nc, const char *reasoning, size_t nr, const char *finish) {
    json_t *o = chunk_base(p), *choice = json_object();
    json_object_set_new(choice, "index", json_integer(0));
    if (p->r.kind == JOB_CHAT) {
        json_t *delta = json_object();
        if (!p->sent_role) {
            json_object_set_new(delta, "role", json_string("assistant"));
            json_object_set_new(delta, "content", json_string("")); /* OpenAI's first chunk: "" */
            p->sent_role = true;
        }
        if (nc) json_object_set_new(delta, "content", json_text(content, nc));
        if (nr) json_object_set_new(delta, "reasoning_content", json_text(reasoning, nr));
        json_object_set_new(choice, "delta", delta);
    } else {
        json_object_set_new(choice, "text", json_text(content, nc));
    }
    json_object_set_new(choice, "logprobs", take_logprobs(p, nc || nr || finish));
    json_object_set_new(choice, "finish_reason", finish ? json_string(finish) : json_null());
    json_t *choices = json_array();
    json_array_append_new(choices, choice);
    json_object_set_new(o, "choices", choices);
    if (nc || nr) {
        json_t *x = json_object();
        json_object_set_new(x, "tokens", json_integer(p->pend_tokens));
        json_object_set_new(x, "drafted", json_integer(p->pend_drafted));
        json_object_set_new(o, "x_spec", x);
        p->pend_tokens = p->pend_drafted = 0;
    }
    if (finish || p->r.timings_per_token) json_object_set_new(o, "timings", oai_timings(&p->j->stats, p->r.speculative));
    sse(p, o);
}

/* A chunk whose delta carries tool_calls (stolen): OpenAI's call deltas. */
static void emit_tools(resp *p, json_t *tool_calls) {
    json_t *o = chunk_base(p), *choice = json_object(), *delta = json_object();
    json_object_set_new(choice, "index", json_integer(0));
    if (!p->sent_role) {
        json_object_set_new(delta, "role", json_string("assistant"));
        json_object_set_new(delta, "content", json_null());
        p->sent_role = true;
    }
    json_object_set_new(delta, "tool_calls", tool_calls);
    json_object_set_new(choice, "delta", delta);
    json_object_set_new(choice, "logprobs", json_null());
    json_object_set_new(choice, "finish_reason", json_null());
    json_t *choices = json_array();
    json_array_append_new(choices, choice);
    json_object_set_new(o, "choices", choices);
    json_t *x = json_object();
    json_object_set_new(x, "tokens", json_integer(p->pend_tokens));
    json_object_set_new(x, "drafted", json_integer(p->pend_drafted));
    json_object_set_new(o, "x_spec", x);
    p->pend_tokens = p->pend_drafted = 0;
    if (p->r.timings_per_token) json_object_set_new(o, "timings", oai_timings(&p->j->stats, p->r.speculative));
    sse(p, o);
}

/* Where the tool-call parser sends content and call deltas. */
static void calls_sink(void *user, const char *text, size_t n, json_t *tool_calls) {
    resp *p = user;
    if (tool_calls) {
        if (p->stream) emit_tools(p, tool_calls);
        else json_decref(tool_calls); /* the whole message is built from oai_calls_message */
    } else if (!p->stream) sd_strbuf_add(&p->content, text, n);
    else if (n) emit(p, text, n, NULL, 0, NULL);
}

/* finish_reason: "tool_calls" when the answer called tools and was not cut short. */
static const char *finish_reason(resp *p) {
    const char *f = oai_finish_reason(p->j->stats.stop_reason);
    return p->calls.n_calls && strcmp(f, "length") ? "tool_calls" : f;
}

/* A piece of answer text: through the reasoning splitter for chat. */
static void on_text(resp *p, const char *text, size_t len, bool flush, bool stream) {
    const char *c = text, *r = NULL;
    size_t nc = len, nr = 0;
    if (p->think) {
        if (flush) specdec_reasoning_flush(p->think, &r, &nr, &c, &nc);
        else specdec_reasoning_feed(p->think, text, len, &r, &nr, &c, &nc);
    }
    if (p->calls.parser) { /* reasoning as it is; content through the tool-call parser */
        if (!stream) sd_strbuf_add(&p->reasoning, r, nr);
        else if (nr) emit(p, NULL, 0, r, nr, NULL);
        oai_calls_feed(&p->calls, c, nc, false, calls_sink, p);
        if (flush) oai_calls_feed(&p->calls, NULL, 0, true, calls_sink, p);
        return;
    }
    if (!stream) {
        sd_strbuf_add(&p->content, c, nc);
        sd_strbuf_add(&p->reasoning, r, nr);
    } else if (nc || nr) {
        emit(p, c, nc, r, nr, NULL);
    }
}

/* A stream formats pieces into events only while fewer than this many bytes
 * of events wait for the client: the pieces wait in the job, compact, and a
 * client that reads slowly or not at all does not make its connection hold
 * the whole answer's events (~1 KB a token with timings_per_token), nor
 * each send move all of them up (sd_strbuf_consume). */
#define SSE_AHEAD (16 * 1024) /* MHD asks for at most 16 KB a call (oai_respond) */

/* Formats new pieces of the job (caller holds j->mu); at the end, the closing events. */
static void drain(resp *p, bool stream) {
    job *j = p->j;
    if (stream && !p->sent_role && p->r.kind == JOB_CHAT) emit(p, NULL, 0, NULL, 0, NULL);
    for (; p->next < j->n_pieces; p->next++) {
        if (stream && p->out.len >= SSE_AHEAD) return; /* the rest at the next call, as the client reads */
        job_piece *pc = &j->pieces[p->next];
        p->pend_tokens += pc->n_tokens;
        p->pend_drafted += pc->n_drafted;
        hold_logprobs(p, pc);
        on_text(p, pc->text, pc->len, false, stream);
        free(pc->text), free(pc->lp); /* formatted: the piece is not read again */
        pc->text = NULL, pc->lp = NULL;
    }
    if (p->next == j->n_pieces) p->next = j->n_pieces = 0; /* all formatted: the room is reused */
    if (!j->done || p->finished) return;
    on_text(p, "", 0, true, stream);
    p->finished = true;
    http_note_tokens(j->stats.n_prompt, j->stats.n_gen);
    if (!stream) return;
    if (j->status != SPECDEC_OK) {
        http_err e = {0};
        http_fail(&e, 500, NULL, "generation failed: %s", j->err.message);
        json_t *o = http_err_json(&e);
        sse(p, o);
    } else {
        emit(p, NULL, 0, NULL, 0, finish_reason(p));
        if (p->r.include_usage) {
            json_t *o = chunk_base(p);
            json_object_set_new(o, "choices", json_array());
            json_object_set_new(o, "usage", oai_usage(&j->stats));
            json_object_set_new(o, "timings", oai_timings(&j->stats, p->r.speculative));
            sse(p, o);
        }
    }
    sd_strbuf_puts(&p->out, "data: [DONE]\n\n");
}

static void resp_free(void *cls) {
    resp *p = cls;
    if (!p) return;
    /* The client is gone or the stream ended: stop generating for it either way. */
    atomic_store(&p->j->cancel, true);
    job_release(p->j);
    specdec_reasoning_free(p->think);
    oai_calls_free(&p->calls);
    sd_strbuf_free(&p->out);
    sd_strbuf_free(&p->content);
    sd_strbuf_free(&p->reasoning);
    free(p->pend_lp);
    free(p);
}

/* MHD's content reader: blocks (thread per connection) until there are
 * bytes to send, a ping is due, or the client has gone. */
static ssize_t stream_read(void *cls, uint64_t pos, char *buf, size_t max) {
    (void)pos;
    resp *p = cls;
    /* Between our return and MHD's next call, MHD is writing to the client:
     * one that stops reading is closed after --write-timeout (conn_guard.c),
     * and its generation cancelled by resp_free. */
    conn_guard_stream_waiting(p->c, false);
    for (;;) {
        if (p->out.len) {
            size_t n = p->out.len < max ? p->out.len : max;
            memcpy(buf, p->out.s, n);
            sd_strbuf_consume(&p->out, n);
            p->last_send = now_mono();
            conn_guard_stream_waiting(p->c, true);
            return (ssize_t)n;
        }
        if (p->out.oom) return MHD_CONTENT_READER_END_WITH_ERROR;
        if (p->finished) return MHD_CONTENT_READER_END_OF_STREAM;
        job *j = p->j;
        pthread_mutex_lock(&j->mu);
        if (p->next == j->n_pieces && !j->done) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            ts.tv_nsec += 200 * 1000000L;
            if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
            pthread_cond_timedwait(&j->cv, &j->mu, &ts);
        }
        drain(p, true);
        pthread_mutex_unlock(&j->mu);
        if (p->out.len) continue;
        if (http_peer_closed(p->c)) {
            atomic_store(&j->cancel, true);
            return MHD_CONTENT_READER_END_WITH_ERROR;
        }
        if (now_mono() - p->last_send >= p->s->opts.sse_ping_s) sd_strbuf_puts(&p->out, ": ping\n\n");
    }
}

/* Waits for the whole answer; cancels it if the client goes away meanwhile. */
static bool wait_done(resp *p) {
    job *j = p->j;
    bool gone = false;
    pthread_mutex_lock(&j->mu);
    while (!j->done) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 200 * 1000000L;
        if (ts.tv_nsec >= 1000000000L) { ts.tv_sec++; ts.tv_nsec -= 1000000000L; }
        pthread_cond_timedwait(&j->cv, &j->mu, &ts);
        drain(p, false); /* the answer's text as it comes: the job does not pile up pieces */
        if (!gone && !j->done) {
            pthread_mutex_unlock(&j->mu);
            gone = http_peer_closed(p->c);
            if (gone) atomic_store(&j->cancel, true);
            pthread_mutex_lock(&j->mu);
        }
    }
    drain(p, false);
    pthread_mutex_unlock(&j->mu);
    return !gone;
}

static enum MHD_Result send_whole(resp *p) {
    job *j = p->j;
    if (j->status != SPECDEC_OK) {
        http_err e = {0};
        http_fail(&e, 500, NULL, "generation failed: %s", j->err.message);
        return http_send_error(p->c, &e);
    }
    json_t *o = json_object(), *choice = json_object();
    json_object_set_new(o, "id", json_string(p->id));
    json_object_set_new(o, "object", json_string(p->r.kind == JOB_CHAT ? "chat.completion" : "text_completion"));
    json_object_set_new(o, "created", json_integer(p->created));
    json_object_set_new(o, "model", json_string(p->s->model_id));
    json_object_set_new(o, "system_fingerprint", json_string(p->s->fingerprint));
    json_object_set_new(choice, "index", json_integer(0));
    if (p->r.kind == JOB_CHAT) {
        json_t *msg = json_object();
        json_object_set_new(msg, "role", json_string("assistant"));
        json_t *calls = oai_calls_message(&p->calls);
        /* OpenAI: content null when the turn only calls tools */
        json_object_set_new(msg, "content", calls && !p->content.len ? json_null()
                                                                      : json_text(sd_strbuf_str(&p->content), p->content.len));
        if (calls) json_object_set_new(msg, "tool_calls", calls);
        if (p->reasoning.len)
            json_object_set_new(msg, "reasoning_content", json_text(sd_strbuf_str(&p->reasoning), p->reasoning.len));
        json_object_set_new(choice, "message", msg);
    } else {
        json_object_set_new(choice, "text", json_text(sd_strbuf_str(&p->content), p->content.len));
    }
    json_object_set_new(choice, "logprobs", take_logprobs(p, true));
    json_object_set_new(choice, "finish_reason", json_string(finish_reason(p)));
    json_t *choices = json_array();
    json_array_append_new(choices, choice);
    json_object_set_new(o, "choices", choices);
    json_object_set_new(o, "usage", oai_usage(&j->stats));
    json_object_set_new(o, "timings", oai_timings(&j->stats, p->r.speculative));
    return http_send_json(p->c, 200, o);
}

enum MHD_Result oai_respond(server *s, struct MHD_Connection *c, const oai_req *r, job *j, json_t *body) {
    static atomic_ulong counter;
    resp *p = calloc(1, sizeof *p);
    if (!p) { /* the job is queued already: cancel it, or it would run for nobody */
        json_decref(body);
        atomic_store(&j->cancel, true);
        job_release(j);
        return MHD_NO;
    }
    *p = (resp){.s = s, .c = c, .r = *r, .j = j, .created = now_unix(), .last_send = now_mono()};
    snprintf(p->id, sizeof p->id, "%s-%lx%lx", r->kind == JOB_CHAT ? "chatcmpl" : "cmpl",
             (unsigned long)p->created, (unsigned long)atomic_fetch_add(&counter, 1));
    if (r->kind == JOB_CHAT) {
        specdec_error err = {0};
        if (specdec_reasoning_init(s->model, &r->chat, &p->think, &err) != SPECDEC_OK) p->think = NULL;
        oai_calls_init(&p->calls, s, r); /* r->tools is still valid here (oai.h) */
    }
    p->stream = r->stream;
    p->r.tools = NULL; /* borrowed from the body, released here */
    p->r.tool_name = NULL;
    /* Nothing reads the request's tree from here on: a request that waits in
     * the queue or for its answer does not hold it (deeply nested or
     * many-element bodies parse to many times their size). */
    json_decref(body);
    if (!r->stream) {
        enum MHD_Result rc = wait_done(p) ? send_whole(p) : MHD_NO;
        resp_free(p);
        return rc;
    }
    struct MHD_Response *resp = MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, p, resp_free);
    if (!resp) { resp_free(p); return MHD_NO; }
    MHD_add_response_header(resp, "Content-Type", "text/event-stream; charset=utf-8");
    MHD_add_response_header(resp, "Cache-Control", "no-cache");
    MHD_add_response_header(resp, "X-Accel-Buffering", "no");
    http_add_common_headers(resp);
    http_note_status(200);
    enum MHD_Result rc = MHD_queue_response(c, 200, resp);
    MHD_destroy_response(resp);
    return rc;
}
