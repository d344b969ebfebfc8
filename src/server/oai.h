/* OpenAI-compatible /v1/chat/completions and /v1/completions: request
 * parsing (oai_request.c) and the response, streamed over SSE or whole
 * (oai_response.c). */
#ifndef SD_SERVER_OAI_H
#define SD_SERVER_OAI_H

#include "server/http.h"

/* What a request asked for beyond the generation parameters in its job. */
typedef struct oai_req {
    job_kind kind;
    bool stream, include_usage, timings_per_token, speculative;
    specdec_chat_params chat; /* chat: the template switches, for the reasoning splitter */
    sd_strbuf *prompt_out;         /* when set, receives the prompt text (/apply-template) */
    int32_t logprobs;              /* -1: off; else alternatives per token (oai_logprobs.c) */
    /* Tool calls (oai_tools.c). tools is borrowed from the request body: valid
     * until oai_respond returns (which sets up the parser from it); NULL = none. */
    json_t *tools;
    specdec_tool_choice tool_choice;
    const char *tool_name; /* tool_choice naming a function (borrowed, as tools) */
    bool parallel_tool_calls;
} oai_req;

/* Validates body and fills j (prompt tokens, generation parameters, stop
 * strings) and r. False with e filled (400 with the offending param, 501 for
 * unsupported features) on bad input. */
bool oai_parse(server *s, json_t *body, oai_req *r, job *j, http_err *e);

/* The constrained-output fields (response_format, grammar, json_schema;
 * oai_grammar.c): compiles at most one into j->grammar and j->gp.grammar,
 * after a reasoning section when `reasoning` (the prompt opened one) and the
 * vocabulary has </think>. False with e filled (400 naming the field and the
 * problem). */
bool oai_get_grammar(server *s, json_t *body, job *j, bool reasoning, http_err *e);

/* logit_bias (oai_sampling.c): into j->bias and j->gp.logit_bias. False
 * with e filled (400 naming logit_bias) on a bad key, id or bias. */
bool oai_get_logit_bias(server *s, json_t *body, job *j, http_err *e);

/* logprobs / top_logprobs (oai_logprobs.c): into r->logprobs and
 * j->gp.logprobs. False with e filled (400 naming the field). */
bool oai_get_logprobs(json_t *body, oai_req *r, job *j, http_err *e);
/* Appends the chat shape's entries for lp[n] to the array content. */
void oai_logprobs_chat_add(server *s, json_t *content, const specdec_token_logprob *lp, int32_t n, int32_t n_top);
/* {"content": content (stolen), "refusal": null}. New reference. */
json_t *oai_logprobs_chat(json_t *content);
/* The legacy completions object for lp[n]; *offset: the text offset of the
 * first token, advanced past the last. New reference. */
json_t *oai_logprobs_completion(server *s, const specdec_token_logprob *lp, int32_t n, int32_t n_top, size_t *offset);
/* tools, tool_choice, parallel_tool_calls (oai_tools.c) into r. False with e
 * filled (400 naming the field) on bad input. */
bool oai_get_tools(json_t *body, oai_req *r, http_err *e);
/* A message's tool_calls (arguments parsed from their JSON strings: 400 when
 * they are not JSON), tool_call_id and name into m; *owned receives the
 * string m->tool_calls_json points at (free it after rendering). */
bool oai_message_tools(json_t *msg, size_t i, specdec_chat_message *m, char **owned, http_err *e);
/* The grammar that forces calls (tool_choice required / a function) or
 * constrains them once they start (auto, where the template's call opener
 * is one token), into j. 400 when tools' schemas do not convert, or forced
 * calls meet another grammar field. */
bool oai_tool_grammar(server *s, json_t *body, oai_req *r, job *j, http_err *e);

/* The calls of one answer while it streams (oai_tools.c). */
typedef struct oai_calls {
    specdec_tool_parser *parser; /* NULL: no tools, everything is content */
    json_t *calls;               /* the calls so far, for the whole message */
    sd_strbuf *args;             /* their arguments, by index */
    size_t n_args;
    int n_calls;
    char id_base[48]; /* ids are "<id_base>_<index>" */
} oai_calls;
/* Receives content (text, n) or, with tool_calls set, a stream delta's
 * tool_calls array (a new reference the sink owns). */
typedef void (*oai_calls_sink)(void *user, const char *text, size_t n, json_t *tool_calls);
void oai_calls_init(oai_calls *t, server *s, const oai_req *r);
/* Feeds answer content (after the reasoning splitter); flush at the end. */
void oai_calls_feed(oai_calls *t, const char *text, size_t len, bool flush, oai_calls_sink sink, void *user);
/* message.tool_calls (new reference), or NULL when the answer made none. */
json_t *oai_calls_message(oai_calls *t);
void oai_calls_free(oai_calls *t);

/* The timings object (llama.cpp names plus ours) for stats. New reference. */
json_t *oai_timings(const specdec_stats *st, bool speculative);
/* OpenAI usage for stats. New reference. */
json_t *oai_usage(const specdec_stats *st);
/* "stop" or "length" for a stop reason. */
const char *oai_finish_reason(specdec_stop_reason reason);

/* Answers a queued job: an SSE stream, or one JSON body when it is done.
 * Takes body (the parsed request r borrows from): released once the
 * response is set up, before the answer is waited for. */
enum MHD_Result oai_respond(server *s, struct MHD_Connection *c, const oai_req *r, job *j, json_t *body);

#endif
