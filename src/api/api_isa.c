/* The public face of the kernels' instruction-set dispatch (numerics/cpu.c). */
#include "api/api_internal.h"
#include "numerics/cpu.h"

_Static_assert((int)SPECDEC_ISA_SCALAR == (int)SD_ISA_SCALAR && (int)SPECDEC_ISA_AVX2 == (int)SD_ISA_AVX2 &&
                   (int)SPECDEC_ISA_AVX512 == (int)SD_ISA_AVX512 && (int)SPECDEC_ISA_NEON == (int)SD_ISA_NEON,
               "specdec_isa mirrors sd_isa");

/* Any path the engine knows (numerics/cpu.h): the enum names the ones of
 * this release; a path added to the kernel table is reachable by its name. */
static bool in_enum(specdec_isa isa) { return (unsigned)isa < (unsigned)SD_ISA_COUNT; }

specdec_isa specdec_isa_get(void) { return (specdec_isa)sd_cpu_isa(); }

bool specdec_isa_available(specdec_isa isa) { return in_enum(isa) && sd_cpu_isa_available((sd_isa)isa); }

const char *specdec_isa_name(specdec_isa isa) { return in_enum(isa) ? sd_isa_name((sd_isa)isa) : NULL; }

bool specdec_isa_parse(const char *name, specdec_isa *isa) {
    sd_isa i;
    if (!name || !isa || !sd_isa_parse(name, &i)) return false;
    *isa = (specdec_isa)i;
    return true;
}

specdec_status specdec_isa_set(specdec_isa isa, specdec_error *err) {
    if (!in_enum(isa)) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_isa_set: %d is not an instruction set", (int)isa);
    sd_err e = {0};
    if (sd_cpu_force_isa((sd_isa)isa, &e) != SD_OK) return sd_api_error(err, &e);
    return SPECDEC_OK;
}

specdec_status sd_api_isa_check(specdec_error *err) {
    const char *why = sd_cpu_env_error();
    return why ? sd_api_fail(err, SPECDEC_ERR_UNSUPPORTED, "%s", why) : SPECDEC_OK;
}

void specdec_cpu_features(char *buf, size_t cap) {
    if (buf && cap) sd_cpu_features(buf, cap);
}

const char *specdec_isa_env_error(void) { return sd_cpu_env_error(); }
