/* Tool calls in a model's answer: which syntax a chat template teaches the
 * model (tool_syntax.c), an incremental parser that turns the answer's text
 * into OpenAI-shaped calls {name, arguments JSON} (tool_parse.c), and the
 * GBNF grammar that keeps a call well-formed with arguments valid against
 * each tool's JSON Schema (tool_grammar.c).
 *
 * The syntaxes, from the families' published chat templates
 * (docs/TOOLS.md has the examples):
 * - SD_TOOL_XML (Qwen3.5/3.6, Qwen3-Coder): <tool_call>\n<function=NAME>\n
 *   <parameter=KEY>\nVALUE\n</parameter>\n ... </function>\n</tool_call>,
 *   each VALUE raw text typed by the tool's schema;
 * - SD_TOOL_HERMES (Qwen3, Qwen2.5, and the default): <tool_call>\n
 *   {"name": NAME, "arguments": {...}}\n</tool_call>;
 * - SD_TOOL_LLAMA3 (Llama 3.1-3.3): the whole answer is a JSON object
 *   {"name": NAME, "parameters": {...}}.
 *
 * Text only: nothing here knows tokens or models (the caller says whether
 * the call tags are single tokens). */
#ifndef SD_CHAT_TOOL_CALL_H
#define SD_CHAT_TOOL_CALL_H

#include <stdbool.h>
#include <stddef.h>

#include "chat/chat.h"
#include "core/status.h"
#include "core/strbuf.h"

typedef enum sd_tool_syntax {
    SD_TOOL_HERMES, /* JSON inside <tool_call>...</tool_call> */
    SD_TOOL_XML,    /* <function=NAME><parameter=KEY>VALUE</parameter></function> inside <tool_call> */
    SD_TOOL_LLAMA3, /* a bare JSON object {"name", "parameters"} as the answer */
} sd_tool_syntax;

/* The syntax a template teaches: by the template's text when it has one
 * ("<function=" and "<parameter=": XML; "<tool_call>": Hermes; "ipython" or
 * "<|python_tag|>": Llama 3), else by the family; Hermes when nothing tells. */
sd_tool_syntax sd_tool_syntax_detect(const char *template_text, const sd_chat_template *t);
/* "hermes", "xml", "llama3"; static storage. */
const char *sd_tool_syntax_name(sd_tool_syntax s);

/* ---- parsing ------------------------------------------------------------ */

typedef enum sd_tool_ev_kind {
    SD_TOOL_EV_CONTENT, /* text outside any call */
    SD_TOOL_EV_START,   /* a call begins: text = the function's name */
    SD_TOOL_EV_ARGS,    /* a piece of the call's arguments (a JSON text once all pieces are joined) */
} sd_tool_ev_kind;

typedef struct sd_tool_ev {
    sd_tool_ev_kind kind;
    int index; /* the call's number in the answer, from 0 (START, ARGS) */
    size_t off, len; /* the text: bytes [off, off + len) of the parser's event text */
} sd_tool_ev;

typedef struct sd_tool_parser {
    sd_tool_syntax syntax;
    void *tools;      /* json_t * array of tool definitions (owned), or NULL */
    sd_strbuf in;     /* text fed and not yet decided */
    int state;        /* tool_parse.c */
    int n_calls;      /* calls started */
    int n_params;     /* XML: parameters written in the current call */
    bool started;     /* the current call's START went out */
    bool any_text;    /* Llama 3: non-blank content went out (no call can follow) */
    char *fn;         /* XML: the current call's function name */
    sd_tool_ev *ev;   /* events of the last feed / flush */
    size_t n_ev, cap_ev;
    sd_strbuf ev_text; /* their text */
    bool oom;
} sd_tool_parser;

/* A parser for answers in syntax s. tools_json (len bytes; NULL = none) is
 * the request's tools array, used to type XML parameter values: a value
 * whose property schema has type "string" (or no schema) stays a JSON
 * string; otherwise it is parsed as JSON, and kept a string when that fails
 * or gives a kind the schema does not allow. SD_ERR_ARG when tools_json is
 * not a JSON array; SD_ERR_NOMEM. */
sd_status sd_tool_parser_init(sd_tool_parser *p, sd_tool_syntax s, const char *tools_json, size_t len, sd_err *err);
/* Feeds n bytes of the answer's content (after any reasoning section) and
 * replaces p->ev with the events they decided. Text that may be the start of
 * a call tag is held back until a later feed decides it. */
void sd_tool_parser_feed(sd_tool_parser *p, const char *s, size_t n);
/* The answer ended: the events of what was held back. A call cut off inside
 * its arguments is closed with what arrived (XML); one cut off before it
 * could be read (an XML call before its <function=NAME> tag closed, Hermes
 * JSON that does not parse yet, a Llama 3 call after the first, the start of
 * an opener after a call) is dropped, so content never carries call markup.
 * Text after an opener that does not begin a JSON object (Hermes), and a
 * first Llama 3 object that is not a call, are given back as content. */
void sd_tool_parser_flush(sd_tool_parser *p);
void sd_tool_parser_free(sd_tool_parser *p);

/* ---- grammar ------------------------------------------------------------ */

typedef enum sd_tool_choice {
    SD_TOOL_CHOICE_AUTO,     /* free text, or calls */
    SD_TOOL_CHOICE_NONE,     /* no calls: no grammar */
    SD_TOOL_CHOICE_REQUIRED, /* at least one call, of any tool */
    SD_TOOL_CHOICE_NAMED,    /* calls of one named tool */
} sd_tool_choice;

typedef struct sd_tool_gbnf_opts {
    sd_tool_syntax syntax;
    sd_tool_choice choice;
    const char *name;      /* NAMED: the function's name */
    bool parallel;         /* more than one call may follow the first */
    bool tags_are_tokens;  /* <tool_call> and </tool_call> are single vocabulary tokens */
    bool think_tokens;     /* <think> and </think> are single vocabulary tokens */
    sd_think_start think;  /* where the answer starts relative to a reasoning section */
} sd_tool_gbnf_opts;

/* GBNF (start rule "root") for an answer that makes calls as o says, with
 * each call's arguments valid against its tool's parameters schema (the
 * converter of grammar/json_schema.h; the tool's "strict" flag chooses its
 * additionalProperties default). REQUIRED / NAMED: after the reasoning
 * section (when think_tokens) nothing but calls. AUTO: any text, and once
 * the call opener token comes, a call; AUTO gives no grammar (out left
 * empty) when the opener is not one token (it could not be told from text)
 * except for Llama 3, whose grammar constrains answers that start with "{".
 * NONE: out left empty. Appended to out. Errors: SD_ERR_ARG (tools not an
 * array of function tools with names, NAMED without a known name),
 * SD_ERR_FORMAT / SD_ERR_UNSUPPORTED (a parameters schema the converter
 * refuses, with the tool's name), SD_ERR_NOMEM. */
sd_status sd_tool_gbnf(const char *tools_json, size_t len, const sd_tool_gbnf_opts *o, sd_strbuf *out, sd_err *err);

#endif
