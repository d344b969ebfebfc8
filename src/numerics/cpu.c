/* Which kernel path runs: the CPUID / HWCAP probes the table rows name, the
 * choice at first use (SPECDEC_ISA, else the best row of the table this
 * machine runs) and the row in use (numerics/kernels/kernels.h). */
#include "numerics/cpu.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if SD_X86
#include <cpuid.h>
#endif
#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

#include "numerics/kernels/kernels.h"

/* -1 = not chosen yet. Choosing twice is harmless (same answer), so relaxed
 * atomics are enough. g_default is the path chosen at first use, g_isa the
 * one in use (differs while a test forces another). */
static atomic_int g_default = -1;
static atomic_int g_isa = -1;
static char g_env_err[160];
static atomic_bool g_env_bad = false;

#define SD_ISA_NAME_(id, name) name,
static const char *const k_names[] = {SD_ISA_PATHS(SD_ISA_NAME_)};
#undef SD_ISA_NAME_

/* The row in use: the row of g_isa (NULL until the first use). */
_Atomic(const sd_kernels *) sd_kernels_in_use = NULL;

const char *sd_isa_name(sd_isa isa) {
    return (unsigned)isa < sizeof k_names / sizeof k_names[0] ? k_names[isa] : "?";
}

bool sd_isa_parse(const char *name, sd_isa *out) {
    for (int i = 0; i < (int)(sizeof k_names / sizeof k_names[0]); i++)
        if (name && strcmp(name, k_names[i]) == 0) {
            *out = (sd_isa)i;
            return true;
        }
    return false;
}

#if SD_X86
/* XCR0: the register state the OS saves on a context switch. Without the
 * OSXSAVE bit (CPUID.1:ECX bit 27) xgetbv itself would fault. */
static unsigned long long xcr0(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return 0;
    unsigned lo, hi;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (unsigned long long)hi << 32 | lo;
}
#endif

bool sd_cpu_has_avx2(void) {
#if SD_X86
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c") &&
           (xcr0() & 0x6) == 0x6; /* SSE and YMM state */
#else
    return false;
#endif
}

bool sd_cpu_has_avx512(void) {
#if SD_X86
    __builtin_cpu_init();
    return sd_cpu_has_avx2() && __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni") &&
           (xcr0() & 0xE6) == 0xE6; /* + opmask, ZMM 0-15, 16-31 */
#else
    return false;
#endif
}

bool sd_cpu_isa_available(sd_isa isa) { return (unsigned)isa < SD_ISA_COUNT && sd_kernels_for(isa) != NULL; }

/* The first row of the table this machine runs (the generic row at worst). */
static sd_isa best(void) {
    int n;
    const sd_kernels *const *t = sd_kernels_table(&n);
    for (int i = 0; i < n; i++)
        if (!t[i]->usable || t[i]->usable()) return t[i]->isa;
    return SD_ISA_SCALAR;
}

/* "scalar, avx2, ..." into buf. */
static void path_list(char *buf, size_t n) {
    size_t len = 0;
    buf[0] = 0;
    for (int i = 0; i < SD_ISA_COUNT && len < n; i++)
        len += (size_t)snprintf(buf + len, n - len, "%s%s", i ? ", " : "", k_names[i]);
}

static sd_isa choose(void) {
    const char *env = getenv("SD_FORCE_SCALAR");
    if (env && *env && strcmp(env, "0") != 0) return SD_ISA_SCALAR;
    env = getenv("SPECDEC_ISA");
    if (!env || !*env) return best();
    sd_isa want;
    if (!sd_isa_parse(env, &want)) {
        char list[80];
        path_list(list, sizeof list);
        snprintf(g_env_err, sizeof g_env_err, "SPECDEC_ISA=%.40s: unknown instruction set (%s)", env, list);
    } else if (!sd_cpu_isa_available(want))
        snprintf(g_env_err, sizeof g_env_err, "SPECDEC_ISA=%s: this CPU cannot run %s kernels", env, env);
    else
        return want;
    atomic_store_explicit(&g_env_bad, true, memory_order_relaxed);
    return best();
}

