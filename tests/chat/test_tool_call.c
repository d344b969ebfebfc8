/* chat/tool_call: the tool-call parser gives the same calls and content
 * however the answer is cut into pieces, for each family's syntax; XML
 * values are typed by the tool's schema; text that only looks like a call
 * stays content; a call cut off at the end is closed or given back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "chat/tool_call.h"

static const char TOOLS[] =
    "[{\"type\":\"function\",\"function\":{\"name\":\"get_weather\",\"parameters\":{\"type\":\"object\","
    "\"properties\":{\"city\":{\"type\":\"string\"},\"days\":{\"type\":\"integer\"},\"metric\":{\"type\":\"boolean\"},"
    "\"where\":{\"type\":\"object\"},\"tags\":{\"type\":\"array\"},\"code\":{\"type\":[\"string\",\"null\"]},"
    "\"ratio\":{\"anyOf\":[{\"type\":\"number\"},{\"type\":\"string\"}]}}}}},"
    "{\"type\":\"function\",\"function\":{\"name\":\"now\"}}]";

/* A transcript of the events: C[text] for content, S0[name] for a call's
 * start, A0[args] for its arguments joined. Adjacent content joined. */
static void transcript(sd_tool_parser *p, sd_strbuf *out, sd_strbuf *content, sd_strbuf args[8], int *last_start) {
    for (size_t i = 0; i < p->n_ev; i++) {
        const sd_tool_ev *e = &p->ev[i];
        const char *t = sd_strbuf_str(&p->ev_text) + e->off;
        if (e->kind == SD_TOOL_EV_CONTENT) sd_strbuf_add(content, t, e->len);
        else if (e->kind == SD_TOOL_EV_START) {
            assert_int_equal(e->index, *last_start + 1); /* calls numbered in order, each started once */
            *last_start = e->index;
            sd_strbuf_printf(out, "S%d[%.*s]", e->index, (int)e->len, t);
        } else {
            assert_true(e->index == *last_start && e->index < 8); /* arguments only for the call under way */
            sd_strbuf_add(&args[e->index], t, e->len);
        }
    }
}

/* Feeds text in pieces sized by an LCG from seed (seed 0: whole), returns the summary. */
static char *run(sd_tool_syntax syn, const char *text, unsigned seed) {
    sd_tool_parser p;
    sd_err err = {0};
    assert_int_equal(sd_tool_parser_init(&p, syn, TOOLS, strlen(TOOLS), &err), SD_OK);
    sd_strbuf calls = {0}, content = {0}, args[8] = {{0}};
    int last = -1;
    size_t n = strlen(text), i = 0;
    while (i < n) {
        seed = seed * 1103515245u + 12345u;
        size_t k = seed == 12345u ? n : 1 + (seed >> 16) % 7;
        if (k > n - i) k = n - i;
        sd_tool_parser_feed(&p, text + i, k);
        transcript(&p, &calls, &content, args, &last);
        i += k;
    }
    sd_tool_parser_flush(&p);
    transcript(&p, &calls, &content, args, &last);
    assert_false(p.oom);
    sd_strbuf out = {0};
    sd_strbuf_printf(&out, "C[%s]", sd_strbuf_str(&content));
    sd_strbuf_puts(&out, sd_strbuf_str(&calls));
    for (int c = 0; c <= last; c++) sd_strbuf_printf(&out, "A%d[%s]", c, sd_strbuf_str(&args[c]));
    for (int c = 0; c < 8; c++) sd_strbuf_free(&args[c]);
    sd_strbuf_free(&calls);
    sd_strbuf_free(&content);
    sd_tool_parser_free(&p);
    return out.s;
}

static void expect(sd_tool_syntax syn, const char *text, const char *want) {
    for (unsigned seed = 0; seed < 300; seed++) {
        char *got = run(syn, text, seed);
        if (strcmp(got, want)) fail_msg("seed %u:\n got  %s\n want %s", seed, got, want);
        free(got);
    }
}

