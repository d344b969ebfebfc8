/* JSON Schema -> GBNF: turns a JSON Schema (draft 2020-12 keywords, the
 * subset docs/JSON_SCHEMA.md lists) into a grammar in llama.cpp's GBNF
 * dialect whose start rule is "root", for constrained decoding.
 *
 * The grammar accepts only documents that are valid against the schema
 * (soundness), and every valid document written in the canonical form
 * (docs/JSON_SCHEMA.md: object keys in the order of "properties", then any
 * additional keys; the whitespace the grammar allows) is accepted
 * (completeness). A keyword the converter cannot express exactly is refused
 * with an error naming it, never silently dropped.
 *
 * Hostile input (deep nesting, huge enums, $ref cycles that never reach a
 * terminal, expansions that blow up) is refused within the bounds below. */
#ifndef SD_GRAMMAR_JSON_SCHEMA_H
#define SD_GRAMMAR_JSON_SCHEMA_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"
#include "core/strbuf.h"

/* Bounds on the input and output (hostile schemas get SD_ERR_FORMAT). */
enum {
    SD_JSON_SCHEMA_MAX_DEPTH = 64,              /* nesting of schemas within schemas */
    SD_JSON_SCHEMA_MAX_BYTES = 4 << 20,         /* schema text, bytes */
    SD_JSON_SCHEMA_MAX_GBNF = 16 << 20,         /* grammar text produced, bytes */
    SD_JSON_SCHEMA_MAX_RULES = 100000,          /* grammar rules produced */
};

typedef struct sd_json_schema_opts {
    /* additionalProperties defaults to false when strict (OpenAI's strict
     * structured outputs), to JSON Schema's true otherwise. An explicit
     * additionalProperties in the schema always wins. */
    bool strict;
    /* The schema is ignored (may be NULL): the grammar accepts any JSON
     * object, what response_format {"type":"json_object"} asks for.
     * llama-server's {"type":"json_object","schema":S} form is S converted
     * with this flag off. */
    bool any_object;
} sd_json_schema_opts;

/* Converts the schema (schema_json, len bytes of UTF-8 JSON; need not be
 * NUL-terminated) into GBNF appended to *gbnf (the caller owns and frees it
 * with sd_strbuf_free). opts may be NULL (all false).
 * Returns SD_OK, or SD_ERR_FORMAT (malformed JSON, an invalid or refused
 * keyword, a bound exceeded), SD_ERR_UNSUPPORTED (a keyword we do not
 * support, named in the message), SD_ERR_NOMEM; err (may be NULL) then holds
 * one line naming the keyword and its JSON pointer, and *gbnf is left empty. */
sd_status sd_json_schema_to_gbnf(const char *schema_json, size_t len, const sd_json_schema_opts *opts,
                                 sd_strbuf *gbnf, sd_err *err);

#endif
