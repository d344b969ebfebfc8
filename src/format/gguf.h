/* GGUF v2/v3 reader and writer.
 *
 * Format: llama.cpp's ggml/src/gguf.cpp and docs/gguf.md: magic "GGUF", u32
 * version, u64 tensor count, u64 metadata count, metadata key/value pairs,
 * tensor infos (name, n_dims, ne[], type, offset), padding to
 * `general.alignment` (default 32), tensor data. All integers little-endian.
 *
 * The reader trusts nothing it reads: every count, string length, dimension,
 * product and offset is checked against the file size before use, and a
 * malformed file gives SD_ERR_FORMAT with a one-line reason. Strings in the
 * file are not NUL-terminated there; the reader hands out (pointer, length)
 * pairs pointing into the mapping, valid until gguf_close. Keys are copied to
 * NUL-terminated strings at open so they can be compared with strcmp.
 *
 * What the reader accepts, beyond llama.cpp's own checks: keys and tensor
 * names without NUL bytes, tensor names of at most 63 bytes (GGML_MAX_NAME),
 * bools 0 or 1, arrays nested at most 4 deep (llama.cpp reads none), tensor
 * data anywhere in the data section as long as it is aligned, inside the file
 * and not overlapping another tensor (llama.cpp also demands the packed order
 * its writer produces). Counts are bounded by the bytes left in the file, and
 * tables grow with what the file holds, so memory stays O(file size). */
#ifndef SD_FORMAT_GGUF_H
#define SD_FORMAT_GGUF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "format/ggml_type.h"

#define GGUF_DEFAULT_ALIGNMENT 32
#define GGUF_MAX_DIMS 4

typedef enum gguf_type {
    GGUF_TYPE_UINT8 = 0,
    GGUF_TYPE_INT8 = 1,
    GGUF_TYPE_UINT16 = 2,
    GGUF_TYPE_INT16 = 3,
    GGUF_TYPE_UINT32 = 4,
    GGUF_TYPE_INT32 = 5,
    GGUF_TYPE_FLOAT32 = 6,
    GGUF_TYPE_BOOL = 7,
    GGUF_TYPE_STRING = 8,
    GGUF_TYPE_ARRAY = 9,
    GGUF_TYPE_UINT64 = 10,
    GGUF_TYPE_INT64 = 11,
    GGUF_TYPE_FLOAT64 = 12,
    GGUF_TYPE_COUNT
} gguf_type;

/* One tensor as described by the file. data points into the mapping. */
typedef struct gguf_tensor_info {
    const char *name;           /* NUL-terminated copy, owned by the gguf_ctx */
    uint32_t type;              /* ggml_type id (checked known) */
    uint32_t n_dims;            /* 1..4 */
    int64_t ne[GGUF_MAX_DIMS];  /* ne[0] = elements per row (innermost); unused dims = 1 */
    uint64_t offset;            /* relative to the data section, aligned */
    uint64_t nbytes;            /* exact byte size of the data */
    const void *data;           /* into the mapping/buffer; nbytes readable */
} gguf_tensor_info;

typedef struct gguf_ctx gguf_ctx;

/* Opens and validates a GGUF file via mmap (read-only). On success *out owns the
 * mapping; free with gguf_close. Errors: SD_ERR_IO (open/stat/mmap),
 * SD_ERR_FORMAT (bad magic/version/structure, truncated, offsets past the end,
 * overlapping tensors, duplicate keys or tensor names, bad string lengths),
 * SD_ERR_UNSUPPORTED (unknown tensor type id, GGUF v1, big-endian), SD_ERR_NOMEM.
 * Error messages start with the path and name the key or tensor and the byte
 * offset at fault, e.g. "m.gguf: tensor 'output.weight': data [x, y) past end
 * of file (size z)"; names are shown with control bytes escaped. */
sd_status gguf_open(const char *path, gguf_ctx **out, sd_err *err);

/* Same as gguf_open on a caller-owned buffer of size bytes; the buffer must
 * outlive the ctx (it is borrowed, not copied). Used by tests and fuzzers. */
sd_status gguf_open_memory(const void *data, size_t size, gguf_ctx **out, sd_err *err);

/* Releases the ctx and its mapping. NULL is allowed. */
void gguf_close(gguf_ctx *ctx);

uint32_t gguf_version(const gguf_ctx *ctx);
uint32_t gguf_alignment(const gguf_ctx *ctx);
/* Byte offset of the tensor data section from the start of the file. */
uint64_t gguf_data_offset(const gguf_ctx *ctx);