static void test_xml(void **state) {
    (void)state;
    expect(SD_TOOL_XML,
           "Let me look.\n\n<tool_call>\n<function=get_weather>\n<parameter=city>\nParis\n</parameter>\n"
           "<parameter=days>\n3\n</parameter>\n</function>\n</tool_call>",
           "C[Let me look.]S0[get_weather]A0[{\"city\":\"Paris\",\"days\":3}]");
    /* two calls, the second without parameters; blanks around them dropped */
    expect(SD_TOOL_XML,
           "<tool_call>\n<function=get_weather>\n<parameter=city>\nSan José\n</parameter>\n</function>\n</tool_call>\n"
           "<tool_call>\n<function=now>\n</function>\n</tool_call>\n",
           "C[]S0[get_weather]S1[now]A0[{\"city\":\"San José\"}]A1[{}]");
}

/* Values typed by the schema: strings stay strings ("3" for a string, text
 * for an integer that is not one), other kinds are kept as written when they
 * parse to a kind the schema allows. */
static void test_xml_typing(void **state) {
    (void)state;
    expect(SD_TOOL_XML,
           "<tool_call>\n<function=get_weather>\n<parameter=city>\n42\n</parameter>\n<parameter=days>\nthree\n</parameter>\n"
           "<parameter=metric>\ntrue\n</parameter>\n<parameter=where>\n{\"lat\": 1.5}\n</parameter>\n"
           "<parameter=tags>\n[\"a\", 2]\n</parameter>\n<parameter=code>\nnull\n</parameter>\n"
           "<parameter=ratio>\n0.25\n</parameter>\n<parameter=extra>\n7\n</parameter>\n</function>\n</tool_call>",
           "C[]S0[get_weather]A0[{\"city\":\"42\",\"days\":\"three\",\"metric\":true,\"where\":{\"lat\": 1.5},"
           "\"tags\":[\"a\", 2],\"code\":null,\"ratio\":0.25,\"extra\":\"7\"}]");
    /* a number beyond 64 bits stays the number written */
    expect(SD_TOOL_XML, "<tool_call>\n<function=get_weather>\n<parameter=days>\n-123456789012345678901234\n</parameter>\n</function>",
           "C[]S0[get_weather]A0[{\"days\":-123456789012345678901234}]");
    /* multi-line text with markup and quotes, escaped as JSON */
    expect(SD_TOOL_XML,
           "<tool_call>\n<function=get_weather>\n<parameter=city>\nline \"one\"\n<b>two</b>\t\\\n</parameter>\n</function>\n</tool_call>",
           "C[]S0[get_weather]A0[{\"city\":\"line \\\"one\\\"\\n<b>two</b>\\t\\\\\"}]");
}

/* Text that only looks like a call stays content; a cut-off call is closed. */
static void test_xml_adversarial(void **state) {
    (void)state;
    expect(SD_TOOL_XML, "a < b and <tool_ c </tool_call> <tool", "C[a < b and <tool_ c </tool_call> <tool]");
    expect(SD_TOOL_XML, "x <tool_call>\nnot a function", "C[x<tool_call>not a function]");
    expect(SD_TOOL_XML, "<tool_call>\n<function=get_weather>\n<parameter=city>\nOs",
           "C[]S0[get_weather]A0[{\"city\":\"Os\"}]");
    expect(SD_TOOL_XML, "<tool_call>\n<function=get_weather>\n<parameter=days>\n12\n</paramet",
           "C[]S0[get_weather]A0[{\"days\":12}]");
    /* missing </function>: the closing tag ends the call; text after it is content */
    expect(SD_TOOL_XML, "<tool_call>\n<function=now>\n</tool_call> done", "C[ done]S0[now]A0[{}]");
    /* cut off before the function's name is whole: markup, dropped (content never carries it) */
    expect(SD_TOOL_XML, "Here. <tool_call>\n<function=get_we", "C[Here.]");
    expect(SD_TOOL_XML, "<tool_call>\n<function=now>\n</function>\n</tool_call>\n<tool_call>\n<func", "C[]S0[now]A0[{}]");
    expect(SD_TOOL_XML, "<tool_call>\n<function=now>\n</function>\n</tool_call>\n<tool_c", "C[]S0[now]A0[{}]");
}

