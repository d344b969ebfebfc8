/* Batched matmul: type checks, the repacked copy, threads, and the kernels
 * of the kernel table's row in use (kernels/kernels.h): its activation
 * quantizer, its float kernel, and per quantized matrix either the tile
 * kernel of the matrix's repacked layout when the row reads that layout, or
 * the row's kernel on the GGUF layout. Threads split output rows in fixed
 * tiles (the layout's tile rows, else 8), so which thread computes an
 * element never changes how it is computed. */
#include "numerics/matmul.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "numerics/kernels/kernels.h"
#include "numerics/quant.h"

/* Output rows per tile of m: its layout's, else 8. */
static int tile_rows(const sd_matrix *m) {
    const sd_wlayout *l = m->packed ? sd_wlayout_find(m->packed_isa) : NULL;
    return l ? l->tile_rows : SD_TILE;
}

/* Rows per packing slab: about 4 MiB of source weights (at least one tile), so
 * the caller can give each slab's file pages back before the next is read. */
static int64_t slab_tiles(size_t row_bytes, int rows) {
    int64_t t = (int64_t)((4u << 20) / ((size_t)rows * row_bytes));
    return t > 0 ? t : 1;
}

static void pack_tiles(sd_matrix *m, int64_t t0, int64_t t1) {
    sd_wlayout_find(m->packed_isa)->pack(m, m->packed, t0, t1);
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

/* The layout the row in use reads for this type: its first that holds it;
 * NULL (read in place) when it reads none. */
static const sd_wlayout *choose_layout(uint32_t type) {
    for (const sd_wlayout *const *l = sd_kernels_active()->layouts; l && *l; l++)
        if ((*l)->has_type(type)) return *l;
    return NULL;
}

uint64_t sd_matrix_packed_size(uint32_t type, int64_t n_in, int64_t n_out) {
    const sd_wtype *wt = sd_wtype_get(type);
    if (!wt || wt->packed_bytes == 0 || n_in <= 0 || n_out <= 0 || n_in % wt->block) return 0;
    const sd_wlayout *layout = choose_layout(type);
    if (!layout) return 0;
    sd_matrix m = {.type = type, .n_in = n_in, .n_out = n_out};
    return layout->packed_size(&m, wt);
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
    const sd_wlayout *layout = choose_layout(type);
    if (!layout) return SD_OK; /* the row reads the GGUF layout */
    uint64_t bytes = layout->packed_size(m, wt);
    if (bytes == 0 || bytes > SIZE_MAX - 63) return sd_err_set(err, SD_ERR_NOMEM, "matmul: repacked weights too large");
    m->packed = aligned_alloc(64, ((size_t)bytes + 63) & ~(size_t)63);
    if (!m->packed) return sd_err_set(err, SD_ERR_NOMEM, "matmul: out of memory repacking %llu bytes",
                                      (unsigned long long)bytes);
    m->packed_bytes = (size_t)bytes;
    m->packed_isa = layout->id;
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
    const sd_kernels *k = sd_kernels_active();
    const sd_wlayout *l = m->packed ? sd_kernels_layout(k, m->packed_isa) : NULL;
    return l ? l->pass_rows(m->type) : k->pass_rows(m->type);
}

const char *sd_matmul_backend(void) { return sd_isa_name(sd_kernels_active()->isa); }

static void fill_nan(float *y, size_t n) {
    for (size_t i = 0; i < n; i++) y[i] = NAN;
}

/* The output tiles of one call: matrix i owns global tiles [first[i], first[i+1]). */
#define MULTI_MAX 8

/* Tile t of matrix m: rows [rt, rt+r) of y for all S rows (r = tile_rows).
 * A matrix packed in a layout the row in use does not read (a test switched
 * the ISA after loading) runs the row's kernel on the GGUF bytes. */
static void run_tile(const sd_kernels *k, const sd_matrix *m, const sd_wtype *wt, const sd_act *a, const float *x,
                     int S, float *y, int64_t t) {
    const sd_wlayout *l = m->packed ? sd_kernels_layout(k, m->packed_isa) : NULL;
    int rows = l ? l->tile_rows : tile_rows(m);
    int64_t o0 = t * rows, o1 = o0 + rows < m->n_out ? o0 + rows : m->n_out;
    if (wt->block == 1) k->matmul_float(m, x, S, y, o0, o1);
    else if (l) l->tile(m, wt, a, y, t);
    else k->matmul_quant(m, a, y, o0, o1);
}

void sd_matmul_multi(const sd_matrix *const *ms, int n, const float *x, int S, float *const *ys, int n_threads) {
    if (S <= 0 || n <= 0) return;
    if (n > MULTI_MAX) { /* not used so large; keep the fixed arrays below bounded */
        for (int i = 0; i < n; i += MULTI_MAX)
            sd_matmul_multi(ms + i, n - i < MULTI_MAX ? n - i : MULTI_MAX, x, S, ys + i, n_threads);
        return;
    }
    const int nt = n_threads > 0 ? n_threads : 1;
    const sd_kernels *k = sd_kernels_active();
    /* One quantized copy of x per activation block size in use: [0] 32, [1] 256. */
    sd_act act[2];
    bool need[2] = {false, false}, ok = true;
    int64_t first[MULTI_MAX + 1];
    const sd_wtype *wts[MULTI_MAX]; /* looked up once per call, not per tile */
    first[0] = 0;
    for (int i = 0; i < n; i++) {
        const sd_wtype *wt = wts[i] = sd_wtype_get(ms[i]->type);
        if (wt->block != 1) need[wt->act256] = true;
        const int rows = tile_rows(ms[i]); /* looks the layout up: once */
        first[i + 1] = first[i] + (ms[i]->n_out + rows - 1) / rows;
    }
    for (int b = 0; b < 2; b++)
        if (need[b] && !sd_act_init(&act[b], ms[0]->n_in, S, b ? SD_QK_K : SD_QK)) {
            for (int j = 0; j < b; j++)
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
        for (int b = 0; b < 2; b++) {
            if (!need[b]) continue;
#pragma omp for schedule(static)
            for (int s = 0; s < S; s++) {
                k->act_quantize_row(&act[b], s, x + (size_t)s * ms[0]->n_in);
            }
        }
#pragma omp for schedule(static)
        for (int64_t g = 0; g < n_tiles; g++) {
            int i = 0;
            while (g >= first[i + 1]) i++;
            const sd_wtype *wt = wts[i];
            run_tile(k, ms[i], wt, wt->block == 1 ? NULL : &act[wt->act256], x, S, ys[i], g - first[i]);
        }
    }
    for (int b = 0; b < 2; b++)
        if (need[b]) sd_act_free(&act[b]);
}

void sd_matmul(const sd_matrix *m, const float *x, int S, float *y, int n_threads) {
    sd_matmul_multi(&m, 1, x, S, &y, n_threads);
}
