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

/* The timings object (llama.cpp names plus ours) for stats. New reference. */
json_t *oai_timings(const specdec_stats *st, bool speculative);
/* OpenAI usage for stats. New reference. */
json_t *oai_usage(const specdec_stats *st);
/* "stop" or "length" for a stop reason. */
const char *oai_finish_reason(specdec_stop_reason reason);

/* Answers a queued job: an SSE stream, or one JSON body when it is done. */
enum MHD_Result oai_respond(server *s, struct MHD_Connection *c, const oai_req *r, job *j);

#endif
