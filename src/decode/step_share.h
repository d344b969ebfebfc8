/* What a request served in a batch pays for a step (docs/BATCHING.md
 * "Speculation under load"): the cost its gate learns for a target forward,
 * so that drafting backs off when the rows it adds stop being free.
 *
 * A batch keeps t[r], the smoothed time of a step of r rows (r = 1..max_rows,
 * 0 = never measured). A request with S of a step's R rows, among n
 * requests, pays
 *     T(R - S + 1) / n  +  (T(R) - T(R - S + 1))
 * its part of the step it would have been as one row, plus everything its
 * S - 1 extra rows added. n = 1: the step's time, the single-user cost. A
 * flat T (rows free: bandwidth-bound): T / n whatever S. A T linear in rows
 * (compute-bound, under load): each extra row in full, so c_v(K + 1) tends
 * to 1 + K and the gate cuts K or closes. */
#ifndef SD_DECODE_STEP_SHARE_H
#define SD_DECODE_STEP_SHARE_H

#include <stdint.h>

/* Learns a step of R rows (1..max_rows) that took T seconds into t[max_rows + 1]. */
void sd_step_learn(double *t, int32_t max_rows, int32_t R, double T);
/* T(r), r in 1..max_rows: measured, else interpolated linearly between the
 * nearest measured row counts, flat beyond them; fallback when none is. */
double sd_step_time(const double *t, int32_t max_rows, int32_t r, double fallback);
/* The share above of a request with S of the R rows (1 <= S <= R) of a
 * step among n >= 1 requests; fallback for unmeasured times. */
double sd_step_share(const double *t, int32_t max_rows, int32_t R, int32_t S, int32_t n, double fallback);

#endif
