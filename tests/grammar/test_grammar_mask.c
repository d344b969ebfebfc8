/* Token masks (src/grammar/mask.c) against two references:
 *  - a brute-force walk: every token of the vocabulary fed byte by byte to a
 *    second, fresh matcher (no trie, no mask cache), for grammars of every
 *    construct, along random constrained walks, on the fixture models' own
 *    vocabularies and on Qwen3.5's 248k-token vocabulary;
 *  - for grammars with a finite language, the language itself enumerated
 *    in the test: a token is allowed iff some sentence starts with the text
 *    so far plus the token's bytes (end of generation iff the text so far is
 *    a sentence). This one shares no code with the recognizer. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "format/gguf.h"
#include "grammar/grammar.h"
#include "tokenizer/tokenizer.h"

static sd_tokenizer *load_vocab(const char *path) {
    gguf_ctx *ctx = NULL;
    sd_tokenizer *tok = NULL;
    sd_err err = {0};
    if (gguf_open(path, &ctx, &err) != SD_OK || sd_tokenizer_init(ctx, &tok, &err) != SD_OK)
        fail_msg("%s: %s", path, err.msg);
    gguf_close(ctx);
    return tok;
}

static uint64_t rng_next(uint64_t *s) {
    *s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
    return *s;
}

static int bit(const uint32_t *w, int32_t id) { return (w[id >> 5] >> (id & 31)) & 1; }

/* The brute-force mask: each token walked on its own through matcher b. */
static void brute_mask(sd_gmatch *b, int32_t state, int32_t n_vocab, uint32_t *out) {
    memset(out, 0, sizeof *out * (size_t)((n_vocab + 31) / 32));
    for (int32_t id = 0; id < n_vocab; id++)
        if (sd_gmatch_token(b, state, id) >= 0) out[id >> 5] |= 1u << (id & 31);
}

/* Walks `steps` random allowed tokens from the start, comparing the mask
 * with the brute force at each; returns the number of masks compared. */
static int check_walks(const sd_tokenizer *tok, const char *gbnf, int walks, int steps, uint64_t seed) {
    sd_grammar *g = NULL;
    sd_err err = {0};
    if (sd_grammar_compile(gbnf, strlen(gbnf), NULL, tok, &g, &err) != SD_OK) fail_msg("%s", err.msg);
    sd_gmatch *m = NULL, *b = NULL;
    assert_int_equal(sd_gmatch_init(g, tok, &m, &err), SD_OK);
    int32_t nv = sd_tokenizer_n_vocab(tok);
    uint32_t *ref = malloc(sizeof *ref * (size_t)((nv + 31) / 32));
    int32_t *allowed = malloc(sizeof *allowed * (size_t)nv);
    int compared = 0;
    for (int w = 0; w < walks; w++) {
        assert_int_equal(sd_gmatch_init(g, tok, &b, &err), SD_OK); /* fresh: no shared cache */
        int32_t s = sd_gmatch_start(m), sb = sd_gmatch_start(b);
        for (int k = 0; k < steps; k++) {
            const uint32_t *mask = sd_gmatch_mask(m, s, &err);
            if (!mask) fail_msg("mask: %s", err.msg);
            brute_mask(b, sb, nv, ref);
            int32_t n_allowed = 0;
            for (int32_t id = 0; id < nv; id++) {
                if (bit(mask, id) != bit(ref, id)) {
                    char piece[64] = {0};
                    sd_token_to_bytes(tok, id, true, piece, sizeof piece - 1);
                    fail_msg("grammar:\n%s\nwalk %d step %d: token %d (\"%s\") mask %d brute force %d", gbnf, w, k, id,
                             piece, bit(mask, id), bit(ref, id));
                }
                if (bit(ref, id)) allowed[n_allowed++] = id;
            }
            compared++;
            if (!n_allowed) break;
            int32_t pick = allowed[rng_next(&seed) % (uint64_t)n_allowed];
            if (sd_tokenizer_is_eog(tok, pick)) break;
            s = sd_gmatch_token(m, s, pick);
            sb = sd_gmatch_token(b, sb, pick);
            assert_true(s >= 0 && sb >= 0);
        }
        sd_gmatch_free(b);
    }
    free(ref), free(allowed);
    sd_gmatch_free(m);
    sd_grammar_free(g);
    return compared;
}

