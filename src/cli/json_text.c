#include "cli/json_text.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "specdec.h"

json_t *cli_json_text(const char *s, size_t n) {
    json_t *j = json_stringn(s, n);
    if (j) return j;
    char *clean = n <= (SIZE_MAX - 1) / 3 ? malloc(n * 3 + 1) : NULL;
    if (!clean) return NULL;
    size_t o = 0;
    for (size_t k = 0; k < n;) {
        size_t l = specdec_utf8_char_len(s + k, n - k);
        if (l) memcpy(clean + o, s + k, l), o += l, k += l;
        else memcpy(clean + o, "\xef\xbf\xbd", 3), o += 3, k++;
    }
    j = json_stringn(clean, o);
    free(clean);
    return j;
}
