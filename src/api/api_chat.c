/* The chat-template part of the public API: resolving the model's template to
 * a built-in formatter (src/chat/), rendering, and the reasoning splitter. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "chat/chat.h"
#include "api/api_chat.h"
#include "chat/think.h"
#include "tokenizer/tokenizer.h"

specdec_chat_params specdec_chat_default_params(void) {
    return (specdec_chat_params){.add_generation_prompt = true, .enable_thinking = -1};
}

const char *specdec_chat_builtin_templates(void) { return sd_chat_family_names(); }

/* sd_err -> specdec_error; the codes are the same enum values. */
static specdec_status fail(specdec_error *err, const sd_err *e) {
    if (err) {
        err->code = (specdec_status)e->code;
        snprintf(err->message, sizeof err->message, "%s", e->msg);
    }
    return (specdec_status)e->code;
}

static specdec_status resolve(const specdec_model *model, const char *name, sd_chat_template *t,
                              specdec_error *err) {
    sd_err e = {0};
    if (!model) {
        sd_err_set(&e, SD_ERR_ARG, "chat: model is NULL");
        return fail(err, &e);
    }
    if (!name && model->jinja) { /* the model's own template, as written */
        if (sd_chat_detect(model->chat_template, t, &e) != SD_OK)
            *t = (sd_chat_template){.family = SD_CHAT_CHATML, .family_unknown = true};
        t->jinja = model->jinja;
        return SPECDEC_OK;
    }
    sd_status st = name ? sd_chat_template_named(name, t, &e)
                        : sd_chat_detect(specdec_model_chat_template(model), t, &e);
    return st == SD_OK ? SPECDEC_OK : fail(err, &e);
}

const char *specdec_chat_template_refusal(const specdec_model *model) {
    return model && !model->jinja ? model->jinja_refusal : NULL;
}

specdec_status specdec_chat_template_resolve(const specdec_model *model, const char *template_name,
                                             const char **family, specdec_error *err) {
    sd_chat_template t;
    specdec_status st = resolve(model, template_name, &t, err);
    if (family) *family = st == SPECDEC_OK ? sd_chat_engine_name(&t) : NULL;
    return st;
}

static sd_chat_opts chat_opts(const specdec_model *model, const specdec_chat_params *p) {
    specdec_chat_params d = specdec_chat_default_params();
    if (!p) p = &d;
    /* No BOS text: the tokenizer adds BOS as the model asks (llama.cpp strips
     * the template's). EOS is the model's: templates that close turns with it
     * (Mistral) need its text. */
    const char *eos = specdec_token_text(model, specdec_token_eos(model));
    return (sd_chat_opts){.add_generation_prompt = p->add_generation_prompt,
                          .enable_thinking = p->enable_thinking < 0 ? -1 : p->enable_thinking ? 1 : 0,
                          .preserve_thinking = p->preserve_thinking,
                          .bos_token = "",
                          .eos_token = eos ? eos : "",
                          .tools_json = p->tools_json,
                          .now = -1};
}

specdec_status sd_api_chat_setup(const specdec_model *model, const specdec_chat_params *params, sd_chat_template *t,
                                 sd_chat_opts *opts, specdec_error *err) {
    specdec_status st = resolve(model, params ? params->template_name : NULL, t, err);
    if (st == SPECDEC_OK) *opts = chat_opts(model, params);
    return st;
}

/* Renders into *out (and the message-text ranges into *spans when non-NULL). */
static specdec_status render(const specdec_model *model, const specdec_chat_message *messages, size_t n,
                             const specdec_chat_params *params, sd_strbuf *out, sd_chat_spans *spans,
                             specdec_error *err) {
    sd_err e = {0};
    sd_chat_template t;
    specdec_status st = resolve(model, params ? params->template_name : NULL, &t, err);
    if (st) return st;
    sd_chat_msg *m = calloc(n ? n : 1, sizeof *m);
    if (!m) {
        sd_err_set(&e, SD_ERR_NOMEM, "chat: out of memory");
        return fail(err, &e);
    }
    for (size_t i = 0; i < n; i++)
        m[i] = (sd_chat_msg){.role = messages[i].role, .content = messages[i].content,
                             .reasoning_content = messages[i].reasoning_content,
                             .tool_calls_json = messages[i].tool_calls_json,
                             .tool_call_id = messages[i].tool_call_id,
                             .name = messages[i].name};
    sd_chat_opts o = chat_opts(model, params);
    o.text_spans = spans;
    sd_status rs = sd_chat_render(&t, m, n, &o, out, &e);
    free(m);
    if (rs != SD_OK) {
        sd_strbuf_free(out);
        return fail(err, &e);
    }
    if (!out->s) sd_strbuf_add(out, "", 0);
    if (out->oom) {
        sd_strbuf_free(out);
        sd_err_set(&e, SD_ERR_NOMEM, "chat: out of memory");
        return fail(err, &e);
    }
    return SPECDEC_OK;
}

