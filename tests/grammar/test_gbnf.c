/* GBNF parser and byte-level acceptance (src/grammar/): the dialect's
 * constructs accept what they should and refuse what they should; malformed
 * and hostile grammars fail with line:col, within bounds, quickly. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "grammar/grammar.h"

static sd_grammar *compile_ok(const char *text) {
    sd_grammar *g = NULL;
    sd_err err = {0};
    sd_status st = sd_grammar_compile(text, strlen(text), NULL, NULL, &g, &err);
    if (st != SD_OK) fail_msg("compile failed: %s\n--- grammar:\n%s", err.msg, text);
    return g;
}

static int acc(const sd_grammar *g, const char *s) { return sd_grammar_accepts(g, s, strlen(s), NULL); }

/* Each grammar with strings it must accept (yes) and refuse (no). */
typedef struct gcase {
    const char *grammar;
    const char *yes[12];
    const char *no[12];
} gcase;

static const gcase cases[] = {
    {"root ::= \"abc\"", {"abc"}, {"", "ab", "abcd", "abd"}},
    {"root ::= \"a\" | \"bc\" | \"\"", {"a", "bc", ""}, {"b", "abc"}},
    {"root ::= [a-c]+ \"!\"", {"a!", "abcabc!"}, {"!", "ad!", "a"}},
    {"root ::= [^a-c\\n]*", {"", "xyz", "é日本", "\x7f"}, {"a", "x\n", "xb"}},
    {"root ::= .{2,3}", {"ab", "abc", "éé", "日本語"}, {"a", "abcd", "é"}},
    {"root ::= \"x\"{3}", {"xxx"}, {"xx", "xxxx"}},
    {"root ::= \"x\"{2,}", {"xx", "xxxxxx"}, {"x", ""}},
    {"root ::= \"x\"{,2} \"y\"", {"y", "xy", "xxy"}, {"xxxy"}},
    {"root ::= (\"ab\" | \"c\")? \"d\"", {"d", "abd", "cd"}, {"abcd", "ab"}},
    {"root ::= \"\\x41\\u00e9\\U0001F600\\t\\\\\\\"\"", {"A\xc3\xa9\xf0\x9f\x98\x80\t\\\""}, {"A"}},
    {"root ::= [\\u00e0-\\u00ff\\x41]", {"\xc3\xa0", "\xc3\xbf", "A"}, {"\xc3\x9f", "B"}},
    {"root ::= [\\U00010000-\\U0010FFFF]", {"\xf0\x90\x80\x80", "\xf4\x8f\xbf\xbf"}, {"\xef\xbf\xbf", "a"}},
    {"# comment\nroot ::= a b # trailing\na ::= \"1\"\nb ::= \"2\"\n", {"12"}, {"1", "21"}},
    {"root ::=\n  \"[\" (\n   \"x\" |\n   \"y\"\n  )* \"]\"\n", {"[]", "[xyx]"}, {"[z]", "["}},
    {"root ::= \"a\" root | \"b\"", {"b", "aaab"}, {"a", "aba"}},
    {"root ::= ws ws \"x\"\nws ::= [ ]*", {"x", "  x"}, {" "}},
    /* arithmetic */
    {"root ::= expr\nexpr ::= term ((\"+\" | \"-\") term)*\nterm ::= factor ((\"*\" | \"/\") factor)*\n"
     "factor ::= num | \"(\" expr \")\"\nnum ::= [0-9]+",
     {"1", "1+2*3", "(1+2)*3", "((4))"},
     {"1+", "(1", "1**2", "+1"}},
    /* a list */
    {"root ::= item (\", \" item)*\nitem ::= [a-z]+", {"a", "ab, c, def"}, {"a,b", "a, ", ""}},
    /* chess moves */
    {"root ::= move (\" \" move)*\nmove ::= piece? file rank (\"x\" file rank)? | \"O-O\" | \"O-O-O\"\n"
     "piece ::= [KQRBN]\nfile ::= [a-h]\nrank ::= [1-8]",
     {"e4", "Nf3 O-O", "Qd1xd8 O-O-O"},
     {"e9", "Zf3", "e4  e5"}},
    /* japanese text */
    {"root ::= [ぁ-ゖ一-龯ー。、]+", {"こんにちは", "日本語です。"}, {"abc", "カタカナ"}},
    /* c-like */
    {"root ::= (decl)*\ndecl ::= type \" \" ident \" = \" num \";\\n\"\ntype ::= \"int\" | \"char\"\n"
     "ident ::= [a-zA-Z_] [a-zA-Z_0-9]*\nnum ::= \"-\"? [0-9]+",
     {"", "int x = 1;\n", "char _y9 = -42;\nint z = 0;\n"},
     {"int 9x = 1;\n", "float x = 1;\n"}},
};

