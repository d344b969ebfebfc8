/* Overflow-checked size arithmetic. Sizes read from files are never trusted:
 * every product or sum that becomes an allocation or an offset goes through
 * these, and a false return means "reject the input". */
#ifndef SD_CORE_CHECKED_H
#define SD_CORE_CHECKED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* *out = a * b; false on overflow (then *out is unspecified). */
static inline bool sd_mul_u64(uint64_t a, uint64_t b, uint64_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}
/* *out = a + b; false on overflow. */
static inline bool sd_add_u64(uint64_t a, uint64_t b, uint64_t *out) {
    return !__builtin_add_overflow(a, b, out);
}
/* *out = a * b as size_t; false on overflow. */
static inline bool sd_mul_size(size_t a, size_t b, size_t *out) {
    return !__builtin_mul_overflow(a, b, out);
}

/* calloc(n, size) that returns NULL on overflow or n == 0 edge cases handled:
 * n == 0 allocates one byte so that NULL always means failure. Free with free(). */
void *sd_calloc(size_t n, size_t size);
/* malloc(n * size) with the product checked; NULL on overflow or failure. */
void *sd_malloc_array(size_t n, size_t size);

#endif
