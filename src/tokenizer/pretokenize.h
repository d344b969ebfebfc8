/* Pre-tokenizers of byte-level BPE vocabularies: the regular expressions that
 * cut text into words before BPE merges run inside each word, selected by the
 * GGUF key `tokenizer.ggml.pre`. Regex lists: llama.cpp src/llama-vocab.cpp
 * (llm_tokenizer_bpe), matched here with PCRE2 in UTF mode.
 *
 * Semantics follow llama.cpp src/unicode.cpp unicode_regex_split: the
 * expressions apply in order, each one splitting every word the previous one
 * produced (its lookaheads see only that word); text between two matches is
 * kept as a word of its own, so the words always tile the input exactly.
 * \s is spelled out as the Unicode White_Space set (as in the Rust/Oniguruma
 * regexes the vocabularies were trained with: includes U+0085, which PCRE2's
 * \s does not). Invalid UTF-8 never matches (PCRE2_MATCH_INVALID_UTF): such
 * bytes end up in the between-match words, byte for byte. */
#ifndef SD_TOKENIZER_PRETOKENIZE_H
#define SD_TOKENIZER_PRETOKENIZE_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

typedef struct sd_span {
    size_t off, len; /* bytes of the input */
} sd_span;

/* Growable array of spans; zero-initialise, free v with free(). */
typedef struct sd_spans {
    sd_span *v;
    size_t n, cap;
} sd_spans;

typedef struct sd_pretok sd_pretok;

/* Compiles the expressions of pre-tokenizer `name` (len bytes; "" means
 * "default", as llama.cpp does when the key is missing). Sets *ignore_merges
 * and *add_bos_default to the per-name flags of llama-vocab.cpp (llama3: a
 * word that is itself a token is not merged; BOS added by default).
 * Errors: SD_ERR_UNSUPPORTED (unknown name), SD_ERR_NOMEM. */
sd_status sd_pretok_init(const char *name, size_t len, sd_pretok **out, bool *ignore_merges,
                         bool *add_bos_default, sd_err *err);
void sd_pretok_free(sd_pretok *p);

/* Replaces words->n with the words of text (len bytes; any bytes). Offsets
 * are relative to text. Errors: SD_ERR_NOMEM. A regex engine failure (match
 * limit) keeps the unsplit rest as one word: encoding stays lossless. */
sd_status sd_pretok_split(const sd_pretok *p, const char *text, size_t len, sd_spans *words,
                          sd_err *err);

#endif
