/* A Jinja-subset interpreter for the chat templates models ship in their GGUF
 * (`tokenizer.chat_template`, the Hugging Face Jinja source). It runs what the
 * published templates use, in the environment transformers' apply_chat_template
 * sets up (jinja2 ImmutableSandboxedEnvironment with trim_blocks, lstrip_blocks
 * and the loopcontrols extension; `tojson` = json.dumps(ensure_ascii=False);
 * `raise_exception(msg)` and `strftime_now(fmt)` as globals). Language
 * reference: the Jinja template designer documentation (jinja.palletsprojects.com,
 * "Template Designer Documentation"); behaviour is checked byte for byte against
 * Python's jinja2 by tests/chat/test_jinja_golden.c. docs/TEMPLATES.md lists the
 * subset.
 *
 * Supported: text, {{ }}, {# #}, {% if/elif/else %}, {% for %} (tuple targets,
 * an inline `if` filter, {% else %}, loop.index/index0/revindex/revindex0/first/
 * last/length/previtem/nextitem/depth, break/continue), {% set %} (names, ns.attr,
 * block set), {% macro %} and calls, {% raw %}; whitespace control {%- -%}
 * {%+; literals, lists, dicts, tuples, attribute and item access, slices,
 * arithmetic, ~, comparisons, and/or/not, in / not in, `is` tests, conditional
 * expressions, filters, string / dict methods. Everything else — {% call %},
 * {% filter %}, {% include %}, {% extends %}, {% import %}, {% with %}, {% do %},
 * an unknown filter, test, method or function — is refused by sd_jinja_parse
 * with "LINE:COL: ... 'NAME'".
 *
 * Provenance. Every output byte is known to come either from the template's
 * own text (a literal text run, a string literal in an expression) or from data
 * (message content, tool definitions, any context variable, a number or value
 * converted to text, strftime_now). String values carry this per byte through
 * concatenation, slicing, trim/strip/split, join, macro output and `set`; an
 * operation that computes new text from old (upper, replace, tojson, format,
 * ...) marks its result as data when any input byte was data. The output is the
 * text plus a list of segments {off, len, from_template}: a tokenizer must parse
 * special tokens (<|im_start|>, <|eot_id|>, ...) only inside from_template
 * segments, so message content can never forge them.
 *
 * Bounds: every render is limited in evaluation steps, output bytes, memory
 * and nesting depth (sd_jinja_limits); passing one is an SD_ERR_ARG error
 * saying which. Parsing bounds its nesting depth too. */
#ifndef SD_CHAT_JINJA_H
#define SD_CHAT_JINJA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "core/strbuf.h"

typedef struct sd_jinja sd_jinja; /* a parsed template; immutable, reusable */

/* Parses src[0..len) (UTF-8). *out owns a copy of what it needs; free with
 * sd_jinja_free. SD_ERR_UNSUPPORTED for a construct outside the subset and
 * SD_ERR_FORMAT for a syntax error, both as "jinja LINE:COL: what 'NAME'";
 * SD_ERR_NOMEM. */
sd_status sd_jinja_parse(const char *src, size_t len, sd_jinja **out, sd_err *err);
void sd_jinja_free(sd_jinja *t);

typedef struct sd_jinja_limits {
    uint64_t max_steps;  /* statements + expression nodes evaluated */
    size_t max_output;   /* bytes of rendered text */
    size_t max_memory;   /* bytes of values allocated during the render */
    int max_depth;       /* macro calls + expression nesting */
} sd_jinja_limits;

typedef struct sd_jinja_opts {
    sd_jinja_limits limits; /* zero fields take the defaults below */
    /* The time strftime_now formats, in seconds since the epoch (UTC), or -1
     * for the current local time. Tests pin it. */
    int64_t now;
} sd_jinja_opts;

/* Defaults: 20M steps, 16 MiB output, 256 MiB memory, depth 200, now = -1. */
sd_jinja_opts sd_jinja_default_opts(void);

/* One run of output bytes with a single origin. */
typedef struct sd_jinja_seg {
    size_t off, len;    /* within sd_jinja_out.text */
    bool from_template; /* true: the template's own literal text */
} sd_jinja_seg;

/* A rendered prompt: text (NUL-terminated after text.len bytes) and the
 * segments covering it in order, adjacent segments of the same origin merged. */
typedef struct sd_jinja_out {
    sd_strbuf text;
    sd_jinja_seg *segs;
    size_t n_segs;
} sd_jinja_out;

void sd_jinja_out_free(sd_jinja_out *o);

/* Renders t with the variables of the JSON object context[0..len) (e.g.
 * {"messages": [...], "tools": [...], "add_generation_prompt": true,
 * "bos_token": "..."}); every string in it is data. opts NULL = defaults.
 * Errors: SD_ERR_ARG with the template's message where it calls
 * raise_exception, on a Jinja runtime error (undefined attribute of an
 * undefined value, a type error) and when a limit is passed; SD_ERR_FORMAT for
 * context that is not a JSON object; SD_ERR_NOMEM. On error *out is empty. */
sd_status sd_jinja_render_json(const sd_jinja *t, const char *context, size_t len, const sd_jinja_opts *opts,
                               sd_jinja_out *out, sd_err *err);

#endif
