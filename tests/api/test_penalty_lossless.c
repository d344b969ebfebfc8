/* Penalties and logit bias (specdec_generate_params presence_penalty,
 * frequency_penalty, repeat_penalty + repeat_last_n, logit_bias) are
 * LOSSLESS for every drafter: the speculative output equals penalised plain
 * decoding's token for token, greedy and at temperature 0.8 with a fixed
 * seed, on the dense, hybrid (qwen35) and MoE fixtures, with n-gram, draft
 * model, MTP, EAGLE-3, suffix, auto, token trees, and the grammar-forced
 * drafter (with a grammar, so masks and penalties act on the same rows).
 * The penalties must matter: every penalised plain output differs from the
 * unpenalised one. Out-of-range values are refused with the field named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_test_util.h"
#include "specdec.h"

enum { N_PREDICT = 40, N_PROMPTS = 2, N_PEN = 2 };

static const char *PROMPTS[N_PROMPTS] = {"bench/prompts/code-c.txt", "bench/prompts/free-story.txt"};
static const char *GRAMMAR = "root ::= word (sep word){0,30} \".\"\nword ::= [a-zA-Z]{1,12}\nsep ::= \" \" | \", \" | \"\\n\"";

typedef struct setup {
    const char *label;
    int fixture; /* 0 dense, 1 qwen35 hybrid, 2 MoE */
    int draft;   /* 0 none, 1 draft model, 2 EAGLE-3 head */
    specdec_spec_mode spec;
    int32_t tree_nodes;
    bool grammar;
} setup;

static const setup SETUPS[] = {
    {"dense ngram", 0, 0, SPECDEC_SPEC_NGRAM, 0, false},
    {"dense draft", 0, 1, SPECDEC_SPEC_DRAFT, 0, false},
    {"dense draft tree", 0, 1, SPECDEC_SPEC_DRAFT, 8, false},
    {"dense eagle3", 0, 2, SPECDEC_SPEC_EAGLE3, 0, false},
    {"dense eagle3 tree", 0, 2, SPECDEC_SPEC_EAGLE3, 8, false},
    {"dense suffix", 0, 0, SPECDEC_SPEC_SUFFIX, 0, false},
    {"dense auto", 0, 1, SPECDEC_SPEC_AUTO, 0, false},
    {"dense grammar", 0, 0, SPECDEC_SPEC_GRAMMAR, 0, true},
    {"dense draft+gram", 0, 1, SPECDEC_SPEC_DRAFT, 0, true},
    {"q35 ngram", 1, 0, SPECDEC_SPEC_NGRAM, 0, false},
    {"q35 draft", 1, 1, SPECDEC_SPEC_DRAFT, 0, false},
    {"q35 mtp", 1, 0, SPECDEC_SPEC_MTP, 0, false},
    {"q35 suffix", 1, 0, SPECDEC_SPEC_SUFFIX, 0, false},
    {"q35 auto", 1, 0, SPECDEC_SPEC_AUTO, 0, false},
    {"moe ngram", 2, 0, SPECDEC_SPEC_NGRAM, 0, false},
    {"moe draft", 2, 1, SPECDEC_SPEC_DRAFT, 0, false},
    {"moe auto", 2, 1, SPECDEC_SPEC_AUTO, 0, false},
    {"moe grammar", 2, 0, SPECDEC_SPEC_GRAMMAR, 0, true},
};
enum { N_SETUPS = sizeof SETUPS / sizeof *SETUPS };

static specdec_logit_bias g_bias[3];

/* Penalty setting pi: 0 = OpenAI's presence and frequency with a logit
 * bias (a ban and a boost); 1 = llama.cpp's repeat penalty over a short window. */
static specdec_generate_params params(specdec_spec_mode spec, bool sampled, int seed, int pi,
                                      const specdec_grammar *g) {
    specdec_generate_params gp = specdec_generate_default_params();
    gp.n_predict = N_PREDICT;
    gp.spec = spec;
    gp.draft_max = 6;
    gp.fixed_k = true;
    gp.gate = 0; /* every round drafts */
    gp.grammar = g;
    if (sampled) gp.temperature = 0.8f, gp.seed = 7 + (uint64_t)seed;
    if (pi == 0) {
        gp.presence_penalty = 0.7f;
        gp.frequency_penalty = 0.4f;
        gp.logit_bias = g_bias;
        gp.n_logit_bias = 3;
    } else if (pi == 1) {
        gp.repeat_penalty = 1.5f;
        gp.repeat_last_n = 16;
    }
    return gp;
}

