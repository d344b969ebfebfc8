/* tokenizer: special-token parsing, BOS/EOS, end-of-generation ids, pieces. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tok_util.h"

static sd_tokenizer *g_qwen, *g_spm, *g_llama3, *g_gpt2;

static int setup(void **state) {
    (void)state;
    g_qwen = tok_load("qwen2");
    g_spm = tok_load("llama-spm");
    g_llama3 = tok_load("llama-bpe");
    g_gpt2 = tok_load("gpt-2");
    return g_qwen && g_spm && g_llama3 && g_gpt2 ? 0 : -1;
}

static int teardown(void **state) {
    (void)state;
    sd_tokenizer_free(g_qwen);
    sd_tokenizer_free(g_spm);
    sd_tokenizer_free(g_llama3);
    sd_tokenizer_free(g_gpt2);
    return 0;
}

/* Encodes a NUL-terminated string; returns the count, ids in *ids (caller frees). */
static size_t enc(const sd_tokenizer *tok, const char *s, bool add_special, bool parse_special, int32_t **ids) {
    size_t n;
    sd_err err = {0};
    assert_int_equal(sd_tokenize(tok, s, strlen(s), add_special, parse_special, ids, &n, &err), SD_OK);
    return n;
}

static bool has(const int32_t *ids, size_t n, int32_t id) {
    for (size_t i = 0; i < n; i++)
        if (ids[i] == id) return true;
    return false;
}

static void test_parse_special(void **state) {
    (void)state;
    const char *chat = "<|im_start|>user\nhi<|im_end|>\n";
    int32_t *a, *b;
    size_t na = enc(g_qwen, chat, false, true, &a);
    size_t nb = enc(g_qwen, chat, false, false, &b);
    assert_true(na >= 5);
    assert_int_equal(a[0], 151644);                   /* <|im_start|> */
    assert_true(has(a, na, 151645));                  /* <|im_end|> */
    assert_false(has(b, nb, 151644) || has(b, nb, 151645)); /* plain text without parse_special */
    assert_true(nb > na);
    /* Both decode back to the input (control tokens shown). */
    char *text;
    size_t len;
    sd_err err = {0};
    assert_int_equal(sd_detokenize(g_qwen, a, na, true, &text, &len, &err), SD_OK);
    assert_string_equal(text, chat);
    free(text);
    assert_int_equal(sd_detokenize(g_qwen, b, nb, false, &text, &len, &err), SD_OK);
    assert_string_equal(text, chat);
    free(text);
    /* Hidden when not shown: the control tokens print nothing. */
    assert_int_equal(sd_detokenize(g_qwen, a, na, false, &text, &len, &err), SD_OK);
    assert_string_equal(text, "user\nhi\n");
    free(text);
    free(a);
    free(b);
}

static void test_user_defined_always_matched(void **state) {
    (void)state;
    /* [PAD151646] is a user-defined token: matched even without parse_special (llama.cpp, HF). */
    int32_t *ids;
    size_t n = enc(g_qwen, "x[PAD151646]y", false, false, &ids);
    assert_true(has(ids, n, 151646));
    free(ids);
}

static void test_special_text_in_the_middle(void **state) {
    (void)state;
    /* A special token splits the text: the left and right parts encode as they would alone. */
    int32_t *whole, *left, *right;
    size_t nw = enc(g_qwen, "Hello world<|endoftext|> again", false, true, &whole);
    size_t nl = enc(g_qwen, "Hello world", false, false, &left);
    size_t nr = enc(g_qwen, " again", false, false, &right);
    assert_int_equal(nw, nl + 1 + nr);
    assert_memory_equal(whole, left, nl * sizeof *left);
    assert_int_equal(whole[nl], 151643);
    assert_memory_equal(whole + nl + 1, right, nr * sizeof *right);
    free(whole), free(left), free(right);
}

static void test_bos_eos(void **state) {
    (void)state;
    int32_t *ids, *plain;
    /* llama-spm: add_bos_token true, add_eos_token false. */
    assert_true(sd_tokenizer_add_bos(g_spm));
    assert_false(sd_tokenizer_add_eos(g_spm));
    size_t n = enc(g_spm, "Hello", true, false, &ids);
    size_t np = enc(g_spm, "Hello", false, false, &plain);
    assert_int_equal(n, np + 1);
    assert_int_equal(ids[0], sd_tokenizer_bos(g_spm));
    assert_int_equal(ids[0], 1);
    assert_memory_equal(ids + 1, plain, np * sizeof *plain);
    free(ids), free(plain);
    /* Empty text with add_special: just BOS (SentencePiece: encode('') == [bos]). */
    n = enc(g_spm, "", true, false, &ids);
    assert_int_equal(n, 1);
    free(ids);
    n = enc(g_spm, "", false, false, &ids);
    assert_int_equal(n, 0);
    assert_non_null(ids);
    free(ids);
    /* llama-bpe (llama3 pre): BOS by default; qwen2: none. */
    assert_true(sd_tokenizer_add_bos(g_llama3));
    n = enc(g_llama3, "Hi", true, false, &ids);
    assert_int_equal(ids[0], 128000);
    free(ids);
    assert_false(sd_tokenizer_add_bos(g_qwen));
    n = enc(g_qwen, "Hi", true, false, &ids);
    assert_false(has(ids, n, sd_tokenizer_bos(g_qwen)));
    free(ids);
    assert_int_equal(sd_tokenizer_bos(g_gpt2), 50256);
    assert_int_equal(sd_tokenizer_eos(g_gpt2), 50256);
}

