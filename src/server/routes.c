/* The routes besides the OpenAI completions: health, models, props, metrics,
 * the chat page, and llama-server's /tokenize, /detokenize, /apply-template. */
#include <stdlib.h>
#include <string.h>

#include "server/oai.h"
#include "server/page.h"

static json_t *model_entry(server *s) {
    json_t *m = json_object(), *meta = json_object();
    json_object_set_new(m, "id", json_string(s->model_id));
    json_object_set_new(m, "object", json_string("model"));
    json_object_set_new(m, "created", json_integer(s->started));
    json_object_set_new(m, "owned_by", json_string("specdec"));
    json_object_set_new(meta, "arch", json_string(specdec_model_arch(s->model)));
    json_object_set_new(meta, "n_vocab", json_integer(specdec_model_n_vocab(s->model)));
    json_object_set_new(meta, "n_ctx_train", json_integer(specdec_model_n_ctx_train(s->model)));
    json_object_set_new(meta, "n_params", json_integer((json_int_t)specdec_model_n_params(s->model)));
    json_object_set_new(m, "meta", meta);
    return m;
}

static enum MHD_Result get_models(server *s, struct MHD_Connection *c) {
    json_t *o = json_object(), *data = json_array();
    json_array_append_new(data, model_entry(s));
    json_object_set_new(o, "object", json_string("list"));
    json_object_set_new(o, "data", data);
    return http_send_json(c, 200, o);
}

static enum MHD_Result get_props(server *s, struct MHD_Connection *c) {
    json_t *o = json_object(), *spec = json_object(), *gen = json_object();
    const specdec_generate_params *g = &s->opts.gen;
    int waiting;
    int running;
    server_queue_state(s, &waiting, &running);
    json_object_set_new(o, "model_alias", json_string(s->model_id));
    json_object_set_new(o, "model_path", json_string(specdec_model_path(s->model)));
    const char *tmpl = specdec_model_chat_template(s->model);
    json_object_set_new(o, "chat_template", tmpl ? json_text(tmpl, strlen(tmpl)) : json_null());
    json_object_set_new(o, "chat_template_family", s->template_family ? json_string(s->template_family) : json_null());
    json_object_set_new(o, "n_ctx", json_integer(s->n_ctx));
    json_object_set_new(o, "build_info", json_string(s->fingerprint));
    json_object_set_new(o, "total_slots", json_integer(s->opts.parallel));
    json_object_set_new(o, "queue_waiting", json_integer(waiting));
    json_object_set_new(o, "queue_max", json_integer(s->opts.queue_max));
    json_object_set_new(o, "busy", json_boolean(running > 0));
    json_object_set_new(spec, "mode", json_string(specdec_spec_mode_name(g->spec)));
    json_object_set_new(spec, "draft_model", s->draft ? json_string(specdec_model_path(s->draft)) : json_null());
    json_object_set_new(spec, "n_max", json_integer(g->draft_max));
    json_object_set_new(spec, "gate", json_integer(g->gate));
    json_object_set_new(o, "speculative", spec);
    json_object_set_new(gen, "temperature", json_float(g->temperature));
    json_object_set_new(gen, "top_k", json_integer(g->top_k));
    json_object_set_new(gen, "top_p", json_float(g->top_p));
    json_object_set_new(gen, "min_p", json_float(g->min_p));
    json_object_set_new(gen, "n_predict", json_integer(g->n_predict));
    json_object_set_new(o, "default_generation_settings", gen);
    return http_send_json(c, 200, o);
}

const char *route_allow(const char *url) {
    static const char *const gets[] = {"/", "/index.html", "/health", "/v1/health", "/v1/models", "/models", "/props",
                                       "/metrics"};
    static const char *const posts[] = {"/v1/chat/completions", "/chat/completions", "/v1/completions",
                                        "/completions", "/tokenize", "/detokenize", "/apply-template"};
    for (size_t i = 0; i < sizeof gets / sizeof *gets; i++)
        if (!strcmp(url, gets[i])) return "GET, HEAD";
    for (size_t i = 0; i < sizeof posts / sizeof *posts; i++)
        if (!strcmp(url, posts[i])) return "POST";
    return NULL;
}

