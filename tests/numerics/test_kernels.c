/* numerics/kernels: the kernel table (numerics/kernels/kernels.h).
 * - every row sets every kernel, names are unique, the generic row is last
 *   and always usable, every layout a row reads is complete and found by id;
 * - the path in use and the row in use move together (sd_cpu_force_isa), and
 *   a path is available exactly when a row of the table serves it;
 * - every row this machine runs, called directly (not only the one its path
 *   picks: neon and neon-dot, avx512 and avx2), gives the generic row's bits
 *   on the row ops, the attention pieces and the Gated DeltaNet kernels.
 * The matmul of every path against the reference is test_matmul's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "numerics/cpu.h"
#include "numerics/kernels/kernels.h"
#include "numerics/quant.h"

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static float urand(void) { /* [-1, 1) */
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 4503599627370496.0 - 1.0);
}

static void fill(float *x, size_t n, float scale) {
    for (size_t i = 0; i < n; i++) x[i] = scale * urand();
}

static void test_rows_complete(void **state) {
    (void)state;
    int n;
    const sd_kernels *const *t = sd_kernels_table(&n);
    assert_true(n >= 1);
    assert_ptr_equal(t[n - 1], &sd_kernels_generic);
    assert_null(sd_kernels_generic.usable);
    for (int i = 0; i < n; i++) {
        const sd_kernels *k = t[i];
        assert_non_null(k->name);
        assert_true((unsigned)k->isa < SD_ISA_COUNT);
        for (int j = 0; j < i; j++) assert_string_not_equal(k->name, t[j]->name);
/* function pointers compared with NULL as one type (a cast, never a call) */
#define F(field) (void (*)(void)) k->field
        void (*const fns[])(void) = {
            F(dot_f32),          F(axpy_f32),         F(dot_f32_rows),     F(axpy_f32_rows),   F(dot_f32_rows_mq),
            F(axpy_f32_rows_mq), F(dot_f16_rows_mq),  F(axpy_f16_rows_mq), F(fp32_to_fp16_row), F(fp16_to_fp32_row),
            F(add),              F(scale_mul),        F(softmax),          F(softmax_mq),      F(swiglu),
            F(silu),             F(conv_step),        F(gdn_tokens),       F(act_quantize_row), F(matmul_float),
            F(matmul_quant),     F(pass_rows)};
#undef F
        for (size_t f = 0; f < sizeof fns / sizeof fns[0]; f++)
            if (!fns[f]) fail_msg("row %s: kernel %zu is not set", k->name, f);
        for (const sd_wlayout *const *l = k->layouts; l && *l; l++) {
            assert_true((*l)->tile_rows > 0);
            assert_non_null((*l)->has_type);
            assert_non_null((*l)->packed_size);
            assert_non_null((*l)->pack);
            assert_non_null((*l)->tile);
            assert_non_null((*l)->pass_rows);
            assert_ptr_equal(sd_wlayout_find((*l)->id), *l);
            assert_ptr_equal(sd_kernels_layout(k, (*l)->id), *l);
            assert_true((*l)->id != SD_ISA_SCALAR); /* packed_isa's "no copy" */
        }
    }
    assert_null(sd_wlayout_find(SD_ISA_SCALAR));
}

static void test_path_and_row(void **state) {
    (void)state;
    sd_err err = {0};
    sd_isa before = sd_cpu_isa();
    assert_ptr_equal(sd_kernels_active(), sd_kernels_for(before));
    assert_ptr_equal(sd_kernels_for(SD_ISA_SCALAR), &sd_kernels_generic);
    for (int isa = 0; isa < SD_ISA_COUNT; isa++) {
        const sd_kernels *k = sd_kernels_for((sd_isa)isa);
        assert_int_equal(sd_cpu_isa_available((sd_isa)isa), k != NULL);
        if (!k) continue;
        assert_int_equal(k->isa, isa);
        assert_int_equal(sd_cpu_force_isa((sd_isa)isa, &err), SD_OK);
        assert_ptr_equal(sd_kernels_active(), k);
    }
    sd_cpu_force_scalar(true);
    assert_ptr_equal(sd_kernels_active(), &sd_kernels_generic);
    sd_cpu_force_scalar(false);
    assert_ptr_equal(sd_kernels_active(), sd_kernels_for(sd_cpu_isa()));
    assert_int_equal(sd_cpu_force_isa(before, &err), SD_OK);
}

