/* ChatML and the Qwen templates. Sources (text in tests/data/chat/):
 *   chatml  the plain ChatML loop, with Qwen2's default system turn when the template has one;
 *   qwen3   Qwen/Qwen3-0.6B tokenizer_config.json chat_template;
 *   qwen35  Qwen/Qwen3.5-4B chat_template.jinja; qwen36 = the same with preserve_thinking.
 * Tool calls are not rendered (the server refuses `tools`); tool results are. */
#include "chat/chat_impl.h"

/* role and content may come from a message: recorded as text (chat.h). */
static void turn(sd_strbuf *o, const sd_chat_opts *op, const char *role, sd_slice content) {
    sd_strbuf_puts(o, "<|im_start|>");
    sd_chat_put_str(o, op, role);
    sd_strbuf_puts(o, "\n");
    sd_chat_put_text(o, op, content);
    sd_strbuf_puts(o, "<|im_end|>\n");
}

sd_status sd_chat_render_chatml(const sd_chat_template *t, const sd_chat_msg *m, size_t n,
                                const sd_chat_opts *o, sd_strbuf *out, sd_err *err) {
    (void)err;
    /* {% if loop.first and messages[0]['role'] != 'system' %} default system {% endif %} */
    if (t->has_default_system && n > 0 && !sd_role_is(&m[0], "system"))
        turn(out, o, "system", sd_slice_of(t->default_system));
    for (size_t i = 0; i < n; i++) turn(out, o, m[i].role, sd_slice_of(m[i].content));
    if (o->add_generation_prompt) sd_strbuf_puts(out, "<|im_start|>assistant\n");
    return SD_OK;
}

/* Index of the last user message that is a real query, not a wrapped tool
 * result ("ns.last_query_index"); -1 when there is none. trim: Qwen3.5 trims. */
static long last_query_index(const sd_chat_msg *m, size_t n, bool trim) {
    for (size_t k = n; k-- > 0;) {
        if (!sd_role_is(&m[k], "user")) continue;
        sd_slice c = sd_slice_of(m[k].content);
        if (trim) c = sd_slice_trim(c);
        if (!(sd_slice_starts(c, "<tool_response>") && sd_slice_ends(c, "</tool_response>")))
            return (long)k;
    }
    return -1;
}

/* An assistant message's reasoning and answer: reasoning_content when given,
 * else split at </think>:
 *   content = c.split('</think>')[-1].lstrip('\n')
 *   reasoning = c.split('</think>')[0].rstrip('\n').split('<think>')[-1].lstrip('\n') */
static void split_reasoning(const sd_chat_msg *msg, sd_slice c, sd_slice *reasoning, sd_slice *content) {
    *content = c;
    *reasoning = sd_slice_of("");
    if (msg->reasoning_content) {
        *reasoning = sd_slice_of(msg->reasoning_content);
    } else if (sd_slice_find(c, "</think>") >= 0) {
        *content = sd_slice_lstrip_char(sd_slice_after_last(c, "</think>"), '\n');
        sd_slice r = sd_slice_rstrip_char(sd_slice_before_first(c, "</think>"), '\n');
        *reasoning = sd_slice_lstrip_char(sd_slice_after_last(r, "<think>"), '\n');
    }
}

/* A tool result, folded into a user turn with its neighbours:
 * '<|im_start|>user' on the first of a run, '<|im_end|>\n' after the last.
 * first_needs_prev: Qwen3.5 opens the turn only when a previous message exists. */
static void tool_turn(sd_strbuf *o, const sd_chat_opts *op, const sd_chat_msg *m, size_t n, size_t i,
                      sd_slice content, bool first_needs_prev) {
    bool prev_tool = i > 0 && sd_role_is(&m[i - 1], "tool");
    bool opens = first_needs_prev ? (i > 0 && !prev_tool) : !prev_tool;
    if (opens) sd_strbuf_puts(o, "<|im_start|>user");
    sd_strbuf_puts(o, "\n<tool_response>\n");
    sd_chat_put_text(o, op, content);
    sd_strbuf_puts(o, "\n</tool_response>");
    if (i + 1 == n || !sd_role_is(&m[i + 1], "tool")) sd_strbuf_puts(o, "<|im_end|>\n");
}

