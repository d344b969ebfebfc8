/* sd-dflash_init: writes a randomly initialised DFlash block drafter for a
 * target file, in llama.cpp's dflash GGUF layout (model/arch_dflash.c), with
 * the target's tokenizer: the drafter path runs before any draft is trained
 * (its proposals are random; the output stays the target's).
 *
 *   sd-dflash_init TARGET.gguf OUT.gguf [--block N] [--layers N] [--draft-vocab N]
 *                  [--mask-token ID] [--seed S]
 *
 * The writer is the tests' (tests/support/tiny_dflash.c). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dflash_writer.h"

static int usage(void) {
    fprintf(stderr, "usage: sd-dflash_init TARGET.gguf OUT.gguf [--block N] [--layers N] [--draft-vocab N] "
                    "[--mask-token ID] [--seed S]\n");
    return 2;
}

int main(int argc, char **argv) {
    if (argc < 3 || (argc - 3) % 2) return usage();
    tiny_dflash_spec sp = tiny_dflash_default(argv[1]);
    if (sp.n_target_layers == 0) {
        fprintf(stderr, "sd-dflash_init: %s: not a readable target model\n", argv[1]);
        return 1;
    }
    for (int i = 3; i < argc; i += 2) {
        char *end;
        long v = strtol(argv[i + 1], &end, 10);
        if (*end || v < 0 || v > 1000000) return usage();
        if (!strcmp(argv[i], "--block")) sp.block = (int32_t)v;
        else if (!strcmp(argv[i], "--layers")) sp.n_layer = (int32_t)v;
        else if (!strcmp(argv[i], "--draft-vocab")) sp.n_draft_vocab = (int32_t)v;
        else if (!strcmp(argv[i], "--mask-token")) sp.mask_token = (int32_t)v;
        else if (!strcmp(argv[i], "--seed")) sp.seed = (uint64_t)v;
        else return usage();
    }
    sd_err err = {0};
    if (tiny_dflash_write(argv[1], &sp, argv[2], &err) != SD_OK) {
        fprintf(stderr, "sd-dflash_init: %s\n", err.msg);
        return 1;
    }
    return 0;
}
