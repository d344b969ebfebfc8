/* numerics/fp16: half and bfloat16 conversions are exact and round to
 * nearest even; checked against the definition (nearest representable value,
 * ties to even) and, where the CPU has F16C, against the hardware. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "numerics/quant.h"
#include "support/skip.h"

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_X86 1
#endif

static float bits_f32(uint32_t u) {
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}
static uint32_t f32_bits(float f) {
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;
static uint32_t rng_u32(void) { /* splitmix64 */
    uint64_t z = (rng_state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (uint32_t)((z ^ (z >> 31)) >> 32);
}

/* Value of half h computed from the definition, in double. */
static double half_value(uint16_t h) {
    int sign = h >> 15, exp = (h >> 10) & 0x1F, mant = h & 0x3FF;
    double v = exp == 0 ? ldexp(mant, -24) : ldexp(1024 + mant, exp - 25);
    if (exp == 0x1F)
        v = mant ? NAN : INFINITY;
    return sign ? -v : v;
}

static void test_fp16_widen_all(void **state) {
    (void)state;
    for (uint32_t h = 0; h < 65536; h++) {
        float f = sd_fp16_to_fp32((uint16_t)h);
        double want = half_value((uint16_t)h);
        if (isnan(want)) {
            assert_true(isnan(f));
            /* a quiet NaN re-encodes to itself; a signalling one gets quieted */
            uint16_t back = sd_fp32_to_fp16(f);
            assert_int_equal(back, h | 0x200);
        } else {
            assert_true((double)f == want);
            assert_true(!!signbit(f) == !!signbit(want));
            assert_int_equal(sd_fp32_to_fp16(f), h); /* exact round trip */
        }
    }
}

/* Checks that h is the nearest half to finite f, ties to even, with
 * overflow to infinity at >= 65520 (the halfway point past 65504). */
static void check_fp16_nearest(float f, uint16_t h) {
    double x = fabs((double)f);
    uint16_t mag = h & 0x7FFF;
    assert_int_equal(h >> 15, signbit(f) ? 1 : 0);
    if (x >= 65520.0) {
        assert_int_equal(mag, 0x7C00);
        return;
    }
    assert_true(mag < 0x7C00);
    double v = half_value(mag);
    double err = fabs(v - x);
    if (mag > 0) {
        double e_lo = fabs(half_value((uint16_t)(mag - 1)) - x);
        assert_true(err < e_lo || (err == e_lo && (mag & 1) == 0));
    }
    if (mag < 0x7BFF) {
        double e_hi = fabs(half_value((uint16_t)(mag + 1)) - x);
        assert_true(err < e_hi || (err == e_hi && (mag & 1) == 0));
    }
}

static void test_fp16_narrow_definition(void **state) {
    (void)state;
    /* every half, the exact midpoints to its neighbours, and one ulp either side */
    for (uint32_t m = 0; m < 0x7C00; m++) {
        uint32_t b = f32_bits((float)half_value((uint16_t)m));
        for (int dlt = -2; dlt <= 2; dlt++) {
            float f = bits_f32(b + (uint32_t)dlt);
            if (!isfinite(f) || f < 0)
                continue;
            check_fp16_nearest(f, sd_fp32_to_fp16(f));
            check_fp16_nearest(-f, sd_fp32_to_fp16(-f));
        }
        double mid = (half_value((uint16_t)m) + half_value((uint16_t)(m + 1))) / 2;
        float fm = (float)mid; /* exact: a midpoint has 12 significant bits */
        assert_true((double)fm == mid);
        check_fp16_nearest(fm, sd_fp32_to_fp16(fm));
    }
    for (int i = 0; i < 1000000; i++) {
        float f = bits_f32(rng_u32());
        if (isfinite(f))
            check_fp16_nearest(f, sd_fp32_to_fp16(f));
    }
}

