/* grammar/json_schema: the converter's output shape (root rule, strict
 * default, any-object, canonical literals) and its refusals: every
 * unsupported keyword named, hostile schemas (deep nesting, huge enums,
 * $ref cycles, runaway allOf expansion) refused with a clear error.
 * test_accepts runs chosen documents through the grammar engine; the random
 * schema/document pairs are tests/grammar/json_schema.test.sh's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"

/* Converts; returns the status, the grammar in *out (caller frees) and the
 * message in err. */
static sd_status conv(const char *schema, bool strict, sd_strbuf *out, sd_err *err) {
    sd_json_schema_opts o = {.strict = strict};
    *out = (sd_strbuf){0};
    memset(err, 0, sizeof *err);
    return sd_json_schema_to_gbnf(schema, strlen(schema), &o, out, err);
}

static void expect_ok(const char *schema, bool strict, const char *needle) {
    sd_strbuf g;
    sd_err err;
    sd_status st = conv(schema, strict, &g, &err);
    if (st != SD_OK) fail_msg("%s: %s", schema, err.msg);
    assert_int_equal(strncmp(sd_strbuf_str(&g), "root ::= ", 9), 0);
    if (needle && !strstr(sd_strbuf_str(&g), needle)) fail_msg("%s: no \"%s\" in\n%s", schema, needle, g.s);
    sd_strbuf_free(&g);
}

static void expect_err(const char *schema, const char *needle) {
    sd_strbuf g;
    sd_err err;
    sd_status st = conv(schema, false, &g, &err);
    if (st == SD_OK) fail_msg("%.200s: accepted", schema);
    assert_int_equal(g.len, 0);
    assert_null(strchr(err.msg, '\n'));
    if (!strstr(err.msg, needle)) fail_msg("%.200s: \"%s\" not in: %s", schema, needle, err.msg);
}

static void test_shapes(void **state) {
    (void)state;
    expect_ok("{\"type\":\"string\"}", false, "string");
    expect_ok("true", false, "value");
    expect_ok("{}", false, "value");
    /* literals in their canonical spelling (Python's json.dumps) */
    expect_ok("{\"const\":0.1}", false, "\"0.1\"");
    expect_ok("{\"const\":1e20}", false, "\"1e+20\"");
    expect_ok("{\"const\":100.0}", false, "\"100.0\"");
    expect_ok("{\"const\":1e-5}", false, "\"1e-05\"");
    expect_ok("{\"const\":\"a\\\"b\\n\\u0001\"}", false, "\"\\\"a\\\\\\\"b\\\\n\\\\u0001\\\"\"");
    /* integer ranges by digits */
    expect_ok("{\"type\":\"integer\",\"minimum\":10,\"maximum\":99}", false, "[1-9] [0-9]");
    /* strict: no additional keys; otherwise a rule for them */
    sd_strbuf g;
    sd_err err;
    const char *obj = "{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}}}";
    assert_int_equal(conv(obj, true, &g, &err), SD_OK);
    assert_null(strstr(g.s, "extra"));
    sd_strbuf_free(&g);
    assert_int_equal(conv(obj, false, &g, &err), SD_OK);
    assert_non_null(strstr(g.s, "extra"));
    sd_strbuf_free(&g);
    /* an explicit additionalProperties wins over strict */
    assert_int_equal(conv("{\"type\":\"object\",\"additionalProperties\":{\"type\":\"null\"}}", true, &g, &err), SD_OK);
    assert_non_null(strstr(g.s, "extra"));
    sd_strbuf_free(&g);
    /* any JSON object */
    sd_json_schema_opts o = {.any_object = true};
    assert_int_equal(sd_json_schema_to_gbnf(NULL, 0, &o, &g, &err), SD_OK);
    assert_string_equal(g.s, "root ::= object\n"
                             "object ::= \"{\" ws (string \":\" ws value ws (\",\" ws string \":\" ws value ws)*)? \"}\"\n"
                             "ws ::= (\" \" | \"\\n\" [ \\t]{0,20})?\n"
                             "string ::= \"\\\"\" char* \"\\\"\"\n"
                             "char ::= [^\"\\\\\\u0000-\\u001F] | \"\\\\\" ([\"\\\\/bfnrt] | \"u\" ([0-9a-cA-Ce-fE-F] [0-9a-fA-F] [0-9a-fA-F] [0-9a-fA-F] | [dD] [0-7] [0-9a-fA-F] [0-9a-fA-F] | [dD] [89abAB] [0-9a-fA-F] [0-9a-fA-F] \"\\\\u\" [dD] [c-fC-F] [0-9a-fA-F] [0-9a-fA-F]))\n"
                             "value ::= object | array | string | number | boolean | null\n"
                             "array ::= \"[\" ws (value ws (\",\" ws value ws)*)? \"]\"\n"
                             "number ::= \"-\"? (\"0\" | [1-9] [0-9]{0,17}) (\".\" [0-9]{1,20})? ([eE] (\"-\" [0-9]{1,3} | \"+\"? ([0-9]{1,2} | \"1\" [0-9] [0-9] | \"2\" [0-7] [0-9] | \"28\" [0-7])))?\n"
                             "boolean ::= \"true\" | \"false\"\n"
                             "null ::= \"null\"\n");
    sd_strbuf_free(&g);
    /* recursion that terminates */
    expect_ok("{\"$defs\":{\"n\":{\"type\":\"object\",\"properties\":{\"next\":{\"$ref\":\"#/$defs/n\"}}}},\"$ref\":\"#/$defs/n\"}", true, "next");
    expect_ok("{\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", false, NULL);
    expect_ok("{\"oneOf\":[{\"const\":1},{\"const\":2}]}", false, NULL);
}

