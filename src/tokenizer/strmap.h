/* Byte-string -> int32 hash map: open addressing with linear probing, FNV-1a
 * hashes, keys copied into an arena the map owns. Used for token text -> id
 * (150k entries) and BPE merge pair -> rank (up to ~300k entries), so lookups
 * during encoding are O(1) and loading a vocabulary is one pass. */
#ifndef SD_TOKENIZER_STRMAP_H
#define SD_TOKENIZER_STRMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* 16 bytes: a 150k-token vocabulary's maps are about a third smaller than
 * with 64-bit hash and offset (the slot index uses the low bits of the hash,
 * at most 31 of them). */
typedef struct sd_strmap_entry {
    uint32_t hash;    /* low 32 bits of the key's hash */
    uint32_t key_off; /* into arena (the arena is kept under 4 GiB) */
    uint32_t key_len;
    int32_t value;
} sd_strmap_entry;

typedef struct sd_strmap {
    uint32_t *slots;  /* n_slots entries: entry index + 1, 0 = empty */
    size_t n_slots;   /* power of two, kept >= 5/3 * n (at most 60% full: a 150k-token
                         vocabulary fits 2^18 slots, 1 MiB) */
    sd_strmap_entry *entries;
    size_t n, n_alloc;
    char *arena;
    size_t arena_len, arena_cap;
} sd_strmap;

/* Empty map sized for about n_hint keys. False on allocation failure (then
 * the map is zeroed and sd_strmap_free is still safe). */
bool sd_strmap_init(sd_strmap *m, size_t n_hint);
void sd_strmap_free(sd_strmap *m);

/* Inserts key (len bytes, any content) -> value. Returns 1 if inserted, 0 if
 * the key was already present (its value is left unchanged and written to
 * *existing if non-NULL), -1 on allocation failure, more than 2^30 keys or
 * 4 GiB of keys. */
int sd_strmap_put(sd_strmap *m, const void *key, size_t len, int32_t value, int32_t *existing);

/* Looks up the key formed by the concatenation a || b (either part may be
 * empty). Two parts let callers look up "prefix + span of the input" without
 * copying. True and *value set if found. */
bool sd_strmap_get2(const sd_strmap *m, const void *a, size_t alen, const void *b, size_t blen,
                    int32_t *value);

static inline bool sd_strmap_get(const sd_strmap *m, const void *key, size_t len, int32_t *value) {
    return sd_strmap_get2(m, key, len, NULL, 0, value);
}

#endif
