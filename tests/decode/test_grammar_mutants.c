/* Constrained decoding under speculation on the model-free oracle (docs/GRAMMAR.md), where refusals are the rule:
 * the oracle's unmasked argmax is a hash, almost never a token the grammar
 * allows, so every verify row's mask decides its token. Random grammars
 * alternate two word classes drawn from the vocabulary (root ::= (a b)+),
 * so the state changes at every word and a row masked with the wrong state
 * picks a different token.
 *  - LOSSLESS: speculative output == constrained plain decoding's, greedy and
 *    at temperature 0.8 (deterministic drafts: byte-identical), chains of
 *    K = 3 and 6 and token trees, with a perfect drafter (every draft
 *    accepted: the bonus row decides) and a noisy one (allowed-but-wrong and
 *    refused tokens: rejections and cuts mid-draft); every output is a
 *    prefix of a sentence.
 *  - The law of sampled drafts (a drafter whose q puts half its mass on
 *    refused tokens): the distribution of the second token matches
 *    constrained plain sampling's, computed exactly (Pearson chi-square).
 *  - A reasoning section inside the grammar (anything but an end token,
 *    the end token, then the answer's grammar), the oracle forcing the end
 *    token at each offset of a block: LOSSLESS, and the end token is an
 *    accepted draft token (the switch to the answer's grammar happens inside
 *    a verified block) in some runs.
 *  - Mutants (a build of src/decode/constrain.c with SD_TEST_MUTANTS): each
 *    breaks one rule and must fail one of the checks above; the test says
 *    which caught it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "decode/chi_square.h"
#include "decode/constrain.h"
#include "decode/oracle_lm.h"
#include "decode/spec.h"
#include "format/gguf.h"
#include "grammar/grammar.h"
#include "tokenizer/tokenizer.h"

enum { N_PREDICT = 40, N_GRAMMARS = 6, N_REASONING = 1, N_PROMPT = 3 };

/* Under the sanitizers: fewer grammars and law samples (every check still runs). */
static int slow(void) { return getenv("SD_ASAN") || getenv("SD_TEST_EMULATED"); }

static sd_tokenizer *g_tok;
static int32_t g_V;

static sd_tokenizer *load_vocab(const char *path) {
    gguf_ctx *ctx = NULL;
    sd_tokenizer *tok = NULL;
    sd_err err = {0};
    if (gguf_open(path, &ctx, &err) != SD_OK || sd_tokenizer_init(ctx, &tok, &err) != SD_OK) fail_msg("%s", err.msg);
    gguf_close(ctx);
    return tok;
}

/* ---- random two-class grammars ---- */

static int word_ok(const char *s, int n, int lead_space) {
    if (n < 2 || n > 7) return 0;
    if (lead_space != (s[0] == ' ')) return 0;
    for (int i = lead_space; i < n; i++)
        if (s[i] < 'a' || s[i] > 'z') return 0;
    return 1;
}

/* root: the first rule, over the word classes a and b (and any rule the
 * caller appends). */
static void make_grammar_root(uint64_t seed, const char *root, char *out, size_t cap) {
    sd_rng r;
    sd_rng_seed(&r, seed);
    size_t k = (size_t)snprintf(out, cap, "%s\n", root);
    for (int cls = 0; cls < 2; cls++) {
        k += (size_t)snprintf(out + k, cap - k, "%s ::= ", cls ? "b" : "a");
        int words = 0;
        while (words < 6) {
            int32_t id = (int32_t)(sd_rng_next(&r) % (uint64_t)g_V);
            char piece[16];
            int n = sd_token_to_bytes(g_tok, id, false, piece, sizeof piece);
            if (!word_ok(piece, n, cls)) continue;
            k += (size_t)snprintf(out + k, cap - k, "%s\"%.*s\"", words ? " | " : "", n, piece);
            words++;
        }
        k += (size_t)snprintf(out + k, cap - k, "\n");
    }
}

