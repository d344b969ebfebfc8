/* Honest skips for the cmocka programs. cmocka's skip() marks a test skipped
 * but the program still exits 0, which ctest counts as Passed. SD_SKIP prints
 * the reason and skips; SD_RUN_TESTS then exits 77 when anything was skipped
 * and nothing failed, which ctest (SKIP_RETURN_CODE 77, CMakeLists.txt)
 * reports as Skipped, with the reason in the test's output.
 *
 * Reasons are one line beginning "SKIPPED: ". One that names a missing
 * package says "(missing package NAME)": .ci/run fails on those, since CI
 * installs every package (scripts/deps.sh --test); a CPU feature the machine
 * lacks is a reason that holds anywhere. */
#ifndef SD_TEST_SKIP_H
#define SD_TEST_SKIP_H

#include <stdio.h>

static inline int *sd_test_skips(void) {
    static int n;
    return &n;
}

/* SD_SKIP("no F16C on this CPU"): print the reason, count it, skip this test. */
#define SD_SKIP(...)                    \
    do {                                \
        printf("SKIPPED: " __VA_ARGS__); \
        printf("\n");                   \
        fflush(stdout);                 \
        (*sd_test_skips())++;           \
        skip();                         \
    } while (0)

/* cmocka's result (failures) or, with none, 77 when a test skipped. */
static inline int sd_test_exit(int failures) {
    return failures ? failures : *sd_test_skips() ? 77 : 0;
}
#define SD_RUN_TESTS(tests) sd_test_exit(cmocka_run_group_tests(tests, NULL, NULL))

#endif
