/* libFuzzer target: gguf_open_memory on arbitrary bytes, then every accessor
 * over everything an accepted file hands out (tests/format/gguf_check.h).
 * Build and run: bash fuzz/run.sh SECONDS fuzz_gguf */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "format/gguf.h"
#include "format/gguf_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gguf_ctx *ctx = NULL;
    sd_err err = {0};
    sd_status st = gguf_open_memory(size ? data : NULL, size, &ctx, &err);
    if (st != SD_OK) {
        /* a refusal is one non-empty line and no context */
        GGUF_CHECK(ctx == NULL && err.code == st && err.msg[0] && !strchr(err.msg, '\n'));
        return 0;
    }
    volatile uint64_t sum = gguf_walk(ctx);
    (void)sum;
    gguf_close(ctx);
    return 0;
}