static void test_hermes(void **state) {
    (void)state;
    expect(SD_TOOL_HERMES,
           "Sure.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>\n"
           "<tool_call>\n{\"name\": \"now\", \"arguments\": \"{}\"}\n</tool_call>",
           "C[Sure.]S0[get_weather]S1[now]A0[{\"city\":\"Paris\",\"days\":2}]A1[{}]");
    /* not JSON, or JSON without a name: content, tags included */
    expect(SD_TOOL_HERMES, "<tool_call>\n{oops}\n</tool_call> after",
           "C[<tool_call>\n{oops}\n</tool_call> after]");
    expect(SD_TOOL_HERMES, "<tool_call>{\"x\": 1}</tool_call>", "C[<tool_call>{\"x\": 1}</tool_call>]");
    /* cut off before </tool_call>: a call when the JSON is whole */
    expect(SD_TOOL_HERMES, "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}", "C[]S0[now]A0[{}]");
    expect(SD_TOOL_HERMES, "<tool_call>\n{\"name\": \"now\", \"arguments\": {}}\n</tool_ca", "C[]S0[now]A0[{}]");
    /* cut off inside its JSON: dropped, never content; text that begins no JSON object is content */
    expect(SD_TOOL_HERMES, "<tool_call>\n{\"name\": \"now\", \"argu", "C[]");
    expect(SD_TOOL_HERMES, "Sure. <tool_call>\n", "C[Sure.]");
    expect(SD_TOOL_HERMES, "<tool_call> is a tag", "C[<tool_call> is a tag]");
    /* a second call cut off after a whole one: the first stays, the rest is dropped */
    expect(SD_TOOL_HERMES, "<tool_call>\n{\"name\": \"now\"}\n</tool_call>\n<tool_call>\n{\"name\": \"get_w",
           "C[]S0[now]A0[{}]");
    expect(SD_TOOL_HERMES, "<tool_call>\n{\"name\": \"now\"}\n</tool_call>\n<tool_", "C[]S0[now]A0[{}]");
    /* XML markup in a Hermes answer is text */
    expect(SD_TOOL_HERMES, "<function=now></function>", "C[<function=now></function>]");
}

static void test_llama3(void **state) {
    (void)state;
    expect(SD_TOOL_LLAMA3, "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"a}b{\\\"\"}}",
           "C[]S0[get_weather]A0[{\"city\":\"a}b{\\\"\"}]");
    expect(SD_TOOL_LLAMA3, "<|python_tag|>{\"name\": \"now\", \"parameters\": {}}; {\"name\": \"now\", \"parameters\": {}}",
           "C[]S0[now]S1[now]A0[{}]A1[{}]");
    expect(SD_TOOL_LLAMA3, "The answer is {x}.", "C[The answer is {x}.]");
    expect(SD_TOOL_LLAMA3, "{\"city\": 1} is JSON", "C[{\"city\": 1} is JSON]");
    expect(SD_TOOL_LLAMA3, "{\"name\": \"now\", \"para", "C[{\"name\": \"now\", \"para]");
    /* a call after the first, cut off: dropped */
    expect(SD_TOOL_LLAMA3, "{\"name\": \"now\", \"parameters\": {}}; {\"name\": \"no", "C[]S0[now]A0[{}]");
}

static void test_syntax_detect(void **state) {
    (void)state;
    sd_chat_template t = {.family = SD_CHAT_CHATML};
    assert_int_equal(sd_tool_syntax_detect("{{ '<tool_call>\\n<function=' }}<parameter=", &t), SD_TOOL_XML);
    assert_int_equal(sd_tool_syntax_detect("<tool_call>\\n{{ tool_call | tojson }}", &t), SD_TOOL_HERMES);
    assert_int_equal(sd_tool_syntax_detect("{% if message.role == 'ipython' %}", &t), SD_TOOL_LLAMA3);
    assert_int_equal(sd_tool_syntax_detect(NULL, &t), SD_TOOL_HERMES);
    t.family = SD_CHAT_QWEN35;
    assert_int_equal(sd_tool_syntax_detect(NULL, &t), SD_TOOL_XML);
    t.family = SD_CHAT_LLAMA31;
    assert_int_equal(sd_tool_syntax_detect(NULL, &t), SD_TOOL_LLAMA3);
    sd_tool_parser p;
    sd_err err = {0};
    assert_int_equal(sd_tool_parser_init(&p, SD_TOOL_XML, "{}", 2, &err), SD_ERR_ARG);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_xml),        cmocka_unit_test(test_xml_typing), cmocka_unit_test(test_xml_adversarial),
        cmocka_unit_test(test_hermes),     cmocka_unit_test(test_llama3),     cmocka_unit_test(test_syntax_detect),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
