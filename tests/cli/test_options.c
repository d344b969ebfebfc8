/* The option table (specdec_option_table) walked through every front end:
 * for each option, values at both ends of its range are accepted by the
 * argument parsers of generate, serve and chat (and land in the parsed
 * settings), values just outside are refused with exit code 2 and a one-line
 * message naming the range; the HTTP request parser does the same for every
 * option with a request field (400, the field as `param`). */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/chat.h"
#include "cli/generate.h"
#include "server/front.h"
#include "server/oai.h"
#include "specdec.h"

/* Values to try for one option: accepted ones, and refused ones with the word
 * the message must hold. */
typedef struct trial {
    char good[2][64];
    int n_good;
    char bad[2][64];
    int n_bad;
} trial;

static trial trials_for(const specdec_option *t) {
    trial r = {0};
    switch (t->type) {
    case SPECDEC_OPTION_INT:
        snprintf(r.good[0], 64, "%.0f", t->lo);
        snprintf(r.good[1], 64, "%.0f", t->hi);
        snprintf(r.bad[0], 64, "%.0f", t->lo - 1);
        snprintf(r.bad[1], 64, "%.0f", t->hi + 1);
        r.n_good = r.n_bad = 2;
        break;
    case SPECDEC_OPTION_FLOAT:
        snprintf(r.good[0], 64, "%g", t->lo_open ? (t->lo + t->hi) / 2 : t->lo);
        snprintf(r.good[1], 64, "%g", t->hi_open ? (t->lo + t->hi) / 2 : t->hi);
        snprintf(r.bad[0], 64, "%g", t->lo_open ? t->lo : t->lo - 1);
        snprintf(r.bad[1], 64, "%g", t->hi_open ? t->hi : t->hi + 1);
        r.n_good = r.n_bad = 2;
        break;
    case SPECDEC_OPTION_UINT64:
        snprintf(r.good[0], 64, "0");
        snprintf(r.good[1], 64, "18446744073709551615");
        snprintf(r.bad[0], 64, "-1");
        snprintf(r.bad[1], 64, "18446744073709551616");
        r.n_good = r.n_bad = 2;
        break;
    case SPECDEC_OPTION_NAME: {
        const char *end = strchr(t->names, ' ');
        snprintf(r.good[0], 64, "%.*s", (int)(end ? end - t->names : (ptrdiff_t)strlen(t->names)), t->names);
        snprintf(r.good[1], 64, "%s", strrchr(t->names, ' ') + 1);
        snprintf(r.bad[0], 64, "bogus");
        r.n_good = 2;
        r.n_bad = 1;
        break;
    }
    case SPECDEC_OPTION_PATH: snprintf(r.good[0], 64, "some/file.gguf"); r.n_good = 1; break;
    case SPECDEC_OPTION_FLAG: r.n_good = 1; break;
    }
    return r;
}

/* Runs parse(argv) with stderr going to a file; returns its exit code and
 * the text it printed into msg. */
typedef int (*parse_fn)(int argc, char **argv);
static int captured(parse_fn parse, int argc, char **argv, char *msg, size_t cap) {
    fflush(stderr);
    FILE *f = tmpfile();
    assert_non_null(f);
    int saved = dup(2);
    dup2(fileno(f), 2);
    int rc = parse(argc, argv);
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    rewind(f);
    size_t n = fread(msg, 1, cap - 1, f);
    msg[n] = 0;
    fclose(f);
    return rc;
}

/* The settings the last parse produced, as the table's options. */
static specdec_options last;

static int parse_generate(int argc, char **argv) {
    gen_opts o;
    int rc = gen_parse(argc, argv, &o);
    last = o.run;
    return rc == -1 ? 0 : rc;
}

static int parse_serve(int argc, char **argv) {
    server_opts o;
    int rc = front_parse(argc, argv, &o);
    last = (specdec_options){.gen = o.gen, .n_ctx = o.n_ctx, .n_threads = o.n_threads,
                             .model_path = o.model_path, .draft_path = o.draft_path,
                             .cache_type_k = o.cache_type_k, .cache_type_v = o.cache_type_v,
                             .no_repack = o.no_repack};
    return rc;
}

