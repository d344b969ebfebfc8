/* The DFlash block drafter (model/arch_dflash.c, forward_dflash.c,
 * decode/drafter_dflash.c) with random drafts written for the committed
 * fixtures (tools/common/dflash_writer.h):
 *  - LOSSLESS: speculative output == plain decoding on the dense, hybrid
 *    (qwen35) and MoE (qwen3moe, qwen35moe) fixture targets, every hybrid
 *    rollback discipline, greedy and seeded temperature 0.8, with a full
 *    and a reduced (d2t) draft vocabulary, at a fixed block length, at the
 *    length the speedup model picks (gate.h block mode), and behind auto;
 *  - one block forward is the same for any batch split of the injected
 *    positions, thread count and n_batch (bitwise), and leaves the length;
 *  - a draft that does not fit the target (width, target layers,
 *    vocabulary) or that this engine does not run (block size, too many
 *    target layers, no mask token, a DSpark head) is refused in one line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/compose.h"
#include "decode/spec.h"
#include "model/model.h"
#include "support/fixture_load.h"
#include "common/dflash_writer.h"
#include "support/tiny_model.h"

static sd_model *write_load(const char *target_path, const tiny_dflash_spec *sp, const char *tag) {
    char path[256];
    sd_err err = {0};
    tiny_model_temp_path(path, sizeof path, tag);
    if (tiny_dflash_write(target_path, sp, path, &err) != SD_OK) fail_msg("%s", err.msg);
    sd_model *m = load(path);
    remove(path);
    return m;
}

/* How a run drafts: --spec dflash at the fixed K = 7 (gate off), at the K
 * the speedup model picks (gate on), or auto with the DFlash draft. */
enum { FIXED, PICKED, AUTO, N_MODES };
static const char *const MODE_NAMES[N_MODES] = {"fixed", "picked", "auto"};

