/* specdec_tool_grammar: answers generated under tool_choice required or a
 * named tool are calls in the template's syntax (Hermes for the fixtures'
 * ChatML template, XML through --chat-template qwen35, Llama 3 JSON through
 * llama31) that the tool parser turns back into calls whose arguments are
 * valid against the tool's schema, with speculation on and off giving the
 * same tokens. AUTO without a single-token call opener gives no grammar. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_test_util.h"

static const char *const SCHEMAS[2] = {
    "{\"type\":\"object\",\"properties\":{\"city\":{\"type\":\"string\",\"maxLength\":12},\"days\":{\"type\":\"integer\","
    "\"minimum\":1,\"maximum\":14},\"units\":{\"type\":\"string\",\"enum\":[\"c\",\"f\"]}},\"required\":[\"city\",\"days\"],\"additionalProperties\":false}",
    "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"number\"},\"ok\":{\"type\":\"boolean\"},\"tags\":{\"type\":\"array\","
    "\"items\":{\"type\":\"integer\"},\"maxItems\":2}},\"required\":[\"a\",\"ok\"],\"additionalProperties\":false}",
};
static const char *const NAMES[2] = {"get_weather", "add"};

static char *tools_json(void) {
    static char buf[2048];
    snprintf(buf, sizeof buf,
             "[{\"type\":\"function\",\"function\":{\"name\":\"%s\",\"parameters\":%s}},"
             "{\"type\":\"function\",\"function\":{\"name\":\"%s\",\"strict\":true,\"parameters\":%s}}]",
             NAMES[0], SCHEMAS[0], NAMES[1], SCHEMAS[1]);
    return buf;
}

/* Parses text into calls; checks each against its schema; returns the number of calls. */
static int check_calls(const specdec_model *m, const specdec_chat_params *cp, const char *text, size_t len,
                       const char *named, specdec_grammar *const schema_g[2]) {
    specdec_tool_parser *p = NULL;
    specdec_error err = {0};
    const char *tools = tools_json();
    assert_int_equal(specdec_tool_parser_init(m, cp, tools, strlen(tools), &p, &err), SPECDEC_OK);
    const specdec_tool_event *ev;
    size_t n_ev;
    char args[8][1024] = {{0}};
    int fn[8], n_calls = 0;
    /* the reasoning section first (Qwen3.5's template opens one), as the server splits it */
    specdec_reasoning *think = NULL;
    assert_int_equal(specdec_reasoning_init(m, cp, &think, &err), SPECDEC_OK);
    const char *r, *c, *r2, *c2;
    size_t nr, nc, nr2, nc2;
    specdec_reasoning_feed(think, text, len, &r, &nr, &c, &nc);
    char *content = malloc(len + 1);
    assert_non_null(content);
    memcpy(content, c, nc);
    specdec_reasoning_flush(think, &r2, &nr2, &c2, &nc2);
    memcpy(content + nc, c2, nc2);
    size_t n_content = nc + nc2;
    specdec_reasoning_free(think);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 0) assert_int_equal(specdec_tool_parser_feed(p, content, n_content, &ev, &n_ev), SPECDEC_OK);
        else assert_int_equal(specdec_tool_parser_flush(p, &ev, &n_ev), SPECDEC_OK);
        for (size_t i = 0; i < n_ev; i++) {
            if (ev[i].kind == SPECDEC_TOOL_EVENT_CONTENT)
                fail_msg("content outside the calls: \"%.*s\" in \"%.*s\"", (int)ev[i].len, ev[i].text, (int)len, text);
            assert_true(ev[i].index < 8);
            if (ev[i].kind == SPECDEC_TOOL_EVENT_START) {
                n_calls = ev[i].index + 1;
                fn[ev[i].index] = -1;
                for (int k = 0; k < 2; k++)
                    if (ev[i].len == strlen(NAMES[k]) && !memcmp(ev[i].text, NAMES[k], ev[i].len)) fn[ev[i].index] = k;
                assert_true(fn[ev[i].index] >= 0);
                if (named) assert_string_equal(NAMES[fn[ev[i].index]], named);
            } else {
                size_t have = strlen(args[ev[i].index]);
                assert_true(have + ev[i].len < sizeof args[0]);
                memcpy(args[ev[i].index] + have, ev[i].text, ev[i].len);
            }
        }
    }
    for (int c = 0; c < n_calls; c++)
        if (!specdec_grammar_accepts(schema_g[fn[c]], args[c], strlen(args[c])))
            fail_msg("arguments of %s not valid against its schema: %s", NAMES[fn[c]], args[c]);
    specdec_tool_parser_free(p);
    free(content);
    return n_calls;
}

