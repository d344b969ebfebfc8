#include <stdlib.h>

#include "chat/chat_impl.h"

void sd_chat_spans_free(sd_chat_spans *s) {
    free(s->v);
    *s = (sd_chat_spans){0};
}

void sd_chat_put_text(sd_strbuf *b, const sd_chat_opts *o, sd_slice s) {
    size_t off = b->len;
    sd_strbuf_add(b, s.p, s.n);
    sd_chat_spans *sp = o->text_spans;
    if (!sp || s.n == 0) return;
    if (sp->n && sp->v[sp->n - 1].off + sp->v[sp->n - 1].len == off) { sp->v[sp->n - 1].len += s.n; return; }
    if (sp->n == sp->cap) {
        size_t cap = sp->cap ? 2 * sp->cap : 16;
        sd_chat_span *v = realloc(sp->v, cap * sizeof *v);
        if (!v) { sp->oom = true; return; }
        sp->v = v;
        sp->cap = cap;
    }
    sp->v[sp->n++] = (sd_chat_span){off, s.n};
}

sd_status sd_chat_render(const sd_chat_template *t, const sd_chat_msg *msgs, size_t n,
                         const sd_chat_opts *opts, sd_strbuf *out, sd_err *err) {
    sd_chat_opts def = sd_chat_default_opts();
    if (!opts) opts = &def;
    if (n && !msgs) return sd_err_set(err, SD_ERR_ARG, "chat: messages missing");
    for (size_t i = 0; i < n; i++)
        if (!msgs[i].role) return sd_err_set(err, SD_ERR_ARG, "chat: message %zu has no role", i);
    sd_status st;
    if (t->jinja) st = sd_chat_render_jinja_text(t, msgs, n, opts, out, err);
    else switch (t->family) {
    case SD_CHAT_CHATML: st = sd_chat_render_chatml(t, msgs, n, opts, out, err); break;
    case SD_CHAT_QWEN3: st = sd_chat_render_qwen3(t, msgs, n, opts, out, err); break;
    case SD_CHAT_QWEN35:
    case SD_CHAT_QWEN36: st = sd_chat_render_qwen35(t, msgs, n, opts, out, err); break;
    case SD_CHAT_LLAMA3:
    case SD_CHAT_LLAMA31: st = sd_chat_render_llama3(t, msgs, n, opts, out, err); break;
    default: return sd_err_set(err, SD_ERR_ARG, "chat: unknown template family %d", (int)t->family);
    }
    if (st == SD_OK && (out->oom || (opts->text_spans && opts->text_spans->oom)))
        return sd_err_set(err, SD_ERR_NOMEM, "chat: out of memory");
    return st;
}
