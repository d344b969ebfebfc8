/* Internal: the kernel table (docs/KERNELS.md). One row, an sd_kernels, per
 * instruction-set build: generic (portable C, the reference every other row
 * reproduces bit for bit, ARCHITECTURE.md §5), avx2, avx512, neon, neon-dot. The
 * public entry points (ops.h, gdn.h, matmul.h) call the row in use,
 * sd_kernels_active(); which row that is was chosen once, from CPUID / HWCAP
 * and SPECDEC_ISA (numerics/cpu.c), and only a test or --isa changes it.
 * Outside this table nothing asks which instruction set runs.
 *
 * Every field of a row is set (tests/numerics/test_kernels.c checks it): a
 * row without its own build of a kernel names the generic one, or another
 * row's (avx512 runs the avx2 row ops). */
#ifndef SD_NUMERICS_KERNELS_KERNELS_H
#define SD_NUMERICS_KERNELS_KERNELS_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "numerics/cpu.h"
#include "numerics/kernels/matmul_impl.h"

/* A repacked weight layout: the tiles one row's matmul kernels read
 * (matmul.h, sd_matrix.packed). id is what sd_matrix.packed_isa stores: the
 * sd_isa of the row that defined the layout; a matrix keeps its layout when a
 * test switches rows, and a row that does not list the layout reads the GGUF
 * bytes instead (matmul_quant). */
typedef struct sd_wlayout {
    int id;
    int tile_rows; /* output rows per tile */
    /* True when the layout holds this (repackable) weight type. */
    bool (*has_type)(uint32_t type);
    /* Bytes of the copy of m, wt = sd_wtype_get(m->type); 0 on overflow. */
    uint64_t (*packed_size)(const sd_matrix *m, const sd_wtype *wt);
    /* Fills tiles [t0, t1) of packed (64-byte aligned) from m->data. */
    void (*pack)(const sd_matrix *m, void *packed, int64_t t0, int64_t t1);
    /* Tile t of y ([S][n_out]) for all the rows of a (quantized activations). */
    void (*tile)(const sd_matrix *m, const sd_wtype *wt, const sd_act *a, float *y, int64_t t);
    /* Rows of one streaming pass over a tile (sd_matmul_pass_rows). */
    int (*pass_rows)(uint32_t type);
} sd_wlayout;

typedef struct sd_kernels {
    const char *name; /* the build: "generic", "avx2", "neon-dot", ... */
    sd_isa isa;       /* the path it serves (SPECDEC_ISA, --isa) */
    /* CPUID / HWCAP probe (numerics/cpu.c): true when this machine runs the
     * row; NULL = always (generic, or a row its architecture guarantees). */
    bool (*usable)(void);

    /* Row ops and attention pieces: the contracts of ops.h. */
    float (*dot_f32)(const float *a, const float *b, int64_t n);
    void (*axpy_f32)(float *y, float a, const float *x, int64_t n);
    void (*dot_f32_rows)(float *out, const float *a, const float *b, int64_t ld, int64_t rows, int64_t n);
    void (*axpy_f32_rows)(float *y, const float *w, const float *x, int64_t ld, int64_t rows, int64_t n);
    void (*dot_f32_rows_mq)(float *const *out, const float *const *q, int nq, const float *b, int64_t ld,
                            int64_t rows, int64_t n);
    void (*axpy_f32_rows_mq)(float *const *y, const float *const *w, int nq, const float *x, int64_t ld,
                             int64_t rows, int64_t n);
    void (*dot_f16_rows_mq)(float *const *out, const float *const *q, int nq, const uint16_t *b, int64_t ld,
                            int64_t rows, int64_t n);
    void (*axpy_f16_rows_mq)(float *const *y, const float *const *w, int nq, const uint16_t *x, int64_t ld,
                             int64_t rows, int64_t n);
    void (*fp32_to_fp16_row)(uint16_t *out, const float *x, int64_t n);
    void (*fp16_to_fp32_row)(float *out, const uint16_t *h, int64_t n);
    void (*add)(float *x, const float *y, int64_t n);
    /* out[i] = (x[i] * scale) * w[i] (w NULL: x[i] * scale): sd_rmsnorm's second half. */
    void (*scale_mul)(float *out, const float *x, float scale, const float *w, int64_t n);
    void (*softmax)(float *x, int64_t n);
    void (*softmax_mq)(float *const *x, const int64_t *n, int nq, float scale);
    void (*swiglu)(float *out, const float *gate, const float *up, int64_t n);
    void (*silu)(float *out, const float *x, int64_t n);

    /* Gated DeltaNet: the contracts of gdn.h. */
    void (*conv_step)(float *y, float *win, const float *w, const float *x, int K, int64_t ld, int64_t n);
    void (*gdn_tokens)(float *st, int S, int T, const float *q, const float *k, const float *v, int64_t ld,
                       const float *decay, const float *beta, int64_t ls, float scale, float *o, int64_t ldo);

    /* Matmul (matmul_impl.h gives the arithmetic): the activation quantizer,
     * float weights, quantized weights read in the GGUF layout (a matrix not
     * in one of layouts), the pass rows of those, and the repacked layouts
     * this row reads, preferred first, NULL-terminated (none: read in place). */
    void (*act_quantize_row)(sd_act *a, int s, const float *x);
    void (*matmul_float)(const sd_matrix *m, const float *x, int S, float *y, int64_t o0, int64_t o1);
    void (*matmul_quant)(const sd_matrix *m, const sd_act *a, float *y, int64_t o0, int64_t o1);
    int (*pass_rows)(uint32_t type);
    const sd_wlayout *const *layouts;
} sd_kernels;

/* The reference row (generic/kernels_generic.c). The others
 * (kernels/<arch>/kernels_<isa>.c) are named only by the table
 * (kernels/table.c), which lists the ones this build compiles. */
extern const sd_kernels sd_kernels_generic;
/* The repacked layouts (x86: the avx2 row's 8-row tiles, which the avx512 row
 * reads too, and the avx512 row's 16-row tiles). */
extern const sd_wlayout sd_wlayout_avx2;
extern const sd_wlayout sd_wlayout_avx512;

/* The table, best row first: the rows this build compiles, n of them. */
const sd_kernels *const *sd_kernels_table(int *n);

/* The first row of the table that serves isa and that this machine runs;
 * NULL if none. */
const sd_kernels *sd_kernels_for(sd_isa isa);

/* The row in use. numerics/cpu.c keeps it with the path (sd_cpu_isa): NULL
 * until the first use, which sd_kernels_first_use makes (choosing the path);
 * inline, since every kernel call asks. */
extern _Atomic(const sd_kernels *) sd_kernels_in_use;
const sd_kernels *sd_kernels_first_use(void);
static inline const sd_kernels *sd_kernels_active(void) {
    const sd_kernels *k = atomic_load_explicit(&sd_kernels_in_use, memory_order_relaxed);
    return k ? k : sd_kernels_first_use();
}

/* The layout with this id among all rows of the table; NULL if none. */
const sd_wlayout *sd_wlayout_find(int id);

/* The layout with this id if row k reads it; NULL if not. */
const sd_wlayout *sd_kernels_layout(const sd_kernels *k, int id);

#endif
