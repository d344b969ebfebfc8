/* tokenizer: streaming detokenizer. UTF-8 split across tokens is held back
 * until complete; invalid bytes become U+FFFD, one per maximal subpart
 * (Unicode §3.9, as Python's bytes.decode('utf-8', 'replace')). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "tok_util.h"

#define FFFD "\xEF\xBF\xBD"

static sd_tokenizer *g_tok;

static int setup(void **state) {
    (void)state;
    g_tok = tok_load("qwen2");
    return g_tok ? 0 : -1;
}
static int teardown(void **state) {
    (void)state;
    sd_tokenizer_free(g_tok);
    return 0;
}

/* The one token that encodes the single byte b (byte-level BPE has one per byte). */
static int32_t byte_token(uint8_t b) {
    int32_t *ids;
    size_t n;
    sd_err err = {0};
    assert_int_equal(sd_tokenize(g_tok, (const char *)&b, 1, false, false, &ids, &n, &err), SD_OK);
    assert_int_equal(n, 1);
    int32_t id = ids[0];
    free(ids);
    return id;
}

/* Streams the bytes of s (one byte token each) then flushes; writes all output to out. */
static size_t stream_bytes(const char *s, size_t n, char *out, size_t cap) {
    sd_detok d;
    sd_detok_init(&d);
    size_t w = 0;
    for (size_t i = 0; i < n; i++) w += sd_detok_push(&d, g_tok, byte_token((uint8_t)s[i]), out + w, cap - w);
    w += sd_detok_flush(&d, out + w, cap - w);
    return w;
}

static void test_split_character_held_back(void **state) {
    (void)state;
    char out[64];
    sd_detok d;
    sd_detok_init(&d);
    /* 世 = E4 B8 96: nothing until the third byte. */
    assert_int_equal(sd_detok_push(&d, g_tok, byte_token(0xE4), out, sizeof out), 0);
    assert_int_equal(sd_detok_push(&d, g_tok, byte_token(0xB8), out, sizeof out), 0);
    /* A control token in between prints nothing and keeps what is held. */
    assert_int_equal(sd_detok_push(&d, g_tok, 151645, out, sizeof out), 0);
    assert_int_equal(sd_detok_push(&d, g_tok, byte_token(0x96), out, sizeof out), 3);
    assert_memory_equal(out, "\xE4\xB8\x96", 3);
    assert_int_equal(sd_detok_flush(&d, out, sizeof out), 0);
    /* 🚀 = F0 9F 9A 80 split 2 + 2, then an ordinary token. */
    int32_t *ids;
    size_t n;
    sd_err err = {0};
    assert_int_equal(sd_tokenize(g_tok, "\xF0\x9F", 2, false, false, &ids, &n, &err), SD_OK);
    size_t w = 0;
    for (size_t i = 0; i < n; i++) w += sd_detok_push(&d, g_tok, ids[i], out + w, sizeof out - w);
    free(ids);
    assert_int_equal(w, 0);
    assert_int_equal(sd_tokenize(g_tok, "\x9A\x80 ok", 5, false, false, &ids, &n, &err), SD_OK);
    for (size_t i = 0; i < n; i++) w += sd_detok_push(&d, g_tok, ids[i], out + w, sizeof out - w);
    free(ids);
    assert_int_equal(w, 7);
    assert_memory_equal(out, "\xF0\x9F\x9A\x80 ok", 7);
}

static void test_invalid_bytes_replaced(void **state) {
    (void)state;
    static const struct {
        const char *in, *want;
    } cases[] = {
        /* expected outputs from Python 3 bytes.decode('utf-8', 'replace') */
        {"\xE4\xB8" "a", FFFD "a"},
        {"\xF0\x9F\x9A", FFFD},
        {"\xED\xA0\x80", FFFD FFFD FFFD}, /* surrogate */
        {"\xC0\xAF", FFFD FFFD},          /* overlong */
        {"\xF4\x90\x80\x80", FFFD FFFD FFFD FFFD}, /* > U+10FFFF */
        {"\xE4\xE4\xB8\x96", FFFD "\xE4\xB8\x96"},
        {"\xF0\x9F\x9A" "a\x80", FFFD "a" FFFD},
        {"\xFF", FFFD},
    };
    char out[64];
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t w = stream_bytes(cases[c].in, strlen(cases[c].in), out, sizeof out);
        assert_int_equal(w, strlen(cases[c].want));
        assert_memory_equal(out, cases[c].want, w);
    }
}