/* think: enable_thinking (-1 = the template's default). A reasoning section
 * the fixture has to close by itself ends fewer answers within the budget:
 * then one finished answer is enough. */
static void run_template(specdec_model *m, specdec_context *c, const char *tmpl, int think, const char *want_syntax,
                         specdec_grammar *const schema_g[2]) {
    specdec_chat_params cp = specdec_chat_default_params();
    cp.template_name = tmpl;
    cp.enable_thinking = think;
    assert_string_equal(specdec_tool_syntax(m, &cp), want_syntax);
    const char *tools = tools_json();
    specdec_error err = {0};
    int ended = 0, runs = 0;
    /* under the sanitizers (a Debug build, ~100x slower): one seed */
    const unsigned n_seeds = getenv("SD_ASAN") ? 1 : 3;
    for (int mode = 0; mode < 3; mode++) { /* required, named 0, named 1 */
        for (int parallel = 0; parallel < 2; parallel++) {
            char *gbnf = NULL;
            size_t glen = 0;
            const char *named = mode ? NAMES[mode - 1] : NULL;
            assert_int_equal(specdec_tool_grammar(m, &cp, tools, strlen(tools),
                                                  mode ? SPECDEC_TOOL_CHOICE_NAMED : SPECDEC_TOOL_CHOICE_REQUIRED, named,
                                                  parallel, &gbnf, &glen, &err),
                             SPECDEC_OK);
            assert_non_null(gbnf);
            specdec_grammar *g = NULL;
            if (specdec_grammar_init(m, gbnf, glen, NULL, &g, &err) != SPECDEC_OK)
                fail_msg("%s: %s\n%s", tmpl ? tmpl : "model", err.message, gbnf);
            for (unsigned seed = 1; seed <= n_seeds; seed++) {
                specdec_token out[2][401];
                int32_t n[2];
                specdec_stats st;
                for (int spec = 0; spec < 2; spec++) {
                    specdec_generate_params gp = specdec_generate_default_params();
                    gp.grammar = g;
                    gp.n_predict = 400;
                    gp.temperature = 1.0f;
                    gp.seed = seed;
                    gp.spec = spec ? SPECDEC_SPEC_NGRAM : SPECDEC_SPEC_NONE;
                    n[spec] = api_generate_after(c, m, "Weather in Paris for 3 days?", &gp, out[spec], 400, &st);
                }
                assert_int_equal(n[0], n[1]);
                assert_memory_equal(out[0], out[1], (size_t)n[0] * sizeof out[0][0]);
                runs++;
                if (st.stop_reason == SPECDEC_STOP_LENGTH) continue; /* cut inside a long string: nothing to check */
                ended++;
                int32_t nt = st.stop_reason == SPECDEC_STOP_EOG ? n[0] - 1 : n[0];
                char *text = NULL;
                size_t len = 0;
                assert_int_equal(specdec_detokenize(m, out[0], (size_t)nt, false, &text, &len, &err), SPECDEC_OK);
                assert_true(specdec_grammar_accepts(g, text, len));
                int calls = check_calls(m, &cp, text, len, named, schema_g);
                assert_true(calls >= 1);
                if (!parallel) assert_int_equal(calls, 1);
                specdec_free(text);
            }
            specdec_grammar_free(g);
            specdec_free(gbnf);
        }
    }
    print_message("%s (thinking %d): %d of %d answers ended\n", tmpl ? tmpl : "model", think, ended, runs);
    if (think == 1 || n_seeds == 1) assert_true(ended >= 1);
    else assert_true(ended * 2 >= runs); /* most answers finished their calls within the budget */
}

