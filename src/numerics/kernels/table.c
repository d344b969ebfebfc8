/* The kernel table (kernels.h, docs/KERNELS.md): the rows this build
 * compiles, best first. The first usable row is the default path; a path
 * with two rows (neon-dot, neon) takes the first one the CPU runs. A new
 * instruction set is its row file plus one line here. */
#include "numerics/kernels/kernels.h"

#include <stddef.h>

extern const sd_kernels sd_kernels_avx2, sd_kernels_avx512, sd_kernels_neon, sd_kernels_neon_dot;

static const sd_kernels *const k_table[] = {
#if SD_X86
    &sd_kernels_avx512,
    &sd_kernels_avx2,
#endif
#if SD_ARM64
    &sd_kernels_neon_dot,
    &sd_kernels_neon,
#endif
    &sd_kernels_generic,
};

#define N_ROWS ((int)(sizeof k_table / sizeof k_table[0]))

const sd_kernels *const *sd_kernels_table(int *n) {
    *n = N_ROWS;
    return k_table;
}

const sd_kernels *sd_kernels_for(sd_isa isa) {
    for (int i = 0; i < N_ROWS; i++)
        if (k_table[i]->isa == isa && (!k_table[i]->usable || k_table[i]->usable())) return k_table[i];
    return NULL;
}

const sd_wlayout *sd_kernels_layout(const sd_kernels *k, int id) {
    for (const sd_wlayout *const *l = k->layouts; l && *l; l++)
        if ((*l)->id == id) return *l;
    return NULL;
}

const sd_wlayout *sd_wlayout_find(int id) {
    for (int i = 0; i < N_ROWS; i++) {
        const sd_wlayout *l = sd_kernels_layout(k_table[i], id);
        if (l) return l;
    }
    return NULL;
}
