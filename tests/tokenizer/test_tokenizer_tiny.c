/* tokenizer: hand-made vocabularies where every id is known (merge-rank and
 * score priority, ignore_merges, byte fallback, unknown token), and hostile or
 * inconsistent metadata, which must give an error code, never a crash. */
#define _POSIX_C_SOURCE 200809L /* mkdtemp */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/gguf.h"
#include "tokenizer/tokenizer.h"

static char g_dir[256], g_path[300];

static int setup(void **state) {
    (void)state;
    snprintf(g_dir, sizeof g_dir, "/tmp/sd_tok_tiny_XXXXXX");
    if (!mkdtemp(g_dir)) return -1;
    snprintf(g_path, sizeof g_path, "%s/v.gguf", g_dir);
    return 0;
}
static int teardown(void **state) {
    (void)state;
    unlink(g_path);
    rmdir(g_dir);
    return 0;
}

static void set_strs(gguf_writer *w, const char *key, const char *const *s, size_t n) {
    uint64_t lens[64];
    assert_true(n <= 64);
    for (size_t i = 0; i < n; i++) lens[i] = strlen(s[i]);
    assert_int_equal(gguf_writer_set_arr_str(w, key, s, lens, n), SD_OK);
}

/* Writes w to the temp file and builds a tokenizer from it (the GGUF is closed
 * again before returning). Returns the status; *out set on success. */
static sd_status load(gguf_writer *w, sd_tokenizer **out, sd_err *err) {
    *out = NULL;
    assert_int_equal(gguf_writer_write(w, g_path, err), SD_OK);
    gguf_writer_free(w);
    gguf_ctx *ctx;
    assert_int_equal(gguf_open(g_path, &ctx, err), SD_OK);
    sd_status st = sd_tokenizer_init(ctx, out, err);
    gguf_close(ctx);
    return st;
}

static size_t enc(const sd_tokenizer *tok, const char *s, int32_t *ids, size_t cap) {
    int32_t *v;
    size_t n;
    sd_err err = {0};
    assert_int_equal(sd_tokenize(tok, s, strlen(s), false, false, &v, &n, &err), SD_OK);
    assert_true(n <= cap);
    memcpy(ids, v, n * sizeof *v);
    free(v);
    return n;
}

/* Byte-level BPE: tokens a b c ab bc abc (ids 0..5). */
static gguf_writer *tiny_bpe(const char *pre, const char *const *merges, size_t n_merges) {
    static const char *const tokens[] = {"a", "b", "c", "ab", "bc", "abc"};
    gguf_writer *w = gguf_writer_init();
    assert_non_null(w);
    gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2", 4);
    gguf_writer_set_str(w, "tokenizer.ggml.pre", pre, strlen(pre));
    set_strs(w, "tokenizer.ggml.tokens", tokens, 6);
    set_strs(w, "tokenizer.ggml.merges", merges, n_merges);
    return w;
}

static void test_bpe_merge_rank_order(void **state) {
    (void)state;
    sd_tokenizer *tok;
    sd_err err = {0};
    int32_t ids[16];
    /* "b c" has the better rank: abc -> a + bc, and (a, bc) has no merge. */
    static const char *const m1[] = {"b c", "a b", "ab c"};
    assert_int_equal(load(tiny_bpe("gpt-2", m1, 3), &tok, &err), SD_OK);
    assert_int_equal(enc(tok, "abc", ids, 16), 2);
    assert_int_equal(ids[0], 0);
    assert_int_equal(ids[1], 4);
    sd_tokenizer_free(tok);
    /* "a b" first: ab, then "ab c" -> abc. */
    static const char *const m2[] = {"a b", "b c", "ab c"};
    assert_int_equal(load(tiny_bpe("gpt-2", m2, 3), &tok, &err), SD_OK);
    assert_int_equal(enc(tok, "abc", ids, 16), 1);
    assert_int_equal(ids[0], 5);
    /* Equal candidates: the leftmost merges first ("abab" -> ab ab). A byte
     * no token covers ("d") is dropped, as in llama.cpp. */
    assert_int_equal(enc(tok, "ababd", ids, 16), 2);
    assert_int_equal(ids[0], 3);
    assert_int_equal(ids[1], 3);
    sd_tokenizer_free(tok);
}

static void test_bpe_ignore_merges(void **state) {
    (void)state;
    sd_tokenizer *tok;
    sd_err err = {0};
    int32_t ids[16];
    static const char *const m[] = {"a b"}; /* nothing makes "abc" */
    assert_int_equal(load(tiny_bpe("gpt-2", m, 1), &tok, &err), SD_OK);
    assert_int_equal(enc(tok, "abc", ids, 16), 2); /* ab c */
    sd_tokenizer_free(tok);
    /* llama3 pre-tokenizer: a word that is a token is taken whole. */
    assert_int_equal(load(tiny_bpe("llama-bpe", m, 1), &tok, &err), SD_ERR_FORMAT); /* add_bos without bos */
    gguf_writer *w = tiny_bpe("llama-bpe", m, 1);
    gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 2);
    assert_int_equal(load(w, &tok, &err), SD_OK);
    assert_int_equal(enc(tok, "abc", ids, 16), 1);
    assert_int_equal(ids[0], 5);
    sd_tokenizer_free(tok);
}

