/* Weights read straight from the mapped file (sd_load_opts.no_repack,
 * --no-repack): the golden logits of tests/data/isa_golden.txt are unchanged
 * on every kernel path this machine runs, for the committed fixtures (dense,
 * qwen35, qwen3moe, qwen35moe: every matrix read in place, experts
 * included) and tiny qwen3 models of the K-quant and legacy types (the same
 * files test_isa_golden makes). No matrix holds a repacked copy then, where
 * a default load on a SIMD path does. The auto rule leaves a model repacked
 * when it fits (it does here: the fixtures are a few MiB) and says nothing.
 * The IQ2_XXS and IQ3_XXS files of tests/data/iq/ give the same logits
 * repacked (the grid types' tile) and read in place, on every path. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model_test_util.h"
#include "numerics/cpu.h"

#define N_TOK 9
#define GOLDEN "tests/data/isa_golden.txt"

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001B3ull;
    return h;
}

/* test_isa_golden's hash: N_TOK single steps, then the same tokens as one window. */
static uint64_t forward_hash(const sd_model *m) {
    const int32_t V = m->hp.n_vocab;
    int32_t tokens[N_TOK];
    test_tokens(tokens, N_TOK, V, 5);
    float *logits = malloc((size_t)N_TOK * (size_t)V * sizeof(float));
    assert_non_null(logits);
    uint64_t h = 0xCBF29CE484222325ull;
    sd_err err = {0};
    for (int pass = 0; pass < 2; pass++) {
        sd_context *c = NULL;
        assert_int_equal(sd_context_init(m, 32, 16, 2, &c, &err), SD_OK);
        if (pass == 0)
            for (int i = 0; i < N_TOK; i++)
                assert_int_equal(sd_forward(c, tokens + i, 1, logits + (size_t)i * (size_t)V, &err), SD_OK);
        else
            assert_int_equal(sd_forward(c, tokens, N_TOK, logits, &err), SD_OK);
        h = fnv1a(h, logits, (size_t)N_TOK * (size_t)V * sizeof(float));
        sd_context_free(c);
    }
    free(logits);
    return h;
}

static bool golden_lookup(const char *name, uint64_t *out) {
    FILE *f = fopen(GOLDEN, "r");
    if (!f) return false;
    char line[160], n[100];
    unsigned long long v;
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        if (sscanf(line, "%99s %llx", n, &v) == 2 && !strcmp(n, name)) *out = v, found = true;
    fclose(f);
    return found;
}

/* Whether any layer matrix or the head holds a repacked copy. */
static bool any_packed(const sd_model *m) {
    bool p = m->output.packed != NULL;
    for (int il = 0; il < m->hp.n_layer; il++) {
        const sd_layer *l = &m->layers[il];
        p |= l->wq.packed || l->wo.packed || l->w_down.packed || l->ssm_out.packed;
    }
    return p;
}

static void check_file(const char *path, const char *name) {
    uint64_t want = 0;
    if (!golden_lookup(name, &want)) fail_msg("%s: no golden hash in " GOLDEN, name);
    sd_err err = {0};
    for (int isa = SD_ISA_SCALAR; isa < SD_ISA_COUNT; isa++) {
        if (!sd_cpu_isa_available((sd_isa)isa)) continue;
        assert_int_equal(sd_cpu_force_isa((sd_isa)isa, &err), SD_OK);
        const sd_load_opts o = {.no_repack = true, .plan_type_k = GGML_TYPE_F16, .plan_type_v = GGML_TYPE_F16};
        sd_model *m = NULL;
        if (sd_model_load_opts(path, &o, &m, &err) != SD_OK) fail_msg("%s: %s", path, err.msg);
        assert_false(any_packed(m));
        const uint64_t h = forward_hash(m);
        sd_model_free(m);
        if (h != want)
            fail_msg("%s on %s, --no-repack: logits hash %016llx, golden %016llx", name, sd_isa_name((sd_isa)isa),
                     (unsigned long long)h, (unsigned long long)want);
        /* the default load: repacked on a SIMD path (a few MiB fit), no note */
        assert_int_equal(sd_model_load(path, &m, &err), SD_OK);
        assert_string_equal(m->repack_note, "");
        if (isa != SD_ISA_SCALAR) assert_true(any_packed(m));
        sd_model_free(m);
    }
    sd_cpu_force_scalar(false);
}

