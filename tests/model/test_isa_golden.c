/* The logits of a fixed forward are bitwise the same on every kernel path
 * (scalar, AVX2, AVX-512, NEON: ARCHITECTURE.md §5), and equal to a golden hash
 * committed in tests/data/isa_golden.txt, computed by the scalar path. For
 * the committed fixtures and the tiny model of every architecture in every
 * weight type the matmul supports: 9 single-token steps, then the same 9
 * tokens as one window in a fresh context; FNV-1a 64 over the bits of all
 * those logits. Every path this machine can run is checked, each with the
 * model loaded (and repacked) while that path is in use.
 *
 * SD_ISA_GOLDEN_WRITE=FILE writes the scalar path's hashes to FILE instead
 * (how the committed file was made: run from the repo root).
 *
 * SD_TEST_EMULATED=1 (scripts/test_aarch64.sh, under qemu-user): a subset
 * sized for emulation: every weight type on the qwen35 hybrid (every matmul
 * kernel, and the GDN and attention paths), Q8_0 and Q4_K on the dense
 * architectures, and the fixtures. */
#define _POSIX_C_SOURCE 200809L /* setenv, glob */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <glob.h>
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

/* Hash of the logits of N_TOK steps of 1 token, then one N_TOK window. */
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

/* One model to check: a fixture path, or a tiny spec written to a temp file. */
typedef struct golden_case {
    char name[64];
    char path[256];
    bool temp;
} golden_case;

static FILE *g_write;  /* SD_ISA_GOLDEN_WRITE mode */
static int g_checked[SD_ISA_COUNT]; /* cases checked per sd_isa */

static bool golden_lookup(const char *name, uint64_t *out) {
    FILE *f = fopen(GOLDEN, "r");
    if (!f) return false;
    char line[160], n[100];
    unsigned long long v;
    bool found = false;
    while (!found && fgets(line, sizeof line, f))
        if (sscanf(line, "%99s %llx", n, &v) == 2 && strcmp(n, name) == 0) {
            *out = v;
            found = true;
        }
    fclose(f);
    return found;
}

static void check_case(const golden_case *gc) {
    sd_err err = {0};
    uint64_t want = 0;
    if (!g_write && !golden_lookup(gc->name, &want))
        fail_msg("%s: no golden hash in " GOLDEN " (SD_ISA_GOLDEN_WRITE makes the file)", gc->name);
    for (int isa = SD_ISA_SCALAR; isa < SD_ISA_COUNT; isa++) {
        if (!sd_cpu_isa_available((sd_isa)isa) || (g_write && isa != SD_ISA_SCALAR)) continue;
        assert_int_equal(sd_cpu_force_isa((sd_isa)isa, &err), SD_OK);
        sd_model *m = NULL;
        if (sd_model_load(gc->path, &m, &err) != SD_OK) fail_msg("%s: %s", gc->path, err.msg);
        uint64_t h = forward_hash(m);
        sd_model_free(m);
        if (g_write) {
            fprintf(g_write, "%s %016llx\n", gc->name, (unsigned long long)h);
            continue;
        }
        if (h != want)
            fail_msg("%s on %s: logits hash %016llx, golden %016llx", gc->name, sd_isa_name((sd_isa)isa),
                     (unsigned long long)h, (unsigned long long)want);
        g_checked[isa]++;
    }
    sd_cpu_force_scalar(false);
}

static void test_case(void **state) {
    golden_case *gc = *state;
    check_case(gc);
}

static const char *const k_archs[] = {"llama", "qwen2", "qwen3", "qwen35"};
static const uint32_t k_types[] = {GGML_TYPE_F32,  GGML_TYPE_F16,  GGML_TYPE_BF16, GGML_TYPE_Q8_0,
                                   GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1,
                                   GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, GGML_TYPE_Q2_K,
                                   GGML_TYPE_Q3_K, GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS};
enum { N_TINY = 4 * 15, MAX_CASES = N_TINY + 16 };

/* Every path this machine runs checked every case. */
static void test_counts(void **state) {
    int n = *(int *)*state;
    for (int isa = SD_ISA_SCALAR; isa < SD_ISA_COUNT; isa++) {
        int want = sd_cpu_isa_available((sd_isa)isa) ? n : 0;
        print_message("%s: %d of %d models bitwise equal to the golden\n", sd_isa_name((sd_isa)isa), g_checked[isa],
                      want);
        assert_int_equal(g_checked[isa], want);
    }
}

int main(int argc, char **argv) {
    (void)argc;
    test_passive_omp(argv);
    static golden_case cases[MAX_CASES];
    int n = 0;
    sd_err err = {0};
    const bool emulated = getenv("SD_TEST_EMULATED") != NULL;
    for (size_t a = 0; a < 4; a++)
        for (size_t t = 0; t < 15; t++) {
            if (emulated && strcmp(k_archs[a], "qwen35") != 0 && k_types[t] != GGML_TYPE_Q8_0 &&
                k_types[t] != GGML_TYPE_Q4_K)
                continue;
            golden_case *gc = &cases[n++];
            tiny_model_spec sp = tiny_model_default(k_archs[a], k_types[t]);
            sp.seed = 3 + t;
            sp.n_ff = 256;
            sp.n_vocab = 300;
            snprintf(gc->name, sizeof gc->name, "tiny-%s-%s", k_archs[a], ggml_type_get(k_types[t])->name);
            tiny_model_temp_path(gc->path, sizeof gc->path, "golden");
            gc->temp = true;
            if (tiny_model_write(&sp, gc->path, &err) != SD_OK) {
                fprintf(stderr, "%s: %s\n", gc->name, err.msg);
                return 1;
            }
        }
    glob_t g;
    if (glob("models/fixture-*.gguf", 0, NULL, &g) == 0) {
        for (size_t i = 0; i < g.gl_pathc && n < MAX_CASES; i++) {
            if (strstr(g.gl_pathv[i], "eagle3") || strstr(g.gl_pathv[i], "dflash"))
                continue; /* a draft head or block drafter, not a model to forward alone */
            golden_case *gc = &cases[n++];
            const char *base = strrchr(g.gl_pathv[i], '/');
            snprintf(gc->name, sizeof gc->name, "%s", base ? base + 1 : g.gl_pathv[i]);
            snprintf(gc->path, sizeof gc->path, "%s", g.gl_pathv[i]);
        }
        globfree(&g);
    }
    const char *wpath = getenv("SD_ISA_GOLDEN_WRITE");
    int rc;
    if (wpath) {
        g_write = fopen(wpath, "w");
        if (!g_write) return 1;
        fprintf(g_write, "# test_isa_golden: FNV-1a 64 of a fixed forward's logits, scalar path\n");
        for (int i = 0; i < n; i++) check_case(&cases[i]);
        rc = fclose(g_write) == 0 ? 0 : 1;
    } else {
        static struct CMUnitTest tests[MAX_CASES + 1];
        for (int i = 0; i < n; i++) tests[i] = (struct CMUnitTest){cases[i].name, test_case, NULL, NULL, &cases[i]};
        tests[n] = (struct CMUnitTest){"every_path_checked", test_counts, NULL, NULL, &n};
        rc = _cmocka_run_group_tests("test_isa_golden", tests, (size_t)n + 1, NULL, NULL);
    }
    for (int i = 0; i < n; i++)
        if (cases[i].temp) remove(cases[i].path);
    return rc;
}