static void test_bpe_malformed_merges_skipped(void **state) {
    (void)state;
    sd_tokenizer *tok;
    sd_err err = {0};
    int32_t ids[16];
    static const char *const m[] = {"ab", " a", "\xFF b", "a b c", "", "a b"};
    assert_int_equal(load(tiny_bpe("gpt-2", m, 6), &tok, &err), SD_OK);
    assert_int_equal(enc(tok, "ab", ids, 16), 1); /* only "a b" (rank 5) applies */
    assert_int_equal(ids[0], 3);
    sd_tokenizer_free(tok);
}

/* SPM: <unk> <s> </s> ▁ a b ab ▁a <0x63> (ids 0..8). */
static gguf_writer *tiny_spm(float score_ab, float score_space_a) {
    static const char *const tokens[] = {"<unk>", "<s>", "</s>", "\xE2\x96\x81", "a", "b", "ab", "\xE2\x96\x81" "a", "<0x63>"};
    const int32_t types[] = {2, 3, 3, 1, 1, 1, 1, 1, 6};
    const float scores[] = {0, 0, 0, -1, -1, -1, score_ab, score_space_a, 0};
    gguf_writer *w = gguf_writer_init();
    assert_non_null(w);
    gguf_writer_set_str(w, "tokenizer.ggml.model", "llama", 5);
    set_strs(w, "tokenizer.ggml.tokens", tokens, 9);
    gguf_writer_set_arr_data(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, 9);
    gguf_writer_set_arr_data(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, scores, 9);
    return w;
}

static void test_spm_score_order_and_fallback(void **state) {
    (void)state;
    sd_tokenizer *tok;
    sd_err err = {0};
    int32_t ids[16];
    /* "ab" -> "▁ab": candidates ▁a and ab; the higher score merges first. */
    assert_int_equal(load(tiny_spm(-2.0f, -3.0f), &tok, &err), SD_OK);
    assert_int_equal(enc(tok, "ab", ids, 16), 2);
    assert_int_equal(ids[0], 3), assert_int_equal(ids[1], 6);
    /* c: no token "c" -> byte token <0x63>; d: neither -> <unk>. */
    assert_int_equal(enc(tok, "cd", ids, 16), 3);
    assert_int_equal(ids[0], 3), assert_int_equal(ids[1], 8), assert_int_equal(ids[2], 0);
    assert_int_equal(sd_tokenizer_bos(tok), 1); /* SPM defaults */
    assert_int_equal(sd_tokenizer_eos(tok), 2);
    sd_tokenizer_free(tok);
    assert_int_equal(load(tiny_spm(-3.0f, -2.0f), &tok, &err), SD_OK);
    assert_int_equal(enc(tok, "ab", ids, 16), 2);
    assert_int_equal(ids[0], 7), assert_int_equal(ids[1], 5);
    sd_tokenizer_free(tok);
    /* Equal scores: the leftmost pair (▁a) wins. */
    assert_int_equal(load(tiny_spm(-2.0f, -2.0f), &tok, &err), SD_OK);
    assert_int_equal(enc(tok, "ab", ids, 16), 2);
    assert_int_equal(ids[0], 7);
    sd_tokenizer_free(tok);
    /* add_space_prefix false: no "▁" in front. */
    gguf_writer *w = tiny_spm(-2.0f, -3.0f);
    gguf_writer_set_bool(w, "tokenizer.ggml.add_space_prefix", false);
    assert_int_equal(load(w, &tok, &err), SD_OK);
    assert_int_equal(enc(tok, "ab", ids, 16), 1);
    assert_int_equal(ids[0], 6);
    sd_tokenizer_free(tok);
}