static void test_lossless_every_drafter(void **state) {
    (void)state;
    const bool slow = api_test_slow();
    const int n_prompts = slow ? 1 : N_PROMPTS;
    char *P[N_PROMPTS];
    for (int i = 0; i < N_PROMPTS; i++) P[i] = api_bench_prompt(PROMPTS[i], NULL, 0);
    specdec_model *tm[3] = {api_load("models/fixture-target.gguf"), api_load("models/fixture-q35-target.gguf"),
                            api_load("models/fixture-moe-target.gguf")};
    specdec_model *dm[3] = {api_load("models/fixture-draft.gguf"), api_load("models/fixture-q35-draft.gguf"), NULL};
    dm[2] = dm[0];
    specdec_model *head = api_load("models/fixture-eagle3.gguf");
    specdec_context *plain[3], *ctx[3][3] = {{0}};
    specdec_grammar *G[3];
    for (int f = 0; f < 3; f++) {
        plain[f] = api_context(tm[f], NULL, 512);
        ctx[f][0] = plain[f];
        ctx[f][1] = api_context(tm[f], dm[f], 512);
        if (f == 0) ctx[f][2] = api_context(tm[f], head, 512);
        specdec_error err = {0};
        if (specdec_grammar_init(tm[f], GRAMMAR, strlen(GRAMMAR), NULL, &G[f], &err) != SPECDEC_OK)
            fail_msg("grammar: %s", err.message);
    }
    /* the bias: ban the unpenalised greedy output's first token, boost two others a little */
    {
        specdec_generate_params gp = params(SPECDEC_SPEC_NONE, false, 0, -1, NULL);
        specdec_token out[N_PREDICT + 1];
        specdec_stats st;
        api_generate_after(plain[0], tm[0], P[0], &gp, out, N_PREDICT, &st);
        g_bias[0] = (specdec_logit_bias){out[0], -100};
        g_bias[1] = (specdec_logit_bias){out[2], 1.5f};
        g_bias[2] = (specdec_logit_bias){out[3], -2.0f};
    }
    static specdec_token want[3][2][N_PEN][2][N_PROMPTS][N_PREDICT + 1];
    static int32_t n_want[3][2][N_PEN][2][N_PROMPTS];
    /* slow: plain references only for the (penalty, sampling) pairs the rotation below runs */
    static bool used[3][2][N_PEN][2];
    for (int k = 0; k < N_SETUPS; k++)
        for (int c = 0; c < N_PEN * 2; c++)
            if (!slow || c == k % (N_PEN * 2)) used[SETUPS[k].fixture][SETUPS[k].grammar][c / 2][c % 2] = true;
    int differs = 0, compared = 0;
    for (int f = 0; f < 3; f++)
        for (int gr = 0; gr < 2; gr++)
            for (int pi = 0; pi < N_PEN; pi++)
                for (int s = 0; s < 2; s++)
                    for (int i = 0; i < n_prompts && used[f][gr][pi][s]; i++) {
                        const specdec_grammar *g = gr ? G[f] : NULL;
                        specdec_generate_params gp = params(SPECDEC_SPEC_NONE, s, i, pi, g);
                        specdec_stats st;
                        specdec_token *w = want[f][gr][pi][s][i];
                        n_want[f][gr][pi][s][i] = api_generate_after(plain[f], tm[f], P[i], &gp, w, N_PREDICT, &st);
                        /* the penalties must matter */
                        specdec_generate_params up = params(SPECDEC_SPEC_NONE, s, i, -1, g);
                        specdec_token free_out[N_PREDICT + 1];
                        int32_t nf = api_generate_after(plain[f], tm[f], P[i], &up, free_out, N_PREDICT, &st);
                        differs += nf != n_want[f][gr][pi][s][i] || memcmp(free_out, w, (size_t)nf * sizeof *w) != 0;
                        compared++;
                        if (f == 0 && pi == 0 && !gr)
                            for (int32_t j = 0; j < n_want[f][gr][pi][s][i]; j++)
                                assert_true(w[j] != g_bias[0].token); /* the ban holds */
                    }
    printf("penalised plain output differs from unpenalised in %d/%d cases\n", differs, compared);
    assert_true(differs * 4 >= compared * 3);
    int runs = 0;
    for (int k = 0; k < N_SETUPS; k++) {
        const setup *u = &SETUPS[k];
        long long drafted = 0, accepted = 0;
        for (int pi = 0; pi < N_PEN; pi++)
            for (int s = 0; s < 2; s++)
                for (int i = 0; i < n_prompts; i++) {
                    /* slow: one (penalty, sampling) pair per drafter, in rotation, so each pair still runs */
                    if (slow && (pi * 2 + s) != k % (N_PEN * 2)) continue;
                    specdec_generate_params gp = params(u->spec, s, i, pi, u->grammar ? G[u->fixture] : NULL);
                    gp.tree_nodes = u->tree_nodes;
                    specdec_token got[N_PREDICT + 1];
                    specdec_stats st;
                    specdec_context *c = ctx[u->fixture][u->draft];
                    int32_t n = api_generate_after(c, tm[u->fixture], P[i], &gp, got, N_PREDICT, &st);
                    const specdec_token *w = want[u->fixture][u->grammar][pi][s][i];
                    int32_t nw = n_want[u->fixture][u->grammar][pi][s][i], j = 0;
                    while (j < n && j < nw && got[j] == w[j]) j++;
                    if (n != nw || j != n)
                        fail_msg("%s, penalties %d, prompt %d, %s: token %d differs from penalised plain decoding "
                                 "(%d vs %d; %d vs %d tokens)",
                                 u->label, pi, i, s ? "temp 0.8" : "greedy", j, j < n ? got[j] : -1,
                                 j < nw ? w[j] : -1, n, nw);
                    drafted += st.n_drafted, accepted += st.n_accepted;
                    runs++;
                }
        printf("%-18s LOSSLESS, %s: alpha %.3f (%lld/%lld)\n", u->label,
               slow ? "1 prompt, 1 (penalty, sampling) pair" : "2 penalty settings x 2 prompts x {greedy, temp 0.8}", drafted ? (double)accepted / (double)drafted : 0.0, accepted, drafted);
        assert_true(drafted > 0);
    }
    printf("LOSSLESS %d/%d runs\n", runs, runs);
    for (int f = 0; f < 3; f++) {
        specdec_grammar_free(G[f]);
        for (int d = 0; d < 3; d++) specdec_context_free(ctx[f][d]);
        specdec_model_free(tm[f]);
    }
    specdec_model_free(dm[0]);
    specdec_model_free(dm[1]);
    specdec_model_free(head);
    for (int i = 0; i < N_PROMPTS; i++) free(P[i]);
}