static sd_isa default_isa(void) {
    int d = atomic_load_explicit(&g_default, memory_order_relaxed);
    if (d < 0) {
        d = (int)choose();
        atomic_store_explicit(&g_default, d, memory_order_relaxed);
    }
    return (sd_isa)d;
}

/* Switches the path and its row together. */
static void use(sd_isa isa) {
    atomic_store_explicit(&sd_kernels_in_use, sd_kernels_for(isa), memory_order_relaxed);
    atomic_store_explicit(&g_isa, (int)isa, memory_order_relaxed);
}

sd_isa sd_cpu_isa(void) {
    int i = atomic_load_explicit(&g_isa, memory_order_relaxed);
    if (i >= 0) return (sd_isa)i;
    sd_isa d = default_isa();
    use(d);
    return d;
}

/* The row of the path, looked up rather than read back: another thread may
 * have set the path, and its store of the row need not be visible yet. */
const sd_kernels *sd_kernels_first_use(void) {
    const sd_kernels *k = sd_kernels_for(sd_cpu_isa());
    return k ? k : &sd_kernels_generic;
}

const char *sd_cpu_env_error(void) {
    default_isa();
    return atomic_load_explicit(&g_env_bad, memory_order_relaxed) ? g_env_err : NULL;
}

sd_status sd_cpu_force_isa(sd_isa isa, sd_err *err) {
    if (!sd_cpu_isa_available(isa))
        return sd_err_set(err, SD_ERR_UNSUPPORTED, "instruction set %s is not available on this machine",
                          sd_isa_name(isa));
    use(isa);
    return SD_OK;
}

bool sd_cpu_avx2(void) {
    sd_isa i = sd_cpu_isa();
    return i == SD_ISA_AVX2 || i == SD_ISA_AVX512;
}

bool sd_cpu_avx512(void) { return sd_cpu_isa() == SD_ISA_AVX512; }

bool sd_cpu_neon(void) { return sd_cpu_isa() == SD_ISA_NEON; }

#if defined(__aarch64__)
bool sd_cpu_neon_dotprod(void) {
#if defined(__linux__) && defined(HWCAP_ASIMDDP)
    static atomic_int dp = -1;
    int v = atomic_load_explicit(&dp, memory_order_relaxed);
    if (v < 0) {
        v = (getauxval(AT_HWCAP) & HWCAP_ASIMDDP) != 0;
        atomic_store_explicit(&dp, v, memory_order_relaxed);
    }
    return v == 1;
#else
    return false; /* no portable probe here: the plain NEON path */
#endif
}
#else
bool sd_cpu_neon_dotprod(void) { return false; }
#endif

void sd_cpu_force_scalar(bool on) {
    use(on ? SD_ISA_SCALAR : default_isa());
}

void sd_cpu_features(char *buf, size_t n) {
    if (n == 0) return;
    buf[0] = 0;
    size_t len = 0;
#if SD_X86
    __builtin_cpu_init();
    static const char *const names[] = {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vl", "avx512vnni",
                                        "avx512bf16"};
    bool has[sizeof names / sizeof names[0]] = {
        __builtin_cpu_supports("avx2"),     __builtin_cpu_supports("fma"),
        __builtin_cpu_supports("f16c"),     __builtin_cpu_supports("avx512f"),
        __builtin_cpu_supports("avx512bw"), __builtin_cpu_supports("avx512vl"),
        __builtin_cpu_supports("avx512vnni"), __builtin_cpu_supports("avx512bf16")};
    unsigned long long x = xcr0();
    for (size_t i = 0; i < sizeof names / sizeof names[0] && len < n; i++)
        if (has[i]) len += (size_t)snprintf(buf + len, n - len, "%s%s", len ? " " : "", names[i]);
    if (len < n && (x & 0x6) == 0x6) len += (size_t)snprintf(buf + len, n - len, " os-ymm");
    if (len < n && (x & 0xE6) == 0xE6) snprintf(buf + len, n - len, " os-zmm");
#elif defined(__aarch64__)
    snprintf(buf, n, sd_cpu_neon_dotprod() ? "neon dotprod" : "neon");
    (void)len;
#else
    (void)len;
#endif
}
