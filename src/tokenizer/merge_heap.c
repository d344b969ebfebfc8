#include "tokenizer/merge_heap.h"

#include <stdlib.h>

#include "core/checked.h"

static bool before(const sd_merge *a, const sd_merge *b) {
    return a->key < b->key || (a->key == b->key && a->left < b->left);
}

bool sd_merge_heap_push(sd_merge_heap *h, sd_merge m) {
    if (h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 64;
        sd_merge *v = sd_malloc_array(cap, sizeof *v);
        if (!v) return false;
        for (size_t i = 0; i < h->n; i++) v[i] = h->v[i];
        free(h->v);
        h->v = v;
        h->cap = cap;
    }
    size_t i = h->n++;
    while (i > 0 && before(&m, &h->v[(i - 1) / 2])) {
        h->v[i] = h->v[(i - 1) / 2];
        i = (i - 1) / 2;
    }
    h->v[i] = m;
    return true;
}

bool sd_merge_heap_pop(sd_merge_heap *h, sd_merge *out) {
    if (h->n == 0) return false;
    *out = h->v[0];
    sd_merge last = h->v[--h->n];
    size_t i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && before(&h->v[c + 1], &h->v[c])) c++;
        if (!before(&h->v[c], &last)) break;
        h->v[i] = h->v[c];
        i = c;
    }
    if (h->n) h->v[i] = last;
    return true;
}

bool sd_bpe_scratch_reserve(sd_bpe_scratch *s, size_t n) {
    s->heap.n = 0;
    if (n <= s->sym_cap) return true;
    size_t cap = s->sym_cap ? s->sym_cap : 64;
    while (cap < n) cap *= 2;
    sd_symbol *sym = sd_malloc_array(cap, sizeof *sym);
    if (!sym) return false;
    free(s->sym);
    s->sym = sym;
    s->sym_cap = cap;
    return true;
}

void sd_bpe_scratch_free(sd_bpe_scratch *s) {
    free(s->sym);
    free(s->heap.v);
    free(s->buf);
}

void sd_symbols_link(sd_symbol *sym, size_t n) {
    for (size_t i = 0; i < n; i++) {
        sym[i].prev = (int32_t)i - 1;
        sym[i].next = i + 1 < n ? (int32_t)i + 1 : -1;
    }
}

bool sd_symbols_apply(sd_symbol *sym, const sd_merge *m) {
    sd_symbol *l = &sym[m->left], *r = &sym[m->right];
    if (l->n != m->left_n || r->n != m->right_n || l->n == 0 || r->n == 0) return false;
    l->n += r->n;
    r->n = 0;
    l->next = r->next;
    if (r->next >= 0) sym[r->next].prev = m->left;
    return true;
}