/* The log-probabilities the pieces carry, gathered. */
typedef struct lp_sink {
    specdec_token_logprob lp[N_PREDICT + 1];
    int32_t n, n_tokens;
} lp_sink;

static bool gather(const specdec_piece *p, void *user) {
    lp_sink *s = user;
    assert_int_equal(p->n_logprobs, p->n_tokens);
    for (int32_t i = 0; i < p->n_logprobs && s->n < N_PREDICT + 1; i++) s->lp[s->n++] = p->logprobs[i];
    s->n_tokens += p->n_tokens;
    return true;
}

static void gen_lp(specdec_context *c, const specdec_model *m, const char *text, const specdec_generate_params *gp,
                   lp_sink *out) {
    specdec_token *t = NULL;
    size_t n = 0;
    specdec_error err = {0};
    if (specdec_tokenize(m, text, strlen(text), true, false, &t, &n, &err) != SPECDEC_OK) fail_msg("%s", err.message);
    specdec_context_reset(c);
    *out = (lp_sink){0};
    if (specdec_generate(c, t, n, gp, gather, out, NULL, &err) != SPECDEC_OK) fail_msg("generate: %s", err.message);
    specdec_free(t);
}

static bool lp_same(const lp_sink *a, const lp_sink *b) {
    if (a->n != b->n) return false;
    for (int32_t i = 0; i < a->n; i++) {
        const specdec_token_logprob *x = &a->lp[i], *y = &b->lp[i];
        if (x->token != y->token || memcmp(&x->logprob, &y->logprob, sizeof(float)) || x->n_top != y->n_top ||
            memcmp(x->top_token, y->top_token, (size_t)x->n_top * sizeof *x->top_token) ||
            memcmp(x->top_logprob, y->top_logprob, (size_t)x->n_top * sizeof *x->top_logprob))
            return false;
    }
    return true;
}

/* Log-probabilities through the pieces: one per delivered token, bitwise
 * equal with every drafter to plain decoding's, penalised and constrained
 * too; greedy picks are the best alternative; a banned token is never listed. */
