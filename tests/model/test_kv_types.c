/* Quantized KV caches (sd_context_init_kv; llama.cpp's cache types f32,
 * bf16, q8_0, q4_0, q4_1, iq4_nl, q5_0, q5_1 besides the default f16), on the
 * dense, qwen35 hybrid, qwen3moe and qwen35moe fixtures, each type for K and
 * V alike:
 *  - batch invariance: 9 single-token steps on one thread, one 9-token
 *    forward on two, splits 3+5+1 with n_batch 4: the same logits bitwise
 *    (so a verify forward over S tokens equals S steps and speculation stays
 *    lossless);
 *  - rollback: a truncate (dense) or a state snapshot (recurrent) to 4,
 *    junk rows written over the tail, then the real tokens again: the same
 *    logits; a sequence exported and imported into a fresh context (what the
 *    prefix cache stores) continues with the same logits;
 *  - the cache type is in effect: the logits differ from an f16 cache's;
 *  - every kernel path this machine runs gives bitwise the hash in
 *    tests/data/kv_golden.txt (made by the scalar path: SD_KV_GOLDEN_WRITE=FILE
 *    writes it), so x86 and the aarch64 build under qemu agree too;
 *  - a type that is no cache type (q8_1, q4_k) is refused with one line.
 * SD_TEST_EMULATED=1 (scripts/test_aarch64.sh): q8_0 and q4_0 only. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/memory/kv_cache.h"
#include "model_test_util.h"
#include "numerics/cpu.h"

#define N_TOK 9
#define GOLDEN "tests/data/kv_golden.txt"

static const char *const FIXTURES[] = {"models/fixture-target.gguf", "models/fixture-q35-target.gguf",
                                       "models/fixture-moe-target.gguf", "models/fixture-q35moe-target.gguf"};
static const uint32_t TYPES[] = {GGML_TYPE_F32,  GGML_TYPE_BF16,   GGML_TYPE_Q8_0, GGML_TYPE_Q4_0,
                                 GGML_TYPE_Q4_1, GGML_TYPE_IQ4_NL, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1};
enum { N_FIX = sizeof FIXTURES / sizeof *FIXTURES, N_TYPES = sizeof TYPES / sizeof *TYPES };

static FILE *g_write;

static uint64_t fnv1a(uint64_t h, const void *p, size_t n) {
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001B3ull;
    return h;
}

static sd_context *ctx_of(const sd_model *m, int n_batch, int n_threads, uint32_t t) {
    sd_context *c = NULL;
    sd_err err = {0};
    if (sd_context_init_kv(m, 32, n_batch, n_threads, t, t, &c, &err) != SD_OK) fail_msg("context: %s", err.msg);
    return c;
}

/* Logits of tokens fed in the given splits to a fresh context. */
static void run_split(const sd_model *m, uint32_t t, const int32_t *tok, const int *splits, int n_splits, int n_batch,
                      int n_threads, float *logits) {
    sd_context *c = ctx_of(m, n_batch, n_threads, t);
    sd_err err = {0};
    int done = 0;
    for (int i = 0; i < n_splits; i++) {
        assert_int_equal(sd_forward(c, tok + done, splits[i], logits + (size_t)done * m->hp.n_vocab, &err), SD_OK);
        done += splits[i];
    }
    sd_context_free(c);
}

static void assert_rows(const float *a, const float *b, int rows, int V, const char *what, const char *name) {
    for (int r = 0; r < rows; r++)
        if (memcmp(a + (size_t)r * V, b + (size_t)r * V, (size_t)V * sizeof(float)))
            fail_msg("%s: %s: logits of position %d differ bitwise", name, what, r);
}

