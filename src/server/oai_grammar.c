/* Constrained output fields of a request: OpenAI's response_format
 * ({"type":"text"}, {"type":"json_object"}, {"type":"json_schema",
 * "json_schema":{"schema":S,"strict":B}}) and llama-server's `grammar` (GBNF
 * text), `json_schema` (a schema object) and {"type":"json_object",
 * "schema":S}. At most one of them; the grammar is compiled for the server's
 * model into the job (freed with it). A grammar or schema we cannot compile
 * is a 400 naming the field and the problem (line:col, or the schema
 * keyword). docs/GRAMMAR.md. */
#include <stdlib.h>
#include <string.h>

#include "server/oai.h"

/* Compiles text (GBNF) or a schema (JSON text) into j->grammar; 400 on error. */
static bool compile(server *s, job *j, const char *field, const char *gbnf, const char *schema, bool strict,
                    bool any_object, http_err *e) {
    specdec_error err = {0};
    specdec_status st =
        gbnf ? specdec_grammar_init(s->model, gbnf, strlen(gbnf), NULL, &j->grammar, &err)
             : specdec_grammar_from_json_schema(s->model, schema, schema ? strlen(schema) : 0, strict, any_object,
                                                &j->grammar, &err);
    if (st == SPECDEC_ERR_NOMEM) return http_fail(e, 500, NULL, "out of memory");
    if (st != SPECDEC_OK) return http_fail(e, 400, field, "'%s': %s", field, err.message);
    j->gp.grammar = j->grammar;
    return true;
}

/* A schema object as JSON text (malloc'd), or NULL with e filled. */
static char *schema_text(json_t *schema, const char *field, http_err *e) {
    if (!json_is_object(schema) && !json_is_boolean(schema)) {
        http_fail(e, 400, field, "'%s' must be a JSON Schema (an object)", field);
        return NULL;
    }
    char *t = json_dumps(schema, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!t) http_fail(e, 500, NULL, "out of memory");
    return t;
}

static bool from_schema(server *s, job *j, const char *field, json_t *schema, bool strict, http_err *e) {
    char *t = schema_text(schema, field, e);
    if (!t) return false;
    bool ok = compile(s, j, field, NULL, t, strict, false, e);
    free(t);
    return ok;
}

static bool response_format(server *s, json_t *rf, job *j, http_err *e) {
    if (!json_is_object(rf)) return http_fail(e, 400, "response_format", "'response_format' must be an object");
    json_t *type = json_object_get(rf, "type");
    if (!json_is_string(type))
        return http_fail(e, 400, "response_format", "'response_format.type' must be a string");
    const char *t = json_string_value(type);
    if (!strcmp(t, "text")) return true;
    if (!strcmp(t, "json_object")) { /* any object, or llama-server's {"schema": S} */
        json_t *schema = json_object_get(rf, "schema");
        if (schema && !json_is_null(schema)) return from_schema(s, j, "response_format", schema, false, e);
        return compile(s, j, "response_format", NULL, NULL, false, true, e);
    }
    if (!strcmp(t, "json_schema")) {
        json_t *js = json_object_get(rf, "json_schema");
        if (!json_is_object(js))
            return http_fail(e, 400, "response_format", "'response_format.json_schema' must be an object");
        json_t *strict = json_object_get(js, "strict"), *schema = json_object_get(js, "schema");
        if (strict && !json_is_null(strict) && !json_is_boolean(strict))
            return http_fail(e, 400, "response_format", "'response_format.json_schema.strict' must be a boolean");
        if (!schema || json_is_null(schema)) /* OpenAI: a missing schema is any JSON object */
            return compile(s, j, "response_format", NULL, NULL, false, true, e);
        return from_schema(s, j, "response_format", schema, strict && json_is_true(strict), e);
    }
    return http_fail(e, 400, "response_format",
                     "'response_format.type' must be \"text\", \"json_object\" or \"json_schema\", not \"%s\"", t);
}

bool oai_get_grammar(server *s, json_t *body, job *j, http_err *e) {
    json_t *rf = json_object_get(body, "response_format"), *gr = json_object_get(body, "grammar"),
           *js = json_object_get(body, "json_schema");
    int given = (rf && !json_is_null(rf)) + (gr && !json_is_null(gr)) + (js && !json_is_null(js));
    if (given > 1)
        return http_fail(e, 400, rf && !json_is_null(rf) ? "response_format" : "grammar",
                         "give at most one of 'response_format', 'grammar' and 'json_schema'");
    if (rf && !json_is_null(rf)) return response_format(s, rf, j, e);
    if (gr && !json_is_null(gr)) {
        if (!json_is_string(gr)) return http_fail(e, 400, "grammar", "'grammar' must be a string (GBNF)");
        if (json_string_length(gr) == 0) return true; /* llama-server: an empty grammar is none */
        return compile(s, j, "grammar", json_string_value(gr), NULL, false, false, e);
    }
    if (js && !json_is_null(js)) return from_schema(s, j, "json_schema", js, false, e);
    return true;
}