static void test_logprobs(void **state) {
    (void)state;
    char *P = api_bench_prompt(PROMPTS[1], NULL, 0);
    specdec_model *tm = api_load("models/fixture-target.gguf"), *dm = api_load("models/fixture-draft.gguf"),
                  *head = api_load("models/fixture-eagle3.gguf");
    specdec_context *plain = api_context(tm, NULL, 512), *cd = api_context(tm, dm, 512),
                    *ce = api_context(tm, head, 512);
    specdec_grammar *g = NULL;
    specdec_error err = {0};
    assert_int_equal(specdec_grammar_init(tm, GRAMMAR, strlen(GRAMMAR), NULL, &g, &err), SPECDEC_OK);
    static lp_sink want, got;
    int runs = 0;
    /* under the sanitizers or an emulator: the penalised setting only; every way still runs */
    const bool slow = api_test_slow();
    for (int pi = slow ? 0 : -1; pi < (slow ? 1 : N_PEN); pi++)
        for (int gr = 0; gr < 2; gr++)
            for (int s = 0; s < 2; s++) {
                specdec_generate_params gp = params(SPECDEC_SPEC_NONE, s, 0, pi, gr ? g : NULL);
                gp.logprobs = 5;
                gen_lp(plain, tm, P, &gp, &want);
                assert_true(want.n > 0 && want.n == want.n_tokens);
                for (int32_t i = 0; i < want.n; i++) {
                    assert_true(want.lp[i].logprob <= 0 && want.lp[i].n_top == 5);
                    if (!s) assert_true(want.lp[i].top_token[0] == want.lp[i].token);
                    for (int j = 0; pi == 0 && j < want.lp[i].n_top; j++) assert_true(want.lp[i].top_token[j] != g_bias[0].token);
                }
                const struct {
                    specdec_context *c;
                    specdec_spec_mode m;
                    int32_t tree;
                } ways[] = {{plain, SPECDEC_SPEC_NGRAM, 0}, {plain, SPECDEC_SPEC_SUFFIX, 0}, {cd, SPECDEC_SPEC_DRAFT, 0},
                            {cd, SPECDEC_SPEC_DRAFT, 8}, {cd, SPECDEC_SPEC_AUTO, 0}, {ce, SPECDEC_SPEC_EAGLE3, 8}};
                for (size_t w = 0; w < sizeof ways / sizeof *ways; w++) {
                    specdec_generate_params sp = params(ways[w].m, s, 0, pi, gr ? g : NULL);
                    sp.logprobs = 5;
                    sp.tree_nodes = ways[w].tree;
                    gen_lp(ways[w].c, tm, P, &sp, &got);
                    if (!lp_same(&want, &got))
                        fail_msg("penalties %d, grammar %d, %s, way %zu: log-probabilities differ from plain decoding's",
                                 pi, gr, s ? "temp 0.8" : "greedy", w);
                    runs++;
                }
            }
    printf("log-probabilities bitwise equal to plain decoding's in %d runs\n", runs);
    specdec_generate_params bad = specdec_generate_default_params();
    bad.logprobs = 21;
    specdec_token t[2] = {1, 2};
    assert_int_equal(specdec_generate(plain, t, 2, &bad, NULL, NULL, NULL, &err), SPECDEC_ERR_ARG);
    assert_non_null(strstr(err.message, "logprobs"));
    specdec_grammar_free(g);
    specdec_context_free(plain), specdec_context_free(cd), specdec_context_free(ce);
    specdec_model_free(tm), specdec_model_free(dm), specdec_model_free(head);
    free(P);
}

/* Out-of-range values: SPECDEC_ERR_ARG naming the field. */
static void test_refused(void **state) {
    (void)state;
    specdec_model *m = api_load("models/fixture-target.gguf");
    specdec_context *c = api_context(m, NULL, 128);
    specdec_token t[2] = {1, 2};
    specdec_logit_bias bad_tok = {specdec_model_n_vocab(m), 1}, bad_bias = {5, 101}, ok = {5, -100};
    struct {
        specdec_generate_params gp;
        const char *field;
    } cases[7];
    for (int i = 0; i < 7; i++) cases[i].gp = specdec_generate_default_params();
    cases[0].gp.presence_penalty = 2.5f, cases[0].field = "presence_penalty";
    cases[1].gp.frequency_penalty = -2.01f, cases[1].field = "frequency_penalty";
    cases[2].gp.repeat_penalty = 0, cases[2].field = "repeat_penalty";
    cases[3].gp.repeat_last_n = -2, cases[3].field = "repeat_last_n";
    cases[4].gp.logit_bias = &bad_tok, cases[4].gp.n_logit_bias = 1, cases[4].field = "logit_bias";
    cases[5].gp.logit_bias = &bad_bias, cases[5].gp.n_logit_bias = 1, cases[5].field = "logit_bias";
    cases[6].gp.n_logit_bias = 1, cases[6].field = "logit_bias";
    for (int i = 0; i < 7; i++) {
        specdec_error err = {0};
        assert_int_equal(specdec_generate(c, t, 2, &cases[i].gp, NULL, NULL, NULL, &err), SPECDEC_ERR_ARG);
        if (!strstr(err.message, cases[i].field)) fail_msg("case %d: \"%s\" does not name %s", i, err.message, cases[i].field);
    }
    specdec_generate_params gp = specdec_generate_default_params();
    gp.logit_bias = &ok, gp.n_logit_bias = 1, gp.n_predict = 4;
    specdec_error err = {0};
    assert_int_equal(specdec_generate(c, t, 2, &gp, NULL, NULL, NULL, &err), SPECDEC_OK);
    specdec_context_free(c);
    specdec_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refused),
        cmocka_unit_test(test_lossless_every_drafter),
        cmocka_unit_test(test_logprobs),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