/* Truncate (or restore a snapshot) to 4, write junk rows, drop them, re-forward. */
static void check_rollback(const sd_model *m, uint32_t t, const int32_t *tok, const float *ref, float *got,
                           const char *name) {
    const int V = m->hp.n_vocab;
    const bool rec = sd_model_is_recurrent(m);
    sd_context *c = ctx_of(m, 16, 2, t);
    sd_err err = {0};
    const size_t snap_n = sd_context_state_bytes(c);
    void *snap = malloc(snap_n);
    assert_non_null(snap);
    assert_int_equal(sd_forward(c, tok, 4, got, &err), SD_OK);
    if (rec) assert_int_equal(sd_context_state_save(c, snap, snap_n, &err), SD_OK);
    int32_t junk[5];
    test_tokens(junk, 5, V, 999);
    assert_int_equal(sd_forward(c, junk, 5, got, &err), SD_OK);
    if (rec) assert_int_equal(sd_context_state_restore(c, snap, snap_n, &err), SD_OK);
    else assert_int_equal(sd_context_truncate(c, 4), SD_OK);
    assert_int_equal(sd_forward(c, tok + 4, N_TOK - 4, got, &err), SD_OK);
    assert_rows(ref + 4 * (size_t)V, got, N_TOK - 4, V, "rollback to 4 then re-forward", name);
    /* the sequence into a fresh context (the prefix cache's path): it goes on alike */
    const size_t n = sd_context_seq_bytes(c, N_TOK);
    void *buf = malloc(n);
    assert_non_null(buf);
    assert_int_equal(sd_context_seq_export(c, N_TOK, buf, n, &err), SD_OK);
    sd_context *d = ctx_of(m, 16, 1, t);
    assert_int_equal(sd_context_seq_import(d, buf, n, N_TOK, &err), SD_OK);
    float *a = malloc((size_t)V * sizeof *a), *b = malloc((size_t)V * sizeof *b);
    assert_non_null(a);
    assert_non_null(b);
    assert_int_equal(sd_forward(c, junk, 1, a, &err), SD_OK);
    assert_int_equal(sd_forward(d, junk, 1, b, &err), SD_OK);
    assert_rows(a, b, 1, V, "a step after export + import", name);
    sd_context_free(d);
    /* nor into a context of other cache types */
    d = ctx_of(m, 16, 1, t == GGML_TYPE_Q8_0 ? GGML_TYPE_Q4_0 : GGML_TYPE_Q8_0);
    assert_int_equal(sd_context_seq_import(d, buf, n, N_TOK, &err), SD_ERR_ARG);
    sd_context_free(d);
    free(a);
    free(b);
    free(buf);
    free(snap);
    sd_context_free(c);
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

/* Everything above for one fixture and type on the current kernel path; returns the hash. */
static uint64_t check_one(const char *path, uint32_t t, const char *name) {
    sd_model *m = NULL;
    sd_err err = {0};
    if (sd_model_load(path, &m, &err) != SD_OK) fail_msg("%s", err.msg);
    const int V = m->hp.n_vocab;
    int32_t tok[N_TOK];
    test_tokens(tok, N_TOK, V, 17);
    const size_t n = (size_t)N_TOK * V;
    float *ref = malloc(n * sizeof *ref), *got = malloc(n * sizeof *got);
    assert_non_null(ref);
    assert_non_null(got);
    const int singles[N_TOK] = {1, 1, 1, 1, 1, 1, 1, 1, 1}, whole[1] = {N_TOK}, mixed[3] = {3, 5, 1};
    run_split(m, t, tok, singles, N_TOK, 16, 1, ref);
    run_split(m, t, tok, whole, 1, 16, 2, got);
    assert_rows(ref, got, N_TOK, V, "one 9-token forward vs 9 steps", name);
    uint64_t h = fnv1a(0xCBF29CE484222325ull, ref, n * sizeof *ref);
    run_split(m, t, tok, mixed, 3, 4, 2, got);
    assert_rows(ref, got, N_TOK, V, "splits 3+5+1, n_batch 4", name);
    check_rollback(m, t, tok, ref, got, name);
    run_split(m, GGML_TYPE_F16, tok, whole, 1, 16, 2, got);
    if (!memcmp(ref, got, n * sizeof *ref)) fail_msg("%s: the logits equal an f16 cache's: the type is not in effect", name);
    free(ref);
    free(got);
    sd_model_free(m);
    return h;
}

typedef struct kv_case {
    int fix;
    uint32_t type;
    char name[96];
} kv_case;

static int g_checked[SD_ISA_COUNT];

static void test_case(void **state) {
    const kv_case *kc = *state;
    uint64_t want = 0;
    if (!g_write && !golden_lookup(kc->name, &want))
        fail_msg("%s: no hash in " GOLDEN " (SD_KV_GOLDEN_WRITE=FILE writes the file)", kc->name);
    sd_err err = {0};
    for (int isa = SD_ISA_SCALAR; isa < SD_ISA_COUNT; isa++) {
        if (!sd_cpu_isa_available((sd_isa)isa) || (g_write && isa != SD_ISA_SCALAR)) continue;
        assert_int_equal(sd_cpu_force_isa((sd_isa)isa, &err), SD_OK);
        const uint64_t h = check_one(FIXTURES[kc->fix], kc->type, kc->name);
        if (g_write) fprintf(g_write, "%s %016llx\n", kc->name, (unsigned long long)h);
        else if (h != want)
            fail_msg("%s on %s: logits hash %016llx, golden %016llx", kc->name, sd_isa_name((sd_isa)isa),
                     (unsigned long long)h, (unsigned long long)want);
        g_checked[isa]++;
    }
    sd_cpu_force_scalar(false);
}

/* Types that are no cache type, and head sizes that are not whole blocks. */
static void test_refused(void **state) {
    (void)state;
    sd_model *m = NULL;
    sd_err err = {0};
    assert_int_equal(sd_model_load(FIXTURES[0], &m, &err), SD_OK);
    const uint32_t bad[] = {GGML_TYPE_Q8_1, GGML_TYPE_Q4_K, GGML_TYPE_IQ4_XS, 1000};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        sd_context *c = NULL;
        err = (sd_err){0};
        assert_int_equal(sd_context_init_kv(m, 32, 4, 1, GGML_TYPE_F16, bad[i], &c, &err), SD_ERR_ARG);
        assert_null(c);
        assert_non_null(strstr(err.msg, "V cache"));
        assert_null(strchr(err.msg, '\n'));
    }
    err = (sd_err){0};
    assert_int_equal(sd_kv_type_check(GGML_TYPE_Q8_0, 48, "K cache", &err), SD_ERR_ARG); /* 48 is no multiple of 32 */
    assert_non_null(strstr(err.msg, "48"));
    assert_int_equal(sd_kv_type_check(GGML_TYPE_BF16, 48, "K cache", &err), SD_OK);
    sd_model_free(m);
}

