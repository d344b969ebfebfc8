/* Loading a vocabulary from GGUF metadata (tokenizer.ggml.*), following
 * llama.cpp src/llama-vocab.cpp llama_vocab::impl::load. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "tokenizer/byte_level.h"
#include "tokenizer/utf8.h"
#include "tokenizer/vocab.h"

#define KEY_MODEL "tokenizer.ggml.model"
#define KEY_PRE "tokenizer.ggml.pre"
#define KEY_TOKENS "tokenizer.ggml.tokens"
#define KEY_SCORES "tokenizer.ggml.scores"
#define KEY_TYPES "tokenizer.ggml.token_type"

bool sd_vocab_arena_add(sd_tokenizer *tok, const void *s, size_t len, uint32_t *off) {
    if (len >= UINT32_MAX - tok->arena_len) return false; /* offsets are 32 bits */
    if (len + 1 > tok->arena_cap - tok->arena_len) {
        size_t cap = tok->arena_cap ? tok->arena_cap : 1 << 16;
        while (len + 1 > cap - tok->arena_len) {
            if (cap > SIZE_MAX / 2) return false;
            cap *= 2;
        }
        char *a = realloc(tok->arena, cap);
        if (!a) return false;
        tok->arena = a;
        tok->arena_cap = cap;
    }
    *off = (uint32_t)tok->arena_len;
    if (len) memcpy(tok->arena + tok->arena_len, s, len);
    tok->arena[tok->arena_len + len] = '\0';
    tok->arena_len += len + 1;
    return true;
}

bool sd_ids_push(sd_ids *ids, int32_t id) {
    if (ids->n == ids->cap) {
        size_t cap = ids->cap ? 2 * ids->cap : 64;
        int32_t *v = realloc(ids->v, cap * sizeof *v);
        if (!v) return false;
        ids->v = v;
        ids->cap = cap;
    }
    ids->v[ids->n++] = id;
    return true;
}

static uint8_t attr_of_type(int32_t type) {
    switch (type) {
    case 1: return SD_ATTR_NORMAL;
    case 2: return SD_ATTR_UNKNOWN;
    case 3: return SD_ATTR_CONTROL;
    case 4: return SD_ATTR_USER_DEFINED;
    case 5: return SD_ATTR_UNUSED;
    case 6: return SD_ATTR_BYTE;
    default: return 0; /* undefined */
    }
}

/* tokenizer.ggml.model and .pre: which algorithm, which regexes, defaults. */
static sd_status load_model_kind(sd_tokenizer *tok, const gguf_ctx *ctx, sd_err *err) {
    const char *model, *pre = "";
    uint64_t model_len, pre_len = 0;
    if (!gguf_get_str(ctx, KEY_MODEL, &model, &model_len))
        return sd_err_set(err, SD_ERR_FORMAT, "missing string key %s", KEY_MODEL);
    gguf_get_str(ctx, KEY_PRE, &pre, &pre_len);
    if (pre_len >= sizeof tok->pre) pre_len = sizeof tok->pre - 1;
    memcpy(tok->pre, pre, pre_len);
    tok->pre[pre_len] = '\0';
    tok->unk = tok->pad = tok->eot = tok->eom = -1;
    if (model_len == 5 && memcmp(model, "llama", 5) == 0) {
        tok->kind = SD_TOK_SPM;
        tok->bos = 1, tok->eos = 2, tok->unk = 0;
        tok->add_bos = true, tok->add_space_prefix = true;
        return SD_OK;
    }
    if (model_len == 4 && memcmp(model, "gpt2", 4) == 0) {
        tok->kind = SD_TOK_BPE;
        /* llama.cpp defaults BPE bos/eos to id 11; "none" is safer: a missing
         * eos must not make some ordinary token end generation. */
        tok->bos = tok->eos = -1;
        return sd_pretok_init(pre, pre_len, &tok->pretok, &tok->ignore_merges, &tok->add_bos, err);
    }
    return sd_err_set(err, SD_ERR_UNSUPPORTED, "unsupported %s '%.*s' (need gpt2 or llama)", KEY_MODEL,
                      model_len > 64 ? 64 : (int)model_len, model);
}

/* Reads element i of a float32/int32 array as float. */
static float score_at(gguf_type elem, const void *data, uint64_t i) {
    if (elem == GGUF_TYPE_FLOAT32) {
        float f;
        memcpy(&f, (const char *)data + 4 * i, 4);
        return f;
    }
    int32_t v;
    memcpy(&v, (const char *)data + 4 * i, 4);
    return (float)v;
}

