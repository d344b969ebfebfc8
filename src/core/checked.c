#include "core/checked.h"

#include <stdlib.h>

void *sd_calloc(size_t n, size_t size) {
    size_t bytes;
    if (!sd_mul_size(n, size, &bytes)) return NULL;
    return calloc(1, bytes ? bytes : 1);
}

void *sd_malloc_array(size_t n, size_t size) {
    size_t bytes;
    if (!sd_mul_size(n, size, &bytes)) return NULL;
    return malloc(bytes ? bytes : 1);
}
