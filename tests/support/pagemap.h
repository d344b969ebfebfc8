/* Residency checks shared by the tests of giving file pages back
 * (tests/format/test_gguf_release.c, tests/model/test_release.c); header-only,
 * include after <cmocka.h>. */
#ifndef SD_TESTS_SUPPORT_PAGEMAP_H
#define SD_TESTS_SUPPORT_PAGEMAP_H

#include <stdbool.h>
#include <stdint.h>

#include "core/resident.h"

/* Whether /proc/self/pagemap can be read here (else residency is untestable). */
static inline bool pagemap_readable(void) {
    uint64_t probe = 0;
    return sd_resident_bytes(&probe, sizeof probe, &probe);
}

/* Resident bytes of the whole pages inside [p, p + n). */
static inline uint64_t inner_resident(const void *p, size_t n) {
    size_t page = sd_page_size();
    uintptr_t a = ((uintptr_t)p + page - 1) / page * page, b = ((uintptr_t)p + n) / page * page;
    uint64_t r = 0;
    if (b > a) assert_true(sd_resident_bytes((const void *)a, b - a, &r));
    return r;
}

#endif