static void test_fixtures(void **state) {
    (void)state;
    const char *const fx[] = {"fixture-target.gguf", "fixture-q35-target.gguf", "fixture-moe-target.gguf",
                              "fixture-q35moe-target.gguf"};
    for (size_t i = 0; i < sizeof fx / sizeof *fx; i++) {
        char path[128];
        snprintf(path, sizeof path, "models/%s", fx[i]);
        check_file(path, fx[i]);
    }
}

/* The tiny qwen3 models of test_isa_golden (its seed: 3 + the type's index in its list). */
static void test_tiny(void **state) {
    (void)state;
    const struct {
        uint32_t type;
        int index;
    } types[] = {{GGML_TYPE_Q4_0, 4}, {GGML_TYPE_Q5_1, 7}, {GGML_TYPE_Q4_K, 8}, {GGML_TYPE_Q6_K, 10},
                 {GGML_TYPE_IQ4_NL, 13}};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
        tiny_model_spec sp = tiny_model_default("qwen3", types[i].type);
        sp.seed = 3 + (uint64_t)types[i].index;
        sp.n_ff = 256;
        sp.n_vocab = 300;
        char path[256], name[64];
        sd_err err = {0};
        tiny_model_temp_path(path, sizeof path, "norepack");
        if (tiny_model_write(&sp, path, &err) != SD_OK) fail_msg("%s", err.msg);
        snprintf(name, sizeof name, "tiny-qwen3-%s", ggml_type_get(types[i].type)->name);
        check_file(path, name);
        remove(path);
    }
}

/* Matrices of the IQ grid types holding a repacked copy (the 4-bit tile). */
static int grid_packed(const sd_model *m) {
    int n = 0;
    for (int il = 0; il < m->hp.n_layer; il++) {
        const sd_layer *l = &m->layers[il];
        const sd_matrix *ms[] = {&l->wq, &l->wk, &l->wv, &l->wo, &l->w_gate, &l->w_up, &l->w_down};
        for (size_t i = 0; i < sizeof ms / sizeof *ms; i++) {
            const uint32_t t = ms[i]->type;
            n += ms[i]->packed && (t == GGML_TYPE_IQ1_S || t == GGML_TYPE_IQ1_M || t == GGML_TYPE_IQ2_XXS ||
                                   t == GGML_TYPE_IQ2_XS || t == GGML_TYPE_IQ2_S || t == GGML_TYPE_IQ3_XXS ||
                                   t == GGML_TYPE_IQ3_S);
        }
    }
    return n;
}

/* llama-quantize's IQ2_XXS and IQ3_XXS files of the target fixture
 * (tests/data/iq/): the grid types' tile gives the logits of the file's
 * bytes read in place, on every path (the scalar path, read in place, is
 * the reference). */
static void test_iq_files(void **state) {
    (void)state;
    const char *const files[] = {"tests/data/iq/fixture-target-IQ2_XXS.gguf", "tests/data/iq/fixture-target-IQ3_XXS.gguf"};
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        sd_err err = {0};
        uint64_t want = 0;
        for (int isa = SD_ISA_SCALAR; isa < SD_ISA_COUNT; isa++) {
            if (!sd_cpu_isa_available((sd_isa)isa)) continue;
            assert_int_equal(sd_cpu_force_isa((sd_isa)isa, &err), SD_OK);
            for (int repack = 0; repack < 2; repack++) {
                const sd_load_opts o = {.no_repack = !repack, .plan_type_k = GGML_TYPE_F16, .plan_type_v = GGML_TYPE_F16};
                sd_model *m = NULL;
                if (sd_model_load_opts(files[i], &o, &m, &err) != SD_OK) fail_msg("%s: %s", files[i], err.msg);
                const int np = grid_packed(m);
                if (repack && (isa == SD_ISA_AVX2 || isa == SD_ISA_AVX512)) assert_true(np > 0);
                if (!repack) assert_int_equal(np, 0);
                const uint64_t h = forward_hash(m);
                sd_model_free(m);
                if (isa == SD_ISA_SCALAR && !repack) want = h;
                else if (h != want)
                    fail_msg("%s on %s (%s): logits hash %016llx, read in place on scalar %016llx", files[i],
                             sd_isa_name((sd_isa)isa), repack ? "repacked" : "--no-repack", (unsigned long long)h,
                             (unsigned long long)want);
            }
        }
        sd_cpu_force_scalar(false);
    }
}

int main(int argc, char **argv) {
    (void)argc;
    test_passive_omp(argv);
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_fixtures), cmocka_unit_test(test_tiny),
                                       cmocka_unit_test(test_iq_files)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