static void test_fp16_known_values(void **state) {
    (void)state;
    assert_int_equal(sd_fp32_to_fp16(1.0f), 0x3C00);
    assert_int_equal(sd_fp32_to_fp16(-2.0f), 0xC000);
    assert_int_equal(sd_fp32_to_fp16(-0.0f), 0x8000);
    assert_int_equal(sd_fp32_to_fp16(65504.0f), 0x7BFF);
    assert_int_equal(sd_fp32_to_fp16(65519.996f), 0x7BFF);
    assert_int_equal(sd_fp32_to_fp16(65520.0f), 0x7C00);
    assert_int_equal(sd_fp32_to_fp16(1e10f), 0x7C00);
    assert_int_equal(sd_fp32_to_fp16(-INFINITY), 0xFC00);
    assert_int_equal(sd_fp32_to_fp16(0x1p-24f), 0x0001);
    assert_int_equal(sd_fp32_to_fp16(0x1p-25f), 0x0000);            /* tie to even: 0 */
    assert_int_equal(sd_fp32_to_fp16(0x1.000002p-25f), 0x0001);
    assert_int_equal(sd_fp32_to_fp16(0x1.8p-24f), 0x0002);          /* 1.5 ulp: tie to 2 */
    assert_int_equal(sd_fp32_to_fp16(0x1p-14f), 0x0400);            /* smallest normal */
    assert_int_equal(sd_fp32_to_fp16(0x1.ffcp-15f), 0x0400);        /* rounds up into normals */
    assert_int_equal(sd_fp32_to_fp16(1.0f + 0x1p-11f), 0x3C00);     /* tie to even */
    assert_int_equal(sd_fp32_to_fp16(1.0f + 0x3p-11f), 0x3C02);     /* tie to even, up */
    uint16_t n = sd_fp32_to_fp16(NAN);
    assert_true((n & 0x7C00) == 0x7C00 && (n & 0x3FF) != 0);
    assert_true(isnan(sd_fp16_to_fp32(n)));
    assert_true(isinf(sd_fp16_to_fp32(0x7C00)) && sd_fp16_to_fp32(0x7C00) > 0);
    assert_true(sd_fp16_to_fp32(0x0001) == 0x1p-24f);
}

#ifdef HAVE_X86
__attribute__((target("f16c"))) static uint16_t hw_fp32_to_fp16(float f) {
    return (uint16_t)_cvtss_sh(f, 0);
}
__attribute__((target("f16c"))) static float hw_fp16_to_fp32(uint16_t h) {
    return _cvtsh_ss(h);
}
#endif

static void test_fp16_matches_f16c(void **state) {
    (void)state;
#ifdef HAVE_X86
    __builtin_cpu_init();
    if (!__builtin_cpu_supports("f16c")) SD_SKIP("no F16C on this CPU: hardware comparison not run");
    for (uint32_t h = 0; h < 65536; h++) {
        float a = sd_fp16_to_fp32((uint16_t)h), b = hw_fp16_to_fp32((uint16_t)h);
        assert_int_equal(f32_bits(a), f32_bits(b));
    }
    for (int i = 0; i < 2000000; i++) {
        uint32_t u = rng_u32();
        if (i & 1) /* half the samples near the half range, where rounding matters */
            u = (u & 0x80FFFFFFu) | ((uint32_t)(100 + (u >> 24) % 45) << 23);
        float f = bits_f32(u);
        assert_int_equal(sd_fp32_to_fp16(f), hw_fp32_to_fp16(f));
    }
    /* Every rounding boundary (the f16 KV cache rounds with both): each half
     * with either sign, the midpoints to its neighbour (ties to even, incl.
     * subnormals and 65520 -> inf), one and two f32 ulps either side. */
    for (uint32_t m = 0; m < 0x7C00; m++) {
        float v = (float)half_value((uint16_t)m);
        float mid = (float)((half_value((uint16_t)m) + half_value((uint16_t)(m + 1))) / 2);
        if (m == 0x7BFF)
            mid = 65520.0f;
        for (int d = -2; d <= 2; d++)
            for (int sg = 0; sg < 2; sg++) {
                uint32_t sb = sg ? 0x80000000u : 0;
                float a = bits_f32((f32_bits(v) + (uint32_t)d) ^ sb), b = bits_f32((f32_bits(mid) + (uint32_t)d) ^ sb);
                if (f32_bits(v) != 0 || d >= 0)
                    assert_int_equal(sd_fp32_to_fp16(a), hw_fp32_to_fp16(a));
                assert_int_equal(sd_fp32_to_fp16(b), hw_fp32_to_fp16(b));
            }
    }
    /* infinities, and NaNs with every top payload pattern, quiet and signalling */
    for (uint32_t p = 0; p < (1u << 12); p++)
        for (uint32_t sb = 0; sb < 2; sb++) {
            uint32_t u = (sb << 31) | 0x7F800000u | (p << 11) | (p & 0x7FF);
            float f = bits_f32(u);
            assert_int_equal(sd_fp32_to_fp16(f), hw_fp32_to_fp16(f));
        }
#else
    SD_SKIP("not an x86 CPU: no F16C to compare with");
#endif
}

