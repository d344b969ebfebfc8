/* api: a model's own chat template runs through the Jinja interpreter when it
 * parses (specdec_chat_template_resolve names it "FAMILY+jinja" or "jinja");
 * a template the interpreter refuses is reported with the construct and its
 * position (specdec_chat_template_refusal) and the built-in formatter renders
 * instead; --chat-template NAME still picks a built-in formatter. */
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
#include "specdec.h"
#include "support/tiny_model.h"

static specdec_model *load_with_template(const char *tmpl, char *path, size_t cap) {
    tiny_model_spec sp = tiny_model_default("qwen3", GGML_TYPE_F32);
    sp.chat_template = tmpl;
    tiny_model_temp_path(path, cap, "chat-template");
    sd_err e = {0};
    assert_int_equal(tiny_model_write(&sp, path, &e), SD_OK);
    specdec_model *m = NULL;
    specdec_error err = {0};
    if (specdec_model_load(path, NULL, &m, &err) != SPECDEC_OK) fail_msg("load: %s", err.message);
    return m;
}

static char *render(specdec_model *m, const char *template_name, const specdec_chat_message *msgs, size_t n) {
    specdec_chat_params p = specdec_chat_default_params();
    p.template_name = template_name;
    char *text = NULL;
    size_t len = 0;
    specdec_error err = {0};
    if (specdec_chat_apply_template(m, msgs, n, &p, &text, &len, &err) != SPECDEC_OK) fail_msg("render: %s", err.message);
    assert_int_equal(strlen(text), len);
    return text;
}

static const specdec_chat_message k_msgs[] = {{.role = "system", .content = "Be brief."}, {.role = "user", .content = "Hi"}};

/* A ChatML template the interpreter runs; its own quirk (a marker only the
 * template text has) shows the model's template rendered, not the built-in. */
static void test_own_template_runs(void **state) {
    (void)state;
    char path[256];
    specdec_model *m = load_with_template(
        "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content | upper }}<|im_end|>\n{% endfor %}"
        "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}",
        path, sizeof path);
    const char *family = NULL;
    specdec_error err = {0};
    assert_int_equal(specdec_chat_template_resolve(m, NULL, &family, &err), SPECDEC_OK);
    assert_string_equal(family, "chatml+jinja");
    assert_null(specdec_chat_template_refusal(m));
    char *text = render(m, NULL, k_msgs, 2);
    assert_string_equal(text, "<|im_start|>system\nBE BRIEF.<|im_end|>\n<|im_start|>user\nHI<|im_end|>\n"
                              "<|im_start|>assistant\n");
    specdec_free(text);
    /* --chat-template chatml: the built-in formatter, which does not upper-case */
    text = render(m, "chatml", k_msgs, 2);
    assert_string_equal(text, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                              "<|im_start|>assistant\n");
    specdec_free(text);
    assert_int_equal(specdec_chat_template_resolve(m, "chatml", &family, &err), SPECDEC_OK);
    assert_string_equal(family, "chatml");
    specdec_model_free(m);
    unlink(path);
}

/* No family fits, but the interpreter runs it: "jinja". */
static void test_unknown_family_runs(void **state) {
    (void)state;
    char path[256];
    specdec_model *m = load_with_template("{% for m in messages %}[{{ m.role }}] {{ m.content }}\n{% endfor %}", path,
                                          sizeof path);
    const char *family = NULL;
    specdec_error err = {0};
    assert_int_equal(specdec_chat_template_resolve(m, NULL, &family, &err), SPECDEC_OK);
    assert_string_equal(family, "jinja");
    char *text = render(m, NULL, k_msgs, 2);
    assert_string_equal(text, "[system] Be brief.\n[user] Hi\n");
    specdec_free(text);
    specdec_model_free(m);
    unlink(path);
}

/* Refused at load, construct and position named; the built-in formatter renders. */
static void test_refused_falls_back(void **state) {
    (void)state;
    char path[256];
    specdec_model *m = load_with_template("{% for m in messages %}<|im_start|>{{ m.role }}\n"
                                          "{{ m.content | wordwrap(20) }}<|im_end|>\n{% endfor %}",
                                          path, sizeof path);
    const char *why = specdec_chat_template_refusal(m);
    assert_non_null(why);
    assert_non_null(strstr(why, "2:16"));
    assert_non_null(strstr(why, "'wordwrap'"));
    const char *family = NULL;
    specdec_error err = {0};
    assert_int_equal(specdec_chat_template_resolve(m, NULL, &family, &err), SPECDEC_OK);
    assert_string_equal(family, "chatml");
    char *text = render(m, NULL, k_msgs, 2);
    assert_string_equal(text, "<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi<|im_end|>\n"
                              "<|im_start|>assistant\n");
    specdec_free(text);
    specdec_model_free(m);
    unlink(path);
}

/* A template that raises: the message reaches the caller. */
static void test_raise_reaches_caller(void **state) {
    (void)state;
    char path[256];
    specdec_model *m = load_with_template("{% if messages[0].role == 'system' %}{{ raise_exception('System role not "
                                          "supported') }}{% endif %}{{ messages[0].content }}",
                                          path, sizeof path);
    specdec_chat_params p = specdec_chat_default_params();
    char *text = NULL;
    specdec_error err = {0};
    assert_int_equal(specdec_chat_apply_template(m, k_msgs, 2, &p, &text, NULL, &err), SPECDEC_ERR_ARG);
    assert_non_null(strstr(err.message, "System role not supported"));
    assert_null(text);
    text = render(m, NULL, k_msgs + 1, 1);
    assert_string_equal(text, "Hi");
    specdec_free(text);
    specdec_model_free(m);
    unlink(path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_own_template_runs),
        cmocka_unit_test(test_unknown_family_runs),
        cmocka_unit_test(test_refused_falls_back),
        cmocka_unit_test(test_raise_reaches_caller),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