static void make_grammar(uint64_t seed, char *out, size_t cap) { make_grammar_root(seed, "root ::= (a b){1,40}", out, cap); }

/* ---- drafters over the oracle, constrained by their own matcher ---- */

typedef enum { DR_PERFECT, DR_NOISY, DR_SAMPLED } dr_kind;

typedef struct gdrafter {
    dr_kind kind;
    const oracle *o;
    sd_gmatch *m;
    int32_t n_prompt;
    sd_rng rng;
    int32_t buf[1024];
    float row[8192];
} gdrafter;

/* The grammar state after the generated part of ctx. */
static int32_t state_after(gdrafter *d, const int32_t *ctx, int32_t n) {
    int32_t s = sd_gmatch_start(d->m);
    for (int32_t i = d->n_prompt; i < n && s >= 0; i++) s = sd_gmatch_token(d->m, s, ctx[i]);
    return s;
}

static int gd_propose(void *self, const int32_t *ctx, int32_t n, int k, int32_t *out, float *q, sd_err *err) {
    gdrafter *d = self;
    memcpy(d->buf, ctx, (size_t)n * sizeof *ctx);
    int32_t s = state_after(d, ctx, n);
    for (int i = 0; i < k; i++) {
        if (s < 0 || sd_gmatch_any(d->m, s) <= 0) return i;
        int32_t t;
        if (d->kind == DR_SAMPLED) { /* q: half on one allowed token, half on refused ones */
            const uint32_t *mask = sd_gmatch_mask(d->m, s, err);
            float *qi = q + (size_t)i * (size_t)g_V;
            int32_t first = -1;
            for (int32_t v = 0; v < g_V && first < 0; v++)
                if ((mask[v >> 5] >> (v & 31)) & 1) first = v;
            for (int32_t v = 0; v < g_V; v++) {
                int ok = (mask[v >> 5] >> (v & 31)) & 1;
                qi[v] = v == first ? 0.5f : !ok && v % 97 == 0 ? 1.0f : 0.0f;
            }
            double refused = 0;
            for (int32_t v = 0; v < g_V; v++)
                if (!((mask[v >> 5] >> (v & 31)) & 1)) refused += qi[v];
            for (int32_t v = 0; v < g_V; v++)
                if (!((mask[v >> 5] >> (v & 31)) & 1)) qi[v] = (float)(qi[v] * 0.5 / refused);
            t = sd_sample_probs(qi, g_V, &d->rng);
        } else {
            oracle_row(d->o, d->buf, n + i, d->row);
            t = sd_constrain_argmax(d->m, s, d->row, g_V, err);
            uint64_t u = sd_rng_next(&d->rng) % 6;
            if (d->kind == DR_NOISY && u < 2) { /* an allowed token, rarely the argmax */
                const uint32_t *mask = sd_gmatch_mask(d->m, s, err);
                int32_t start = (int32_t)(sd_rng_next(&d->rng) % (uint64_t)g_V);
                for (int32_t j = 0; j < g_V; j++) {
                    int32_t v = (start + j) % g_V;
                    if ((mask[v >> 5] >> (v & 31)) & 1) { t = v; break; }
                }
            } else if (d->kind == DR_NOISY && u == 2) {
                t = (int32_t)(sd_rng_next(&d->rng) % (uint64_t)g_V); /* most likely refused */
            }
        }
        out[i] = t;
        d->buf[n + i] = t;
        s = sd_gmatch_token(d->m, s, t);
    }
    return k;
}

static int gd_propose_top(void *self, const int32_t *ctx, int32_t n, int k, int w, int32_t *cand, sd_err *err) {
    gdrafter *d = self;
    int32_t chain[64];
    int got = gd_propose(self, ctx, n, k < 64 ? k : 64, chain, NULL, err);
    for (int i = 0; i < got; i++)
        for (int r = 0; r < w; r++)
            cand[(size_t)i * (size_t)w + r] = r == 0 ? chain[i] : (int32_t)(sd_rng_next(&d->rng) % (uint64_t)g_V);
    return got;
}

