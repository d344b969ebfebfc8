/* Helpers shared by the model tests (header-only: tests/model/ files other
 * than test_*.c are not compiled on their own). */
#ifndef SD_TESTS_MODEL_UTIL_H
#define SD_TESTS_MODEL_UTIL_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/model.h"
#include "support/tiny_model.h"

/* Writes spec to a fresh temp path (returned in path) and loads it; prints the
 * error and returns NULL on failure. */
static inline sd_model *tiny_load(const tiny_model_spec *sp, char *path, size_t cap, const char *tag) {
    sd_err err = {0};
    tiny_model_temp_path(path, cap, tag);
    if (tiny_model_write(sp, path, &err) != SD_OK) {
        fprintf(stderr, "tiny_model_write: %s\n", err.msg);
        return NULL;
    }
    sd_model *m = NULL;
    if (sd_model_load(path, &m, &err) != SD_OK) {
        fprintf(stderr, "sd_model_load: %s\n", err.msg);
        return NULL;
    }
    return m;
}

/* The tiny model of arch at Q8_0, smaller than the default (n_ff 256,
 * n_vocab 300: quick to write and quantize), loaded as tiny_load does. */
static inline sd_model *tiny_load_small(const char *arch, char *path, size_t cap) {
    tiny_model_spec sp = tiny_model_default(arch, GGML_TYPE_Q8_0);
    sp.n_ff = 256;
    sp.n_vocab = 300;
    return tiny_load(&sp, path, cap, arch);
}

/* Writes sp and checks that loading it fails with code and a one-line message
 * containing msg and naming the file (what: the case, for the failure message). */
static inline void expect_refused(const tiny_model_spec *sp, const char *what, sd_status code, const char *msg) {
    char path[256];
    sd_err err = {0};
    tiny_model_temp_path(path, sizeof path, "bad");
    if (tiny_model_write(sp, path, &err) != SD_OK) fail_msg("%s: write: %s", what, err.msg);
    sd_model *m = NULL;
    sd_status st = sd_model_load(path, &m, &err);
    remove(path);
    assert_null(m);
    if (st != code || !strstr(err.msg, msg))
        fail_msg("%s: got %s '%s', want %s containing '%s'", what, sd_status_name(st), err.msg, sd_status_name(code), msg);
    assert_non_null(strstr(err.msg, path));
    assert_null(strchr(err.msg, '\n'));
}

/* Deterministic token ids in [0, n_vocab). */
static inline void test_tokens(int32_t *out, int n, int32_t n_vocab, uint32_t seed) {
    uint32_t s = seed * 2654435761u + 12345u;
    for (int i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        out[i] = (int32_t)((s >> 8) % (uint32_t)n_vocab);
    }
}

/* Index of the first maximum of x[0..n) (the engine's sd_argmax rule). */
static inline int test_argmax(const float *x, int n) {
    int best = 0;
    for (int i = 1; i < n; i++)
        if (x[i] > x[best]) best = i;
    return best;
}

/* The test machine is shared and oversubscribed (2 cores, many jobs): with
 * libgomp's default spin-waiting, threads at a barrier burn the core that the
 * thread they wait for needs, and a multi-threaded test runs ~10x slower.
 * libgomp reads OMP_WAIT_POLICY once at program start, so set it and re-exec
 * ourselves when the caller has not chosen. Results do not depend on it
 * (batch invariance is exactly what these tests check). */
static inline void test_passive_omp(char **argv) {
    if (getenv("OMP_WAIT_POLICY")) return;
    setenv("OMP_WAIT_POLICY", "passive", 1);
    execv("/proc/self/exe", argv);
    /* exec failed: run on with the default policy */
}

#endif
