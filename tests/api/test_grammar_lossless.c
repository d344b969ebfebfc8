/* Constrained generation (specdec_generate_params.grammar) is LOSSLESS for
 * every drafter: the speculative output equals constrained plain decoding's
 * token for token, greedy and at temperature 0.8 with a fixed seed, on the
 * dense, hybrid (qwen35) and MoE fixtures, with n-gram, draft model, MTP,
 * EAGLE-3, suffix, auto (which drafts the grammar's forced text first) and
 * the grammar-forced drafter alone, chains and token trees. The grammars are
 * ones where the model's own preference is often refused (letters where it
 * wants code, a bounded JSON shape, a reasoning section closed by a token
 * reference), so masks change tokens inside verified blocks. Every output
 * that ended (end of generation or the grammar's end) is a sentence of the
 * grammar; one that hit n_predict is a prefix of one. */
#define _POSIX_C_SOURCE 200809L /* glob */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api_test_util.h"
#include "specdec.h"

enum { N_PREDICT = 40, N_PROMPTS = 3 };

static const char *PROMPTS[N_PROMPTS] = {"bench/prompts/code-c.txt", "bench/prompts/free-story.txt",
                                         "bench/prompts/rag-spec.txt"};

/* Grammars: %s is replaced by a control token of the vocabulary (the end of
 * the reasoning section, as a token reference). */
static const char *GRAMMARS[] = {
    /* words and punctuation only: the code-trained fixtures want symbols */
    "root ::= word (sep word){0,30} \".\"\nword ::= [a-zA-Z]{1,12}\nsep ::= \" \" | \", \" | \"\\n\"",
    /* a JSON object with a fixed shape: forced text between free strings */
    "root ::= \"{\\\"name\\\": \\\"\" str \"\\\", \\\"n\\\": \" [0-9]{1,4} \", \\\"tags\\\": [\" tag (\", \" tag){0,3} \"]}\"\n"
    "str ::= [a-zA-Z0-9 _.]{1,24}\ntag ::= \"\\\"\" [a-z]{1,8} \"\\\"\"",
    /* a reasoning section: anything but the end token, the end token, then an answer */
    "root ::= think answer\nthink ::= (!<[%d]>){2,12} <[%d]>\nanswer ::= \" answer: \" (\"yes\" | \"no\" | [0-9]{1,3})",
};
enum { N_GRAMMARS = sizeof GRAMMARS / sizeof *GRAMMARS };

typedef struct setup {
    const char *label;
    int fixture; /* 0 dense, 1 qwen35 hybrid, 2 MoE */
    int draft;   /* 0 none, 1 draft model, 2 EAGLE-3 head */
    specdec_spec_mode spec;
    int32_t tree_nodes;
} setup;

static const setup SETUPS[] = {
    {"dense ngram", 0, 0, SPECDEC_SPEC_NGRAM, 0},
    {"dense draft", 0, 1, SPECDEC_SPEC_DRAFT, 0},
    {"dense draft tree", 0, 1, SPECDEC_SPEC_DRAFT, 8},
    {"dense eagle3", 0, 2, SPECDEC_SPEC_EAGLE3, 0},
    {"dense eagle3 tree", 0, 2, SPECDEC_SPEC_EAGLE3, 8},
    {"dense suffix", 0, 0, SPECDEC_SPEC_SUFFIX, 0},
    {"dense auto", 0, 1, SPECDEC_SPEC_AUTO, 0},
    {"dense grammar", 0, 0, SPECDEC_SPEC_GRAMMAR, 0},
    {"q35 ngram", 1, 0, SPECDEC_SPEC_NGRAM, 0},
    {"q35 draft", 1, 1, SPECDEC_SPEC_DRAFT, 0},
    {"q35 mtp", 1, 0, SPECDEC_SPEC_MTP, 0},
    {"q35 suffix", 1, 0, SPECDEC_SPEC_SUFFIX, 0},
    {"q35 auto", 1, 0, SPECDEC_SPEC_AUTO, 0},
    {"q35 grammar", 1, 0, SPECDEC_SPEC_GRAMMAR, 0},
    {"moe ngram", 2, 0, SPECDEC_SPEC_NGRAM, 0},
    {"moe draft", 2, 1, SPECDEC_SPEC_DRAFT, 0},
    {"moe auto", 2, 1, SPECDEC_SPEC_AUTO, 0},
    {"moe grammar", 2, 0, SPECDEC_SPEC_GRAMMAR, 0},
};
enum { N_SETUPS = sizeof SETUPS / sizeof *SETUPS };

static specdec_generate_params params(specdec_spec_mode spec, bool sampled, int seed, const specdec_grammar *g) {
    specdec_generate_params gp = specdec_generate_default_params();
    gp.n_predict = N_PREDICT;
    gp.spec = spec;
    gp.draft_max = 6;
    gp.fixed_k = true;
    gp.gate = 0; /* every round drafts */
    gp.grammar = g;
    if (sampled) gp.temperature = 0.8f, gp.seed = 7 + (uint64_t)seed;
    return gp;
}

