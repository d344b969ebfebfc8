/* core/strbuf: appends keep the content NUL-terminated, consume drops a
 * prefix (the server's send queue), and a failed allocation sticks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "core/strbuf.h"

static void test_append(void **state) {
    (void)state;
    sd_strbuf b = {0};
    assert_string_equal(sd_strbuf_str(&b), "");
    sd_strbuf_puts(&b, "data: ");
    sd_strbuf_printf(&b, "%d-%s", 42, "x");
    sd_strbuf_add(&b, "a\0b", 3);
    assert_int_equal(b.len, 13);
    assert_memory_equal(b.s, "data: 42-xa\0b", 14);
    for (int i = 0; i < 100; i++) sd_strbuf_puts(&b, "0123456789"); /* several reallocations */
    assert_int_equal(b.len, 1013);
    assert_int_equal(strlen(sd_strbuf_str(&b) + 13), 1000);
    assert_false(b.oom);
    sd_strbuf_clear(&b);
    assert_int_equal(b.len, 0);
    assert_string_equal(sd_strbuf_str(&b), "");
    sd_strbuf_free(&b);
    assert_null(b.s);
}

static void test_consume(void **state) {
    (void)state;
    sd_strbuf b = {0};
    sd_strbuf_consume(&b, 5); /* empty, never allocated */
    assert_int_equal(b.len, 0);
    sd_strbuf_puts(&b, "hello, world");
    sd_strbuf_consume(&b, 0);
    assert_string_equal(sd_strbuf_str(&b), "hello, world");
    sd_strbuf_consume(&b, 7);
    assert_string_equal(sd_strbuf_str(&b), "world");
    assert_int_equal(b.len, 5);
    sd_strbuf_puts(&b, "!");
    assert_string_equal(sd_strbuf_str(&b), "world!");
    sd_strbuf_consume(&b, 100); /* more than there is: empty */
    assert_int_equal(b.len, 0);
    assert_string_equal(sd_strbuf_str(&b), "");
    /* oom survives a consume: what is left is still incomplete */
    b.oom = true;
    sd_strbuf_puts(&b, "lost");
    assert_int_equal(b.len, 0);
    sd_strbuf_consume(&b, 1);
    assert_true(b.oom);
    sd_strbuf_clear(&b);
    assert_false(b.oom);
    sd_strbuf_free(&b);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_append),
        cmocka_unit_test(test_consume),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