/* tokenizer.ggml.tokens / .scores / .token_type -> tok->tokens, text_to_id. */
static sd_status load_tokens(sd_tokenizer *tok, const gguf_ctx *ctx, sd_err *err) {
    uint64_t n;
    if (!gguf_get_arr_str_n(ctx, KEY_TOKENS, &n) || n == 0)
        return sd_err_set(err, SD_ERR_FORMAT, "missing or empty string array %s", KEY_TOKENS);
    if (n > INT32_MAX) return sd_err_set(err, SD_ERR_FORMAT, "%s: %llu tokens", KEY_TOKENS, (unsigned long long)n);
    gguf_type score_type = GGUF_TYPE_COUNT, type_type = GGUF_TYPE_COUNT;
    uint64_t n_scores = 0, n_types = 0;
    const void *scores = NULL, *types = NULL;
    if (gguf_find_key(ctx, KEY_SCORES) >= 0 &&
        (!gguf_get_arr_data(ctx, KEY_SCORES, &score_type, &n_scores, &scores) ||
         (score_type != GGUF_TYPE_FLOAT32 && score_type != GGUF_TYPE_INT32) || n_scores < n))
        return sd_err_set(err, SD_ERR_FORMAT, "%s: need %llu float32/int32 values", KEY_SCORES, (unsigned long long)n);
    if (gguf_find_key(ctx, KEY_TYPES) >= 0 &&
        (!gguf_get_arr_data(ctx, KEY_TYPES, &type_type, &n_types, &types) || type_type != GGUF_TYPE_INT32 ||
         n_types < n))
        return sd_err_set(err, SD_ERR_FORMAT, "%s: need %llu int32 values", KEY_TYPES, (unsigned long long)n);

    tok->n_vocab = (int32_t)n;
    tok->tokens = sd_calloc(n, sizeof *tok->tokens);
    if (!tok->tokens || !sd_strmap_init(&tok->text_to_id, n)) return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    for (uint64_t i = 0; i < n; i++) {
        const char *s;
        uint64_t len;
        char empty[32];
        if (!gguf_get_arr_str(ctx, KEY_TOKENS, i, &s, &len))
            return sd_err_set(err, SD_ERR_FORMAT, "%s[%llu] unreadable", KEY_TOKENS, (unsigned long long)i);
        if (len == 0) { /* as llama.cpp: an empty token gets a unique placeholder text */
            len = (uint64_t)snprintf(empty, sizeof empty, "[EMPTY_%llu]", (unsigned long long)i);
            s = empty;
        }
        if (len > SD_TOKEN_MAX_BYTES)
            return sd_err_set(err, SD_ERR_FORMAT, "%s[%llu]: %llu bytes (limit %d)", KEY_TOKENS, (unsigned long long)i,
                              (unsigned long long)len, SD_TOKEN_MAX_BYTES);
        sd_token_data *t = &tok->tokens[i];
        int32_t dup;
        int put = sd_strmap_put(&tok->text_to_id, s, len, (int32_t)i, &dup);
        if (put < 0 || !sd_vocab_arena_add(tok, s, len, &t->text_off)) return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
        if (put == 0)
            return sd_err_set(err, SD_ERR_FORMAT, "duplicate token in vocabulary: ids %d and %llu", dup,
                              (unsigned long long)i);
        t->text_len = (uint32_t)len;
        t->score = scores ? score_at(score_type, scores, i) : 0.0f;
        int32_t type = 1;
        if (types) memcpy(&type, (const char *)types + 4 * i, 4);
        t->attr = attr_of_type(type);
    }
    return SD_OK;
}

/* The bytes token id prints as (llama_vocab::impl::token_to_piece with
 * special = true): special tokens print their text, normal ones their
 * decoded spelling, byte tokens <0xNN> their byte; unused/undefined nothing.
 * Writes at most text_len + 1 bytes to out (a byte-level char is >= 1 byte;
 * "▁" is 3 bytes for one space). */