static void test_forced_calls_parse_and_validate(void **state) {
    (void)state;
    specdec_model *m = api_load("models/fixture-target.gguf");
    specdec_context *c = api_context(m, NULL, 512);
    specdec_grammar *schema_g[2];
    specdec_error err = {0};
    for (int k = 0; k < 2; k++)
        assert_int_equal(specdec_grammar_from_json_schema(m, SCHEMAS[k], strlen(SCHEMAS[k]), k == 1, false,
                                                          &schema_g[k], &err),
                         SPECDEC_OK);
    run_template(m, c, NULL, -1, "hermes", schema_g);
    run_template(m, c, "qwen35", 0, "xml", schema_g);
    run_template(m, c, "qwen35", 1, "xml", schema_g); /* calls after a reasoning section */
    run_template(m, c, "llama31", -1, "llama3", schema_g);
    for (int k = 0; k < 2; k++) specdec_grammar_free(schema_g[k]);
    specdec_context_free(c);
    specdec_model_free(m);
}

static void test_auto_and_errors(void **state) {
    (void)state;
    specdec_model *m = api_load("models/fixture-target.gguf");
    const char *tools = tools_json();
    char *gbnf = (char *)1;
    size_t glen = 1;
    specdec_error err = {0};
    /* no <tool_call> token in the fixture's vocabulary: AUTO cannot constrain */
    assert_int_equal(specdec_tool_grammar(m, NULL, tools, strlen(tools), SPECDEC_TOOL_CHOICE_AUTO, NULL, true, &gbnf,
                                          &glen, &err),
                     SPECDEC_OK);
    assert_null(gbnf);
    assert_int_equal(glen, 0);
    /* Llama 3's AUTO: free text, or a call once the answer opens with "{" */
    specdec_chat_params cp = specdec_chat_default_params();
    cp.template_name = "llama31";
    assert_int_equal(specdec_tool_grammar(m, &cp, tools, strlen(tools), SPECDEC_TOOL_CHOICE_AUTO, NULL, true, &gbnf,
                                          &glen, &err),
                     SPECDEC_OK);
    specdec_grammar *g = NULL;
    assert_int_equal(specdec_grammar_init(m, gbnf, glen, NULL, &g, &err), SPECDEC_OK);
    const char *good = "{\"name\": \"add\", \"parameters\": {\"a\": 1, \"ok\": true}}";
    assert_true(specdec_grammar_accepts(g, good, strlen(good)));
    assert_true(specdec_grammar_accepts(g, "Hello {there}", 13));
    const char *bad = "{\"name\": \"add\", \"parameters\": {\"a\": \"x\", \"ok\": true}}";
    assert_false(specdec_grammar_accepts(g, bad, strlen(bad)));
    specdec_grammar_free(g);
    specdec_free(gbnf);
    assert_int_equal(specdec_tool_grammar(m, NULL, tools, strlen(tools), SPECDEC_TOOL_CHOICE_NAMED, "nope", true,
                                          &gbnf, &glen, &err),
                     SPECDEC_ERR_ARG);
    assert_non_null(strstr(err.message, "nope"));
    const char *bad_tools = "[{\"type\":\"function\",\"function\":{\"name\":\"f\",\"parameters\":{\"type\":\"strng\"}}}]";
    assert_int_not_equal(specdec_tool_grammar(m, NULL, bad_tools, strlen(bad_tools), SPECDEC_TOOL_CHOICE_REQUIRED, NULL,
                                              true, &gbnf, &glen, &err),
                         SPECDEC_OK);
    assert_non_null(strstr(err.message, "'f'"));
    assert_int_equal(specdec_tool_grammar(m, NULL, "{}", 2, SPECDEC_TOOL_CHOICE_REQUIRED, NULL, true, &gbnf, &glen, &err),
                     SPECDEC_ERR_ARG);
    specdec_model_free(m);
}

