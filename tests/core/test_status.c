/* core/status: error messages are set, prefixed and named. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "core/status.h"

static void test_set_and_prefix(void **state) {
    (void)state;
    sd_err e = {0};
    assert_int_equal(sd_err_set(&e, SD_ERR_FORMAT, "bad %s at %d", "magic", 4), SD_ERR_FORMAT);
    assert_string_equal(e.msg, "bad magic at 4");
    sd_err_prefix(&e, "%s", "model.gguf");
    assert_string_equal(e.msg, "model.gguf: bad magic at 4");
    assert_int_equal(e.code, SD_ERR_FORMAT);
    assert_int_equal(sd_err_set(NULL, SD_ERR_IO, "x"), SD_ERR_IO);
    assert_string_equal(sd_status_name(SD_ERR_CONTEXT), "context full");
}

static void test_checked(void **state) {
    (void)state;
    uint64_t r;
    assert_true(sd_mul_u64(1u << 20, 1u << 20, &r));
    assert_true(r == (1ull << 40));
    assert_false(sd_mul_u64(UINT64_MAX / 2, 3, &r));
    assert_false(sd_add_u64(UINT64_MAX, 1, &r));
    assert_null(sd_malloc_array(SIZE_MAX / 2, 4));
    void *p = sd_calloc(0, 8);
    assert_non_null(p);
    free(p);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_set_and_prefix),
        cmocka_unit_test(test_checked),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
