/* numerics/matmul: batch invariance (ARCHITECTURE.md §5) and correctness of every
 * weight type. Weights are random bytes with sane fp16 scales, so every bit
 * pattern of the quants (Q8_0 -128, Q6_K scale -128, ...) is exercised. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/ggml_type.h"
#include "numerics/cpu.h"
#include "numerics/kernels/matmul_impl.h"
#include "numerics/matmul.h"
#include "numerics/quant/iq_grids.h"
#include "numerics/quant.h"
#include "support/skip.h"

static const uint32_t k_types[] = {GGML_TYPE_F32,  GGML_TYPE_F16,  GGML_TYPE_BF16, GGML_TYPE_Q8_0,
                                   GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1,
                                   GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K, GGML_TYPE_Q2_K,
                                   GGML_TYPE_Q3_K, GGML_TYPE_IQ4_NL, GGML_TYPE_IQ4_XS, GGML_TYPE_IQ1_S,
                                   GGML_TYPE_IQ1_M, GGML_TYPE_IQ2_XXS, GGML_TYPE_IQ2_XS, GGML_TYPE_IQ2_S,
                                   GGML_TYPE_IQ3_XXS, GGML_TYPE_IQ3_S, GGML_TYPE_MXFP4};
#define N_TYPES (sizeof k_types / sizeof k_types[0])
#define MAX_S 17

static uint64_t g_rng = 0x9E3779B97F4A7C15ull;
static uint64_t rnd(void) { /* splitmix64 */
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}
static float frand(float lo, float hi) { return lo + (hi - lo) * (float)(rnd() >> 40) / (float)(1 << 24); }

static void put_f16(uint8_t *p, float v) {
    uint16_t h = sd_fp32_to_fp16(v);
    p[0] = (uint8_t)h;
    p[1] = (uint8_t)(h >> 8);
}

/* Offsets of the fp16 scale fields inside a block (ggml-common.h). */
static void fix_scales(uint32_t t, uint8_t *b) {
    float d = frand(0.002f, 0.05f) * (rnd() & 1 ? 1.0f : -1.0f);
    switch (t) {
    case GGML_TYPE_Q8_0: case GGML_TYPE_Q4_0: case GGML_TYPE_Q5_0: put_f16(b, d); break;
    case GGML_TYPE_Q4_1: case GGML_TYPE_Q5_1: case GGML_TYPE_Q4_K: case GGML_TYPE_Q5_K:
        put_f16(b, d);
        put_f16(b + 2, frand(-0.05f, 0.05f));
        break;
    case GGML_TYPE_Q6_K: put_f16(b + 208, d * 0.05f); break;
    case GGML_TYPE_Q2_K:
        put_f16(b + 80, d);
        put_f16(b + 82, frand(-0.05f, 0.05f));
        break;
    case GGML_TYPE_Q3_K: put_f16(b + 108, d * 0.05f); break;
    case GGML_TYPE_IQ4_NL: put_f16(b, d * 0.02f); break;
    case GGML_TYPE_IQ4_XS: put_f16(b, d * 0.002f); break;
    case GGML_TYPE_IQ2_XXS: case GGML_TYPE_IQ2_XS: case GGML_TYPE_IQ2_S: case GGML_TYPE_IQ3_XXS:
    case GGML_TYPE_IQ3_S: case GGML_TYPE_IQ1_S:
        put_f16(b, d * 0.01f);
        break;
    case GGML_TYPE_IQ1_M: { /* fp16 d in the top nibbles of the four scale u16 (block_iq1_m) */
        uint16_t h = sd_fp32_to_fp16(d * 0.1f);
        for (int k = 0; k < 4; k++) b[49 + 2 * k] = (uint8_t)((b[49 + 2 * k] & 0x0F) | ((h >> 4 * k) & 0xF) << 4);
        break;
    }
    case GGML_TYPE_MXFP4: b[0] = (uint8_t)(118 + rnd() % 6); break; /* scale 2^-10 .. 2^-5 */
    }
}