#define N 203 /* not a multiple of any vector width: the tails run too */
#define ROWS 5
#define NQ 3

static void expect_same(const char *row, const char *what, const float *got, const float *want, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (memcmp(&got[i], &want[i], sizeof got[i]))
            fail_msg("row %s: %s[%zu] = %.9g, generic %.9g", row, what, i, got[i], want[i]);
}

/* The row ops and attention pieces of row k against the generic row's. */
static void compare_ops(const sd_kernels *k) {
    const sd_kernels *g = &sd_kernels_generic;
    float a[N], b[ROWS * N], w[ROWS], out[2][ROWS * N], y[2][NQ][N];
    uint16_t h[ROWS * N], h2[N];
    fill(a, N, 2.0f);
    fill(b, ROWS * N, 2.0f);
    fill(w, ROWS, 1.0f);
    for (int i = 0; i < ROWS * N; i++) h[i] = sd_fp32_to_fp16(b[i]);
    float d[2] = {g->dot_f32(a, b, N), k->dot_f32(a, b, N)};
    expect_same(k->name, "dot_f32", &d[1], &d[0], 1);
    const sd_kernels *both[2] = {g, k};
    for (int r = 0; r < 2; r++) {
        memcpy(out[r], b, sizeof b);
        both[r]->axpy_f32(out[r], 0.75f, a, N);
    }
    expect_same(k->name, "axpy_f32", out[1], out[0], N);
    for (int r = 0; r < 2; r++) both[r]->dot_f32_rows(out[r], a, b, N, ROWS, N);
    expect_same(k->name, "dot_f32_rows", out[1], out[0], ROWS);
    for (int r = 0; r < 2; r++) {
        memcpy(out[r], a, sizeof a);
        both[r]->axpy_f32_rows(out[r], w, b, N, ROWS, N);
    }
    expect_same(k->name, "axpy_f32_rows", out[1], out[0], N);
    const float *q[NQ] = {a, b, b + N};
    float wrows[NQ][ROWS]; /* each query's weights over the ROWS rows */
    for (int j = 0; j < NQ; j++)
        for (int r = 0; r < ROWS; r++) wrows[j][r] = b[j * 7 + r];
    const float *wq[NQ] = {wrows[0], wrows[1], wrows[2]};
    for (int f16 = 0; f16 < 2; f16++) {
        for (int r = 0; r < 2; r++) {
            float *o[NQ] = {y[r][0], y[r][1], y[r][2]};
            if (f16) both[r]->dot_f16_rows_mq(o, q, NQ, h, N, ROWS, N);
            else both[r]->dot_f32_rows_mq(o, q, NQ, b, N, ROWS, N);
        }
        for (int j = 0; j < NQ; j++)
            expect_same(k->name, f16 ? "dot_f16_rows_mq" : "dot_f32_rows_mq", y[1][j], y[0][j], ROWS);
        for (int r = 0; r < 2; r++) {
            float *o[NQ] = {y[r][0], y[r][1], y[r][2]};
            for (int j = 0; j < NQ; j++) memcpy(y[r][j], a, sizeof a);
            if (f16) both[r]->axpy_f16_rows_mq(o, wq, NQ, h, N, ROWS, N);
            else both[r]->axpy_f32_rows_mq(o, wq, NQ, b, N, ROWS, N);
        }
        for (int j = 0; j < NQ; j++)
            expect_same(k->name, f16 ? "axpy_f16_rows_mq" : "axpy_f32_rows_mq", y[1][j], y[0][j], N);
    }
    uint16_t hk[N];
    g->fp32_to_fp16_row(h2, a, N);
    k->fp32_to_fp16_row(hk, a, N);
    if (memcmp(h2, hk, sizeof hk)) fail_msg("row %s: fp32_to_fp16_row differs", k->name);
    for (int r = 0; r < 2; r++) both[r]->fp16_to_fp32_row(out[r], h, ROWS * N);
    expect_same(k->name, "fp16_to_fp32_row", out[1], out[0], ROWS * N);
    for (int r = 0; r < 2; r++) {
        memcpy(out[r], b, sizeof b);
        both[r]->add(out[r], a, N);
    }
    expect_same(k->name, "add", out[1], out[0], N);
    for (int with_w = 0; with_w < 2; with_w++) {
        for (int r = 0; r < 2; r++) both[r]->scale_mul(out[r], a, 1.3f, with_w ? b : NULL, N);
        expect_same(k->name, "scale_mul", out[1], out[0], N);
    }
    for (int r = 0; r < 2; r++) {
        for (int i = 0; i < N; i++) out[r][i] = 8.0f * a[i];
        both[r]->softmax(out[r], N);
    }
    expect_same(k->name, "softmax", out[1], out[0], N);
    for (int r = 0; r < 2; r++) {
        float *x[NQ] = {y[r][0], y[r][1], y[r][2]};
        int64_t len[NQ] = {N, N - 9, 1};
        for (int j = 0; j < NQ; j++)
            for (int i = 0; i < N; i++) y[r][j][i] = 6.0f * b[j * N + i];
        both[r]->softmax_mq(x, len, NQ, 0.37f);
    }
    for (int j = 0; j < NQ; j++) expect_same(k->name, "softmax_mq", y[1][j], y[0][j], N);
    for (int r = 0; r < 2; r++) both[r]->swiglu(out[r], a, b, N);
    expect_same(k->name, "swiglu", out[1], out[0], N);
    for (int r = 0; r < 2; r++) both[r]->silu(out[r], b, N);
    expect_same(k->name, "silu", out[1], out[0], N);
}

