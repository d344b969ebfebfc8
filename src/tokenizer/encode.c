/* Text -> token ids (llama.cpp src/llama-vocab.cpp llama_vocab::impl::tokenize):
 * BOS, then each fragment of the special-token partition (a special token
 * as itself, raw text through BPE or SPM), then EOS. */
#include <stdlib.h>

#include "tokenizer/encoders.h"
#include "tokenizer/special.h"

/* guarded: control tokens only outside plain's ranges (sd_tokenize_guarded). */
static sd_status tokenize(const sd_tokenizer *tok, const char *text, size_t len, bool add_special,
                          bool parse_special, bool guarded, const sd_text_range *plain, size_t n_plain,
                          int32_t **ids, size_t *n_ids, sd_err *err) {
    *ids = NULL;
    *n_ids = 0;
    sd_ids out = {0};
    sd_fragments frags = {0};
    sd_spans words = {0};
    sd_bpe_scratch scratch = {0};
    sd_status st = guarded ? sd_special_partition_guarded(tok, text, len, plain, n_plain, &frags, err)
                         : sd_special_partition(tok, text, len, parse_special, &frags, err);
    if (!st && add_special && tok->add_bos && !sd_ids_push(&out, tok->bos))
        st = sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    /* SPM prepends a space to the text at the start and after each special
     * token (tokenizer.ggml.add_space_prefix), as SentencePiece does per piece. */
    bool after_special = true;
    for (size_t i = 0; !st && i < frags.n; i++) {
        const sd_fragment *f = &frags.v[i];
        if (f->id >= 0) {
            if (!sd_ids_push(&out, f->id)) st = sd_err_set(err, SD_ERR_NOMEM, "out of memory");
            after_special = true;
        } else if (tok->kind == SD_TOK_BPE) {
            st = sd_bpe_encode(tok, text + f->off, f->len, &scratch, &words, &out, err);
        } else {
            st = sd_spm_encode(tok, text + f->off, f->len, tok->add_space_prefix && after_special, &scratch, &out, err);
            after_special = false;
        }
    }
    if (!st && add_special && tok->add_eos && !sd_ids_push(&out, tok->eos))
        st = sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    free(frags.v);
    free(words.v);
    sd_bpe_scratch_free(&scratch);
    if (st) {
        free(out.v);
        return st;
    }
    if (!out.v && !(out.v = malloc(sizeof *out.v))) return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    *ids = out.v;
    *n_ids = out.n;
    return SD_OK;
}

sd_status sd_tokenize(const sd_tokenizer *tok, const char *text, size_t len, bool add_special,
                      bool parse_special, int32_t **ids, size_t *n_ids, sd_err *err) {
    return tokenize(tok, text, len, add_special, parse_special, false, NULL, 0, ids, n_ids, err);
}

sd_status sd_tokenize_guarded(const sd_tokenizer *tok, const char *text, size_t len, bool add_special,
                              const sd_text_range *plain, size_t n_plain, int32_t **ids, size_t *n_ids,
                              sd_err *err) {
    return tokenize(tok, text, len, add_special, true, true, plain, plain ? n_plain : 0, ids, n_ids, err);
}
