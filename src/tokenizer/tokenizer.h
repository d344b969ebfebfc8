/* Tokenizer built from GGUF metadata (tokenizer.ggml.* keys, llama.cpp
 * src/llama-vocab.cpp): `tokenizer.ggml.model` = "gpt2" (byte-level BPE, with
 * the pre-tokenizer named by `tokenizer.ggml.pre`: qwen2, qwen35, llama-bpe,
 * gpt-2, default) or "llama" (SentencePiece BPE with byte fallback). */
#ifndef SD_TOKENIZER_TOKENIZER_H
#define SD_TOKENIZER_TOKENIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "format/gguf.h"

typedef struct sd_tokenizer sd_tokenizer;

typedef enum sd_tokenizer_kind { SD_TOK_BPE = 1, SD_TOK_SPM = 2 } sd_tokenizer_kind;

/* Builds the tokenizer from ctx's metadata (the strings are copied: ctx may be
 * closed afterwards). Errors: SD_ERR_UNSUPPORTED (unknown tokenizer.ggml.model
 * or pre), SD_ERR_FORMAT (missing/inconsistent tokens, merges, types),
 * SD_ERR_NOMEM. */
sd_status sd_tokenizer_init(const gguf_ctx *ctx, sd_tokenizer **out, sd_err *err);
void sd_tokenizer_free(sd_tokenizer *tok);

sd_tokenizer_kind sd_tokenizer_type(const sd_tokenizer *tok);
const char *sd_tokenizer_pre(const sd_tokenizer *tok);  /* "qwen2", ... or "" */
int32_t sd_tokenizer_n_vocab(const sd_tokenizer *tok);
int32_t sd_tokenizer_bos(const sd_tokenizer *tok);  /* -1 if none */
int32_t sd_tokenizer_eos(const sd_tokenizer *tok);  /* -1 if none */
bool sd_tokenizer_add_bos(const sd_tokenizer *tok); /* tokenizer.ggml.add_bos_token */
bool sd_tokenizer_add_eos(const sd_tokenizer *tok);
/* True for control/end-of-generation tokens (eos, eot, im_end ...) that stop generation. */
bool sd_tokenizer_is_eog(const sd_tokenizer *tok, int32_t id);

/* Encodes len bytes of text. add_special adds BOS/EOS as the model asks;
 * parse_special matches special-token texts (e.g. "<|im_start|>") as single
 * tokens. *ids is malloc'd (free with free), *n_ids its length.
 * Invalid UTF-8 is encoded byte by byte, never rejected, never read past len.
 * Errors: SD_ERR_NOMEM. */
sd_status sd_tokenize(const sd_tokenizer *tok, const char *text, size_t len, bool add_special,
                      bool parse_special, int32_t **ids, size_t *n_ids, sd_err *err);

/* Raw bytes that token id stands for (byte-level mapping undone, SPM "▁"
 * turned to space, byte tokens <0xNN> to the byte). Written to buf (cap bytes);
 * returns the byte count (may exceed cap: then only cap were written), or -1
 * for an id out of range. Control tokens give their text only if show_special. */
int sd_token_to_bytes(const sd_tokenizer *tok, int32_t id, bool show_special, char *buf, size_t cap);

/* Vocabulary entry text as stored in the GGUF (not decoded). */
const char *sd_token_text(const sd_tokenizer *tok, int32_t id);

/* True if two tokenizers have identical token lists (draft/target check). */
bool sd_tokenizer_same_vocab(const sd_tokenizer *a, const sd_tokenizer *b);

/* Streaming detokenizer: holds back an incomplete UTF-8 sequence until the
 * token that completes it arrives, so printed text is always valid UTF-8
 * (bytes that can never complete are emitted as U+FFFD). */
typedef struct sd_detok {
    char pending[8];
    int n_pending;
} sd_detok;
void sd_detok_init(sd_detok *d);
/* Appends the bytes of token id, writes what is complete to out (cap >= 64
 * recommended); returns bytes written (never more than cap). */
size_t sd_detok_push(sd_detok *d, const sd_tokenizer *tok, int32_t id, char *out, size_t cap);
/* Flushes what is held (as U+FFFD for an incomplete sequence). */
size_t sd_detok_flush(sd_detok *d, char *out, size_t cap);

#endif
