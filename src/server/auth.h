/* Who may use the server: API keys (Authorization: Bearer KEY) and the
 * browser origins allowed to call it cross-origin (CORS). docs/SECURITY.md
 * says which routes are public and why. */
#ifndef SD_SERVER_AUTH_H
#define SD_SERVER_AUTH_H

#include <stdbool.h>
#include <stddef.h>

/* The keys and origins of --api-key / --api-key-file / --cors-origin. Strings
 * are owned (malloc'd) and live as long as the server. */
typedef struct auth_conf {
    char **keys;
    size_t n_keys;
    char **origins;
    size_t n_origins;
    bool metrics_public; /* --metrics-public: GET /metrics needs no key */
} auth_conf;

/* Adds one key (copied). False, with a one-line message on stderr, for an
 * empty key, one with whitespace or control bytes (it could not be sent in a
 * header as typed), or out of memory. The key itself is never printed. */
bool auth_add_key(auth_conf *a, const char *key, const char *where);
/* Reads keys from path: one per line, surrounding blanks trimmed, blank lines
 * and lines starting with '#' skipped. False (message on stderr) when the file
 * cannot be read, a line is not a valid key, or it holds no key at all. */
bool auth_add_key_file(auth_conf *a, const char *path);
/* Adds an allowed origin ("https://app.example:8443", or "*" for any); copied. */
bool auth_add_origin(auth_conf *a, const char *origin);

/* Whether a request for (method, url) may go without a key: the health
 * check, the chat page, CORS preflights, /metrics with --metrics-public. */
bool auth_route_public(const auth_conf *a, const char *method, const char *url);
/* Whether the Authorization header value carries a configured key ("Bearer
 * KEY", scheme case-insensitive). Always true when no key is configured. The
 * comparison takes the same time whichever key, or which byte of it, differs. */
bool auth_check(const auth_conf *a, const char *authorization);
/* The origin to echo in Access-Control-Allow-Origin for a request's Origin
 * header, or NULL when that origin is not allowed (or there is none). */
const char *auth_cors_origin(const auth_conf *a, const char *origin);

/* Equality of two byte strings in time that depends only on the length of b
 * (the presented key), not on where they differ nor on a's length. */
bool auth_equal_ct(const char *a, size_t na, const char *b, size_t nb);

#endif
