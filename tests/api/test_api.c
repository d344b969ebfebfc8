/* The public API (include/specdec.h) as a user sees it: tokenize/detokenize
 * round trips, streamed pieces that are whole UTF-8 (on a tiny random model
 * sampled hot, so multi-byte characters do arrive split over byte tokens),
 * cancel, stop strings never streamed partially, stats that add up,
 * speculation on/off giving the same text at temperature 0, the lossless
 * check, prefix reuse (counts, and the same text as a fresh context), and
 * error paths (missing file, bad parameters, a prompt longer than the
 * context, a draft with another vocabulary), and the weights' memory report
 * (held once: repacked copies, not also the file's pages). Runs on the committed fixture
 * models (models/fixture-*.gguf, from the repository root). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numerics/quant.h"
#include "api_test_util.h"
#include "specdec.h"
#include "support/tiny_model.h"
#include "tokenizer/utf8.h"

#define TARGET "models/fixture-target.gguf"
#define DRAFT "models/fixture-draft.gguf"
#define HEAD "models/fixture-eagle3.gguf"
#define Q35 "models/fixture-q35-target.gguf"

static specdec_token *tokenize(const specdec_model *m, const char *text, size_t *n) {
    specdec_token *t = NULL;
    specdec_error err = {0};
    if (specdec_tokenize(m, text, strlen(text), true, false, &t, n, &err) != SPECDEC_OK)
        fail_msg("tokenize: %s", err.message);
    return t;
}

/* What a generate call streamed. */
typedef struct collect {
    char text[1 << 16];
    size_t len;
    int pieces, cancel_after;
    int32_t tokens, drafted;
    bool all_utf8, split_char; /* every piece valid UTF-8; some multi-byte char came from >= 2 tokens */
    int64_t last_accepted;
    bool stats_monotone;
} collect;

static bool utf8_valid(const char *s, size_t n) {
    for (size_t i = 0, len = 0; i < n; i += len)
        if (sd_utf8_scan((const uint8_t *)s + i, n - i, &len) != SD_UTF8_CHAR) return false;
    return true;
}

static bool has_multibyte(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] >= 0xC2) return true;
    return false;
}

static bool on_piece(const specdec_piece *p, void *user) {
    collect *c = user;
    assert_true(p->len > 0);
    assert_int_equal(p->text[p->len], 0);
    if (!utf8_valid(p->text, p->len)) c->all_utf8 = false;
    if (p->n_tokens >= 2 && has_multibyte(p->text, p->len)) c->split_char = true;
    assert_true(c->len + p->len < sizeof c->text);
    memcpy(c->text + c->len, p->text, p->len);
    c->len += p->len;
    c->text[c->len] = 0;
    c->tokens += p->n_tokens;
    c->drafted += p->n_drafted;
    assert_true(p->n_drafted <= p->n_tokens);
    assert_non_null(p->stats);
    if (p->stats->n_accepted < c->last_accepted) c->stats_monotone = false;
    c->last_accepted = p->stats->n_accepted;
    assert_true(p->stats->n_gen >= c->tokens);
    c->pieces++;
    return !(c->cancel_after && c->pieces >= c->cancel_after);
}

static void collect_init(collect *c) {
    memset(c, 0, sizeof *c);
    c->all_utf8 = c->stats_monotone = true;
}

static specdec_status gen(specdec_context *ctx, const specdec_model *m, const char *prompt,
                          const specdec_generate_params *gp, collect *c, specdec_stats *st) {
    size_t n = 0;
    specdec_token *t = tokenize(m, prompt, &n);
    collect_init(c);
    specdec_error err = {0};
    specdec_status s = specdec_generate(ctx, t, n, gp, on_piece, c, st, &err);
    if (s != SPECDEC_OK) print_message("generate: %s\n", err.message);
    specdec_free(t);
    return s;
}

static specdec_generate_params greedy(int32_t n_predict, specdec_spec_mode spec) {
    specdec_generate_params gp = specdec_generate_default_params();
    gp.n_predict = n_predict;
    gp.spec = spec;
    return gp;
}

static const char CODE[] = "class Parser:\n    def __init__(self, text):\n        self.text = text\n"
                           "        self.pos = 0\n\n    def peek(self):\n        return self.text[self.pos]\n";

