/* The table of architectures this engine runs (general.architecture values,
 * llama.cpp src/llama-arch.cpp LLM_ARCH_NAMES). */
#include "model/arch.h"

#include <string.h>

static const sd_arch_def *const sd_archs[] = {&sd_arch_llama, &sd_arch_qwen2, &sd_arch_qwen3, &sd_arch_qwen35, &sd_arch_eagle3,
                                            &sd_arch_qwen3moe, &sd_arch_qwen35moe, &sd_arch_dflash};

const sd_arch_def *sd_arch_find(const char *name) {
    for (size_t i = 0; i < sizeof sd_archs / sizeof sd_archs[0]; i++)
        if (strcmp(sd_archs[i]->name, name) == 0) return sd_archs[i];
    return NULL;
}
