/* Request bodies of /v1/chat/completions and /v1/completions, checked field
 * by field: a wrong type or an out-of-range number is a 400 naming the field
 * (OpenAI's `param`), a feature we do not have (functions) a 501, n > 1 a 400
 * that clients must not retry. */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/oai.h"

#define OAI_TEMPERATURE_MAX 2.0f

/* A request field that is an option of the library's table (temperature,
 * top_k, ..., speculative.n_max): a JSON number, refused outside the range
 * the command line's flag has, with the same message. Absent or null keeps
 * the server's default. */
static bool get_option(json_t *body, const char *key, const specdec_option *opt, specdec_options *o, http_err *e) {
    json_t *v = json_object_get(body, key);
    if (!v || json_is_null(v)) return true;
    if (!json_is_number(v)) return http_fail(e, 400, key, "'%s' must be a number", key);
    char text[64];
    if (json_is_integer(v)) snprintf(text, sizeof text, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
    else snprintf(text, sizeof text, "%.17g", json_real_value(v));
    specdec_error err = {0};
    if (specdec_option_set(o, opt, key, text, &err) != SPECDEC_OK) return http_fail(e, 400, key, "%s", err.message);
    /* OpenAI's API takes temperature in [0, 2] and clients rely on its 400
     * beyond; the command line's --temp keeps the table's wider range. */
    if (!strcmp(key, "temperature") && o->gen.temperature > OAI_TEMPERATURE_MAX)
        return http_fail(e, 400, key, "temperature %s: out of range [0, 2]", text);
    return true;
}

/* Every table option with an HTTP field, then OpenAI's names for n_predict
 * (max_completion_tokens over max_tokens over n_predict). */
static bool get_table_options(json_t *body, specdec_options *o, http_err *e) {
    size_t n;
    const specdec_option *t = specdec_option_table(&n);
    for (size_t i = 0; i < n; i++)
        if (t[i].http_field && !get_option(body, t[i].http_field, &t[i], o, e)) return false;
    const specdec_option *n_predict = specdec_option_find("--n-predict");
    return get_option(body, "max_tokens", n_predict, o, e) && get_option(body, "max_completion_tokens", n_predict, o, e);
}

static bool get_int(json_t *body, const char *key, long long lo, long long hi, long long *out, http_err *e) {
    json_t *v = json_object_get(body, key);
    if (!v || json_is_null(v)) return true;
    if (!json_is_integer(v)) return http_fail(e, 400, key, "'%s' must be an integer", key);
    long long x = json_integer_value(v);
    if (x < lo || x > hi) return http_fail(e, 400, key, "'%s' must be in [%lld, %lld], got %lld", key, lo, hi, x);
    *out = x;
    return true;
}

static bool get_bool(json_t *body, const char *key, bool *out, http_err *e) {
    json_t *v = json_object_get(body, key);
    if (!v || json_is_null(v)) return true;
    if (!json_is_boolean(v)) return http_fail(e, 400, key, "'%s' must be a boolean", key);
    *out = json_is_true(v);
    return true;
}

/* Fields we refuse rather than silently ignore. */
static bool refuse_unsupported(json_t *body, http_err *e) {
    static const char *const fields[] = {"functions", "function_call"}; /* the deprecated forms of tools */
    for (size_t i = 0; i < sizeof fields / sizeof *fields; i++) {
        json_t *v = json_object_get(body, fields[i]);
        if (v && !json_is_null(v) && !(json_is_array(v) && json_array_size(v) == 0) &&
            !(json_is_string(v) && !strcmp(json_string_value(v), "none")))
            return http_fail(e, 501, fields[i], "'%s' is not supported by this server", fields[i]);
    }
    long long n = 1;
    if (!get_int(body, "n", 1, 128, &n, e)) return false;
    if (n != 1) return http_fail(e, 400, "n", "'n' must be 1: this server generates one choice per request, got %lld", n);
    return true;
}

/* stop: a string or up to 4 strings (OpenAI), copied into the job. */
static bool get_stop(json_t *body, job *j, http_err *e) {
    json_t *v = json_object_get(body, "stop");
    if (!v || json_is_null(v)) return true;
    json_t *one[1] = {v};
    size_t n = json_is_array(v) ? json_array_size(v) : 1;
    if (!json_is_string(v) && !json_is_array(v)) return http_fail(e, 400, "stop", "'stop' must be a string or an array of strings");
    if (n > 4) return http_fail(e, 400, "stop", "'stop' has %zu strings; at most 4", n);
    for (size_t i = 0; i < n; i++) {
        json_t *s = json_is_array(v) ? json_array_get(v, i) : one[0];
        if (!json_is_string(s)) return http_fail(e, 400, "stop", "'stop' must hold strings");
        if (json_string_length(s) == 0) continue;
        j->stop[j->gp.n_stop] = strdup(json_string_value(s));
        if (!j->stop[j->gp.n_stop]) return http_fail(e, 500, NULL, "out of memory");
        j->gp.n_stop++;
    }
    j->gp.stop = (const char *const *)j->stop;
    return true;
}

/* --max-tokens: a request asking for more is refused (400); one that asks
 * for nothing (or the server default is longer) gets the cap. */
static bool cap_max_tokens(server *s, json_t *body, specdec_generate_params *gp, http_err *e) {
    int cap = s->opts.max_tokens;
    if (cap <= 0 || (gp->n_predict >= 0 && gp->n_predict <= cap)) return true;
    static const char *const keys[] = {"max_completion_tokens", "max_tokens", "n_predict"};
    for (size_t i = 0; i < sizeof keys / sizeof *keys; i++) {
        json_t *v = json_object_get(body, keys[i]);
        if (!v || json_is_null(v)) continue;
        metrics_refuse(&s->m, REFUSE_MAX_TOKENS);
        http_fail(e, 400, keys[i], "'%s' asks for more tokens than this server gives one request: at most %d (--max-tokens)",
                  keys[i], cap);
        e->code = "max_tokens_too_large";
        return false;
    }
    gp->n_predict = cap;
    return true;
}

static bool get_sampling(server *s, json_t *body, oai_req *r, job *j, http_err *e) {
    specdec_generate_params *gp = &j->gp;
    specdec_options o = specdec_options_default();
    o.gen = s->opts.gen;
    if (!get_table_options(body, &o, e)) return false;
    *gp = o.gen;
    if (!cap_max_tokens(s, body, gp, e)) return false;
    /* "speculative": false turns drafting off for this request only. */
    r->speculative = gp->spec != SPECDEC_SPEC_NONE;
    bool spec = r->speculative;
    if (!get_bool(body, "speculative", &spec, e)) return false;
    if (spec && gp->spec == SPECDEC_SPEC_NONE) gp->spec = s->draft ? SPECDEC_SPEC_AUTO : SPECDEC_SPEC_NGRAM;
    if (!spec) gp->spec = SPECDEC_SPEC_NONE;
    r->speculative = spec;
    return get_stop(body, j, e);
}

/* A message's content: a string, null, or an array of {type:"text", text} parts (joined). */
static bool content_text(json_t *c, size_t i, sd_strbuf *out, bool *is_null, http_err *e) {
    *is_null = !c || json_is_null(c);
    if (*is_null) return true;
    if (json_is_string(c)) { sd_strbuf_add(out, json_string_value(c), json_string_length(c)); return true; }
    if (!json_is_array(c)) return http_fail(e, 400, "messages", "messages[%zu].content must be a string or an array of parts", i);
    size_t k;
    json_t *part;
    json_array_foreach(c, k, part) {
        json_t *type = json_object_get(part, "type"), *text = json_object_get(part, "text");
        if (!json_is_string(type) || strcmp(json_string_value(type), "text"))
            return http_fail(e, json_is_string(type) ? 501 : 400, "messages",
                             "messages[%zu].content[%zu]: only parts of type \"text\" are supported", i, k);
        if (!json_is_string(text)) return http_fail(e, 400, "messages", "messages[%zu].content[%zu].text must be a string", i, k);
        sd_strbuf_add(out, json_string_value(text), json_string_length(text));
    }
    return true;
}

/* Template switches: chat_template_kwargs {enable_thinking, preserve_thinking}
 * (llama-server), or the same keys at the top level. */
static bool get_chat_switches(json_t *body, specdec_chat_params *cp, http_err *e) {
    json_t *kw = json_object_get(body, "chat_template_kwargs");
    if (kw && !json_is_null(kw) && !json_is_object(kw))
        return http_fail(e, 400, "chat_template_kwargs", "'chat_template_kwargs' must be an object");
    json_t *srcs[2] = {body, kw};
    for (int k = 0; k < 2; k++) {
        if (!srcs[k] || !json_is_object(srcs[k])) continue;
        bool think = cp->enable_thinking != 0, keep = cp->preserve_thinking;
        json_t *has = json_object_get(srcs[k], "enable_thinking");
        if (!get_bool(srcs[k], "enable_thinking", &think, e) || !get_bool(srcs[k], "preserve_thinking", &keep, e))
            return false;
        if (has && !json_is_null(has)) cp->enable_thinking = think;
        cp->preserve_thinking = keep;
    }
    return true;
}

/* messages -> the model's chat template -> prompt text and its tokens (into
 * j): control tokens only where the template writes them, message text
 * tokenized as text (specdec_chat_tokenize; docs/SECURITY.md). */
static bool chat_prompt(server *s, json_t *body, oai_req *r, sd_strbuf *prompt, job *j, http_err *e) {
    json_t *msgs = json_object_get(body, "messages");
    if (!msgs) return http_fail(e, 400, "messages", "'messages' is required");
    if (!json_is_array(msgs) || json_array_size(msgs) == 0)
        return http_fail(e, 400, "messages", "'messages' must be a non-empty array");
    if (!s->template_family) return http_fail(e, 400, "messages", "%s", s->template_error);
    size_t n = json_array_size(msgs);
    specdec_chat_message *m = calloc(n, sizeof *m);
    sd_strbuf *texts = calloc(n, sizeof *texts);
    char **calls = calloc(n, sizeof *calls); /* tool_calls as the template gets them */
    bool ok = m && texts && calls;
    if (!ok) http_fail(e, 500, NULL, "out of memory");
    for (size_t i = 0; ok && i < n; i++) {
        json_t *msg = json_array_get(msgs, i), *role = json_object_get(msg, "role");
        if (!json_is_object(msg)) { ok = http_fail(e, 400, "messages", "messages[%zu] must be an object", i); break; }
        if (!json_is_string(role)) { ok = http_fail(e, 400, "messages", "messages[%zu].role must be a string", i); break; }
        const char *rs = json_string_value(role);
        if (strcmp(rs, "system") && strcmp(rs, "user") && strcmp(rs, "assistant") && strcmp(rs, "tool") &&
            strcmp(rs, "developer")) {
            ok = http_fail(e, 400, "messages", "messages[%zu].role '%s' is not one of system, user, assistant, tool", i, rs);
            break;
        }
        bool is_null;
        if (!content_text(json_object_get(msg, "content"), i, &texts[i], &is_null, e)) { ok = false; break; }
        if (is_null && strcmp(rs, "assistant") && strcmp(rs, "tool")) { ok = http_fail(e, 400, "messages", "messages[%zu].content is required", i); break; }
        json_t *rc = json_object_get(msg, "reasoning_content");
        if (rc && !json_is_null(rc) && !json_is_string(rc)) { ok = http_fail(e, 400, "messages", "messages[%zu].reasoning_content must be a string", i); break; }
        m[i] = (specdec_chat_message){.role = strcmp(rs, "developer") ? rs : "system", .content = sd_strbuf_str(&texts[i]),
                                      .reasoning_content = json_is_string(rc) ? json_string_value(rc) : NULL};
        if (!oai_message_tools(msg, i, &m[i], &calls[i], e)) { ok = false; break; }
    }
    if (ok) ok = get_chat_switches(body, &r->chat, e);
    char *tools = NULL; /* the template's `tools` */
    if (ok && r->tools && !(tools = json_dumps(r->tools, JSON_COMPACT))) ok = http_fail(e, 500, NULL, "out of memory");
    r->chat.tools_json = tools;
    if (ok) {
        char *text = NULL;
        size_t len = 0;
        specdec_error err = {0};
        if (specdec_chat_tokenize(s->model, m, n, &r->chat, &text, &len, &j->prompt, &j->n_prompt, &err) != SPECDEC_OK)
            ok = http_fail(e, err.code == SPECDEC_ERR_NOMEM ? 500 : 400, "messages", "%s", err.message);
        else sd_strbuf_add(prompt, text, len);
        specdec_free(text);
    }
    r->chat.tools_json = NULL;
    free(tools);
    for (size_t i = 0; calls && i < n; i++) free(calls[i]);
    free(calls);
    for (size_t i = 0; texts && i < n; i++) sd_strbuf_free(&texts[i]);
    free(texts);
    free(m);
    return ok;
}

/* /v1/completions prompt: a string, or an array holding one string or token ids. */
static bool completion_prompt(server *s, json_t *body, sd_strbuf *prompt, job *j, http_err *e) {
    json_t *p = json_object_get(body, "prompt");
    if (!p) return http_fail(e, 400, "prompt", "'prompt' is required");
    if (json_is_array(p) && json_array_size(p) == 1 && json_is_string(json_array_get(p, 0))) p = json_array_get(p, 0);
    if (json_is_string(p)) { sd_strbuf_add(prompt, json_string_value(p), json_string_length(p)); return true; }
    if (!json_is_array(p) || json_array_size(p) == 0)
        return http_fail(e, 400, "prompt", "'prompt' must be a string, or an array of one string or of token ids");
    size_t n = json_array_size(p);
    j->prompt = calloc(n, sizeof *j->prompt);
    if (!j->prompt) return http_fail(e, 500, NULL, "out of memory");
    for (size_t i = 0; i < n; i++) {
        json_t *t = json_array_get(p, i);
        if (!json_is_integer(t) || json_integer_value(t) < 0 || json_integer_value(t) >= specdec_model_n_vocab(s->model))
            return http_fail(e, 400, "prompt", "prompt[%zu] is not a token id in [0, %d)", i, specdec_model_n_vocab(s->model));
        j->prompt[i] = (specdec_token)json_integer_value(t);
    }
    j->n_prompt = n;
    return true;
}

/* The chat prompt ends inside an open reasoning section (Qwen3.5's
 * generation prompt with thinking on ends in "<think>\n"): the answer starts
 * with reasoning, which a grammar must let through (oai_grammar.c). */
static bool opens_reasoning(const sd_strbuf *prompt) {
    const char *t = sd_strbuf_str(prompt);
    size_t n = prompt->len;
    while (n > 0 && (t[n - 1] == '\n' || t[n - 1] == ' ')) n--;
    return n >= 7 && !memcmp(t + n - 7, "<think>", 7);
}

bool oai_parse(server *s, json_t *body, oai_req *r, job *j, http_err *e) {
    if (!json_is_object(body)) return http_fail(e, 400, NULL, "the request body must be a JSON object");
    r->chat = specdec_chat_default_params();
    r->chat.template_name = s->opts.chat_template;
    if (!refuse_unsupported(body, e) || !oai_get_tools(body, r, e) || !get_sampling(s, body, r, j, e) ||
        !oai_get_logit_bias(s, body, j, e) || !oai_get_logprobs(body, r, j, e) ||
        !get_bool(body, "stream", &r->stream, e) || !get_bool(body, "timings_per_token", &r->timings_per_token, e))
        return false;
    json_t *so = json_object_get(body, "stream_options");
    if (so && !json_is_null(so)) {
        if (!json_is_object(so)) return http_fail(e, 400, "stream_options", "'stream_options' must be an object");
        if (!get_bool(so, "include_usage", &r->include_usage, e)) return false;
    }
    json_t *model = json_object_get(body, "model");
    if (model && !json_is_null(model) && !json_is_string(model)) return http_fail(e, 400, "model", "'model' must be a string");
    sd_strbuf prompt = {0};
    bool ok = r->kind == JOB_CHAT ? chat_prompt(s, body, r, &prompt, j, e) : completion_prompt(s, body, &prompt, j, e);
    if (ok && !j->prompt) {
        specdec_error err = {0};
        /* A /v1/completions prompt is raw: its control-token spellings are
         * parsed, as llama-server does (docs/SECURITY.md); BOS as the model wants. */
        if (specdec_tokenize(s->model, sd_strbuf_str(&prompt), prompt.len, true, true, &j->prompt, &j->n_prompt, &err))
            ok = http_fail(e, 500, NULL, "tokenize: %s", err.message);
    }
    if (ok && r->prompt_out) sd_strbuf_add(r->prompt_out, sd_strbuf_str(&prompt), prompt.len);
    if (ok) ok = oai_get_grammar(s, body, j, r->kind == JOB_CHAT && opens_reasoning(&prompt), e);
    if (ok && r->kind == JOB_CHAT) ok = oai_tool_grammar(s, body, r, j, e);
    /* --spec grammar drafts only what the request's grammar forces: without
     * one there is nothing to draft, and the request decodes plainly (and
     * its timings say so: speculative false). */
    if (ok && j->gp.spec == SPECDEC_SPEC_GRAMMAR && !j->gp.grammar) {
        j->gp.spec = SPECDEC_SPEC_NONE;
        r->speculative = false;
    }
    sd_strbuf_free(&prompt);
    if (!ok) return false;
    int n_ctx = s->n_ctx;
    if (j->n_prompt == 0) return http_fail(e, 400, "prompt", "the prompt is empty");
    if (s->opts.max_prompt > 0 && j->n_prompt > (size_t)s->opts.max_prompt) {
        metrics_refuse(&s->m, REFUSE_PROMPT);
        http_fail(e, 400, r->kind == JOB_CHAT ? "messages" : "prompt",
                  "the prompt has %zu tokens; this server takes at most %d (--max-prompt)", j->n_prompt,
                  s->opts.max_prompt);
        e->code = "prompt_too_long";
        return false;
    }
    if (j->n_prompt >= (size_t)n_ctx) {
        http_fail(e, 400, r->kind == JOB_CHAT ? "messages" : "prompt",
                  "the request exceeds the available context size: %zu prompt tokens, context %d",
                  j->n_prompt, n_ctx);
        e->type = "exceed_context_size_error";
        e->code = "context_length_exceeded"; /* OpenAI's code for it */
        e->n_prompt_tokens = (int)j->n_prompt;
        e->n_ctx = n_ctx;
        return false;
    }
    return true;
}