static void *random_weights(uint32_t t, int64_t n_in, int64_t n_out) {
    const ggml_type_info *ti = ggml_type_get(t);
    size_t nblk = (size_t)(n_in / ti->block_size) * (size_t)n_out, bytes = nblk * ti->type_size;
    uint8_t *w = malloc(bytes);
    assert_non_null(w);
    if (t == GGML_TYPE_F32) {
        for (size_t i = 0; i < nblk; i++) ((float *)w)[i] = frand(-1, 1);
    } else if (t == GGML_TYPE_F16 || t == GGML_TYPE_BF16) {
        for (size_t i = 0; i < nblk; i++)
            ((uint16_t *)w)[i] = t == GGML_TYPE_F16 ? sd_fp32_to_fp16(frand(-1, 1)) : sd_fp32_to_bf16(frand(-1, 1));
    } else {
        for (size_t i = 0; i < bytes; i++) w[i] = (uint8_t)rnd();
        for (size_t i = 0; i < nblk; i++) fix_scales(t, w + i * ti->type_size);
    }
    return w;
}

static float *random_x(int S, int64_t n_in) {
    float *x = malloc((size_t)S * (size_t)n_in * sizeof(float));
    assert_non_null(x);
    for (int64_t i = 0; i < S * n_in; i++) x[i] = frand(-2, 2) * (rnd() % 7 == 0 ? 10.0f : 1.0f);
    return x;
}

static int64_t block_of(uint32_t t) { return ggml_type_get(t)->block_size; }

/* y for S rows at once vs each row alone, for 1, 2 and 3 threads. */
static void check_batch_invariance(const sd_matrix *m, const float *x, float *y1) {
    int64_t n_out = m->n_out, n_in = m->n_in;
    float *y = malloc(MAX_S * (size_t)n_out * sizeof(float));
    assert_non_null(y);
    for (int s = 0; s < MAX_S; s++) sd_matmul(m, x + s * n_in, 1, y1 + s * n_out, 1);
    for (int nt = 1; nt <= 3; nt++)
        for (int S = 1; S <= MAX_S; S++) {
            memset(y, 0xAB, (size_t)S * (size_t)n_out * sizeof(float));
            sd_matmul(m, x, S, y, nt);
            if (memcmp(y, y1, (size_t)S * (size_t)n_out * sizeof(float)) != 0)
                fail_msg("type %s %lldx%lld: S=%d threads=%d differs from S=1", ggml_type_get(m->type)->name,
                         (long long)n_out, (long long)n_in, S, nt);
        }
    free(y);
}

/* Against float64 dot products of the dequantized weights. The activation is
 * rounded to 8 bits per block: |error| <= sum_i |w_i| * amax_block(i) / 254. */
