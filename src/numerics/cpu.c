#include "numerics/cpu.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#if defined(__aarch64__) && defined(__linux__)
#include <sys/auxv.h>
#endif

/* -1 = not chosen yet, else the sd_isa in use. Choosing twice is harmless
 * (same answer), so a relaxed atomic is enough. */
static atomic_int g_isa = -1;

static const char *const k_names[] = {"scalar", "avx2", "avx512", "neon"};

const char *sd_isa_name(sd_isa isa) {
    return (unsigned)isa < sizeof k_names / sizeof k_names[0] ? k_names[isa] : "unknown";
}

#if defined(__x86_64__) || defined(__i386__)
static bool has_avx2(void) {
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") && __builtin_cpu_supports("f16c");
}
#endif

bool sd_cpu_isa_available(sd_isa isa) {
    switch (isa) {
    case SD_ISA_SCALAR: return true;
#if defined(__x86_64__) || defined(__i386__)
    case SD_ISA_AVX2: return has_avx2();
#endif
#if defined(__aarch64__)
    case SD_ISA_NEON: return true; /* Advanced SIMD is part of every Armv8-A core */
#endif
    default: return false;
    }
}

static sd_isa best(void) {
    if (sd_cpu_isa_available(SD_ISA_NEON)) return SD_ISA_NEON;
    if (sd_cpu_isa_available(SD_ISA_AVX2)) return SD_ISA_AVX2;
    return SD_ISA_SCALAR;
}

static sd_isa from_env(void) {
    const char *env = getenv("SD_FORCE_SCALAR");
    if (env && *env && strcmp(env, "0") != 0) return SD_ISA_SCALAR;
    env = getenv("SPECDEC_ISA");
    if (env)
        for (int i = 0; i < (int)(sizeof k_names / sizeof k_names[0]); i++)
            if (strcmp(env, k_names[i]) == 0 && sd_cpu_isa_available((sd_isa)i)) return (sd_isa)i;
    return best();
}

sd_isa sd_cpu_isa(void) {
    int isa = atomic_load_explicit(&g_isa, memory_order_relaxed);
    if (isa < 0) {
        isa = (int)from_env();
        atomic_store_explicit(&g_isa, isa, memory_order_relaxed);
    }
    return (sd_isa)isa;
}

sd_status sd_cpu_force_isa(sd_isa isa, sd_err *err) {
    if (!sd_cpu_isa_available(isa))
        return sd_err_set(err, SD_ERR_UNSUPPORTED, "cpu: instruction set %s is not available here", sd_isa_name(isa));
    atomic_store_explicit(&g_isa, (int)isa, memory_order_relaxed);
    return SD_OK;
}

bool sd_cpu_avx2(void) { return sd_cpu_isa() == SD_ISA_AVX2; }

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
    atomic_store_explicit(&g_isa, (int)(on ? SD_ISA_SCALAR : from_env()), memory_order_relaxed);
}
