/* model/memory sd_memory_commit and sd_context_commit: a block's pages all
 * resident after a commit (mincore), its bytes unchanged; a context's KV rows
 * all resident after sd_context_commit. Without the commit those pages come
 * in only as positions are first reached, which is how a long-running
 * server's RSS crept up for hours (bench/RESULTS.md, the soak). Each block
 * is first emptied of its pages (MADV_DONTNEED, transparent huge pages off
 * for it) so the check cannot pass by accident. glibc only (the commit needs
 * malloc_usable_size): elsewhere the test skips. */
#define _DEFAULT_SOURCE /* madvise, mincore */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "model/context.h"
#include "model/memory/memory.h"
#include "model/model_test_util.h"
#include "support/skip.h"

/* The whole pages inside [p, p + n): *lo and the count. */
static size_t whole_pages(void *p, size_t n, unsigned char **lo) {
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    const uintptr_t a = ((uintptr_t)p + pg - 1) / pg * pg, b = ((uintptr_t)p + n) / pg * pg;
    *lo = (unsigned char *)a;
    return b > a ? (b - a) / pg : 0;
}

/* Of the whole pages inside [p, p + n), how many are resident. */
static size_t resident(void *p, size_t n) {
    unsigned char *lo;
    const size_t np = whole_pages(p, n, &lo);
    unsigned char *v = malloc(np ? np : 1);
    assert_non_null(v);
    assert_int_equal(mincore(lo, np * (size_t)sysconf(_SC_PAGESIZE), v), 0);
    size_t r = 0;
    for (size_t i = 0; i < np; i++) r += v[i] & 1;
    free(v);
    return r;
}

/* Drops the whole pages inside [p, p + n) (they read as zeros after) and
 * keeps huge pages off them, so a first touch brings in one page. */
static size_t drop(void *p, size_t n) {
    unsigned char *lo;
    const size_t np = whole_pages(p, n, &lo), bytes = np * (size_t)sysconf(_SC_PAGESIZE);
#ifdef MADV_NOHUGEPAGE
    (void)madvise(lo, bytes, MADV_NOHUGEPAGE);
#endif
    assert_int_equal(madvise(lo, bytes, MADV_DONTNEED), 0);
    return np;
}

static void test_block(void **state) {
    (void)state;
#ifndef __GLIBC__
    SD_SKIP("sd_memory_commit needs glibc's malloc_usable_size");
#endif
    const size_t n = (size_t)4 << 20;
    unsigned char *p = malloc(n);
    assert_non_null(p);
    const size_t np = drop(p, n);
    assert_true(np > 512);
    /* a byte on a few pages: those pages come in, the rest stay out */
    const size_t at[] = {0, 12345, n / 2 + 7, n - 1};
    for (size_t i = 0; i < sizeof at / sizeof *at; i++) p[at[i]] = (unsigned char)(0xa5 ^ i);
    assert_true(resident(p, n) <= 8);
    sd_memory_commit(p);
    assert_int_equal(resident(p, n), np);
    for (size_t i = 0; i < sizeof at / sizeof *at; i++) assert_int_equal(p[at[i]], (unsigned char)(0xa5 ^ i));
    assert_int_equal(p[n / 4], 0); /* a dropped page reads as zeros, committed or not */
    sd_memory_commit(NULL);        /* a no-op */
    free(p);
}

/* A context's KV rows: all resident after sd_context_commit, the rows
 * written before it unchanged. */
static void test_context(void **state) {
    (void)state;
#ifndef __GLIBC__
    SD_SKIP("sd_memory_commit needs glibc's malloc_usable_size");
#endif
    char path[256];
    sd_model *m = tiny_load_small("qwen3", path, sizeof path);
    assert_non_null(m);
    sd_context *c = NULL;
    sd_err err = {0};
    /* a cache of several MiB, so its rows are pages of their own */
    assert_int_equal(sd_context_init(m, 4096, 16, 1, &c, &err), SD_OK);
    const size_t bytes = (size_t)sd_kv_cache_bytes(&c->kv) / 2; /* K, then V: the same size */
    const size_t np_k = drop(c->kv.k, bytes), np_v = drop(c->kv.v, bytes);
    assert_true(np_k > 64 && np_v > 64);
    unsigned char *k = (unsigned char *)c->kv.k;
    k[bytes - 1] = 0x5a;
    assert_true(resident(c->kv.k, bytes) < np_k / 2);
    assert_true(resident(c->kv.v, bytes) < np_v / 2);
    sd_context_commit(c, true);
    assert_int_equal(resident(c->kv.k, bytes), np_k);
    assert_int_equal(resident(c->kv.v, bytes), np_v);
    assert_int_equal(k[bytes - 1], 0x5a);
    sd_context_free(c);
    sd_model_free(m);
    remove(path);
}

int main(int argc, char **argv) {
    (void)argc;
    test_passive_omp(argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_block),
        cmocka_unit_test(test_context),
    };
    return SD_RUN_TESTS(tests);
}