static void check_reference(const sd_matrix *m, const float *x, const float *y) {
    int64_t n_in = m->n_in, qb = 0;
    uint32_t t = m->type;
    if (block_of(t) == 32) qb = 32;
    if (block_of(t) == 256) qb = 256;
    float *w = malloc((size_t)n_in * sizeof(float));
    assert_non_null(w);
    for (int64_t o = 0; o < m->n_out; o++) {
        sd_matrix_get_row(m, o, w);
        for (int s = 0; s < MAX_S; s++) {
            const float *xs = x + s * n_in;
            double ref = 0, mag = 0, bound = 0;
            for (int64_t i = 0; i < n_in; i++) {
                ref += (double)w[i] * xs[i];
                mag += fabs((double)w[i] * xs[i]);
            }
            if (qb)
                for (int64_t b = 0; b < n_in; b += qb) {
                    double amax = 0, sw = 0;
                    for (int64_t i = b; i < b + qb; i++) {
                        amax = fmax(amax, fabs(xs[i]));
                        sw += fabs(w[i]);
                    }
                    bound += sw * amax / 254.0 * 1.001;
                }
            bound += 1e-5 * mag + 1e-30;
            double got = y[s * m->n_out + o];
            if (!(fabs(got - ref) <= bound))
                fail_msg("type %s row %lld s %d: got %.9g want %.9g (bound %.3g)", ggml_type_get(t)->name,
                         (long long)o, s, got, ref, bound);
            if (qb) { /* tight: against the activation as the kernel rounds it (matmul_impl.h) */
                double refq = 0, magq = 0;
                for (int64_t b = 0; b < n_in; b += qb) {
                    float amax = 0;
                    for (int64_t i = b; i < b + qb; i++) amax = fmaxf(amax, fabsf(xs[i]));
                    float d = amax / 127.0f, id = d != 0.0f ? 1.0f / d : 0.0f;
                    for (int64_t i = b; i < b + qb; i++) {
                        double xq = (double)nearbyintf(xs[i] * id) * d;
                        refq += (double)w[i] * xq;
                        magq += fabs((double)w[i] * xq);
                    }
                }
                if (!(fabs(got - refq) <= 2e-6 * magq + 1e-30))
                    fail_msg("type %s row %lld s %d: got %.9g, want %.9g with 8-bit activations",
                             ggml_type_get(t)->name, (long long)o, s, got, refq);
            }
        }
    }
    free(w);
}

static bool has_avx512_kernel(uint32_t t) {
    static const uint32_t k[] = {GGML_TYPE_Q8_0, GGML_TYPE_Q4_0, GGML_TYPE_Q4_1, GGML_TYPE_Q5_0, GGML_TYPE_Q5_1,
                                 GGML_TYPE_IQ4_NL, GGML_TYPE_Q4_K, GGML_TYPE_Q5_K, GGML_TYPE_Q6_K};
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++)
        if (k[i] == t) return true;
    return false;
}

/* Comparisons of a SIMD path against the scalar reference, per sd_isa. */
static int g_compared[SD_ISA_COUNT];

/* y of every SIMD path this machine runs (each with its own layout, packed
 * while that path was in use) is bitwise the scalar reference's, for S = 1..17
 * and 1..3 threads. A matrix packed for one path and run on another (here
 * AVX-512's layout on the AVX2 path) falls back to the reference. */
static void run_shape(uint32_t t, int64_t n_in, int64_t n_out) {
    void *wdata = random_weights(t, n_in, n_out);
    float *x = random_x(MAX_S, n_in);
    float *y_fast = malloc(MAX_S * (size_t)n_out * sizeof(float));
    float *y_ref = malloc(MAX_S * (size_t)n_out * sizeof(float));
    assert_non_null(y_fast);
    assert_non_null(y_ref);
    sd_matrix m;
    sd_err err = {0};
    assert_int_equal(sd_cpu_force_isa(SD_ISA_SCALAR, &err), SD_OK);
    assert_int_equal(sd_matrix_init(&m, t, n_in, n_out, wdata, &err), SD_OK);
    check_batch_invariance(&m, x, y_ref);
    check_reference(&m, x, y_ref);
    sd_matrix_free(&m);
    for (int isa = SD_ISA_AVX2; isa < SD_ISA_COUNT; isa++) {
        if (!sd_cpu_isa_available((sd_isa)isa)) continue;
        assert_int_equal(sd_cpu_force_isa((sd_isa)isa, &err), SD_OK);
        assert_int_equal(sd_matrix_init(&m, t, n_in, n_out, wdata, &err), SD_OK);
        if (isa == SD_ISA_AVX512 && has_avx512_kernel(t)) assert_int_equal(m.packed_isa, SD_ISA_AVX512);
        /* a type with a tile is compared on its tile, not on the GGUF fallback */
        if (isa == SD_ISA_AVX2 && sd_wtype_get(t)->packed_bytes) assert_int_equal(m.packed_isa, SD_ISA_AVX2);
        check_batch_invariance(&m, x, y_fast);
        if (isa == SD_ISA_AVX512 && m.packed_isa == SD_ISA_AVX512) { /* the other path reads it too */
            sd_cpu_force_isa(SD_ISA_AVX2, &err);
            check_batch_invariance(&m, x, y_fast);
        }
        for (int64_t i = 0; i < MAX_S * n_out; i++)
            if (memcmp(&y_fast[i], &y_ref[i], 4))
                fail_msg("type %s %lldx%lld: %s %.9g != scalar %.9g at %lld", ggml_type_get(t)->name,
                         (long long)n_out, (long long)n_in, sd_isa_name((sd_isa)isa), y_fast[i], y_ref[i],
                         (long long)i);
        g_compared[isa]++;
        sd_matrix_free(&m);
    }
    sd_cpu_force_scalar(false);
    free(wdata);
    free(x);
    free(y_fast);
    free(y_ref);
}

