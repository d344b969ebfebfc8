#include "core/status.h"

#include <stdio.h>
#include <string.h>

sd_status sd_err_set(sd_err *err, sd_status code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
    }
    return code;
}

void sd_err_prefix(sd_err *err, const char *fmt, ...) {
    if (!err) return;
    char prefix[256], old[sizeof err->msg];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(prefix, sizeof prefix, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    /* Assemble by hand: the message is cut to fit msg, on purpose. */
    size_t cap = sizeof err->msg, n = 0;
    for (const char *parts[] = {prefix, ": ", old}, **p = parts; p < parts + 3; p++)
        for (const char *c = *p; *c && n + 1 < cap; c++) err->msg[n++] = *c;
    err->msg[n] = 0;
}

const char *sd_status_name(sd_status code) {
    switch (code) {
    case SD_OK: return "ok";
    case SD_ERR_IO: return "i/o error";
    case SD_ERR_FORMAT: return "format error";
    case SD_ERR_NOMEM: return "out of memory";
    case SD_ERR_UNSUPPORTED: return "unsupported";
    case SD_ERR_CONTEXT: return "context full";
    case SD_ERR_ARG: return "invalid argument";
    case SD_ERR_VOCAB: return "vocabulary mismatch";
    case SD_ERR_MISMATCH: return "lossless check failed";
    }
    return "unknown error";
}
