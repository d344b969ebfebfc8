/* llama.cpp's importance-matrix files (tools/imatrix/imatrix.cpp writes
 * them, common/imatrix-loader.cpp reads them; read for the format, not
 * copied), in both forms:
 *  - GGUF: general.type "imatrix"; per matrix NAME an F32 tensor
 *    NAME.in_sum2 of ne0 x nmat (summed squared activations per column, per
 *    expert) and an F32 tensor NAME.counts of 1 x nmat (activation rows
 *    summed). The column mean is in_sum2 / count (1 where count is 0).
 *  - legacy .dat (little-endian): int32 n_entries, then per entry int32 len,
 *    len name bytes, int32 ncall, int32 nval, nval float32 (column means
 *    times ncall); then optionally int32 chunk count, int32 len and the
 *    dataset name. The column mean is value / ncall (the value if ncall <= 0).
 * Every value read must be finite and >= 0; sizes must fit the file. */
#ifndef SD_NUMERICS_QUANTIZE_IMATRIX_H
#define SD_NUMERICS_QUANTIZE_IMATRIX_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"

typedef struct sd_imatrix_entry {
    char *name;   /* the matrix's tensor name, NUL-terminated */
    int64_t n;    /* values: ne0 x nmat */
    int64_t nmat; /* experts (1 for a dense matrix; 1 in the legacy form) */
    float *mean;  /* n column means, expert-major */
} sd_imatrix_entry;

typedef struct sd_imatrix {
    int64_t n;
    sd_imatrix_entry *e;
    bool legacy;
} sd_imatrix;

/* Reads path in either form (GGUF magic decides). Errors: SD_ERR_IO,
 * SD_ERR_FORMAT (one line naming the problem: truncated, a bad count, a
 * non-finite or negative value, a sums tensor without counts, ...),
 * SD_ERR_NOMEM. *out is freed with sd_imatrix_free. */
sd_status sd_imatrix_load(const char *path, sd_imatrix **out, sd_err *err);

/* The entry of a tensor name, or NULL. */
const sd_imatrix_entry *sd_imatrix_find(const sd_imatrix *im, const char *name);

void sd_imatrix_free(sd_imatrix *im);

#endif