sd_status sd_chat_render_qwen3(const sd_chat_template *t, const sd_chat_msg *m, size_t n,
                               const sd_chat_opts *o, sd_strbuf *out, sd_err *err) {
    (void)t;
    (void)err;
    if (n > 0 && sd_role_is(&m[0], "system")) turn(out, o, "system", sd_slice_of(m[0].content));
    long lqi = last_query_index(m, n, false);
    if (lqi < 0) lqi = (long)n - 1; /* namespace(last_query_index=messages|length - 1) */
    for (size_t i = 0; i < n; i++) {
        sd_slice c = sd_slice_of(m[i].content);
        if (sd_role_is(&m[i], "user") || (sd_role_is(&m[i], "system") && i > 0)) {
            turn(out, o, m[i].role, c);
        } else if (sd_role_is(&m[i], "assistant")) {
            sd_slice rc, content;
            split_reasoning(&m[i], c, &rc, &content);
            sd_strbuf_puts(out, "<|im_start|>assistant\n");
            /* {% if loop.index0 > ns.last_query_index %}{% if loop.last or reasoning_content %} */
            if ((long)i > lqi && (i + 1 == n || rc.n > 0)) {
                sd_strbuf_puts(out, "<think>\n");
                sd_chat_put_text(out, o, sd_slice_rstrip_char(sd_slice_lstrip_char(rc, '\n'), '\n'));
                sd_strbuf_puts(out, "\n</think>\n\n");
                sd_chat_put_text(out, o, sd_slice_lstrip_char(content, '\n'));
            } else {
                sd_chat_put_text(out, o, content);
            }
            sd_strbuf_puts(out, "<|im_end|>\n");
        } else if (sd_role_is(&m[i], "tool")) {
            tool_turn(out, o, m, n, i, c, false);
        } /* other roles: the template renders nothing */
    }
    if (o->add_generation_prompt) {
        sd_strbuf_puts(out, "<|im_start|>assistant\n");
        if (o->enable_thinking == 0) sd_strbuf_puts(out, "<think>\n\n</think>\n\n");
    }
    return SD_OK;
}

sd_status sd_chat_render_qwen35(const sd_chat_template *t, const sd_chat_msg *m, size_t n,
                                const sd_chat_opts *o, sd_strbuf *out, sd_err *err) {
    if (n == 0) return sd_err_set(err, SD_ERR_ARG, "chat: No messages provided.");
    if (sd_role_is(&m[0], "system")) turn(out, o, "system", sd_slice_trim(sd_slice_of(m[0].content)));
    long lqi = last_query_index(m, n, true);
    if (lqi < 0) return sd_err_set(err, SD_ERR_ARG, "chat: No user query found in messages.");
    bool preserve = t->family == SD_CHAT_QWEN36 && o->preserve_thinking;
    for (size_t i = 0; i < n; i++) {
        sd_slice c = sd_slice_trim(sd_slice_of(m[i].content));
        if (sd_role_is(&m[i], "system")) {
            if (i > 0) return sd_err_set(err, SD_ERR_ARG, "chat: System message must be at the beginning.");
        } else if (sd_role_is(&m[i], "user")) {
            turn(out, o, "user", c);
        } else if (sd_role_is(&m[i], "assistant")) {
            sd_slice rc, content;
            split_reasoning(&m[i], c, &rc, &content);
            rc = sd_slice_trim(rc);
            sd_strbuf_puts(out, "<|im_start|>assistant\n");
            if (preserve || (long)i > lqi) {
                sd_strbuf_puts(out, "<think>\n");
                sd_chat_put_text(out, o, rc);
                sd_strbuf_puts(out, "\n</think>\n\n");
            }
            sd_chat_put_text(out, o, content);
            sd_strbuf_puts(out, "<|im_end|>\n");
        } else if (sd_role_is(&m[i], "tool")) {
            tool_turn(out, o, m, n, i, c, true);
        } else {
            return sd_err_set(err, SD_ERR_ARG, "chat: Unexpected message role.");
        }
    }
    if (o->add_generation_prompt) {
        sd_strbuf_puts(out, "<|im_start|>assistant\n");
        sd_strbuf_puts(out, o->enable_thinking == 0 ? "<think>\n\n</think>\n\n" : "<think>\n");
    }
    return SD_OK;
}
