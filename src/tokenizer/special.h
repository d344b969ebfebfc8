/* Special tokens: control / user-defined / unknown tokens whose text is found
 * in the input before BPE or SPM runs (llama.cpp src/llama-vocab.cpp
 * tokenizer_st_partition). */
#ifndef SD_TOKENIZER_SPECIAL_H
#define SD_TOKENIZER_SPECIAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer/vocab.h"

/* A piece of the input: a special token (id >= 0) or raw text (id == -1) at
 * text[off, off + len). */
typedef struct sd_fragment {
    int32_t id;
    size_t off, len;
} sd_fragment;

typedef struct sd_fragments {
    sd_fragment *v;
    size_t n, cap;
} sd_fragments;

/* Cuts text into fragments: every occurrence of a special token's text, the
 * longest texts first, left to right, becomes that token. Without
 * parse_special only user-defined tokens are matched (as llama.cpp and HF
 * tokenizers do); control and unknown token texts stay plain text.
 * out->n is replaced. Errors: SD_ERR_NOMEM. */
sd_status sd_special_partition(const sd_tokenizer *tok, const char *text, size_t len, bool parse_special,
                               sd_fragments *out, sd_err *err);

/* As sd_special_partition with parse_special, except that a control or
 * unknown token's text is not matched where it overlaps one of plain[0..n_plain)
 * (sorted by off, not overlapping): those bytes are text whatever they spell.
 * This is how a chat prompt keeps control tokens only where the template wrote
 * them (plain = the bytes that came from messages). User-defined tokens are
 * matched everywhere, as without parse_special. */
sd_status sd_special_partition_guarded(const sd_tokenizer *tok, const char *text, size_t len,
                                       const sd_text_range *plain, size_t n_plain, sd_fragments *out, sd_err *err);

#endif