static void test_refusals(void **state) {
    (void)state;
    static const char *kws[] = {"not", "if", "multipleOf", "patternProperties", "propertyNames", "minProperties",
                                "maxProperties", "contains", "dependentRequired", "unevaluatedProperties", "$anchor",
                                "$dynamicRef", "nullable", NULL};
    char buf[128];
    for (int i = 0; kws[i]; i++) {
        snprintf(buf, sizeof buf, "{\"type\":\"object\",\"%s\":{}}", kws[i]);
        char want[80];
        snprintf(want, sizeof want, "\"%s\"", kws[i]);
        expect_err(buf, want);
    }
    expect_err("{\"properties\":{\"a\":{\"type\":\"string\",\"format\":\"email\"}}}", "format: \"email\"");
    expect_err("{\"properties\":{\"a\":{\"type\":\"string\",\"format\":\"email\"}}}", "#/properties/a");
    expect_err("{\"type\":\"string\",\"pattern\":\"(a)\\\\1\"}", "pattern");
    expect_err("{\"type\":\"string\",\"pattern\":\"(?=a)\"}", "lookaround");
    expect_err("{\"type\":\"string\",\"pattern\":\"a{100}{200}\"}", "pattern");
    expect_err("{\"type\":\"string\",\"pattern\":\"(a{1000}){1000}\"}", "nested repetition");
    expect_err("{\"$ref\":\"http://example.com/s.json\"}", "$ref");
    expect_err("{\"$ref\":\"#/$defs/missing\"}", "points nowhere");
    expect_err("{\"type\":\"nothing\"}", "type");
    expect_err("{\"type\":", "not valid JSON");
    expect_err("{\"a\":1,\"a\":2}", "not valid JSON");
    expect_err("{\"oneOf\":[{\"type\":\"string\"},{\"minLength\":2}]}", "oneOf");
    expect_err("{\"type\":\"integer\",\"minimum\":5,\"maximum\":4}", "no integer fits");
    expect_err("{\"type\":\"string\",\"minLength\":5,\"maxLength\":4}", "no string fits");
    expect_err("{\"type\":\"number\",\"minimum\":0.5}", "fractional");
    expect_err("{\"type\":\"number\",\"minimum\":1e14}", "10^13");
    expect_err("{\"type\":\"integer\",\"maximum\":1e300}", "10^18");
    expect_err("{\"type\":\"string\",\"maxLength\":100000000}", "maxLength");
    expect_err("{\"type\":\"array\",\"uniqueItems\":true}", "uniqueItems");
    expect_err("{\"allOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}", "do not intersect");
    expect_err("{\"allOf\":[{\"pattern\":\"a\"},{\"pattern\":\"b\"}]}", "pattern");
    expect_err("{\"type\":\"object\",\"required\":[\"x\"],\"additionalProperties\":false}", "\"x\"");
    expect_err("false", "false schema");
    expect_err("{\"anyOf\":[false,false]}", "every branch");
    expect_ok("{\"anyOf\":[false,{\"type\":\"null\"}]}", false, "null");
}