/* ---- metadata ---- */
int64_t gguf_n_kv(const gguf_ctx *ctx);
/* Index of key, or -1. */
int64_t gguf_find_key(const gguf_ctx *ctx, const char *key);
const char *gguf_kv_key(const gguf_ctx *ctx, int64_t i);  /* NUL-terminated */
gguf_type gguf_kv_type(const gguf_ctx *ctx, int64_t i);
/* For arrays: element type and count. For scalars: *elem = type, *n = 1. */
void gguf_kv_array_info(const gguf_ctx *ctx, int64_t i, gguf_type *elem, uint64_t *n);

/* Typed getters by key. Each returns false when the key is absent or its value
 * does not fit the requested type (integer getters accept any integer type whose
 * value is in range; gguf_get_f32 accepts f32 and f64). */
bool gguf_get_u32(const gguf_ctx *ctx, const char *key, uint32_t *out);
bool gguf_get_i64(const gguf_ctx *ctx, const char *key, int64_t *out);
bool gguf_get_f32(const gguf_ctx *ctx, const char *key, float *out);
bool gguf_get_bool(const gguf_ctx *ctx, const char *key, bool *out);
/* String value: *s points into the mapping (not NUL-terminated), *len bytes. */
bool gguf_get_str(const gguf_ctx *ctx, const char *key, const char **s, uint64_t *len);

/* Array of a fixed-size element type (not string/array): *data points at n
 * little-endian elements of elem type in the mapping (may be unaligned: copy
 * with memcpy). */
bool gguf_get_arr_data(const gguf_ctx *ctx, const char *key, gguf_type *elem,
                       uint64_t *n, const void **data);
/* Array of strings: number of elements, then element i. */
bool gguf_get_arr_str_n(const gguf_ctx *ctx, const char *key, uint64_t *n);
bool gguf_get_arr_str(const gguf_ctx *ctx, const char *key, uint64_t i,
                      const char **s, uint64_t *len);

/* Element j of pair i (j = 0 for a scalar). Integer types fill .i (signed) or
 * .u (unsigned), floats .f, bools .b, strings .s/.len (into the mapping, not
 * NUL-terminated). False if j >= count or the element is itself an array. */
typedef struct gguf_value {
    gguf_type type;
    union {
        uint64_t u;
        int64_t i;
        double f;
        bool b;
    } v;
    const char *s;
    uint64_t len;
} gguf_value;
bool gguf_kv_value(const gguf_ctx *ctx, int64_t i, uint64_t j, gguf_value *out);

/* Short lower-case name of a type: "u8", "i32", "f32", "bool", "string",
 * "array"; "unknown" for ids past GGUF_TYPE_COUNT. Static storage. */
const char *gguf_type_name(gguf_type t);

/* Human-readable one-line rendering of value i (arrays abbreviated), for
 * `specdec inspect`. Writes at most cap bytes including the NUL. */
void gguf_kv_format(const gguf_ctx *ctx, int64_t i, char *buf, size_t cap);

/* ---- tensors ---- */
int64_t gguf_n_tensors(const gguf_ctx *ctx);
const gguf_tensor_info *gguf_tensor(const gguf_ctx *ctx, int64_t i);
/* Tensor by name, or NULL. */
const gguf_tensor_info *gguf_find_tensor(const gguf_ctx *ctx, const char *name);

/* ---- giving file pages back (gguf_release.c) ---- */

/* Tells the reader that bytes [0, prefix) of tensor t's data (t as returned by
 * gguf_tensor / gguf_find_tensor on this ctx; anything else is ignored) are no
 * longer needed, e.g. because the caller made its own copy. Whole pages of the
 * mapping that now hold only released tensor bytes or the padding between
 * tensors are dropped from the process (madvise MADV_DONTNEED); pages shared
 * with the header or an unreleased tensor stay. Nothing becomes invalid: t->data
 * stays mapped and readable, a later read faults the page back in from the file
 * (and then holds it again). A prefix at most what was released before does
 * nothing; calls may grow it slab by slab. For gguf_open_memory contexts only
 * the accounting changes. A madvise failure leaves the pages resident. */
void gguf_release(gguf_ctx *ctx, const gguf_tensor_info *t, uint64_t prefix);
/* The same for the header (metadata and tensor table, bytes [0, data_offset)
 * of the file): the caller has read what it needs (a tokenizer keeps its own
 * tables). Every pointer the reader handed out stays valid; a later metadata
 * read faults its pages back in. Pages shared with unreleased tensor data stay.
 * ctx NULL does nothing. */
void gguf_release_header(gguf_ctx *ctx);
/* The prefix of t released so far (bytes; 0 for a tensor not of this ctx). */
uint64_t gguf_released_bytes(const gguf_ctx *ctx, const gguf_tensor_info *t);