static void test_hostile_metadata(void **state) {
    (void)state;
    sd_tokenizer *tok;
    sd_err err = {0};
    static const char *const toks[] = {"a", "b"};
    static const char *const dup[] = {"a", "a"};
    static const char *const m[] = {"a b"};
    const int32_t types1[] = {1};
    const float fscores[] = {0, 0};
    gguf_writer *w;

    w = gguf_writer_init(); /* no tokenizer.ggml.model */
    set_strs(w, "tokenizer.ggml.tokens", toks, 2);
    assert_int_equal(load(w, &tok, &err), SD_ERR_FORMAT);
    assert_null(tok);

    w = gguf_writer_init();
    gguf_writer_set_str(w, "tokenizer.ggml.model", "bert", 4);
    assert_int_equal(load(w, &tok, &err), SD_ERR_UNSUPPORTED);

    w = tiny_bpe("nonsense", m, 1);
    assert_int_equal(load(w, &tok, &err), SD_ERR_UNSUPPORTED);

    w = gguf_writer_init(); /* gpt2 without merges */
    gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2", 4);
    set_strs(w, "tokenizer.ggml.tokens", toks, 2);
    assert_int_equal(load(w, &tok, &err), SD_ERR_FORMAT);

    w = gguf_writer_init(); /* no tokens */
    gguf_writer_set_str(w, "tokenizer.ggml.model", "llama", 5);
    assert_int_equal(load(w, &tok, &err), SD_ERR_FORMAT);

    w = gguf_writer_init(); /* tokens of the wrong type */
    gguf_writer_set_str(w, "tokenizer.ggml.model", "llama", 5);
    gguf_writer_set_arr_data(w, "tokenizer.ggml.tokens", GGUF_TYPE_INT32, types1, 1);
    assert_int_equal(load(w, &tok, &err), SD_ERR_FORMAT);

    w = gguf_writer_init(); /* duplicate token text */
    gguf_writer_set_str(w, "tokenizer.ggml.model", "llama", 5);
    set_strs(w, "tokenizer.ggml.tokens", dup, 2);
    assert_int_equal(load(w, &tok, &err), SD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "duplicate"));

    w = gguf_writer_init(); /* token_type shorter than tokens */
    gguf_writer_set_str(w, "tokenizer.ggml.model", "llama", 5);
    set_strs(w, "tokenizer.ggml.tokens", toks, 2);
    gguf_writer_set_arr_data(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types1, 1);
    assert_int_equal(load(w, &tok, &err), SD_ERR_FORMAT);

    w = gguf_writer_init(); /* token_type as float */
    gguf_writer_set_str(w, "tokenizer.ggml.model", "llama", 5);
    set_strs(w, "tokenizer.ggml.tokens", toks, 2);
    gguf_writer_set_arr_data(w, "tokenizer.ggml.token_type", GGUF_TYPE_FLOAT32, fscores, 2);
    assert_int_equal(load(w, &tok, &err), SD_ERR_FORMAT);

    w = gguf_writer_init(); /* scores shorter than tokens */
    gguf_writer_set_str(w, "tokenizer.ggml.model", "llama", 5);
    set_strs(w, "tokenizer.ggml.tokens", toks, 2);
    gguf_writer_set_arr_data(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, fscores, 1);
    assert_int_equal(load(w, &tok, &err), SD_ERR_FORMAT);

    w = gguf_writer_init(); /* scores as a string */
    gguf_writer_set_str(w, "tokenizer.ggml.model", "llama", 5);
    set_strs(w, "tokenizer.ggml.tokens", toks, 2);
    gguf_writer_set_str(w, "tokenizer.ggml.scores", "x", 1);
    assert_int_equal(load(w, &tok, &err), SD_ERR_FORMAT);

    w = gguf_writer_init(); /* a token over the 1 MiB limit */
    gguf_writer_set_str(w, "tokenizer.ggml.model", "llama", 5);
    {
        size_t big_len = (1 << 20) + 1;
        char *big = malloc(big_len + 1);
        memset(big, 'x', big_len);
        big[big_len] = '\0';
        const char *const huge[] = {"a", big};
        set_strs(w, "tokenizer.ggml.tokens", huge, 2);
        free(big);
    }
    assert_int_equal(load(w, &tok, &err), SD_ERR_FORMAT);

    w = tiny_bpe("gpt-2", m, 1); /* add_bos_token without a bos id (gpt2 has no default) */
    gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", true);
    gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1000000);
    assert_int_equal(load(w, &tok, &err), SD_ERR_FORMAT);
}

static void test_odd_but_valid_metadata(void **state) {
    (void)state;
    sd_tokenizer *tok;
    sd_err err = {0};
    static const char *const toks[] = {"a", "", "b", "x"};
    const int32_t types[] = {1, 1, 99, 5};
    gguf_writer *w = gguf_writer_init();
    gguf_writer_set_str(w, "tokenizer.ggml.model", "llama", 5);
    set_strs(w, "tokenizer.ggml.tokens", toks, 4);
    gguf_writer_set_arr_data(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, 4);
    gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 4000000000u); /* out of range: default kept */
    assert_int_equal(load(w, &tok, &err), SD_OK);
    assert_string_equal(sd_token_text(tok, 1), "[EMPTY_1]"); /* llama.cpp's placeholder */
    assert_int_equal(sd_tokenizer_eos(tok), 2);
    char buf[8];
    assert_int_equal(sd_token_to_bytes(tok, 2, true, buf, sizeof buf), 0); /* undefined type: no text */
    assert_int_equal(sd_token_to_bytes(tok, 3, true, buf, sizeof buf), 0); /* unused */
    assert_int_equal(sd_token_to_bytes(tok, 0, true, buf, sizeof buf), 1);
    sd_tokenizer_free(tok);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_bpe_merge_rank_order),
        cmocka_unit_test(test_bpe_ignore_merges),
        cmocka_unit_test(test_bpe_malformed_merges_skipped),
        cmocka_unit_test(test_spm_score_order_and_fallback),
        cmocka_unit_test(test_hostile_metadata),
        cmocka_unit_test(test_odd_but_valid_metadata),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
