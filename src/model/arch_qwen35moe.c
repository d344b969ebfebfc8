/* qwen35moe (Qwen3.5-35B-A3B, Qwen3.6-35B-A3B, 122B-A10B, 397B-A17B): llama.cpp
 * src/models/qwen35moe.cpp; docs/MOE.md. The qwen35 hybrid (arch_qwen35.c:
 * Gated DeltaNet and gated attention layers, optional MTP block) whose every
 * FFN, the MTP block's included, is routed experts plus one shared expert
 * behind a per-token sigmoid gate (moe.h). */
#include "model/arch.h"
#include "model/moe.h"

static sd_status qwen35moe_hparams(sd_loader *L, sd_hparams *hp) {
    sd_status st = sd_moe_hparams(L, hp, true);
    return st == SD_OK ? sd_qwen35_hparams(L, hp) : st;
}

const sd_arch_def sd_arch_qwen35moe = {"qwen35moe", SD_ARCH_QWEN35MOE, qwen35moe_hparams, sd_qwen35_tensors, true, true};