static sd_drafter gd_make(gdrafter *d) {
    return (sd_drafter){.name = "grammar-oracle", .self = d, .propose = gd_propose, .propose_top = gd_propose_top,
                        .stochastic = d->kind == DR_SAMPLED};
}

/* ---- one comparison ---- */

typedef struct outcome {
    int lossless_fail, invalid;
} outcome;

/* The reasoning runs: generate()'s oracle puts g_force_tok on top of the row
 * after a prefix of g_force_len tokens (0: nothing forced), and the commits
 * are recorded with whether each was an accepted draft token. */
static int32_t g_force_len, g_force_tok;
typedef struct commits {
    int32_t n;
    int32_t tok[N_PREDICT];
    bool from_draft[N_PREDICT];
} commits;

static bool on_commit(void *user, int32_t token, bool from_draft) {
    commits *c = user;
    if (c->n < N_PREDICT) c->tok[c->n] = token, c->from_draft[c->n] = from_draft, c->n++;
    return true;
}

static int32_t generate_rec(sd_gmatch *m, sd_drafter *dr, const int32_t *prompt, float temp, uint64_t seed, int K,
                            int tree, int32_t *out, commits *rec) {
    oracle o;
    oracle_init(&o, ORACLE_HASH, g_V, 2, 256, 99, 0);
    o.tree = tree;
    o.force_len = g_force_len;
    o.force_tok = g_force_tok;
    sd_lm lm = oracle_lm(&o);
    sd_spec_params p = sd_spec_default_params();
    p.n_predict = N_PREDICT;
    p.draft_max = K;
    p.adaptive_k = false;
    p.gate_misses = 0;
    p.stop_at_eog = false;
    p.grammar = m;
    p.sampling.temp = temp;
    p.sampling.seed = seed;
    p.tree_nodes = tree ? 8 : 0;
    p.tree_width = 2;
    if (dr) ((gdrafter *)dr->self)->o = &o;
    if (rec) p.commit_cb = on_commit, rec->n = 0;
    int32_t n = 0;
    sd_err err = {0};
    sd_status st = sd_spec_generate(&lm, dr, prompt, N_PROMPT, &p, NULL, rec, out, &n, NULL, &err);
    if (st != SD_OK) n = -1; /* a grammar error: counts as a failure */
    assert_int_equal(o.misuse, 0);
    oracle_free(&o);
    return n;
}

static int32_t generate(sd_gmatch *m, sd_drafter *dr, const int32_t *prompt, float temp, uint64_t seed, int K,
                        int tree, int32_t *out) {
    return generate_rec(m, dr, prompt, temp, seed, K, tree, out, NULL);
}

/* All LOSSLESS runs; counts failures instead of failing (for the mutants). */
static outcome run_lossless(int *runs) {
    outcome oc = {0};
    static const int32_t prompt[N_PROMPT] = {11, 22, 33};
    for (int gi = 0; gi < (slow() ? 2 : N_GRAMMARS); gi++) {
        char text[2048];
        make_grammar(1000 + (uint64_t)gi, text, sizeof text);
        sd_grammar *g = NULL;
        sd_err err = {0};
        if (sd_grammar_compile(text, strlen(text), NULL, g_tok, &g, &err) != SD_OK) fail_msg("%s\n%s", err.msg, text);
        sd_gmatch *m, *md, *check;
        assert_int_equal(sd_gmatch_init(g, g_tok, &m, &err), SD_OK);
        assert_int_equal(sd_gmatch_init(g, g_tok, &md, &err), SD_OK);
        assert_int_equal(sd_gmatch_init(g, g_tok, &check, &err), SD_OK);
        for (int s = 0; s < 2; s++) {
            float temp = s ? 0.8f : 0;
            int32_t want[N_PREDICT], got[N_PREDICT];
            int32_t nw = generate(m, NULL, prompt, temp, 5 + (uint64_t)gi, 1, 0, want);
            assert_true(nw > 0);
            for (int kind = DR_PERFECT; kind <= DR_NOISY; kind++)
                for (int v = 0; v < 3; v++) { /* K 3, K 6, a tree */
                    gdrafter d = {.kind = (dr_kind)kind, .m = md, .n_prompt = N_PROMPT};
                    sd_rng_seed(&d.rng, 77 + (uint64_t)(gi * 10 + kind));
                    sd_drafter dr = gd_make(&d);
                    int32_t ng = generate(m, &dr, prompt, temp, 5 + (uint64_t)gi, v == 1 ? 6 : 3, v == 2, got);
                    (*runs)++;
                    if (ng != nw || memcmp(got, want, (size_t)nw * sizeof *got)) oc.lossless_fail++;
                    int32_t st = sd_gmatch_start(check);
                    for (int32_t i = 0; i < ng && st >= 0; i++) st = sd_gmatch_token(check, st, got[i]);
                    if (ng < 0 || st < 0) oc.invalid++;
                }
        }
        sd_gmatch_free(m), sd_gmatch_free(md), sd_gmatch_free(check);
        sd_grammar_free(g);
    }
    return oc;
}