/* Whitespace the model can write is bounded everywhere outside free text: a
 * grammar that lets it emit whitespace forever keeps a weak model doing so
 * until max_tokens (as llama.cpp's tool grammars, a newline or two and some
 * indentation, or one space). After the reasoning section with parallel calls
 * on, and before a Llama 3 call. */
static bool accepts_tool_text(const specdec_model *m, const char *tmpl, int think, specdec_tool_choice choice,
                              const char *text) {
    specdec_chat_params cp = specdec_chat_default_params();
    cp.template_name = tmpl;
    cp.enable_thinking = think;
    const char *tools = tools_json();
    specdec_error err = {0};
    char *gbnf = NULL;
    size_t glen = 0;
    assert_int_equal(specdec_tool_grammar(m, &cp, tools, strlen(tools), choice, NULL, true, &gbnf, &glen, &err),
                     SPECDEC_OK);
    specdec_grammar *g = NULL;
    assert_int_equal(specdec_grammar_init(m, gbnf, glen, NULL, &g, &err), SPECDEC_OK);
    bool ok = specdec_grammar_accepts(g, text, strlen(text));
    specdec_grammar_free(g);
    specdec_free(gbnf);
    return ok;
}

static void test_whitespace_bounded(void **state) {
    (void)state;
    specdec_model *m = api_load("models/fixture-target.gguf");
    static const char xml_call[] = "<tool_call>\n<function=add>\n<parameter=a>\n1\n</parameter>\n"
                                   "<parameter=ok>\ntrue\n</parameter>\n</function>\n</tool_call>";
    static const char json_call[] = "{\"name\": \"add\", \"parameters\": {\"a\": 1, \"ok\": true}}";
    char text[1024];
    static const char *const sep[] = {"", "\n", "\n\n", " ", "\n    "};
    for (int i = 0; i < 5; i++) { /* what templates and models write there */
        snprintf(text, sizeof text, "Call add.</think>%s%s\n%s", sep[i], xml_call, xml_call);
        assert_true(accepts_tool_text(m, "qwen35", 1, SPECDEC_TOOL_CHOICE_REQUIRED, text));
        snprintf(text, sizeof text, "%s%s", sep[i], json_call);
        assert_true(accepts_tool_text(m, "llama31", -1, SPECDEC_TOOL_CHOICE_AUTO, text));
        if (i == 0) assert_true(accepts_tool_text(m, "llama31", -1, SPECDEC_TOOL_CHOICE_REQUIRED, text));
    }
    char ws[200];
    static const char ws_chars[] = {'\n', ' ', '\t'};
    for (int k = 0; k < 3; k++) { /* a long run of one whitespace character is refused */
        memset(ws, ws_chars[k], 100);
        ws[100] = 0;
        snprintf(text, sizeof text, "Call add.</think>%s%s", ws, xml_call);
        assert_false(accepts_tool_text(m, "qwen35", 1, SPECDEC_TOOL_CHOICE_REQUIRED, text));
        snprintf(text, sizeof text, "%s%s", ws, json_call);
        assert_false(accepts_tool_text(m, "llama31", -1, SPECDEC_TOOL_CHOICE_AUTO, text));
        assert_false(accepts_tool_text(m, "llama31", -1, SPECDEC_TOOL_CHOICE_REQUIRED, text));
        assert_false(accepts_tool_text(m, "llama31", -1, SPECDEC_TOOL_CHOICE_AUTO, ws)); /* an answer of whitespace only */
        snprintf(text, sizeof text, "%s%s%s", xml_call, ws, xml_call); /* between parallel calls */
        assert_false(accepts_tool_text(m, "qwen35", 0, SPECDEC_TOOL_CHOICE_REQUIRED, text));
    }
    specdec_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_auto_and_errors),
        cmocka_unit_test(test_whitespace_bounded),
        cmocka_unit_test(test_forced_calls_parse_and_validate),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
