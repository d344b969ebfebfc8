/* Constrained output fields of a request: OpenAI's response_format
 * ({"type":"text"}, {"type":"json_object"}, {"type":"json_schema",
 * "json_schema":{"schema":S,"strict":B}}) and llama-server's `grammar` (GBNF
 * text), `json_schema` (a schema object) and {"type":"json_object",
 * "schema":S}. At most one of them. Each becomes GBNF text (a schema through
 * specdec_json_schema_to_gbnf), compiled for the server's model into the job
 * (freed with it). When the chat prompt opened a reasoning section (Qwen3.5's
 * generation prompt ends in <think>), the grammar lets the section come
 * first: any tokens but </think>, then </think>, then the answer's grammar,
 * so the reasoning is free and the switch happens at the exact token (also
 * inside a verified block). A grammar or schema we cannot compile is a 400
 * naming the field and the problem (line:col, or the schema keyword).
 * docs/GRAMMAR.md. */
#include <stdlib.h>
#include <string.h>

#include "server/oai.h"

/* The rule that puts a reasoning section before the answer's root. */
#define REASONING_ROOT "sd-reasoning-root"
/* after </think>: nothing, a space, or a newline or two and some indentation
 * before the answer; never unbounded whitespace (src/chat/tool_grammar.c) */
static const char reasoning_rule[] =
    "\n" REASONING_ROOT " ::= (!</think>)* </think> ( \" \" | \"\\n\"{1,2} [ \\t]{0,20} )? root\n";

/* True when the vocabulary has a </think> token (the reasoning wrap needs it). */
static bool has_think_end(const specdec_model *m) {
    specdec_token *t = NULL;
    size_t n = 0;
    specdec_error err = {0};
    bool ok = specdec_tokenize(m, "</think>", 8, false, true, &t, &n, &err) == SPECDEC_OK && n == 1 &&
              specdec_token_text(m, t[0]) && !strcmp(specdec_token_text(m, t[0]), "</think>");
    specdec_free(t);
    return ok;
}

/* Compiles gbnf (rule "root"), after a reasoning section when reasoning, into j. */
static bool compile(server *s, job *j, const char *field, const char *gbnf, size_t len, bool reasoning, http_err *e) {
    sd_strbuf text = {0};
    sd_strbuf_add(&text, gbnf, len);
    const char *root = NULL;
    if (reasoning && has_think_end(s->model)) {
        sd_strbuf_puts(&text, reasoning_rule);
        root = REASONING_ROOT;
    }
    if (text.oom) {
        sd_strbuf_free(&text);
        return http_fail(e, 500, NULL, "out of memory");
    }
    specdec_error err = {0};
    specdec_status st = specdec_grammar_init(s->model, sd_strbuf_str(&text), text.len, root, &j->grammar, &err);
    sd_strbuf_free(&text);
    if (st == SPECDEC_ERR_NOMEM) return http_fail(e, 500, NULL, "out of memory");
    if (st != SPECDEC_OK) return http_fail(e, 400, field, "'%s': %s", field, err.message);
    j->gp.grammar = j->grammar;
    return true;
}

/* A schema (NULL: any JSON object) converted and compiled. */
static bool from_schema(server *s, job *j, const char *field, json_t *schema, bool strict, bool reasoning,
                        http_err *e) {
    char *st = NULL;
    if (schema) {
        if (!json_is_object(schema) && !json_is_boolean(schema))
            return http_fail(e, 400, field, "'%s' must be a JSON Schema (an object)", field);
        st = json_dumps(schema, JSON_COMPACT | JSON_ENCODE_ANY);
        if (!st) return http_fail(e, 500, NULL, "out of memory");
    }
    char *gbnf = NULL;
    size_t len = 0;
    specdec_error err = {0};
    specdec_status rc = specdec_json_schema_to_gbnf(st, st ? strlen(st) : 0, strict, !schema, &gbnf, &len, &err);
    free(st);
    bool ok = rc == SPECDEC_OK ? compile(s, j, field, gbnf, len, reasoning, e)
              : rc == SPECDEC_ERR_NOMEM ? http_fail(e, 500, NULL, "out of memory")
                                        : http_fail(e, 400, field, "'%s': %s", field, err.message);
    specdec_free(gbnf);
    return ok;
}

static bool response_format(server *s, json_t *rf, job *j, bool reasoning, http_err *e) {
    if (!json_is_object(rf)) return http_fail(e, 400, "response_format", "'response_format' must be an object");
    json_t *type = json_object_get(rf, "type");
    if (!json_is_string(type))
        return http_fail(e, 400, "response_format", "'response_format.type' must be a string");
    const char *t = json_string_value(type);
    if (!strcmp(t, "text")) return true;
    if (!strcmp(t, "json_object")) { /* any object, or llama-server's {"schema": S} */
        json_t *schema = json_object_get(rf, "schema");
        return from_schema(s, j, "response_format", json_is_null(schema) ? NULL : schema, false, reasoning, e);
    }
    if (!strcmp(t, "json_schema")) {
        json_t *js = json_object_get(rf, "json_schema");
        if (!json_is_object(js))
            return http_fail(e, 400, "response_format", "'response_format.json_schema' must be an object");
        json_t *strict = json_object_get(js, "strict"), *schema = json_object_get(js, "schema");
        if (strict && !json_is_null(strict) && !json_is_boolean(strict))
            return http_fail(e, 400, "response_format", "'response_format.json_schema.strict' must be a boolean");
        /* OpenAI: a missing schema is any JSON object */
        return from_schema(s, j, "response_format", json_is_null(schema) ? NULL : schema,
                           strict && json_is_true(strict), reasoning, e);
    }
    return http_fail(e, 400, "response_format",
                     "'response_format.type' must be \"text\", \"json_object\" or \"json_schema\", not \"%s\"", t);
}

bool oai_get_grammar(server *s, json_t *body, job *j, bool reasoning, http_err *e) {
    json_t *rf = json_object_get(body, "response_format"), *gr = json_object_get(body, "grammar"),
           *js = json_object_get(body, "json_schema");
    int given = (rf && !json_is_null(rf)) + (gr && !json_is_null(gr)) + (js && !json_is_null(js));
    if (given > 1)
        return http_fail(e, 400, rf && !json_is_null(rf) ? "response_format" : "grammar",
                         "give at most one of 'response_format', 'grammar' and 'json_schema'");
    if (rf && !json_is_null(rf)) return response_format(s, rf, j, reasoning, e);
    if (gr && !json_is_null(gr)) {
        if (!json_is_string(gr)) return http_fail(e, 400, "grammar", "'grammar' must be a string (GBNF)");
        if (json_string_length(gr) == 0) return true; /* llama-server: an empty grammar is none */
        return compile(s, j, "grammar", json_string_value(gr), json_string_length(gr), reasoning, e);
    }
    if (js && !json_is_null(js)) return from_schema(s, j, "json_schema", js, false, reasoning, e); /* checks js's kind */
    return true;
}
