/* sd-matmul_probe: times one batched product over a set of random weight
 * matrices at S = 1..smax activation rows, to measure c_v(S) = t(S) / t(1)
 * (ARCHITECTURE.md §2). Timing does not depend on weight values, so weights are
 * random bytes with valid fp16 scales.
 *
 *   sd-matmul_probe --type q8_0 --shape 1024x3072 --shape 3072x1024 \
 *                   --shape 1024x151936 [--threads 2] [--smax 17] [--reps 7] [--json]
 *
 * --shape IN x OUT: a matrix of OUT rows of IN inputs (GGUF ne = [IN, OUT]);
 * --copies N: N distinct copies of each shape (to exceed the caches, like the
 * layers of a model); --no-repack: every matrix read in the GGUF layout (as
 * the engine's --no-repack). Time per S is the median over reps of one pass over all
 * matrices. Besides wall time it reports process CPU time / threads, which
 * is what the kernels cost when other jobs share the cores (run with
 * OMP_WAIT_POLICY=passive so waiting threads burn no CPU time). */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "format/ggml_type.h"
#include "numerics/matmul.h"
#include "numerics/membw.h"
#include "numerics/quant.h"

#define MAX_SHAPES 16

static uint64_t g_rng = 88172645463325252ull;
static uint64_t rnd(void) {
    g_rng ^= g_rng << 13;
    g_rng ^= g_rng >> 7;
    g_rng ^= g_rng << 17;
    return g_rng;
}

