/* API keys and CORS origins (auth.h). The comparison is constant-time in
 * the sense of OWASP's guidance for secrets: every configured key is compared
 * in full, without an early exit, so the response time does not tell an
 * attacker how many leading bytes of a guess were right. */
#define _POSIX_C_SOURCE 200809L
#include "server/auth.h"

#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

static bool push(char ***v, size_t *n, const char *s, size_t len) {
    char **nv = realloc(*v, (*n + 1) * sizeof **v);
    if (!nv) return false;
    *v = nv;
    char *c = malloc(len + 1);
    if (!c) return false;
    memcpy(c, s, len);
    c[len] = 0;
    nv[(*n)++] = c;
    return true;
}

static bool add_key(auth_conf *a, const char *key, size_t len, const char *where) {
    if (len == 0) { fprintf(stderr, "specdec: %s: an empty API key\n", where); return false; }
    for (size_t i = 0; i < len; i++)
        if ((unsigned char)key[i] <= ' ' || key[i] == 0x7f) {
            fprintf(stderr, "specdec: %s: an API key holds a blank or control byte (at offset %zu)\n", where, i);
            return false;
        }
    if (!push(&a->keys, &a->n_keys, key, len)) { fprintf(stderr, "specdec: out of memory\n"); return false; }
    return true;
}

bool auth_add_key(auth_conf *a, const char *key, const char *where) { return add_key(a, key, strlen(key), where); }

bool auth_add_key_file(auth_conf *a, const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) { fprintf(stderr, "specdec: --api-key-file %s: cannot open it\n", path); return false; }
    char line[4096], where[64];
    size_t before = a->n_keys;
    bool ok = true;
    for (int no = 1; ok && fgets(line, sizeof line, f); no++) {
        size_t n = strlen(line);
        if (n == sizeof line - 1 && line[n - 1] != '\n' && !feof(f)) {
            fprintf(stderr, "specdec: --api-key-file line %d: longer than %zu bytes\n", no, sizeof line - 2);
            ok = false;
            break;
        }
        const char *p = line;
        while (*p == ' ' || *p == '\t') p++;
        while (n > 0 && isspace((unsigned char)line[n - 1])) n--;
        size_t len = line + n > p ? (size_t)(line + n - p) : 0;
        if (len == 0 || *p == '#') continue;
        snprintf(where, sizeof where, "--api-key-file line %d", no);
        ok = add_key(a, p, len, where);
    }
    if (ferror(f)) { fprintf(stderr, "specdec: --api-key-file %s: read error\n", path); ok = false; }
    fclose(f);
    memset(line, 0, sizeof line); /* the last key read does not linger on the stack */
    if (ok && a->n_keys == before) {
        fprintf(stderr, "specdec: --api-key-file %s: no key in it\n", path);
        ok = false;
    }
    return ok;
}

bool auth_add_origin(auth_conf *a, const char *origin) {
    if (!*origin) { fprintf(stderr, "specdec: --cors-origin: empty\n"); return false; }
    if (!push(&a->origins, &a->n_origins, origin, strlen(origin))) { fprintf(stderr, "specdec: out of memory\n"); return false; }
    return true;
}

bool auth_route_public(const auth_conf *a, const char *method, const char *url) {
    if (!strcmp(method, "OPTIONS")) return true;
    bool get = !strcmp(method, "GET") || !strcmp(method, "HEAD");
    if (!get) return false;
    if (!strcmp(url, "/") || !strcmp(url, "/index.html") || !strcmp(url, "/health") || !strcmp(url, "/v1/health"))
        return true;
    return a->metrics_public && !strcmp(url, "/metrics");
}

bool auth_equal_ct(const char *a, size_t na, const char *b, size_t nb) {
    if (na == 0) return false;
    /* Every byte of b is compared with a byte of a (cycled), so the work is nb
     * steps whatever a holds; a length difference is folded into the result. */
    uint64_t diff = (uint64_t)(na ^ nb);
    for (size_t i = 0; i < nb; i++) diff |= (unsigned char)(a[i % na] ^ b[i]);
    return diff == 0;
}

bool auth_check(const auth_conf *a, const char *authorization) {
    if (a->n_keys == 0) return true;
    if (!authorization || strncasecmp(authorization, "Bearer ", 7)) return false;
    const char *k = authorization + 7;
    while (*k == ' ') k++;
    size_t n = strlen(k);
    while (n > 0 && (k[n - 1] == ' ' || k[n - 1] == '\t')) n--;
    bool ok = false;
    for (size_t i = 0; i < a->n_keys; i++) ok |= auth_equal_ct(a->keys[i], strlen(a->keys[i]), k, n);
    return ok;
}

const char *auth_cors_origin(const auth_conf *a, const char *origin) {
    if (!origin || !*origin) return NULL;
    for (size_t i = 0; i < a->n_origins; i++) {
        if (!strcmp(a->origins[i], "*")) return "*";
        if (!strcmp(a->origins[i], origin)) return a->origins[i];
    }
    return NULL;
}
