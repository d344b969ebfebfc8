/* libFuzzer target: read -> write -> read -> write. Whatever the reader
 * accepts, the writer must reproduce: the two readings agree on every key,
 * value and tensor, and the two writes are byte-identical.
 * Build and run: bash fuzz/run.sh SECONDS fuzz_gguf_roundtrip */
#include <stdint.h>
#include <stdlib.h>

#include "format/gguf.h"
#include "format/gguf_check.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    gguf_ctx *ctx = NULL;
    if (gguf_open_memory(size ? data : NULL, size, &ctx, NULL) != SD_OK) return 0;
    volatile uint64_t sum = gguf_walk(ctx);
    (void)sum;
    gguf_check_roundtrip(ctx);
    gguf_close(ctx);
    return 0;
}
