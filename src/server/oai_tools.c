/* Tool calls in /v1/chat/completions (docs/TOOLS.md): the request's `tools`,
 * `tool_choice` and `parallel_tool_calls` checked field by field; the
 * conversation's assistant `tool_calls` (arguments parsed from their JSON
 * strings, 400 when they are not JSON) and `role: "tool"` answers handed to
 * the template; the grammar that forces calls for tool_choice "required" or
 * a named function (and constrains a call once its opening token comes for
 * "auto"); and the answer's calls as OpenAI's message.tool_calls or stream
 * deltas. The syntax is the template's (specdec_tool_syntax). */
#define _POSIX_C_SOURCE 200809L
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/oai.h"

/* tools: [{"type": "function", "function": {"name": S, "description"?: S,
 * "parameters"?: {...}, "strict"?: B}}], as OpenAI checks it. */
static bool check_tools(json_t *tools, http_err *e) {
    if (!json_is_array(tools)) return http_fail(e, 400, "tools", "'tools' must be an array");
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        json_t *type = json_object_get(t, "type"), *fn = json_object_get(t, "function");
        if (!json_is_object(t) || !json_is_string(type) || strcmp(json_string_value(type), "function"))
            return http_fail(e, 400, "tools", "tools[%zu].type must be \"function\"", i);
        if (!json_is_object(fn) || !json_is_string(json_object_get(fn, "name")) ||
            !json_string_length(json_object_get(fn, "name")))
            return http_fail(e, 400, "tools", "tools[%zu].function.name must be a non-empty string", i);
        json_t *params = json_object_get(fn, "parameters"), *strict = json_object_get(fn, "strict");
        if (params && !json_is_null(params) && !json_is_object(params))
            return http_fail(e, 400, "tools", "tools[%zu].function.parameters must be an object (a JSON Schema)", i);
        if (strict && !json_is_null(strict) && !json_is_boolean(strict))
            return http_fail(e, 400, "tools", "tools[%zu].function.strict must be a boolean", i);
    }
    return true;
}

/* tool_choice: "none" | "auto" | "required" | {"type": "function", "function": {"name": S}}. */
static bool get_choice(json_t *body, json_t *tools, oai_req *r, http_err *e) {
    json_t *c = json_object_get(body, "tool_choice");
    r->tool_choice = SPECDEC_TOOL_CHOICE_AUTO;
    if (!c || json_is_null(c)) return true;
    if (json_is_string(c)) {
        const char *v = json_string_value(c);
        if (!strcmp(v, "none")) r->tool_choice = SPECDEC_TOOL_CHOICE_NONE;
        else if (!strcmp(v, "required")) r->tool_choice = SPECDEC_TOOL_CHOICE_REQUIRED;
        else if (strcmp(v, "auto"))
            return http_fail(e, 400, "tool_choice", "'tool_choice' must be \"none\", \"auto\", \"required\" or a function, not \"%s\"", v);
        return true;
    }
    json_t *name = json_object_get(json_object_get(c, "function"), "name");
    if (!json_is_object(c) || !json_is_string(name))
        return http_fail(e, 400, "tool_choice", "'tool_choice' must be a string or {\"type\": \"function\", \"function\": {\"name\": ...}}");
    size_t i;
    json_t *t;
    json_array_foreach(tools, i, t) {
        if (!strcmp(json_string_value(json_object_get(json_object_get(t, "function"), "name")), json_string_value(name))) {
            r->tool_choice = SPECDEC_TOOL_CHOICE_NAMED;
            r->tool_name = json_string_value(name);
            return true;
        }
    }
    return http_fail(e, 400, "tool_choice", "'tool_choice' names '%s', which is not in 'tools'", json_string_value(name));
}

bool oai_get_tools(json_t *body, oai_req *r, http_err *e) {
    json_t *tools = json_object_get(body, "tools");
    r->tools = NULL;
    r->parallel_tool_calls = true;
    json_t *ptc = json_object_get(body, "parallel_tool_calls");
    if (ptc && !json_is_null(ptc)) {
        if (!json_is_boolean(ptc)) return http_fail(e, 400, "parallel_tool_calls", "'parallel_tool_calls' must be a boolean");
        r->parallel_tool_calls = json_is_true(ptc);
    }
    json_t *choice = json_object_get(body, "tool_choice");
    if (!tools || json_is_null(tools) || (json_is_array(tools) && !json_array_size(tools))) {
        /* OpenAI: tool_choice other than none needs tools */
        if (choice && !json_is_null(choice) && !(json_is_string(choice) && !strcmp(json_string_value(choice), "none")))
            return http_fail(e, 400, "tool_choice", "'tool_choice' is only allowed when 'tools' are given");
        return true;
    }
    if (r->kind != JOB_CHAT) return http_fail(e, 400, "tools", "'tools' is a field of /v1/chat/completions");
    if (!check_tools(tools, e) || !get_choice(body, tools, r, e)) return false;
    r->tools = tools;
    return true;
}

