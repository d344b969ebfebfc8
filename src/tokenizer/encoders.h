/* The two text encoders behind sd_tokenize; each encodes one raw-text
 * fragment (special tokens already cut out) and appends ids to out.
 * Errors: SD_ERR_NOMEM. */
#ifndef SD_TOKENIZER_ENCODERS_H
#define SD_TOKENIZER_ENCODERS_H

#include "tokenizer/merge_heap.h"
#include "tokenizer/pretokenize.h"
#include "tokenizer/vocab.h"

/* Byte-level BPE (bpe.c): pre-tokenizer words, then merges by rank. */
sd_status sd_bpe_encode(const sd_tokenizer *tok, const char *text, size_t len, sd_bpe_scratch *s,
                        sd_spans *words, sd_ids *out, sd_err *err);

/* SentencePiece BPE (spm.c): spaces escaped as U+2581 "▁" (one prepended if
 * space_prefix), then merges by score over the whole fragment. */
sd_status sd_spm_encode(const sd_tokenizer *tok, const char *text, size_t len, bool space_prefix,
                        sd_bpe_scratch *s, sd_ids *out, sd_err *err);

#endif
