/* Chat templates. A model's `tokenizer.chat_template` (the Hugging Face Jinja
 * source stored in the GGUF, gguf-py constants.py) runs as written through the
 * Jinja-subset interpreter (chat/jinja.h) when it parses; sd_chat_template.jinja
 * then points at it. The hand-written formatters stay as the fallback for a
 * file without a template or with one the interpreter refuses, and for
 * --chat-template NAME: a template is recognised by substrings of its text and
 * rendered by a formatter that reproduces it byte for byte for plain-text
 * conversations (tests/chat/test_chat_golden.c checks each against Python's
 * jinja2 on the real template texts in tests/data/chat/). The family is
 * recognised in both cases: the reasoning splitter (think.h) follows it.
 *
 * This layer is text only: it knows nothing of tokens or models. */
#ifndef SD_CHAT_CHAT_H
#define SD_CHAT_CHAT_H

#include <stdbool.h>
#include <stddef.h>

#include "chat/jinja.h"
#include "core/status.h"
#include "core/strbuf.h"

/* The families with a built-in formatter. */
typedef enum sd_chat_family {
    SD_CHAT_CHATML,  /* <|im_start|>role\n...<|im_end|>\n, optionally a default system turn (Qwen2) */
    SD_CHAT_QWEN3,   /* ChatML + <think> history rules, enable_thinking=false adds an empty think block */
    SD_CHAT_QWEN35,  /* Qwen3.5: trimmed turns, generation prompt opens <think> (forced-open reasoning) */
    SD_CHAT_QWEN36,  /* Qwen3.6: Qwen3.5 + preserve_thinking keeps every turn's reasoning */
    SD_CHAT_LLAMA3,  /* Llama 3: <|start_header_id|>role<|end_header_id|>\n\n...<|eot_id|> */
    SD_CHAT_LLAMA31, /* Llama 3.1-3.3: Llama 3 + a system turn with the knowledge-cutoff date lines */
    SD_CHAT_N_FAMILIES
} sd_chat_family;

/* A recognised template: the family plus what the formatter needs from the text. */
typedef struct sd_chat_template {
    sd_chat_family family;
    bool has_default_system;  /* ChatML: a system turn is added when the conversation has none */
    char default_system[512]; /* its text (Qwen2's "You are a helpful assistant") */
    /* The model's own template, parsed (borrowed; it must outlive this struct),
     * or NULL: sd_chat_render then runs it instead of the family's formatter. */
    const sd_jinja *jinja;
    bool family_unknown; /* jinja set and no family recognised: no reasoning split */
} sd_chat_template;

/* One message. Strings are borrowed, NUL-terminated UTF-8. */
typedef struct sd_chat_msg {
    const char *role;              /* "system", "user", "assistant", "tool" */
    const char *content;           /* NULL is rendered as "" */
    const char *reasoning_content; /* assistant reasoning; NULL = absent (then split from content at </think>) */
    /* For the interpreter only (the formatters ignore them), NULL = absent:
     * tool_calls_json a JSON array of OpenAI tool calls with `arguments` as
     * objects; tool_call_id and name of a tool result. */
    const char *tool_calls_json;
    const char *tool_call_id;
    const char *name;
} sd_chat_msg;

/* Where the rendered prompt holds text that came from the messages (content,
 * reasoning, roles), as byte ranges of the output in order; adjacent ranges
 * are merged. The caller tokenizes those bytes as plain text, so a message
 * spelling "<|im_start|>" cannot open a turn (docs/SECURITY.md). */
typedef struct sd_chat_span {
    size_t off, len;
} sd_chat_span;
typedef struct sd_chat_spans {
    sd_chat_span *v;
    size_t n, cap;
    bool oom;
} sd_chat_spans;
void sd_chat_spans_free(sd_chat_spans *s);

