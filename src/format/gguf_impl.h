/* Internals shared by the GGUF reader (gguf_read.c), its accessors
 * (gguf_kv.c) and the writer (gguf_write.c). Not for use outside src/format/.
 *
 * Encoding facts (llama.cpp ggml/src/gguf.cpp, docs/gguf.md): a string is a
 * u64 byte length then the bytes (no NUL); a key/value pair is a string key,
 * a u32 gguf_type, then the value; an array value is a u32 element type, a u64
 * count, then the elements back to back. All integers little-endian. */
#ifndef SD_FORMAT_GGUF_IMPL_H
#define SD_FORMAT_GGUF_IMPL_H

#include <stdint.h>
#include <string.h>

#include "format/gguf.h"

/* Nesting limit for arrays of arrays: llama.cpp itself rejects nesting; the
 * spec allows it, so we read a few levels and refuse deeper "depth bombs". */
#define GGUF_MAX_NEST 4
/* Longest tensor name, as llama.cpp (GGML_MAX_NAME 64 including the NUL). */
#define GGUF_MAX_NAME 63

/* One metadata pair as found in the file. Pointers go into the mapping. */
typedef struct gguf_kv {
    char *key;            /* NUL-terminated copy, owned */
    gguf_type type;       /* value type */
    gguf_type elem;       /* arrays: element type; scalars: == type */
    uint64_t n;           /* arrays: element count; scalars: 1 */
    const uint8_t *raw;   /* value encoding right after the type tag */
    uint64_t raw_size;    /* its byte size (arrays: includes elem type + count) */
    const uint8_t *data;  /* first element (arrays) or the value (scalars) */
    uint64_t *str_off;    /* string arrays: offset of element i from data; owned */
} gguf_kv;

struct gguf_ctx {
    const uint8_t *base;
    size_t size;
    int mapped;           /* base came from mmap and is unmapped at close */
    uint32_t version;
    uint32_t alignment;
    uint64_t data_offset;
    int64_t n_kv;
    gguf_kv *kv;
    int64_t *kv_sorted;   /* kv indices sorted by key, for gguf_find_key */
    int64_t n_tensors;
    gguf_tensor_info *tensors;
    int64_t *t_sorted;    /* tensor indices sorted by name */
    int64_t *t_by_offset; /* tensor indices sorted by data offset */
    int64_t *t_rank;      /* t_rank[i]: position of tensor i in t_by_offset */
    uint64_t *t_released; /* bytes of tensor i's data given back (a prefix), gguf_release */
    int header_released;  /* gguf_release_header was called */
};

static inline uint16_t gguf_rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t gguf_rd32(const uint8_t *p) {
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t gguf_rd64(const uint8_t *p) {
    return (uint64_t)gguf_rd32(p) | (uint64_t)gguf_rd32(p + 4) << 32;
}

/* Byte size of one element of a fixed-size type; 0 for STRING, ARRAY, unknown. */
uint32_t gguf_type_size(gguf_type t);

/* Checks that raw[0..size) is exactly one well-formed value of type t (the
 * encoding after the type tag). Used by the writer to refuse bad raw values.
 * On failure writes a reason to err (may be NULL). */
sd_status gguf_check_value(gguf_type t, const void *raw, uint64_t size, sd_err *err);

#endif
