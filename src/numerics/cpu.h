/* CPU feature dispatch. Kernels come in several builds: a portable scalar
 * reference, AVX2 (files *_avx2.c, compiled with -mavx2 -mfma -mf16c),
 * AVX-512 VNNI (*_avx512.c) and ARM NEON (*_neon.c). Every build computes
 * each result in the same order, so they agree bitwise (ARCHITECTURE.md §5); the
 * choice of instruction set only changes speed. */
#ifndef SD_NUMERICS_CPU_H
#define SD_NUMERICS_CPU_H

#include <stdbool.h>
#include <stddef.h>

#include "core/status.h"

/* Which SIMD sources this build compiles (CMakeLists.txt): the AVX2 and
 * AVX-512 kernels exist only on x86, the NEON ones only on aarch64, so every
 * call of one is inside #if SD_X86 / #if SD_ARM64. */
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

/* The kernel families. AVX512 includes AVX2: kernels without an AVX-512
 * version run their AVX2 build on that path. */
typedef enum { SD_ISA_SCALAR, SD_ISA_AVX2, SD_ISA_AVX512, SD_ISA_NEON } sd_isa;

/* The path in use. Chosen at first use: SPECDEC_ISA=scalar|avx2|avx512|neon
 * when set and available (else the best available, and sd_cpu_env_error says
 * why), SD_FORCE_SCALAR=1 (alias of scalar), else the best the CPU and the OS
 * support. Cheap after the first call. */
sd_isa sd_cpu_isa(void);

/* True when the CPU has the instructions (__builtin_cpu_supports) and the OS
 * saves their registers (XCR0 via xgetbv: YMM state for AVX2, plus opmask and
 * ZMM state for AVX-512), or for NEON, when built for AArch64. */
bool sd_cpu_isa_available(sd_isa isa);

/* Switches the path at run time. An ISA the machine cannot run is refused
 * with SD_ERR_UNSUPPORTED and one line in err; the path is then unchanged.
 * Matrices keep the layout chosen when they were loaded (matmul.c falls back
 * to a kernel that reads it). Not thread-safe against running kernels: call
 * it between kernel calls. */
sd_status sd_cpu_force_isa(sd_isa isa, sd_err *err);

/* "scalar", "avx2", "avx512" or "neon"; "?" for another value. */
const char *sd_isa_name(sd_isa isa);

/* Parses an ISA name (as sd_isa_name); false for an unknown name. */
bool sd_isa_parse(const char *name, sd_isa *out);

/* NULL, or the one-line reason why SPECDEC_ISA in the environment could not
 * be honoured (unknown name, or an ISA this machine lacks). The API reports
 * it as an error at model load and context creation. */
const char *sd_cpu_env_error(void);

/* Writes the CPU features the dispatch looks at into buf (at most n bytes,
 * NUL-terminated), one space-separated name each when present, e.g.
 * "avx2 fma f16c avx512f avx512bw avx512vl avx512vnni os-zmm"; "os-ymm" /
 * "os-zmm" say the OS saves those registers (XCR0). "" on other machines
 * than x86 and AArch64 ("neon" there). */
void sd_cpu_features(char *buf, size_t n);

/* True when the AVX2 kernels may run: the path is AVX2 or AVX-512. */
bool sd_cpu_avx2(void);

/* True when the AVX-512 VNNI kernels may run (the path is AVX512). */
bool sd_cpu_avx512(void);

/* sd_cpu_isa() == SD_ISA_NEON. */
bool sd_cpu_neon(void);

/* True when the NEON kernels may use the Armv8.2 dot-product instructions
 * (SDOT; HWCAP_ASIMDDP on Linux). Without them they use the plain NEON
 * widening multiplies; both give the same exact integer sums. */
bool sd_cpu_neon_dotprod(void);

/* Forces (on = true) the scalar path, or releases it (back to the path
 * chosen at first use), for tests that compare builds in one process. Same
 * thread-safety rule as sd_cpu_force_isa. */
void sd_cpu_force_scalar(bool on);

#endif