/* Rendering switches, named after the template variables they set. */
typedef struct sd_chat_opts {
    bool add_generation_prompt; /* end with the assistant turn's opening */
    int enable_thinking;        /* -1 = not set (the template's default), 0 = false, 1 = true */
    bool preserve_thinking;     /* Qwen3.6: keep reasoning of every past assistant turn */
    const char *bos_token;      /* text of the BOS token for Llama 3 ("<|begin_of_text|>"); NULL = "" */
    const char *eos_token;      /* the interpreter's eos_token (Mistral closes turns with it); NULL = "" */
    const char *tools_json;     /* the interpreter's `tools`: a JSON array of OpenAI tool definitions; NULL = none */
    int64_t now;                /* strftime_now's time, seconds since the epoch UTC; -1 = the clock */
    sd_chat_spans *text_spans;  /* when set, receives the ranges of message text in the output */
} sd_chat_opts;

/* Options with add_generation_prompt = true, enable_thinking unset. */
sd_chat_opts sd_chat_default_opts(void);

/* Short name ("chatml", "qwen3", "qwen35", "qwen36", "llama3", "llama31"); static storage. */
const char *sd_chat_family_name(sd_chat_family family);
/* Comma-separated list of every name, for help and error texts; static storage. */
const char *sd_chat_family_names(void);

/* Recognises a template by its text. tmpl may be NULL (a model without a
 * template). SD_ERR_UNSUPPORTED with a message naming --chat-template when no
 * family fits. */
sd_status sd_chat_detect(const char *tmpl, sd_chat_template *out, sd_err *err);
/* A template chosen by name (--chat-template NAME); SD_ERR_ARG for an unknown name. */
sd_status sd_chat_template_named(const char *name, sd_chat_template *out, sd_err *err);

/* Appends the prompt text for msgs[0..n) to out. Errors (SD_ERR_ARG) where the
 * real template raises an exception (Qwen3.5: a system message not first, no
 * user message, an unknown role) or the interpreter stops (a runtime error, a
 * limit), and on out-of-memory (SD_ERR_NOMEM). */
sd_status sd_chat_render(const sd_chat_template *t, const sd_chat_msg *msgs, size_t n,
                         const sd_chat_opts *opts, sd_strbuf *out, sd_err *err);

/* As sd_chat_render, into *out with provenance (jinja.h): which bytes are the
 * template's own text and which came from the messages or tools, so that a
 * tokenizer parses special tokens only in the template's text. The built-in
 * formatters mark every message field as data and their own text as
 * template. out is reset first; free it with sd_jinja_out_free. */
sd_status sd_chat_render_segments(const sd_chat_template *t, const sd_chat_msg *msgs, size_t n,
                                  const sd_chat_opts *opts, sd_jinja_out *out, sd_err *err);

/* The JSON context the interpreter gets for (msgs, opts): {"messages": [...],
 * "tools"?, "add_generation_prompt", "enable_thinking"?, "preserve_thinking"?,
 * "bos_token", "eos_token"} appended to out. SD_ERR_NOMEM. */
sd_status sd_chat_context_json(const sd_chat_msg *msgs, size_t n, const sd_chat_opts *opts, sd_strbuf *out,
                               sd_err *err);

/* "NAME" for a built-in formatter, "NAME+jinja" when the interpreter runs the
 * model's template of recognised family NAME, "jinja" when no family fits.
 * Static storage. */
const char *sd_chat_engine_name(const sd_chat_template *t);

/* How the model's answer begins, for splitting reasoning from content. */
typedef enum sd_think_start {
    SD_THINK_NONE,  /* no reasoning markup: everything is content */
    SD_THINK_MAYBE, /* the model may open with <think> itself (Qwen3) */
    SD_THINK_OPEN,  /* the prompt ended inside <think> (Qwen3.5/3.6 with thinking on) */
} sd_think_start;

/* The start state for an answer rendered with (t, opts). */
sd_think_start sd_chat_think_start(const sd_chat_template *t, const sd_chat_opts *opts);

#endif