static double clock_s(clockid_t id) {
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The fp16 scale fields of each block (ggml-common.h) set to 0.01. */
static void fill_weights(uint32_t t, uint8_t *w, size_t bytes, size_t block_bytes) {
    for (size_t i = 0; i + 8 <= bytes; i += 8) {
        uint64_t r = rnd();
        memcpy(w + i, &r, 8);
    }
    uint16_t h = sd_fp32_to_fp16(0.01f);
    int offs[2] = {-1, -1};
    switch (t) {
    case GGML_TYPE_F16: case GGML_TYPE_BF16: case GGML_TYPE_F32:
        for (size_t i = 0; i < bytes / block_bytes; i++) {
            if (t == GGML_TYPE_F32) ((float *)w)[i] = (float)(rnd() % 2001) * 1e-3f - 1.0f;
            else ((uint16_t *)w)[i] = t == GGML_TYPE_F16 ? h : sd_fp32_to_bf16(0.01f);
        }
        return;
    case GGML_TYPE_Q6_K: offs[0] = 208; break;
    case GGML_TYPE_Q8_0: case GGML_TYPE_Q4_0: case GGML_TYPE_Q5_0: offs[0] = 0; break;
    default: offs[0] = 0; offs[1] = 2; break;
    }
    for (size_t b = 0; b < bytes / block_bytes; b++)
        for (int k = 0; k < 2; k++)
            if (offs[k] >= 0) memcpy(w + b * block_bytes + offs[k], &h, 2);
}

static int usage(FILE *f, int code) {
    fprintf(f, "usage: sd-matmul_probe --type TYPE --shape INxOUT [--shape ...] [--copies N]\n"
               "                       [--threads N] [--smin N] [--smax N] [--reps N] [--json] [--membw] [--no-repack]\n"
               "--membw: also measure read bandwidth (numerics/membw) and print the S=1 floor\n"
               "--no-repack: read every matrix in the GGUF layout (no repacked tile)\n");
    return code;
}

int main(int argc, char **argv) {
    const char *type_name = "q8_0";
    int64_t shapes[MAX_SHAPES][2];
    int n_shapes = 0, threads = 2, smin = 1, smax = 17, reps = 7, copies = 1, json = 0, membw = 0, no_pack = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--help")) return usage(stdout, 0);
        if (!strcmp(a, "--json")) { json = 1; continue; }
        if (!strcmp(a, "--membw")) { membw = 1; continue; }
        if (!strcmp(a, "--no-repack")) { no_pack = 1; continue; }
        if (!v) return usage(stderr, 2);
        i++;
        if (!strcmp(a, "--type")) type_name = v;
        else if (!strcmp(a, "--threads")) threads = atoi(v);
        else if (!strcmp(a, "--smin")) smin = atoi(v);
        else if (!strcmp(a, "--smax")) smax = atoi(v);
        else if (!strcmp(a, "--reps")) reps = atoi(v);
        else if (!strcmp(a, "--copies")) copies = atoi(v);
        else if (!strcmp(a, "--shape") && n_shapes < MAX_SHAPES) {
            long long in, out;
            if (sscanf(v, "%lldx%lld", &in, &out) != 2) return usage(stderr, 2);
            shapes[n_shapes][0] = in;
            shapes[n_shapes++][1] = out;
        } else return usage(stderr, 2);
    }
    int t = ggml_type_from_name(type_name);
    if (t < 0 || n_shapes == 0 || smin < 1 || smax < smin || reps < 1 || copies < 1 || threads < 1) {
        fprintf(stderr, "specdec: bad arguments (type %s, %d shapes)\n", type_name, n_shapes);
        return 2;
    }
    const ggml_type_info *ti = ggml_type_get((uint32_t)t);
    int n_mats = n_shapes * copies;
    sd_matrix *mats = calloc((size_t)n_mats, sizeof *mats);
    void **data = calloc((size_t)n_mats, sizeof *data);
    int64_t max_in = 0, max_out = 0;
    double weight_bytes = 0, packed_bytes = 0;
    for (int k = 0; k < n_mats; k++) {
        int64_t in = shapes[k % n_shapes][0], out = shapes[k % n_shapes][1];
        size_t bytes = (size_t)(in / ti->block_size) * ti->type_size * (size_t)out;
        data[k] = malloc(bytes);
        if (!data[k]) { fprintf(stderr, "specdec: out of memory\n"); return 1; }
        fill_weights((uint32_t)t, data[k], bytes, ti->type_size);
        sd_err err = {0};
        sd_matrix_opts mo = {.no_pack = no_pack};
        if (sd_matrix_init_opts(&mats[k], (uint32_t)t, in, out, data[k], &mo, &err) != SD_OK) {
            fprintf(stderr, "specdec: %s\n", err.msg);
            return 1;
        }
        weight_bytes += (double)bytes;
        packed_bytes += (double)mats[k].packed_bytes;
        if (in > max_in) max_in = in;
        if (out > max_out) max_out = out;
    }
    float *x = malloc((size_t)smax * (size_t)max_in * sizeof(float));
    float *y = malloc((size_t)smax * (size_t)max_out * sizeof(float));
    double *ts = malloc((size_t)reps * sizeof(double)), *cs = malloc((size_t)reps * sizeof(double)), t1 = 0, c1 = 0;
    for (int64_t i = 0; i < smax * max_in; i++) x[i] = (float)(rnd() % 2001) * 1e-3f - 1.0f;
    double read_gbs = 0;
    if (membw) {
        sd_membw bw;
        sd_err err = {0};
        if (sd_membw_measure(0, threads, 5, &bw, &err) != SD_OK) {
            fprintf(stderr, "specdec: %s\n", err.msg);
            return 1;
        }
        read_gbs = bw.read_gbs;
        if (!json)
            printf("# read bandwidth %.1f GB/s (%d threads): S=1 floor %.3f ms for %.1f MB of weights\n", read_gbs,
                   threads, weight_bytes / read_gbs / 1e6, weight_bytes / 1e6);
    }
    json_t *rows = json_array();
    if (!json)
        printf("# type %s, backend %s, %d threads, %d matrices, weights %.1f MB, repacked copy %.1f MB\n"
               "# wall clock: median and min over reps, c_v = median(S)/median(S=1), GB/s of weights read;\n"
               "# cpu: process CPU time / threads (robust when the machine is shared), its c_v\n"
               "#  S  t_ms(med)  t_ms(min)     c_v     GB/s |  cpu_ms(med)  c_v_cpu\n",
               ti->name, sd_matmul_backend(), threads, n_mats, weight_bytes / 1e6, packed_bytes / 1e6);
    for (int S = smin; S <= smax; S++) {
        for (int k = 0; k < n_mats; k++) sd_matmul(&mats[k], x, S, y, threads); /* warm-up */
        for (int r = 0; r < reps; r++) {
            double t0 = clock_s(CLOCK_MONOTONIC), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
            for (int k = 0; k < n_mats; k++) sd_matmul(&mats[k], x, S, y, threads);
            ts[r] = clock_s(CLOCK_MONOTONIC) - t0;
            cs[r] = (clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0) / threads;
        }
        qsort(ts, (size_t)reps, sizeof *ts, cmp_double);
        qsort(cs, (size_t)reps, sizeof *cs, cmp_double);
        double med = ts[reps / 2], cmed = cs[reps / 2];
        if (S == smin) {
            t1 = med;
            c1 = cmed;
        }
        if (json)
            json_array_append_new(rows, json_pack("{s:i,s:f,s:f,s:f,s:f,s:f}", "S", S, "t_ms", med * 1e3, "t_min_ms",
                                                  ts[0] * 1e3, "c_v", med / t1, "cpu_ms", cmed * 1e3, "c_v_cpu",
                                                  cmed / c1));
        else
            printf("%4d %10.3f %10.3f %7.3f %8.2f | %10.3f %7.3f\n", S, med * 1e3, ts[0] * 1e3, med / t1,
                   weight_bytes / med / 1e9, cmed * 1e3, cmed / c1);
        fflush(stdout);
    }
    if (json) {
        json_t *root = json_pack("{s:s,s:s,s:i,s:f,s:f,s:f,s:o}", "type", ti->name, "backend", sd_matmul_backend(),
                                 "threads", threads, "weight_bytes", weight_bytes, "packed_bytes", packed_bytes,
                                 "read_gbs", read_gbs, "rows", rows);
        json_dumpf(root, stdout, JSON_INDENT(1));
        printf("\n");
        json_decref(root);
    } else {
        json_decref(rows);
    }
    for (int k = 0; k < n_mats; k++) {
        sd_matrix_free(&mats[k]);
        free(data[k]);
    }
    free(mats);
    free(data);
    free(x);
    free(y);
    free(ts);
    free(cs);
    return 0;
}