/* A token that is no word of the classes: the reasoning section's end (the
 * fixture vocabulary has no </think>; a token reference names it by id). */
static int32_t think_end_token(void) {
    for (int32_t id = 1; id < g_V; id++) {
        char piece[16];
        int n = sd_token_to_bytes(g_tok, id, false, piece, sizeof piece);
        if (n > 0 && n < (int)sizeof piece && !word_ok(piece, n, 0) && !word_ok(piece, n, 1)) return id;
    }
    fail_msg("no non-word token in the vocabulary");
    return -1;
}

/* A reasoning section expressed inside the grammar, as the server wraps an
 * answer's grammar (docs/GRAMMAR.md): anything but the end token E, E, then
 * the answer (a b)+. The oracle forces E after P reasoning tokens (P = 2..9,
 * so E lands at every offset of the K = 3 and 6 blocks); the perfect drafter
 * drafts it, so E is an accepted draft token and the next row, the first
 * masked with the answer's grammar, is a verify row of the same round.
 * Counts the runs where that happened in *in_block. */
static outcome run_reasoning(int *runs, int *in_block) {
    outcome oc = {0};
    static const int32_t prompt[N_PROMPT] = {11, 22, 33};
    char text[2048], root[128];
    const int32_t E = think_end_token();
    snprintf(root, sizeof root, "root ::= think (a b){1,40}\nthink ::= (!<[%d]>)* <[%d]>", E, E);
    *in_block = 0;
    for (int gi = 0; gi < N_REASONING; gi++) {
        make_grammar_root(3000 + (uint64_t)gi, root, text, sizeof text);
        sd_grammar *g = NULL;
        sd_err err = {0};
        if (sd_grammar_compile(text, strlen(text), NULL, g_tok, &g, &err) != SD_OK) fail_msg("%s\n%s", err.msg, text);
        sd_gmatch *m, *md, *check;
        assert_int_equal(sd_gmatch_init(g, g_tok, &m, &err), SD_OK);
        assert_int_equal(sd_gmatch_init(g, g_tok, &md, &err), SD_OK);
        assert_int_equal(sd_gmatch_init(g, g_tok, &check, &err), SD_OK);
        for (int32_t P = 2; P <= 7; P++) {
            g_force_tok = E;
            g_force_len = N_PROMPT + P;
            for (int s = 0; s < 2; s++) {
                float temp = s ? 0.8f : 0;
                uint64_t seed = 5 + (uint64_t)(gi * 16 + P);
                int32_t want[N_PREDICT], got[N_PREDICT];
                int32_t nw = generate(m, NULL, prompt, temp, seed, 1, 0, want);
                assert_true(nw > P);
                if (want[P] != E) fail_msg("the plain run did not end its reasoning at %d", P);
                for (int kind = DR_PERFECT; kind <= DR_NOISY; kind++)
                    for (int v = 0; v < 3; v++) { /* K 3, K 6, a tree */
                        gdrafter d = {.kind = (dr_kind)kind, .m = md, .n_prompt = N_PROMPT};
                        sd_rng_seed(&d.rng, 91 + (uint64_t)(gi * 10 + kind + P * 100));
                        sd_drafter dr = gd_make(&d);
                        commits rec;
                        int32_t ng = generate_rec(m, &dr, prompt, temp, seed, v == 1 ? 6 : 3, v == 2, got, &rec);
                        (*runs)++;
                        if (ng != nw || memcmp(got, want, (size_t)nw * sizeof *got)) oc.lossless_fail++;
                        int32_t st = sd_gmatch_start(check);
                        for (int32_t i = 0; i < ng && st >= 0; i++) st = sd_gmatch_token(check, st, got[i]);
                        if (ng < 0 || st < 0) oc.invalid++;
                        /* E committed as an accepted draft: the rest of its round is masked by the answer */
                        if (ng > P + 1 && rec.n > P + 1 && rec.tok[P] == E && rec.from_draft[P]) (*in_block)++;
                    }
            }
        }
        g_force_len = 0;
        sd_gmatch_free(m), sd_gmatch_free(md), sd_gmatch_free(check);
        sd_grammar_free(g);
    }
    return oc;
}

