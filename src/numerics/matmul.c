/* Batched matmul: type checks, the repacked copy, threads and dispatch
 * between the scalar reference (matmul_ref.c), AVX2 (matmul_avx2.c) and
 * AVX-512 VNNI (matmul_avx512.c) on x86, NEON (matmul_neon.c, on the GGUF
 * layout) on aarch64. Threads split output rows in fixed tiles
 * (8 rows, 16 in the AVX-512 layout), so which thread computes an element
 * never changes how it is computed. */
#include "numerics/matmul.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "numerics/cpu.h"
#include "numerics/kernels/matmul_impl.h"
#include "numerics/quant.h"

#if SD_X86
#define SD_HAVE_AVX512 1 /* matmul_avx512.c is built (x86 only) */
#endif

/* Output rows per tile of m: 16 in the AVX-512 layout, else 8. */
static int tile_rows(const sd_matrix *m) { return m->packed_isa == SD_ISA_AVX512 ? SD_TILE16 : SD_TILE; }

/* Rows per packing slab: about 4 MiB of source weights (at least one tile), so
 * the caller can give each slab's file pages back before the next is read. */
static int64_t slab_tiles(size_t row_bytes, int rows) {
    int64_t t = (int64_t)((4u << 20) / ((size_t)rows * row_bytes));
    return t > 0 ? t : 1;
}

static void pack_tiles(sd_matrix *m, int64_t t0, int64_t t1) {
#ifdef SD_HAVE_AVX512
    if (m->packed_isa == SD_ISA_AVX512) {
        sd_avx512_pack(m, m->packed, t0, t1);
        return;
    }
#endif
#if SD_X86 /* kernels/x86/matmul_pack.c; no other path packs */
    sd_matmul_pack(m, m->packed, t0, t1);
#else
    (void)m, (void)t0, (void)t1;
#endif
}

static void pack_slabs(sd_matrix *m, const sd_wtype *wt, const sd_matrix_opts *o) {
    int rows = tile_rows(m);
    int64_t n_tiles = (m->n_out + rows - 1) / rows;
    size_t row_bytes = (size_t)(m->n_in / wt->block) * (size_t)wt->block_bytes;
    int64_t step = o && o->packed_rows ? slab_tiles(row_bytes, rows) : n_tiles;
    for (int64_t t0 = 0; t0 < n_tiles; t0 += step) {
        int64_t t1 = t0 + step < n_tiles ? t0 + step : n_tiles;
        pack_tiles(m, t0, t1);
        if (o && o->packed_rows) o->packed_rows(o->ctx, t1 * rows < m->n_out ? t1 * rows : m->n_out);
    }
}

/* Bytes of the repacked copy in the layout of isa (0: overflow). */
static uint64_t packed_size(const sd_matrix *m, const sd_wtype *wt, int isa) {
    uint64_t nb = (uint64_t)(m->n_in / wt->block), bytes;
#ifdef SD_HAVE_AVX512
    if (isa == SD_ISA_AVX512) {
        uint64_t tiles = ((uint64_t)m->n_out + SD_TILE16 - 1) / SD_TILE16;
        if (!sd_mul_u64(tiles, (uint64_t)sd_avx512_tile_bytes(m->type, (int64_t)nb), &bytes)) return 0;
        return bytes;
    }
#endif
    (void)isa;
    uint64_t n_tiles = ((uint64_t)m->n_out + SD_TILE - 1) / SD_TILE;
    if (!sd_mul_u64(n_tiles, nb, &bytes) || !sd_mul_u64(bytes, (uint64_t)wt->packed_bytes, &bytes)) return 0;
    return bytes;
}

/* The layout the kernels in use read: AVX-512 where it has a kernel for the
 * type, else AVX2's; none on the scalar path. */
static int choose_layout(uint32_t type) {
#ifdef SD_HAVE_AVX512
    int ib, sb;
    if (sd_cpu_avx512() && sd_avx512_layout(type, &ib, &sb)) return SD_ISA_AVX512;
#else
    (void)type;
#endif
    return sd_cpu_avx2() ? SD_ISA_AVX2 : SD_ISA_SCALAR;
}

sd_status sd_matrix_init(sd_matrix *m, uint32_t type, int64_t n_in, int64_t n_out, const void *data,
                         sd_err *err) {
    return sd_matrix_init_opts(m, type, n_in, n_out, data, NULL, err);
}