static const char *grammars[] = {
    "root ::= \"{\" ws \"\\\"town\\\":\" ws str ws \"}\"\nstr ::= \"\\\"\" [^\"\\\\]* \"\\\"\"\nws ::= [ \\n]?",
    "root ::= expr\nexpr ::= term ((\"+\" | \"-\") term)*\nterm ::= [0-9]+ | \"(\" expr \")\"",
    "root ::= (item \"\\n\")+\nitem ::= \"- \" [a-zA-Z ]{1,12}",
    "root ::= [^a]* \"a\"",
    "root ::= .{0,6} \"the\"",
    "root ::= (\"if\" | \"int\" | \"in\" | \"while\" | [ \\t]+ | [a-z_]+ | \"(\" | \")\")*",
    "root ::= move (\" \" move){0,3}\nmove ::= [KQRBN]? [a-h] [1-8] | \"O-O\" \"-O\"?",
    "root ::= [\\u00c0-\\u024f\\u3040-\\u30ff]+ \".\"",
};

static void run_vocab(const char *path, int walks, int steps) {
    sd_tokenizer *tok = load_vocab(path);
    int total = 0;
    for (size_t i = 0; i < sizeof grammars / sizeof *grammars; i++)
        total += check_walks(tok, grammars[i], walks, steps, 0x9E3779B97F4A7C15ull + i);
    print_message("%s: %d masks equal to the brute force (n_vocab %d)\n", path, total, sd_tokenizer_n_vocab(tok));
    sd_tokenizer_free(tok);
}

static void test_fixture_vocab(void **state) {
    (void)state;
    run_vocab("models/fixture-target.gguf", 3, 12);
    run_vocab("models/fixture-q35-target.gguf", 3, 12);
    run_vocab("tests/data/tokenizer/ggml-vocab-llama-spm.gguf", 2, 8);
}

static void test_qwen35_vocab(void **state) {
    (void)state;
    int slow = getenv("SD_ASAN") || getenv("SD_TEST_EMULATED"); /* a brute-force mask is 152k walks */
    run_vocab("tests/data/tokenizer/ggml-vocab-qwen35.gguf", 1, slow ? 2 : 4);
}

/* llama.cpp's own grammars/ folder (tests/data/grammars, MIT, copied
 * unchanged): each parses and its masks equal the brute force along random
 * walks on both fixture vocabularies (BPE dense, Qwen3.5's hybrid). */
static const char *llamacpp_grammars[] = {"arithmetic", "c", "chess", "english", "japanese", "json", "json_arr", "list"};

static char *read_text(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) fail_msg("%s: cannot open", path);
    char *buf = malloc(1 << 16);
    size_t n = fread(buf, 1, (1 << 16) - 1, f);
    assert_true(feof(f)); /* the files are a few kB */
    fclose(f);
    buf[n] = 0;
    return buf;
}

static void test_llamacpp_grammars(void **state) {
    (void)state;
    static const char *vocabs[] = {"models/fixture-target.gguf", "models/fixture-q35-target.gguf"};
    for (size_t v = 0; v < sizeof vocabs / sizeof *vocabs; v++) {
        sd_tokenizer *tok = load_vocab(vocabs[v]);
        int total = 0;
        for (size_t i = 0; i < sizeof llamacpp_grammars / sizeof *llamacpp_grammars; i++) {
            char path[128];
            snprintf(path, sizeof path, "tests/data/grammars/%s.gbnf", llamacpp_grammars[i]);
            char *text = read_text(path);
            total += check_walks(tok, text, 3, 16, 0xC0FFEEull + i * 7 + v);
            free(text);
        }
        print_message("%s: llama.cpp's %zu grammars, %d masks equal to the brute force\n", vocabs[v],
                      sizeof llamacpp_grammars / sizeof *llamacpp_grammars, total);
        sd_tokenizer_free(tok);
    }
}

/* ---- the finite-language oracle ---- */

typedef struct lang {
    char **s;
    int n, cap;
} lang;

static void lang_add(lang *l, const char *s) {
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->s = realloc(l->s, sizeof *l->s * (size_t)l->cap);
    }
    size_t n = strlen(s) + 1;
    l->s[l->n] = malloc(n);
    memcpy(l->s[l->n++], s, n);
}

/* A grammar root ::= w (", " w){0,2} over words drawn from the vocabulary's
 * own token texts (so tokens match often), and its language enumerated. */
