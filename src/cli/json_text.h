/* Text into JSON for the command line's --json output: jansson refuses a
 * string that is not valid UTF-8, and file metadata and token pieces need
 * not be. */
#ifndef SD_CLI_JSON_TEXT_H
#define SD_CLI_JSON_TEXT_H

#include <jansson.h>
#include <stddef.h>

/* s[0..n) as a JSON string, each byte that does not start a valid UTF-8
 * character (specdec_utf8_char_len) as U+FFFD; NULL when out of memory. */
json_t *cli_json_text(const char *s, size_t n);

#endif