sd_status sd_matrix_init_opts(sd_matrix *m, uint32_t type, int64_t n_in, int64_t n_out, const void *data,
                              const sd_matrix_opts *o, sd_err *err) {
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
    m->packed_isa = SD_ISA_SCALAR;
    if (wt->packed_bytes == 0 || (o && o->no_pack)) return SD_OK;
    int isa = choose_layout(type);
    if (isa == SD_ISA_SCALAR) return SD_OK; /* scalar runs read the GGUF layout */
    uint64_t bytes = packed_size(m, wt, isa);
    if (bytes == 0 || bytes > SIZE_MAX - 63) return sd_err_set(err, SD_ERR_NOMEM, "matmul: repacked weights too large");
    m->packed = aligned_alloc(64, ((size_t)bytes + 63) & ~(size_t)63);
    if (!m->packed) return sd_err_set(err, SD_ERR_NOMEM, "matmul: out of memory repacking %llu bytes",
                                      (unsigned long long)bytes);
    m->packed_bytes = (size_t)bytes;
    m->packed_isa = isa;
    pack_slabs(m, wt, o);
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

int sd_matmul_pass_rows(const sd_matrix *m) {
#ifdef SD_HAVE_AVX512
    if (m->packed && m->packed_isa == SD_ISA_AVX512 && sd_cpu_avx512()) return sd_matmul_avx512_pass_rows(m->type);
#endif
#if SD_X86
    if (sd_cpu_avx2()) return sd_matmul_avx2_pass_rows(m->type);
#endif
    (void)m;
    return 8;
}

const char *sd_matmul_backend(void) { return sd_isa_name(sd_cpu_isa()); }

static void fill_nan(float *y, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = NAN;
}

/* The output tiles of one call: matrix i owns global tiles [first[i], first[i+1]). */
#define MULTI_MAX 8

/* Tile t of matrix m: rows [rt, rt+r) of y for all S rows (r = tile_rows).
 * A matrix packed for another path than the one in use (a test switched the
 * ISA after loading) runs the reference, which reads the GGUF bytes. */
static void run_tile(const sd_matrix *m, const sd_wtype *wt, const sd_act *a, const float *x, int S, float *y,
                     int64_t t, sd_isa isa) {
    int rows = tile_rows(m);
    int64_t o0 = t * rows, o1 = o0 + rows < m->n_out ? o0 + rows : m->n_out;
    const bool avx2 = isa == SD_ISA_AVX2 || isa == SD_ISA_AVX512;
#if SD_X86
    if (wt->block == 1 && avx2) {
        sd_matmul_avx2_float_rows(m, x, S, y, o0, o1);
        return;
    }
    if (wt->block != 1 && m->packed && m->packed_isa == SD_ISA_AVX512 && isa == SD_ISA_AVX512) {
        sd_matmul_avx512_tile(m, a, y, t);
        return;
    }
    if (wt->block != 1 && avx2 && m->packed && m->packed_isa == SD_ISA_AVX2) {
        sd_matmul_avx2_tile(m, wt, a, y, t);
        return;
    }
#endif
#if SD_ARM64
    if (isa == SD_ISA_NEON) {
        if (wt->block == 1) sd_matmul_neon_float(m, x, S, y, o0, o1);
        else sd_matmul_neon_quant(m, a, y, o0, o1);
        return;
    }
#endif
    (void)avx2;
    if (wt->block == 1) sd_matmul_ref_float(m, x, S, y, o0, o1);
    else sd_matmul_ref_quant(m, a, y, o0, o1);
}

/* Row s of the activations, quantized by the build in use (all agree bitwise). */
static void quantize_row(sd_act *a, int s, const float *x, sd_isa isa) {
#if SD_X86
    if (isa == SD_ISA_AVX2 || isa == SD_ISA_AVX512) {
        sd_act_quantize_row_avx2(a, s, x);
        return;
    }
#endif
#if SD_ARM64
    if (isa == SD_ISA_NEON) {
        sd_act_quantize_row_neon(a, s, x);
        return;
    }
#endif
    (void)isa;
    sd_act_quantize_row(a, s, x);
}

void sd_matmul_multi(const sd_matrix *const *ms, int n, const float *x, int S, float *const *ys, int n_threads) {
    if (S <= 0 || n <= 0) return;
    if (n > MULTI_MAX) { /* not used so large; keep the fixed arrays below bounded */
        for (int i = 0; i < n; i += MULTI_MAX)
            sd_matmul_multi(ms + i, n - i < MULTI_MAX ? n - i : MULTI_MAX, x, S, ys + i, n_threads);
        return;
    }
    const int nt = n_threads > 0 ? n_threads : 1;
    const sd_isa isa = sd_cpu_isa();
    /* One quantized copy of x per activation block size in use: [0] 32, [1] 256. */
    sd_act act[2];
    bool need[2] = {false, false}, ok = true;
    int64_t first[MULTI_MAX + 1];
    const sd_wtype *wts[MULTI_MAX]; /* looked up once per call, not per tile */
    first[0] = 0;
    for (int i = 0; i < n; i++) {
        const sd_wtype *wt = wts[i] = sd_wtype_get(ms[i]->type);
        if (wt->block != 1) need[wt->act256] = true;
        first[i + 1] = first[i] + (ms[i]->n_out + tile_rows(ms[i]) - 1) / tile_rows(ms[i]);
    }
    for (int k = 0; k < 2; k++)
        if (need[k] && !sd_act_init(&act[k], ms[0]->n_in, S, k ? SD_QK_K : SD_QK)) {
            for (int j = 0; j < k; j++)
                if (need[j]) sd_act_free(&act[j]);
            ok = false;
            break;
        }
    if (!ok) { /* documented: no memory, no result */
        for (int i = 0; i < n; i++) fill_nan(ys[i], (size_t)S * (size_t)ms[i]->n_out);
        return;
    }
    const int64_t n_tiles = first[n];
    /* One parallel region: quantize the S activation rows (split over threads),
     * then the output tiles of all matrices. Each activation row is quantized
     * by one thread in one fixed way, so the split changes nothing. */
#pragma omp parallel num_threads(nt) if (nt > 1)
    {
        for (int k = 0; k < 2; k++) {
            if (!need[k]) continue;
#pragma omp for schedule(static)
            for (int s = 0; s < S; s++) {
                quantize_row(&act[k], s, x + (size_t)s * ms[0]->n_in, isa);
            }
        }
#pragma omp for schedule(static)
        for (int64_t g = 0; g < n_tiles; g++) {
            int i = 0;
            while (g >= first[i + 1]) i++;
            const sd_wtype *wt = wts[i];
            run_tile(ms[i], wt, wt->block == 1 ? NULL : &act[wt->act256], x, S, ys[i], g - first[i], isa);
        }
    }
    for (int k = 0; k < 2; k++)
        if (need[k]) sd_act_free(&act[k]);
}

void sd_matmul(const sd_matrix *m, const float *x, int S, float *y, int n_threads) {
    sd_matmul_multi(&m, 1, x, S, &y, n_threads);
}