/* The Gated DeltaNet kernels of row k against the generic row's, for state
 * sizes with and without whole vectors. */
static void compare_gdn(const sd_kernels *k) {
    const sd_kernels *g = &sd_kernels_generic;
    const sd_kernels *both[2] = {g, k};
    enum { T = 3, C = 37, K = 4 };
    static const int sizes[] = {16, 12};
    for (size_t si = 0; si < sizeof sizes / sizeof sizes[0]; si++) {
        const int S = sizes[si];
        float q[T * 16], kk[T * 16], v[T * 16], decay[T], beta[T], st0[16 * 16];
        fill(q, sizeof q / sizeof q[0], 0.3f);
        fill(kk, sizeof kk / sizeof kk[0], 0.3f);
        fill(v, sizeof v / sizeof v[0], 1.0f);
        fill(st0, sizeof st0 / sizeof st0[0], 0.5f);
        for (int t = 0; t < T; t++) decay[t] = 0.9f + 0.05f * urand(), beta[t] = 0.5f + 0.25f * urand();
        float st[2][16 * 16], o[2][T * 16];
        for (int r = 0; r < 2; r++) {
            memcpy(st[r], st0, sizeof st0);
            both[r]->gdn_tokens(st[r], S, T, q, kk, v, S, decay, beta, 1, 0.25f, o[r], S);
        }
        expect_same(k->name, "gdn_tokens o", o[1], o[0], (size_t)T * S);
        expect_same(k->name, "gdn_tokens state", st[1], st[0], (size_t)S * S);
    }
    float w[K * C], x[C], win0[(K - 1) * C], win[2][(K - 1) * C], yy[2][C];
    fill(w, K * C, 1.0f);
    fill(x, C, 1.0f);
    fill(win0, (K - 1) * C, 1.0f);
    for (int r = 0; r < 2; r++) {
        memcpy(win[r], win0, sizeof win0);
        both[r]->conv_step(yy[r], win[r], w, x, K, C, C);
    }
    expect_same(k->name, "conv_step y", yy[1], yy[0], C);
    expect_same(k->name, "conv_step window", win[1], win[0], (size_t)(K - 1) * C);
}

static void test_rows_match_generic(void **state) {
    (void)state;
    int n, ran = 0;
    const sd_kernels *const *t = sd_kernels_table(&n);
    for (int i = 0; i < n; i++) {
        if (t[i]->usable && !t[i]->usable()) continue; /* this CPU cannot run it */
        compare_ops(t[i]);
        compare_gdn(t[i]);
        ran++;
    }
    assert_true(ran >= 1);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows_complete),
        cmocka_unit_test(test_path_and_row),
        cmocka_unit_test(test_rows_match_generic),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
