/* Status codes and error messages shared by every layer.
 *
 * Library code never exits or prints: a failing function returns an sd_status
 * and, when the caller passed a non-NULL sd_err, writes one line saying what
 * went wrong (no trailing newline). The CLI prints that line and exits non-zero. */
#ifndef SD_CORE_STATUS_H
#define SD_CORE_STATUS_H

#include <stdarg.h>

typedef enum sd_status {
    SD_OK = 0,
    SD_ERR_IO,          /* open/read/write/mmap failed */
    SD_ERR_FORMAT,      /* malformed or hostile file contents */
    SD_ERR_NOMEM,       /* allocation failed or a size overflowed */
    SD_ERR_UNSUPPORTED, /* valid but not supported: unknown arch, tensor type, tokenizer */
    SD_ERR_CONTEXT,     /* a batch would pass the context size n_ctx */
    SD_ERR_ARG,         /* invalid argument from the caller */
    SD_ERR_VOCAB,       /* draft and target vocabularies differ */
    SD_ERR_MISMATCH,    /* lossless check failed */
} sd_status;

/* One error: the code and a one-line human-readable message. */
typedef struct sd_err {
    sd_status code;
    char msg[512];
} sd_err;

/* Sets err (if non-NULL) to code and a printf-formatted message; returns code,
 * so callers can write `return sd_err_set(err, SD_ERR_FORMAT, "...")`. */
sd_status sd_err_set(sd_err *err, sd_status code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* Prefixes err->msg with "prefix: " (e.g. a file name); keeps the code. */
void sd_err_prefix(sd_err *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Short name of a status code, e.g. "format error". Static storage. */
const char *sd_status_name(sd_status code);

#endif
