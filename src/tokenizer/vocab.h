/* Inside of sd_tokenizer, shared by the files of src/tokenizer/ (not a public
 * interface). Field meanings follow llama.cpp src/llama-vocab.cpp
 * (llama_vocab::impl), where the GGUF keys tokenizer.ggml.* are read. */
#ifndef SD_TOKENIZER_VOCAB_H
#define SD_TOKENIZER_VOCAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "tokenizer/pretokenize.h"
#include "tokenizer/strmap.h"
#include "tokenizer/tokenizer.h"

/* Longest token text accepted (real vocabularies stay under 1 KiB); keeps
 * piece lengths far inside int, the return type of sd_token_to_bytes. */
#define SD_TOKEN_MAX_BYTES (1 << 20)

/* Token attributes, from `tokenizer.ggml.token_type` (llama.h
 * llama_token_type: 1 normal, 2 unknown, 3 control, 4 user defined,
 * 5 unused, 6 byte; anything else is undefined = no bit). */
enum {
    SD_ATTR_UNKNOWN = 1 << 0,
    SD_ATTR_UNUSED = 1 << 1,
    SD_ATTR_NORMAL = 1 << 2,
    SD_ATTR_CONTROL = 1 << 3,
    SD_ATTR_USER_DEFINED = 1 << 4,
    SD_ATTR_BYTE = 1 << 5,
};
/* Tokens whose text is matched in the input before BPE/SPM runs. */
#define SD_ATTR_SPECIAL (SD_ATTR_CONTROL | SD_ATTR_USER_DEFINED | SD_ATTR_UNKNOWN)

typedef struct sd_token_data {
    uint32_t text_off;  /* GGUF spelling, NUL-terminated, in tok->arena (kept under 4 GiB) */
    uint32_t piece_off; /* decoded bytes (what the token prints as), in tok->arena */
    uint32_t text_len, piece_len;
    float score; /* `tokenizer.ggml.scores`: SPM merge priority */
    uint8_t attr;
    bool eog;
} sd_token_data;

struct sd_tokenizer {
    sd_tokenizer_kind kind;
    char pre[64];
    int32_t n_vocab;
    sd_token_data *tokens;
    char *arena; /* every text and piece */
    size_t arena_len, arena_cap;

    /* GGUF spelling -> id. BPE reads it only while loading (special tokens
     * by text) and frees it after: its lookups go through bytes_to_id. */
    sd_strmap text_to_id;
    /* BPE only: lookups run on raw bytes, so the byte-level spellings are
     * decoded once at load instead of encoding every input. */
    sd_strmap bytes_to_id; /* raw bytes of a token -> id */
    sd_strmap merges;      /* u32 left length || left bytes || right bytes -> rank */
    size_t max_merge_len;  /* longest left+right of any merge, in bytes */
    sd_pretok *pretok;
    bool ignore_merges; /* llama3: a word that is a token is not split */

    int32_t byte_to_id[256]; /* fallback for a byte no token covers: -1 if none */
    int32_t bos, eos, eot, eom, unk, pad;
    bool add_bos, add_eos, add_space_prefix;

    int32_t *special; /* ids with SD_ATTR_SPECIAL, longest text first */
    int32_t n_special;
    uint32_t max_piece; /* longest piece in bytes */
};

static inline const char *sd_tok_text(const sd_tokenizer *tok, int32_t id) {
    return tok->arena + tok->tokens[id].text_off;
}
static inline const char *sd_tok_piece(const sd_tokenizer *tok, int32_t id) {
    return tok->arena + tok->tokens[id].piece_off;
}

/* Appends len bytes plus a NUL to tok->arena; *off receives their offset.
 * False on allocation failure or when the arena would pass 4 GiB. */
bool sd_vocab_arena_add(sd_tokenizer *tok, const void *s, size_t len, uint32_t *off);

/* Growable id array used while encoding. */
typedef struct sd_ids {
    int32_t *v;
    size_t n, cap;
} sd_ids;
bool sd_ids_push(sd_ids *ids, int32_t id);

/* Loader steps, in the order sd_tokenizer_init runs them (vocab.c, merges.c,
 * special.c). Each returns SD_OK or sets err. */
sd_status sd_vocab_load_merges(sd_tokenizer *tok, const gguf_ctx *ctx, sd_err *err);
sd_status sd_vocab_load_special(sd_tokenizer *tok, const gguf_ctx *ctx, sd_err *err);

#endif
