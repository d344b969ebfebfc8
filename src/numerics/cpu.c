#include "numerics/cpu.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* -1 = not probed yet, 0 = scalar, 1 = AVX2. Probing twice is harmless (same
 * answer), so a relaxed atomic is enough. */
static atomic_int g_hw = -1;
static atomic_bool g_forced = false;

static int probe(void) {
    const char *env = getenv("SD_FORCE_SCALAR");
    if (env && *env && strcmp(env, "0") != 0) return 0;
#if defined(__x86_64__) || defined(__i386__)
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") &&
           __builtin_cpu_supports("f16c");
#else
    return 0;
#endif
}

bool sd_cpu_avx2(void) {
    if (atomic_load_explicit(&g_forced, memory_order_relaxed)) return false;
    int hw = atomic_load_explicit(&g_hw, memory_order_relaxed);
    if (hw < 0) {
        hw = probe();
        atomic_store_explicit(&g_hw, hw, memory_order_relaxed);
    }
    return hw == 1;
}

void sd_cpu_force_scalar(bool on) { atomic_store_explicit(&g_forced, on, memory_order_relaxed); }
