/* Used by sd-dflash_init and the DFlash tests: writes a DFlash block drafter (general.architecture
 * "dflash", llama.cpp's layout: model/arch_dflash.c) with random f32 weights
 * for a given target file, whose tokenizer it copies, so the dflash drafter
 * path is tested without a trained draft. Same spec -> byte-identical file. */
#ifndef SD_TOOLS_DFLASH_WRITER_H
#define SD_TOOLS_DFLASH_WRITER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"

typedef struct tiny_dflash_spec {
    int32_t n_layer, n_head, n_head_kv, head_dim, n_ff;
    int32_t n_embd;            /* 0: the target's (another value: a misfit for the refusal tests) */
    int32_t block;             /* dflash.block_size; < 0: the key is left out */
    int32_t target_layers[12]; /* dflash.target_layers */
    int n_target_layers;
    int32_t n_draft_vocab;     /* > 0: d2t of that many ids (every third target id) and output.weight */
    bool own_output;           /* output.weight of the full vocabulary (else the target's head) */
    int32_t mask_token;        /* tokenizer.ggml.mask_token_id; < 0: left out */
    uint64_t seed;
} tiny_dflash_spec;

/* A one-layer draft for the target file: 4 heads (2 KV) of 32, n_ff 256,
 * block 8, target layers {1, n_layer - 1, n_layer} of the target's trunk
 * (fewer when it has fewer layers), mask token 0, borrowed head, seed 1. */
tiny_dflash_spec tiny_dflash_default(const char *target_path);

/* Writes the draft to path. Errors: the target cannot be read, SD_ERR_IO,
 * SD_ERR_NOMEM. */
sd_status tiny_dflash_write(const char *target_path, const tiny_dflash_spec *sp, const char *path, sd_err *err);

#endif
