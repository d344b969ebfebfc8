/* Splits a streamed answer into reasoning and content at <think>...</think>,
 * as llama-server's reasoning_content (DeepSeek style): text inside the block
 * is reasoning, the rest content; the tags and the blank lines around them are
 * dropped. Pieces arrive in any split; text that may be the start of a tag is
 * held back until the next piece decides it, so a tag is never shown in half. */
#ifndef SD_CHAT_THINK_H
#define SD_CHAT_THINK_H

#include <stddef.h>

#include "chat/chat.h"
#include "core/strbuf.h"

typedef struct sd_think {
    int state;      /* where the next byte goes (think.c) */
    sd_strbuf hold; /* bytes not yet assigned to either side */
} sd_think;

/* Starts a splitter; start comes from sd_chat_think_start. */
void sd_think_init(sd_think *t, sd_think_start start);
/* Feeds n bytes of answer text; appends what is decided to reasoning / content. */
void sd_think_feed(sd_think *t, const char *s, size_t n, sd_strbuf *reasoning, sd_strbuf *content);
/* The answer ended: held-back text goes where it stands. */
void sd_think_flush(sd_think *t, sd_strbuf *reasoning, sd_strbuf *content);
void sd_think_free(sd_think *t);

#endif
