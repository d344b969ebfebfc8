/* Llama 3 templates. Sources (text in tests/data/chat/):
 *   llama31  meta-llama/Llama-3.1-8B-Instruct (also 3.2, 3.3) tokenizer_config.json chat_template:
 *            the system turn always comes first, with the knowledge-cutoff lines;
 *   llama3   Meta-Llama-3-8B-Instruct: one header per message, BOS before the first.
 * Every message's content is trimmed ('message['content'] | trim'); tool
 * definitions and calls are not rendered. */
#include "chat/chat_impl.h"

static void header(sd_strbuf *o, const sd_chat_opts *op, const char *role) {
    sd_strbuf_puts(o, "<|start_header_id|>");
    sd_chat_put_str(o, op, role); /* may come from a message: text */
    sd_strbuf_puts(o, "<|end_header_id|>\n\n");
}

/* Python json.dumps(s, ensure_ascii=False), as Hugging Face's tojson filter:
 * quotes, backslashes and control characters escaped, everything else raw. */
static void json_string(sd_strbuf *o, const sd_chat_opts *op, sd_slice s) {
    sd_strbuf_puts(o, "\"");
    sd_strbuf esc = {0}; /* the escaped text, appended as message text */
    for (size_t i = 0; i < s.n; i++) {
        unsigned char c = (unsigned char)s.p[i];
        switch (c) {
        case '"': sd_strbuf_puts(&esc, "\\\""); break;
        case '\\': sd_strbuf_puts(&esc, "\\\\"); break;
        case '\n': sd_strbuf_puts(&esc, "\\n"); break;
        case '\r': sd_strbuf_puts(&esc, "\\r"); break;
        case '\t': sd_strbuf_puts(&esc, "\\t"); break;
        case '\b': sd_strbuf_puts(&esc, "\\b"); break;
        case '\f': sd_strbuf_puts(&esc, "\\f"); break;
        default:
            if (c < 0x20) sd_strbuf_printf(&esc, "\\u%04x", c);
            else sd_strbuf_add(&esc, (const char *)&c, 1);
        }
    }
    if (esc.oom) o->oom = true;
    sd_chat_put_text(o, op, (sd_slice){esc.s ? esc.s : "", esc.len});
    sd_strbuf_free(&esc);
    sd_strbuf_puts(o, "\"");
}

/* Llama 3.1: a tool result goes under "ipython", and since a string "is
 * iterable" in Jinja it is written with '| tojson'. Llama 3: every role alike. */
static void message(sd_strbuf *o, const sd_chat_opts *op, const sd_chat_msg *m, bool llama31) {
    sd_slice c = sd_slice_of(m->content);
    if (llama31 && (sd_role_is(m, "tool") || sd_role_is(m, "ipython"))) {
        header(o, op, "ipython");
        json_string(o, op, c);
    } else {
        header(o, op, m->role);
        sd_chat_put_text(o, op, sd_slice_trim(c));
    }
    sd_strbuf_puts(o, "<|eot_id|>");
}

sd_status sd_chat_render_llama3(const sd_chat_template *t, const sd_chat_msg *m, size_t n,
                                const sd_chat_opts *o, sd_strbuf *out, sd_err *err) {
    (void)err;
    const char *bos = o->bos_token ? o->bos_token : "";
    size_t first = 0;
    if (t->family == SD_CHAT_LLAMA31) {
        sd_strbuf_puts(out, bos);
        sd_slice sys = sd_slice_of("");
        if (n > 0 && sd_role_is(&m[0], "system")) {
            sys = sd_slice_trim(sd_slice_of(m[0].content));
            first = 1;
        }
        /* date_string: the template's own default when the caller sets none. */
        header(out, o, "system");
        sd_strbuf_puts(out, "Cutting Knowledge Date: December 2023\nToday Date: 26 Jul 2024\n\n");
        sd_chat_put_text(out, o, sys);
        sd_strbuf_puts(out, "<|eot_id|>");
    } else if (n > 0) {
        sd_strbuf_puts(out, bos); /* {% if loop.index0 == 0 %}{% set content = bos_token + content %} */
    }
    for (size_t i = first; i < n; i++) message(out, o, &m[i], t->family == SD_CHAT_LLAMA31);
    if (o->add_generation_prompt) header(out, o, "assistant");
    return SD_OK;
}
