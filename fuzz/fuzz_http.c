/* libFuzzer target: the parts of HTTP handling that are ours (libmicrohttpd
 * parses the protocol): the Authorization header check, the CORS origin
 * match, the --api-key-file parser, and the UTF-8 repair that every text put
 * into a JSON answer or SSE chunk goes through (json_text).
 * Input: byte 0 selects (mod 4): 0 Authorization header (the rest) against
 * two keys; 1 --api-key-file contents; 2 json_text of the rest; 3 Origin.
 * Checks: a header is accepted exactly when it is "Bearer" (any case), spaces,
 * a configured key, optional trailing blanks (a plain reference parser); the
 * key file yields keys without blanks or control bytes, never an empty one;
 * json_text gives a string jansson accepts, equal to the input when that is
 * valid UTF-8 (a NUL is kept, escaped), which dumps and parses back to
 * itself; an origin is allowed only when equal to a
 * configured one. Build and run: bash fuzz/run.sh SECONDS fuzz_http */
#define _GNU_SOURCE /* memmem */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include "server/auth.h"
#include "server/http.h"

#define CHECK(c)                                                                     \
    do {                                                                             \
        if (!(c)) {                                                                  \
            fprintf(stderr, "fuzz_http: check failed: %s (line %d)\n", #c, __LINE__); \
            abort();                                                                 \
        }                                                                            \
    } while (0)

const char sd_chat_page[] = "";
const size_t sd_chat_page_len = 0;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const KEYS[] = {"sk-fuzz-0123456789", "k2"};

/* The reference: "Bearer" (case-insensitive), one space, then spaces, the key, then blanks. */
static bool reference(const char *h) {
    if (strncasecmp(h, "Bearer ", 7)) return false;
    const char *k = h + 7;
    while (*k == ' ') k++;
    size_t n = strlen(k);
    while (n && (k[n - 1] == ' ' || k[n - 1] == '\t')) n--;
    for (size_t i = 0; i < 2; i++)
        if (n == strlen(KEYS[i]) && !memcmp(k, KEYS[i], n)) return true;
    return false;
}

static void free_conf(auth_conf *a) {
    for (size_t i = 0; i < a->n_keys; i++) free(a->keys[i]);
    for (size_t i = 0; i < a->n_origins; i++) free(a->origins[i]);
    free(a->keys);
    free(a->origins);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    const char *rest = (const char *)data + 1;
    size_t n = size - 1;
    char *s = malloc(n + 1);
    CHECK(s);
    memcpy(s, rest, n);
    s[n] = 0; /* a header value is a C string: it ends at the first NUL */
    auth_conf a = {0};
    switch (data[0] % 4) {
    case 0:
        for (size_t i = 0; i < 2; i++) CHECK(auth_add_key(&a, KEYS[i], "fuzz"));
        CHECK(auth_check(&a, s) == reference(s));
        break;
    case 1: {
        char path[] = "/tmp/fuzz_http_keys_XXXXXX";
        int fd = mkstemp(path);
        CHECK(fd >= 0);
        CHECK(write(fd, rest, n) == (ssize_t)n);
        close(fd);
        bool ok = auth_add_key_file(&a, path);
        unlink(path);
        if (ok) CHECK(a.n_keys > 0);
        for (size_t i = 0; i < a.n_keys; i++) {
            CHECK(a.keys[i][0]);
            for (const char *p = a.keys[i]; *p; p++) CHECK((unsigned char)*p > ' ' && *p != 0x7f);
            CHECK(memmem(rest, n, a.keys[i], strlen(a.keys[i]))); /* a key is a part of the file */
        }
        break;
    }
    case 2: {
        json_t *v = json_text(rest, n);
        CHECK(v && json_is_string(v));
        json_t *probe = json_stringn(rest, n);
        if (probe) { /* valid UTF-8, no NUL: kept as is */
            CHECK(json_string_length(v) == n && !memcmp(json_string_value(v), rest, n));
            json_decref(probe);
        }
        char *dumped = json_dumps(v, JSON_ENCODE_ANY | HTTP_JSON_FLAGS);
        CHECK(dumped);
        json_error_t je;
        json_t *back = json_loads(dumped, JSON_DECODE_ANY | JSON_ALLOW_NUL, &je);
        CHECK(back && json_equal(back, v));
        json_decref(back);
        free(dumped);
        json_decref(v);
        break;
    }
    default:
        CHECK(auth_add_origin(&a, "https://app.example"));
        CHECK(auth_add_origin(&a, "http://127.0.0.1:8080"));
        const char *got = auth_cors_origin(&a, s);
        CHECK(!got || !strcmp(got, s));
        CHECK(!!got == (!strcmp(s, "https://app.example") || !strcmp(s, "http://127.0.0.1:8080")));
        break;
    }
    free_conf(&a);
    free(s);
    return 0;
}