/* bfloat16: the nearest value among the two truncation neighbours, ties even. */
static void check_bf16_nearest(float f, uint16_t h) {
    uint32_t u = f32_bits(f);
    uint16_t lo = (uint16_t)(u >> 16);
    if ((u & 0xFFFF) == 0) {
        assert_int_equal(h, lo);
        return;
    }
    uint16_t hi = (uint16_t)(lo + 1);
    double x = f, vlo = sd_bf16_to_fp32(lo), vhi = sd_bf16_to_fp32(hi);
    double elo = fabs(x - vlo), ehi = isinf(vhi) ? INFINITY : fabs(x - vhi);
    if (isinf(vhi)) /* rounding past the largest finite: inf iff at or past the midpoint */
        ehi = (u & 0xFFFF) >= 0x8000 ? ((u & 0xFFFF) == 0x8000 ? elo : 0) : INFINITY;
    uint16_t want = elo < ehi ? lo : ehi < elo ? hi : ((lo & 1) ? hi : lo);
    assert_int_equal(h, want);
}

static void test_bf16(void **state) {
    (void)state;
    assert_int_equal(sd_fp32_to_bf16(1.0f), 0x3F80);
    assert_int_equal(sd_fp32_to_bf16(bits_f32(0x3F808000u)), 0x3F80); /* tie, even */
    assert_int_equal(sd_fp32_to_bf16(bits_f32(0x3F818000u)), 0x3F82); /* tie, up */
    assert_int_equal(sd_fp32_to_bf16(bits_f32(0x3F808001u)), 0x3F81);
    assert_int_equal(sd_fp32_to_bf16(bits_f32(0x7F7FFFFFu)), 0x7F80); /* rounds to inf */
    assert_int_equal(sd_fp32_to_bf16(bits_f32(0x00018000u)), 0x0002); /* subnormal kept */
    assert_int_equal(sd_fp32_to_bf16(-INFINITY), 0xFF80);
    assert_int_equal(sd_fp32_to_bf16(bits_f32(0x7F800001u)), 0x7FC0); /* sNaN quieted */
    assert_int_equal(sd_fp32_to_bf16(bits_f32(0xFFC12345u)), 0xFFC1);
    for (uint32_t h = 0; h < 65536; h++) {
        float f = sd_bf16_to_fp32((uint16_t)h);
        assert_int_equal(f32_bits(f), h << 16);
        if (!isnan(f))
            assert_int_equal(sd_fp32_to_bf16(f), h);
    }
    for (int i = 0; i < 1000000; i++) {
        float f = bits_f32(rng_u32());
        if (isnan(f))
            assert_true(isnan(sd_bf16_to_fp32(sd_fp32_to_bf16(f))));
        else
            check_bf16_nearest(f, sd_fp32_to_bf16(f));
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fp16_widen_all),
        cmocka_unit_test(test_fp16_narrow_definition),
        cmocka_unit_test(test_fp16_known_values),
        cmocka_unit_test(test_fp16_matches_f16c),
        cmocka_unit_test(test_bf16),
    };
    return SD_RUN_TESTS(tests);
}