static void test_cases(void **state) {
    (void)state;
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        sd_grammar *g = compile_ok(cases[c].grammar);
        for (int i = 0; i < 12 && cases[c].yes[i]; i++)
            if (!acc(g, cases[c].yes[i])) fail_msg("case %zu should accept \"%s\"", c, cases[c].yes[i]);
        for (int i = 0; i < 12 && cases[c].no[i]; i++)
            if (acc(g, cases[c].no[i])) fail_msg("case %zu should refuse \"%s\"", c, cases[c].no[i]);
        sd_grammar_free(g);
    }
}

/* A JSON grammar in the style of llama.cpp's grammars/json.gbnf (our text). */
static const char *json_gbnf =
    "root   ::= object\n"
    "value  ::= object | array | string | number | (\"true\" | \"false\" | \"null\") ws\n"
    "object ::=\n"
    "  \"{\" ws (\n"
    "            string \":\" ws value\n"
    "    (\",\" ws string \":\" ws value)*\n"
    "  )? \"}\" ws\n"
    "array  ::=\n"
    "  \"[\" ws (\n"
    "            value\n"
    "    (\",\" ws value)*\n"
    "  )? \"]\" ws\n"
    "string ::=\n"
    "  \"\\\"\" (\n"
    "    [^\"\\\\\\x7F\\x00-\\x1F] |\n"
    "    \"\\\\\" ([\"\\\\/bfnrt] | \"u\" [0-9a-fA-F]{4}) # escapes\n"
    "  )* \"\\\"\" ws\n"
    "number ::= (\"-\"? ([0-9] | [1-9] [0-9]{0,15})) (\".\" [0-9]+)? ([eE] [-+]? [0-9] [1-9]{0,15})? ws\n"
    "ws ::= | \" \" | \"\\n\" [ \\t]{0,20}\n";