/* The grid types' tile stores 4-bit indices into a level table: every value
 * a block can decode to (grid level, either sign; IQ1: 8 * level +- 1) must
 * be in it, or the pack would store a wrong index. */
static void test_grid_tables(void **state) {
    (void)state;
#if defined(__x86_64__)
    struct {
        uint32_t t;
        const int8_t *lv;
        int n, iq1;
    } g[] = {{GGML_TYPE_IQ2_XXS, sd_iq2_levels, 4, 0}, {GGML_TYPE_IQ2_XS, sd_iq2_levels, 4, 0},
             {GGML_TYPE_IQ2_S, sd_iq2_levels, 4, 0},   {GGML_TYPE_IQ3_XXS, sd_iq3xxs_levels, 8, 0},
             {GGML_TYPE_IQ3_S, sd_iq3s_levels, 8, 0},  {GGML_TYPE_IQ1_S, sd_iq1s_levels, 4, 1},
             {GGML_TYPE_IQ1_M, sd_iq1s_levels, 4, 1}};
    for (size_t k = 0; k < sizeof g / sizeof g[0]; k++) {
        int nsub = 0;
        const int8_t *tb = sd_grid_tile_table(g[k].t, &nsub);
        assert_non_null(tb);
        assert_int_equal(nsub, 256 / (g[k].t == GGML_TYPE_IQ2_XXS || g[k].t == GGML_TYPE_IQ3_XXS ||
                                              g[k].t == GGML_TYPE_IQ3_S || g[k].t == GGML_TYPE_IQ1_S
                                          ? 32
                                          : 16));
        for (int i = 0; i < g[k].n; i++)
            for (int sg = -1; sg <= 1; sg += 2) {
                int v = g[k].iq1 ? 8 * g[k].lv[i] + sg : sg * g[k].lv[i];
                int found = 0;
                for (int j = 0; j < 16; j++) found += tb[j] == v;
                if (!found) fail_msg("%s: value %d is not in the tile table", ggml_type_get(g[k].t)->name, v);
            }
    }
    assert_null(sd_grid_tile_table(GGML_TYPE_Q4_K, &(int){0}));
#else
    SD_SKIP("the grid tile is the x86 layout's");
#endif
}

static void test_all_types(void **state) {
    (void)state;
    static const int64_t outs[] = {1, 7, 9, 20, 37, 16, 33};
    for (size_t k = 0; k < N_TYPES; k++) {
        uint32_t t = k_types[k];
        int64_t blk = block_of(t) == 1 ? 1 : block_of(t);
        int64_t ins[3] = {blk == 1 ? 13 : blk, blk == 1 ? 64 : 2 * blk, blk == 1 ? 259 : (blk == 32 ? 19 * 32 : 5 * 256)};
        for (int i = 0; i < 3; i++) run_shape(t, ins[i], outs[(k + (size_t)i) % 7]);
        run_shape(t, ins[0], 1);
        run_shape(t, blk == 1 ? 300 : blk == 32 ? 64 * 32 : 12 * 256, 21); /* several L1 spans per tile */
    }
    /* every path this machine runs was compared on every type and shape */
    for (int isa = SD_ISA_AVX2; isa < SD_ISA_COUNT; isa++) {
        int want = sd_cpu_isa_available((sd_isa)isa) ? (int)N_TYPES * 5 : 0;
        if (g_compared[isa] != want)
            fail_msg("%s: %d comparisons, want %d", sd_isa_name((sd_isa)isa), g_compared[isa], want);
        print_message("%s vs scalar: %d shapes bitwise equal\n", sd_isa_name((sd_isa)isa), g_compared[isa]);
    }
}

