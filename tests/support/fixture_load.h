/* Test helpers shared by the tests that run the committed fixture models:
 * load a GGUF or fail the test, the tokenizer's end-of-generation predicate
 * in the decode loop's callback shape, and a bench prompt file tokenized.
 * Header-only (static): each test is its own program. Needs cmocka.h and
 * model/model.h included first. */
#ifndef SD_TEST_FIXTURE_LOAD_H
#define SD_TEST_FIXTURE_LOAD_H

#include <stdio.h>
#include <string.h>

static inline sd_model *load(const char *path) {
    sd_model *m = NULL;
    sd_err err = {0};
    if (sd_model_load(path, &m, &err) != SD_OK) fail_msg("%s", err.msg);
    return m;
}

static inline bool eog(void *user, int32_t t) { return sd_tokenizer_is_eog(user, t); }

/* The prompt of a bench file (its "class:" line dropped), tokenized with BOS
 * as the tokenizer adds it; the ids are the caller's to free. */
static inline int32_t *bench_prompt(const sd_model *m, const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    static char buf[1 << 16];
    size_t len = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[len] = 0;
    char *text = buf;
    if (!strncmp(text, "class:", 6) && strchr(text, '\n')) text = strchr(text, '\n') + 1;
    int32_t *ids = NULL;
    sd_err err = {0};
    assert_int_equal(sd_tokenize(m->tok, text, strlen(text), true, false, &ids, n, &err), SD_OK);
    return ids;
}

#endif