static void test_hostile(void **state) {
    (void)state;
    /* deep nesting: refused at SD_JSON_SCHEMA_MAX_DEPTH */
    sd_strbuf s = {0};
    for (int i = 0; i < 1000; i++) sd_strbuf_puts(&s, "{\"items\":");
    sd_strbuf_puts(&s, "{}");
    for (int i = 0; i < 1000; i++) sd_strbuf_puts(&s, "}");
    expect_err(s.s, "deeper");
    sd_strbuf_clear(&s);
    /* 100k-value enum */
    sd_strbuf_puts(&s, "{\"enum\":[");
    for (int i = 0; i < 100000; i++) sd_strbuf_printf(&s, "%s%d", i ? "," : "", i);
    sd_strbuf_puts(&s, "]}");
    expect_err(s.s, "enum: 100000 values");
    sd_strbuf_clear(&s);
    /* $ref cycles that never produce a value, or that loop without structure */
    expect_err("{\"$ref\":\"#\"}", "no finite JSON value");
    expect_err("{\"type\":\"object\",\"properties\":{\"a\":{\"$ref\":\"#\"}},\"required\":[\"a\"]}", "no finite JSON value");
    expect_err("{\"type\":\"array\",\"items\":{\"$ref\":\"#\"},\"minItems\":1}", "no finite JSON value");
    expect_err("{\"anyOf\":[{\"$ref\":\"#\"},{\"type\":\"null\"}]}", "cycle");
    expect_err("{\"$defs\":{\"a\":{\"$ref\":\"#/$defs/b\"},\"b\":{\"$ref\":\"#/$defs/a\"}},\"$ref\":\"#/$defs/a\"}", "finite");
    expect_err("{\"$defs\":{\"a\":{\"allOf\":[{\"$ref\":\"#/$defs/a\"}]}},\"$ref\":\"#/$defs/a\"}", "deeper");
    /* runaway expansion: each level merges the next twice (2^28 if unbounded) */
    sd_strbuf_puts(&s, "{\"$defs\":{");
    for (int i = 0; i < 28; i++)
        sd_strbuf_printf(&s, "%s\"d%d\":{\"allOf\":[{\"$ref\":\"#/$defs/d%d\"},{\"$ref\":\"#/$defs/d%d\"}]}", i ? "," : "", i,
                         i + 1, i + 1);
    sd_strbuf_puts(&s, ",\"d28\":{\"type\":\"object\",\"properties\":{\"x\":{\"type\":\"integer\"}}}},\"$ref\":\"#/$defs/d0\"}");
    expect_err(s.s, "expands beyond");
    sd_strbuf_clear(&s);
    /* many properties sharing a long prefix: the key trie stays linear */
    sd_strbuf_puts(&s, "{\"type\":\"object\",\"properties\":{");
    for (int i = 0; i < 2000; i++) sd_strbuf_printf(&s, "%s\"prefix_prefix_prefix_%d\":{\"type\":\"integer\"}", i ? "," : "", i);
    sd_strbuf_puts(&s, "}}");
    expect_ok(s.s, false, "prefix");
    sd_strbuf_free(&s);
}

