/* tokenizer/pretokenize: the regex word splits of each pre-tokenizer, on
 * cases the gold vectors do not separate (qwen35 vs qwen2 differ only in
 * combining marks, which the vectors' BPE merges happen to hide), and the
 * tiling property on arbitrary bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/pretokenize.h"

/* Splits s with pre-tokenizer name and returns the words joined by '|'. */
static char *split(const char *name, const char *s, size_t len) {
    sd_pretok *p;
    bool ignore, bos;
    sd_err err = {0};
    assert_int_equal(sd_pretok_init(name, strlen(name), &p, &ignore, &bos, &err), SD_OK);
    sd_spans w = {0};
    assert_int_equal(sd_pretok_split(p, s, len, &w, &err), SD_OK);
    char *out = malloc(2 * len + 2);
    size_t n = 0;
    for (size_t i = 0; i < w.n; i++) {
        if (i) out[n++] = '|';
        memcpy(out + n, s + w.v[i].off, w.v[i].len);
        n += w.v[i].len;
    }
    out[n] = '\0';
    free(w.v);
    sd_pretok_free(p);
    return out;
}

static void expect(const char *name, const char *in, const char *want) {
    char *got = split(name, in, strlen(in));
    if (strcmp(got, want)) fprintf(stderr, "%s: '%s' -> '%s', want '%s'\n", name, in, got, want);
    assert_string_equal(got, want);
    free(got);
}

static void test_marks_qwen35_vs_qwen2(void **state) {
    (void)state;
    /* "re" U+0301 "sume" U+0301: qwen35 keeps marks with letters ([\p{L}\p{M}]+). */
    const char *s = "re\xCC\x81sume\xCC\x81 ok";
    expect("qwen35", s, "re\xCC\x81sume\xCC\x81| ok");
    expect("qwen2", s, "re|\xCC\x81sume|\xCC\x81| ok"); /* a mark is the optional [^\r\n\p{L}\p{N}] */
}

static void test_digits(void **state) {
    (void)state;
    expect("qwen2", "x 12345", "x| |1|2|3|4|5");
    expect("llama-bpe", "x 12345", "x| |123|45");
    expect("gpt-2", "x 12345", "x| 12345");
    expect("default", "x 12345", "x| |123|45"); /* \p{N}+ then [0-9]{3} */
}

static void test_whitespace(void **state) {
    (void)state;
    /* \s+(?!\S): a run of spaces leaves its last one to the next word. */
    expect("qwen2", "a   b", "a|  | b");
    expect("gpt-2", "a   b  ", "a|  | b|  ");
    /* \s*[\r\n]+ keeps newlines with the spaces before them (llama3/qwen2); gpt-2 has
     * only \s+(?!\S), leaving the last one. (Expected splits: Python `regex` module.) */
    expect("llama-bpe", "a  \n\nb", "a|  \n\n|b");
    expect("gpt-2", "a \n\nb", "a| \n|\n|b");
    /* U+0085 and U+3000 are White_Space (as in the Rust/Oniguruma regexes). */
    expect("qwen2", "a\xC2\x85\xC2\x85" "b", "a|\xC2\x85|\xC2\x85" "b");
    expect("qwen2", "a\xE3\x80\x80\xE3\x80\x80" "b", "a|\xE3\x80\x80|\xE3\x80\x80" "b");
}

static void test_contractions(void **state) {
    (void)state;
    expect("llama-bpe", "I'LL we'Ve", "I|'LL| we|'Ve");
    expect("gpt-2", "I'LL we've", "I|'|LL| we|'ve"); /* gpt-2 is case-sensitive */
}

static void test_invalid_utf8_kept_apart(void **state) {
    (void)state;
    /* Invalid bytes never match: they form words of their own, nothing is lost. */
    expect("qwen2", "ab\xFF" "cd", "ab|\xFF|cd");
    expect("qwen2", "ab\xE4\xB8 x", "ab|\xE4\xB8| x");
}

static void test_words_tile_input(void **state) {
    (void)state;
    static const char *names[] = {"qwen2", "qwen35", "llama-bpe", "gpt-2", "default"};
    static const char alphabet[] = " \n\t'aZ9.\xC3\xA9\xE4\xB8\x96\xCC\x81\xF0\x9F\x9A\x80\xFF\x80\xC2\x85";
    uint64_t rng = 7;
    for (size_t k = 0; k < sizeof names / sizeof names[0]; k++) {
        sd_pretok *p;
        bool ignore, bos;
        sd_err err = {0};
        assert_int_equal(sd_pretok_init(names[k], strlen(names[k]), &p, &ignore, &bos, &err), SD_OK);
        sd_spans w = {0};
        for (int round = 0; round < 300; round++) {
            char s[96];
            size_t len = (size_t)round % sizeof s;
            for (size_t i = 0; i < len; i++) {
                rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                s[i] = alphabet[(rng >> 33) % (sizeof alphabet - 1)];
            }
            assert_int_equal(sd_pretok_split(p, s, len, &w, &err), SD_OK);
            size_t at = 0;
            for (size_t i = 0; i < w.n; i++) {
                assert_int_equal(w.v[i].off, at); /* contiguous, in order */
                assert_true(w.v[i].len > 0);
                at += w.v[i].len;
            }
            assert_int_equal(at, len);
        }
        free(w.v);
        sd_pretok_free(p);
    }
}

static void test_names(void **state) {
    (void)state;
    sd_pretok *p;
    bool ignore, bos;
    sd_err err = {0};
    assert_int_equal(sd_pretok_init("nonsense", 8, &p, &ignore, &bos, &err), SD_ERR_UNSUPPORTED);
    assert_null(p);
    assert_non_null(strstr(err.msg, "nonsense"));
    assert_int_equal(sd_pretok_init("llama-bpe", 9, &p, &ignore, &bos, &err), SD_OK);
    assert_true(ignore && bos);
    sd_pretok_free(p);
    assert_int_equal(sd_pretok_init("", 0, &p, &ignore, &bos, &err), SD_OK); /* missing key = default */
    assert_false(ignore || bos);
    sd_pretok_free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_marks_qwen35_vs_qwen2), cmocka_unit_test(test_digits),
        cmocka_unit_test(test_whitespace),            cmocka_unit_test(test_contractions),
        cmocka_unit_test(test_invalid_utf8_kept_apart), cmocka_unit_test(test_words_tile_input),
        cmocka_unit_test(test_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
