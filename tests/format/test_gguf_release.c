/* format/gguf_release: giving file pages of tensors back. On a file written
 * with three tensors (A and C span many pages, B is small and sits between
 * them), after every page was read: a released prefix of A leaves this process
 * (pagemap says not resident) while the rest of A stays; a page shared with an
 * unreleased neighbour stays until that neighbour is released too; the data
 * reads back unchanged after release (faulted in from the file); a prefix
 * never shrinks; a gguf_open_memory context only keeps the accounting; the
 * header (a 40 KB string key) goes with gguf_release_header while the tensor
 * after it stays, and reads back unchanged. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/gguf.h"
#include "support/pagemap.h"
#include "support/skip.h"

#define NA (3 * 4096 + 1000) /* f32 elements of A: ~12 pages */
#define NB 25                /* B: 100 bytes */
#define NC (5 * 4096 + 8)    /* C: ~20 pages */

static float *filled(size_t n, float base) {
    float *v = malloc(n * sizeof *v);
    assert_non_null(v);
    for (size_t i = 0; i < n; i++) v[i] = base + (float)i;
    return v;
}

/* Resident bytes of the pages overlapping [p, p + n). */
static uint64_t outer_resident(const void *p, size_t n) {
    uint64_t r = 0;
    assert_true(sd_resident_bytes(p, n, &r));
    return r;
}

/* Writes w (then freed) as dir/name into a fresh directory dir (a
 * "/tmp/sd_release_XXXXXX" template), and opens it. */
static gguf_ctx *write_and_open(gguf_writer *w, char *dir, char *path, size_t cap, const char *name) {
    assert_non_null(mkdtemp(dir));
    snprintf(path, cap, "%s/%s", dir, name);
    sd_err e = {0};
    assert_int_equal(gguf_writer_write(w, path, &e), SD_OK);
    gguf_writer_free(w);
    gguf_ctx *ctx = NULL;
    if (gguf_open(path, &ctx, &e)) fail_msg("%s", e.msg);
    return ctx;
}

/* Reads every page of t; the volatile reads keep an optimizing compiler
 * from dropping a loop whose sum nobody uses (then no page was touched). */
static uint64_t touch(const gguf_tensor_info *t) {
    uint64_t s = 0;
    for (uint64_t i = 0; i < t->nbytes; i += 512) s += ((const volatile uint8_t *)t->data)[i];
    return s;
}

static void test_release_file(void **state) {
    (void)state;
    if (!pagemap_readable()) SD_SKIP("/proc/self/pagemap unreadable here (a container without it)");
    char dir[] = "/tmp/sd_release_XXXXXX", path[256];
    float *a = filled(NA, 1.0f), *b = filled(NB, -7.0f), *c = filled(NC, 0.5f);
    gguf_writer *w = gguf_writer_init();
    int64_t na = NA, nb = NB, nc = NC;
    assert_int_equal(gguf_writer_add_tensor(w, "a", GGML_TYPE_F32, 1, &na, a, NA * 4), SD_OK);
    assert_int_equal(gguf_writer_add_tensor(w, "b", GGML_TYPE_F32, 1, &nb, b, NB * 4), SD_OK);
    assert_int_equal(gguf_writer_add_tensor(w, "c", GGML_TYPE_F32, 1, &nc, c, NC * 4), SD_OK);
    gguf_ctx *ctx = write_and_open(w, dir, path, sizeof path, "r.gguf");
    const gguf_tensor_info *ta = gguf_find_tensor(ctx, "a"), *tb = gguf_find_tensor(ctx, "b"),
                           *tc = gguf_find_tensor(ctx, "c");
    touch(ta), touch(tb), touch(tc);
    size_t page = sd_page_size();
    assert_true(inner_resident(ta->data, ta->nbytes) > 0);

    /* half of A: its first pages go, the rest stays */
    gguf_release(ctx, ta, ta->nbytes / 2);
    assert_int_equal(gguf_released_bytes(ctx, ta), ta->nbytes / 2);
    assert_int_equal(inner_resident(ta->data, ta->nbytes / 2), 0);
    assert_true(inner_resident((const uint8_t *)ta->data + ta->nbytes / 2 + page, ta->nbytes / 2 - page) > 0);
    gguf_release(ctx, ta, 10); /* a smaller prefix changes nothing */
    assert_int_equal(gguf_released_bytes(ctx, ta), ta->nbytes / 2);

    /* all of A and C: B (unreleased, between them) keeps the pages it touches */
    gguf_release(ctx, ta, ta->nbytes);
    gguf_release(ctx, tc, tc->nbytes);
    assert_int_equal(inner_resident(ta->data, ta->nbytes), 0);
    assert_int_equal(inner_resident(tc->data, tc->nbytes), 0);
    assert_true(outer_resident(tb->data, tb->nbytes) > 0);
    /* of A only the pages shared with the header and with B stay */
    assert_true(outer_resident(ta->data, ta->nbytes) <= 2 * page);
    /* releasing B frees the pages it shared with A and C */
    gguf_release(ctx, tb, tb->nbytes);
    assert_int_equal(outer_resident(tb->data, tb->nbytes), 0);
    assert_int_equal(outer_resident((const uint8_t *)ta->data + page, ta->nbytes - page), 0);
    /* c's last page is the file's partial last page unless the file ends on
     * a page boundary: it may stay */
    assert_true(outer_resident(tc->data, tc->nbytes) <= page);

    /* released data reads back unchanged (faulted in from the file) */
    assert_memory_equal(ta->data, a, NA * 4);
    assert_memory_equal(tb->data, b, NB * 4);
    assert_memory_equal(tc->data, c, NC * 4);
    assert_true(inner_resident(ta->data, ta->nbytes) > 0);

    /* a tensor of another context is ignored */
    gguf_tensor_info other = *ta;
    gguf_release(ctx, &other, 4);
    assert_int_equal(gguf_released_bytes(ctx, &other), 0);
    gguf_close(ctx);
    remove(path);
    rmdir(dir);
    free(a), free(b), free(c);
}

