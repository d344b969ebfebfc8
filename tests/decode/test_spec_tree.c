/* Token trees through the real decode loop (decode/tree.h, spec.c) on the
 * committed fixtures: models/fixture-target.gguf with the fixture draft model
 * and the EAGLE-3 head drafting trees (a chain plus next-best siblings).
 * LOSSLESS on every bench prompt class, greedy (== plain greedy) and at
 * temperature 0.6 with a fixed seed (== plain sampling, byte for byte), for
 * two tree shapes; tree rounds really ran and accepted nodes. A hybrid
 * (qwen35) target offers no tree: its lm has no forward_tree (the loop then
 * drafts chains; the API refuses a tree request for it up front). */
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

#include "decode/spec.h"
#include "model/model.h"
#include "support/fixture_load.h"

#define TARGET "models/fixture-target.gguf"

typedef struct shape {
    int32_t k, nodes, width;
} shape;
static const shape SHAPES[] = {{4, 8, 2}, {3, 9, 4}};

typedef struct tally {
    int64_t runs, rounds, tree_rounds, accepted;
} tally;

/* Plain vs tree-speculative on one prompt, draft model (draft) or EAGLE-3 head (head). */
static void check_prompt(sd_model *target, sd_model *draft, sd_model *head, const int32_t *prompt, int32_t n_prompt,
                         const shape *sh, bool sampled, tally *t) {
    sd_err err = {0};
    sd_context *tc = NULL, *dc = NULL;
    assert_int_equal(sd_context_init(target, 512, 16, 1, &tc, &err), SD_OK);
    sd_lm tlm, dlm;
    sd_lm_from_context(&tlm, tc, target);
    sd_spec_params p = sd_spec_default_params();
    p.n_predict = 32;
    p.n_batch = 16;
    p.draft_max = sh->k;
    p.adaptive_k = false;
    p.gate_misses = 0;
    p.tree_nodes = sh->nodes;
    p.tree_width = sh->width;
    p.is_eog = eog;
    p.stop_at_eog = false;
    if (sampled) p.sampling = (sd_sampling){.temp = 0.6f, .top_k = 40, .top_p = 0.95f, .seed = 99 + (uint64_t)n_prompt};
    int32_t want[64], got[64], n_want = 0, n_got = 0;
    assert_int_equal(sd_spec_generate(&tlm, NULL, prompt, n_prompt, &p, NULL, target->tok, want, &n_want, NULL, &err),
                     SD_OK);
    sd_context_truncate(tc, 0);
    sd_drafter dr = {0};
    if (head) {
        assert_int_equal(sd_drafter_eagle3_init(&dr, head, tc, 1, 16, &err), SD_OK);
    } else {
        assert_int_equal(sd_context_init(draft, 512, 16, 1, &dc, &err), SD_OK);
        sd_lm_from_context(&dlm, dc, draft);
        assert_int_equal(sd_drafter_model_init(&dr, &dlm, &p.sampling, 16, &err), SD_OK);
    }
    sd_spec_stats st;
    assert_int_equal(sd_spec_generate(&tlm, &dr, prompt, n_prompt, &p, NULL, target->tok, got, &n_got, &st, &err),
                     SD_OK);
    assert_int_equal(n_got, n_want);
    for (int i = 0; i < n_want; i++)
        if (got[i] != want[i])
            fail_msg("%s tree %d/%d/%d%s: token %d differs (%d vs plain %d)", head ? "eagle3" : "draft", sh->k,
                     sh->nodes, sh->width, sampled ? " sampled" : "", i, got[i], want[i]);
    t->runs++;
    t->rounds += st.rounds;
    t->tree_rounds += st.tree_rounds;
    t->accepted += st.accepted;
    sd_drafter_free(&dr);
    sd_context_free(dc);
    sd_context_free(tc);
}

static void test_lossless(void **state) {
    (void)state;
    sd_model *target = load(TARGET), *draft = load("models/fixture-draft.gguf");
    sd_model *head = load("models/fixture-eagle3.gguf");
    glob_t g;
    assert_int_equal(glob("bench/prompts/*.txt", 0, NULL, &g), 0);
    for (int which = 0; which < 2; which++)
        for (size_t s = 0; s < sizeof SHAPES / sizeof *SHAPES; s++)
            for (int sampled = 0; sampled < 2; sampled++) {
                tally t = {0};
                /* under the sanitizers (SD_ASAN), every third prompt: the same paths at a third of the time */
                for (size_t i = 0; i < g.gl_pathc; i += getenv("SD_ASAN") ? 3 : 1) {
                    size_t n = 0;
                    int32_t *ids = bench_prompt(target, g.gl_pathv[i], &n);
                    check_prompt(target, draft, which ? head : NULL, ids, (int32_t)n, &SHAPES[s], sampled, &t);
                    free(ids);
                }
                printf("%-6s tree K=%d nodes=%d width=%d %s: LOSSLESS %lld/%lld prompts, %lld tree rounds, "
                       "%.2f accepted per round\n",
                       which ? "eagle3" : "draft", SHAPES[s].k, SHAPES[s].nodes, SHAPES[s].width,
                       sampled ? "T=0.6" : "greedy", (long long)t.runs, (long long)t.runs, (long long)t.tree_rounds,
                       t.rounds ? (double)t.accepted / (double)t.rounds : 0.0);
                assert_true(t.tree_rounds > 0 && t.tree_rounds == t.rounds);
                assert_true(t.accepted > 0);
            }
    globfree(&g);
    sd_model_free(head);
    sd_model_free(draft);
    sd_model_free(target);
}

/* A qwen35 target has no tree verify. */
static void test_hybrid_has_no_tree(void **state) {
    (void)state;
    sd_model *target = load("models/fixture-q35-target.gguf");
    sd_err err = {0};
    sd_context *tc = NULL;
    assert_int_equal(sd_context_init(target, 256, 16, 2, &tc, &err), SD_OK);
    sd_lm tlm;
    sd_lm_from_context(&tlm, tc, target);
    assert_null(tlm.forward_tree);
    assert_null(tlm.keep_path);
    sd_context_free(tc);
    sd_model_free(target);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hybrid_has_no_tree),
        cmocka_unit_test(test_lossless),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