/* Documents through the grammar engine: what each schema must accept and refuse. */
static void test_accepts(void **state) {
    (void)state;
    static const struct {
        const char *schema;
        bool strict;
        const char *doc;
        bool want;
    } cases[] = {
        /* objects: properties order, optional keys, additional keys never a declared name */
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"string\"}},\"required\":[\"b\"]}", false, "{\"a\": 1, \"b\": \"x\"}", true},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"string\"}},\"required\":[\"b\"]}", false, "{\"b\":\"x\",\"zz\":[1,{}]}", true},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"string\"}},\"required\":[\"b\"]}", false, "{\"a\": 1}", false},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"string\"}},\"required\":[\"b\"]}", false, "{\"b\": \"x\", \"a\": \"y\"}", false},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"},\"b\":{\"type\":\"string\"}},\"required\":[\"b\"]}", true, "{\"b\": \"x\", \"zz\": 1}", false},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}}}", false, "{\"a\": 1, \"a\": \"s\"}", false},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}}}", false, "{\"a\": 1, \"ab\": \"s\"}", true},
        {"{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}}}", false, "{\"a\": 1, \"\\u0061\": \"s\"}", false},
        /* whitespace: compact, one space, newline + indentation up to 20 */
        {"{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}", false, "[1,2]", true},
        {"{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}", false, "[\n  1,\n  2\n]", true},
        {"{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}", false, "[1 ,2]", true},
        {"{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}", false, "[1,  2]", false},
        {"{\"type\":\"array\",\"items\":{\"type\":\"integer\"}}", false, " [1]", false},
        /* integers and numbers */
        {"{\"type\":\"integer\",\"minimum\":-15,\"exclusiveMaximum\":120}", false, "-15", true},
        {"{\"type\":\"integer\",\"minimum\":-15,\"exclusiveMaximum\":120}", false, "-16", false},
        {"{\"type\":\"integer\",\"minimum\":-15,\"exclusiveMaximum\":120}", false, "119", true},
        {"{\"type\":\"integer\",\"minimum\":-15,\"exclusiveMaximum\":120}", false, "120", false},
        {"{\"type\":\"integer\",\"minimum\":-15,\"exclusiveMaximum\":120}", false, "007", false},
        {"{\"type\":\"number\",\"exclusiveMaximum\":1}", false, "0.9999999999999999", true},
        {"{\"type\":\"number\",\"exclusiveMaximum\":1}", false, "0.99999999999999995", false}, /* a double rounds it to 1 */
        {"{\"type\":\"number\",\"maximum\":1}", false, "1.000", true},
        {"{\"type\":\"number\",\"maximum\":1}", false, "1.001", false},
        {"{\"type\":\"number\"}", false, "-1.5e+300", false}, /* beyond the exponents kept finite */
        {"{\"type\":\"number\"}", false, "-1.5e+30", true},
        /* unbounded integers fit a signed 64-bit integer (a JSON reader refuses more): 18 digits, not 19 */
        {"{\"type\":\"integer\"}", false, "-999999999999999999", true},
        {"{\"type\":\"integer\"}", false, "1000000000000000000", false},
        {"{\"type\":\"integer\"}", false, "52757477986764905359", false},
        {"{\"type\":\"number\"}", false, "999999999999999999", true},
        {"{\"type\":\"number\"}", false, "52757477986764905359", false},
        {"{\"type\":\"number\"}", false, "5.2757477986764905359e+19", true},
        {"{\"type\":\"integer\",\"minimum\":0}", false, "999999999999999999", true},
        {"{\"type\":\"integer\",\"minimum\":0}", false, "1000000000000000000", false},
        {"{\"type\":\"integer\",\"minimum\":1000000000000000000}", false, "9223372036854775807", true},
        {"{\"type\":\"integer\",\"minimum\":1000000000000000000}", false, "9223372036854775808", false},
        {"{\"type\":\"integer\",\"maximum\":-1000000000000000000}", false, "-9223372036854775807", true},
        {"{\"type\":\"integer\",\"maximum\":-1000000000000000000}", false, "-9223372036854775808", false},
        {"{\"type\":\"number\",\"minimum\":0}", false, "999999999999999999.5", true},
        {"{\"type\":\"number\",\"minimum\":0}", false, "1000000000000000000", false},
        /* strings: escapes, surrogate pairs, lengths in characters */
        {"{\"type\":\"string\",\"maxLength\":1}", false, "\"\\ud83d\\ude00\"", true},
        {"{\"type\":\"string\",\"maxLength\":1}", false, "\"\\ud83d\"", false},
        {"{\"type\":\"string\",\"minLength\":2}", false, "\"\xc3\xa9\xc3\xa9\"", true},
        {"{\"type\":\"string\",\"minLength\":2}", false, "\"\xc3\xa9\"", false},
        {"{\"type\":\"string\"}", false, "\"a\nb\"", false},
        /* patterns: anywhere unless anchored */
        {"{\"type\":\"string\",\"pattern\":\"ab\"}", false, "\"xxabyy\"", true},
        {"{\"type\":\"string\",\"pattern\":\"^ab\"}", false, "\"xxab\"", false},
        {"{\"type\":\"string\",\"pattern\":\"^a[0-9]+$\"}", false, "\"a12\"", true},
        {"{\"type\":\"string\",\"pattern\":\"^a[0-9]+$\"}", false, "\"a12 \"", false},
        /* formats */
        {"{\"type\":\"string\",\"format\":\"date\"}", false, "\"2024-02-29\"", true},
        {"{\"type\":\"string\",\"format\":\"date\"}", false, "\"2023-02-29\"", false},
        {"{\"type\":\"string\",\"format\":\"date\"}", false, "\"1900-02-29\"", false},
        {"{\"type\":\"string\",\"format\":\"date\"}", false, "\"2000-02-29\"", true},
        {"{\"type\":\"string\",\"format\":\"date\"}", false, "\"2023-04-31\"", false},
        {"{\"type\":\"string\",\"format\":\"date-time\"}", false, "\"2023-04-30T23:59:59.5+05:30\"", true},
        {"{\"type\":\"string\",\"format\":\"date-time\"}", false, "\"2023-04-30T24:00:00Z\"", false},
        {"{\"type\":\"string\",\"format\":\"uuid\"}", false, "\"123e4567-e89b-12d3-a456-426614174000\"", true},
        /* enum / const, anyOf, $ref recursion */
        {"{\"enum\":[\"a\",{\"k\":[1,2]},null]}", false, "{\"k\": [1, 2]}", true},
        {"{\"enum\":[\"a\",{\"k\":[1,2]},null]}", false, "{\"k\": [2, 1]}", false},
        {"{\"anyOf\":[{\"type\":\"integer\"},{\"type\":\"string\",\"maxLength\":1}]}", false, "\"ab\"", false},
        {"{\"$defs\":{\"n\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},\"next\":{\"$ref\":\"#/$defs/n\"}},\"required\":[\"v\"]}},\"$ref\":\"#/$defs/n\"}", true, "{\"v\":1,\"next\":{\"v\":2,\"next\":{\"v\":3}}}", true},
        {"{\"$defs\":{\"n\":{\"type\":\"object\",\"properties\":{\"v\":{\"type\":\"integer\"},\"next\":{\"$ref\":\"#/$defs/n\"}},\"required\":[\"v\"]}},\"$ref\":\"#/$defs/n\"}", true, "{\"v\":1,\"next\":{\"next\":{\"v\":3}}}", false},
        /* allOf merged */
        {"{\"allOf\":[{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\",\"minimum\":0}},\"required\":[\"a\"]},{\"properties\":{\"a\":{\"maximum\":9}}}]}", true, "{\"a\": 9}", true},
        {"{\"allOf\":[{\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\",\"minimum\":0}},\"required\":[\"a\"]},{\"properties\":{\"a\":{\"maximum\":9}}}]}", true, "{\"a\": 10}", false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sd_strbuf g;
        sd_err err;
        if (conv(cases[i].schema, cases[i].strict, &g, &err) != SD_OK) fail_msg("%s: %s", cases[i].schema, err.msg);
        sd_grammar *gr = NULL;
        if (sd_grammar_compile(g.s, g.len, "root", NULL, &gr, &err) != SD_OK) fail_msg("%s: engine: %s", cases[i].schema, err.msg);
        bool got = sd_grammar_accepts(gr, cases[i].doc, strlen(cases[i].doc), NULL);
        if (got != cases[i].want)
            fail_msg("%s%s\n  %s: %s", cases[i].schema, cases[i].strict ? " (strict)" : "", cases[i].doc,
                     got ? "accepted" : "refused");
        sd_grammar_free(gr);
        sd_strbuf_free(&g);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_hostile),
        cmocka_unit_test(test_accepts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
