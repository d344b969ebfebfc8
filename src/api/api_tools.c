/* The tool-call part of the public API: the template's call syntax, the
 * grammar of a call (src/chat/tool_grammar.c) and the streaming parser
 * (src/chat/tool_parse.c), set up from the model's chat template. */
#include <stdlib.h>
#include <string.h>

#include "api/api_chat.h"
#include "chat/tool_call.h"

struct specdec_tool_parser {
    sd_tool_parser p;
    specdec_tool_event *ev;
    size_t cap;
};

/* The syntax for (model, params): the template's text when the model's own
 * template renders, else the built-in formatter's family. */
static specdec_status syntax_of(const specdec_model *model, const specdec_chat_params *params, sd_tool_syntax *out,
                                sd_chat_template *t, sd_chat_opts *o, specdec_error *err) {
    specdec_status st = sd_api_chat_setup(model, params, t, o, err);
    if (st != SPECDEC_OK) return st;
    *out = sd_tool_syntax_detect(t->jinja ? model->chat_template : NULL, t);
    return SPECDEC_OK;
}

const char *specdec_tool_syntax(const specdec_model *model, const specdec_chat_params *params) {
    sd_tool_syntax s;
    sd_chat_template t;
    sd_chat_opts o;
    return syntax_of(model, params, &s, &t, &o, NULL) == SPECDEC_OK ? sd_tool_syntax_name(s) : NULL;
}

/* True when text is one token of the model's vocabulary, spelled so. */
static bool one_token(const specdec_model *m, const char *text) {
    specdec_token *t = NULL;
    size_t n = 0;
    specdec_error err = {0};
    bool ok = specdec_tokenize(m, text, strlen(text), false, true, &t, &n, &err) == SPECDEC_OK && n == 1 &&
              specdec_token_text(m, t[0]) && !strcmp(specdec_token_text(m, t[0]), text);
    specdec_free(t);
    return ok;
}

specdec_status specdec_tool_grammar(const specdec_model *model, const specdec_chat_params *params,
                                    const char *tools_json, size_t len, specdec_tool_choice choice, const char *name,
                                    bool parallel, char **gbnf, size_t *gbnf_len, specdec_error *err) {
    if (gbnf) *gbnf = NULL;
    if (gbnf_len) *gbnf_len = 0;
    if (!model || !gbnf || !gbnf_len || (!tools_json && len))
        return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_tool_grammar: NULL argument");
    sd_tool_gbnf_opts o = {.name = name, .parallel = parallel};
    sd_chat_template t;
    sd_chat_opts co;
    specdec_status st = syntax_of(model, params, &o.syntax, &t, &co, err);
    if (st != SPECDEC_OK) return st;
    switch (choice) {
    case SPECDEC_TOOL_CHOICE_NONE: o.choice = SD_TOOL_CHOICE_NONE; break;
    case SPECDEC_TOOL_CHOICE_REQUIRED: o.choice = SD_TOOL_CHOICE_REQUIRED; break;
    case SPECDEC_TOOL_CHOICE_NAMED: o.choice = SD_TOOL_CHOICE_NAMED; break;
    default: o.choice = SD_TOOL_CHOICE_AUTO;
    }
    o.tags_are_tokens = one_token(model, "<tool_call>") && one_token(model, "</tool_call>");
    o.think_tokens = one_token(model, "<think>") && one_token(model, "</think>");
    o.think = sd_chat_think_start(&t, &co);
    sd_strbuf b = {0};
    sd_err e = {0};
    if (sd_tool_gbnf(tools_json, len, &o, &b, &e) != SD_OK) {
        sd_strbuf_free(&b);
        return sd_api_error(err, &e);
    }
    if (b.len) {
        *gbnf = b.s; /* malloc'd: specdec_free is free */
        *gbnf_len = b.len;
    } else sd_strbuf_free(&b);
    return SPECDEC_OK;
}

specdec_status specdec_tool_parser_init(const specdec_model *model, const specdec_chat_params *params,
                                        const char *tools_json, size_t len, specdec_tool_parser **out,
                                        specdec_error *err) {
    if (out) *out = NULL;
    if (!model || !out || (!tools_json && len))
        return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_tool_parser_init: NULL argument");
    sd_tool_syntax s;
    sd_chat_template t;
    sd_chat_opts o;
    specdec_status st = syntax_of(model, params, &s, &t, &o, err);
    if (st != SPECDEC_OK) return st;
    specdec_tool_parser *p = calloc(1, sizeof *p);
    if (!p) return sd_api_fail(err, SPECDEC_ERR_NOMEM, "tools: out of memory");
    sd_err e = {0};
    if (sd_tool_parser_init(&p->p, s, tools_json, len, &e) != SD_OK) {
        free(p);
        return sd_api_error(err, &e);
    }
    *out = p;
    return SPECDEC_OK;
}

/* The parser's events as public ones. */
static specdec_status events(specdec_tool_parser *p, const specdec_tool_event **ev, size_t *n) {
    *ev = NULL;
    *n = 0;
    if (p->p.oom || p->p.ev_text.oom) return SPECDEC_ERR_NOMEM;
    if (p->p.n_ev > p->cap) {
        specdec_tool_event *v = realloc(p->ev, p->p.n_ev * sizeof *v);
        if (!v) return SPECDEC_ERR_NOMEM;
        p->ev = v;
        p->cap = p->p.n_ev;
    }
    for (size_t i = 0; i < p->p.n_ev; i++) {
        const sd_tool_ev *x = &p->p.ev[i];
        p->ev[i] = (specdec_tool_event){.kind = (specdec_tool_event_kind)x->kind, .index = x->index,
                                        .text = sd_strbuf_str(&p->p.ev_text) + x->off, .len = x->len};
    }
    *ev = p->ev;
    *n = p->p.n_ev;
    return SPECDEC_OK;
}

specdec_status specdec_tool_parser_feed(specdec_tool_parser *p, const char *text, size_t len,
                                        const specdec_tool_event **ev, size_t *n) {
    if (!p || !ev || !n || (!text && len)) return SPECDEC_ERR_ARG;
    sd_tool_parser_feed(&p->p, text ? text : "", len);
    return events(p, ev, n);
}

specdec_status specdec_tool_parser_flush(specdec_tool_parser *p, const specdec_tool_event **ev, size_t *n) {
    if (!p || !ev || !n) return SPECDEC_ERR_ARG;
    sd_tool_parser_flush(&p->p);
    return events(p, ev, n);
}

void specdec_tool_parser_free(specdec_tool_parser *p) {
    if (!p) return;
    sd_tool_parser_free(&p->p);
    free(p->ev);
    free(p);
}
