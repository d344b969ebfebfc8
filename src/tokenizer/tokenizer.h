/* Tokenizer built from GGUF metadata (tokenizer.ggml.* keys, llama.cpp
 * src/llama-vocab.cpp): `tokenizer.ggml.model` = "gpt2" (byte-level BPE, with
 * the pre-tokenizer named by `tokenizer.ggml.pre`: qwen2, qwen35, llama-bpe,
 * gpt-2, default) or "llama" (SentencePiece BPE with byte fallback).
 *
 * Encoding reproduces llama.cpp's llama_tokenize (checked against its gold
 * vectors, tests/data/tokenizer) for valid UTF-8. Invalid UTF-8 is encoded
 * byte by byte and never rejected (llama.cpp would turn it into U+FFFD), so
 * byte-level BPE round-trips any byte string exactly.
 *
 * A tokenizer is immutable after sd_tokenizer_init: every function below may
 * be called from several threads at once. */
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
 * closed afterwards). Reads tokens, token_type, scores, merges, pre,
 * bos/eos/eot/eom/unknown/padding ids, add_bos_token, add_eos_token,
 * add_space_prefix. Errors: SD_ERR_UNSUPPORTED (unknown tokenizer.ggml.model
 * or pre), SD_ERR_FORMAT (missing/inconsistent tokens, merges, types,
 * duplicate token texts, a token over 1 MiB, add_bos_token without a bos
 * id), SD_ERR_NOMEM. */
sd_status sd_tokenizer_init(const gguf_ctx *ctx, sd_tokenizer **out, sd_err *err);
void sd_tokenizer_free(sd_tokenizer *tok); /* NULL is allowed */

sd_tokenizer_kind sd_tokenizer_type(const sd_tokenizer *tok);
const char *sd_tokenizer_pre(const sd_tokenizer *tok);  /* "qwen2", ... or "" */
int32_t sd_tokenizer_n_vocab(const sd_tokenizer *tok);
int32_t sd_tokenizer_bos(const sd_tokenizer *tok);  /* -1 if none */
int32_t sd_tokenizer_eos(const sd_tokenizer *tok);  /* -1 if none */
int32_t sd_tokenizer_eot(const sd_tokenizer *tok);  /* end of turn (<|im_end|>, <|eot_id|>), -1 if none */
/* tokenizer.ggml.add_bos_token; default true for "llama" and llama-bpe. */
bool sd_tokenizer_add_bos(const sd_tokenizer *tok);
bool sd_tokenizer_add_eos(const sd_tokenizer *tok); /* tokenizer.ggml.add_eos_token; default false */
/* True for tokens that end generation: eos, eot, eom, and (as llama.cpp)
 * <|im_end|>, <|endoftext|>, <|eot_id|>, <|end_of_text|>, fim pad/repo/sep ...
 * False for ids out of range. */
bool sd_tokenizer_is_eog(const sd_tokenizer *tok, int32_t id);
/* True for control and unknown tokens (printed only with show_special). */
bool sd_tokenizer_is_control(const sd_tokenizer *tok, int32_t id);
/* Longest token piece in bytes (see sd_token_to_bytes). */
size_t sd_tokenizer_max_piece(const sd_tokenizer *tok);

/* Encodes len bytes of text. add_special adds BOS/EOS as the model asks
 * (sd_tokenizer_add_bos/eos); parse_special matches control-token texts
 * (e.g. "<|im_start|>") as single tokens (user-defined tokens always are, as
 * in llama.cpp). *ids is malloc'd (free with free; non-NULL even when
 * *n_ids is 0). Never reads past len. Errors: SD_ERR_NOMEM. */
sd_status sd_tokenize(const sd_tokenizer *tok, const char *text, size_t len, bool add_special,
                      bool parse_special, int32_t **ids, size_t *n_ids, sd_err *err);

/* A byte range of a text, text[off, off + len). */
typedef struct sd_text_range {
    size_t off, len;
} sd_text_range;

/* As sd_tokenize with parse_special, except that control-token texts are not
 * matched where they overlap plain[0..n_plain) (sorted by off, disjoint):
 * those bytes are encoded as text whatever they spell. Text with no control
 * token in the plain ranges gives the same ids as sd_tokenize: only where
 * special tokens are cut changes, never how the text between them is encoded.
 * For chat prompts: plain = the bytes that came from the messages, so a
 * message cannot forge the template's role markers. Errors: SD_ERR_NOMEM. */
sd_status sd_tokenize_guarded(const sd_tokenizer *tok, const char *text, size_t len, bool add_special,
                              const sd_text_range *plain, size_t n_plain, int32_t **ids, size_t *n_ids,
                              sd_err *err);

/* Raw bytes that token id stands for (byte-level mapping undone, SPM "▁"
 * turned to space, byte tokens <0xNN> to the byte); may be a partial UTF-8
 * character. Written to buf (cap bytes); returns the byte count (may exceed
 * cap: then only cap were written), or -1 for an id out of range. Control
 * and unknown tokens give their text only if show_special, else 0. */
int sd_token_to_bytes(const sd_tokenizer *tok, int32_t id, bool show_special, char *buf, size_t cap);

/* Decodes n_ids ids into one malloc'd, NUL-terminated buffer *text (*len
 * bytes, not counting the NUL). Pieces as sd_token_to_bytes; for SPM with
 * add_space_prefix, a space at the very start (the one encoding prepended)
 * is removed, so sd_detokenize(sd_tokenize(x)) == x for SPM too (unless x
 * contains "▁" itself or characters only the unknown token covers).
 * Errors: SD_ERR_ARG (an id out of range), SD_ERR_NOMEM. */
sd_status sd_detokenize(const sd_tokenizer *tok, const int32_t *ids, size_t n_ids, bool show_special,
                        char **text, size_t *len, sd_err *err);

/* Vocabulary entry text as stored in the GGUF (not decoded), NUL-terminated;
 * NULL for an id out of range. Valid until sd_tokenizer_free. */
const char *sd_token_text(const sd_tokenizer *tok, int32_t id);

/* True if two tokenizers have identical token lists (texts and types) and
 * the same algorithm: the draft/target check of speculative decoding. */
bool sd_tokenizer_same_vocab(const sd_tokenizer *a, const sd_tokenizer *b);

/* Streaming detokenizer: holds back an incomplete UTF-8 sequence until the
 * token that completes it arrives, so printed text is always valid UTF-8
 * (bytes that can never complete are emitted as U+FFFD, one per maximal
 * invalid subpart). Control tokens print nothing. Plain value, no resources:
 * sd_detok_init, then push each generated id, then flush. */
typedef struct sd_detok {
    char pending[8];
    int n_pending;
} sd_detok;
void sd_detok_init(sd_detok *d);
/* Appends the bytes of token id and writes what is complete to out; returns
 * the bytes written (never more than cap). With cap >= sd_detok_cap(tok)
 * nothing is ever dropped (a smaller cap drops whatever does not fit).
 * Ids out of range are ignored. */
size_t sd_detok_push(sd_detok *d, const sd_tokenizer *tok, int32_t id, char *out, size_t cap);
/* Flushes what is held (as U+FFFD for an incomplete sequence); cap >= 3
 * suffices. */
size_t sd_detok_flush(sd_detok *d, char *out, size_t cap);
/* Output room one sd_detok_push can need: 3 * (max piece + 4) bytes. */
size_t sd_detok_cap(const sd_tokenizer *tok);

#endif
