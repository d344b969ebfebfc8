/* Wall-clock time for the measurements the engine makes of itself (the gate's
 * costs, the bandwidth probe, bench timings). */
#ifndef SD_CORE_CLOCK_H
#define SD_CORE_CLOCK_H

/* Seconds on CLOCK_MONOTONIC (POSIX clock_gettime): only differences mean
 * anything; never goes back when the system time is set. No errors. */
double sd_now_s(void);

#endif