/* The law of the token after a0 with sampled drafts, against the exact
 * constrained distribution: returns the chi-square p-value. */
static double run_sampled_law(int n_runs) {
    static const int32_t prompt[N_PROMPT] = {11, 22, 33};
    char text[2048];
    make_grammar(4242, text, sizeof text);
    sd_grammar *g = NULL;
    sd_err err = {0};
    assert_int_equal(sd_grammar_compile(text, strlen(text), NULL, g_tok, &g, &err), SD_OK);
    sd_gmatch *m, *md;
    assert_int_equal(sd_gmatch_init(g, g_tok, &m, &err), SD_OK);
    assert_int_equal(sd_gmatch_init(g, g_tok, &md, &err), SD_OK);
    const float temp = 0.8f;
    /* exact: P(t1) = sum over a0 of p(a0) p(t1 | a0), both masked softmaxes */
    oracle o;
    oracle_init(&o, ORACLE_HASH, g_V, 2, 256, 99, 0);
    double *prob = calloc((size_t)g_V, sizeof *prob);
    float *row = malloc(sizeof *row * (size_t)g_V), *pa = malloc(sizeof *pa * (size_t)g_V),
          *pb = malloc(sizeof *pb * (size_t)g_V);
    sd_sampler sm;
    sd_sampling sp = {.temp = temp, .top_k = 0, .top_p = 1, .min_p = 0, .seed = 1};
    assert_int_equal(sd_sampler_init(&sm, &sp, g_V, &err), SD_OK);
    int32_t ctx[8] = {11, 22, 33};
    int32_t s0 = sd_gmatch_start(m);
    oracle_row(&o, ctx, 3, row);
    assert_int_equal(sd_constrain_mask_row(m, s0, row, g_V, &err), SD_OK);
    sd_sampler_probs(&sm, row, pa);
    for (int32_t a0 = 0; a0 < g_V; a0++) {
        if (!(pa[a0] > 0)) continue;
        ctx[3] = a0;
        int32_t s1 = sd_gmatch_token(m, s0, a0);
        oracle_row(&o, ctx, 4, row);
        assert_int_equal(sd_constrain_mask_row(m, s1, row, g_V, &err), SD_OK);
        sd_sampler_probs(&sm, row, pb);
        for (int32_t t = 0; t < g_V; t++) prob[t] += (double)pa[a0] * pb[t];
    }
    oracle_free(&o);
    int *count = calloc((uint32_t)g_V, sizeof *count);
    int64_t rounds = 0;
    int broken = 0;
    for (int r = 0; r < n_runs; r++) {
        gdrafter d = {.kind = DR_SAMPLED, .m = md, .n_prompt = N_PROMPT};
        sd_rng_seed(&d.rng, 1000003 + (uint64_t)r);
        sd_drafter dr = gd_make(&d);
        oracle o2;
        oracle_init(&o2, ORACLE_HASH, g_V, 2, 256, 99, 0);
        sd_lm lm = oracle_lm(&o2);
        d.o = &o2;
        sd_spec_params p = sd_spec_default_params();
        p.n_predict = 3; /* a0, then one round: its draft is verified against the row after a0 */
        p.draft_max = 1;
        p.adaptive_k = false;
        p.gate_misses = 0;
        p.stop_at_eog = false;
        p.grammar = m;
        p.sampling.temp = temp;
        p.sampling.seed = 17 + (uint64_t)r;
        int32_t out[4], n = 0;
        sd_spec_stats sst;
        assert_int_equal(sd_spec_generate(&lm, &dr, prompt, N_PROMPT, &p, NULL, NULL, out, &n, &sst, &err), SD_OK);
        rounds += sst.rounds;
        if (n < 2) broken++; /* (only a mutant stops there: the grammar allows 40 word pairs) */
        else count[out[1]]++;
        oracle_free(&o2);
    }
    assert_true(rounds > n_runs / 4); /* the law is that of verified rounds, not of plain steps */
    double pv = broken ? 0 : chi_square_p(count, prob, g_V, n_runs);
    free(count), free(prob), free(row), free(pa), free(pb);
    sd_sampler_free(&sm);
    sd_gmatch_free(m), sd_gmatch_free(md);
    sd_grammar_free(g);
    return pv;
}