static size_t piece_of(const sd_tokenizer *tok, int32_t id, uint8_t *out) {
    const sd_token_data *t = &tok->tokens[id];
    const uint8_t *s = (const uint8_t *)sd_tok_text(tok, id);
    size_t n = t->text_len, m = 0;
    if (t->attr & SD_ATTR_SPECIAL) {
        memcpy(out, s, n);
        return n;
    }
    if (t->attr & SD_ATTR_BYTE) {
        char hex[3] = {0};
        if (n != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return 0;
        memcpy(hex, s + 3, 2);
        char *end;
        unsigned long b = strtoul(hex, &end, 16);
        if (*end) return 0;
        out[0] = (uint8_t)b;
        return 1;
    }
    if (!(t->attr & SD_ATTR_NORMAL)) return 0;
    for (size_t i = 0; i < n;) {
        size_t cl;
        bool valid = sd_utf8_scan(s + i, n - i, &cl) == SD_UTF8_CHAR;
        if (!valid) cl = 1;
        int b = -1;
        if (tok->kind == SD_TOK_SPM && cl == 3 && memcmp(s + i, "\xE2\x96\x81", 3) == 0) b = ' ';
        else if (tok->kind == SD_TOK_BPE && valid) b = sd_byte_level_byte(sd_utf8_decode(s + i, cl));
        if (b >= 0) out[m++] = (uint8_t)b;
        else memcpy(out + m, s + i, cl), m += cl; /* kept as written */
        i += cl;
    }
    return m;
}

static sd_status build_pieces(sd_tokenizer *tok, sd_err *err) {
    uint8_t *buf = NULL;
    size_t cap = 0;
    bool ok = true;
    for (int32_t id = 0; ok && id < tok->n_vocab; id++) {
        sd_token_data *t = &tok->tokens[id];
        if ((size_t)t->text_len + 1 > cap) {
            uint8_t *b = realloc(buf, (size_t)t->text_len + 1);
            if (!(ok = b != NULL)) break;
            buf = b, cap = (size_t)t->text_len + 1;
        }
        size_t n = piece_of(tok, id, buf);
        ok = sd_vocab_arena_add(tok, buf, n, &t->piece_off);
        t->piece_len = (uint32_t)n;
        if (n > tok->max_piece) tok->max_piece = (uint32_t)n;
    }
    free(buf);
    return ok ? SD_OK : sd_err_set(err, SD_ERR_NOMEM, "out of memory");
}

/* byte_to_id: the token a byte falls back to when no merge covers it.
 * SPM: <0xNN>, else the one-byte token (llama_vocab::impl::byte_to_token);
 * BPE: the token spelling that byte. */
static void build_byte_fallback(sd_tokenizer *tok) {
    for (int b = 0; b < 256; b++) {
        int32_t id = -1;
        uint8_t c = (uint8_t)b;
        if (tok->kind == SD_TOK_SPM) {
            char hex[8];
            snprintf(hex, sizeof hex, "<0x%02X>", b);
            if (!sd_strmap_get(&tok->text_to_id, hex, 6, &id) && !sd_strmap_get(&tok->text_to_id, &c, 1, &id))
                id = -1;
        } else if (!sd_strmap_get(&tok->bytes_to_id, &c, 1, &id)) {
            id = -1;
        }
        tok->byte_to_id[b] = id;
    }
}

sd_status sd_tokenizer_init(const gguf_ctx *ctx, sd_tokenizer **out, sd_err *err) {
    *out = NULL;
    sd_tokenizer *tok = calloc(1, sizeof *tok);
    if (!tok) return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    sd_status st = load_model_kind(tok, ctx, err);
    if (!st) st = load_tokens(tok, ctx, err);
    if (!st) st = sd_vocab_load_special(tok, ctx, err);
    if (!st) st = build_pieces(tok, err);
    if (!st && tok->kind == SD_TOK_BPE) st = sd_vocab_load_merges(tok, ctx, err);
    if (st) {
        sd_tokenizer_free(tok);
        return st;
    }
    build_byte_fallback(tok);
    if (tok->kind == SD_TOK_BPE) sd_strmap_free(&tok->text_to_id); /* ~5 MiB for 150k tokens */
    *out = tok;
    return SD_OK;
}

void sd_tokenizer_free(sd_tokenizer *tok) {
    if (!tok) return;
    sd_strmap_free(&tok->text_to_id);
    sd_strmap_free(&tok->bytes_to_id);
    sd_strmap_free(&tok->merges);
    sd_pretok_free(tok->pretok);
    free(tok->special);
    free(tok->tokens);
    free(tok->arena);
    free(tok);
}

sd_tokenizer_kind sd_tokenizer_type(const sd_tokenizer *tok) { return tok->kind; }
const char *sd_tokenizer_pre(const sd_tokenizer *tok) { return tok->pre; }
int32_t sd_tokenizer_n_vocab(const sd_tokenizer *tok) { return tok->n_vocab; }
int32_t sd_tokenizer_bos(const sd_tokenizer *tok) { return tok->bos; }
int32_t sd_tokenizer_eos(const sd_tokenizer *tok) { return tok->eos; }
int32_t sd_tokenizer_eot(const sd_tokenizer *tok) { return tok->eot; }
bool sd_tokenizer_add_bos(const sd_tokenizer *tok) { return tok->add_bos; }
bool sd_tokenizer_add_eos(const sd_tokenizer *tok) { return tok->add_eos; }
size_t sd_tokenizer_max_piece(const sd_tokenizer *tok) { return tok->max_piece; }

bool sd_tokenizer_is_eog(const sd_tokenizer *tok, int32_t id) {
    return id >= 0 && id < tok->n_vocab && tok->tokens[id].eog;
}

bool sd_tokenizer_is_control(const sd_tokenizer *tok, int32_t id) {
    return id >= 0 && id < tok->n_vocab && (tok->tokens[id].attr & (SD_ATTR_CONTROL | SD_ATTR_UNKNOWN));
}

const char *sd_token_text(const sd_tokenizer *tok, int32_t id) {
    return id >= 0 && id < tok->n_vocab ? sd_tok_text(tok, id) : NULL;
}

bool sd_tokenizer_same_vocab(const sd_tokenizer *a, const sd_tokenizer *b) {
    if (a->kind != b->kind || a->n_vocab != b->n_vocab) return false;
    for (int32_t i = 0; i < a->n_vocab; i++) {
        const sd_token_data *ta = &a->tokens[i], *tb = &b->tokens[i];
        if (ta->text_len != tb->text_len || ta->attr != tb->attr ||
            memcmp(sd_tok_text(a, i), sd_tok_text(b, i), ta->text_len) != 0)
            return false;
    }
    return true;
}
