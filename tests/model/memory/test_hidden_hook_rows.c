/* model/memory/hidden_hook: the hidden-state rows as a component. Off until
 * a request; a request checks ids against n_layer and keeps the rows when
 * the ids are the same; a row is n * n_embd floats at its absolute
 * position; move_row copies one position's row (a kept tree node); n_ids 0
 * turns the hook off. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "model/memory/hidden_hook.h"

static void test_rows(void **state) {
    (void)state;
    sd_hidden_hook h;
    sd_err err = {0};
    sd_hidden_hook_build(&h, 8, 4);
    assert_null(sd_hidden_hook_row(&h, 0));
    const int32_t ids[2] = {1, 3}, other[2] = {3, 1}, bad[1] = {4};
    assert_false(sd_hidden_hook_is(&h, ids, 2));
    assert_int_equal(sd_hidden_hook_request(&h, bad, 1, 3, &err), SD_ERR_ARG);
    assert_non_null(strstr(err.msg, "out of range 0..3"));
    assert_int_equal(sd_hidden_hook_request(&h, ids, SD_HIDDEN_MAX_IDS + 1, 3, &err), SD_ERR_ARG);
    assert_null(sd_hidden_hook_row(&h, 0));
    assert_int_equal(sd_hidden_hook_request(&h, ids, 2, 3, &err), SD_OK);
    assert_true(sd_hidden_hook_is(&h, ids, 2));
    assert_false(sd_hidden_hook_is(&h, other, 2));
    float *r0 = sd_hidden_hook_row(&h, 0), *r5 = sd_hidden_hook_row(&h, 5);
    assert_ptr_equal(r5, r0 + 5 * 2 * 4); /* [n_ctx][n * n_embd] */
    for (int i = 0; i < 8; i++) r5[i] = (float)i + 1.0f;
    sd_hidden_hook_move_row(&h, 5, 2);
    assert_memory_equal(sd_hidden_hook_row(&h, 2), r5, 8 * sizeof(float));
    /* the same ids again: the rows stay */
    assert_int_equal(sd_hidden_hook_request(&h, ids, 2, 3, &err), SD_OK);
    assert_ptr_equal(sd_hidden_hook_row(&h, 5), r5);
    assert_true(r5[7] == 8.0f);
    /* other ids: new rows; none: off */
    assert_int_equal(sd_hidden_hook_request(&h, other, 2, 3, &err), SD_OK);
    assert_true(sd_hidden_hook_is(&h, other, 2));
    assert_int_equal(sd_hidden_hook_request(&h, NULL, 0, 3, &err), SD_OK);
    assert_null(sd_hidden_hook_row(&h, 0));
    sd_hidden_hook_move_row(&h, 5, 2); /* off: nothing to move, no crash */
    sd_hidden_hook_free(&h);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rows),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
