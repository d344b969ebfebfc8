/* CPU feature dispatch. Kernels come in two builds: a portable scalar
 * reference and an AVX2 version (files *_avx2.c, compiled with -mavx2 -mfma
 * -mf16c). Both compute every result in the same order, so they agree
 * bitwise (DESIGN.md §5); the choice only changes speed. */
#ifndef SD_NUMERICS_CPU_H
#define SD_NUMERICS_CPU_H

#include <stdbool.h>

/* True when the AVX2 kernels may run: the CPU has AVX2, FMA and F16C
 * (__builtin_cpu_supports), SD_FORCE_SCALAR=1 is not set in the environment,
 * and sd_cpu_force_scalar(true) is not in effect. Cheap after the first call. */
bool sd_cpu_avx2(void);

/* Forces (on = true) or releases the scalar path at run time, for tests that
 * compare the two builds in one process. Not thread-safe against running
 * kernels: call it between kernel calls. */
void sd_cpu_force_scalar(bool on);

#endif