/* sd_matmul_multi over matrices of mixed types (both activation block
 * sizes, a float matrix, odd row counts) gives bitwise what separate
 * sd_matmul calls give, for several S and thread counts. */
static void test_multi_matches_single(void **state) {
    (void)state;
    static const uint32_t types[] = {GGML_TYPE_Q8_0, GGML_TYPE_Q4_K, GGML_TYPE_F16,  GGML_TYPE_Q6_K,
                                     GGML_TYPE_Q8_0, GGML_TYPE_Q3_K, GGML_TYPE_IQ4_NL, GGML_TYPE_Q2_K};
    static const int64_t outs[] = {20, 9, 7, 13, 1, 11, 5, 17};
    enum { N = sizeof types / sizeof types[0] };
    const int64_t n_in = 512;
    sd_matrix m[N];
    const sd_matrix *mp[N];
    void *w[N];
    float *y1[N], *ym[N];
    sd_err err = {0};
    for (int i = 0; i < N; i++) {
        w[i] = random_weights(types[i], n_in, outs[i]);
        assert_int_equal(sd_matrix_init(&m[i], types[i], n_in, outs[i], w[i], &err), SD_OK);
        mp[i] = &m[i];
        y1[i] = malloc(MAX_S * (size_t)outs[i] * sizeof(float));
        ym[i] = malloc(MAX_S * (size_t)outs[i] * sizeof(float));
        assert_non_null(y1[i]);
        assert_non_null(ym[i]);
    }
    float *x = random_x(MAX_S, n_in);
    static const int Ss[] = {1, 2, 5, 9, 17};
    for (int scalar = 0; scalar < 2; scalar++)
    for (size_t k = 0; k < sizeof Ss / sizeof Ss[0]; k++)
        for (int nt = 1; nt <= 3; nt++) {
            int S = Ss[k];
            sd_cpu_force_scalar(scalar);
            for (int i = 0; i < N; i++) {
                sd_matmul(&m[i], x, S, y1[i], nt);
                memset(ym[i], 0xAB, (size_t)S * (size_t)outs[i] * sizeof(float));
            }
            sd_matmul_multi(mp, N, x, S, ym, nt);
            for (int i = 0; i < N; i++)
                if (memcmp(y1[i], ym[i], (size_t)S * (size_t)outs[i] * sizeof(float)) != 0)
                    fail_msg("multi: matrix %d (%s) S=%d threads=%d scalar=%d differs from sd_matmul", i,
                             ggml_type_get(types[i])->name, S, nt, scalar);
        }
    sd_cpu_force_scalar(false);
    for (int i = 0; i < N; i++) {
        sd_matrix_free(&m[i]);
        free(w[i]);
        free(y1[i]);
        free(ym[i]);
    }
    free(x);
}

static void test_avx2_present(void **state) {
    (void)state;
    if (!sd_cpu_avx2()) SD_SKIP("no AVX2 on this CPU (or SD_FORCE_SCALAR): scalar-only run");
    assert_string_equal(sd_matmul_backend(), sd_isa_name(sd_cpu_isa()));
    sd_cpu_force_scalar(true);
    assert_string_equal(sd_matmul_backend(), "scalar");
    sd_cpu_force_scalar(false);
}

/* An instruction set the machine lacks is refused with one line, and the
 * path in use stays; an available one is taken. */