static void test_spm_space_prefix_after_special(void **state) {
    (void)state;
    /* SPM prepends "▁" at the start and after each special token. */
    int32_t *a, *b;
    size_t na = enc(g_spm, "<s>Hello", false, true, &a);
    size_t nb = enc(g_spm, "Hello", false, false, &b);
    assert_int_equal(na, nb + 1);
    assert_int_equal(a[0], 1);
    assert_memory_equal(a + 1, b, nb * sizeof *b);
    char piece[16];
    assert_int_equal(sd_token_to_bytes(g_spm, b[0], false, piece, sizeof piece), 6);
    assert_memory_equal(piece, " Hello", 6);
    free(a), free(b);
}

static void test_eog(void **state) {
    (void)state;
    assert_true(sd_tokenizer_is_eog(g_qwen, 151643));  /* <|endoftext|> = eos */
    assert_true(sd_tokenizer_is_eog(g_qwen, 151645));  /* <|im_end|> */
    assert_false(sd_tokenizer_is_eog(g_qwen, 151644)); /* <|im_start|> */
    assert_false(sd_tokenizer_is_eog(g_qwen, 9707));   /* Hello */
    assert_false(sd_tokenizer_is_eog(g_qwen, -1));
    assert_false(sd_tokenizer_is_eog(g_qwen, sd_tokenizer_n_vocab(g_qwen)));
    assert_int_equal(sd_tokenizer_eot(g_qwen), 151645);
    assert_true(sd_tokenizer_is_eog(g_llama3, 128001)); /* <|end_of_text|> */
    assert_true(sd_tokenizer_is_eog(g_llama3, 128009)); /* <|eot_id|> */
    assert_false(sd_tokenizer_is_eog(g_llama3, 128000)); /* <|begin_of_text|> */
    assert_true(sd_tokenizer_is_eog(g_spm, 2));          /* </s> */
    assert_false(sd_tokenizer_is_eog(g_spm, 1));
    assert_true(sd_tokenizer_is_eog(g_gpt2, 50256));
}

static void test_token_to_bytes(void **state) {
    (void)state;
    char buf[64];
    assert_int_equal(sd_token_to_bytes(g_qwen, -1, true, buf, sizeof buf), -1);
    assert_int_equal(sd_token_to_bytes(g_qwen, sd_tokenizer_n_vocab(g_qwen), true, buf, sizeof buf), -1);
    assert_int_equal(sd_token_to_bytes(g_qwen, 151645, false, buf, sizeof buf), 0);
    assert_int_equal(sd_token_to_bytes(g_qwen, 151645, true, buf, sizeof buf), 10);
    assert_memory_equal(buf, "<|im_end|>", 10);
    /* Byte-level: token 198 is "Ċ" = '\n'; 1879 is "Ġworld" = " world". */
    assert_int_equal(sd_token_to_bytes(g_qwen, 198, false, buf, sizeof buf), 1);
    assert_int_equal(buf[0], '\n');
    assert_string_equal(sd_token_text(g_qwen, 1879), "\xC4\xA0world");
    assert_int_equal(sd_token_to_bytes(g_qwen, 1879, false, buf, sizeof buf), 6);
    assert_memory_equal(buf, " world", 6);
    /* A small cap: the full length is returned, only cap bytes written. */
    memset(buf, 'Z', sizeof buf);
    assert_int_equal(sd_token_to_bytes(g_qwen, 1879, false, buf, 2), 6);
    assert_memory_equal(buf, " wZ", 3);
    /* SPM byte token <0x0A> is the newline byte; unknown <unk> hidden. */
    assert_string_equal(sd_token_text(g_spm, 13), "<0x0A>");
    assert_int_equal(sd_token_to_bytes(g_spm, 13, false, buf, sizeof buf), 1);
    assert_int_equal(buf[0], '\n');
    assert_int_equal(sd_token_to_bytes(g_spm, 0, false, buf, sizeof buf), 0);
    assert_null(sd_token_text(g_spm, -5));
}

static void test_same_vocab(void **state) {
    (void)state;
    sd_tokenizer *again = tok_load("qwen2");
    assert_non_null(again);
    assert_true(sd_tokenizer_same_vocab(g_qwen, again));
    assert_false(sd_tokenizer_same_vocab(g_qwen, g_llama3));
    assert_false(sd_tokenizer_same_vocab(g_qwen, g_spm));
    sd_tokenizer_free(again);
    /* qwen35's file has the same tokens as qwen2 (only the pre-tokenizer differs). */
    sd_tokenizer *q35 = tok_load("qwen35");
    assert_true(sd_tokenizer_same_vocab(g_qwen, q35));
    assert_string_equal(sd_tokenizer_pre(q35), "qwen35");
    sd_tokenizer_free(q35);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_parse_special),
        cmocka_unit_test(test_user_defined_always_matched),
        cmocka_unit_test(test_special_text_in_the_middle),
        cmocka_unit_test(test_bos_eos),
        cmocka_unit_test(test_spm_space_prefix_after_special),
        cmocka_unit_test(test_eog),
        cmocka_unit_test(test_token_to_bytes),
        cmocka_unit_test(test_same_vocab),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
