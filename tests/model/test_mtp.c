/* The qwen35 MTP head (model/forward_mtp.c): its logits against
 * tools/reference/torch_ref.py --mtp-out (float64, graph_mtp written from the
 * format facts) on a tiny F32 model and on the committed fixture converted to
 * F32 — max relative difference 1e-4 per position, argmax identical; batch
 * invariance (pairs all at once, one by one, in chunks of 3, 1 or 2
 * threads: logits and outputs bitwise equal); the trunk's logits unchanged by
 * binding the block; and the refusals (no MTP block, the view is not a
 * language model). */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_test_util.h"
#include "support/skip.h"

#define FIXTURE "models/fixture-q35-target.gguf"
#define N_TOK 14

/* The target's hiddens after output_norm for tokens[0..n), rows [n][n_embd]. */
static float *target_hidden(const sd_model *m, const int32_t *tokens, int n) {
    sd_context *c = NULL;
    sd_err err = {0};
    assert_int_equal(sd_context_init(m, 64, 64, 1, &c, &err), SD_OK);
    const int32_t id = m->hp.n_layer;
    assert_int_equal(sd_context_request_hidden(c, &id, 1, &err), SD_OK);
    float *logits = malloc((size_t)n * m->hp.n_vocab * sizeof *logits);
    assert_int_equal(sd_forward(c, tokens, n, logits, &err), SD_OK);
    const int64_t E = m->hp.n_embd;
    float *h = malloc((size_t)n * E * sizeof *h);
    for (int p = 0; p < n; p++) memcpy(h + p * E, sd_context_hidden(c, p), (size_t)E * sizeof *h);
    free(logits);
    sd_context_free(c);
    return h;
}

/* The head over the pairs (tokens[p], h_{p-1}), p = 1..n-1, fed in chunks of
 * `chunk` pairs: logits [n-1][n_vocab] and outputs y [n-1][n_embd]. */
static void mtp_run(const sd_model *m, const int32_t *tokens, const float *h, int n, int chunk, int threads,
                    float *logits, float *y) {
    sd_model *v = NULL;
    sd_context *c = NULL;
    sd_err err = {0};
    assert_int_equal(sd_mtp_view_init(m, &v, &err), SD_OK);
    assert_int_equal(sd_context_init(v, 64, chunk < 4 ? 4 : chunk, threads, &c, &err), SD_OK);
    const int64_t E = m->hp.n_embd, V = m->hp.n_vocab;
    for (int i = 0; i < n - 1; i += chunk) {
        int S = n - 1 - i < chunk ? n - 1 - i : chunk;
        assert_int_equal(sd_mtp_forward(c, tokens + 1 + i, h + i * E, S, y + i * E, S, logits + i * V, &err), SD_OK);
    }
    assert_int_equal(sd_context_len(c), n - 1);
    sd_context_free(c);
    sd_mtp_view_free(v);
}

static bool have_torch(void) {
    if (getenv("SD_ASAN")) return false; /* the same C code is compared in the release run */
    return system("/usr/bin/python3 -c 'import torch' >/dev/null 2>&1") == 0;
}
static const char *no_torch_reason(void) {
    return getenv("SD_ASAN") ? "torch reference not run under ASan (SD_ASAN set): compared in the release run"
                             : "/usr/bin/python3 cannot import torch (missing package python3-torch)";
}

/* Engine vs torch_ref --mtp-out on the model file at path. */
static void compare_reference(const char *path, const char *label) {
    sd_model *m = NULL;
    sd_err err = {0};
    assert_int_equal(sd_model_load(path, &m, &err), SD_OK);
    const int V = m->hp.n_vocab, E = m->hp.n_embd;
    int32_t tokens[N_TOK];
    test_tokens(tokens, N_TOK, V, 31);
    tokens[9] = tokens[3];
    float *h = target_hidden(m, tokens, N_TOK);
    float *lg = malloc((size_t)(N_TOK - 1) * V * sizeof *lg), *y = malloc((size_t)(N_TOK - 1) * E * sizeof *y);
    mtp_run(m, tokens, h, N_TOK, 64, 2, lg, y);
    char list[N_TOK * 12] = "", out[300], cmd[1200];
    for (int i = 0; i < N_TOK; i++) snprintf(list + strlen(list), sizeof list - strlen(list), "%s%d", i ? "," : "", tokens[i]);
    snprintf(out, sizeof out, "%s.mtp.f32", path);
    snprintf(cmd, sizeof cmd,
             "/usr/bin/python3 tools/reference/torch_ref.py '%s' --kv-f16 --tokens %s --out /dev/null --mtp-out '%s'",
             path, list, out);
    if (system(cmd) != 0) fail_msg("reference failed: %s", cmd);
    FILE *f = fopen(out, "rb");
    assert_non_null(f);
    float *r = malloc((size_t)(N_TOK - 1) * V * sizeof *r);
    size_t got = fread(r, sizeof *r, (size_t)(N_TOK - 1) * V + 1, f);
    fclose(f);
    remove(out);
    assert_int_equal(got, (size_t)(N_TOK - 1) * V);
    double worst = 0;
    for (int s = 0; s < N_TOK - 1; s++) {
        const float *cs = lg + (size_t)s * V, *rs = r + (size_t)s * V;
        double md = 0, mr = 0;
        for (int i = 0; i < V; i++) md = fmax(md, fabs((double)cs[i] - rs[i])), mr = fmax(mr, fabs((double)rs[i]));
        worst = fmax(worst, md / mr);
        if (test_argmax(cs, V) != test_argmax(rs, V))
            fail_msg("%s: MTP row %d argmax %d (C) vs %d (torch)", label, s, test_argmax(cs, V), test_argmax(rs, V));
    }
    printf("MTP max rel diff %-28s %.3e (%d rows x %d logits)\n", label, worst, N_TOK - 1, V);
    if (worst > 1e-4) fail_msg("%s: MTP max relative difference %.3e > 1e-4", label, worst);
    free(r), free(lg), free(y), free(h);
    sd_model_free(m);
}

