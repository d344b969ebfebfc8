/* chat: every built-in formatter renders byte for byte what Python's jinja2
 * renders from the real template text (tests/chat/render_jinja.py, run here),
 * for every conversation in tests/data/chat/conversations.json and every
 * option set; where the template raises, the formatter returns an error. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat.h"

static const char *source_dir(void) {
    const char *s = getenv("SD_SOURCE_DIR");
    return s ? s : ".";
}

static json_t *load_cases(void) {
    char cmd[4096];
    snprintf(cmd, sizeof cmd, "/usr/bin/python3 '%s/tests/chat/render_jinja.py' '%s'", source_dir(),
             source_dir());
    FILE *p = popen(cmd, "r");
    assert_non_null(p);
    json_error_t jerr;
    json_t *cases = json_loadf(p, 0, &jerr);
    int rc = pclose(p);
    if (!cases) fail_msg("render_jinja.py output: %s", jerr.text);
    assert_int_equal(rc, 0);
    return cases;
}

static const char *str_or_null(json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    return json_is_string(v) ? json_string_value(v) : NULL;
}

/* Shows the first differing byte, with some context, when a case fails. */
static void explain(const char *name, const char *conv, const char *want, const char *got) {
    size_t i = 0;
    while (want[i] && want[i] == got[i]) i++;
    size_t from = i > 40 ? i - 40 : 0;
    fprintf(stderr, "%s / %s: differ at byte %zu\n  want: %.80s\n  got:  %.80s\n", name, conv, i,
            want + from, got + from);
}

static void test_golden(void **state) {
    (void)state;
    json_t *cases = load_cases();
    size_t i, n_checked = 0, n_errors = 0, bad = 0;
    json_t *c;
    json_array_foreach(cases, i, c) {
        const char *name = str_or_null(c, "template"), *conv = str_or_null(c, "conversation");
        sd_chat_template t;
        sd_err err = {0};
        assert_int_equal(sd_chat_detect(str_or_null(c, "text"), &t, &err), SD_OK);
        if (strcmp(sd_chat_family_name(t.family), str_or_null(c, "family"))) {
            fprintf(stderr, "%s: detected %s, want %s\n", name, sd_chat_family_name(t.family),
                    str_or_null(c, "family"));
            bad++;
            continue;
        }
        json_t *msgs = json_object_get(c, "messages");
        size_t n = json_array_size(msgs);
        sd_chat_msg m[16];
        assert_true(n <= 16);
        for (size_t k = 0; k < n; k++) {
            json_t *o = json_array_get(msgs, k);
            m[k] = (sd_chat_msg){.role = str_or_null(o, "role"), .content = str_or_null(o, "content"),
                                 .reasoning_content = str_or_null(o, "reasoning_content")};
        }
        json_t *jo = json_object_get(c, "options");
        sd_chat_opts opts = sd_chat_default_opts();
        opts.add_generation_prompt = json_is_true(json_object_get(jo, "add_generation_prompt"));
        json_t *et = json_object_get(jo, "enable_thinking");
        if (et) opts.enable_thinking = json_is_true(et);
        opts.preserve_thinking = json_is_true(json_object_get(jo, "preserve_thinking"));
        opts.bos_token = "<|begin_of_text|>";
        sd_strbuf out = {0};
        sd_status st = sd_chat_render(&t, m, n, &opts, &out, &err);
        const char *want = str_or_null(c, "expected");
        if (!want) {
            n_errors++;
            if (st == SD_OK) {
                fprintf(stderr, "%s / %s: jinja raised \"%s\", C rendered\n", name, conv,
                        str_or_null(c, "error"));
                bad++;
            }
        } else if (st != SD_OK) {
            fprintf(stderr, "%s / %s: C failed: %s\n", name, conv, err.msg);
            bad++;
        } else if (strcmp(want, sd_strbuf_str(&out))) {
            explain(name, conv, want, sd_strbuf_str(&out));
            bad++;
        }
        n_checked++;
        sd_strbuf_free(&out);
    }
    fprintf(stderr, "chat golden: %zu cases (%zu template errors), %zu mismatches\n", n_checked, n_errors,
            bad);
    json_decref(cases);
    assert_true(n_checked >= 400);
    assert_int_equal(bad, 0);
}

static void test_detect_and_names(void **state) {
    (void)state;
    sd_chat_template t;
    sd_err err = {0};
    assert_int_equal(sd_chat_detect(NULL, &t, &err), SD_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "--chat-template"));
    assert_int_equal(sd_chat_detect("{{ messages[0].content }}[INST]", &t, &err), SD_ERR_UNSUPPORTED);
    assert_non_null(strstr(err.msg, "--chat-template"));
    assert_int_equal(sd_chat_template_named("qwen35", &t, &err), SD_OK);
    assert_int_equal(t.family, SD_CHAT_QWEN35);
    assert_int_equal(sd_chat_template_named("jinja", &t, &err), SD_ERR_ARG);
    assert_non_null(strstr(err.msg, "llama31"));
    for (int f = 0; f < SD_CHAT_N_FAMILIES; f++) {
        assert_int_equal(sd_chat_template_named(sd_chat_family_name((sd_chat_family)f), &t, &err), SD_OK);
        assert_int_equal(t.family, f);
    }
    /* A message without a role is refused, not rendered. */
    sd_chat_msg bad = {.role = NULL, .content = "x"};
    sd_strbuf out = {0};
    assert_int_equal(sd_chat_render(&t, &bad, 1, NULL, &out, &err), SD_ERR_ARG);
    sd_strbuf_free(&out);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_detect_and_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