/* Bytes of the file mapping present in this process's memory, measured
 * (core/resident.h, /proc/self/pagemap), in whole pages. False (and *out = 0)
 * for a gguf_open_memory context or when it cannot be measured. */
bool gguf_resident_bytes(const gguf_ctx *ctx, uint64_t *out);

/* ---- writer ---- */
typedef struct gguf_writer gguf_writer;

/* New empty writer (version 3, alignment 32). NULL on allocation failure.
 * Setting "general.alignment" (u32, a nonzero power of two, else SD_ERR_ARG)
 * changes the alignment the writer pads tensor data to. */
gguf_writer *gguf_writer_init(void);
void gguf_writer_free(gguf_writer *w);

/* Metadata setters. Keys and strings are copied. Return SD_ERR_NOMEM or
 * SD_ERR_ARG (duplicate key) on failure. Keys keep insertion order. */
sd_status gguf_writer_set_u32(gguf_writer *w, const char *key, uint32_t v);
sd_status gguf_writer_set_i32(gguf_writer *w, const char *key, int32_t v);
sd_status gguf_writer_set_u64(gguf_writer *w, const char *key, uint64_t v);
sd_status gguf_writer_set_f32(gguf_writer *w, const char *key, float v);
sd_status gguf_writer_set_bool(gguf_writer *w, const char *key, bool v);
sd_status gguf_writer_set_str(gguf_writer *w, const char *key, const char *s, uint64_t len);
/* Array of fixed-size elements (elem not STRING/ARRAY), n elements at data. */
sd_status gguf_writer_set_arr_data(gguf_writer *w, const char *key, gguf_type elem,
                                   const void *data, uint64_t n);
/* Array of n strings (strs[i], lens[i]). */
sd_status gguf_writer_set_arr_str(gguf_writer *w, const char *key, const char *const *strs,
                                  const uint64_t *lens, uint64_t n);
/* Scalar of any fixed-size type (not STRING/ARRAY): value is one element of
 * that type in host order (e.g. a pointer to an int16_t for GGUF_TYPE_INT16). */
sd_status gguf_writer_set_val(gguf_writer *w, const char *key, gguf_type type, const void *value);
/* Any value given as its exact file encoding after the type tag (for arrays:
 * u32 element type, u64 count, elements; nested arrays allowed up to 4 deep).
 * The encoding is checked like the reader checks it: SD_ERR_ARG if malformed. */
sd_status gguf_writer_set_raw(gguf_writer *w, const char *key, gguf_type type, const void *raw,
                              uint64_t size);
/* Copies metadata pair i of a reader (any type, nested arrays included). */
sd_status gguf_writer_copy_kv(gguf_writer *w, const gguf_ctx *src, int64_t i);

/* Adds a tensor. data (nbytes, which must equal the size implied by type and ne)
 * is borrowed until gguf_writer_write returns. ne[0..n_dims) as in
 * gguf_tensor_info (ne[0] innermost). Tensors are laid out in the order added,
 * each padded to the alignment. SD_ERR_ARG: duplicate or over-long (> 63 bytes)
 * name, n_dims not 1..4, ne <= 0, ne[0] not a multiple of the block size,
 * unknown type, nbytes wrong; SD_ERR_NOMEM. */
sd_status gguf_writer_add_tensor(gguf_writer *w, const char *name, uint32_t type,
                                 uint32_t n_dims, const int64_t *ne, const void *data,
                                 uint64_t nbytes);

/* Fills bytes [offset, offset + len) of a tensor's data into buf; false on
 * failure (the write then fails with SD_ERR_IO). */
typedef bool (*gguf_fill_fn)(void *ctx, uint64_t offset, void *buf, size_t len);

/* Adds a tensor like gguf_writer_add_tensor whose data is produced while the
 * file is written, in order, a chunk of at most 16 MiB at a time, by
 * fill(ctx, ...): a generator never holds a tensor larger than the machine's
 * memory (sd-genmodel's expert tensors). ctx is borrowed until
 * gguf_writer_write returns. Errors as gguf_writer_add_tensor. */
sd_status gguf_writer_add_tensor_fill(gguf_writer *w, const char *name, uint32_t type, uint32_t n_dims,
                                      const int64_t *ne, uint64_t nbytes, gguf_fill_fn fill, void *ctx);

/* Writes the file (to path.tmp, then renames, so a failure never leaves a
 * half-written file at path). SD_ERR_IO on failure. */
sd_status gguf_writer_write(const gguf_writer *w, const char *path, sd_err *err);

/* Same as gguf_writer_write into a new heap buffer (*out, *size; free with
 * free()). Used by tests and fuzzers. SD_ERR_NOMEM on failure. */
sd_status gguf_writer_write_memory(const gguf_writer *w, void **out, size_t *size, sd_err *err);

#endif