static void test_reference_tiny(void **state) {
    (void)state;
    if (!have_torch()) SD_SKIP("%s", no_torch_reason());
    tiny_model_spec sp = tiny_model_default("qwen35", GGML_TYPE_F32);
    sp.n_layer = 5, sp.n_nextn = 1;
    char path[256];
    sd_model *m = tiny_load(&sp, path, sizeof path, "mtp-ref");
    assert_non_null(m);
    assert_true(m->nextn.present);
    sd_model_free(m);
    compare_reference(path, "tiny qwen35 + MTP (F32)");
    remove(path);
}

static void test_reference_fixture(void **state) {
    (void)state;
    if (!have_torch()) SD_SKIP("%s", no_torch_reason());
    const char *bin = getenv("SD_SPECDEC_BIN");
    assert_non_null(bin);
    char f32[256], cmd[1024];
    tiny_model_temp_path(f32, sizeof f32, "q35-f32");
    snprintf(cmd, sizeof cmd, "'%s' quantize '%s' '%s' f32 >/dev/null", bin, FIXTURE, f32);
    if (system(cmd) != 0) fail_msg("conversion failed: %s", cmd);
    compare_reference(f32, "fixture-q35-target (F32)");
    remove(f32);
}

/* Logits and outputs of each pair bitwise the same however the pairs are
 * batched, on the committed Q8_0 fixture. */
static void test_batch_invariance(void **state) {
    (void)state;
    sd_model *m = NULL;
    sd_err err = {0};
    assert_int_equal(sd_model_load(FIXTURE, &m, &err), SD_OK);
    assert_true(m->nextn.present);
    const int V = m->hp.n_vocab, E = m->hp.n_embd, n = 24;
    int32_t tokens[24];
    test_tokens(tokens, n, V, 5);
    float *h = target_hidden(m, tokens, n);
    float *la = malloc((size_t)(n - 1) * V * sizeof *la), *ya = malloc((size_t)(n - 1) * E * sizeof *ya);
    float *lb = malloc((size_t)(n - 1) * V * sizeof *lb), *yb = malloc((size_t)(n - 1) * E * sizeof *yb);
    mtp_run(m, tokens, h, n, 64, 2, la, ya);
    const int chunks[][2] = {{1, 1}, {3, 2}, {7, 1}, {23, 1}};
    for (size_t i = 0; i < sizeof chunks / sizeof chunks[0]; i++) {
        memset(lb, 0, (size_t)(n - 1) * V * sizeof *lb);
        mtp_run(m, tokens, h, n, chunks[i][0], chunks[i][1], lb, yb);
        if (memcmp(la, lb, (size_t)(n - 1) * V * sizeof *la) || memcmp(ya, yb, (size_t)(n - 1) * E * sizeof *ya))
            fail_msg("MTP rows differ in chunks of %d, %d thread(s)", chunks[i][0], chunks[i][1]);
    }
    free(la), free(ya), free(lb), free(yb), free(h);
    sd_model_free(m);
}

static void test_refusals(void **state) {
    (void)state;
    sd_model *m = NULL, *v = NULL;
    sd_err err = {0};
    assert_int_equal(sd_model_load("models/fixture-target.gguf", &m, &err), SD_OK);
    assert_int_equal(sd_mtp_view_init(m, &v, &err), SD_ERR_UNSUPPORTED);
    assert_null(v);
    assert_non_null(strstr(err.msg, "no MTP block"));
    sd_model_free(m);
    tiny_model_spec sp = tiny_model_default("qwen35", GGML_TYPE_F32); /* no nextn */
    char path[256];
    m = tiny_load(&sp, path, sizeof path, "mtp-none");
    assert_non_null(m);
    assert_false(m->nextn.present);
    assert_int_equal(sd_mtp_view_init(m, &v, &err), SD_ERR_UNSUPPORTED);
    sd_model_free(m);
    remove(path);
    assert_int_equal(sd_model_load(FIXTURE, &m, &err), SD_OK);
    assert_int_equal(sd_mtp_view_init(m, &v, &err), SD_OK);
    sd_context *c = NULL;
    assert_int_equal(sd_context_init(v, 16, 4, 1, &c, &err), SD_OK);
    int32_t t[2] = {1, 2};
    float lg[1];
    assert_int_equal(sd_forward(c, t, 1, lg, &err), SD_ERR_UNSUPPORTED);
    float hh[512] = {0};
    assert_true(m->hp.n_embd <= 256);
    t[0] = m->hp.n_vocab;
    assert_int_equal(sd_mtp_forward(c, t, hh, 1, NULL, 0, NULL, &err), SD_ERR_ARG);
    assert_int_equal(sd_context_len(c), 0);
    sd_context_free(c);
    sd_mtp_view_free(v);
    sd_model_free(m);
}

int main(int argc, char **argv) {
    (void)argc;
    test_passive_omp(argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_batch_invariance),
        cmocka_unit_test(test_reference_tiny),
        cmocka_unit_test(test_reference_fixture),
    };
    return SD_RUN_TESTS(tests);
}
