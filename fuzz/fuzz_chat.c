/* libFuzzer target: the chat-template renderers (src/chat/) with hostile
 * messages, and the guarded tokenization of their output (control tokens
 * only from the template) with the qwen2 and llama-bpe vocabularies.
 * Input: byte 0 = family (mod 6: chatml, qwen3, qwen35, qwen36, llama3,
 * llama31) + 8 * switches (bit 0 add_generation_prompt, bits 1-2
 * enable_thinking unset/false/true, bit 3 preserve_thinking); then messages
 * separated by 0xFF, each: a role byte (mod 7: system, user, assistant, tool,
 * ipython, developer, wizard), then content, and after an optional 0xFE the
 * reasoning_content (both cut at a NUL, as C strings).
 * Checks: the text ranges the renderer reports are in bounds, ordered and
 * disjoint; the guarded ids decode back to the rendered text; they hold as
 * many control tokens as the same conversation with every '|' replaced by
 * '!' (which spells no control token of either vocabulary): only the
 * template's. Build and run: bash fuzz/run.sh SECONDS fuzz_chat */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat.h"
#include "format/gguf.h"
#include "tokenizer/tokenizer.h"

#define CHECK(c)                                                                     \
    do {                                                                             \
        if (!(c)) {                                                                  \
            fprintf(stderr, "fuzz_chat: check failed: %s (line %d)\n", #c, __LINE__); \
            abort();                                                                 \
        }                                                                            \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static sd_tokenizer *g_tok[2]; /* qwen2 (ChatML families), llama-bpe (Llama 3) */

static sd_tokenizer *load(const char *name) {
    char path[512];
    const char *root = getenv("SD_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/tests/data/tokenizer/ggml-vocab-%s.gguf", root ? root : ".", name);
    gguf_ctx *ctx;
    sd_tokenizer *tok = NULL;
    sd_err err = {0};
    if (gguf_open(path, &ctx, &err) || sd_tokenizer_init(ctx, &tok, &err)) {
        fprintf(stderr, "fuzz_chat: %s\n", err.msg);
        abort();
    }
    gguf_close(ctx);
    return tok;
}

#define MAX_MSGS 64

/* Renders and tokenizes; returns the control-token count, or -1 when the
 * template refuses the conversation. */
static long render(const sd_chat_template *t, const sd_chat_opts *base, const sd_tokenizer *tok, sd_chat_msg *m,
                   size_t n) {
    sd_chat_spans spans = {0};
    sd_chat_opts o = *base;
    o.text_spans = &spans;
    sd_strbuf out = {0};
    sd_err err = {0};
    if (sd_chat_render(t, m, n, &o, &out, &err) != SD_OK) {
        CHECK(err.code == SD_ERR_ARG);
        sd_strbuf_free(&out);
        sd_chat_spans_free(&spans);
        return -1;
    }
    sd_text_range *plain = calloc(spans.n + 1, sizeof *plain);
    CHECK(plain);
    for (size_t i = 0; i < spans.n; i++) {
        CHECK(spans.v[i].len > 0 && spans.v[i].off + spans.v[i].len <= out.len);
        CHECK(i == 0 || spans.v[i].off > spans.v[i - 1].off + spans.v[i - 1].len - 1);
        plain[i] = (sd_text_range){spans.v[i].off, spans.v[i].len};
    }
    int32_t *ids;
    size_t nid;
    CHECK(sd_tokenize_guarded(tok, out.s ? out.s : "", out.len, false, plain, spans.n, &ids, &nid, &err) == SD_OK);
    long c = 0;
    for (size_t i = 0; i < nid; i++) c += sd_tokenizer_is_control(tok, ids[i]);
    char *back;
    size_t len;
    CHECK(sd_detokenize(tok, ids, nid, true, &back, &len, &err) == SD_OK);
    CHECK(len == out.len && (len == 0 || !memcmp(back, out.s, len)));
    free(back);
    free(ids);
    free(plain);
    sd_strbuf_free(&out);
    sd_chat_spans_free(&spans);
    return c;
}

/* The vocabularies load once, before the first input: under the sanitizers a
 * loaded host can take longer than libFuzzer's per-input -timeout for them. */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    g_tok[0] = load("qwen2");
    g_tok[1] = load("llama-bpe");
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    static const char *const families[] = {"chatml", "qwen3", "qwen35", "qwen36", "llama3", "llama31"};
    static const char *const roles[] = {"system", "user", "assistant", "tool", "ipython", "developer", "wizard"};
    int fam = data[0] % 6, sw = data[0] / 6;
    sd_chat_template t;
    sd_err err = {0};
    CHECK(sd_chat_template_named(families[fam], &t, &err) == SD_OK);
    sd_chat_opts o = sd_chat_default_opts();
    o.add_generation_prompt = sw & 1;
    o.enable_thinking = ((sw >> 1) & 3) == 0 ? -1 : ((sw >> 1) & 3) == 1 ? 0 : 1;
    o.preserve_thinking = sw & 8;
    /* Two copies of the messages' bytes: as given, and with '|' -> '!'. */
    char *buf[2];
    for (int k = 0; k < 2; k++) {
        buf[k] = malloc(size + 1);
        CHECK(buf[k]);
        memcpy(buf[k], data, size);
        buf[k][size] = 0;
        for (size_t i = 1; k == 1 && i < size; i++)
            if (buf[k][i] == '|') buf[k][i] = '!';
    }
    sd_chat_msg m[2][MAX_MSGS];
    size_t n = 0;
    for (size_t i = 1; i < size && n < MAX_MSGS;) {
        size_t end = i;
        while (end < size && data[end] != 0xFF) end++;
        for (int k = 0; k < 2; k++) {
            buf[k][end] = 0;
            char *body = buf[k] + i + 1, *reason = NULL;
            if (end == i) body = buf[k] + end; /* an empty message: role 0, content "" */
            char *sep = memchr(body, 0xFE, (size_t)(buf[k] + end - body));
            if (sep) { *sep = 0; reason = sep + 1; }
            m[k][n] = (sd_chat_msg){.role = roles[(unsigned char)data[i] % 7], .content = body, .reasoning_content = reason};
        }
        n++;
        i = end + 1;
    }
    const sd_tokenizer *tok = g_tok[fam >= 4];
    long c0 = render(&t, &o, tok, m[0], n), c1 = render(&t, &o, tok, m[1], n);
    CHECK(c0 == c1);
    free(buf[0]);
    free(buf[1]);
    return 0;
}