static void test_finite_language(void **state) {
    (void)state;
    sd_tokenizer *tok = load_vocab("models/fixture-target.gguf");
    int32_t nv = sd_tokenizer_n_vocab(tok);
    uint64_t seed = 12345;
    for (int trial = 0; trial < 6; trial++) {
        char words[5][48];
        int nw = 0;
        while (nw < 5) { /* printable ASCII token texts, maybe glued to a neighbour */
            char a[24] = {0}, b[24] = {0};
            int la = sd_token_to_bytes(tok, (int32_t)(rng_next(&seed) % (uint64_t)nv), false, a, sizeof a - 1);
            int lb = sd_token_to_bytes(tok, (int32_t)(rng_next(&seed) % (uint64_t)nv), false, b, sizeof b - 1);
            if (la <= 0 || la > 12 || lb < 0 || lb > 12) continue;
            int okc = 1;
            for (int i = 0; i < la; i++) okc &= a[i] > ' ' && a[i] < 127 && a[i] != '"' && a[i] != '\\';
            for (int i = 0; i < lb; i++) okc &= b[i] > ' ' && b[i] < 127 && b[i] != '"' && b[i] != '\\';
            if (!okc) continue;
            snprintf(words[nw++], sizeof words[0], "%s%s", a, (rng_next(&seed) & 1) ? b : "");
        }
        char gbnf[512];
        snprintf(gbnf, sizeof gbnf, "root ::= w (\", \" w){0,2}\nw ::= \"%s\" | \"%s\" | \"%s\" | \"%s\" | \"%s\"",
                 words[0], words[1], words[2], words[3], words[4]);
        lang L = {0};
        char buf[1024];
        for (int a = 0; a < 5; a++) {
            lang_add(&L, words[a]);
            for (int b = 0; b < 5; b++) {
                snprintf(buf, sizeof buf, "%s, %s", words[a], words[b]);
                lang_add(&L, buf);
                for (int c = 0; c < 5; c++) {
                    snprintf(buf, sizeof buf, "%s, %s, %s", words[a], words[b], words[c]);
                    lang_add(&L, buf);
                }
            }
        }
        sd_grammar *g = NULL;
        sd_gmatch *m = NULL;
        sd_err err = {0};
        if (sd_grammar_compile(gbnf, strlen(gbnf), NULL, tok, &g, &err) != SD_OK) fail_msg("%s", err.msg);
        assert_int_equal(sd_gmatch_init(g, tok, &m, &err), SD_OK);
        char prefix[512] = {0};
        size_t plen = 0;
        int32_t s = sd_gmatch_start(m);
        for (int step = 0; step < 40; step++) {
            const uint32_t *mask = sd_gmatch_mask(m, s, &err);
            assert_non_null(mask);
            int32_t allowed[4096];
            int na = 0;
            for (int32_t id = 0; id < nv; id++) {
                int expect = 0;
                if (sd_tokenizer_is_eog(tok, id)) {
                    for (int i = 0; i < L.n && !expect; i++) expect = strlen(L.s[i]) == plen && !memcmp(L.s[i], prefix, plen);
                } else {
                    char piece[64];
                    int lp = sd_token_to_bytes(tok, id, false, piece, sizeof piece);
                    if (lp > 0 && lp <= (int)sizeof piece && plen + (size_t)lp < sizeof prefix)
                        for (int i = 0; i < L.n && !expect; i++)
                            expect = strlen(L.s[i]) >= plen + (size_t)lp && !memcmp(L.s[i], prefix, plen) &&
                                     !memcmp(L.s[i] + plen, piece, (size_t)lp);
                }
                if (bit(mask, id) != expect) fail_msg("%s\nprefix \"%s\": token %d mask %d language %d", gbnf, prefix, id, bit(mask, id), expect);
                if (expect && na < 4096) allowed[na++] = id;
            }
            if (!na) break;
            int32_t pick = allowed[rng_next(&seed) % (uint64_t)na];
            if (sd_tokenizer_is_eog(tok, pick)) break;
            int lp = sd_token_to_bytes(tok, pick, false, prefix + plen, sizeof prefix - plen - 1);
            plen += (size_t)lp;
            prefix[plen] = 0;
            s = sd_gmatch_token(m, s, pick);
        }
        for (int i = 0; i < L.n; i++) free(L.s[i]);
        free(L.s);
        sd_gmatch_free(m);
        sd_grammar_free(g);
    }
    sd_tokenizer_free(tok);
}

/* Token references: <[id]> admits exactly that token; !<[id]> every token
 * but it and the end-of-generation tokens; a reasoning section
 * (anything but </think>, then </think>, then the answer). */