enum MHD_Result route_get(server *s, struct MHD_Connection *c, const char *url) {
    if (!strcmp(url, "/") || !strcmp(url, "/index.html"))
        return http_send_text(c, 200, "text/html; charset=utf-8", sd_chat_page, sd_chat_page_len);
    if (!strcmp(url, "/health") || !strcmp(url, "/v1/health")) {
        json_t *o = json_object();
        json_object_set_new(o, "status", json_string("ok"));
        return http_send_json(c, 200, o);
    }
    if (!strcmp(url, "/v1/models") || !strcmp(url, "/models")) return get_models(s, c);
    if (!strcmp(url, "/props")) return get_props(s, c);
    if (!strcmp(url, "/metrics")) {
        sd_strbuf b = {0};
        metrics_text(s, &b);
        enum MHD_Result rc = http_send_text(c, 200, "text/plain; version=0.0.4", sd_strbuf_str(&b), b.len);
        sd_strbuf_free(&b);
        return rc;
    }
    http_err e = {0};
    http_fail(&e, 404, NULL, "no route for GET %s", url);
    return http_send_error(c, &e);
}

/* POST /tokenize {content, add_special?, parse_special?, with_pieces?} -> {tokens}. */
static enum MHD_Result post_tokenize(server *s, struct MHD_Connection *c, json_t *body) {
    http_err e = {0};
    json_t *content = json_object_get(body, "content");
    json_t *as = json_object_get(body, "add_special"), *ps = json_object_get(body, "parse_special"),
           *wp = json_object_get(body, "with_pieces");
    if (!json_is_string(content)) http_fail(&e, 400, "content", "'content' must be a string");
    else if ((as && !json_is_boolean(as)) || (ps && !json_is_boolean(ps)) || (wp && !json_is_boolean(wp)))
        http_fail(&e, 400, NULL, "'add_special', 'parse_special' and 'with_pieces' must be booleans");
    if (e.status) return http_send_error(c, &e);
    specdec_token *t = NULL;
    size_t n = 0;
    specdec_error err = {0};
    if (specdec_tokenize(s->model, json_string_value(content), json_string_length(content), json_is_true(as),
                         ps ? json_is_true(ps) : true, &t, &n, &err)) {
        http_fail(&e, 500, NULL, "%s", err.message);
        return http_send_error(c, &e);
    }
    json_t *arr = json_array();
    for (size_t i = 0; i < n; i++) {
        if (!json_is_true(wp)) { json_array_append_new(arr, json_integer(t[i])); continue; }
        char piece[256];
        int32_t len = specdec_token_to_piece(s->model, t[i], true, piece, sizeof piece);
        json_t *o = json_object();
        json_object_set_new(o, "id", json_integer(t[i]));
        json_object_set_new(o, "piece", json_text(piece, len < 0 ? 0 : (size_t)len < sizeof piece ? (size_t)len : sizeof piece));
        json_array_append_new(arr, o);
    }
    specdec_free(t);
    json_t *o = json_object();
    json_object_set_new(o, "tokens", arr);
    return http_send_json(c, 200, o);
}

/* POST /detokenize {tokens} -> {content}. */
static enum MHD_Result post_detokenize(server *s, struct MHD_Connection *c, json_t *body) {
    http_err e = {0};
    json_t *arr = json_object_get(body, "tokens");
    if (!json_is_array(arr)) {
        http_fail(&e, 400, "tokens", "'tokens' must be an array of token ids");
        return http_send_error(c, &e);
    }
    size_t n = json_array_size(arr);
    specdec_token *t = calloc(n ? n : 1, sizeof *t);
    if (!t) return MHD_NO;
    for (size_t i = 0; i < n; i++) {
        json_t *v = json_array_get(arr, i);
        if (!json_is_integer(v) || json_integer_value(v) < 0 || json_integer_value(v) >= specdec_model_n_vocab(s->model)) {
            free(t);
            http_fail(&e, 400, "tokens", "tokens[%zu] is not a token id in [0, %d)", i, specdec_model_n_vocab(s->model));
            return http_send_error(c, &e);
        }
        t[i] = (specdec_token)json_integer_value(v);
    }
    char *text = NULL;
    size_t len = 0;
    specdec_error err = {0};
    specdec_status st = specdec_detokenize(s->model, t, n, false, &text, &len, &err);
    free(t);
    if (st) {
        http_fail(&e, 400, "tokens", "%s", err.message);
        return http_send_error(c, &e);
    }
    json_t *o = json_object();
    json_object_set_new(o, "content", json_text(text, len));
    specdec_free(text);
    return http_send_json(c, 200, o);
}

