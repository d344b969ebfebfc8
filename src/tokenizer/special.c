/* Special token ids, end-of-generation set, and the input partition
 * (llama.cpp src/llama-vocab.cpp: llama_vocab::impl::load "special tokens",
 * "auto-detect special tokens by text", special_eog_ids, cache_special_tokens,
 * tokenizer_st_partition). */
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "tokenizer/special.h"
#include "tokenizer/vocab.h"

/* Token texts that end generation; llama.cpp marks them control and EOG. */
static const char *const EOG_TEXTS[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|eom_id|>", "<EOT>", "_<EOT>",
    "<|end_of_text|>", "<end_of_utterance>", NULL,
};
/* Texts detected as eot when tokenizer.ggml.eot_token_id is absent. */
static const char *const EOT_TEXTS[] = {
    "<|eot_id|>", "<|im_end|>", "<|end|>", "<end_of_turn>", "<|endoftext|>", "<|end_of_text|>", "<EOT>", "_<EOT>",
    "<end_of_utterance>", NULL,
};
/* Fill-in-the-middle pad / repo / file-separator tokens, which llama.cpp also
 * treats as end of generation. */
static const char *const FIM_PAD_TEXTS[] = {"<|fim_pad|>", "<fim-pad>", "<fim_pad>", "<PAD>", "[PAD]", NULL};
static const char *const FIM_REP_TEXTS[] = {"<|fim_repo|>", "<|repo_name|>", "<fim-repo>", "<REPO>", "<reponame>", NULL};
static const char *const FIM_SEP_TEXTS[] = {"<|file_sep|>", NULL};

/* Id of the first text of list present in the vocabulary, or -1. (llama.cpp
 * takes whichever its hash map yields first; list order makes Qwen's eot
 * <|im_end|> rather than <|endoftext|>, deterministically.) */
static int32_t find_any(const sd_tokenizer *tok, const char *const *list) {
    int32_t id;
    for (int i = 0; list[i]; i++)
        if (sd_strmap_get(&tok->text_to_id, list[i], strlen(list[i]), &id)) return id;
    return -1;
}

/* Reads tokenizer.ggml.<name> as a token id; keeps *id when absent or out of range. */
static void read_id(const sd_tokenizer *tok, const gguf_ctx *ctx, const char *key, int32_t *id) {
    uint32_t v;
    if (*id >= tok->n_vocab) *id = -1;
    if (gguf_get_u32(ctx, key, &v) && v < (uint32_t)tok->n_vocab) *id = (int32_t)v;
}

static void set_control(sd_tokenizer *tok, int32_t id) {
    if (id >= 0) tok->tokens[id].attr |= SD_ATTR_CONTROL; /* llama.cpp overrides the file's type */
}

/* Token found by its text (when its id key is absent): control, as in llama.cpp. */
static int32_t detect(sd_tokenizer *tok, int32_t id, const char *const *texts) {
    if (id >= 0) return id;
    id = find_any(tok, texts);
    set_control(tok, id);
    return id;
}

static void find_eog(sd_tokenizer *tok, const gguf_ctx *ctx) {
    static const char *const EOM_TEXTS[] = {"<|eom_id|>", NULL};
    int32_t fim_pad = -1, fim_rep = -1, fim_sep = -1;
    read_id(tok, ctx, "tokenizer.ggml.fim_pad_token_id", &fim_pad);
    read_id(tok, ctx, "tokenizer.ggml.fim_rep_token_id", &fim_rep);
    read_id(tok, ctx, "tokenizer.ggml.fim_sep_token_id", &fim_sep);
    tok->eot = detect(tok, tok->eot, EOT_TEXTS);
    tok->eom = detect(tok, tok->eom, EOM_TEXTS);
    fim_pad = detect(tok, fim_pad, FIM_PAD_TEXTS);
    fim_rep = detect(tok, fim_rep, FIM_REP_TEXTS);
    fim_sep = detect(tok, fim_sep, FIM_SEP_TEXTS);
    int32_t id;
    for (int i = 0; EOG_TEXTS[i]; i++) {
        if (!sd_strmap_get(&tok->text_to_id, EOG_TEXTS[i], strlen(EOG_TEXTS[i]), &id)) continue;
        tok->tokens[id].eog = true;
        set_control(tok, id);
    }
    int32_t ids[] = {fim_pad, fim_rep, fim_sep, tok->eos, tok->eot, tok->eom};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
        if (ids[i] >= 0) tok->tokens[ids[i]].eog = true;
}

typedef struct len_id {
    uint32_t len;
    int32_t id;
} len_id;

/* Longest text first; equal lengths by id, so the order is total and does
 * not depend on qsort's stability. */
