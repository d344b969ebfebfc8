/* specdec_vocab (include/specdec.h): a GGUF file's tokenizer without its
 * weights, for tools that only tokenize; and the UTF-8 check front ends use
 * to print token pieces. */
#include <stdlib.h>

#include "api/api_internal.h"
#include "format/gguf.h"
#include "tokenizer/tokenizer.h"
#include "tokenizer/utf8.h"

struct specdec_vocab {
    gguf_ctx *gguf; /* kept open: the tokenizer is read from it */
    sd_tokenizer *tok;
};

specdec_status specdec_vocab_load(const char *path, specdec_vocab **out, specdec_error *err) {
    if (!out) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_vocab_load: out is NULL");
    *out = NULL;
    if (!path) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_vocab_load: path is NULL");
    specdec_vocab *v = calloc(1, sizeof *v);
    if (!v) return sd_api_fail(err, SPECDEC_ERR_NOMEM, "%s: out of memory", path);
    sd_err e = {0};
    if (gguf_open(path, &v->gguf, &e) != SD_OK) { /* the reader's message names the file */
        free(v);
        return sd_api_error(err, &e);
    }
    if (sd_tokenizer_init(v->gguf, &v->tok, &e) != SD_OK) {
        specdec_vocab_free(v);
        return sd_api_fail(err, (specdec_status)e.code, "%s: %s", path, e.msg);
    }
    *out = v;
    return SPECDEC_OK;
}

void specdec_vocab_free(specdec_vocab *v) {
    if (!v) return;
    sd_tokenizer_free(v->tok);
    gguf_close(v->gguf);
    free(v);
}

specdec_status specdec_vocab_tokenize(const specdec_vocab *v, const char *text, size_t len, bool add_special,
                                      bool parse_special, specdec_token **tokens, size_t *n_tokens,
                                      specdec_error *err) {
    if (!v || (!text && len) || !tokens || !n_tokens)
        return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_vocab_tokenize: NULL argument");
    sd_err e = {0};
    if (sd_tokenize(v->tok, text ? text : "", len, add_special, parse_special, tokens, n_tokens, &e) != SD_OK)
        return sd_api_error(err, &e);
    return SPECDEC_OK;
}

int32_t specdec_vocab_token_to_piece(const specdec_vocab *v, specdec_token token, bool show_special, char *buf,
                                     size_t cap) {
    return v ? sd_token_to_bytes(v->tok, token, show_special, buf, cap) : -1;
}

size_t specdec_utf8_char_len(const char *s, size_t n) {
    size_t len = 0;
    if (!s || n == 0) return 0;
    return sd_utf8_scan((const uint8_t *)s, n, &len) == SD_UTF8_CHAR ? len : 0;
}