/* Reference decoder with replacement, written independently of the library:
 * Unicode Table 3-7 ranges, maximal subpart -> one U+FFFD. */
static size_t ref_decode(const uint8_t *s, size_t n, char *out) {
    size_t w = 0;
    for (size_t i = 0; i < n;) {
        uint8_t c = s[i];
        int need = c < 0x80 ? 1 : c >= 0xC2 && c <= 0xDF ? 2 : c >= 0xE0 && c <= 0xEF ? 3 : c >= 0xF0 && c <= 0xF4 ? 4 : 0;
        size_t ok = need ? 1 : 0;
        while (need && ok < (size_t)need && i + ok < n) {
            uint8_t b = s[i + ok], lo = 0x80, hi = 0xBF;
            if (ok == 1 && c == 0xE0) lo = 0xA0;
            if (ok == 1 && c == 0xED) hi = 0x9F;
            if (ok == 1 && c == 0xF0) lo = 0x90;
            if (ok == 1 && c == 0xF4) hi = 0x8F;
            if (b < lo || b > hi) break;
            ok++;
        }
        if (need && ok == (size_t)need) memcpy(out + w, s + i, ok), w += ok;
        else memcpy(out + w, FFFD, 3), w += 3;
        i += ok ? ok : 1;
    }
    return w;
}

static void test_stream_equals_one_shot(void **state) {
    (void)state;
    /* Random id sequences biased to short, multi-byte and byte tokens: the
     * streamed output equals the reference decode of the concatenated pieces. */
    uint64_t rng = 12345;
    int32_t n_vocab = sd_tokenizer_n_vocab(g_tok);
    char *out = malloc(1 << 16), *ref = malloc(1 << 16);
    uint8_t *raw = malloc(1 << 14);
    size_t cap = sd_detok_cap(g_tok);
    for (int round = 0; round < 300; round++) {
        sd_detok d;
        sd_detok_init(&d);
        size_t w = 0, r = 0;
        int len = 1 + round % 40;
        for (int k = 0; k < len; k++) {
            rng = rng * 6364136223846793005ull + 1442695040888963407ull;
            uint32_t x = (uint32_t)(rng >> 33);
            int32_t id = x % 4 == 0 ? byte_token((uint8_t)(x >> 8)) : (int32_t)(x % (uint32_t)n_vocab);
            char piece[1024];
            int pn = sd_token_to_bytes(g_tok, id, false, piece, sizeof piece);
            assert_true(pn >= 0 && pn <= (int)sizeof piece);
            memcpy(raw + r, piece, (size_t)pn);
            r += (size_t)pn;
            size_t got = sd_detok_push(&d, g_tok, id, out + w, cap);
            assert_true(got <= cap);
            w += got;
        }
        w += sd_detok_flush(&d, out + w, 3);
        size_t rn = ref_decode(raw, r, ref);
        assert_int_equal(w, rn);
        assert_memory_equal(out, ref, w);
    }
    free(out), free(ref), free(raw);
}

static void test_small_cap_never_overflows(void **state) {
    (void)state;
    char out[8];
    memset(out, '#', sizeof out);
    sd_detok d;
    sd_detok_init(&d);
    /* " world" is 6 bytes; with cap 4 at most 4 are written. */
    size_t w = sd_detok_push(&d, g_tok, 1879, out, 4);
    assert_true(w <= 4);
    assert_int_equal(out[4], '#');
    assert_int_equal(sd_detok_push(&d, g_tok, -3, out, sizeof out), 0); /* out of range: ignored */
    assert_true(sd_detok_cap(g_tok) >= 3 * (sd_tokenizer_max_piece(g_tok) + 4));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_split_character_held_back),
        cmocka_unit_test(test_invalid_bytes_replaced),
        cmocka_unit_test(test_stream_equals_one_shot),
        cmocka_unit_test(test_small_cap_never_overflows),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
