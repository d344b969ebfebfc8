/* Text checks of the public API (include/specdec.h): UTF-8 validity, with the
 * tokenizer's own scanner, so a front end refuses exactly what it cannot
 * treat as text. */
#include "api/api_internal.h"
#include "tokenizer/utf8.h"

specdec_status specdec_utf8_check(const char *text, size_t len, specdec_error *err) {
    if (!text && len) return specdec_error_set(err, SPECDEC_ERR_ARG, "specdec_utf8_check: text is NULL");
    const uint8_t *s = (const uint8_t *)text;
    for (size_t i = 0, n = 0; i < len; i += n)
        if (sd_utf8_scan(s + i, len - i, &n) != SD_UTF8_CHAR)
            return specdec_error_set(err, SPECDEC_ERR_ARG, "not valid UTF-8 at byte %zu", i);
    return SPECDEC_OK;
}