/* POST /apply-template {messages, ...} -> {prompt, n_tokens, tokens}: the
 * rendered chat prompt and its ids, no inference. */
static enum MHD_Result post_apply_template(server *s, struct MHD_Connection *c, json_t *body) {
    sd_strbuf prompt = {0};
    oai_req r = {.kind = JOB_CHAT, .prompt_out = &prompt};
    http_err e = {0};
    job *j = job_new(JOB_CHAT);
    if (!j) return MHD_NO;
    enum MHD_Result rc;
    /* A prompt too long for the context is still rendered. */
    if (!oai_parse(s, body, &r, j, &e) && strcmp(e.type ? e.type : "", "exceed_context_size_error")) {
        rc = http_send_error(c, &e);
    } else {
        json_t *o = json_object();
        json_object_set_new(o, "prompt", json_text(sd_strbuf_str(&prompt), prompt.len));
        json_object_set_new(o, "n_tokens", json_integer((json_int_t)j->n_prompt));
        /* The ids the model would be given (message text never parsed as
         * control tokens): what /tokenize of "prompt" cannot show. */
        json_t *ids = json_array();
        for (size_t i = 0; i < j->n_prompt; i++) json_array_append_new(ids, json_integer(j->prompt[i]));
        json_object_set_new(o, "tokens", ids);
        rc = http_send_json(c, 200, o);
    }
    sd_strbuf_free(&prompt);
    job_release(j);
    return rc;
}

enum MHD_Result oai_handle(server *s, struct MHD_Connection *c, job_kind kind, json_t *body) {
    oai_req r = {.kind = kind};
    http_err e = {0};
    job *j = job_new(kind);
    if (!j) return MHD_NO;
    if (!oai_parse(s, body, &r, j, &e)) {
        json_decref(body);
        job_release(j);
        metrics_reject(&s->m);
        return http_send_error(c, &e);
    }
    if (!server_submit(s, j)) {
        json_decref(body);
        job_release(j);
        metrics_reject(&s->m);
        if (server_draining(s)) http_fail(&e, 503, NULL, "the server is shutting down (SIGTERM): retry on another replica");
        else http_fail(&e, 503, NULL, "the server is busy: %d requests are waiting (--queue)", s->opts.queue_max);
        return http_send_error(c, &e);
    }
    return oai_respond(s, c, &r, j, body); /* takes the reference and the body */
}

static enum MHD_Result post_other(server *s, struct MHD_Connection *c, const char *url, json_t *body) {
    if (!json_is_object(body)) {
        http_err e = {0};
        http_fail(&e, 400, NULL, "the request body must be a JSON object");
        return http_send_error(c, &e);
    }
    if (!strcmp(url, "/tokenize")) return post_tokenize(s, c, body);
    if (!strcmp(url, "/detokenize")) return post_detokenize(s, c, body);
    if (!strcmp(url, "/apply-template")) return post_apply_template(s, c, body);
    http_err e = {0};
    http_fail(&e, 404, NULL, "no route for POST %s", url);
    return http_send_error(c, &e);
}

enum MHD_Result route_post(server *s, struct MHD_Connection *c, const char *url, json_t *body) {
    if (!strcmp(url, "/v1/chat/completions") || !strcmp(url, "/chat/completions"))
        return oai_handle(s, c, JOB_CHAT, body);
    if (!strcmp(url, "/v1/completions") || !strcmp(url, "/completions"))
        return oai_handle(s, c, JOB_COMPLETION, body);
    enum MHD_Result rc = post_other(s, c, url, body);
    json_decref(body);
    return rc;
}