static void test_json(void **state) {
    (void)state;
    sd_grammar *g = compile_ok(json_gbnf);
    const char *yes[] = {"{}", "{\"a\": 1}", "{\"a\":[1, 2.5e3, true, null, \"x\\u00e9\\n\"]}",
                         "{\"k\": {\"n\": {\"m\": []}}}", "{\"é日\": -0.5}"};
    const char *no[] = {"[]", "{", "{\"a\" 1}", "{\"a\": 01}", "{\"a\": \"\x01\"}", "{\"a\": tru}", "{a: 1}"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
        if (!acc(g, yes[i])) fail_msg("json should accept %s", yes[i]);
    for (size_t i = 0; i < sizeof no / sizeof *no; i++)
        if (acc(g, no[i])) fail_msg("json should refuse %s", no[i]);
    sd_grammar_free(g);
}

/* Malformed grammars: the error names the line and column. */
typedef struct bad {
    const char *grammar, *msg;
} bad;

static void test_errors(void **state) {
    (void)state;
    static const bad bads[] = {
        {"root ::= \"abc", "grammar 1:10: unterminated string literal"},
        {"root ::= [abc", "grammar 1:10: unterminated character class"},
        {"root ::= (\"a\"", "grammar 1:10: unclosed '('"},
        {"root ::= \"a\")", "grammar 1:13: unmatched ')'"},
        {"root ::= foo", "undefined rule 'foo'"},
        {"root ::= \"a\"\nroot ::= \"b\"", "grammar 2:1: rule defined twice"},
        {"root ::= \"\\q\"", "grammar 1:11: unknown escape"},
        {"root ::= \"\\x4\"", "grammar 1:14: expected a hex digit"},
        {"root ::= * \"a\"", "grammar 1:10: repetition with nothing before it"},
        {"root ::= \"a\"{3,2}", "repetition {m,n} with n < m"},
        {"root ::= \"a\"{99999999}", "repetition count too large"},
        {"root ::= [z-a]", "character range is reversed"},
        {"root ::= \"a\" b ::= \"c\"", "grammar 1:14: expected a newline before the next rule"},
        {"root ::= a\na ::= a \"x\" | \"y\"", "rule 'a' is left-recursive"},
        {"root ::= b \"x\"\nb ::= c?\nc ::= root", "left-recursive"},
        {"root ::= <[5]>", "token reference"}, /* fine without vocab? no: id unchecked, so compiles */
        {"root ::= <think>", "grammar 1:10: token reference <text> needs a vocabulary"},
        {"start ::= \"a\"", "no rule named 'root'"},
        {"root ::= \"a\" $", "grammar 1:14: unexpected character"},
        {"root := \"a\"", "grammar 1:6: expected '::='"},
        {"\n\n  root ::= \"\xff\"", "grammar 3:13: invalid UTF-8"},
    };
    for (size_t i = 0; i < sizeof bads / sizeof *bads; i++) {
        sd_grammar *g = NULL;
        sd_err err = {0};
        sd_status st = sd_grammar_compile(bads[i].grammar, strlen(bads[i].grammar), NULL, NULL, &g, &err);
        if (!strcmp(bads[i].msg, "token reference")) { /* <[id]> needs no vocabulary to compile */
            assert_int_equal(st, SD_OK);
            assert_false(acc(g, "")); /* a token never matches bytes */
            sd_grammar_free(g);
            continue;
        }
        if (st == SD_OK) fail_msg("should refuse: %s", bads[i].grammar);
        assert_null(g);
        if (!strstr(err.msg, bads[i].msg)) fail_msg("for %s\n expected \"%s\"\n got \"%s\"", bads[i].grammar, bads[i].msg, err.msg);
    }
}

/* Hostile grammars fail with a clear error (or work) quickly and bounded. */
static void test_hostile(void **state) {
    (void)state;
    sd_err err = {0};
    sd_grammar *g = NULL;
    /* nesting 10000 deep */
    size_t n = 10000;
    char *t = malloc(2 * n + 32);
    strcpy(t, "root ::= ");
    size_t k = strlen(t);
    for (size_t i = 0; i < n; i++) t[k++] = '(';
    t[k++] = '"', t[k++] = 'a', t[k++] = '"';
    for (size_t i = 0; i < n; i++) t[k++] = ')';
    t[k] = 0;
    assert_int_not_equal(sd_grammar_compile(t, k, NULL, NULL, &g, &err), SD_OK);
    assert_non_null(strstr(err.msg, "nested too deeply"));
    free(t);
    /* runaway expansion: nested repetitions multiply */
    char *run = malloc(100 * 16 + 32);
    k = (size_t)sprintf(run, "root ::= ");
    for (int i = 0; i < 100; i++) k += (size_t)sprintf(run + k, "\"ab\"{65536} ");
    assert_int_not_equal(sd_grammar_compile(run, k, NULL, NULL, &g, &err), SD_OK);
    free(run);
    assert_non_null(strstr(err.msg, "element limit"));
    /* (x?)* can repeat nothing forever: refused as left recursion, as llama.cpp does */
    const char *nul = "root ::= (\"a\"?)*";
    assert_int_not_equal(sd_grammar_compile(nul, strlen(nul), NULL, NULL, &g, &err), SD_OK);
    assert_non_null(strstr(err.msg, "left-recursive"));
    /* exponential state blow-up is bounded by interning: (a|a)* with many
     * copies of the same alternative is still one state per position */
    const char *dup = "root ::= (\"a\" | \"a\" | [a] | \"a\" \"\")* \"b\"";
    assert_int_equal(sd_grammar_compile(dup, strlen(dup), NULL, NULL, &g, &err), SD_OK);
    char *long_a = malloc(100002);
    memset(long_a, 'a', 100000);
    long_a[100000] = 'b';
    assert_true(sd_grammar_accepts(g, long_a, 100001, &err));
    free(long_a);
    sd_grammar_free(g);
    /* deep recursion in the input: state limit, not a crash */
    const char *rec = "root ::= \"(\" root \")\" | \"x\"";
    assert_int_equal(sd_grammar_compile(rec, strlen(rec), NULL, NULL, &g, &err), SD_OK);
    size_t depth = 3000;
    char *s = malloc(2 * depth + 2);
    memset(s, '(', depth);
    s[depth] = 'x';
    memset(s + depth + 1, ')', depth);
    assert_true(sd_grammar_accepts(g, s, 2 * depth + 1, NULL));
    assert_false(sd_grammar_accepts(g, s, 2 * depth, NULL));
    free(s);
    sd_grammar_free(g);
    /* 100k-alternative rule */
    size_t alts = 100000;
    char *big = malloc(alts * 12 + 32);
    k = (size_t)sprintf(big, "root ::= ");
    for (size_t i = 0; i < alts; i++) k += (size_t)sprintf(big + k, "%s\"v%zu\"", i ? "|" : "", i);
    assert_int_equal(sd_grammar_compile(big, k, NULL, NULL, &g, &err), SD_OK);
    assert_true(acc(g, "v99999"));
    assert_true(acc(g, "v12345"));
    assert_false(acc(g, "v100000"));
    sd_grammar_free(g);
    free(big);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_json),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_hostile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