static int by_length_desc(const void *a, const void *b) {
    const len_id *x = a, *y = b;
    if (x->len != y->len) return x->len > y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

static sd_status build_special_cache(sd_tokenizer *tok, sd_err *err) {
    len_id *tmp = sd_malloc_array((size_t)tok->n_vocab, sizeof *tmp);
    tok->special = sd_malloc_array((size_t)tok->n_vocab, sizeof *tok->special);
    if (!tmp || !tok->special) {
        free(tmp);
        return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    }
    size_t n = 0;
    for (int32_t id = 0; id < tok->n_vocab; id++)
        if (tok->tokens[id].attr & SD_ATTR_SPECIAL) tmp[n++] = (len_id){tok->tokens[id].text_len, id};
    qsort(tmp, n, sizeof *tmp, by_length_desc);
    for (size_t i = 0; i < n; i++) tok->special[i] = tmp[i].id;
    tok->n_special = (int32_t)n;
    free(tmp);
    return SD_OK;
}

sd_status sd_vocab_load_special(sd_tokenizer *tok, const gguf_ctx *ctx, sd_err *err) {
    read_id(tok, ctx, "tokenizer.ggml.bos_token_id", &tok->bos);
    read_id(tok, ctx, "tokenizer.ggml.eos_token_id", &tok->eos);
    read_id(tok, ctx, "tokenizer.ggml.eot_token_id", &tok->eot);
    read_id(tok, ctx, "tokenizer.ggml.eom_token_id", &tok->eom);
    read_id(tok, ctx, "tokenizer.ggml.unknown_token_id", &tok->unk);
    read_id(tok, ctx, "tokenizer.ggml.padding_token_id", &tok->pad);
    gguf_get_bool(ctx, "tokenizer.ggml.add_space_prefix", &tok->add_space_prefix);
    gguf_get_bool(ctx, "tokenizer.ggml.add_bos_token", &tok->add_bos);
    gguf_get_bool(ctx, "tokenizer.ggml.add_eos_token", &tok->add_eos);
    if (tok->add_bos && tok->bos < 0)
        return sd_err_set(err, SD_ERR_FORMAT, "tokenizer.ggml.add_bos_token is true, but no valid bos_token_id");
    if (tok->add_eos && tok->eos < 0)
        return sd_err_set(err, SD_ERR_FORMAT, "tokenizer.ggml.add_eos_token is true, but no valid eos_token_id");
    find_eog(tok, ctx);
    return build_special_cache(tok, err);
}

/* ---- partition ---- */

static bool push_fragment(sd_fragments *f, int32_t id, size_t off, size_t len) {
    if (f->n == f->cap) {
        size_t cap = f->cap ? 2 * f->cap : 16;
        sd_fragment *v = realloc(f->v, cap * sizeof *v);
        if (!v) return false;
        f->v = v;
        f->cap = cap;
    }
    f->v[f->n++] = (sd_fragment){id, off, len};
    return true;
}

/* First occurrence of needle (m >= 1 bytes) in hay (n bytes), or NULL. */
static const char *find_bytes(const char *hay, size_t n, const char *needle, size_t m) {
    while (n >= m) {
        const char *p = memchr(hay, needle[0], n - m + 1);
        if (!p) return NULL;
        if (memcmp(p, needle, m) == 0) return p;
        n -= (size_t)(p - hay) + 1;
        hay = p + 1;
    }
    return NULL;
}

/* The ranges where control tokens may not be matched (NULL: none). */
typedef struct guard {
    const sd_text_range *v;
    size_t n;
} guard;

/* Whether [at, at + m) overlaps a range of g (sorted, disjoint): binary search
 * for the last range starting before at + m, then its end. */
static bool guarded(const guard *g, size_t at, size_t m) {
    size_t lo = 0, hi = g->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (g->v[mid].off < at + m) lo = mid + 1;
        else hi = mid;
    }
    return lo > 0 && g->v[lo - 1].off + g->v[lo - 1].len > at;
}

/* Splits raw fragment f at every occurrence of token id (outside g's ranges
 * when g is given), appending to out. */
static bool split_fragment(const sd_tokenizer *tok, const char *text, sd_fragment f, int32_t id, const guard *g,
                           sd_fragments *out) {
    const char *needle = sd_tok_text(tok, id);
    size_t m = tok->tokens[id].text_len;
    size_t pos = f.off, end = f.off + f.len, from = pos;
    const char *hit;
    while (from < end && (hit = find_bytes(text + from, end - from, needle, m))) {
        size_t at = (size_t)(hit - text);
        if (g && guarded(g, at, m)) { from = at + 1; continue; } /* message text: stays text */
        if (at > pos && !push_fragment(out, -1, pos, at - pos)) return false;
        if (!push_fragment(out, id, at, m)) return false;
        pos = from = at + m;
    }
    return pos >= end || push_fragment(out, -1, pos, end - pos);
}

static sd_status partition(const sd_tokenizer *tok, const char *text, size_t len, bool parse_special,
                           const guard *g, sd_fragments *out, sd_err *err) {
    out->n = 0;
    if (len == 0) return SD_OK;
    if (!push_fragment(out, -1, 0, len)) return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    sd_fragments next = {0};
    bool ok = true;
    for (int32_t s = 0; ok && s < tok->n_special; s++) {
        int32_t id = tok->special[s];
        bool control = tok->tokens[id].attr & (SD_ATTR_CONTROL | SD_ATTR_UNKNOWN);
        if (!parse_special && control) continue;
        const guard *gi = control ? g : NULL;
        next.n = 0;
        for (size_t i = 0; ok && i < out->n; i++)
            ok = out->v[i].id >= 0 ? push_fragment(&next, out->v[i].id, out->v[i].off, out->v[i].len)
                                   : split_fragment(tok, text, out->v[i], id, gi, &next);
        sd_fragments swap = *out;
        *out = next;
        next = swap;
    }
    free(next.v);
    return ok ? SD_OK : sd_err_set(err, SD_ERR_NOMEM, "out of memory");
}

sd_status sd_special_partition(const sd_tokenizer *tok, const char *text, size_t len, bool parse_special,
                               sd_fragments *out, sd_err *err) {
    return partition(tok, text, len, parse_special, NULL, out, err);
}

sd_status sd_special_partition_guarded(const sd_tokenizer *tok, const char *text, size_t len,
                                       const sd_text_range *plain, size_t n_plain, sd_fragments *out, sd_err *err) {
    guard g = {plain, n_plain};
    return partition(tok, text, len, true, &g, out, err);
}