/* Plain vs dflash on one prompt under discipline d; adds to drafted/accepted. */
static void check_prompt_as(sd_model *target, sd_model *head, sd_rollback d, const int32_t *prompt, int32_t n_prompt,
                            float temp, int mode, int64_t *drafted, int64_t *accepted) {
    const int32_t n_predict = 16, K = 7;
    sd_err err = {0};
    sd_context *tc = NULL;
    assert_int_equal(sd_context_init(target, 512, 16, 2, &tc, &err), SD_OK);
    sd_model_lm tl;
    assert_int_equal(sd_compose_lm(&tl, tc, target, d, d == SD_ROLLBACK_WINDOW ? 4 : K + 1, SD_LM_TARGET, &err),
                     SD_OK);
    sd_spec_params p = sd_spec_default_params();
    p.n_predict = n_predict;
    p.n_batch = 16;
    p.draft_max = K;
    p.is_eog = eog;
    p.stop_at_eog = false;
    if (mode == FIXED) p.gate_misses = 0, p.adaptive_k = false;
    if (temp > 0) p.sampling = (sd_sampling){.temp = temp, .top_k = 40, .top_p = 0.95f, .seed = 77 + (uint64_t)n_prompt};
    int32_t want[64], got[64], n_want = 0, n_got = 0;
    assert_int_equal(sd_spec_generate(&tl.lm, NULL, prompt, n_prompt, &p, NULL, target->tok, want, &n_want, NULL, &err),
                     SD_OK);
    assert_int_equal(tl.lm.truncate(tl.lm.self, 0, &err), SD_OK);
    sd_drafter dr = {0};
    const sd_drafter_inputs in = {.target = tc, .dflash = head, .n_threads = 2, .n_batch = 16, .ngram_min = 1, .ngram_max = 3};
    assert_int_equal(sd_compose_drafter(&dr, mode == AUTO ? SD_DRAFTER_AUTO : SD_DRAFTER_DFLASH, &in, &err), SD_OK);
    assert_int_equal(dr.block, head->hp.dflash_block - 1);
    sd_spec_stats st;
    if (sd_spec_generate(&tl.lm, &dr, prompt, n_prompt, &p, NULL, target->tok, got, &n_got, &st, &err) != SD_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(n_got, n_want);
    for (int i = 0; i < n_want; i++)
        if (got[i] != want[i])
            fail_msg("disc %d temp %.1f %s: token %d differs (%d vs %d)", d, temp, MODE_NAMES[mode], i, got[i], want[i]);
    assert_true(st.drafted <= st.rounds * (int64_t)K); /* never more than the block length asked for */
    *drafted += st.drafted;
    *accepted += st.accepted;
    sd_drafter_free(&dr);
    assert_null(sd_context_hidden(tc, 0)); /* freeing the drafter turned the hook off */
    sd_model_lm_free(&tl);
    sd_context_free(tc);
}

static void check_prompt(sd_model *target, sd_model *head, sd_rollback d, const int32_t *prompt, int32_t n_prompt,
                         float temp, int64_t *drafted, int64_t *accepted) {
    check_prompt_as(target, head, d, prompt, n_prompt, temp, FIXED, drafted, accepted);
}

static void lossless_on(const char *target_path) {
    sd_model *target = load(target_path);
    tiny_dflash_spec sp = tiny_dflash_default(target_path);
    sd_model *full = write_load(target_path, &sp, "dflash-full");
    sp.n_draft_vocab = 1000, sp.seed = 2, sp.block = 5;
    sd_model *reduced = write_load(target_path, &sp, "dflash-d2t");
    const char *prompts[] = {"bench/prompts/code-py.txt", "bench/prompts/repeat-list.txt"};
    const int n_disc = sd_model_is_recurrent(target) ? SD_ROLLBACK_N : 1;
    int64_t drafted = 0, accepted = 0;
    /* under the sanitizers (SD_ASAN): one prompt and one temperature per discipline, alternating */
    const bool asan = getenv("SD_ASAN") != NULL;
    for (int d = 0; d < n_disc; d++)
        for (int t = 0; t < 2; t++)
            for (int i = 0; i < 2; i++) {
                if (asan && (i > 0 || t != d % 2)) continue;
                size_t n = 0;
                int32_t *ids = bench_prompt(target, prompts[i], &n);
                if (n > 48) n = 48; /* the prompt's head: the same paths, a fraction of the prefill */
                /* every discipline meets each mode: fixed K, the model's K, auto */
                check_prompt_as(target, (d + t + i) % 2 ? reduced : full, (sd_rollback)d, ids, (int32_t)n,
                                t ? 0.8f : 0, (d + 2 * t + i) % N_MODES, &drafted, &accepted);
                free(ids);
            }
    printf("%s: accepted %lld of %lld drafted (random drafts)\n", target_path, (long long)accepted, (long long)drafted);
    assert_true(drafted > 0);
    sd_model_free(reduced);
    sd_model_free(full);
    sd_model_free(target);
}

static void test_lossless_dense(void **state) { (void)state, lossless_on("models/fixture-target.gguf"); }
static void test_lossless_hybrid(void **state) { (void)state, lossless_on("models/fixture-q35-target.gguf"); }
static void test_lossless_moe(void **state) {
    (void)state;
    lossless_on("models/fixture-moe-target.gguf");
    lossless_on("models/fixture-q35moe-target.gguf"); /* a hybrid MoE: every discipline again */
}

/* The committed trained drafts (tools/fixtures/train_dflash.py) on their targets: LOSSLESS, and some
 * of their drafts are accepted (text like what they learnt from). */
static void test_trained_fixture(void **state) {
    (void)state;
    sd_model *target = load("models/fixture-target.gguf"), *head = load("models/fixture-dflash.gguf");
    assert_int_equal(head->hp.dflash_block, 8);
    size_t n = 0;
    int32_t *ids = bench_prompt(target, "bench/prompts/free-essay.txt", &n);
    int64_t drafted = 0, accepted = 0;
    check_prompt(target, head, SD_ROLLBACK_REPLAY, ids, (int32_t)n, 0, &drafted, &accepted);
    check_prompt(target, head, SD_ROLLBACK_REPLAY, ids, (int32_t)n, 0.8f, &drafted, &accepted);
    if (!getenv("SD_ASAN")) { /* the lossless tests above already run both modes under the sanitizers */
        check_prompt_as(target, head, SD_ROLLBACK_REPLAY, ids, (int32_t)n, 0, PICKED, &drafted, &accepted);
        check_prompt_as(target, head, SD_ROLLBACK_REPLAY, ids, (int32_t)n, 0.8f, AUTO, &drafted, &accepted);
    }
    printf("fixture-dflash: accepted %lld of %lld drafted\n", (long long)accepted, (long long)drafted);
    assert_true(accepted > 0);
    free(ids);
    sd_model_free(head);
    sd_model_free(target);
    /* the hybrid pair: models/fixture-q35-dflash.gguf, distilled on the qwen35 fixture target */
    target = load("models/fixture-q35-target.gguf"), head = load("models/fixture-q35-dflash.gguf");
    ids = bench_prompt(target, "bench/prompts/rag-spec.txt", &n);
    drafted = accepted = 0;
    check_prompt(target, head, SD_ROLLBACK_REPLAY, ids, (int32_t)n, 0, &drafted, &accepted);
    printf("fixture-q35-dflash: accepted %lld of %lld drafted\n", (long long)accepted, (long long)drafted);
    assert_true(accepted > 0);
    free(ids);
    sd_model_free(head);
    sd_model_free(target);
}

/* Injecting positions in one batch or one by one, any thread count and
 * n_batch: the block's logits are bitwise the same; the length stays. */
static void test_block_invariance(void **state) {
    (void)state;
    const char *tp = "models/fixture-target.gguf";
    sd_model *target = load(tp);
    tiny_dflash_spec sp = tiny_dflash_default(tp);
    sp.n_layer = 2;
    sd_model *head = write_load(tp, &sp, "dflash-inv");
    const int S = 9, B = head->hp.dflash_block, V = head->hp.n_draft_vocab;
    const int64_t F = (int64_t)head->hp.n_target_layers * head->hp.n_embd;
    sd_err err = {0};
    sd_context *tc = NULL, *h1 = NULL, *h2 = NULL;
    assert_int_equal(sd_context_init(target, 64, 16, 2, &tc, &err), SD_OK);
    assert_int_equal(sd_context_request_hidden(tc, head->hp.target_layers, head->hp.n_target_layers, &err), SD_OK);
    int32_t toks[10] = {300, 12, 1021, 45, 7, 880, 33, 4000, 5, 17};
    assert_int_equal(sd_forward_tail(tc, toks, 10, 0, NULL, &err), SD_OK);
    float *feat = malloc((size_t)(S * F) * sizeof(float));
    float *l1 = malloc((size_t)(B * V) * sizeof(float)), *l2 = malloc((size_t)(B * V) * sizeof(float));
    for (int s = 0; s < S; s++) memcpy(feat + s * F, sd_context_hidden(tc, s), (size_t)F * sizeof(float));
    assert_int_equal(sd_context_init(head, 64, 16, 2, &h1, &err), SD_OK);
    assert_int_equal(sd_context_init(head, 64, 8, 1, &h2, &err), SD_OK);
    assert_int_equal(sd_dflash_inject(h1, feat, S, &err), SD_OK);
    for (int s = 0; s < S; s++) assert_int_equal(sd_dflash_inject(h2, feat + s * F, 1, &err), SD_OK);
    int32_t block[64] = {toks[S]};
    for (int i = 1; i < B; i++) block[i] = head->hp.mask_token;
    assert_int_equal(sd_dflash_block(h1, target, block, B, l1, &err), SD_OK);
    assert_int_equal(sd_dflash_block(h2, target, block, B, l2, &err), SD_OK);
    assert_memory_equal(l1, l2, (size_t)((B - 1) * V) * sizeof(float));
    assert_true(memcmp(l1, l1 + V, (size_t)V * sizeof(float)) != 0); /* rows differ: they see the block differently */
    assert_int_equal(sd_context_len(h1), S);
    /* again after a rollback of the injected positions: the same logits */
    sd_context_truncate(h1, S - 3);
    assert_int_equal(sd_dflash_inject(h1, feat + (S - 3) * F, 3, &err), SD_OK);
    assert_int_equal(sd_dflash_block(h1, target, block, B, l2, &err), SD_OK);
    assert_memory_equal(l1, l2, (size_t)((B - 1) * V) * sizeof(float));
    /* bad calls leave the state alone */
    int32_t bad[2] = {0, head->hp.n_vocab};
    assert_int_equal(sd_dflash_block(h1, target, bad, 2, l1, &err), SD_ERR_ARG);
    assert_int_equal(sd_dflash_block(h1, target, block, B + 1, l1, &err), SD_ERR_ARG);
    assert_int_equal(sd_context_len(h1), S);
    assert_int_equal(sd_forward(h1, toks, 1, l1, &err), SD_ERR_UNSUPPORTED);
    free(feat), free(l1), free(l2);
    sd_context_free(h1), sd_context_free(h2), sd_context_free(tc);
    sd_model_free(head);
    sd_model_free(target);
}

/* A spec that fails to load (load_err) or loads and is refused by
 * sd_dflash_check / the drafter against target (check_err). */
static void expect(const tiny_dflash_spec *sp, const char *load_err, const char *check_err, sd_model *target) {
    char path[256];
    sd_err err = {0};
    tiny_model_temp_path(path, sizeof path, "dflash-variant");
    if (tiny_dflash_write("models/fixture-target.gguf", sp, path, &err) != SD_OK) fail_msg("%s", err.msg);
    sd_model *m = NULL;
    sd_status st = sd_model_load(path, &m, &err);
    remove(path);
    if (load_err) {
        assert_int_not_equal(st, SD_OK);
        if (!strstr(err.msg, load_err)) fail_msg("load error '%s' lacks '%s'", err.msg, load_err);
        assert_null(strchr(err.msg, '\n'));
        return;
    }
    assert_int_equal(st, SD_OK);
    sd_context *tc = NULL;
    sd_drafter d = {0};
    assert_int_equal(sd_context_init(target, 64, 16, 1, &tc, &err), SD_OK);
    assert_int_equal(sd_drafter_dflash_init(&d, m, tc, 1, 16, &err), SD_ERR_ARG);
    if (!strstr(err.msg, check_err)) fail_msg("check error '%s' lacks '%s'", err.msg, check_err);
    assert_null(strchr(err.msg, '\n'));
    assert_null(sd_context_hidden(tc, 0)); /* nothing asked of the target */
    sd_context_free(tc);
    sd_model_free(m);
}

static void test_refusals(void **state) {
    (void)state;
    const char *tp = "models/fixture-target.gguf";
    sd_model *target = load(tp);
    const tiny_dflash_spec ok = tiny_dflash_default(tp);
    tiny_dflash_spec v = ok;
    v.target_layers[0] = 9;
    expect(&v, NULL, "target_layers[0] = 9, the target has 4 layers", target);
    v = ok, v.n_embd = 128;
    expect(&v, NULL, "n_embd is 256", target);
    v = ok, v.block = 1;
    expect(&v, "dflash.block_size = 1", NULL, target);
    v = ok, v.block = 65;
    expect(&v, "dflash.block_size = 65", NULL, target);
    v = ok, v.n_target_layers = 9;
    for (int i = 0; i < 9; i++) v.target_layers[i] = i % 5;
    expect(&v, "dflash.target_layers has 9 ids; 1 to 8 are supported", NULL, target);
    v = ok, v.mask_token = -1;
    expect(&v, "missing key tokenizer.ggml.mask_token_id", NULL, target);
    v = ok, v.mask_token = 4096;
    expect(&v, "mask_token_id 4096 past the vocabulary of 4096", NULL, target);
    /* another vocabulary: a target of the same width with 300 tokens */
    sd_err err = {0};
    tiny_model_spec sp = tiny_model_default("qwen3", GGML_TYPE_F32);
    sp.n_embd = 256, sp.n_vocab = 300, sp.n_layer = 4, sp.n_ff = 256;
    char path[256];
    tiny_model_temp_path(path, sizeof path, "dflash-other");
    if (tiny_model_write(&sp, path, &err) != SD_OK) fail_msg("%s", err.msg);
    sd_model *other = load(path);
    remove(path);
    expect(&ok, NULL, "DFlash draft vocabulary 4096 tokens, the target's 300", other);
    sd_model_free(other);
    /* the drafter kind without a draft */
    sd_context *tc = NULL;
    sd_drafter d = {0};
    assert_int_equal(sd_context_init(target, 64, 16, 1, &tc, &err), SD_OK);
    const sd_drafter_inputs in = {.target = tc, .n_threads = 1, .n_batch = 16};
    assert_int_equal(sd_compose_drafter(&d, SD_DRAFTER_DFLASH, &in, &err), SD_ERR_ARG);
    assert_non_null(strstr(err.msg, "needs a DFlash draft"));
    sd_context_free(tc);
    sd_model_free(target);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block_invariance), cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_lossless_dense),   cmocka_unit_test(test_lossless_hybrid),
        cmocka_unit_test(test_lossless_moe),     cmocka_unit_test(test_trained_fixture),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
