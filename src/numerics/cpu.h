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

/* The kernel paths, as SPECDEC_ISA and --isa name them: X(id, name) each.
 * A path is served by one or more rows of the kernel table
 * (numerics/kernels/kernels.h, docs/KERNELS.md); AVX512 includes AVX2 (its
 * row runs the AVX2 kernels where it has no AVX-512 one), NEON takes the
 * neon-dot row where the CPU has the dot-product instructions. */
#define SD_ISA_PATHS(X)                                                                                        \
    X(SD_ISA_SCALAR, "scalar") X(SD_ISA_AVX2, "avx2") X(SD_ISA_AVX512, "avx512") X(SD_ISA_NEON, "neon")
#define SD_ISA_ENUM_(id, name) id,
typedef enum { SD_ISA_PATHS(SD_ISA_ENUM_) SD_ISA_COUNT } sd_isa;
#undef SD_ISA_ENUM_

/* The path in use. Chosen at first use: SPECDEC_ISA=scalar|avx2|avx512|neon
 * when set and available (else the best available, and sd_cpu_env_error says
 * why), SD_FORCE_SCALAR=1 (alias of scalar), else the best the CPU and the OS
 * support. Cheap after the first call. */
sd_isa sd_cpu_isa(void);

/* True when a row of the kernel table serves isa and this machine runs it
 * (the row's probe below), always for SD_ISA_SCALAR. */
bool sd_cpu_isa_available(sd_isa isa);

/* The CPUID / HWCAP probes the table rows name (sd_kernels.usable).
 * sd_cpu_has_avx2: the CPU has AVX2, FMA and F16C (__builtin_cpu_supports)
 * and the OS saves the YMM state (XCR0 via xgetbv); sd_cpu_has_avx512: that
 * plus AVX-512 F/BW/VL/VNNI and the opmask and ZMM state. False on other
 * architectures. */
bool sd_cpu_has_avx2(void);
bool sd_cpu_has_avx512(void);

/* Switches the path at run time. An ISA the machine cannot run is refused
 * with SD_ERR_UNSUPPORTED and one line in err; the path is then unchanged.
 * Matrices keep the layout chosen when they were loaded (matmul.c falls back
 * to a kernel that reads it). Not thread-safe against running kernels: call
 * it between kernel calls. */
sd_status sd_cpu_force_isa(sd_isa isa, sd_err *err);

/* The name of a path ("scalar", "avx2", "avx512", "neon"); "?" for another value. */
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

/* For tests and tools that compare paths (the engine itself dispatches only
 * through the kernel table): sd_cpu_avx2, the path is AVX2 or AVX-512;
 * sd_cpu_avx512, the path is AVX512; sd_cpu_neon, the path is NEON. */
bool sd_cpu_avx2(void);
bool sd_cpu_avx512(void);
bool sd_cpu_neon(void);

/* True when the CPU has the Armv8.2 dot-product instructions (SDOT;
 * HWCAP_ASIMDDP on Linux): the probe of the neon-dot row. Without them the
 * neon row's widening multiplies give the same exact integer sums. */
bool sd_cpu_neon_dotprod(void);

/* Forces (on = true) the scalar path, or releases it (back to the path
 * chosen at first use), for tests that compare builds in one process. Same
 * thread-safety rule as sd_cpu_force_isa. */
void sd_cpu_force_scalar(bool on);

#endif
