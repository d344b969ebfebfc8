/* The formatters behind sd_chat_render, one per template family. Each one
 * follows its template's statements in order; the comments quote the Jinja. */
#ifndef SD_CHAT_CHAT_IMPL_H
#define SD_CHAT_CHAT_IMPL_H

#include "chat/chat.h"
#include "chat/chat_text.h"

#include <string.h>

sd_status sd_chat_render_chatml(const sd_chat_template *t, const sd_chat_msg *m, size_t n,
                                const sd_chat_opts *o, sd_strbuf *out, sd_err *err);
sd_status sd_chat_render_qwen3(const sd_chat_template *t, const sd_chat_msg *m, size_t n,
                               const sd_chat_opts *o, sd_strbuf *out, sd_err *err);
sd_status sd_chat_render_qwen35(const sd_chat_template *t, const sd_chat_msg *m, size_t n,
                                const sd_chat_opts *o, sd_strbuf *out, sd_err *err);
sd_status sd_chat_render_llama3(const sd_chat_template *t, const sd_chat_msg *m, size_t n,
                                const sd_chat_opts *o, sd_strbuf *out, sd_err *err);
/* The model's template through the interpreter (t->jinja set), appended to out. */
sd_status sd_chat_render_jinja_text(const sd_chat_template *t, const sd_chat_msg *m, size_t n,
                                    const sd_chat_opts *o, sd_strbuf *out, sd_err *err);

static inline void sd_strbuf_slice(sd_strbuf *b, sd_slice s) { sd_strbuf_add(b, s.p, s.n); }
/* Appends text that came from a message, recording its range in o->text_spans. */
void sd_chat_put_text(sd_strbuf *b, const sd_chat_opts *o, sd_slice s);
static inline void sd_chat_put_str(sd_strbuf *b, const sd_chat_opts *o, const char *s) {
    sd_chat_put_text(b, o, sd_slice_of(s));
}
static inline bool sd_role_is(const sd_chat_msg *m, const char *role) {
    return m->role && !strcmp(m->role, role);
}

#endif
