/* STREAM-style read and triad bandwidth probe: see membw.h. */
#include "numerics/membw.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "core/clock.h"

/* First touch with the same static schedule the kernels use, so each thread's
 * pages are local to it (matters on multi-socket machines, harmless here). */
static void first_touch(double *a, double *b, double *c, size_t n, int nt) {
#pragma omp parallel for schedule(static) num_threads(nt)
    for (size_t i = 0; i < n; i++) {
        a[i] = 0.0;
        b[i] = 1.0;
        c[i] = 2.0;
    }
}

/* Read kernel: four independent 4-wide vector accumulators per thread (GCC/
 * clang vector extension; plain SSE2 pairs when AVX is not enabled), so the
 * loads, not the adds, limit the speed. Returns the sum so the loads cannot
 * be optimised away. */
typedef double v4d __attribute__((vector_size(32)));

static double read_pass(const double *x, size_t n, int nt) {
    double total = 0.0;
#pragma omp parallel num_threads(nt) reduction(+ : total)
    {
        size_t nth = (size_t)omp_get_num_threads(), id = (size_t)omp_get_thread_num();
        size_t blocks = n / 16, lo = blocks * id / nth, hi = blocks * (id + 1) / nth;
        v4d s0 = {0}, s1 = {0}, s2 = {0}, s3 = {0};
        for (size_t blk = lo; blk < hi; blk++) {
            v4d v[4];
            memcpy(v, x + blk * 16, sizeof v);  /* unaligned-safe vector loads */
            s0 += v[0], s1 += v[1], s2 += v[2], s3 += v[3];
        }
        v4d s = (s0 + s1) + (s2 + s3);
        total += (s[0] + s[1]) + (s[2] + s[3]);
    }
    return total;
}

static void triad_pass(double *a, const double *b, const double *c, size_t n, int nt) {
    const double s = 3.0;
#pragma omp parallel for schedule(static) num_threads(nt)
    for (size_t i = 0; i < n; i++) a[i] = b[i] + s * c[i];
}

sd_status sd_membw_measure(size_t array_bytes, int n_threads, int reps, sd_membw *out,
                           sd_err *err) {
    if (array_bytes == 0) array_bytes = (size_t)256 << 20;
    if (n_threads <= 0) n_threads = 2;
    if (reps <= 0) reps = 5;
    size_t n = array_bytes / sizeof(double);
    n -= n % 16;
    if (n == 0) return sd_err_set(err, SD_ERR_ARG, "membw: array of %zu bytes is too small", array_bytes);
    double *a = sd_malloc_array(n, sizeof *a);
    double *b = sd_malloc_array(n, sizeof *b);
    double *c = sd_malloc_array(n, sizeof *c);
    if (!a || !b || !c) {
        free(a), free(b), free(c);
        return sd_err_set(err, SD_ERR_NOMEM, "membw: cannot allocate 3 x %zu bytes", n * sizeof(double));
    }
    first_touch(a, b, c, n, n_threads);

    double best_read = 1e30, best_triad = 1e30;
    volatile double sink = 0;
    for (int r = 0; r < reps; r++) {
        double t0 = sd_now_s();
        sink += read_pass(b, n, n_threads);
        double t1 = sd_now_s();
        triad_pass(a, b, c, n, n_threads);
        double t2 = sd_now_s();
        if (t1 - t0 < best_read) best_read = t1 - t0;
        if (t2 - t1 < best_triad) best_triad = t2 - t1;
    }
    (void)sink;
    double bytes = (double)n * sizeof(double);
    out->read_gbs = bytes / best_read * 1e-9;
    out->triad_gbs = 3.0 * bytes / best_triad * 1e-9;
    out->array_bytes = n * sizeof(double);
    out->n_threads = n_threads;
    out->reps = reps;
    free(a), free(b), free(c);
    return SD_OK;
}