static void test_memory(void **state) {
    (void)state;
    specdec_model *m = api_load(TARGET);
    specdec_model_memory w = {0};
    specdec_error err = {0};
    assert_int_equal(specdec_model_memory_get(m, &w, &err), SPECDEC_OK);
    assert_true(w.load_ms > 0);
    assert_true(w.f32_bytes > 0); /* the norms */
    FILE *f = fopen(TARGET, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    uint64_t size = (uint64_t)ftell(f);
    fclose(f);
    if (w.file_measured) {
        /* the weights are held once: with the file's pages given back, about the file's size, not twice it */
        uint64_t held = w.packed_bytes + w.f32_bytes + w.file_bytes;
        print_message("weights resident %llu bytes (packed %llu, f32 %llu, file pages %llu), file %llu\n",
                      (unsigned long long)held, (unsigned long long)w.packed_bytes, (unsigned long long)w.f32_bytes,
                      (unsigned long long)w.file_bytes, (unsigned long long)size);
        assert_true(held > size / 2 && held < size + size / 8);
        if (w.packed_bytes > 0) assert_true(w.file_bytes < size / 8);
    }
    specdec_model_memory before = w;
    assert_int_equal(specdec_model_memory_get(NULL, &w, &err), SPECDEC_ERR_ARG);
    assert_true(strlen(err.message) > 0);
    assert_memory_equal(&w, &before, sizeof w); /* unchanged on error */
    assert_int_equal(specdec_model_memory_get(m, NULL, NULL), SPECDEC_ERR_ARG);
    specdec_model_free(m);
}

static void test_metadata_and_roundtrip(void **state) {
    (void)state;
    specdec_model *m = api_load(TARGET);
    assert_int_equal(specdec_model_n_vocab(m), 4096);
    assert_int_equal(specdec_model_n_ctx_train(m), 512);
    assert_string_equal(specdec_model_arch(m), "qwen3");
    assert_true(strlen(specdec_model_name(m)) > 0);
    assert_string_equal(specdec_model_path(m), TARGET);
    assert_true(specdec_model_n_params(m) > 1000000);
    assert_null(specdec_model_meta_str(m, "no.such.key"));
    assert_string_equal(specdec_model_meta_str(m, "general.architecture"), "qwen3");
    /* the same pointer the second time: the copy is kept */
    assert_ptr_equal(specdec_model_meta_str(m, "general.architecture"), specdec_model_meta_str(m, "general.architecture"));
    specdec_token eos = specdec_token_eos(m);
    if (eos >= 0) assert_true(specdec_token_is_eog(m, eos));
    assert_false(specdec_token_is_eog(m, -1));
    assert_false(specdec_token_is_eog(m, 4096));
    assert_null(specdec_token_text(m, 4096));

    const char *texts[] = {"", "hello world", CODE, "naïve café — 日本語 😀 ü\n\t\r", "\xff\xfe invalid \xc3"};
    for (size_t i = 0; i < sizeof texts / sizeof *texts; i++) {
        specdec_token *t = NULL;
        size_t n = 0, len = 0;
        char *back = NULL;
        specdec_error err = {0};
        assert_int_equal(specdec_tokenize(m, texts[i], strlen(texts[i]), false, false, &t, &n, &err), SPECDEC_OK);
        assert_non_null(t);
        assert_int_equal(specdec_detokenize(m, t, n, false, &back, &len, &err), SPECDEC_OK);
        assert_int_equal(len, strlen(texts[i]));
        assert_memory_equal(back, texts[i], len);
        /* token_to_piece concatenates to the same bytes */
        size_t at = 0;
        for (size_t k = 0; k < n; k++) {
            char piece[256];
            int32_t got = specdec_token_to_piece(m, t[k], false, piece, sizeof piece);
            assert_true(got >= 0 && got <= (int32_t)sizeof piece);
            assert_memory_equal(piece, texts[i] + at, (size_t)got);
            at += (size_t)got;
        }
        assert_int_equal(at, len);
        specdec_free(t);
        specdec_free(back);
    }
    specdec_token bad = 4096;
    char *text = NULL;
    size_t len = 0;
    specdec_error err = {0};
    assert_int_equal(specdec_detokenize(m, &bad, 1, false, &text, &len, &err), SPECDEC_ERR_ARG);
    assert_int_equal(err.code, SPECDEC_ERR_ARG);
    assert_true(strlen(err.message) > 0);
    assert_int_equal(specdec_token_to_piece(m, -1, false, NULL, 0), -1);
    specdec_model_free(m);
}

/* Speculation on or off, the same text at temperature 0; the stats add up. */
static void test_spec_on_off_identical(void **state) {
    (void)state;
    specdec_model *m = api_load(TARGET), *d = api_load(DRAFT);
    specdec_context *c = api_context(m, d, 0);
    static collect plain, spec;
    specdec_stats sp, ss;
    specdec_generate_params gp = greedy(80, SPECDEC_SPEC_NONE);
    assert_int_equal(gen(c, m, CODE, &gp, &plain, &sp), SPECDEC_OK);
    assert_string_equal(sp.drafter, "none");
    assert_int_equal(sp.n_drafted, 0);
    assert_int_equal(sp.n_rounds, 0);
    specdec_spec_mode modes[] = {SPECDEC_SPEC_NGRAM, SPECDEC_SPEC_DRAFT, SPECDEC_SPEC_AUTO};
    const char *names[] = {"ngram", "draft", "auto (ngram + draft)"};
    for (int i = 0; i < 3; i++) {
        specdec_context_reset(c);
        gp = greedy(80, modes[i]);
        gp.gate = 0; /* keep drafting */
        assert_int_equal(gen(c, m, CODE, &gp, &spec, &ss), SPECDEC_OK);
        assert_string_equal(ss.drafter, names[i]);
        assert_int_equal(ss.n_cached, 0);
        assert_int_equal(ss.n_gen, sp.n_gen);
        assert_int_equal(spec.len, plain.len);
        assert_string_equal(spec.text, plain.text);
        assert_true(spec.all_utf8 && spec.stats_monotone);
        /* the counters add up */
        assert_true(ss.n_drafted > 0 && ss.n_accepted > 0);
        assert_true(ss.n_accepted <= ss.n_drafted);
        assert_true(ss.n_rounds <= ss.n_target_forwards);
        assert_true(ss.n_rounds > 0);
        assert_true(ss.n_gen <= ss.n_accepted + ss.n_target_forwards + 1);
        assert_true(ss.n_gen >= ss.n_accepted + 1);
        assert_int_equal(spec.tokens, ss.n_gen); /* every token here has text */
        assert_int_equal(spec.drafted, ss.n_accepted);
        assert_true((ss.n_draft_forwards > 0) == (modes[i] != SPECDEC_SPEC_NGRAM));
        assert_int_equal(ss.stop_reason, SPECDEC_STOP_LENGTH);
        assert_int_equal(ss.stop_index, -1);
        assert_true(ss.t_prefill_ms >= 0 && ss.t_decode_ms > 0);
        assert_int_equal(ss.n_prompt, sp.n_prompt);
    }
    /* auto without a draft model is n-gram alone */
    specdec_context *c2 = api_context(m, NULL, 0);
    gp = greedy(20, SPECDEC_SPEC_AUTO);
    assert_int_equal(gen(c2, m, CODE, &gp, &spec, &ss), SPECDEC_OK);
    assert_string_equal(ss.drafter, "auto (ngram)");
    assert_memory_equal(spec.text, plain.text, spec.len);
    specdec_context_free(c2);
    specdec_context_free(c);
    specdec_model_free(d);
    specdec_model_free(m);
}

static void test_lossless_check(void **state) {
    (void)state;
    specdec_model *m = api_load(TARGET), *d = api_load(DRAFT);
    specdec_context *c = api_context(m, d, 0);
    static collect out;
    specdec_stats st;
    specdec_generate_params gp = greedy(60, SPECDEC_SPEC_AUTO);
    gp.check_lossless = true;
    assert_int_equal(gen(c, m, CODE, &gp, &out, &st), SPECDEC_OK);
    assert_true(st.lossless_checked);
    assert_true(st.lossless);
    assert_int_equal(st.lossless_first_diff, st.n_gen);
    assert_int_equal(st.plain_n_gen, st.n_gen);
    assert_true(st.plain_decode_ms > 0);
    /* at temperature > 0 argmax drafts give plain sampling's bytes (ARCHITECTURE.md §6) */
    gp.temperature = 0.7f;
    gp.seed = 11;
    assert_int_equal(gen(c, m, CODE, &gp, &out, &st), SPECDEC_OK);
    assert_true(st.lossless_checked);
    assert_true(st.lossless);
    assert_true(st.n_drafted > 0);
    /* sampled drafts keep the distribution, not the bytes: no check */
    gp.draft_sample = true;
    specdec_error err = {0};
    size_t n;
    specdec_token *t = tokenize(m, CODE, &n);
    assert_int_equal(specdec_generate(c, t, n, &gp, NULL, NULL, &st, &err), SPECDEC_ERR_ARG);
    assert_non_null(strstr(err.message, "draft_sample"));
    specdec_free(t);
    specdec_context_free(c);
    specdec_model_free(d);
    specdec_model_free(m);
}

/* A random-weight byte-level model sampled hot emits random byte tokens:
 * multi-byte characters then arrive over several tokens, and every piece
 * must still be whole UTF-8 (invalid bytes as U+FFFD), the same text as the
 * detokenized tokens with invalid sequences replaced. */
static void test_pieces_are_whole_utf8(void **state) {
    (void)state;
    tiny_model_spec sp = tiny_model_default("qwen3", GGML_TYPE_F32);
    char path[256];
    tiny_model_temp_path(path, sizeof path, "api-utf8");
    sd_err e = {0};
    assert_int_equal(tiny_model_write(&sp, path, &e), SD_OK);
    specdec_model *m = api_load(path);
    specdec_context *c = api_context(m, NULL, 0);
    static collect out;
    specdec_stats st;
    bool split = false;
    for (uint64_t seed = 1; seed <= 4 && !split; seed++) {
        specdec_generate_params gp = greedy(400, SPECDEC_SPEC_NGRAM);
        gp.temperature = 8;
        gp.seed = seed;
        gp.stop_at_eog = false;
        specdec_context_reset(c);
        assert_int_equal(gen(c, m, "ab", &gp, &out, &st), SPECDEC_OK);
        assert_true(out.all_utf8);
        assert_true(out.len > 0);
        split = out.split_char;
    }
    assert_true(split); /* the case this test is about did occur */
    remove(path);
    specdec_context_free(c);
    specdec_model_free(m);
}

static void test_cancel(void **state) {
    (void)state;
    specdec_model *m = api_load(TARGET);
    specdec_context *c = api_context(m, NULL, 0);
    static collect out;
    specdec_stats st;
    specdec_generate_params gp = greedy(100, SPECDEC_SPEC_NGRAM);
    size_t n;
    specdec_token *t = tokenize(m, CODE, &n);
    collect_init(&out);
    out.cancel_after = 3;
    assert_int_equal(specdec_generate(c, t, n, &gp, on_piece, &out, &st, NULL), SPECDEC_OK);
    assert_int_equal(out.pieces, 3); /* no call after the cancel */
    assert_int_equal(st.stop_reason, SPECDEC_STOP_CANCELLED);
    assert_true(st.n_gen >= 3 && st.n_gen < 100);
    /* the history holds the prompt and exactly the generated tokens */
    size_t n_hist = 0;
    specdec_context_tokens(c, &n_hist);
    assert_int_equal(n_hist, n + (size_t)st.n_gen);
    specdec_free(t);
    specdec_context_free(c);
    specdec_model_free(m);
}

static int polls, abort_at;
static bool abort_after(void *user) {
    (void)user;
    return ++polls >= abort_at;
}

/* The abort hook stops a prefill between chunks (the cache keeps what was
 * done, and the next call reuses it) and a decode between steps. */
static void test_abort(void **state) {
    (void)state;
    specdec_model *m = api_load(TARGET);
    specdec_context_params cp = specdec_context_default_params();
    cp.n_threads = 1;
    cp.n_batch = 8;
    specdec_context *c = NULL;
    assert_int_equal(specdec_context_init(m, &cp, &c, NULL), SPECDEC_OK);
    assert_ptr_equal(specdec_context_model(c), m);
    assert_null(specdec_context_draft(c));
    size_t n;
    specdec_token *t = tokenize(m, CODE, &n);
    assert_true(n > 24);
    specdec_generate_params gp = greedy(50, SPECDEC_SPEC_NGRAM);
    gp.abort = abort_after;
    specdec_stats st;
    static collect out;
    collect_init(&out);
    polls = 0, abort_at = 3; /* two chunks of 8 done, stopped before the third */
    assert_int_equal(specdec_generate(c, t, n, &gp, on_piece, &out, &st, NULL), SPECDEC_OK);
    assert_int_equal(st.stop_reason, SPECDEC_STOP_CANCELLED);
    assert_int_equal(st.n_gen, 0);
    assert_int_equal(out.pieces, 0);
    gp.abort = NULL;
    assert_int_equal(specdec_generate(c, t, n, &gp, NULL, NULL, &st, NULL), SPECDEC_OK);
    assert_int_equal(st.n_cached, 16);
    assert_int_equal(st.n_gen, 50);
    /* in the decode: the prefill polls ceil((n - cached) / 8) times, then once per step */
    specdec_context_reset(c);
    gp.abort = abort_after;
    polls = 0, abort_at = (int)((n + 7) / 8) + 5;
    assert_int_equal(specdec_generate(c, t, n, &gp, NULL, NULL, &st, NULL), SPECDEC_OK);
    assert_int_equal(st.stop_reason, SPECDEC_STOP_CANCELLED);
    assert_true(st.n_gen >= 5 && st.n_gen < 50);
    specdec_free(t);
    specdec_context_free(c);
    specdec_model_free(m);
}

/* A stop string cuts the text where it first occurs, and no piece ever
 * carries its start. */
static void test_stop_strings(void **state) {
    (void)state;
    specdec_model *m = api_load(TARGET), *d = api_load(DRAFT);
    specdec_context *c = api_context(m, d, 0);
    static collect full, cut;
    specdec_stats st;
    specdec_generate_params gp = greedy(80, SPECDEC_SPEC_AUTO);
    assert_int_equal(gen(c, m, CODE, &gp, &full, &st), SPECDEC_OK);
    assert_true(full.len > 30);
    char stop[8];
    memcpy(stop, full.text + 20, 5);
    stop[5] = 0;
    size_t at = (size_t)(strstr(full.text, stop) - full.text);
    const char *stops[] = {"\x01never", stop};
    gp.stop = stops;
    gp.n_stop = 2;
    assert_int_equal(gen(c, m, CODE, &gp, &cut, &st), SPECDEC_OK);
    assert_int_equal(st.stop_reason, SPECDEC_STOP_STRING);
    assert_int_equal(st.stop_index, 1);
    assert_int_equal(cut.len, at);
    assert_memory_equal(cut.text, full.text, at);
    assert_true(st.n_gen < 80);
    specdec_context_free(c);
    specdec_model_free(d);
    specdec_model_free(m);
}

/* The second turn of a conversation: its prompt extends the first turn's
 * prompt and answer, so only the new tokens are prefilled, and the answer is
 * the same as from a fresh context. */
static void test_prefix_reuse(void **state) {
    (void)state;
    specdec_model *m = api_load(TARGET), *d = api_load(DRAFT);
    specdec_context *c = api_context(m, d, 0), *fresh = api_context(m, d, 0);
    static collect a, b;
    specdec_stats st;
    specdec_generate_params gp = greedy(40, SPECDEC_SPEC_AUTO);
    size_t n1;
    specdec_token *p1 = tokenize(m, CODE, &n1);
    collect_init(&a);
    assert_int_equal(specdec_generate(c, p1, n1, &gp, on_piece, &a, &st, NULL), SPECDEC_OK);
    assert_int_equal(st.n_cached, 0);
    size_t n_hist = 0;
    const specdec_token *h = specdec_context_tokens(c, &n_hist);
    assert_int_equal(n_hist, n1 + 40);
    assert_memory_equal(h, p1, n1 * sizeof *p1);

    /* turn 2 = history + new tokens */
    size_t n_more;
    specdec_token *more = tokenize(m, "\n    def next(self):\n", &n_more);
    size_t n2 = n_hist + n_more;
    specdec_token *p2 = malloc(n2 * sizeof *p2);
    memcpy(p2, h, n_hist * sizeof *p2);
    memcpy(p2 + n_hist, more, n_more * sizeof *p2);
    collect_init(&a);
    assert_int_equal(specdec_generate(c, p2, n2, &gp, on_piece, &a, &st, NULL), SPECDEC_OK);
    assert_int_equal(st.n_prompt, n2);
    assert_int_equal(st.n_cached, n_hist - 1); /* the last generated token was never forwarded */
    collect_init(&b);
    specdec_stats st_fresh;
    assert_int_equal(specdec_generate(fresh, p2, n2, &gp, on_piece, &b, &st_fresh, NULL), SPECDEC_OK);
    assert_int_equal(st_fresh.n_cached, 0);
    assert_string_equal(a.text, b.text);

    /* the same prompt again: all but its last token are reused */
    collect_init(&a);
    assert_int_equal(specdec_generate(c, p2, n2, &gp, on_piece, &a, &st, NULL), SPECDEC_OK);
    assert_int_equal(st.n_cached, n2 - 1);
    assert_string_equal(a.text, b.text);
    /* a prompt diverging at token 3 reuses 3 */
    p2[3] = (p2[3] + 1) % 4096;
    assert_int_equal(specdec_generate(c, p2, n2, &gp, NULL, NULL, &st, NULL), SPECDEC_OK);
    assert_int_equal(st.n_cached, 3);
    /* reset forgets */
    specdec_context_reset(c);
    specdec_context_tokens(c, &n_hist);
    assert_int_equal(n_hist, 0);
    assert_int_equal(specdec_generate(c, p2, n2, &gp, NULL, NULL, &st, NULL), SPECDEC_OK);
    assert_int_equal(st.n_cached, 0);
    free(p2);
    specdec_free(more);
    specdec_free(p1);
    specdec_context_free(fresh);
    specdec_context_free(c);
    specdec_model_free(d);
    specdec_model_free(m);
}

/* An EAGLE-3 head as the context's draft: spec mode eagle3 and auto use it,
 * greedy and fixed-seed sampled output equal plain decoding's, a reused
 * prefix keeps the head's hidden rows (the same text as a fresh context),
 * and heads that do not fit the target are refused. */
static void test_eagle3_head(void **state) {
    (void)state;
    specdec_model *m = api_load(TARGET), *h = api_load(HEAD), *d = api_load(DRAFT);
    specdec_context *c = api_context(m, h, 0), *fresh = api_context(m, h, 0);
    static collect a, b;
    specdec_stats st;
    const float temps[] = {0, 0.8f};
    for (int i = 0; i < 2; i++) {
        specdec_generate_params gp = greedy(48, SPECDEC_SPEC_EAGLE3);
        gp.temperature = temps[i];
        gp.gate = 0; /* every round drafts: the gate's cost model sees this machine's load */
        gp.check_lossless = true;
        assert_int_equal(gen(c, m, CODE, &gp, &a, &st), SPECDEC_OK);
        assert_string_equal(st.drafter, "eagle3");
        if (!(st.lossless_checked && st.lossless)) fail_msg("eagle3 temp %g: lossless %d first diff %d of %d, drafted %lld", temps[i], st.lossless, st.lossless_first_diff, st.n_gen, (long long)st.n_drafted);
        assert_true(st.n_drafted > 0 && st.n_accepted > 0);
        gp.spec = SPECDEC_SPEC_AUTO;
        assert_int_equal(gen(c, m, CODE, &gp, &a, &st), SPECDEC_OK);
        assert_string_equal(st.drafter, "auto (ngram + eagle3)");
        assert_true(st.lossless);
    }
    /* prefix reuse: turn 2 extends the history; the same text as a fresh context */
    specdec_generate_params gp = greedy(32, SPECDEC_SPEC_EAGLE3);
    gp.gate = 0;
    size_t n_hist = 0, n_more;
    const specdec_token *hist = specdec_context_tokens(c, &n_hist);
    specdec_token *more = tokenize(m, "\n    def next(self):\n", &n_more);
    specdec_token *p2 = malloc((n_hist + n_more) * sizeof *p2);
    memcpy(p2, hist, n_hist * sizeof *p2);
    memcpy(p2 + n_hist, more, n_more * sizeof *p2);
    collect_init(&a);
    assert_int_equal(specdec_generate(c, p2, n_hist + n_more, &gp, on_piece, &a, &st, NULL), SPECDEC_OK);
    assert_true(st.n_cached > 0);
    assert_true(st.n_drafted > 0);
    collect_init(&b);
    assert_int_equal(specdec_generate(fresh, p2, n_hist + n_more, &gp, on_piece, &b, &st, NULL), SPECDEC_OK);
    assert_string_equal(a.text, b.text);
    /* the draft mode names what the context has */
    size_t n;
    specdec_token *t = tokenize(m, CODE, &n);
    specdec_generate_params bad = greedy(8, SPECDEC_SPEC_DRAFT);
    specdec_error err = {0};
    assert_int_equal(specdec_generate(c, t, n, &bad, NULL, NULL, &st, &err), SPECDEC_ERR_ARG);
    assert_non_null(strstr(err.message, "EAGLE-3 head"));
    bad.spec = SPECDEC_SPEC_MTP; /* a qwen3 target has no MTP block */
    assert_int_equal(specdec_generate(c, t, n, &bad, NULL, NULL, &st, &err), SPECDEC_ERR_ARG);
    assert_non_null(strstr(err.message, "MTP block"));
    specdec_spec_mode mode;
    assert_true(specdec_spec_mode_parse("mtp", &mode) && mode == SPECDEC_SPEC_MTP);
    assert_true(specdec_spec_mode_parse("eagle3", &mode) && mode == SPECDEC_SPEC_EAGLE3);
    specdec_context *cd = api_context(m, d, 0);
    bad.spec = SPECDEC_SPEC_EAGLE3;
    assert_int_equal(specdec_generate(cd, t, n, &bad, NULL, NULL, &st, &err), SPECDEC_ERR_ARG);
    assert_non_null(strstr(err.message, "not eagle3"));
    /* a head for another target: the draft fixture is 96 wide, the head reads 256 */
    specdec_context_params cp = specdec_context_default_params();
    cp.draft = h;
    specdec_context *no = NULL;
    assert_int_equal(specdec_context_init(d, &cp, &no, &err), SPECDEC_ERR_ARG);
    assert_null(no);
    assert_non_null(strstr(err.message, HEAD));
    assert_non_null(strstr(err.message, "target_hidden_size 256"));
    specdec_free(t);
    specdec_free(more);
    free(p2);
    specdec_context_free(cd);
    specdec_context_free(fresh);
    specdec_context_free(c);
    specdec_model_free(d);
    specdec_model_free(h);
    specdec_model_free(m);
}

/* The qwen35 fixture's own MTP block as the drafter: spec mode mtp and
 * auto use it, greedy and fixed-seed sampled output equal plain decoding's
 * (the target's recurrent state rolls back past rejected drafts). */
static void test_mtp_head(void **state) {
    (void)state;
    specdec_model *m = api_load(Q35);
    specdec_context *c = api_context(m, NULL, 0);
    static collect a;
    specdec_stats st;
    const float temps[] = {0, 0.8f};
    for (int i = 0; i < 2; i++) {
        specdec_generate_params gp = greedy(48, SPECDEC_SPEC_MTP);
        gp.temperature = temps[i];
        gp.gate = 0;
        gp.check_lossless = true;
        assert_int_equal(gen(c, m, CODE, &gp, &a, &st), SPECDEC_OK);
        assert_string_equal(st.drafter, "mtp");
        if (!(st.lossless_checked && st.lossless))
            fail_msg("mtp temp %g: lossless %d first diff %d of %d", temps[i], st.lossless, st.lossless_first_diff,
                     st.n_gen);
        assert_true(st.n_drafted > 0 && st.n_accepted > 0);
        gp.spec = SPECDEC_SPEC_AUTO;
        assert_int_equal(gen(c, m, CODE, &gp, &a, &st), SPECDEC_OK);
        assert_string_equal(st.drafter, "auto (ngram + mtp)");
        assert_true(st.lossless);
    }
    specdec_context_free(c);
    specdec_model_free(m);
}

/* A file's tokenizer on its own gives the ids and pieces its model gives;
 * a missing file is an IO error naming it; the UTF-8 check of pieces. */
static void test_vocab(void **state) {
    (void)state;
    specdec_model *m = api_load(TARGET);
    specdec_vocab *v = NULL;
    specdec_error err = {0};
    assert_int_equal(specdec_vocab_load(TARGET, &v, &err), SPECDEC_OK);
    const char text[] = "<|im_start|>user\nh\xc3\xa9llo w\xc3\xb6rld \xf0\x9f\x8e\x89 \xff";
    specdec_token *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    assert_int_equal(specdec_tokenize(m, text, sizeof text - 1, true, true, &a, &na, &err), SPECDEC_OK);
    assert_int_equal(specdec_vocab_tokenize(v, text, sizeof text - 1, true, true, &b, &nb, &err), SPECDEC_OK);
    assert_int_equal(na, nb);
    assert_memory_equal(a, b, na * sizeof *a);
    for (size_t i = 0; i < na; i++) {
        char p1[256], p2[256];
        int32_t l1 = specdec_token_to_piece(m, a[i], true, p1, sizeof p1);
        assert_int_equal(specdec_vocab_token_to_piece(v, b[i], true, p2, sizeof p2), l1);
        assert_memory_equal(p1, p2, (size_t)l1);
    }
    assert_int_equal(specdec_vocab_token_to_piece(v, specdec_model_n_vocab(m), true, NULL, 0), -1);
    specdec_free(a);
    specdec_free(b);
    specdec_vocab *none = (specdec_vocab *)1;
    assert_int_equal(specdec_vocab_load("models/no-such.gguf", &none, &err), SPECDEC_ERR_IO);
    assert_null(none);
    assert_non_null(strstr(err.message, "models/no-such.gguf"));
    assert_int_equal(specdec_utf8_char_len("\xc3\xa9x", 3), 2);
    assert_int_equal(specdec_utf8_char_len("\xf0\x9f\x8e\x89", 4), 4);
    assert_int_equal(specdec_utf8_char_len("\xf0\x9f\x8e", 3), 0); /* truncated */
    assert_int_equal(specdec_utf8_char_len("\xc0\xaf", 2), 0);     /* overlong */
    assert_int_equal(specdec_utf8_char_len("\xff", 1), 0);
    assert_int_equal(specdec_utf8_char_len("a", 0), 0);
    specdec_vocab_free(v);
    specdec_model_free(m);
}

static void expect_arg(specdec_context *c, const specdec_token *t, size_t n, const specdec_generate_params *gp,
                       specdec_status want, const char *needle) {
    specdec_error err = {0};
    specdec_stats st;
    assert_int_equal(specdec_generate(c, t, n, gp, NULL, NULL, &st, &err), want);
    assert_int_equal(err.code, want);
    if (!strstr(err.message, needle)) fail_msg("message '%s' lacks '%s'", err.message, needle);
}

static void test_errors(void **state) {
    (void)state;
    specdec_model *m = NULL;
    specdec_error err = {0};
    assert_int_equal(specdec_model_load("models/no-such-model.gguf", NULL, &m, &err), SPECDEC_ERR_IO);
    assert_null(m);
    assert_non_null(strstr(err.message, "models/no-such-model.gguf"));
    assert_string_equal(specdec_status_name(SPECDEC_ERR_IO), "i/o error");
    /* the setter front ends share with the library: code, message cut to fit, NULL allowed */
    assert_int_equal(specdec_error_set(&err, SPECDEC_ERR_ARG, "bad %s %d", "value", 7), SPECDEC_ERR_ARG);
    assert_int_equal(err.code, SPECDEC_ERR_ARG);
    assert_string_equal(err.message, "bad value 7");
    char big[2 * sizeof err.message];
    memset(big, 'x', sizeof big - 1), big[sizeof big - 1] = 0;
    specdec_error_set(&err, SPECDEC_ERR_IO, "%s", big);
    assert_int_equal(strlen(err.message), sizeof err.message - 1);
    assert_int_equal(specdec_error_set(NULL, SPECDEC_ERR_NOMEM, "x"), SPECDEC_ERR_NOMEM);
    assert_int_equal(specdec_model_load(NULL, NULL, &m, &err), SPECDEC_ERR_ARG);
    assert_int_equal(specdec_model_load(TARGET, NULL, NULL, NULL), SPECDEC_ERR_ARG);
    specdec_model_free(NULL);
    specdec_context_free(NULL);
    specdec_free(NULL);

    m = api_load(TARGET);
    specdec_context_params cp = specdec_context_default_params();
    cp.n_ctx = 32;
    cp.n_threads = 1;
    specdec_context *c = NULL;
    assert_int_equal(specdec_context_init(m, &cp, &c, &err), SPECDEC_OK);
    assert_int_equal(specdec_context_n_ctx(c), 32);
    size_t n;
    specdec_token *t = tokenize(m, CODE, &n);
    assert_true(n > 32);
    specdec_generate_params gp = greedy(8, SPECDEC_SPEC_NGRAM);
    expect_arg(c, t, n, &gp, SPECDEC_ERR_CONTEXT, "more than the context size 32");
    expect_arg(c, t, 0, &gp, SPECDEC_ERR_ARG, "empty");
    gp.spec = SPECDEC_SPEC_DRAFT;
    expect_arg(c, t, 4, &gp, SPECDEC_ERR_ARG, "draft model");
    gp = greedy(8, SPECDEC_SPEC_NGRAM);
    gp.draft_max = 0;
    expect_arg(c, t, 4, &gp, SPECDEC_ERR_ARG, "draft_max");
    gp = greedy(8, SPECDEC_SPEC_NGRAM);
    gp.ngram_min = 4, gp.ngram_max = 2;
    expect_arg(c, t, 4, &gp, SPECDEC_ERR_ARG, "n-gram");
    gp = greedy(8, SPECDEC_SPEC_NGRAM);
    gp.top_p = 0;
    expect_arg(c, t, 4, &gp, SPECDEC_ERR_ARG, "top_p");
    gp = greedy(8, SPECDEC_SPEC_NGRAM);
    gp.min_p = 1;
    expect_arg(c, t, 4, &gp, SPECDEC_ERR_ARG, "min_p");
    gp = greedy(8, SPECDEC_SPEC_NGRAM);
    const char *empty[] = {""};
    gp.stop = empty;
    gp.n_stop = 1;
    expect_arg(c, t, 4, &gp, SPECDEC_ERR_ARG, "stop string 0");
    gp.n_stop = SPECDEC_MAX_STOP + 1;
    expect_arg(c, t, 4, &gp, SPECDEC_ERR_ARG, "n_stop");
    gp = greedy(8, SPECDEC_SPEC_NGRAM);
    gp.spec = (specdec_spec_mode)9;
    expect_arg(c, t, 4, &gp, SPECDEC_ERR_ARG, "spec mode");
    gp = greedy(8, SPECDEC_SPEC_NGRAM);
    specdec_token bad[2] = {1, 99999};
    expect_arg(c, bad, 2, &gp, SPECDEC_ERR_ARG, "");
    /* after errors the context still works, and fills up cleanly */
    specdec_stats st;
    gp = greedy(-1, SPECDEC_SPEC_NGRAM);
    gp.stop_at_eog = false;
    assert_int_equal(specdec_generate(c, t, 4, &gp, NULL, NULL, &st, &err), SPECDEC_OK);
    assert_int_equal(st.stop_reason, SPECDEC_STOP_CONTEXT);
    assert_int_equal(st.n_gen, 32 - 4 + 1);
    gp.n_predict = 500;
    assert_int_equal(specdec_generate(c, t, 4, &gp, NULL, NULL, &st, &err), SPECDEC_OK);
    assert_int_equal(st.stop_reason, SPECDEC_STOP_CONTEXT);
    gp.n_predict = 0;
    assert_int_equal(specdec_generate(c, t, 4, &gp, NULL, NULL, &st, &err), SPECDEC_OK);
    assert_int_equal(st.n_gen, 0);
    assert_int_equal(st.stop_reason, SPECDEC_STOP_LENGTH);

    /* names */
    specdec_spec_mode mode;
    assert_true(specdec_spec_mode_parse("draft", &mode) && mode == SPECDEC_SPEC_DRAFT);
    assert_false(specdec_spec_mode_parse("fast", &mode));
    assert_string_equal(specdec_spec_mode_name(SPECDEC_SPEC_AUTO), "auto");
    assert_string_equal(specdec_stop_reason_name(SPECDEC_STOP_STRING), "stop");
    assert_non_null(specdec_version());

    /* a draft with another vocabulary */
    tiny_model_spec sp = tiny_model_default("qwen3", GGML_TYPE_F32);
    char path[256];
    tiny_model_temp_path(path, sizeof path, "api-vocab");
    sd_err e = {0};
    assert_int_equal(tiny_model_write(&sp, path, &e), SD_OK);
    specdec_model *other = api_load(path);
    cp.draft = other;
    specdec_context *c2 = NULL;
    assert_int_equal(specdec_context_init(m, &cp, &c2, &err), SPECDEC_ERR_VOCAB);
    assert_null(c2);
    assert_non_null(strstr(err.message, path));
    remove(path);
    specdec_model_free(other);
    specdec_free(t);
    specdec_context_free(c);
    specdec_model_free(m);
}

/* specdec_utf8_check: valid text passes; the first bad sequence is named by its byte offset. */
static void test_utf8_check(void **state) {
    (void)state;
    specdec_error err = {0};
    static const char ok[] = "plain, caf\xc3\xa9, \xe2\x82\xac, \xf0\x9f\x98\x80";
    assert_int_equal(specdec_utf8_check(ok, sizeof ok - 1, &err), SPECDEC_OK);
    assert_int_equal(specdec_utf8_check(NULL, 0, &err), SPECDEC_OK);
    static const struct { const char *s; size_t at; } bad[] = {
        {"abc \xff", 4},          /* never a UTF-8 byte */
        {"x\x80", 1},             /* a lone continuation byte */
        {"\xc0\xaf", 0},          /* overlong '/' */
        {"ok\xed\xa0\x80", 2},    /* a surrogate */
        {"\xf4\x90\x80\x80", 0}, /* above U+10FFFF */
        {"ab\xe2\x82", 2},        /* cut short at the end */
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        assert_int_equal(specdec_utf8_check(bad[i].s, strlen(bad[i].s), &err), SPECDEC_ERR_ARG);
        char want[64];
        snprintf(want, sizeof want, "not valid UTF-8 at byte %zu", bad[i].at);
        assert_string_equal(err.message, want);
    }
    assert_int_equal(specdec_utf8_check(NULL, 1, &err), SPECDEC_ERR_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_metadata_and_roundtrip), cmocka_unit_test(test_spec_on_off_identical),
        cmocka_unit_test(test_lossless_check),         cmocka_unit_test(test_pieces_are_whole_utf8),
        cmocka_unit_test(test_cancel),                 cmocka_unit_test(test_abort),
        cmocka_unit_test(test_stop_strings),
        cmocka_unit_test(test_prefix_reuse),           cmocka_unit_test(test_errors),
        cmocka_unit_test(test_memory),                 cmocka_unit_test(test_utf8_check),
        cmocka_unit_test(test_eagle3_head),            cmocka_unit_test(test_mtp_head),
        cmocka_unit_test(test_vocab),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
