/* The tensor-writing helpers of sd-genmodel --grow, shared by the qwen3
 * grower (grow.c), the qwen35 one (grow_q35.c) and its MoE FFN (grow_moe.c). */
#ifndef SD_TOOLS_GROW_IO_H
#define SD_TOOLS_GROW_IO_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "format/gguf.h"

#define GROW_MAX_ZEROS 16

/* Buffers are kept until the writer has written them (it borrows them). */
typedef struct grower {
    gguf_writer *w;
    const gguf_ctx *small;
    const char *small_path;
    uint32_t type;
    void **bufs;
    int n_bufs, cap_bufs;
    struct zero_mat { int64_t n_in, n_out; void *data; } zeros[GROW_MAX_ZEROS]; /* shared by the identity layers */
    int n_zeros;
    uint64_t total_bytes;
} grower;

/* A zeroed buffer of `bytes` owned by g (freed with it); NULL when out of memory. */
void *grow_keep(grower *g, size_t bytes);

/* The small tensor `name` as f32 [n_out][n_in] (malloc'd; caller frees),
 * checking its shape; NULL with err set otherwise. */
float *grow_small_f32(grower *g, const char *name, int64_t n_in, int64_t n_out, sd_err *err);

/* Adds grown tensor `name` [n_out][n_in] of type: data (f32 [n_out][n_in]) is
 * written as is (type f32) or quantized row by row; or `ready` bytes as they are. */
sd_status grow_add_tensor(grower *g, const char *name, uint32_t type, int n_dims, int64_t n_in, int64_t n_out,
                          const float *data, void *ready, sd_err *err);

/* Every key of the small file but general.name, general.file_type and the
 * n shape keys (written by the caller for the grown shape), then the name
 * "grown SHAPE TYPE" and the file type of g->type. */
sd_status grow_copy_metadata(grower *g, const char *const *shape_keys, size_t n, const char *shape_name,
                             sd_err *err);

/* A zero matrix of g->type, one buffer per shape shared by every identity layer. */
sd_status grow_add_zero_matrix(grower *g, const char *name, int64_t n_in, int64_t n_out, sd_err *err);

/* The zeroed buffer behind grow_add_zero_matrix for [n_out][n_in] of g->type
 * (owned by g); NULL with err set (name: the tensor it is for). */
void *grow_zero_data(grower *g, const char *name, int64_t n_in, int64_t n_out, sd_err *err);

/* Adds the 3-D expert tensor `name` of g->type, ne {n_in, n_out, n_exp}: ready
 * holds its bytes (expert by expert, each n_out rows), borrowed until written. */
sd_status grow_add_experts(grower *g, const char *name, int64_t n_in, int64_t n_out, int64_t n_exp, void *ready,
                           sd_err *err);

/* sd-genmodel --grow for a qwen35 SMALL into a qwen35 shape (grow_q35.c);
 * dry_run: print the plan and the file size, write nothing. Returns the exit
 * code like grow_main. */
int grow_q35_run(const char *small, const char *shape_name, uint32_t type, const char *out, bool dry_run);

/* true if shape_name is one of grow_q35.c's shapes */
bool grow_q35_has_shape(const char *shape_name);

#endif
