/* Token masks: which tokens of the vocabulary a grammar state admits.
 *
 * The vocabulary's token texts (bytes, byte-level BPE undone) go into a trie
 * laid out in preorder; a mask is one walk of it from the state, following
 * the cached byte transitions and skipping every subtree whose prefix the
 * grammar refuses. A constrained state (after `{` in JSON) visits a handful
 * of nodes; a free one (inside a string) visits most of the trie once, and
 * the result is cached per state, so a repeated state costs a lookup. Sized
 * for Qwen3.5's 248k-token vocabulary: the trie is about a million nodes,
 * a mask 31 KiB. */
#include <stdlib.h>
#include <string.h>

#include "grammar/matcher_impl.h"

/* Masks kept at once: up to this many bytes of bitsets (then the cache is
 * emptied and refilled; states are never forgotten, masks are cheap to redo). */
#define MASK_CACHE_BYTES (64u << 20)

typedef struct tok_key {
    const char *p;
    int32_t len, id;
} tok_key;

static int cmp_tok_key(const void *a, const void *b) {
    const tok_key *x = a, *y = b;
    int c = memcmp(x->p, y->p, (size_t)(x->len < y->len ? x->len : y->len));
    if (c) return c;
    if (x->len != y->len) return x->len < y->len ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Builds the trie from the tokens sorted by bytes: each token shares the
 * path of its longest common prefix with the previous one, so nodes are
 * created in preorder and a node's subtree ends when the path is popped. */
static sd_status build_trie(sd_gmatch *m, int32_t *sorted, int32_t n, sd_err *err) {
    vocab_trie *t = &m->trie;
    int64_t total = 0;
    int32_t maxlen = 0;
    for (int32_t i = 0; i < n; i++) {
        total += m->tok_len[sorted[i]];
        if (m->tok_len[sorted[i]] > maxlen) maxlen = m->tok_len[sorted[i]];
    }
    if (total > INT32_MAX / 2) return sd_err_set(err, SD_ERR_UNSUPPORTED, "grammar: vocabulary too large");
    size_t cap = (size_t)total + 1;
    t->byte = malloc(cap);
    t->end = malloc(sizeof *t->end * cap);
    t->first = malloc(sizeof *t->first * cap);
    t->count = malloc(sizeof *t->count * cap);
    int32_t *path = malloc(sizeof *path * ((size_t)maxlen + 1));
    if (!t->byte || !t->end || !t->first || !t->count || !path) {
        free(path);
        return sd_err_set(err, SD_ERR_NOMEM, "grammar: out of memory");
    }
    t->ids = sorted;
    int32_t depth = 0; /* path[0..depth) = nodes of the previous token */
    const char *prev = NULL;
    int32_t prev_len = 0;
    for (int32_t i = 0; i < n; i++) {
        const char *s = m->tok_bytes + m->tok_off[sorted[i]];
        int32_t len = m->tok_len[sorted[i]];
        int32_t lcp = 0;
        while (lcp < len && lcp < prev_len && s[lcp] == prev[lcp]) lcp++;
        while (depth > lcp) t->end[path[--depth]] = t->n_nodes;
        for (; depth < len; depth++) {
            int32_t k = t->n_nodes++;
            t->byte[k] = (uint8_t)s[depth], t->first[k] = i, t->count[k] = 0;
            path[depth] = k;
        }
        int32_t leaf = path[len - 1];
        if (t->count[leaf] == 0) t->first[leaf] = i;
        t->count[leaf]++;
        prev = s, prev_len = len;
    }
    while (depth > 0) t->end[path[--depth]] = t->n_nodes;
    t->max_depth = maxlen;
    free(path);
    return SD_OK;
}

sd_status sd_gmatch_vocab_init(sd_gmatch *m, const sd_tokenizer *tok, sd_err *err) {
    m->tok = tok;
    m->n_vocab = sd_tokenizer_n_vocab(tok);
    m->n_words = (m->n_vocab + 31) / 32;
    int32_t n = m->n_vocab;
    m->tok_off = malloc(sizeof *m->tok_off * ((size_t)n + 1));
    m->tok_len = calloc((size_t)n + 1, sizeof *m->tok_len);
    m->tok_eog = calloc((size_t)n + 1, 1);
    m->eog_ids = malloc(sizeof *m->eog_ids * ((size_t)n + 1));
    int32_t *sorted = malloc(sizeof *sorted * ((size_t)n + 1));
    size_t cap = 1 << 16, used = 0;
    m->tok_bytes = malloc(cap);
    if (!m->tok_off || !m->tok_len || !m->tok_eog || !m->eog_ids || !sorted || !m->tok_bytes) {
        free(sorted);
        return sd_err_set(err, SD_ERR_NOMEM, "grammar: out of memory");
    }
    int32_t n_sorted = 0;
    for (int32_t id = 0; id < n; id++) {
        m->tok_off[id] = (int64_t)used;
        if (sd_tokenizer_is_eog(tok, id)) {
            m->tok_eog[id] = 1;
            m->eog_ids[m->n_eog++] = id;
            continue; /* allowed only where the grammar accepts */
        }
        int len = sd_token_to_bytes(tok, id, false, NULL, 0);
        if (len <= 0) continue; /* control tokens: by reference only */
        if (used + (size_t)len > cap) {
            while (used + (size_t)len > cap) cap *= 2;
            char *nv = realloc(m->tok_bytes, cap);
            if (!nv) {
                free(sorted);
                return sd_err_set(err, SD_ERR_NOMEM, "grammar: out of memory");
            }
            m->tok_bytes = nv;
        }
        sd_token_to_bytes(tok, id, false, m->tok_bytes + used, (size_t)len);
        m->tok_len[id] = len;
        used += (size_t)len;
        sorted[n_sorted++] = id;
    }
    tok_key *keys = malloc(sizeof *keys * ((size_t)n_sorted + 1));
    if (!keys) {
        free(sorted);
        return sd_err_set(err, SD_ERR_NOMEM, "grammar: out of memory");
    }
    for (int32_t i = 0; i < n_sorted; i++)
        keys[i] = (tok_key){m->tok_bytes + m->tok_off[sorted[i]], m->tok_len[sorted[i]], sorted[i]};
    qsort(keys, (size_t)n_sorted, sizeof *keys, cmp_tok_key);
    for (int32_t i = 0; i < n_sorted; i++) sorted[i] = keys[i].id;
    free(keys);
    sd_status st = build_trie(m, sorted, n_sorted, err);
    if (st != SD_OK) {
        if (m->trie.ids != sorted) free(sorted);
        return st;
    }
    m->frames_state = malloc(sizeof *m->frames_state * ((size_t)m->trie.max_depth + 2));
    m->frames_end = malloc(sizeof *m->frames_end * ((size_t)m->trie.max_depth + 2));
    size_t mask_bytes = sizeof(uint32_t) * (size_t)m->n_words;
    m->max_masks = (int32_t)(MASK_CACHE_BYTES / (mask_bytes ? mask_bytes : 1));
    if (m->max_masks < 8) m->max_masks = 8;
    m->masks = malloc(mask_bytes * (size_t)m->max_masks);
    m->mask_owner = malloc(sizeof *m->mask_owner * (size_t)m->max_masks);
    if (!m->frames_state || !m->frames_end || !m->masks || !m->mask_owner)
        return sd_err_set(err, SD_ERR_NOMEM, "grammar: out of memory");
    return SD_OK;
}

void sd_gmatch_vocab_free(sd_gmatch *m) {
    free(m->tok_bytes), free(m->tok_off), free(m->tok_len), free(m->tok_eog), free(m->eog_ids);
    free(m->trie.byte), free(m->trie.end), free(m->trie.first), free(m->trie.count), free(m->trie.ids);
    free(m->frames_state), free(m->frames_end), free(m->masks), free(m->mask_owner);
}

static inline void set_bit(uint32_t *w, int32_t id) { w[id >> 5] |= 1u << (id & 31); }

/* The trie walk: every token whose bytes keep the state alive. */
static int walk_trie(sd_gmatch *m, int32_t state, uint32_t *mask) {
    const vocab_trie *t = &m->trie;
    int32_t top = 0;
    m->frames_state[0] = state, m->frames_end[0] = t->n_nodes;
    for (int32_t i = 0; i < t->n_nodes;) {
        while (m->frames_end[top] <= i) top--;
        int32_t next = sd_gmatch_byte(m, m->frames_state[top], t->byte[i]);
        if (next == SD_GSTATE_ERROR) return -1;
        if (next == SD_GSTATE_DEAD) {
            i = t->end[i];
            continue;
        }
        for (int32_t k = 0; k < t->count[i]; k++) set_bit(mask, t->ids[t->first[i] + k]);
        if (t->end[i] > i + 1) {
            top++;
            m->frames_state[top] = next, m->frames_end[top] = t->end[i];
        }
        i++;
    }
    return 0;
}

/* Token references and end of generation. */
static void add_refs(sd_gmatch *m, int32_t state, uint32_t *mask) {
    gstate *st = &m->states[state];
    if (st->accept)
        for (int32_t k = 0; k < m->n_eog; k++) set_bit(mask, m->eog_ids[k]);
    if (!st->has_tokens) return;
    for (int32_t i = 0; i < st->n; i++) {
        const sd_gelem *e = &m->g->elems[m->stack_pos[m->pool[st->off + i]]];
        if (e->kind == G_TOKEN && e->arg < m->n_vocab) set_bit(mask, e->arg);
        if (e->kind == G_NOT_TOKEN)
            for (int32_t id = 0; id < m->n_vocab; id++)
                if (id != e->arg && !m->tok_eog[id]) set_bit(mask, id);
    }
}

const uint32_t *sd_gmatch_mask(sd_gmatch *m, int32_t state, sd_err *err) {
    if (!m->tok || state == SD_GSTATE_ERROR) {
        if (err) *err = m->err.code ? m->err : (sd_err){SD_ERR_ARG, "grammar: no vocabulary or bad state"};
        return NULL;
    }
    size_t words = (size_t)m->n_words;
    if (state == SD_GSTATE_DEAD) { /* nothing allowed: one scratch slot past the cache */
        if (m->n_masks >= m->max_masks) m->n_masks = 0;
        uint32_t *mask = m->masks + words * (size_t)m->n_masks;
        memset(mask, 0, words * sizeof *mask);
        m->mask_owner[m->n_masks++] = -1;
        return mask;
    }
    int32_t slot = m->states[state].mask;
    if (slot >= 0 && m->mask_owner[slot] == state) return m->masks + words * (size_t)slot;
    if (m->n_masks >= m->max_masks) m->n_masks = 0; /* cache full: start over */
    slot = m->n_masks++;
    uint32_t *mask = m->masks + words * (size_t)slot;
    memset(mask, 0, words * sizeof *mask);
    m->mask_owner[slot] = -1;
    if (walk_trie(m, state, mask)) {
        if (err) *err = m->err;
        return NULL;
    }
    add_refs(m, state, mask);
    m->states[state].mask = slot;
    m->mask_owner[slot] = state;
    m->n_masks_built++;
    return mask;
}
