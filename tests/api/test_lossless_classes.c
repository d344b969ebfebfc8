/* LOSSLESS on every fixture and every prompt class, for every drafter
 * (MTP heads and sidecars included): speculative output == plain decoding's, token for token,
 * greedy and at temperature 0.7 with a fixed seed (byte-identical to plain
 * sampling with the same seed: every drafter here proposes deterministically,
 * ARCHITECTURE.md §6).
 *  - dense fixture (models/fixture-target.gguf): n-gram, draft model, auto
 *    (n-gram + draft), the EAGLE-3 head, auto (n-gram + head);
 *  - qwen35 fixture (models/fixture-q35-target.gguf): n-gram, the hybrid draft
 *    model, auto (n-gram + MTP), and the MTP block and the EAGLE-3 head (it
 *    fits: 256 wide, 4 trunk layers, the same vocabulary) under every rollback
 *    discipline, window included.
 * The reference is plain decoding in a separate context with the default
 * rollback, so a discipline that broke plain decoding too would still be
 * seen (the API's own check_lossless runs through the same discipline). The
 * sampled references must differ from the greedy ones somewhere: else the
 * temperature > 0 half would not test sampling. Prompts: bench/prompts/ *.txt
 * (their "class:" line dropped); under the sanitizers or an emulator
 * (SD_ASAN, SD_TEST_EMULATED: scripts/test_aarch64.sh) every third, each
 * drafter greedy or sampled on it by turns. */
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

enum { N_PREDICT = 32, MAX_PROMPTS = 16 };

/* A bench prompt: the file's text after its "class:" line, and the class. */
typedef struct prompt {
    char name[64], cls[16];
    char *text;
} prompt;

static int read_prompts(prompt *p) {
    glob_t g;
    assert_int_equal(glob("bench/prompts/*.txt", 0, NULL, &g), 0);
    int n = 0;
    for (size_t i = 0; i < g.gl_pathc && n < MAX_PROMPTS; i += api_test_slow() ? 3 : 1, n++) {
        const char *base = strrchr(g.gl_pathv[i], '/') + 1;
        snprintf(p[n].name, sizeof p[n].name, "%.*s", (int)(strlen(base) - 4), base);
        p[n].text = api_bench_prompt(g.gl_pathv[i], p[n].cls, sizeof p[n].cls);
    }
    globfree(&g);
    return n;
}

/* The generated tokens of one call (after the prompt) into out[N_PREDICT]. */
static int32_t run(specdec_context *c, const specdec_model *m, const char *text, const specdec_generate_params *gp,
                   specdec_token *out, specdec_stats *st) {
    return api_generate_after(c, m, text, gp, out, N_PREDICT, st);
}

static specdec_generate_params params(specdec_spec_mode spec, bool sampled, int seed) {
    specdec_generate_params gp = specdec_generate_default_params();
    gp.n_predict = N_PREDICT;
    gp.spec = spec;
    gp.draft_max = 4;
    gp.fixed_k = true;
    gp.gate = 0; /* every round drafts */
    gp.stop_at_eog = false;
    if (sampled) gp.temperature = 0.7f, gp.top_k = 40, gp.top_p = 0.95f, gp.seed = 11 + (uint64_t)seed;
    return gp;
}

/* One drafter setup: a context (target + draft or head), a spec mode, a rollback. */
typedef struct setup {
    const char *label;
    int fixture;        /* 0 dense, 1 qwen35 */
    int draft;          /* 0 none, 1 draft model, 2 EAGLE-3 head */
    specdec_spec_mode spec;
    specdec_rollback rb;
    const char *drafter; /* the name the stats must report */
    bool must_accept;    /* accepted > 0 over all prompts */
} setup;

static const setup SETUPS[] = {
    {"dense ngram", 0, 1, SPECDEC_SPEC_NGRAM, SPECDEC_ROLLBACK_AUTO, "ngram", true},
    {"dense draft", 0, 1, SPECDEC_SPEC_DRAFT, SPECDEC_ROLLBACK_AUTO, "draft", true},
    {"dense auto", 0, 1, SPECDEC_SPEC_AUTO, SPECDEC_ROLLBACK_AUTO, "auto (ngram + draft)", true},
    {"dense eagle3", 0, 2, SPECDEC_SPEC_EAGLE3, SPECDEC_ROLLBACK_AUTO, "eagle3", true},
    {"dense auto+eagle3", 0, 2, SPECDEC_SPEC_AUTO, SPECDEC_ROLLBACK_AUTO, "auto (ngram + eagle3)", true},
    {"q35 ngram", 1, 1, SPECDEC_SPEC_NGRAM, SPECDEC_ROLLBACK_AUTO, "ngram", true},
    {"q35 draft", 1, 1, SPECDEC_SPEC_DRAFT, SPECDEC_ROLLBACK_AUTO, "draft", false},
    {"q35 auto", 1, 1, SPECDEC_SPEC_AUTO, SPECDEC_ROLLBACK_AUTO, "auto (ngram + mtp)", true},
    {"q35 mtp replay", 1, 0, SPECDEC_SPEC_MTP, SPECDEC_ROLLBACK_REPLAY, "mtp", true},
    {"q35 mtp checkpoint", 1, 0, SPECDEC_SPEC_MTP, SPECDEC_ROLLBACK_CHECKPOINT, "mtp", true},
    {"q35 mtp redecode", 1, 0, SPECDEC_SPEC_MTP, SPECDEC_ROLLBACK_REDECODE, "mtp", true},
    {"q35 mtp window", 1, 0, SPECDEC_SPEC_MTP, SPECDEC_ROLLBACK_WINDOW, "mtp", true},
    {"q35 eagle3 replay", 1, 2, SPECDEC_SPEC_EAGLE3, SPECDEC_ROLLBACK_REPLAY, "eagle3", false},
    {"q35 eagle3 checkpoint", 1, 2, SPECDEC_SPEC_EAGLE3, SPECDEC_ROLLBACK_CHECKPOINT, "eagle3", false},
    {"q35 eagle3 redecode", 1, 2, SPECDEC_SPEC_EAGLE3, SPECDEC_ROLLBACK_REDECODE, "eagle3", false},
    {"q35 eagle3 window", 1, 2, SPECDEC_SPEC_EAGLE3, SPECDEC_ROLLBACK_WINDOW, "eagle3", false},
    {"q35 auto+eagle3", 1, 2, SPECDEC_SPEC_AUTO, SPECDEC_ROLLBACK_AUTO, "auto (ngram + eagle3)", false},
};
enum { N_SETUPS = sizeof SETUPS / sizeof *SETUPS };