/* A control token that does not end generation, for the reasoning grammar. */
static int32_t control_token(const specdec_model *m) {
    for (int32_t id = 0; id < specdec_model_n_vocab(m); id++)
        if (specdec_token_is_control(m, id) && !specdec_token_is_eog(m, id)) return id;
    return -1;
}

static specdec_grammar *compile(const specdec_model *m, int gi) {
    char text[1024];
    int32_t ctl = control_token(m);
    if (gi == 2 && ctl < 0) return NULL;
    snprintf(text, sizeof text, GRAMMARS[gi], ctl, ctl);
    specdec_grammar *g = NULL;
    specdec_error err = {0};
    if (specdec_grammar_init(m, text, strlen(text), NULL, &g, &err) != SPECDEC_OK) fail_msg("grammar %d: %s", gi, err.message);
    return g;
}

/* The text of tokens (control tokens spelled out? no: token references
 * never match text, so a reasoning output is checked token-wise above). */
static void check_sentence(const specdec_model *m, const specdec_grammar *g, const specdec_token *t, int32_t n,
                           const specdec_stats *st, const char *what) {
    if (st->stop_reason != SPECDEC_STOP_EOG && st->stop_reason != SPECDEC_STOP_GRAMMAR) return;
    for (int32_t i = 0; i < n; i++)
        if (specdec_token_is_control(m, t[i])) return; /* token references: checked by the matcher tests */
    char *text = NULL;
    size_t len = 0;
    specdec_error err = {0};
    int32_t n_text = n;
    if (st->stop_reason == SPECDEC_STOP_EOG) n_text--; /* the end token is not text */
    assert_int_equal(specdec_detokenize(m, t, (size_t)n_text, false, &text, &len, &err), SPECDEC_OK);
    if (!specdec_grammar_accepts(g, text, len)) fail_msg("%s: output not a sentence of the grammar: \"%s\"", what, text);
    specdec_free(text);
}