specdec_status specdec_chat_apply_template(const specdec_model *model, const specdec_chat_message *messages,
                                           size_t n, const specdec_chat_params *params, char **text, size_t *len,
                                           specdec_error *err) {
    sd_err e = {0};
    if (!text || (n && !messages)) {
        sd_err_set(&e, SD_ERR_ARG, "chat: text or messages NULL");
        return fail(err, &e);
    }
    *text = NULL;
    if (len) *len = 0;
    sd_strbuf out = {0};
    specdec_status st = render(model, messages, n, params, &out, NULL, err);
    if (st) return st;
    *text = out.s; /* malloc'd: specdec_free is free */
    if (len) *len = out.len;
    return SPECDEC_OK;
}

specdec_status specdec_chat_tokenize(const specdec_model *model, const specdec_chat_message *messages, size_t n,
                                     const specdec_chat_params *params, char **text, size_t *len,
                                     specdec_token **tokens, size_t *n_tokens, specdec_error *err) {
    sd_err e = {0};
    if (!tokens || !n_tokens || (n && !messages)) {
        sd_err_set(&e, SD_ERR_ARG, "chat: tokens or messages NULL");
        return fail(err, &e);
    }
    *tokens = NULL;
    *n_tokens = 0;
    if (text) *text = NULL;
    if (len) *len = 0;
    sd_strbuf out = {0};
    sd_chat_spans spans = {0};
    specdec_status st = render(model, messages, n, params, &out, &spans, err);
    if (st) { sd_chat_spans_free(&spans); return st; }
    /* sd_chat_span and sd_text_range are both {off, len}; copied, not cast. */
    sd_text_range *plain = calloc(spans.n ? spans.n : 1, sizeof *plain);
    sd_status ts = SD_OK;
    if (!plain) ts = sd_err_set(&e, SD_ERR_NOMEM, "chat: out of memory");
    for (size_t i = 0; plain && i < spans.n; i++) plain[i] = (sd_text_range){spans.v[i].off, spans.v[i].len};
    if (ts == SD_OK) ts = sd_tokenize_guarded(model->m->tok, out.s, out.len, true, plain, spans.n, tokens, n_tokens, &e);
    free(plain);
    sd_chat_spans_free(&spans);
    if (ts != SD_OK) {
        sd_strbuf_free(&out);
        return fail(err, &e);
    }
    if (text) *text = out.s;
    else sd_strbuf_free(&out);
    if (len) *len = out.len;
    return SPECDEC_OK;
}

struct specdec_reasoning {
    sd_think think;
    sd_strbuf reasoning, content;
};

specdec_status specdec_reasoning_init(const specdec_model *model, const specdec_chat_params *params,
                                      specdec_reasoning **out, specdec_error *err) {
    sd_err e = {0};
    if (!out) {
        sd_err_set(&e, SD_ERR_ARG, "chat: out is NULL");
        return fail(err, &e);
    }
    *out = NULL;
    sd_chat_template t;
    specdec_status st = resolve(model, params ? params->template_name : NULL, &t, err);
    if (st) return st;
    specdec_reasoning *r = calloc(1, sizeof *r);
    if (!r) {
        sd_err_set(&e, SD_ERR_NOMEM, "chat: out of memory");
        return fail(err, &e);
    }
    sd_chat_opts o = chat_opts(model, params);
    sd_think_init(&r->think, sd_chat_think_start(&t, &o));
    *out = r;
    return SPECDEC_OK;
}

static void hand_out(specdec_reasoning *r, const char **reasoning, size_t *n_reasoning, const char **content,
                     size_t *n_content) {
    if (reasoning) *reasoning = sd_strbuf_str(&r->reasoning);
    if (n_reasoning) *n_reasoning = r->reasoning.len;
    if (content) *content = sd_strbuf_str(&r->content);
    if (n_content) *n_content = r->content.len;
}

void specdec_reasoning_feed(specdec_reasoning *r, const char *text, size_t len, const char **reasoning,
                            size_t *n_reasoning, const char **content, size_t *n_content) {
    if (!r) return;
    sd_strbuf_clear(&r->reasoning);
    sd_strbuf_clear(&r->content);
    if (text && len) sd_think_feed(&r->think, text, len, &r->reasoning, &r->content);
    hand_out(r, reasoning, n_reasoning, content, n_content);
}

void specdec_reasoning_flush(specdec_reasoning *r, const char **reasoning, size_t *n_reasoning, const char **content,
                             size_t *n_content) {
    if (!r) return;
    sd_strbuf_clear(&r->reasoning);
    sd_strbuf_clear(&r->content);
    sd_think_flush(&r->think, &r->reasoning, &r->content);
    hand_out(r, reasoning, n_reasoning, content, n_content);
}

void specdec_reasoning_free(specdec_reasoning *r) {
    if (!r) return;
    sd_think_free(&r->think);
    sd_strbuf_free(&r->reasoning);
    sd_strbuf_free(&r->content);
    free(r);
}
