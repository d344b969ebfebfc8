/* The API-key comparison has no early exit (src/server/auth.c): a code-level
 * check, not a timed one. A guess is laid out so that its bytes after the
 * first run into a page with no access rights; a comparison that stopped at
 * the first wrong byte (memcmp, strcmp, a loop with a break) would return
 * false without touching that page, one that looks at every byte faults. So
 * each case runs in a child process and must fault. Then the
 * comparison's answers are checked: equal only for the same bytes. */
#define _DEFAULT_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "server/auth.h"

static const char KEY[] = "sk-test-7f3a9c1e55d04b2a";


/* Two pages, the second without access; returns where a string of n bytes
 * must start for its last `tail` bytes to lie in the second page. */
static char *guarded(size_t n, size_t tail, char **base, size_t *len) {
    const size_t pg = (size_t)sysconf(_SC_PAGESIZE);
    *len = 2 * pg;
    *base = mmap(NULL, *len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(*base != MAP_FAILED);
    char *s = *base + pg - (n - tail);
    return s;
}

static void on_segv(int sig) {
    (void)sig;
    _exit(42);
}

/* Runs the comparison of KEY with guess[n] in a child whose guess ends in the
 * inaccessible page (its last `tail` bytes): true when the child faulted
 * (its own handler, so that a sanitizer's report does not stand in for it). */
static bool faults(const char *guess, size_t n, size_t tail) {
    char *base;
    size_t len;
    char *s = guarded(n, tail, &base, &len);
    memcpy(s, guess, n);
    assert_int_equal(mprotect(base + len / 2, len / 2, PROT_NONE), 0);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        struct sigaction sa = {0};
        sa.sa_handler = on_segv;
        sigaction(SIGSEGV, &sa, NULL);
        sigaction(SIGBUS, &sa, NULL);
        bool eq = auth_equal_ct(KEY, strlen(KEY), s, n);
        _exit(eq ? 1 : 0); /* reached only when the protected page was never read */
    }
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    munmap(base, len);
    return (WIFEXITED(status) && WEXITSTATUS(status) == 42) || (WIFSIGNALED(status) && WTERMSIG(status) == SIGSEGV);
}

static void no_early_exit(void **state) {
    (void)state;
    /* the first byte already differs; the rest of the guess is in the protected page */
    char guess[sizeof KEY];
    memcpy(guess, KEY, sizeof KEY);
    guess[0] ^= 1;
    const size_t n = strlen(KEY);
    assert_true(faults(guess, n, n - 1));
    /* only the last byte in the protected page: the comparison still reaches it */
    assert_true(faults(guess, n, 1));
    /* a guess of another length: compared in full too (no length check first) */
    assert_true(faults("x-wrong-length-guess-of-many-bytes", 34, 1));
    /* the harness can fail: a comparison that stops at the first wrong byte does not fault */
    char *base;
    size_t len;
    char *s = guarded(n, n - 1, &base, &len);
    memcpy(s, guess, n);
    assert_int_equal(mprotect(base + len / 2, len / 2, PROT_NONE), 0);
    assert_true(memcmp(s, KEY, 1) != 0); /* reads only the first byte: no fault */
    munmap(base, len);
}

static void answers(void **state) {
    (void)state;
    const size_t n = strlen(KEY);
    assert_true(auth_equal_ct(KEY, n, KEY, n));
    char g[sizeof KEY];
    for (size_t i = 0; i < n; i++) { /* each byte wrong in turn */
        memcpy(g, KEY, sizeof KEY);
        g[i] ^= 0x20;
        assert_false(auth_equal_ct(KEY, n, g, n));
    }
    assert_false(auth_equal_ct(KEY, n, KEY, n - 1));       /* a prefix */
    assert_false(auth_equal_ct(KEY, n - 1, KEY, n));       /* longer than the key */
    assert_false(auth_equal_ct(KEY, n, "", 0));            /* nothing */
    assert_false(auth_equal_ct("", 0, "", 0));             /* no key never matches */
    /* a guess that is the key twice over: the cycled reads would match it byte for byte */
    char twice[2 * sizeof KEY];
    snprintf(twice, sizeof twice, "%s%s", KEY, KEY);
    assert_false(auth_equal_ct(KEY, n, twice, 2 * n));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(no_early_exit),
        cmocka_unit_test(answers),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