static void test_lossless_every_drafter(void **state) {
    (void)state;
    /* under the sanitizers or an emulator (a Debug build: forwards are slow):
     * one prompt, and the JSON-shape and reasoning grammars; every drafter still runs */
    const bool slow = api_test_slow();
    const int n_prompts = slow ? 1 : N_PROMPTS, g_first = slow ? 1 : 0, g_end = N_GRAMMARS;
    char *P[N_PROMPTS];
    for (int i = 0; i < N_PROMPTS; i++) P[i] = api_bench_prompt(PROMPTS[i], NULL, 0);
    specdec_model *tm[3] = {api_load("models/fixture-target.gguf"), api_load("models/fixture-q35-target.gguf"),
                            api_load("models/fixture-moe-target.gguf")};
    specdec_model *dm[3] = {api_load("models/fixture-draft.gguf"), api_load("models/fixture-q35-draft.gguf"), NULL};
    dm[2] = dm[0];
    specdec_model *head = api_load("models/fixture-eagle3.gguf");
    specdec_context *plain[3], *ctx[3][3] = {{0}};
    for (int f = 0; f < 3; f++) {
        plain[f] = api_context(tm[f], NULL, 512);
        ctx[f][0] = plain[f];
        ctx[f][1] = api_context(tm[f], dm[f], 512);
        if (f == 0) ctx[f][2] = api_context(tm[f], head, 512);
    }
    specdec_grammar *G[3][N_GRAMMARS];
    for (int f = 0; f < 3; f++)
        for (int gi = 0; gi < N_GRAMMARS; gi++) G[f][gi] = compile(tm[f], gi);
    static specdec_token want[3][N_GRAMMARS][2][N_PROMPTS][N_PREDICT + 1];
    static int32_t n_want[3][N_GRAMMARS][2][N_PROMPTS];
    int free_differs = 0, n_ended = 0;
    for (int f = 0; f < 3; f++)
        for (int gi = g_first; gi < g_end; gi++)
            for (int s = 0; s < 2; s++)
                for (int i = 0; i < n_prompts && G[f][gi]; i++) {
                    specdec_generate_params gp = params(SPECDEC_SPEC_NONE, s, i, G[f][gi]);
                    specdec_stats st;
                    n_want[f][gi][s][i] = api_generate_after(plain[f], tm[f], P[i], &gp, want[f][gi][s][i], N_PREDICT, &st);
                    check_sentence(tm[f], G[f][gi], want[f][gi][s][i], n_want[f][gi][s][i], &st, "plain");
                    n_ended += st.stop_reason != SPECDEC_STOP_LENGTH;
                    /* the grammar must matter: unconstrained output differs */
                    specdec_generate_params up = params(SPECDEC_SPEC_NONE, s, i, NULL);
                    specdec_token free_out[N_PREDICT + 1];
                    int32_t nf = api_generate_after(plain[f], tm[f], P[i], &up, free_out, N_PREDICT, &st);
                    free_differs += nf != n_want[f][gi][s][i] ||
                                    memcmp(free_out, want[f][gi][s][i], (size_t)nf * sizeof *free_out) != 0;
                }
    assert_true(free_differs > 0);
    assert_true(n_ended > 0);
    int runs = 0;
    for (int k = 0; k < N_SETUPS; k++) {
        const setup *u = &SETUPS[k];
        long long drafted = 0, accepted = 0;
        for (int gi = g_first; gi < g_end; gi++)
            for (int s = 0; s < 2; s++)
                for (int i = 0; i < n_prompts && G[u->fixture][gi]; i++) {
                    /* slow: one (grammar, sampling) pair per drafter, in rotation, so each pair still runs */
                    if (slow && ((gi - g_first) * 2 + s) != k % ((g_end - g_first) * 2)) continue;
                    specdec_generate_params gp = params(u->spec, s, i, G[u->fixture][gi]);
                    gp.tree_nodes = u->tree_nodes;
                    specdec_token got[N_PREDICT + 1];
                    specdec_stats st;
                    specdec_context *c = ctx[u->fixture][u->draft];
                    int32_t n = api_generate_after(c, tm[u->fixture], P[i], &gp, got, N_PREDICT, &st);
                    const specdec_token *w = want[u->fixture][gi][s][i];
                    int32_t nw = n_want[u->fixture][gi][s][i], j = 0;
                    while (j < n && j < nw && got[j] == w[j]) j++;
                    if (n != nw || j != n)
                        fail_msg("%s, grammar %d, prompt %d, %s: token %d differs from constrained plain decoding "
                                 "(%d vs %d; %d vs %d tokens)",
                                 u->label, gi, i, s ? "temp 0.8" : "greedy", j, j < n ? got[j] : -1,
                                 j < nw ? w[j] : -1, n, nw);
                    check_sentence(tm[u->fixture], G[u->fixture][gi], got, n, &st, u->label);
                    drafted += st.n_drafted, accepted += st.n_accepted;
                    runs++;
                }
        printf("%-18s LOSSLESS, %d grammars x %d prompts x {greedy, temp 0.8}: alpha %.3f (%lld/%lld)\n", u->label,
               g_end - g_first, n_prompts, drafted ? (double)accepted / (double)drafted : 0.0, accepted, drafted);
        assert_true(drafted > 0);
    }
    printf("LOSSLESS %d/%d runs\n", runs, runs);
    for (int f = 0; f < 3; f++) {
        for (int gi = 0; gi < N_GRAMMARS; gi++) specdec_grammar_free(G[f][gi]);
        for (int d = 0; d < 3; d++) specdec_context_free(ctx[f][d]);
        specdec_model_free(tm[f]);
    }
    specdec_model_free(dm[0]);
    specdec_model_free(dm[1]);
    specdec_model_free(head);
    for (int i = 0; i < N_PROMPTS; i++) free(P[i]);
}

/* Bad grammars are refused with line and column through the API. */
static void test_api_errors(void **state) {
    (void)state;
    specdec_model *m = api_load("models/fixture-target.gguf");
    specdec_grammar *g = NULL;
    specdec_error err = {0};
    assert_int_equal(specdec_grammar_init(m, "root ::= (\"a\"", 13, NULL, &g, &err), SPECDEC_ERR_FORMAT);
    assert_null(g);
    assert_non_null(strstr(err.message, "1:10"));
    const char *ok = "root ::= \"yes\" | \"no\"";
    assert_int_equal(specdec_grammar_init(m, ok, strlen(ok), NULL, &g, &err), SPECDEC_OK);
    assert_true(specdec_grammar_accepts(g, "yes", 3));
    assert_false(specdec_grammar_accepts(g, "ye", 2));
    /* spec mode grammar without a grammar */
    specdec_context *c = api_context(m, NULL, 128);
    specdec_generate_params gp = specdec_generate_default_params();
    gp.spec = SPECDEC_SPEC_GRAMMAR;
    specdec_token t[2] = {1, 2};
    assert_int_equal(specdec_generate(c, t, 2, &gp, NULL, NULL, NULL, &err), SPECDEC_ERR_ARG);
    /* a one-answer grammar: the output is exactly one of them, ended by the grammar or EOG */
    gp.grammar = g;
    gp.n_predict = 20;
    specdec_stats st;
    specdec_token out[21];
    int32_t n = api_generate_after(c, m, "Is it?", &gp, out, 20, &st);
    assert_true(st.stop_reason == SPECDEC_STOP_EOG || st.stop_reason == SPECDEC_STOP_GRAMMAR);
    check_sentence(m, g, out, n, &st, "yes/no");
    specdec_context_free(c);
    specdec_grammar_free(g);
    specdec_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_api_errors),
        cmocka_unit_test(test_lossless_every_drafter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
