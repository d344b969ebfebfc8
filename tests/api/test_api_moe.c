/* LOSSLESS speculation on mixture-of-experts targets through the public API
 * (include/specdec.h): tiny random qwen3moe and qwen35moe files
 * (tests/support/tiny_model.c), a draft model of the same family and
 * vocabulary (another seed), and the target itself as a draft (every draft
 * accepted, so verify windows run long). For every drafter (n-gram, draft
 * model, both) the generated tokens must equal plain greedy decoding token
 * for token (the library's own check_lossless), and on qwen35moe under
 * every hybrid rollback discipline. The counts must show real verify
 * rounds with accepted and rejected drafts. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_test_util.h"
#include "format/gguf.h"
#include "support/tiny_model.h"

static void write_tiny(const char *arch, uint64_t seed, char *path, size_t cap) {
    tiny_model_spec sp = tiny_model_default(arch, GGML_TYPE_Q8_0);
    sp.seed = seed;
    sd_err err = {0};
    tiny_model_temp_path(path, cap, arch);
    if (tiny_model_write(&sp, path, &err) != SD_OK) fail_msg("tiny_model_write: %s", err.msg);
}

/* Generates n_predict tokens after a prompt with a repeated span (so n-gram
 * drafts hit) and checks lossless; adds the counts to *drafted / *accepted. */
static void run(specdec_context *c, const specdec_model *m, specdec_spec_mode mode, specdec_rollback rb,
                int64_t *drafted, int64_t *accepted) {
    specdec_token prompt[24];
    const int32_t V = specdec_model_n_vocab(m);
    for (int i = 0; i < 24; i++) prompt[i] = i < 8 ? (specdec_token)((i * 37 + 11) % V) : prompt[i % 8];
    specdec_generate_params gp = specdec_generate_default_params();
    gp.n_predict = 40;
    gp.spec = mode;
    gp.gate = 0; /* keep drafting */
    gp.draft_max = 6;
    gp.stop_at_eog = false;
    gp.check_lossless = true;
    gp.hybrid_rollback = rb;
    specdec_stats st;
    specdec_error err = {0};
    specdec_context_reset(c);
    if (specdec_generate(c, prompt, 24, &gp, NULL, NULL, &st, &err) != SPECDEC_OK) fail_msg("generate: %s", err.message);
    assert_true(st.lossless_checked);
    if (!st.lossless)
        fail_msg("%s %s rollback %s: differs from greedy at token %d of %d", specdec_model_arch(m), st.drafter,
                 specdec_rollback_name(rb), st.lossless_first_diff, st.n_gen);
    assert_int_equal(st.n_gen, 40);
    assert_true(st.n_rounds > 0);
    *drafted += st.n_drafted;
    *accepted += st.n_accepted;
}

static void check_arch(const char *arch, bool hybrid) {
    char tpath[256], dpath[256];
    write_tiny(arch, 3, tpath, sizeof tpath);
    write_tiny(arch, 103, dpath, sizeof dpath);
    specdec_model *m = api_load(tpath), *other = api_load(dpath);
    assert_string_equal(specdec_model_arch(m), arch);
    const specdec_model *drafts[2] = {other, m}; /* m as its own draft: everything accepted */
    static const specdec_spec_mode modes[3] = {SPECDEC_SPEC_NGRAM, SPECDEC_SPEC_DRAFT, SPECDEC_SPEC_AUTO};
    const int n_rb = hybrid ? SPECDEC_ROLLBACK_WINDOW + 1 : 1;
    int64_t drafted = 0, accepted = 0;
    int runs = 0;
    for (int d = 0; d < 2; d++) {
        specdec_context *c = api_context(m, drafts[d], 256);
        for (int rb = 0; rb < n_rb; rb++)
            for (int i = 0; i < 3; i++, runs++) run(c, m, modes[i], (specdec_rollback)rb, &drafted, &accepted);
        specdec_context_free(c);
    }
    printf("%s: LOSSLESS %d/%d runs (drafters x drafts%s), accepted %lld of %lld drafted\n", arch, runs, runs,
           hybrid ? " x rollback disciplines" : "", (long long)accepted, (long long)drafted);
    assert_true(accepted > 0 && accepted < drafted);
    specdec_model_free(m);
    specdec_model_free(other);
    remove(tpath);
    remove(dpath);
}

static void test_qwen3moe(void **state) {
    (void)state;
    check_arch("qwen3moe", false);
}

static void test_qwen35moe(void **state) {
    (void)state;
    check_arch("qwen35moe", true);
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_qwen3moe), cmocka_unit_test(test_qwen35moe)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
