/* chat/think: reasoning and content come out the same however the answer is
 * cut into pieces, tags never leak, and each start state behaves as documented. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "chat/think.h"

/* Splits text into pieces of sizes from a small LCG, feeds them, returns both sides. */
static void run(sd_think_start start, const char *text, unsigned seed, sd_strbuf *r, sd_strbuf *c) {
    sd_think t;
    sd_think_init(&t, start);
    size_t n = strlen(text), i = 0;
    while (i < n) {
        seed = seed * 1103515245u + 12345u;
        size_t k = seed == 0 ? n : 1 + (seed >> 16) % 5;
        if (k > n - i) k = n - i;
        sd_think_feed(&t, text + i, k, r, c);
        i += k;
    }
    sd_think_flush(&t, r, c);
    sd_think_free(&t);
}

static void expect(sd_think_start start, const char *text, const char *reasoning, const char *content) {
    for (unsigned seed = 0; seed < 200; seed++) {
        sd_strbuf r = {0}, c = {0};
        run(start, text, seed, &r, &c);
        assert_string_equal(sd_strbuf_str(&r), reasoning);
        assert_string_equal(sd_strbuf_str(&c), content);
        sd_strbuf_free(&r);
        sd_strbuf_free(&c);
    }
}

static void test_split(void **state) {
    (void)state;
    expect(SD_THINK_MAYBE, "<think>\nLet me see.\n</think>\n\nHello!", "Let me see.", "Hello!");
    expect(SD_THINK_MAYBE, "Hello <think> there", "", "Hello <think> there");
    expect(SD_THINK_MAYBE, "<thin", "", "<thin");
    expect(SD_THINK_OPEN, "\nstep 1 </thin k\n\n</think>\n\nDone.\n", "step 1 </thin k", "Done.\n");
    expect(SD_THINK_OPEN, "unfinished reasoning \n", "unfinished reasoning", "");
    expect(SD_THINK_NONE, "<think>x</think>y", "", "<think>x</think>y");
    expect(SD_THINK_OPEN, "a</think>b</think>c", "a", "b</think>c");
    expect(SD_THINK_OPEN, "é世\n界</think>ü", "é世\n界", "ü");
}

int main(void) {
    const struct CMUnitTest tests[] = {cmocka_unit_test(test_split)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
