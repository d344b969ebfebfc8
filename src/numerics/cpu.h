/* CPU feature dispatch. Kernels come in several builds: a portable scalar
 * reference, AVX2 (files *_avx2.c, compiled with -mavx2 -mfma -mf16c, x86
 * only) and NEON (files *_neon.c, aarch64 only). Every build computes each
 * result in the same order, so they agree bitwise (DESIGN.md §5); the choice
 * only changes speed. */
#ifndef SD_NUMERICS_CPU_H
#define SD_NUMERICS_CPU_H

#include <stdbool.h>

#include "core/status.h"

/* Which SIMD sources this build compiles (CMakeLists.txt): the AVX2 kernels
 * exist only on x86, the NEON ones only on aarch64, so every call of one is
 * inside #if SD_X86 / #if SD_ARM64. */
#if defined(__x86_64__) || defined(__i386__)
#define SD_X86 1
#else
#define SD_X86 0
#endif
#if defined(__aarch64__)
#define SD_ARM64 1
#else
#define SD_ARM64 0
#endif

/* The instruction-set families a kernel can be built for. */
typedef enum { SD_ISA_SCALAR, SD_ISA_AVX2, SD_ISA_AVX512, SD_ISA_NEON } sd_isa;

/* The family the kernels use now: the best one this CPU and build have, unless
 * the environment (SPECDEC_ISA=scalar|avx2|avx512|neon; SD_FORCE_SCALAR=1 as
 * scalar) or sd_cpu_force_isa chose another. An unavailable SPECDEC_ISA value
 * falls back to the best available. Cheap after the first call. */
sd_isa sd_cpu_isa(void);

/* True when this CPU and this build can run kernels of family isa (scalar:
 * always; NEON: always on aarch64). */
bool sd_cpu_isa_available(sd_isa isa);

/* Makes the kernels use isa from now on; SD_ERR_UNSUPPORTED (and no change) if
 * it is not available. Not thread-safe against running kernels: call it
 * between kernel calls (tests compare the builds in one process). */
sd_status sd_cpu_force_isa(sd_isa isa, sd_err *err);

/* "scalar", "avx2", "avx512" or "neon". */
const char *sd_isa_name(sd_isa isa);

/* sd_cpu_isa() == SD_ISA_AVX2. */
bool sd_cpu_avx2(void);

/* sd_cpu_isa() == SD_ISA_NEON. */
bool sd_cpu_neon(void);

/* True when the NEON kernels may use the Armv8.2 dot-product instructions
 * (SDOT; HWCAP_ASIMDDP on Linux). Without them they use the plain NEON
 * widening multiplies; both give the same exact integer sums. */
bool sd_cpu_neon_dotprod(void);

/* Forces (on = true) the scalar path, or releases it (back to the family
 * the environment chooses, as at the first sd_cpu_isa), for tests that compare the builds in one process. */
void sd_cpu_force_scalar(bool on);

#endif
