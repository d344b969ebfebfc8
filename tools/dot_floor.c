/* sd-dot_floor: the throughput floor of the int8 block dot on this CPU, for
 * the c_v(S) discussion (bench/RESULTS.md). A verify at S = 9 is compute-bound:
 * its cost is set by how many instructions one 32-product step of the Q8_0
 * kernel needs and how fast the core retires them. This times register-only
 * loops of the exact instruction mixes, with independent chains and the
 * operands in L1, so nothing but the execution ports limits them:
 *
 *   int8   per 32 products: vpsignb, vpmaddubsw, vpmaddwd (x ones), vpaddd
 *          (the AVX2 Q8_0 kernel: maddubs needs one unsigned operand, so the
 *          activation takes the weight's sign), plus vpbroadcastd of the
 *          activation; 3 rows share one weight load and vpabsb.
 *   int16  per 32 products: 2 vpmaddwd + 2 vpaddd on weights sign-extended once
 *          per 3 rows (vpmovsxbw): no sign step, twice the multiplies.
 *   madd   vpmaddwd alone, the multiply ports' own limit.
 *
 * Cycles come from a dependent chain of scalar adds (1 per cycle), so the
 * figures are in core cycles at whatever clock the core runs. x86-64 AVX2 only.
 *
 *   sd-dot_floor [--iters N] */
#define _POSIX_C_SOURCE 200809L
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "numerics/cpu.h"