static void test_release_header(void **state) {
    (void)state;
    if (!pagemap_readable()) SD_SKIP("/proc/self/pagemap unreadable here (a container without it)");
    char dir[] = "/tmp/sd_release_XXXXXX", path[256];
    enum { NS = 40000 };
    char *text = malloc(NS);
    assert_non_null(text);
    for (size_t i = 0; i < NS; i++) text[i] = (char)('a' + i % 26);
    float *a = filled(NA, 2.0f);
    gguf_writer *w = gguf_writer_init();
    int64_t na = NA;
    assert_int_equal(gguf_writer_set_str(w, "big.text", text, NS), SD_OK);
    assert_int_equal(gguf_writer_add_tensor(w, "a", GGML_TYPE_F32, 1, &na, a, NA * 4), SD_OK);
    gguf_ctx *ctx = write_and_open(w, dir, path, sizeof path, "h.gguf");
    const gguf_tensor_info *ta = gguf_find_tensor(ctx, "a");
    const char *s;
    uint64_t len;
    assert_true(gguf_get_str(ctx, "big.text", &s, &len));
    assert_int_equal(len, NS);
    uint64_t sum = touch(ta);
    for (size_t i = 0; i < NS; i += 512) sum += (uint8_t)s[i];
    assert_true(sum > 0 && inner_resident(s, NS) > 0);

    gguf_release_header(ctx);
    assert_int_equal(inner_resident(s, NS), 0);
    /* the tensor was not released: its pages stay, also the one shared with the header */
    size_t page = sd_page_size();
    uintptr_t lo = (uintptr_t)ta->data / page * page, hi = ((uintptr_t)ta->data + ta->nbytes + page - 1) / page * page;
    assert_int_equal(outer_resident(ta->data, ta->nbytes), hi - lo);
    assert_memory_equal(s, text, NS); /* read back from the file */
    assert_memory_equal(ta->data, a, NA * 4);
    gguf_release_header(ctx); /* twice: nothing more */
    gguf_release_header(NULL);
    gguf_close(ctx);
    remove(path);
    rmdir(dir);
    free(a), free(text);
}

static void test_release_memory(void **state) {
    (void)state;
    float *a = filled(NA, 3.0f);
    gguf_writer *w = gguf_writer_init();
    int64_t na = NA;
    assert_int_equal(gguf_writer_add_tensor(w, "a", GGML_TYPE_F32, 1, &na, a, NA * 4), SD_OK);
    void *buf;
    size_t size;
    sd_err e = {0};
    assert_int_equal(gguf_writer_write_memory(w, &buf, &size, &e), SD_OK);
    gguf_writer_free(w);
    gguf_ctx *ctx = NULL;
    assert_int_equal(gguf_open_memory(buf, size, &ctx, &e), SD_OK);
    const gguf_tensor_info *t = gguf_tensor(ctx, 0);
    gguf_release(ctx, t, t->nbytes + 99); /* clamped to the tensor */
    assert_int_equal(gguf_released_bytes(ctx, t), t->nbytes);
    assert_memory_equal(t->data, a, NA * 4); /* the caller's buffer is untouched */
    uint64_t r = 1;
    assert_false(gguf_resident_bytes(ctx, &r));
    assert_int_equal(r, 0);
    gguf_close(ctx);
    free(buf);
    free(a);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_release_file),
        cmocka_unit_test(test_release_header),
        cmocka_unit_test(test_release_memory),
    };
    return SD_RUN_TESTS(tests);
}
