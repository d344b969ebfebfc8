/* The model's own chat template through the interpreter (jinja.h): the
 * conversation as the JSON context transformers' apply_chat_template would
 * pass (messages, tools, add_generation_prompt, the template switches,
 * bos_token / eos_token), rendered with provenance. */
#include <stdlib.h>
#include <string.h>

#include "chat/chat_impl.h"

/* A JSON string literal of s (NULL -> ""). */
static void json_string(sd_strbuf *b, const char *s) {
    sd_strbuf_puts(b, "\"");
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '"': sd_strbuf_puts(b, "\\\""); break;
        case '\\': sd_strbuf_puts(b, "\\\\"); break;
        case '\n': sd_strbuf_puts(b, "\\n"); break;
        case '\r': sd_strbuf_puts(b, "\\r"); break;
        case '\t': sd_strbuf_puts(b, "\\t"); break;
        default:
            if (*p < 0x20) sd_strbuf_printf(b, "\\u%04x", *p);
            else sd_strbuf_add(b, (const char *)p, 1);
        }
    }
    sd_strbuf_puts(b, "\"");
}

static void field(sd_strbuf *b, const char *key, const char *value) {
    sd_strbuf_puts(b, ", ");
    json_string(b, key);
    sd_strbuf_puts(b, ": ");
    json_string(b, value);
}

sd_status sd_chat_context_json(const sd_chat_msg *msgs, size_t n, const sd_chat_opts *opts, sd_strbuf *out,
                               sd_err *err) {
    sd_chat_opts def = sd_chat_default_opts();
    if (!opts) opts = &def;
    sd_strbuf_puts(out, "{\"messages\": [");
    for (size_t i = 0; i < n; i++) {
        const sd_chat_msg *m = &msgs[i];
        sd_strbuf_puts(out, i ? ", {\"role\": " : "{\"role\": ");
        json_string(out, m->role);
        /* NULL content is "" as for the built-in formatters (sd_chat_msg) */
        field(out, "content", m->content);
        if (m->reasoning_content) field(out, "reasoning_content", m->reasoning_content);
        if (m->tool_calls_json) {
            sd_strbuf_puts(out, ", \"tool_calls\": ");
            sd_strbuf_puts(out, m->tool_calls_json);
        }
        if (m->tool_call_id) field(out, "tool_call_id", m->tool_call_id);
        if (m->name) field(out, "name", m->name);
        sd_strbuf_puts(out, "}");
    }
    sd_strbuf_puts(out, "]");
    if (opts->tools_json) {
        sd_strbuf_puts(out, ", \"tools\": ");
        sd_strbuf_puts(out, opts->tools_json);
    }
    sd_strbuf_printf(out, ", \"add_generation_prompt\": %s", opts->add_generation_prompt ? "true" : "false");
    if (opts->enable_thinking >= 0)
        sd_strbuf_printf(out, ", \"enable_thinking\": %s", opts->enable_thinking ? "true" : "false");
    if (opts->preserve_thinking) sd_strbuf_puts(out, ", \"preserve_thinking\": true");
    field(out, "bos_token", opts->bos_token);
    field(out, "eos_token", opts->eos_token);
    sd_strbuf_puts(out, "}");
    return out->oom ? sd_err_set(err, SD_ERR_NOMEM, "chat: out of memory") : SD_OK;
}

static sd_status render_jinja(const sd_chat_template *t, const sd_chat_msg *msgs, size_t n, const sd_chat_opts *opts,
                              sd_jinja_out *out, sd_err *err) {
    sd_strbuf ctx = {0};
    sd_status st = sd_chat_context_json(msgs, n, opts, &ctx, err);
    if (st == SD_OK) {
        sd_jinja_opts jo = sd_jinja_default_opts();
        jo.now = opts->now;
        st = sd_jinja_render_json(t->jinja, ctx.s, ctx.len, &jo, out, err);
    }
    sd_strbuf_free(&ctx);
    return st;
}

sd_status sd_chat_render_segments(const sd_chat_template *t, const sd_chat_msg *msgs, size_t n,
                                  const sd_chat_opts *opts, sd_jinja_out *out, sd_err *err) {
    memset(out, 0, sizeof *out);
    sd_chat_opts def = sd_chat_default_opts();
    if (!opts) opts = &def;
    if (n && !msgs) return sd_err_set(err, SD_ERR_ARG, "chat: messages missing");
    for (size_t i = 0; i < n; i++)
        if (!msgs[i].role) return sd_err_set(err, SD_ERR_ARG, "chat: message %zu has no role", i);
    if (t->jinja) return render_jinja(t, msgs, n, opts, out, err);
    /* A built-in formatter does not track provenance: its whole text is one
     * segment marked as the template's, which is how its prompts were
     * tokenized before the interpreter existed. */
    sd_status st = sd_chat_render(t, msgs, n, opts, &out->text, err);
    if (st != SD_OK) {
        sd_jinja_out_free(out);
        return st;
    }
    if (!out->text.s) sd_strbuf_add(&out->text, "", 0);
    if (out->text.len) {
        out->segs = malloc(sizeof *out->segs);
        if (!out->segs) {
            sd_jinja_out_free(out);
            return sd_err_set(err, SD_ERR_NOMEM, "chat: out of memory");
        }
        out->segs[0] = (sd_jinja_seg){.off = 0, .len = out->text.len, .from_template = true};
        out->n_segs = 1;
    }
    return SD_OK;
}

/* sd_chat_render's branch for a template the interpreter runs (sd_chat_render
 * reports an out-of-memory text or text_spans). */
sd_status sd_chat_render_jinja_text(const sd_chat_template *t, const sd_chat_msg *msgs, size_t n,
                                    const sd_chat_opts *opts, sd_strbuf *out, sd_err *err) {
    sd_jinja_out o;
    sd_status st = render_jinja(t, msgs, n, opts, &o, err);
    if (st == SD_OK) {
        /* Bytes from data (messages, tools, any variable) are message text for
         * the caller's tokenizer: special-token text there stays text. */
        for (size_t i = 0; i < o.n_segs; i++) {
            const sd_jinja_seg *g = &o.segs[i];
            if (g->from_template) sd_strbuf_add(out, o.text.s + g->off, g->len);
            else sd_chat_put_text(out, opts, (sd_slice){o.text.s + g->off, g->len});
        }
        if (o.n_segs == 0) sd_strbuf_add(out, "", 0);
    }
    sd_jinja_out_free(&o);
    return st;
}