static void test_token_refs(void **state) {
    (void)state;
    sd_tokenizer *tok = load_vocab("tests/data/tokenizer/ggml-vocab-qwen35.gguf");
    /* The section's end marker: </think> where the vocabulary has it, else
     * another control token written <text> (this file is Qwen2.5's list). */
    int32_t nv = sd_tokenizer_n_vocab(tok), end_think = -1;
    for (int32_t id = 0; id < nv && end_think < 0; id++)
        if (!strcmp(sd_token_text(tok, id), "</think>")) end_think = id;
    for (int32_t id = 0; id < nv && end_think < 0; id++) {
        const char *t = sd_token_text(tok, id);
        if (sd_tokenizer_is_control(tok, id) && !sd_tokenizer_is_eog(tok, id) && t[0] == '<' &&
            strchr(t, '>') == t + strlen(t) - 1)
            end_think = id;
    }
    assert_true(end_think >= 0);
    char text[256];
    snprintf(text, sizeof text, "root ::= think answer\nthink ::= (!<[%d]>)* %s \"\\n\"\nanswer ::= \"yes\" | \"no\"",
             end_think, sd_token_text(tok, end_think));
    sd_grammar *g = NULL;
    sd_gmatch *m = NULL;
    sd_err err = {0};
    if (sd_grammar_compile(text, strlen(text), NULL, tok, &g, &err) != SD_OK) fail_msg("%s", err.msg);
    assert_int_equal(sd_gmatch_init(g, tok, &m, &err), SD_OK);
    int32_t s = sd_gmatch_start(m);
    const uint32_t *mask = sd_gmatch_mask(m, s, &err);
    int32_t n_allowed = 0;
    for (int32_t id = 0; id < nv; id++) n_allowed += bit(mask, id);
    assert_true(bit(mask, end_think));
    int32_t n_eog = 0;
    for (int32_t id = 0; id < nv; id++) n_eog += sd_tokenizer_is_eog(tok, id);
    assert_int_equal(n_allowed, nv - n_eog); /* everything but EOG (</think> via its reference) */
    int32_t *ids;
    size_t n;
    assert_int_equal(sd_tokenize(tok, "I think so", 10, false, false, &ids, &n, &err), SD_OK);
    for (size_t i = 0; i < n; i++) s = sd_gmatch_token(m, s, ids[i]);
    free(ids);
    assert_true(s >= 0);
    s = sd_gmatch_token(m, s, end_think);
    assert_true(s >= 0);
    mask = sd_gmatch_mask(m, s, &err);
    n_allowed = 0;
    for (int32_t id = 0; id < nv; id++) n_allowed += bit(mask, id);
    assert_int_equal(n_allowed, 1); /* "\n" and nothing else: the answer's grammar now */
    char fb[8];
    assert_int_equal(sd_gmatch_forced(m, s, fb, sizeof fb), 1);
    assert_int_equal(fb[0], '\n');
    s = sd_gmatch_byte(m, s, '\n');
    mask = sd_gmatch_mask(m, s, &err);
    assert_false(bit(mask, end_think));
    sd_gmatch_free(m);
    sd_grammar_free(g);
    sd_tokenizer_free(tok);
}

/* Mask time on the 248k vocabulary, printed (never asserted). */
static void test_mask_time(void **state) {
    (void)state;
    sd_tokenizer *tok = load_vocab("tests/data/tokenizer/ggml-vocab-qwen35.gguf");
    const char *gbnf = "root ::= \"{\\\"town\\\": \\\"\" [^\"]* \"\\\"}\"";
    sd_grammar *g = NULL;
    sd_gmatch *m = NULL;
    sd_err err = {0};
    assert_int_equal(sd_grammar_compile(gbnf, strlen(gbnf), NULL, tok, &g, &err), SD_OK);
    struct timespec t0, t1, t2;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    assert_int_equal(sd_gmatch_init(g, tok, &m, &err), SD_OK);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    int32_t s = sd_gmatch_bytes(m, sd_gmatch_start(m), (const uint8_t *)"{\"town\": \"", 10);
    assert_non_null(sd_gmatch_mask(m, s, &err));
    clock_gettime(CLOCK_MONOTONIC, &t2);
    print_message("qwen35 vocab: matcher init %.1f ms, first mask inside a string %.1f ms\n",
                  (t1.tv_sec - t0.tv_sec) * 1e3 + (t1.tv_nsec - t0.tv_nsec) / 1e6,
                  (t2.tv_sec - t1.tv_sec) * 1e3 + (t2.tv_nsec - t1.tv_nsec) / 1e6);
    sd_gmatch_free(m);
    sd_grammar_free(g);
    sd_tokenizer_free(tok);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fixture_vocab),
        cmocka_unit_test(test_llamacpp_grammars),
        cmocka_unit_test(test_finite_language),
        cmocka_unit_test(test_token_refs),
        cmocka_unit_test(test_qwen35_vocab),
        cmocka_unit_test(test_mask_time),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