/* One assistant tool call {id, type, function: {name, arguments: "<JSON>"}}
 * with arguments parsed into an object, appended to out. */
static bool call_for_template(json_t *call, size_t i, size_t k, json_t *out, http_err *e) {
    json_t *fn = json_object_get(call, "function");
    json_t *name = json_object_get(fn, "name"), *args = json_object_get(fn, "arguments");
    if (!json_is_object(call) || !json_is_object(fn) || !json_is_string(name))
        return http_fail(e, 400, "messages", "messages[%zu].tool_calls[%zu].function.name must be a string", i, k);
    json_t *parsed;
    if (json_is_string(args)) {
        json_error_t je;
        parsed = json_loadb(json_string_value(args), json_string_length(args), JSON_DECODE_ANY, &je);
        if (!parsed)
            return http_fail(e, 400, "messages", "messages[%zu].tool_calls[%zu].function.arguments is not JSON: %s", i, k,
                             je.text);
    } else if (json_is_object(args)) parsed = json_incref(args); /* llama-server takes an object too */
    else if (!args || json_is_null(args)) parsed = json_object();
    else return http_fail(e, 400, "messages", "messages[%zu].tool_calls[%zu].function.arguments must be a string", i, k);
    json_t *c = json_object(), *f = json_object();
    json_t *id = json_object_get(call, "id");
    if (json_is_string(id)) json_object_set(c, "id", id);
    json_object_set_new(c, "type", json_string("function"));
    json_object_set(f, "name", name);
    json_object_set_new(f, "arguments", parsed);
    json_object_set_new(c, "function", f);
    json_array_append_new(out, c);
    return true;
}

bool oai_message_tools(json_t *msg, size_t i, specdec_chat_message *m, char **owned, http_err *e) {
    *owned = NULL;
    json_t *calls = json_object_get(msg, "tool_calls");
    if (calls && !json_is_null(calls)) {
        if (!json_is_array(calls)) return http_fail(e, 400, "messages", "messages[%zu].tool_calls must be an array", i);
        json_t *out = json_array();
        size_t k;
        json_t *c;
        json_array_foreach(calls, k, c) if (!call_for_template(c, i, k, out, e)) {
            json_decref(out);
            return false;
        }
        *owned = json_dumps(out, JSON_COMPACT);
        json_decref(out);
        if (!*owned) return http_fail(e, 500, NULL, "out of memory");
        m->tool_calls_json = *owned;
    }
    json_t *id = json_object_get(msg, "tool_call_id"), *name = json_object_get(msg, "name");
    if (id && !json_is_null(id) && !json_is_string(id))
        return http_fail(e, 400, "messages", "messages[%zu].tool_call_id must be a string", i);
    if (name && !json_is_null(name) && !json_is_string(name))
        return http_fail(e, 400, "messages", "messages[%zu].name must be a string", i);
    m->tool_call_id = json_string_value(id);
    m->name = json_string_value(name);
    return true;
}

bool oai_tool_grammar(server *s, json_t *body, oai_req *r, job *j, http_err *e) {
    if (!r->tools || r->tool_choice == SPECDEC_TOOL_CHOICE_NONE) return true;
    bool forced = r->tool_choice != SPECDEC_TOOL_CHOICE_AUTO;
    if (j->grammar) {
        /* auto: the response's own grammar stays; forced calls cannot also be JSON of another schema */
        if (forced)
            return http_fail(e, 400, "tool_choice", "'tool_choice' \"%s\" cannot be combined with 'response_format', 'grammar' or 'json_schema'",
                             r->tool_choice == SPECDEC_TOOL_CHOICE_REQUIRED ? "required" : "function");
        return true;
    }
    (void)body;
    char *tools = json_dumps(r->tools, JSON_COMPACT);
    if (!tools) return http_fail(e, 500, NULL, "out of memory");
    char *gbnf = NULL;
    size_t len = 0;
    specdec_error err = {0};
    specdec_status st = specdec_tool_grammar(s->model, &r->chat, tools, strlen(tools), r->tool_choice, r->tool_name,
                                             r->parallel_tool_calls, &gbnf, &len, &err);
    free(tools);
    if (st == SPECDEC_OK && gbnf) st = specdec_grammar_init(s->model, gbnf, len, NULL, &j->grammar, &err);
    specdec_free(gbnf);
    if (st == SPECDEC_ERR_NOMEM) return http_fail(e, 500, NULL, "out of memory");
    if (st != SPECDEC_OK) return http_fail(e, 400, "tools", "'tools': %s", err.message);
    j->gp.grammar = j->grammar;
    return true;
}