static void test_every_class_every_drafter(void **state) {
    (void)state;
    static prompt P[MAX_PROMPTS];
    const int n_p = read_prompts(P);
    assert_true(n_p >= 3);
    specdec_model *tm[2] = {api_load("models/fixture-target.gguf"), api_load("models/fixture-q35-target.gguf")};
    specdec_model *dm[2] = {api_load("models/fixture-draft.gguf"), api_load("models/fixture-q35-draft.gguf")};
    specdec_model *head = api_load("models/fixture-eagle3.gguf");
    specdec_context *plain[2], *ctx[2][3];
    for (int f = 0; f < 2; f++) {
        plain[f] = api_context(tm[f], NULL, 512);
        ctx[f][0] = plain[f];
        ctx[f][1] = api_context(tm[f], dm[f], 512);
        ctx[f][2] = api_context(tm[f], head, 512);
    }
    static specdec_token want[2][2][MAX_PROMPTS][N_PREDICT];
    int32_t n_want[2][2][MAX_PROMPTS];
    int sampled_differs = 0;
    for (int f = 0; f < 2; f++)
        for (int i = 0; i < n_p; i++) {
            for (int s = 0; s < 2; s++) {
                specdec_generate_params gp = params(SPECDEC_SPEC_NONE, s, i);
                specdec_stats st;
                n_want[f][s][i] = run(plain[f], tm[f], P[i].text, &gp, want[f][s][i], &st);
                assert_int_equal(n_want[f][s][i], N_PREDICT);
            }
            sampled_differs += memcmp(want[f][0][i], want[f][1][i], sizeof want[f][0][i]) != 0;
        }
    assert_true(sampled_differs > 0);
    int runs = 0;
    const bool slow = api_test_slow();
    for (int k = 0; k < N_SETUPS; k++) {
        const setup *u = &SETUPS[k];
        long long drafted = 0, accepted = 0;
        for (int i = 0; i < n_p; i++)
            for (int s = 0; s < 2; s++) {
                /* slow: greedy or sampled per prompt, alternating, so each drafter still sees every class and both */
                if (slow && s != (i + k) % 2) continue;
                specdec_generate_params gp = params(u->spec, s, i);
                gp.hybrid_rollback = u->rb;
                specdec_token got[N_PREDICT];
                specdec_stats st;
                int32_t n = run(ctx[u->fixture][u->draft], tm[u->fixture], P[i].text, &gp, got, &st);
                assert_string_equal(st.drafter, u->drafter);
                int32_t j = 0;
                while (j < n && j < n_want[u->fixture][s][i] && got[j] == want[u->fixture][s][i][j]) j++;
                if (n != n_want[u->fixture][s][i] || j != n)
                    fail_msg("%s, %s (%s), %s: token %d differs from plain decoding (%d vs %d)", u->label, P[i].name,
                             P[i].cls, s ? "temp 0.7" : "greedy", j, j < n ? got[j] : -1,
                             want[u->fixture][s][i][j]);
                drafted += st.n_drafted, accepted += st.n_accepted;
                runs++;
            }
        printf(slow ? "%-22s LOSSLESS on %d prompts, greedy or temp 0.7 by turns: alpha" : "%-22s LOSSLESS on %d prompts x {greedy, temp 0.7}: alpha %.3f (%lld/%lld)\n", u->label, n_p,
               drafted ? (double)accepted / (double)drafted : 0.0, accepted, drafted);
        assert_true(drafted > 0);
        if (u->must_accept) assert_true(accepted > 0);
    }
    printf("LOSSLESS %d/%d runs\n", runs, runs);
    for (int f = 0; f < 2; f++) {
        for (int d = 0; d < 3; d++) specdec_context_free(ctx[f][d]);
        specdec_model_free(dm[f]);
        specdec_model_free(tm[f]);
    }
    specdec_model_free(head);
    for (int i = 0; i < n_p; i++) free(P[i].text);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_class_every_drafter),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
