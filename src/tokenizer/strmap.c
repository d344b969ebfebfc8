#include "tokenizer/strmap.h"

#include <stdlib.h>
#include <string.h>

#include "core/checked.h"

#define FNV_OFFSET 14695981039346656037ull
#define FNV_PRIME 1099511628211ull

static uint64_t fnv1a(uint64_t h, const uint8_t *p, size_t n) {
    for (size_t i = 0; i < n; i++) h = (h ^ p[i]) * FNV_PRIME;
    return h;
}

/* MurmurHash3 fmix64: FNV's low bits, which pick the slot, depend only on
 * the low bits of the input; this spreads every input bit over all of them. */
static uint64_t mix(uint64_t h) {
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

static size_t pow2_at_least(size_t n) {
    size_t p = 16;
    while (p < n && p < ((size_t)1 << 40)) p <<= 1;
    return p;
}

bool sd_strmap_init(sd_strmap *m, size_t n_hint) {
    memset(m, 0, sizeof *m);
    if (n_hint > ((size_t)1 << 29)) n_hint = (size_t)1 << 29; /* n_slots <= 2^31: hashes are 32 bits */
    m->n_slots = pow2_at_least(n_hint + n_hint * 2 / 3 + 1);
    m->slots = sd_calloc(m->n_slots, sizeof *m->slots);
    m->n_alloc = n_hint ? n_hint : 16;
    m->entries = sd_malloc_array(m->n_alloc, sizeof *m->entries);
    m->arena_cap = m->n_alloc * 8;
    m->arena = malloc(m->arena_cap);
    if (!m->slots || !m->entries || !m->arena) {
        sd_strmap_free(m);
        return false;
    }
    return true;
}

void sd_strmap_free(sd_strmap *m) {
    free(m->slots);
    free(m->entries);
    free(m->arena);
    memset(m, 0, sizeof *m);
}

/* Doubles the slot table and reinserts every entry (hashes are stored). */
static bool rehash(sd_strmap *m) {
    size_t n_slots = m->n_slots * 2;
    uint32_t *slots = sd_calloc(n_slots, sizeof *slots);
    if (!slots) return false;
    for (size_t e = 0; e < m->n; e++) {
        size_t i = m->entries[e].hash & (n_slots - 1);
        while (slots[i]) i = (i + 1) & (n_slots - 1);
        slots[i] = (uint32_t)(e + 1);
    }
    free(m->slots);
    m->slots = slots;
    m->n_slots = n_slots;
    return true;
}

static bool key_equal(const sd_strmap *m, const sd_strmap_entry *e, const uint8_t *a, size_t alen,
                      const uint8_t *b, size_t blen) {
    if (e->key_len != alen + blen) return false;
    const char *k = m->arena + e->key_off;
    return (alen == 0 || memcmp(k, a, alen) == 0) && (blen == 0 || memcmp(k + alen, b, blen) == 0);
}

bool sd_strmap_get2(const sd_strmap *m, const void *a, size_t alen, const void *b, size_t blen,
                    int32_t *value) {
    if (!m->slots) return false;
    uint64_t h = mix(fnv1a(fnv1a(FNV_OFFSET, a, alen), b, blen));
    for (size_t i = h & (m->n_slots - 1);; i = (i + 1) & (m->n_slots - 1)) {
        uint32_t s = m->slots[i];
        if (!s) return false;
        const sd_strmap_entry *e = &m->entries[s - 1];
        if (e->hash == (uint32_t)h && key_equal(m, e, a, alen, b, blen)) {
            *value = e->value;
            return true;
        }
    }
}

static bool grow_storage(sd_strmap *m, size_t len) {
    if (m->n == m->n_alloc) {
        size_t n_alloc = m->n_alloc * 2;
        sd_strmap_entry *e = n_alloc > m->n_alloc ? realloc(m->entries, n_alloc * sizeof *e) : NULL;
        if (!e) return false;
        m->entries = e;
        m->n_alloc = n_alloc;
    }
    if (len > UINT32_MAX - m->arena_len) return false; /* key_off is 32 bits */
    if (len > m->arena_cap - m->arena_len) {
        size_t cap = m->arena_cap;
        while (len > cap - m->arena_len) {
            if (cap > SIZE_MAX / 2) return false;
            cap *= 2;
        }
        char *a = realloc(m->arena, cap);
        if (!a) return false;
        m->arena = a;
        m->arena_cap = cap;
    }
    return true;
}

int sd_strmap_put(sd_strmap *m, const void *key, size_t len, int32_t value, int32_t *existing) {
    /* n_slots >= 5n/3 must stay within the 32 bits of the stored hash */
    if (!m->slots || len > UINT32_MAX || m->n >= ((size_t)1 << 30)) return -1;
    if (5 * (m->n + 1) > 3 * m->n_slots && !rehash(m)) return -1;
    uint64_t h = mix(fnv1a(FNV_OFFSET, key, len));
    size_t i = h & (m->n_slots - 1);
    for (; m->slots[i]; i = (i + 1) & (m->n_slots - 1)) {
        const sd_strmap_entry *e = &m->entries[m->slots[i] - 1];
        if (e->hash == (uint32_t)h && key_equal(m, e, key, len, NULL, 0)) {
            if (existing) *existing = e->value;
            return 0;
        }
    }
    if (!grow_storage(m, len)) return -1;
    sd_strmap_entry *e = &m->entries[m->n];
    *e = (sd_strmap_entry){(uint32_t)h, (uint32_t)m->arena_len, (uint32_t)len, value};
    if (len) memcpy(m->arena + m->arena_len, key, len);
    m->arena_len += len;
    m->slots[i] = (uint32_t)(++m->n);
    return 1;
}
