/* SDOT build of the NEON integer dots (matmul_neon.h) and the quantized
 * matmul of the neon-dot row on them; this file alone is compiled with
 * +dotprod (CMakeLists.txt) and runs only through the neon-dot row, which the
 * table takes only where the CPU has the dot-product instructions. */
#include <arm_neon.h>

#include "numerics/kernels/arm/matmul_neon.h"

void sd_neon_sub_dots_sdot(const int8_t *w, const int8_t *x, int n, int sub, int32_t *out) {
    for (int j = 0; j < n / sub; j++, w += sub, x += sub) {
        int32x4_t acc = vdupq_n_s32(0);
        for (int i = 0; i < sub; i += 16) acc = vdotq_s32(acc, vld1q_s8(w + i), vld1q_s8(x + i));
        out[j] = vaddvq_s32(acc);
    }
}

void sd_matmul_neon_quant_dot(const sd_matrix *m, const sd_act *a, float *y, int64_t o0, int64_t o1) {
    sd_matmul_neon_quant_with(m, a, y, o0, o1, sd_neon_sub_dots_sdot);
}