static int parse_chat(int argc, char **argv) {
    chat_opts o;
    int rc = chat_parse(argc, argv, &o);
    last = o.run;
    return rc;
}

/* The value text as the table prints it back ("1e+02" and "100" both read 100). */
static void assert_landed(const specdec_option *t, const char *given) {
    char got[256];
    specdec_option_value(&last, t, got, sizeof got);
    if (t->type == SPECDEC_OPTION_FLAG) assert_string_equal(got, "on");
    else if (t->type == SPECDEC_OPTION_FLOAT) assert_float_equal(strtod(got, NULL), strtod(given, NULL), 1e-6);
    else assert_string_equal(got, given);
}

/* One command: argv = {cmd, [-p hi], --ngram-max 8, spelling, value}. */
static void walk_command(const char *cmd, parse_fn parse) {
    size_t n;
    const specdec_option *table = specdec_option_table(&n);
    for (size_t i = 0; i < n; i++) {
        const specdec_option *t = &table[i];
        trial tr = trials_for(t);
        const char *spellings[2] = {t->flag, t->alias};
        for (int s = 0; s < 2 && spellings[s]; s++) {
            for (int k = 0; k < tr.n_good + tr.n_bad; k++) {
                bool good = k < tr.n_good;
                const char *v = good ? tr.good[k] : tr.bad[k - tr.n_good];
                /* --ngram-max 8 first, so --ngram-min's upper end fits; generate needs a prompt */
                char *argv[8] = {(char *)cmd, "--ngram-max", "8"};
                int argc = 3;
                if (!strcmp(cmd, "generate")) argv[argc++] = "-p", argv[argc++] = "hi";
                argv[argc++] = (char *)spellings[s];
                if (t->type != SPECDEC_OPTION_FLAG) argv[argc++] = (char *)v;
                char msg[1024];
                int rc = captured(parse, argc, argv, msg, sizeof msg);
                if (good) {
                    if (rc != 0) fail_msg("%s %s %s: refused: %s", cmd, spellings[s], v, msg);
                    assert_landed(t, v);
                    continue;
                }
                char range[96], want[256];
                specdec_option_range(t, range, sizeof range);
                snprintf(want, sizeof want, "specdec: %s %s: %s %s", spellings[s], v,
                         t->type == SPECDEC_OPTION_NAME ? "not one of" : "out of range", range);
                if (rc != 2 || strncmp(msg, want, strlen(want)) != 0 || strchr(msg, '\n') != msg + strlen(msg) - 1)
                    fail_msg("%s %s %s: rc %d, message '%s', want '%s...'", cmd, spellings[s], v, rc, msg, want);
            }
        }
    }
}

static void test_generate(void **state) { (void)state; walk_command("generate", parse_generate); }
static void test_serve(void **state) { (void)state; walk_command("serve", parse_serve); }
static void test_chat(void **state) { (void)state; walk_command("chat", parse_chat); }

/* Text that is not a number is refused naming the range too. */
static void test_not_a_number(void **state) {
    (void)state;
    char *argv[] = {"generate", "-p", "hi", "--temp", "hot"}, msg[512];
    assert_int_equal(captured(parse_generate, 5, argv, msg, sizeof msg), 2);
    assert_non_null(strstr(msg, "specdec: --temp hot: not a number in [0, 100]"));
    char *argv2[] = {"serve", "-n", "lots"};
    assert_int_equal(captured(parse_serve, 3, argv2, msg, sizeof msg), 2);
    assert_non_null(strstr(msg, "specdec: -n lots: not an integer in [-1, 16777216]"));
}

/* Every option with a request field, through oai_parse on a loaded fixture. */
static bool http_try(server *s, const char *field, json_t *value, job **jp, http_err *e) {
    json_t *body = json_pack("{s:s}", "prompt", "int main");
    json_object_set_new(body, field, value);
    oai_req r = {.kind = JOB_COMPLETION};
    *jp = job_new(JOB_COMPLETION);
    assert_non_null(*jp);
    *e = (http_err){0};
    bool ok = oai_parse(s, body, &r, *jp, e);
    json_decref(body);
    return ok;
}

