/* Threads. We use OpenMP (libgomp, shipped with gcc) rather than a pool of our
 * own: kernels split output rows across threads, each output element is
 * computed by exactly one thread in a fixed order, so results never depend on
 * the thread count (ARCHITECTURE.md §5). */
#ifndef SD_NUMERICS_POOL_H
#define SD_NUMERICS_POOL_H

/* Number of threads used when the user gives none: the online cores. */
int sd_default_threads(void);

#endif