enum { N_LAW = 3000, N_LAW_SLOW = 1000 };
#define LAW_RUNS (slow() ? N_LAW_SLOW : N_LAW)

static void test_lossless(void **state) {
    (void)state;
    int runs = 0;
    outcome oc = run_lossless(&runs);
    printf("grammar oracle: LOSSLESS %d/%d runs, %d invalid\n", runs - oc.lossless_fail, runs, oc.invalid);
    assert_int_equal(oc.lossless_fail, 0);
    assert_int_equal(oc.invalid, 0);
}

static void test_reasoning_in_block(void **state) {
    (void)state;
    int runs = 0, in_block = 0;
    outcome oc = run_reasoning(&runs, &in_block);
    printf("reasoning section: LOSSLESS %d/%d runs, %d invalid; its end an accepted draft token in %d runs\n",
           runs - oc.lossless_fail, runs, oc.invalid, in_block);
    assert_int_equal(oc.lossless_fail, 0);
    assert_int_equal(oc.invalid, 0);
    assert_true(in_block > 0);
}

static void test_sampled_law(void **state) {
    (void)state;
    double pv = run_sampled_law(LAW_RUNS);
    printf("sampled drafts, q half refused: chi-square p = %.3g over %d runs\n", pv, LAW_RUNS);
    assert_true(pv > P_FAIL);
}

/* sd_constrain_argmax (which tries the best tokens before any mask) equals
 * the argmax over the full mask, first index on ties, on rows with many
 * ties, along random walks of random grammars. */
