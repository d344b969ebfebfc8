/* Memory bandwidth probe for roofline statements (ARCHITECTURE.md §2): decoding one
 * token of a dense model reads every weight once, so
 *     weight bytes per token / read bandwidth
 * is a floor on the time per token that no kernel can beat.
 *
 * Method: STREAM (McCalpin, https://www.cs.virginia.edu/stream/): arrays much
 * larger than the last-level cache, first touched by the same threads that
 * later stream them (so pages sit near those threads), each kernel timed N
 * times and the best time kept. Bytes are counted the STREAM way: the bytes
 * the kernel names (read: 1 array read; triad a = b + s*c: 2 reads + 1 write),
 * with no allowance for write-allocate traffic. */
#ifndef SD_NUMERICS_MEMBW_H
#define SD_NUMERICS_MEMBW_H

#include <stddef.h>

#include "core/status.h"

typedef struct sd_membw {
    double read_gbs;   /* sum over one array, GB/s (1e9 bytes/s) */
    double triad_gbs;  /* a[i] = b[i] + s*c[i] over doubles, GB/s */
    size_t array_bytes;/* bytes per array used */
    int n_threads;
    int reps;
} sd_membw;

/* Measures both kernels with arrays of array_bytes each (0 = 256 MiB, which is
 * ≫ any L3 of this class of machine), n_threads threads (<= 0 = 2), best of
 * reps runs (<= 0 = 5). Takes about 3 * array_bytes of memory for the run.
 * Errors: SD_ERR_NOMEM. */
sd_status sd_membw_measure(size_t array_bytes, int n_threads, int reps, sd_membw *out,
                           sd_err *err);

#endif
