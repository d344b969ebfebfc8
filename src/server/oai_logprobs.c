/* Log-probabilities on the OpenAI routes: the request fields (chat:
 * `logprobs` true/false and `top_logprobs` 0..20; /v1/completions: the
 * legacy integer `logprobs` 0..20) and the response shapes:
 *  - chat: choices[].logprobs = {"content": [{token, logprob, bytes,
 *    top_logprobs: [{token, logprob, bytes}]}], "refusal": null};
 *  - completions: choices[].logprobs = {tokens, token_logprobs, top_logprobs
 *    (one object token -> logprob per position), text_offset}.
 * Values are the library's (specdec_generate_params.logprobs: after logit
 * bias, penalties and grammar mask, before temperature and filters). JSON has
 * no -inf; a generated token never has one and tokens at -inf are never
 * listed, so -9999.0 stands in only for a value that is not finite. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "server/oai.h"

#define OAI_LOGPROB_FLOOR -9999.0

bool oai_get_logprobs(json_t *body, oai_req *r, job *j, http_err *e) {
    json_t *lp = json_object_get(body, "logprobs"), *top = json_object_get(body, "top_logprobs");
    r->logprobs = -1;
    if (r->kind == JOB_COMPLETION) { /* legacy: an integer count of alternatives */
        if (!lp || json_is_null(lp) || json_is_false(lp)) return true;
        if (json_is_true(lp)) r->logprobs = 0;
        else if (!json_is_integer(lp)) return http_fail(e, 400, "logprobs", "'logprobs' must be an integer in [0, 20]");
        else if (json_integer_value(lp) < 0 || json_integer_value(lp) > SPECDEC_MAX_TOP_LOGPROBS)
            return http_fail(e, 400, "logprobs", "'logprobs' must be in [0, 20], got %lld",
                             (long long)json_integer_value(lp));
        else r->logprobs = (int32_t)json_integer_value(lp);
        j->gp.logprobs = r->logprobs;
        return true;
    }
    if (lp && !json_is_null(lp) && !json_is_boolean(lp))
        return http_fail(e, 400, "logprobs", "'logprobs' must be a boolean");
    bool on = lp && json_is_true(lp);
    if (top && !json_is_null(top)) {
        if (!json_is_integer(top)) return http_fail(e, 400, "top_logprobs", "'top_logprobs' must be an integer in [0, 20]");
        long long k = json_integer_value(top);
        if (k < 0 || k > SPECDEC_MAX_TOP_LOGPROBS)
            return http_fail(e, 400, "top_logprobs", "'top_logprobs' must be in [0, 20], got %lld", k);
        if (!on) return http_fail(e, 400, "top_logprobs", "'top_logprobs' needs 'logprobs': true");
        r->logprobs = (int32_t)k;
    } else if (on) {
        r->logprobs = 0;
    }
    j->gp.logprobs = r->logprobs;
    return true;
}

static json_t *lp_value(float v) { return json_real(isfinite(v) ? (double)v : OAI_LOGPROB_FLOOR); }

/* The token's text (invalid UTF-8 as U+FFFD) and, when bytes is set, its raw bytes. */
static json_t *token_text(server *s, specdec_token t, json_t **bytes) {
    char buf[256];
    int32_t n = specdec_token_to_piece(s->model, t, true, buf, sizeof buf);
    if (n < 0) n = 0;
    if (n > (int32_t)sizeof buf) n = (int32_t)sizeof buf;
    if (bytes) {
        *bytes = json_array();
        for (int32_t i = 0; i < n; i++) json_array_append_new(*bytes, json_integer((unsigned char)buf[i]));
    }
    return json_text(buf, (size_t)n);
}

void oai_logprobs_chat_add(server *s, json_t *content, const specdec_token_logprob *lp, int32_t n, int32_t n_top) {
    for (int32_t i = 0; i < n; i++) {
        json_t *o = json_object(), *bytes, *tops = json_array();
        json_object_set_new(o, "token", token_text(s, lp[i].token, &bytes));
        json_object_set_new(o, "logprob", lp_value(lp[i].logprob));
        json_object_set_new(o, "bytes", bytes);
        for (int32_t k = 0; k < lp[i].n_top && k < n_top; k++) {
            json_t *a = json_object(), *ab;
            json_object_set_new(a, "token", token_text(s, lp[i].top_token[k], &ab));
            json_object_set_new(a, "logprob", lp_value(lp[i].top_logprob[k]));
            json_object_set_new(a, "bytes", ab);
            json_array_append_new(tops, a);
        }
        json_object_set_new(o, "top_logprobs", tops);
        json_array_append_new(content, o);
    }
}

json_t *oai_logprobs_chat(json_t *content) {
    json_t *o = json_object();
    json_object_set_new(o, "content", content);
    json_object_set_new(o, "refusal", json_null());
    return o;
}

json_t *oai_logprobs_completion(server *s, const specdec_token_logprob *lp, int32_t n, int32_t n_top, size_t *offset) {
    json_t *o = json_object(), *tokens = json_array(), *values = json_array(), *tops = json_array(),
           *offsets = json_array();
    for (int32_t i = 0; i < n; i++) {
        json_t *text = token_text(s, lp[i].token, NULL);
        json_array_append_new(offsets, json_integer((json_int_t)*offset));
        *offset += json_string_length(text);
        json_array_append_new(tokens, text);
        json_array_append_new(values, lp_value(lp[i].logprob));
        json_t *top = json_object();
        for (int32_t k = 0; k < lp[i].n_top && k < n_top; k++) {
            json_t *t = token_text(s, lp[i].top_token[k], NULL);
            if (!json_object_get(top, json_string_value(t))) /* two ids with one text: the likelier */
                json_object_set_new(top, json_string_value(t), lp_value(lp[i].top_logprob[k]));
            json_decref(t);
        }
        json_array_append_new(tops, top);
    }
    json_object_set_new(o, "tokens", tokens);
    json_object_set_new(o, "token_logprobs", values);
    json_object_set_new(o, "top_logprobs", tops);
    json_object_set_new(o, "text_offset", offsets);
    return o;
}
