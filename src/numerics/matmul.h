/* Batched matrix product against a weight matrix stored in any supported
 * ggml type: y[s][o] = sum_i W[o][i] * x[s][i] for s < S.
 *
 * Batch invariance (ARCHITECTURE.md §5): y[s][o] is bitwise the same whatever S is,
 * whatever the other rows of x hold, and whatever the thread count. Each
 * output element is reduced in one fixed order; SIMD paths reproduce the
 * scalar order exactly (parallelism runs across output rows, never across the
 * reduction). For quantized W the activation row is first quantized to 8-bit
 * blocks (per row, so independently of S) and blocks are dotted in integers. */
#ifndef SD_NUMERICS_MATMUL_H
#define SD_NUMERICS_MATMUL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"

/* A weight matrix of n_out rows of n_in elements (GGUF ne[0] = n_in,
 * ne[1] = n_out). data is borrowed (usually the GGUF mapping). The kernel may
 * keep a repacked copy (packed, packed_bytes) owned by the matrix. */
typedef struct sd_matrix {
    uint32_t type;
    int64_t n_in, n_out;
    const void *data;
    void *packed;
    size_t packed_bytes;
    int packed_isa; /* layout of packed: an sd_isa (numerics/cpu.h), chosen once at init */
} sd_matrix;

/* Checks type/shape (n_in % block == 0, type supported) and prepares the
 * kernel's layout. Supported: F32, F16, BF16, Q8_0, Q4_0, Q4_1, Q5_0, Q5_1,
 * Q4_K, Q5_K, Q6_K and the other types of quant/qtype_table.c. When the AVX2
 * kernels run, the quantized types are
 * repacked into 8-row tiles (numerics/kernels/x86/matmul_pack.c): a second copy of the
 * weights, 1.0x (Q8_0), 1.11x (Q4_0), 1.2x (Q4_1), 1.09x (Q5_0), 1.17x (Q5_1),
 * 1.03x (Q4_K), 1.05x (Q5_K), 1.01x (Q6_K), and for the grid types 4.4-4.6 bits
 * per weight: 2.1x (IQ2_XXS), 2.0x (IQ2_XS), 1.8x (IQ2_S), 1.43x (IQ3_XXS),
 * 1.27x (IQ3_S), 2.8x (IQ1_S), 2.6x (IQ1_M) of their GGUF bytes (the loader
 * gives the file's pages back as it goes, sd_matrix_opts); data is still
 * read by sd_matrix_get_row. Float weights are read in place. On the
 * AVX-512 path (sd_cpu_avx512) Q8_0, Q4_0, Q4_1, Q5_0, Q5_1, IQ4_NL, Q4_K,
 * Q5_K and Q6_K are repacked into 16-row tiles instead
 * (numerics/kernels/x86/matmul_pack_avx512.c: 1.00-1.03x of their GGUF bytes); the
 * layout is chosen once here, by the path in use (packed_isa).
 * Errors: SD_ERR_UNSUPPORTED, SD_ERR_FORMAT, SD_ERR_ARG (data NULL), SD_ERR_NOMEM. */
sd_status sd_matrix_init(sd_matrix *m, uint32_t type, int64_t n_in, int64_t n_out,
                         const void *data, sd_err *err);

/* Options of sd_matrix_init_opts (a NULL opts is all zero). */
typedef struct sd_matrix_opts {
    /* Keep no repacked copy: every product reads data in place (scalar
     * kernels). For a matrix only looked up by row, e.g. token_embd when it
     * is not also the lm head: a copy would only cost memory. */
    bool no_pack;
    /* When the repacked copy is made, it is made in slabs of rows (about
     * 4 MiB of data each), and after each slab packed_rows(ctx, rows) says
     * that rows [0, rows) of data are copied (rows grows to n_out), so the
     * caller can release the memory behind them (the loader gives the
     * file pages back, gguf_release) before the next slab is read. Not
     * called when no copy is made (no_pack, float types, scalar kernels);
     * data must then stay readable. The copy is the same with or without. */
    void (*packed_rows)(void *ctx, int64_t rows);
    void *ctx;
} sd_matrix_opts;

/* Bytes of the repacked copy sd_matrix_init would make for a matrix of this
 * type and shape on the kernel path in use; 0 when it makes none (float and
 * unknown types, a path that reads the GGUF layout, n_in not whole blocks).
 * For planning memory before a load: the grid types' tiles (IQ1/IQ2/IQ3) are
 * 1.3-2.8x their GGUF bytes, the other types about 1x. */
uint64_t sd_matrix_packed_size(uint32_t type, int64_t n_in, int64_t n_out);

/* sd_matrix_init with options (see sd_matrix_opts); same errors. */
sd_status sd_matrix_init_opts(sd_matrix *m, uint32_t type, int64_t n_in, int64_t n_out, const void *data,
                              const sd_matrix_opts *o, sd_err *err);
void sd_matrix_free(sd_matrix *m);

/* y[S][n_out] = x[S][n_in] * W^T, using n_threads OpenMP threads (static split
 * of 8-row output tiles). x and y must not alias. If the per-call activation
 * buffer (about S * n_in * 1.2 bytes) cannot be allocated, y is filled with NaN. */
void sd_matmul(const sd_matrix *m, const float *x, int S, float *y, int n_threads);

/* Several products of one input: ys[i][S][ms[i]->n_out] = x[S][n_in] * ms[i]^T
 * for n matrices of the same n_in (e.g. a layer's Q, K, V, or gate and up).
 * The activation rows are quantized once per activation block size and one
 * parallel region covers the output tiles of all n matrices (static split of
 * the concatenated tile list), instead of n regions that each wake the
 * threads. Every element is computed exactly as sd_matmul computes it. x and
 * the ys must not alias; on allocation failure every y is filled with NaN. */
void sd_matmul_multi(const sd_matrix *const *ms, int n, const float *x, int S, float *const *ys, int n_threads);

/* The most activation rows S for which the kernel of m reads its weights in
 * one streaming pass (the row group of the AVX2 tile kernels: 5 for Q8_0, 6
 * for Q4_K, 8 for the other quantized types, 4 for float weights; of the
 * AVX-512 ones: 12 for the 32-element types, 8 for the K-quants; 8 on the
 * scalar path). Up to it t(S) stays near t(1) on a memory-bound machine;
 * beyond it the cost grows with S. A planning hint only: results never
 * depend on how rows are grouped. */
int sd_matmul_pass_rows(const sd_matrix *m);

/* Dequantizes row r of m into out[n_in] (embedding lookup). */
void sd_matrix_get_row(const sd_matrix *m, int64_t r, float *out);

/* Which kernel family runs: sd_isa_name(sd_cpu_isa()), e.g. "avx512", "avx2"
 * or "scalar". SPECDEC_ISA / SD_FORCE_SCALAR=1 in the environment choose
 * (numerics/cpu.h). */
const char *sd_matmul_backend(void);

#endif
