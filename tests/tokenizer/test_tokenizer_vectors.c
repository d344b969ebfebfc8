/* tokenizer: llama.cpp's gold vectors (tests/data/tokenizer, format in its
 * README.md) for the five vocabularies, plus decode(encode(x)) == x. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tok_util.h"

#define TERMINATOR "\n__ggml_vocab_test__\n"

/* Parses one .out line of space-separated ids into ids[]; returns count. */
static size_t parse_ids(const char *line, size_t len, int32_t *ids, size_t cap) {
    size_t n = 0;
    char *end;
    const char *p = line, *stop = line + len;
    while (p < stop) {
        long v = strtol(p, &end, 10);
        if (end == p) break;
        if (n < cap) ids[n] = (int32_t)v;
        n++;
        p = end;
    }
    return n;
}

static bool contains(const char *s, size_t len, const char *needle) {
    size_t m = strlen(needle);
    for (size_t i = 0; i + m <= len; i++)
        if (memcmp(s + i, needle, m) == 0) return true;
    return false;
}

static void print_case(const char *input, size_t len, const int32_t *want, size_t n_want, const int32_t *got,
                       size_t n_got) {
    fprintf(stderr, "  input (%zu bytes): '%.*s'\n  want:", len, (int)len, input);
    for (size_t i = 0; i < n_want; i++) fprintf(stderr, " %d", want[i]);
    fprintf(stderr, "\n  got: ");
    for (size_t i = 0; i < n_got; i++) fprintf(stderr, " %d", got[i]);
    fprintf(stderr, "\n");
}

/* Runs every vector of one vocabulary; asserts all match. */
static void check_vocab(const char *name) {
    sd_tokenizer *tok = tok_load(name);
    assert_non_null(tok);
    char path[256];
    size_t inp_len, out_len;
    snprintf(path, sizeof path, "tests/data/tokenizer/ggml-vocab-%s.gguf.inp", name);
    char *inp = tok_read_file(path, &inp_len);
    snprintf(path, sizeof path, "tests/data/tokenizer/ggml-vocab-%s.gguf.out", name);
    char *out = tok_read_file(path, &out_len);
    assert_non_null(inp);
    assert_non_null(out);

    size_t n_cases = 0, n_match = 0, n_trip = 0, n_trip_ok = 0;
    const char *in = inp, *line = out;
    const size_t tlen = strlen(TERMINATOR);
    const char *t;
    while ((t = strstr(in, TERMINATOR)) != NULL) {
        size_t len = (size_t)(t - in);
        const char *eol = strchr(line, '\n');
        assert_non_null(eol); /* one .out line per test */
        int32_t want[4096];
        size_t n_want = parse_ids(line, (size_t)(eol - line), want, 4096);
        assert_true(n_want <= 4096);

        int32_t *ids = NULL;
        size_t n_ids = 0;
        sd_err err = {0};
        assert_int_equal(sd_tokenize(tok, in, len, false, false, &ids, &n_ids, &err), SD_OK);
        bool same = n_ids == n_want && (n_ids == 0 || memcmp(ids, want, n_ids * sizeof *ids) == 0);
        if (same) n_match++;
        else {
            fprintf(stderr, "%s: vector %zu differs\n", name, n_cases);
            print_case(in, len, want, n_want, ids, n_ids);
        }
        /* Lossless: every byte-level BPE input; SPM unless the text has "▁". */
        bool lossless = sd_tokenizer_type(tok) == SD_TOK_BPE || !contains(in, len, "\xE2\x96\x81");
        if (lossless) {
            char *text;
            size_t text_len;
            n_trip++;
            assert_int_equal(sd_detokenize(tok, ids, n_ids, false, &text, &text_len, &err), SD_OK);
            if (text_len == len && memcmp(text, in, len) == 0) n_trip_ok++;
            else fprintf(stderr, "%s: vector %zu does not round-trip: '%s'\n", name, n_cases, text);
            free(text);
        }
        free(ids);
        n_cases++;
        in = t + tlen;
        line = eol + 1;
    }
    printf("%-10s gold vectors %zu/%zu match, round-trip %zu/%zu\n", name, n_match, n_cases, n_trip_ok, n_trip);
    assert_true(n_cases > 40);
    assert_int_equal(n_match, n_cases);
    assert_int_equal(n_trip_ok, n_trip);
    free(inp);
    free(out);
    sd_tokenizer_free(tok);
}

static void test_qwen2(void **state) { (void)state; check_vocab("qwen2"); }
static void test_qwen35(void **state) { (void)state; check_vocab("qwen35"); }
static void test_llama_bpe(void **state) { (void)state; check_vocab("llama-bpe"); }
static void test_gpt2(void **state) { (void)state; check_vocab("gpt-2"); }
static void test_llama_spm(void **state) { (void)state; check_vocab("llama-spm"); }

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_qwen2),  cmocka_unit_test(test_qwen35),    cmocka_unit_test(test_llama_bpe),
        cmocka_unit_test(test_gpt2),   cmocka_unit_test(test_llama_spm),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