static json_t *json_value(const specdec_option *t, const char *v) {
    if (t->type == SPECDEC_OPTION_FLOAT) return json_real(strtod(v, NULL));
    return json_integer(strtoll(v, NULL, 10));
}

static void check_http_field(server *s, const specdec_option *t, const char *field) {
    trial tr = trials_for(t);
    for (int k = 0; k < tr.n_good + tr.n_bad; k++) {
        bool good = k < tr.n_good;
        const char *v = good ? tr.good[k] : tr.bad[k - tr.n_good];
        if (t->type == SPECDEC_OPTION_UINT64 && (!strcmp(v, "18446744073709551615") || !strcmp(v, "18446744073709551616")))
            continue; /* beyond a JSON integer (int64) */
        job *j;
        http_err e;
        bool ok = http_try(s, field, json_value(t, v), &j, &e);
        if (good && !strcmp(field, "temperature") && strtod(v, NULL) > 2) { /* OpenAI's range, oai_request.c */
            if (ok || e.status != 400 || !strstr(e.message, "out of range [0, 2]"))
                fail_msg("temperature %s: ok %d status %u message '%s'", v, ok, e.status, e.message);
        } else if (good) {
            if (!ok) fail_msg("%s %s: refused: %s", field, v, e.message);
            last = (specdec_options){.gen = j->gp};
            assert_landed(t, v);
        } else {
            char range[96];
            specdec_option_range(t, range, sizeof range);
            if (ok || e.status != 400 || !e.param || strcmp(e.param, field) || !strstr(e.message, range) ||
                !strstr(e.message, "out of range"))
                fail_msg("%s %s: ok %d status %u message '%s'", field, v, ok, e.status, e.message);
        }
        job_release(j);
    }
}

static void test_http(void **state) {
    (void)state;
    server s = {0};
    char *argv[] = {"serve", "-m", "models/fixture-target.gguf", "-t", "1", "-c", "256"};
    assert_int_equal(front_parse(7, argv, &s.opts), 0);
    assert_true(front_load(&s));
    size_t n, fields = 0;
    const specdec_option *table = specdec_option_table(&n);
    for (size_t i = 0; i < n; i++) {
        if (!table[i].http_field) continue;
        check_http_field(&s, &table[i], table[i].http_field);
        fields++;
    }
    const specdec_option *np = specdec_option_find("--n-predict");
    check_http_field(&s, np, "max_tokens");
    check_http_field(&s, np, "max_completion_tokens");
    assert_true(fields >= 7); /* temperature, top_k, top_p, min_p, seed, n_predict, speculative.n_max */
    /* a non-number is refused by type */
    job *j;
    http_err e;
    assert_false(http_try(&s, "temperature", json_string("hot"), &j, &e));
    assert_int_equal(e.status, 400);
    job_release(j);
    front_unload(&s);
}

/* The table itself: every numeric option has a range, every option help. */
static void test_table(void **state) {
    (void)state;
    size_t n;
    const specdec_option *t = specdec_option_table(&n);
    assert_true(n >= 20);
    for (size_t i = 0; i < n; i++) {
        assert_non_null(t[i].help);
        assert_ptr_equal(specdec_option_find(t[i].flag), &t[i]);
        if (t[i].type == SPECDEC_OPTION_INT || t[i].type == SPECDEC_OPTION_FLOAT) assert_true(t[i].lo < t[i].hi);
        char range[96];
        if (t[i].type != SPECDEC_OPTION_PATH && t[i].type != SPECDEC_OPTION_FLAG)
            assert_true(specdec_option_range(&t[i], range, sizeof range) > 0);
    }
    specdec_error err = {0};
    specdec_option foreign = t[0];
    specdec_options o = specdec_options_default();
    assert_int_equal(specdec_option_set(&o, &foreign, NULL, "x", &err), SPECDEC_ERR_ARG);
    assert_int_equal(specdec_option_set(&o, specdec_option_find("--temp"), NULL, NULL, &err), SPECDEC_ERR_ARG);
    assert_string_equal(err.message, "--temp needs a value");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_table),    cmocka_unit_test(test_generate), cmocka_unit_test(test_serve),
        cmocka_unit_test(test_chat),     cmocka_unit_test(test_not_a_number), cmocka_unit_test(test_http),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