static void test_masked_argmax(void **state) {
    (void)state;
    float *row = malloc(sizeof *row * (size_t)g_V);
    sd_rng r;
    sd_rng_seed(&r, 2024);
    int checked = 0;
    for (int gi = 0; gi < 4; gi++) {
        char text[2048];
        make_grammar(7000 + (uint64_t)gi, text, sizeof text);
        sd_grammar *g = NULL;
        sd_gmatch *m;
        sd_err err = {0};
        assert_int_equal(sd_grammar_compile(text, strlen(text), NULL, g_tok, &g, &err), SD_OK);
        assert_int_equal(sd_gmatch_init(g, g_tok, &m, &err), SD_OK);
        int32_t s = sd_gmatch_start(m);
        for (int step = 0; step < 60 && s >= 0; step++) {
            int levels = step % 3 == 0 ? 3 : 50; /* few levels: ties everywhere */
            for (int32_t v = 0; v < g_V; v++) row[v] = (float)(sd_rng_next(&r) % (uint64_t)levels);
            const uint32_t *mask = sd_gmatch_mask(m, s, &err);
            if (step % 3 == 1) { /* a refused token on top, then two allowed ones tied: the tried-first path */
                int32_t a = -1, b = -1, refused = -1;
                for (int32_t k = 0; k < 4 * g_V && (a < 0 || b < 0 || refused < 0); k++) {
                    int32_t v = (int32_t)(sd_rng_next(&r) % (uint64_t)g_V);
                    int ok = (mask[v >> 5] >> (v & 31)) & 1;
                    if (ok && a < 0) a = v;
                    else if (ok && v != a && b < 0) b = v;
                    else if (!ok && refused < 0) refused = v;
                }
                if (a >= 0) row[a] = (float)levels;
                if (b >= 0) row[b] = (float)levels;
                if (refused >= 0) row[refused] = (float)levels + 1;
            }
            int32_t want = -1;
            for (int32_t v = 0; v < g_V; v++)
                if (((mask[v >> 5] >> (v & 31)) & 1) && (want < 0 || row[v] > row[want])) want = v;
            int32_t got = sd_constrain_argmax(m, s, row, g_V, &err);
            if (got != want) fail_msg("grammar %d step %d: masked argmax %d, full mask says %d", gi, step, got, want);
            checked++;
            s = sd_gmatch_token(m, s, want);
        }
        sd_gmatch_free(m);
        sd_grammar_free(g);
    }
    free(row);
    printf("masked argmax == full-mask argmax at %d rows\n", checked);
}

/* Each mutant must be caught by one of the checks. */
static void test_mutants(void **state) {
    (void)state;
    static const struct {
        int id;
        const char *name;
    } muts[] = {
        {SD_GMUT_SKIP_ROW1, "row 1 unmasked"},
        {SD_GMUT_BONUS_UNMASKED, "bonus row unmasked"},
        {SD_GMUT_COMMITTED_STATE, "rows masked with the committed state"},
        {SD_GMUT_ADVANCE_REJECTED, "grammar advanced on a rejected token"},
        {SD_GMUT_UNMASKED_Q, "sampled drafts' q unmasked"},
    };
    for (size_t i = 0; i < sizeof muts / sizeof *muts; i++) {
        sd_grammar_mutant = muts[i].id;
        int runs = 0, r_runs = 0, in_block = 0;
        outcome oc = run_lossless(&runs);
        outcome orr = run_reasoning(&r_runs, &in_block);
        double pv = run_sampled_law(LAW_RUNS);
        sd_grammar_mutant = SD_GMUT_NONE;
        int caught = oc.lossless_fail > 0 || oc.invalid > 0 || orr.lossless_fail > 0 || orr.invalid > 0 || pv <= P_FAIL;
        printf("mutant \"%s\": LOSSLESS failed %d/%d, invalid %d; reasoning failed %d/%d, invalid %d; law p = %.3g"
               " -> %s\n", muts[i].name, oc.lossless_fail, runs, oc.invalid, orr.lossless_fail, r_runs, orr.invalid, pv,
               caught ? "caught" : "NOT CAUGHT");
        if (!caught) fail_msg("mutant \"%s\" was not caught", muts[i].name);
    }
}

static int setup(void **state) {
    (void)state;
    g_tok = load_vocab("models/fixture-target.gguf");
    g_V = sd_tokenizer_n_vocab(g_tok);
    return 0;
}
static int teardown(void **state) {
    (void)state;
    sd_tokenizer_free(g_tok);
    return 0;
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_masked_argmax),
        cmocka_unit_test(test_lossless),
        cmocka_unit_test(test_reasoning_in_block),
        cmocka_unit_test(test_sampled_law),
        cmocka_unit_test(test_mutants),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
