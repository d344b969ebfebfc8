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
static sd_status build_trie(sd_gvocab *v, int32_t *sorted, int32_t n, sd_err *err) {
    vocab_trie *t = &v->trie;
    int64_t total = 0;
    int32_t maxlen = 0;
    for (int32_t i = 0; i < n; i++) {
        total += v->tok_len[sorted[i]];
        if (v->tok_len[sorted[i]] > maxlen) maxlen = v->tok_len[sorted[i]];
    }
    t->ids = sorted; /* owned by the trie from here on */
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
    int32_t depth = 0; /* path[0..depth) = nodes of the previous token */
    const char *prev = NULL;
    int32_t prev_len = 0;
    for (int32_t i = 0; i < n; i++) {
        const char *s = v->tok_bytes + v->tok_off[sorted[i]];
        int32_t len = v->tok_len[sorted[i]];
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

/* Every token's bytes (sd_token_to_bytes without control texts), the
 * end-of-generation tokens apart, then the trie. */
static sd_status gvocab_fill(sd_gvocab *v, const sd_tokenizer *tok, sd_err *err) {
    v->tok = tok;
    v->n_vocab = sd_tokenizer_n_vocab(tok);
    v->n_words = (v->n_vocab + 31) / 32;
    int32_t n = v->n_vocab;
    v->tok_off = malloc(sizeof *v->tok_off * ((size_t)n + 1));
    v->tok_len = calloc((size_t)n + 1, sizeof *v->tok_len);
    v->tok_eog = calloc((size_t)n + 1, 1);
    v->eog_ids = malloc(sizeof *v->eog_ids * ((size_t)n + 1));
    int32_t *sorted = malloc(sizeof *sorted * ((size_t)n + 1));
    size_t cap = 1 << 16, used = 0;
    v->tok_bytes = malloc(cap);
    if (!v->tok_off || !v->tok_len || !v->tok_eog || !v->eog_ids || !sorted || !v->tok_bytes) {
        free(sorted);
        return sd_err_set(err, SD_ERR_NOMEM, "grammar: out of memory");
    }
    int32_t n_sorted = 0;
    for (int32_t id = 0; id < n; id++) {
        v->tok_off[id] = (int64_t)used;
        if (sd_tokenizer_is_eog(tok, id)) {
            v->tok_eog[id] = 1;
            v->eog_ids[v->n_eog++] = id;
            continue; /* allowed only where the grammar accepts */
        }
        char probe[1];
        int len = sd_token_to_bytes(tok, id, false, probe, 0); /* the length only */
        if (len <= 0) continue; /* control tokens: by reference only */
        if (used + (size_t)len > cap) {
            while (used + (size_t)len > cap) cap *= 2;
            char *nv = realloc(v->tok_bytes, cap);
            if (!nv) {
                free(sorted);
                return sd_err_set(err, SD_ERR_NOMEM, "grammar: out of memory");
            }
            v->tok_bytes = nv;
        }
        sd_token_to_bytes(tok, id, false, v->tok_bytes + used, (size_t)len);
        v->tok_len[id] = len;
        used += (size_t)len;
        sorted[n_sorted++] = id;
    }
    tok_key *keys = malloc(sizeof *keys * ((size_t)n_sorted + 1));
    if (!keys) {
        free(sorted);
        return sd_err_set(err, SD_ERR_NOMEM, "grammar: out of memory");
    }
    for (int32_t i = 0; i < n_sorted; i++)
        keys[i] = (tok_key){v->tok_bytes + v->tok_off[sorted[i]], v->tok_len[sorted[i]], sorted[i]};
    qsort(keys, (size_t)n_sorted, sizeof *keys, cmp_tok_key);
    for (int32_t i = 0; i < n_sorted; i++) sorted[i] = keys[i].id;
    free(keys);
    return build_trie(v, sorted, n_sorted, err);
}

sd_status sd_gvocab_init(const sd_tokenizer *tok, sd_gvocab **out, sd_err *err) {
    *out = NULL;
    sd_gvocab *v = calloc(1, sizeof *v);
    if (!v) return sd_err_set(err, SD_ERR_NOMEM, "grammar: out of memory");
    sd_status st = gvocab_fill(v, tok, err);
    if (st != SD_OK) {
        sd_gvocab_free(v);
        return st;
    }
    *out = v;
    return SD_OK;
}

void sd_gvocab_free(sd_gvocab *v) {
    if (!v) return;
    free(v->tok_bytes), free(v->tok_off), free(v->tok_len), free(v->tok_eog), free(v->eog_ids);
    free(v->trie.byte), free(v->trie.end), free(v->trie.first), free(v->trie.count), free(v->trie.ids);
    free(v);
}

sd_status sd_gmatch_vocab_attach(sd_gmatch *m, const sd_gvocab *v, sd_err *err) {
    m->v = v;
    m->frames_state = malloc(sizeof *m->frames_state * ((size_t)v->trie.max_depth + 2));
    m->frames_end = malloc(sizeof *m->frames_end * ((size_t)v->trie.max_depth + 2));
    size_t mask_bytes = sizeof(uint32_t) * (size_t)v->n_words;
    m->max_masks = (int32_t)(MASK_CACHE_BYTES / (mask_bytes ? mask_bytes : 1));
    if (m->max_masks < 8) m->max_masks = 8;
    m->masks = malloc(mask_bytes * (size_t)m->max_masks);
    m->mask_owner = malloc(sizeof *m->mask_owner * (size_t)m->max_masks);
    if (!m->frames_state || !m->frames_end || !m->masks || !m->mask_owner)
        return sd_err_set(err, SD_ERR_NOMEM, "grammar: out of memory");
    return SD_OK;
}

void sd_gmatch_vocab_detach(sd_gmatch *m) {
    free(m->frames_state), free(m->frames_end), free(m->masks), free(m->mask_owner);
    sd_gvocab_free(m->own_vocab);
}

static inline void set_bit(uint32_t *w, int32_t id) { w[id >> 5] |= 1u << (id & 31); }

/* The trie walk: every token whose bytes keep the state alive (mask NULL:
 * stop at the first such token; returns 1 if one was found). */
static int walk_trie(sd_gmatch *m, int32_t state, uint32_t *mask) {
    const vocab_trie *t = &m->v->trie;
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
        if (!mask && t->count[i]) return 1;
        if (mask)
            for (int32_t k = 0; k < t->count[i]; k++) set_bit(mask, t->ids[t->first[i] + k]);
        if (t->end[i] > i + 1) {
            top++;
            m->frames_state[top] = next, m->frames_end[top] = t->end[i];
        }
        i++;
    }
    return 0;
}

int sd_gmatch_any(sd_gmatch *m, int32_t state) {
    if (state < 0 || !m->v) return 0;
    gstate *st = &m->states[state];
    if (st->any >= 0) return st->any;
    int any = (st->accept && m->v->n_eog > 0) || st->has_tokens; /* a reference admits at least its token */
    if (!any) {
        any = walk_trie(m, state, NULL);
        if (any < 0) return -1;
    }
    m->states[state].any = (int8_t)any;
    return any;
}

/* Token references and end of generation. */
static void add_refs(sd_gmatch *m, int32_t state, uint32_t *mask) {
    gstate *st = &m->states[state];
    if (st->accept)
        for (int32_t k = 0; k < m->v->n_eog; k++) set_bit(mask, m->v->eog_ids[k]);
    if (!st->has_tokens) return;
    for (int32_t i = 0; i < st->n; i++) {
        const sd_gelem *e = &m->g->elems[m->stack_pos[m->pool[st->off + i]]];
        if (e->kind == G_TOKEN && e->arg < m->v->n_vocab) set_bit(mask, e->arg);
        if (e->kind == G_NOT_TOKEN)
            for (int32_t id = 0; id < m->v->n_vocab; id++)
                if (id != e->arg && !m->v->tok_eog[id]) set_bit(mask, id);
    }
}

const uint32_t *sd_gmatch_mask(sd_gmatch *m, int32_t state, sd_err *err) {
    if (!m->v || state == SD_GSTATE_ERROR) {
        if (err) *err = m->err.code ? m->err : (sd_err){SD_ERR_ARG, "grammar: no vocabulary or bad state"};
        return NULL;
    }
    size_t words = (size_t)m->v->n_words;
    int32_t slot = state == SD_GSTATE_DEAD ? -1 : m->states[state].mask;
    if (slot >= 0 && m->mask_owner[slot] == state) return m->masks + words * (size_t)slot;
    if (m->n_masks >= m->max_masks) m->n_masks = 0; /* cache full: start over */
    slot = m->n_masks++;
    uint32_t *mask = m->masks + words * (size_t)slot;
    memset(mask, 0, words * sizeof *mask);
    m->mask_owner[slot] = -1;
    if (state == SD_GSTATE_DEAD) return mask; /* nothing allowed: an unowned slot */
    if (walk_trie(m, state, mask) < 0) {
        if (err) *err = m->err;
        return NULL;
    }
    add_refs(m, state, mask);
    m->states[state].mask = slot;
    m->mask_owner[slot] = state;
    m->n_masks_built++;
    return mask;
}