static void test_counts(void **state) {
    const int n = *(int *)*state;
    for (int isa = SD_ISA_SCALAR; isa < SD_ISA_COUNT; isa++) {
        const int want = sd_cpu_isa_available((sd_isa)isa) ? n : 0;
        print_message("%s: %d of %d fixture x cache type cases bitwise equal to the golden\n", sd_isa_name((sd_isa)isa),
                      g_checked[isa], want);
        assert_int_equal(g_checked[isa], want);
    }
}

int main(int argc, char **argv) {
    (void)argc;
    test_passive_omp(argv);
    static kv_case cases[N_FIX * N_TYPES];
    static struct CMUnitTest tests[N_FIX * N_TYPES + 2];
    const bool emulated = getenv("SD_TEST_EMULATED") != NULL;
    int n = 0;
    for (int f = 0; f < N_FIX; f++)
        for (int t = 0; t < N_TYPES; t++) {
            if (emulated && TYPES[t] != GGML_TYPE_Q8_0 && TYPES[t] != GGML_TYPE_Q4_0) continue;
            kv_case *kc = &cases[n];
            kc->fix = f;
            kc->type = TYPES[t];
            const char *base = strrchr(FIXTURES[f], '/') + 1;
            snprintf(kc->name, sizeof kc->name, "%s-kv-%s", base, ggml_type_get(TYPES[t])->name);
            tests[n] = (struct CMUnitTest){kc->name, test_case, NULL, NULL, kc};
            n++;
        }
    const char *wpath = getenv("SD_KV_GOLDEN_WRITE");
    if (wpath) {
        g_write = fopen(wpath, "w");
        if (!g_write) return 1;
        fprintf(g_write, "# test_kv_types: FNV-1a 64 of 9 single steps' logits over a quantized KV cache, scalar path\n");
    }
    int m = n;
    tests[m++] = (struct CMUnitTest){"refused", test_refused, NULL, NULL, NULL};
    if (!wpath) tests[m++] = (struct CMUnitTest){"every_path_checked", test_counts, NULL, NULL, &n};
    int rc = _cmocka_run_group_tests("test_kv_types", tests, (size_t)m, NULL, NULL);
    if (g_write && fclose(g_write)) rc = 1;
    return rc;
}
