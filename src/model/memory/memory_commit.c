/* sd_memory_commit: see memory.h. */
#include "model/memory/memory.h"

#ifdef __GLIBC__
#include <malloc.h> /* malloc_usable_size */
#endif

void sd_memory_commit(void *p) {
#ifdef __GLIBC__
    if (!p) return;
    volatile unsigned char *b = p;
    const size_t n = malloc_usable_size(p);
    /* 4 KiB is the smallest page size of the systems we run on: a larger
     * page is touched more than once, which costs nothing more. */
    for (size_t i = 0; i < n; i += 4096) b[i] = b[i];
    if (n) b[n - 1] = b[n - 1];
#else
    (void)p;
#endif
}