/* ---- the answer ---- */

void oai_calls_init(oai_calls *t, server *s, const oai_req *r) {
    memset(t, 0, sizeof *t);
    if (!r->tools || r->tool_choice == SPECDEC_TOOL_CHOICE_NONE) return;
    char *tools = json_dumps(r->tools, JSON_COMPACT);
    specdec_error err = {0};
    if (tools && specdec_tool_parser_init(s->model, &r->chat, tools, strlen(tools), &t->parser, &err) != SPECDEC_OK)
        t->parser = NULL;
    free(tools);
    t->calls = json_array();
    static atomic_ulong counter;
    snprintf(t->id_base, sizeof t->id_base, "call_%lx%lx", (unsigned long)now_unix(),
             (unsigned long)atomic_fetch_add(&counter, 1));
}

void oai_calls_free(oai_calls *t) {
    specdec_tool_parser_free(t->parser);
    json_decref(t->calls);
    for (size_t i = 0; i < t->n_args; i++) sd_strbuf_free(&t->args[i]);
    free(t->args);
    memset(t, 0, sizeof *t);
}

/* The delta {"tool_calls": [{index, ...}]} of one event. New reference. */
static json_t *event_delta(oai_calls *t, const specdec_tool_event *ev) {
    json_t *call = json_object(), *fn = json_object();
    json_object_set_new(call, "index", json_integer(ev->index));
    if (ev->kind == SPECDEC_TOOL_EVENT_START) {
        char id[64];
        snprintf(id, sizeof id, "%s_%d", t->id_base, ev->index);
        json_object_set_new(call, "id", json_string(id));
        json_object_set_new(call, "type", json_string("function"));
        json_object_set_new(fn, "name", json_text(ev->text, ev->len));
        json_object_set_new(fn, "arguments", json_string(""));
    } else json_object_set_new(fn, "arguments", json_text(ev->text, ev->len));
    json_object_set_new(call, "function", fn);
    json_t *arr = json_array();
    json_array_append_new(arr, call);
    return arr;
}

/* Keeps the whole calls for a non-streamed message. */
static void keep(oai_calls *t, const specdec_tool_event *ev) {
    if (ev->kind == SPECDEC_TOOL_EVENT_START) {
        sd_strbuf *a = realloc(t->args, (t->n_args + 1) * sizeof *a);
        if (!a) return;
        t->args = a;
        t->args[t->n_args++] = (sd_strbuf){0};
        char id[64];
        snprintf(id, sizeof id, "%s_%d", t->id_base, ev->index);
        json_t *call = json_object(), *fn = json_object();
        json_object_set_new(call, "id", json_string(id));
        json_object_set_new(call, "type", json_string("function"));
        json_object_set_new(fn, "name", json_text(ev->text, ev->len));
        json_object_set_new(call, "function", fn);
        json_array_append_new(t->calls, call);
    } else if ((size_t)ev->index < t->n_args) sd_strbuf_add(&t->args[ev->index], ev->text, ev->len);
}

void oai_calls_feed(oai_calls *t, const char *text, size_t len, bool flush, oai_calls_sink sink, void *user) {
    const specdec_tool_event *ev = NULL;
    size_t n = 0;
    if (!t->parser) {
        if (len) sink(user, text, len, NULL);
        return;
    }
    if ((flush ? specdec_tool_parser_flush(t->parser, &ev, &n) : specdec_tool_parser_feed(t->parser, text, len, &ev, &n)) !=
        SPECDEC_OK)
        return;
    for (size_t i = 0; i < n; i++) {
        if (ev[i].kind == SPECDEC_TOOL_EVENT_CONTENT) {
            sink(user, ev[i].text, ev[i].len, NULL);
            continue;
        }
        if (ev[i].kind == SPECDEC_TOOL_EVENT_START) t->n_calls++;
        keep(t, &ev[i]);
        sink(user, NULL, 0, event_delta(t, &ev[i]));
    }
}

json_t *oai_calls_message(oai_calls *t) {
    if (!t->n_calls) return NULL;
    size_t i;
    json_t *call;
    json_array_foreach(t->calls, i, call) {
        json_t *fn = json_object_get(call, "function");
        const sd_strbuf *a = i < t->n_args ? &t->args[i] : NULL;
        json_object_set_new(fn, "arguments", a && a->len ? json_text(sd_strbuf_str(a), a->len) : json_string("{}"));
    }
    return json_incref(t->calls);
}