static void test_force_isa(void **state) {
    (void)state;
    sd_err err = {0};
    sd_isa before = sd_cpu_isa();
    for (int isa = SD_ISA_SCALAR; isa < SD_ISA_COUNT; isa++) {
        sd_status st = sd_cpu_force_isa((sd_isa)isa, &err);
        if (sd_cpu_isa_available((sd_isa)isa)) {
            assert_int_equal(st, SD_OK);
            assert_int_equal(sd_cpu_isa(), isa);
            continue;
        }
        assert_int_equal(st, SD_ERR_UNSUPPORTED);
        assert_non_null(strstr(err.msg, sd_isa_name((sd_isa)isa)));
        assert_null(strchr(err.msg, '\n'));
    }
#if defined(__x86_64__)
    assert_false(sd_cpu_isa_available(SD_ISA_NEON));
#endif
    sd_isa parsed;
    assert_true(sd_isa_parse("avx512", &parsed));
    assert_int_equal(parsed, SD_ISA_AVX512);
    assert_false(sd_isa_parse("sse9", &parsed));
    sd_cpu_force_isa(before, &err);
    sd_cpu_force_scalar(false);
}

/* On aarch64 the NEON kernels run unless SPECDEC_ISA says otherwise, so the
 * scalar-vs-SIMD comparisons above compare NEON with the reference. */
static void test_neon_present(void **state) {
    (void)state;
#if SD_ARM64
    const char *env = getenv("SPECDEC_ISA");
    assert_true(sd_cpu_isa_available(SD_ISA_NEON));
    if (env && strcmp(env, "neon") != 0) SD_SKIP("SPECDEC_ISA=%s forces another path: scalar-only run", env);
    assert_string_equal(sd_matmul_backend(), "neon");
    sd_cpu_force_scalar(true);
    assert_string_equal(sd_matmul_backend(), "scalar");
    sd_cpu_force_scalar(false);
#else
    assert_false(sd_cpu_isa_available(SD_ISA_NEON));
#endif
}

static void test_init_errors(void **state) {
    (void)state;
    sd_matrix m;
    sd_err err = {0};
    static uint8_t buf[4096];
    assert_int_equal(sd_matrix_init(&m, GGML_TYPE_Q8_0, 48, 4, buf, &err), SD_ERR_FORMAT);
    assert_non_null(strstr(err.msg, "block"));
    assert_int_equal(sd_matrix_init(&m, GGML_TYPE_Q4_K, 128, 4, buf, &err), SD_ERR_FORMAT);
    assert_int_equal(sd_matrix_init(&m, GGML_TYPE_TQ1_0, 256, 4, buf, &err), SD_ERR_UNSUPPORTED);
    assert_int_equal(sd_matrix_init(&m, 99, 32, 4, buf, &err), SD_ERR_UNSUPPORTED);
    assert_int_equal(sd_matrix_init(&m, GGML_TYPE_F32, 0, 4, buf, &err), SD_ERR_FORMAT);
    assert_int_equal(sd_matrix_init(&m, GGML_TYPE_F32, 8, -1, buf, &err), SD_ERR_FORMAT);
    assert_int_equal(sd_matrix_init(&m, GGML_TYPE_F32, 8, 4, NULL, &err), SD_ERR_ARG);
}

int main(int argc, char **argv) {
    (void)argc;
    /* Runs with 2 and 3 threads on a shared 2-core machine: spinning OpenMP
     * waits make that 30x slower, so re-run ourselves with passive waits
     * (libgomp reads the variable before main). */
    if (!getenv("OMP_WAIT_POLICY")) {
        setenv("OMP_WAIT_POLICY", "passive", 1);
        execv("/proc/self/exe", argv);
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_avx2_present),
        cmocka_unit_test(test_force_isa),
        cmocka_unit_test(test_neon_present),
        cmocka_unit_test(test_init_errors),
        cmocka_unit_test(test_grid_tables),
        cmocka_unit_test(test_all_types),
        cmocka_unit_test(test_multi_matches_single),
    };
    return SD_RUN_TESTS(tests);
}
