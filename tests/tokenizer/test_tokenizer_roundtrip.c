/* tokenizer: arbitrary bytes, invalid UTF-8 included, on every vocabulary:
 * ids stay in range and decode(encode(x)) == x (byte-level BPE always; SPM
 * unless x contains "▁" itself or special tokens were parsed: SPM puts a
 * space after each). Long runs must not blow up (no O(n²)). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tok_util.h"

static const char *const NAMES[] = {"qwen2", "qwen35", "llama-bpe", "gpt-2", "llama-spm"};
#define N_VOCABS (sizeof NAMES / sizeof NAMES[0])
static sd_tokenizer *g_tok[N_VOCABS];

static int setup(void **state) {
    (void)state;
    for (size_t i = 0; i < N_VOCABS; i++)
        if (!(g_tok[i] = tok_load(NAMES[i]))) return -1;
    return 0;
}
static int teardown(void **state) {
    (void)state;
    for (size_t i = 0; i < N_VOCABS; i++) sd_tokenizer_free(g_tok[i]);
    return 0;
}

static bool contains(const char *s, size_t n, const char *needle) {
    size_t m = strlen(needle);
    for (size_t i = 0; i + m <= n; i++)
        if (!memcmp(s + i, needle, m)) return true;
    return false;
}

/* Encodes, checks ids, decodes, compares. Returns true if it round-tripped. */
static bool round_trip(const sd_tokenizer *tok, const char *s, size_t n, bool parse_special) {
    int32_t *ids;
    size_t n_ids;
    sd_err err = {0};
    assert_int_equal(sd_tokenize(tok, s, n, false, parse_special, &ids, &n_ids, &err), SD_OK);
    for (size_t i = 0; i < n_ids; i++) assert_true(ids[i] >= 0 && ids[i] < sd_tokenizer_n_vocab(tok));
    char *text;
    size_t len;
    assert_int_equal(sd_detokenize(tok, ids, n_ids, parse_special, &text, &len, &err), SD_OK);
    bool ok = len == n && memcmp(text, s, n) == 0;
    free(text);
    free(ids);
    return ok;
}

static void test_random_bytes(void **state) {
    (void)state;
    /* Pieces chosen to hit every byte class: ASCII, spaces/newlines, valid
     * multi-byte, marks, truncated and invalid sequences, special-token texts. */
    static const char *const parts[] = {
        "a", "Z", "7", " ", "  ", "\n", "\r\n", "\t", "'s", "'LL", ".", "!!", "\xC3\xA9", "\xE4\xB8\x96",
        "\xF0\x9F\x9A\x80", "\xCC\x81", "\xE4\xB8", "\xF0\x9F", "\xFF", "\x80", "\xC0\xAF", "\xED\xA0\x80",
        "\xC2\x85", "\xE3\x80\x80", "<|im_end|>", "<s>", "[PAD151646]", "<|endoftext|>", "\x00", "\xE2\x96\x81",
    };
    const size_t n_parts = sizeof parts / sizeof parts[0];
    uint64_t rng = 99;
    char s[512];
    for (size_t v = 0; v < N_VOCABS; v++) {
        size_t n_trips = 0, n_ok = 0;
        for (int round = 0; round < 200; round++) {
            size_t n = 0;
            int k = round % 48;
            for (int j = 0; j < k; j++) {
                rng = rng * 6364136223846793005ull + 1442695040888963407ull;
                const char *p = parts[(rng >> 33) % n_parts];
                size_t pl = p[0] ? strlen(p) : 1; /* "\x00" is one NUL byte */
                memcpy(s + n, p, pl);
                n += pl;
            }
            bool bpe = sd_tokenizer_type(g_tok[v]) == SD_TOK_BPE;
            for (int ps = 0; ps < 2; ps++) {
                bool ok = round_trip(g_tok[v], s, n, ps);
                /* SPM puts a space after every special token it parses. */
                bool lossless = bpe || (!ps && !contains(s, n, "\xE2\x96\x81"));
                if (lossless) {
                    n_trips++;
                    n_ok += ok;
                    if (!ok) fprintf(stderr, "%s: round %d (parse_special %d) does not round-trip\n", NAMES[v], round, ps);
                }
            }
        }
        printf("%-10s random-bytes round-trip %zu/%zu\n", NAMES[v], n_ok, n_trips);
        assert_true(n_trips > 100);
        assert_int_equal(n_ok, n_trips);
    }
}

static void test_long_runs(void **state) {
    (void)state;
    /* 16 KiB of one character class at a time: one huge word each. */
    static const char unit[][5] = {" ", "a", "\n", "7", "\xFF", "\xE4\xB8\x96", "!"};
    const size_t n = 1 << 14;
    char *s = malloc(n);
    for (size_t u = 0; u < sizeof unit / sizeof unit[0]; u++) {
        size_t ul = strlen(unit[u]), len = n - n % ul;
        for (size_t i = 0; i < len; i += ul) memcpy(s + i, unit[u], ul);
        for (size_t v = 0; v < N_VOCABS; v++) assert_true(round_trip(g_tok[v], s, len, false));
    }
    free(s);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_random_bytes),
        cmocka_unit_test(test_long_runs),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
