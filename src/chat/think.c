#include "chat/think.h"

#include <string.h>

enum {
    ST_CONTENT,      /* everything is content */
    ST_MAYBE,        /* at the start: "<think>" would open reasoning */
    ST_REASON_LEAD,  /* just inside <think>: skip blank lines */
    ST_REASON,       /* inside the block, watching for </think> */
    ST_CONTENT_LEAD, /* just after </think>: skip blank lines */
};

static const char k_open[] = "<think>", k_close[] = "</think>";

void sd_think_init(sd_think *t, sd_think_start start) {
    *t = (sd_think){0};
    t->state = start == SD_THINK_OPEN ? ST_REASON_LEAD : start == SD_THINK_MAYBE ? ST_MAYBE : ST_CONTENT;
}

void sd_think_free(sd_think *t) { sd_strbuf_free(&t->hold); }

static int is_ws(char c) { return c == ' ' || c == '\n' || c == '\r' || c == '\t'; }

/* Length of the longest suffix of s[0..n) that is a proper prefix of tag. */
static size_t partial_tag(const char *s, size_t n, const char *tag) {
    size_t m = strlen(tag);
    for (size_t k = m - 1; k > 0; k--)
        if (k <= n && !memcmp(s + n - k, tag, k)) return k;
    return 0;
}

/* Takes bytes [0, n) off the front of the hold buffer. */
static void drop_front(sd_strbuf *h, size_t n) {
    memmove(h->s, h->s + n, h->len - n + 1);
    h->len -= n;
}

/* Runs the state machine over the hold buffer until it needs more input. */
static void step(sd_think *t, sd_strbuf *reasoning, sd_strbuf *content) {
    sd_strbuf *h = &t->hold;
    for (;;) {
        if (h->len == 0) return;
        switch (t->state) {
        case ST_CONTENT:
            sd_strbuf_add(content, h->s, h->len);
            sd_strbuf_clear(h);
            return;
        case ST_MAYBE: {
            size_t m = strlen(k_open), k = h->len < m ? h->len : m;
            if (memcmp(h->s, k_open, k)) { t->state = ST_CONTENT; continue; }
            if (h->len < m) return; /* still a prefix of "<think>" */
            drop_front(h, m);
            t->state = ST_REASON_LEAD;
            continue;
        }
        case ST_REASON_LEAD:
        case ST_CONTENT_LEAD: {
            size_t k = 0;
            while (k < h->len && is_ws(h->s[k])) k++;
            drop_front(h, k);
            if (h->len == 0) return;
            t->state = t->state == ST_REASON_LEAD ? ST_REASON : ST_CONTENT;
            continue;
        }
        case ST_REASON: {
            char *end = strstr(h->s, k_close); /* reasoning text has no NUL bytes worth keeping */
            if (end) {
                size_t at = (size_t)(end - h->s), keep = at;
                while (keep > 0 && is_ws(h->s[keep - 1])) keep--;
                sd_strbuf_add(reasoning, h->s, keep);
                drop_front(h, at + strlen(k_close));
                t->state = ST_CONTENT_LEAD;
                continue;
            }
            /* Hold back a possible start of "</think>" and the blank space before it. */
            size_t held = partial_tag(h->s, h->len, k_close);
            size_t cut = h->len - held;
            while (cut > 0 && is_ws(h->s[cut - 1])) cut--;
            sd_strbuf_add(reasoning, h->s, cut);
            drop_front(h, cut);
            return;
        }
        }
    }
}

void sd_think_feed(sd_think *t, const char *s, size_t n, sd_strbuf *reasoning, sd_strbuf *content) {
    sd_strbuf_add(&t->hold, s, n);
    step(t, reasoning, content);
}

void sd_think_flush(sd_think *t, sd_strbuf *reasoning, sd_strbuf *content) {
    sd_strbuf *h = &t->hold;
    if (t->state == ST_MAYBE) sd_strbuf_add(content, h->s ? h->s : "", h->len);
    else if (t->state == ST_REASON) {
        size_t keep = h->len;
        while (keep > 0 && is_ws(h->s[keep - 1])) keep--;
        sd_strbuf_add(reasoning, h->s ? h->s : "", keep);
    }
    sd_strbuf_clear(h);
}