static double now_s(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

#if defined(__x86_64__)
static _Alignas(64) unsigned char g_buf[8192];

/* Nanoseconds per cycle: 4 dependent adds per iteration. */
static double ns_per_cycle(long iters) {
    unsigned long x = 1;
    double t0 = now_s();
    for (long i = 0; i < iters; i++)
        __asm__ volatile("add $1, %0\n\tadd $1, %0\n\tadd $1, %0\n\tadd $1, %0" : "+r"(x));
    return (now_s() - t0) * 1e9 / (4.0 * (double)iters);
}

/* One weight vector (32 bytes at off) against 3 activation rows. */
#define INT8_K(off)                                                                                        \
    "vmovdqa " #off "(%0), %%ymm12\n\t"                                                                    \
    "vpabsb %%ymm12, %%ymm13\n\t"                                                                          \
    "vpbroadcastd " #off "(%1), %%ymm14\n\t"                                                               \
    "vpsignb %%ymm12, %%ymm14, %%ymm14\n\t"                                                                \
    "vpmaddubsw %%ymm14, %%ymm13, %%ymm14\n\t"                                                             \
    "vpmaddwd %%ymm9, %%ymm14, %%ymm14\n\t"                                                                \
    "vpaddd %%ymm14, %%ymm0, %%ymm0\n\t"                                                                   \
    "vpbroadcastd " #off "+4(%1), %%ymm15\n\t"                                                             \
    "vpsignb %%ymm12, %%ymm15, %%ymm15\n\t"                                                                \
    "vpmaddubsw %%ymm15, %%ymm13, %%ymm15\n\t"                                                             \
    "vpmaddwd %%ymm9, %%ymm15, %%ymm15\n\t"                                                                \
    "vpaddd %%ymm15, %%ymm1, %%ymm1\n\t"                                                                   \
    "vpbroadcastd " #off "+8(%1), %%ymm11\n\t"                                                             \
    "vpsignb %%ymm12, %%ymm11, %%ymm11\n\t"                                                                \
    "vpmaddubsw %%ymm11, %%ymm13, %%ymm11\n\t"                                                             \
    "vpmaddwd %%ymm9, %%ymm11, %%ymm11\n\t"                                                                \
    "vpaddd %%ymm11, %%ymm2, %%ymm2\n\t"

#define INT16_K(off)                                                                                       \
    "vpmovsxbw " #off "(%0), %%ymm12\n\t"                                                                  \
    "vpmovsxbw " #off "+16(%0), %%ymm13\n\t"                                                               \
    "vpbroadcastq " #off "(%1), %%ymm14\n\t"                                                               \
    "vpmaddwd %%ymm14, %%ymm12, %%ymm15\n\t"                                                               \
    "vpaddd %%ymm15, %%ymm0, %%ymm0\n\t"                                                                   \
    "vpmaddwd %%ymm14, %%ymm13, %%ymm15\n\t"                                                               \
    "vpaddd %%ymm15, %%ymm1, %%ymm1\n\t"                                                                   \
    "vpbroadcastq " #off "+8(%1), %%ymm14\n\t"                                                             \
    "vpmaddwd %%ymm14, %%ymm12, %%ymm11\n\t"                                                               \
    "vpaddd %%ymm11, %%ymm2, %%ymm2\n\t"                                                                   \
    "vpmaddwd %%ymm14, %%ymm13, %%ymm11\n\t"                                                               \
    "vpaddd %%ymm11, %%ymm3, %%ymm3\n\t"                                                                   \
    "vpbroadcastq " #off "+16(%1), %%ymm14\n\t"                                                            \
    "vpmaddwd %%ymm14, %%ymm12, %%ymm10\n\t"                                                               \
    "vpaddd %%ymm10, %%ymm4, %%ymm4\n\t"                                                                   \
    "vpmaddwd %%ymm14, %%ymm13, %%ymm10\n\t"                                                               \
    "vpaddd %%ymm10, %%ymm5, %%ymm5\n\t"

/* The Q4_K kernel's step: one weight vector of nibbles unpacked (vpand) and
 * shared by 3 rows; per row a broadcast activation dword, vpmaddubsw and an
 * int16 add (the vpmaddwd by the sub-block scale comes once per 8 steps). */
#define K4_K(off)                                                                                          \
    "vpand " #off "(%0), %%ymm8, %%ymm12\n\t"                                                              \
    "vpbroadcastd " #off "(%1), %%ymm14\n\t"                                                               \
    "vpmaddubsw %%ymm14, %%ymm12, %%ymm14\n\t"                                                             \
    "vpaddw %%ymm14, %%ymm0, %%ymm0\n\t"                                                                   \
    "vpbroadcastd " #off "+4(%1), %%ymm15\n\t"                                                             \
    "vpmaddubsw %%ymm15, %%ymm12, %%ymm15\n\t"                                                             \
    "vpaddw %%ymm15, %%ymm1, %%ymm1\n\t"                                                                   \
    "vpbroadcastd " #off "+8(%1), %%ymm11\n\t"                                                             \
    "vpmaddubsw %%ymm11, %%ymm12, %%ymm11\n\t"                                                             \
    "vpaddw %%ymm11, %%ymm2, %%ymm2\n\t"

/* The same with the activation dwords taken from a register by vpshufd (one
 * 16-byte broadcast load per 4 dwords) instead of a broadcast load each. */
#define K4S_K(off, imm)                                                                                    \
    "vpand " #off "(%0), %%ymm8, %%ymm12\n\t"                                                              \
    "vpshufd $" #imm ", %%ymm5, %%ymm14\n\t"                                                               \
    "vpmaddubsw %%ymm14, %%ymm12, %%ymm14\n\t"                                                             \
    "vpaddw %%ymm14, %%ymm0, %%ymm0\n\t"                                                                   \
    "vpshufd $" #imm ", %%ymm6, %%ymm15\n\t"                                                               \
    "vpmaddubsw %%ymm15, %%ymm12, %%ymm15\n\t"                                                             \
    "vpaddw %%ymm15, %%ymm1, %%ymm1\n\t"                                                                   \
    "vpshufd $" #imm ", %%ymm7, %%ymm11\n\t"                                                               \
    "vpmaddubsw %%ymm11, %%ymm12, %%ymm11\n\t"                                                             \
    "vpaddw %%ymm11, %%ymm2, %%ymm2\n\t"
#define K4S_LOAD                                                                                           \
    "vbroadcasti128 (%1), %%ymm5\n\tvbroadcasti128 16(%1), %%ymm6\n\tvbroadcasti128 32(%1), %%ymm7\n\t"

#define MADD8                                                                                              \
    "vpmaddwd %%ymm8, %%ymm0, %%ymm0\n\tvpmaddwd %%ymm8, %%ymm1, %%ymm1\n\t"                                \
    "vpmaddwd %%ymm8, %%ymm2, %%ymm2\n\tvpmaddwd %%ymm8, %%ymm3, %%ymm3\n\t"                                \
    "vpmaddwd %%ymm8, %%ymm4, %%ymm4\n\tvpmaddwd %%ymm8, %%ymm5, %%ymm5\n\t"                                \
    "vpmaddwd %%ymm8, %%ymm6, %%ymm6\n\tvpmaddwd %%ymm8, %%ymm7, %%ymm7\n\t"

#define CLOBBERS                                                                                           \
    "xmm0", "xmm1", "xmm2", "xmm3", "xmm4", "xmm5", "xmm6", "xmm7", "xmm8", "xmm9", "xmm10", "xmm11",        \
        "xmm12", "xmm13", "xmm14", "xmm15"

/* Each returns nanoseconds per 32-product step (one weight vector x one row). */
static double time_int8(long iters) {
    const unsigned char *w = g_buf, *x = g_buf + 4096;
    double t0 = now_s();
    for (long i = 0; i < iters; i++)
        __asm__ volatile(INT8_K(0) INT8_K(32) INT8_K(64) INT8_K(96) ::"r"(w), "r"(x) : CLOBBERS);
    return (now_s() - t0) * 1e9 / (12.0 * (double)iters);
}

static double time_int16(long iters) {
    const unsigned char *w = g_buf, *x = g_buf + 4096;
    double t0 = now_s();
    for (long i = 0; i < iters; i++)
        __asm__ volatile(INT16_K(0) INT16_K(32) INT16_K(64) INT16_K(96) ::"r"(w), "r"(x) : CLOBBERS);
    return (now_s() - t0) * 1e9 / (12.0 * (double)iters);
}

static double time_k4(long iters) {
    const unsigned char *w = g_buf, *x = g_buf + 4096;
    double t0 = now_s();
    for (long i = 0; i < iters; i++)
        __asm__ volatile(K4_K(0) K4_K(32) K4_K(64) K4_K(96) ::"r"(w), "r"(x) : CLOBBERS);
    return (now_s() - t0) * 1e9 / (12.0 * (double)iters);
}

static double time_k4s(long iters) {
    const unsigned char *w = g_buf, *x = g_buf + 4096;
    double t0 = now_s();
    for (long i = 0; i < iters; i++)
        __asm__ volatile(K4S_LOAD K4S_K(0, 0) K4S_K(32, 0x55) K4S_K(64, 0xAA) K4S_K(96, 0xFF) ::"r"(w), "r"(x)
                         : CLOBBERS);
    return (now_s() - t0) * 1e9 / (12.0 * (double)iters);
}

static double time_madd(long iters) { /* per vpmaddwd */
    double t0 = now_s();
    for (long i = 0; i < iters; i++) __asm__ volatile(MADD8 MADD8 ::: CLOBBERS);
    return (now_s() - t0) * 1e9 / (16.0 * (double)iters);
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Median of 7 runs, in cycles. */
static double median_cycles(double (*f)(long), long iters, double ns_cycle) {
    double v[7];
    for (int r = 0; r < 7; r++) v[r] = f(iters) / ns_cycle;
    qsort(v, 7, sizeof v[0], cmp_double);
    return v[3];
}

int main(int argc, char **argv) {
    long iters = 20000000;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--iters") && i + 1 < argc) iters = atol(argv[++i]);
        else {
            fprintf(stderr, "usage: sd-dot_floor [--iters N]\n");
            return 2;
        }
    }
    if (iters < 1000 || !sd_cpu_avx2()) {
        fprintf(stderr, "sd-dot_floor: %s\n", iters < 1000 ? "--iters must be >= 1000" : "needs AVX2");
        return 2;
    }
    memset(g_buf, 3, sizeof g_buf);
    double ns_cycle = ns_per_cycle(iters * 4);
    printf("clock: %.2f GHz (dependent scalar adds)\n", 1.0 / ns_cycle);
    double c8 = median_cycles(time_int8, iters, ns_cycle), c16 = median_cycles(time_int16, iters, ns_cycle);
    double cm = median_cycles(time_madd, iters, ns_cycle);
    double ck = median_cycles(time_k4, iters, ns_cycle), cks = median_cycles(time_k4s, iters, ns_cycle);
    printf("| mix | cycles per 32 products | products per cycle |\n|---|---:|---:|\n");
    printf("| int8: vpsignb + vpmaddubsw + vpmaddwd + vpaddd | %.2f | %.1f |\n", c8, 32.0 / c8);
    printf("| int16: 2 vpmaddwd + 2 vpaddd (+ vpmovsxbw / 3 rows) | %.2f | %.1f |\n", c16, 32.0 / c16);
    printf("| q4_K: vpbroadcastd + vpmaddubsw + vpaddw (+ vpand / 3 rows) | %.2f | %.1f |\n", ck, 32.0 / ck);
    printf("| q4_K, dwords by vpshufd (+ vbroadcasti128 / 4) | %.2f | %.1f |\n", cks, 32.0 / cks);
    printf("| vpmaddwd alone (16 products each) | %.2f | %.1f |\n", 2.0 * cm, 16.0 / cm);
    return 0;
}
#else
int main(void) {
    fprintf(stderr, "sd-dot_floor: x86-64 only\n");
    return 2;
}
#endif
