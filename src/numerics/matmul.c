/* Batched matmul: type checks, the repacked copy, threads and dispatch
 * between the scalar reference (matmul_ref.c) and AVX2 (matmul_avx2.c).
 * Threads split output rows in fixed tiles of SD_TILE rows, so which thread
 * computes an element never changes how it is computed. */
#include "numerics/matmul.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "numerics/cpu.h"
#include "numerics/matmul_impl.h"
#include "numerics/quant.h"

sd_status sd_matrix_init(sd_matrix *m, uint32_t type, int64_t n_in, int64_t n_out, const void *data,
                         sd_err *err) {
    memset(m, 0, sizeof *m);
    const sd_wtype *wt = sd_wtype_get(type);
    if (!wt) return sd_err_set(err, SD_ERR_UNSUPPORTED, "matmul: weight type %u is not supported", type);
    if (n_in <= 0 || n_out <= 0 || n_in > INT32_MAX || n_out > INT32_MAX)
        return sd_err_set(err, SD_ERR_FORMAT, "matmul: bad shape %lld x %lld", (long long)n_out, (long long)n_in);
    if (n_in % wt->block != 0)
        return sd_err_set(err, SD_ERR_FORMAT, "matmul: row length %lld is not a multiple of the block size %d",
                          (long long)n_in, wt->block);
    if (!data) return sd_err_set(err, SD_ERR_ARG, "matmul: no weight data");
    m->type = type;
    m->n_in = n_in;
    m->n_out = n_out;
    m->data = data;
    if (wt->packed_bytes == 0) return SD_OK;
    /* The AVX2 copy: (n_out rounded up to 8) x (n_in / block) chunks. */
    uint64_t n_tiles = ((uint64_t)n_out + SD_TILE - 1) / SD_TILE, bytes;
    if (!sd_mul_u64(n_tiles, (uint64_t)(n_in / wt->block), &bytes) ||
        !sd_mul_u64(bytes, (uint64_t)wt->packed_bytes, &bytes) || bytes > SIZE_MAX)
        return sd_err_set(err, SD_ERR_NOMEM, "matmul: repacked weights too large");
    if (!sd_cpu_avx2()) return SD_OK; /* scalar runs read the GGUF layout */
    m->packed = aligned_alloc(32, ((size_t)bytes + 31) & ~(size_t)31);
    if (!m->packed) return sd_err_set(err, SD_ERR_NOMEM, "matmul: out of memory repacking %llu bytes",
                                      (unsigned long long)bytes);
    m->packed_bytes = (size_t)bytes;
    sd_matmul_pack(m, m->packed);
    return SD_OK;
}

void sd_matrix_free(sd_matrix *m) {
    free(m->packed);
    memset(m, 0, sizeof *m);
}

void sd_matrix_get_row(const sd_matrix *m, int64_t r, float *out) {
    const sd_wtype *wt = sd_wtype_get(m->type);
    size_t row_bytes = (size_t)(m->n_in / wt->block) * (size_t)wt->block_bytes;
    const uint8_t *row = (const uint8_t *)m->data + (size_t)r * row_bytes;
    if (m->type == GGML_TYPE_F32) {
        memcpy(out, row, (size_t)m->n_in * sizeof(float));
        return;
    }
    sd_dequantize_row(m->type, row, out, m->n_in);
}

const char *sd_matmul_backend(void) { return sd_cpu_avx2() ? "avx2" : "scalar"; }

static void fill_nan(float *y, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = NAN;
}

void sd_matmul(const sd_matrix *m, const float *x, int S, float *y, int n_threads) {
    if (S <= 0) return;
    const sd_wtype *wt = sd_wtype_get(m->type);
    int nt = n_threads > 0 ? n_threads : 1;
    /* AVX2 needs the repacked copy; a matrix set up while scalar was forced has none. */
    bool avx2 = sd_cpu_avx2() && (wt->packed_bytes == 0 || m->packed);
    int64_t n_tiles = (m->n_out + SD_TILE - 1) / SD_TILE;
    if (wt->block == 1) {
#pragma omp parallel for schedule(static) num_threads(nt) if (nt > 1)
        for (int64_t t = 0; t < n_tiles; t++) {
            int64_t o0 = t * SD_TILE, o1 = o0 + SD_TILE < m->n_out ? o0 + SD_TILE : m->n_out;
            if (avx2) sd_matmul_avx2_float_rows(m, x, S, y, o0, o1);
            else sd_matmul_ref_float(m, x, S, y, o0, o1);
        }
        return;
    }
    sd_act a;
    if (!sd_act_init(&a, m->n_in, S, wt->act256 ? SD_QK_K : SD_QK)) {
        fill_nan(y, (size_t)S * (size_t)m->n_out); /* documented: no memory, no result */
        return;
    }
    bool tiled = avx2 && wt->packed_bytes != 0, simd_act = sd_cpu_avx2();
    /* One parallel region: quantize the S activation rows (split over threads),
     * then the output tiles. Each activation row is quantized by one thread in
     * one fixed way, so the split changes nothing. */
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
#pragma omp for schedule(static)
        for (int s = 0; s < S; s++) {
            if (simd_act) sd_act_quantize_row_avx2(&a, s, x + (size_t)s * m->n_in);
            else sd_act_quantize_row(&a, s, x + (size_t)s * m->n_in);
        }
#pragma omp for schedule(static)
        for (int64_t t = 0; t < n_tiles; t++) {
            if (tiled) {
                sd_matmul_avx2_tile(m, &a, y, t);
            } else {
                int64_t o0 = t * SD_TILE, o1 = o0 + SD_TILE < m->n_out ? o0 + SD_TILE : m->n_out;
                sd_matmul_ref_quant(m, &a, y, o0, o1);
            }
        }
    }
    sd_act_free(&a);
}
