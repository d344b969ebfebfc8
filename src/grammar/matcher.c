/* The recognizer's states and their transitions, built lazily and cached.
 *
 * A parse stack is (position, parent stack): interned, so a stack is an int
 * and equal stacks are one id. A state is the sorted set of stacks whose top
 * is a terminal (a byte set or a token reference) plus an "accepts" flag
 * (some alternative of the root has ended); interned too, so a state is an
 * int and transitions (per byte) and masks (mask.c) are cached per state:
 * the pushdown recognizer is determinized on the fly, only where the text or
 * the vocabulary walk actually goes. */
#include <stdlib.h>
#include <string.h>

#include "grammar/matcher_impl.h"

#define TRANS_UNKNOWN (-3)

static uint32_t mix(uint32_t h, uint32_t v) {
    h ^= v;
    h *= 0x01000193u;
    return h ^ (h >> 15);
}

static int grow_i32(int32_t **v, int64_t *cap, int64_t need) {
    if (need <= *cap) return 0;
    int64_t nc = *cap ? *cap : 1024;
    while (nc < need) nc *= 2;
    int32_t *nv = realloc(*v, (size_t)nc * sizeof *nv);
    if (!nv) return -1;
    *v = nv, *cap = nc;
    return 0;
}

static int32_t fail_bound(sd_gmatch *m, const char *what) {
    if (m->err.code == SD_OK) sd_err_set(&m->err, SD_ERR_UNSUPPORTED, "grammar state limit: %s", what);
    return SD_GSTATE_ERROR;
}
static int32_t fail_nomem(sd_gmatch *m) {
    if (m->err.code == SD_OK) sd_err_set(&m->err, SD_ERR_NOMEM, "grammar: out of memory");
    return SD_GSTATE_ERROR;
}

/* ---- open-addressing tables of ids ---- */

static int table_grow(int32_t **slots, uint32_t *n_slots, int64_t n_items) {
    if ((int64_t)*n_slots * 2 > n_items * 3 + 16) return 0;
    uint32_t ns = *n_slots ? *n_slots * 2 : 1024;
    int32_t *nv = malloc(sizeof *nv * ns);
    if (!nv) return -1;
    for (uint32_t i = 0; i < ns; i++) nv[i] = -1;
    free(*slots);
    *slots = nv, *n_slots = ns;
    return 1; /* rehash needed */
}

static uint32_t stack_hash(int32_t pos, int32_t parent) { return mix(mix(0x811c9dc5u, (uint32_t)pos), (uint32_t)parent); }

static int32_t intern_stack(sd_gmatch *m, int32_t pos, int32_t parent) {
    int g = table_grow(&m->stack_slots, &m->n_stack_slots, m->n_stacks + 1);
    if (g < 0) return fail_nomem(m);
    if (g > 0)
        for (int32_t s = 0; s < m->n_stacks; s++) {
            uint32_t i = stack_hash(m->stack_pos[s], m->stack_parent[s]) & (m->n_stack_slots - 1);
            while (m->stack_slots[i] >= 0) i = (i + 1) & (m->n_stack_slots - 1);
            m->stack_slots[i] = s;
        }
    uint32_t i = stack_hash(pos, parent) & (m->n_stack_slots - 1);
    for (int32_t s; (s = m->stack_slots[i]) >= 0; i = (i + 1) & (m->n_stack_slots - 1))
        if (m->stack_pos[s] == pos && m->stack_parent[s] == parent) return s;
    if (m->n_stacks >= SD_GRAMMAR_MAX_STACKS) return fail_bound(m, "too many parse stacks (grammar nests too deep?)");
    if (grow_i32(&m->stack_pos, &m->cap_stacks_pos, m->n_stacks + 1) ||
        grow_i32(&m->stack_parent, &m->cap_stacks_parent, m->n_stacks + 1) ||
        grow_i32(&m->visit, &m->cap_visit, m->n_stacks + 1))
        return fail_nomem(m);
    int32_t s = m->n_stacks++;
    m->stack_pos[s] = pos, m->stack_parent[s] = parent, m->visit[s] = 0;
    m->stack_slots[i] = s;
    return s;
}

static uint32_t state_hash(const int32_t *v, int32_t n, int accept) {
    uint32_t h = mix(0x811c9dc5u, (uint32_t)accept);
    for (int32_t i = 0; i < n; i++) h = mix(h, (uint32_t)v[i]);
    return h;
}

static int cmp_i32(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

/* Interns the state made of m->out[0..n_out) (sorted and deduplicated here)
 * and accept; DEAD for no stack and no accept. */
static int32_t intern_state(sd_gmatch *m, int accept) {
    int32_t n = m->n_out;
    if (n == 0 && !accept) return SD_GSTATE_DEAD;
    qsort(m->out, (size_t)n, sizeof *m->out, cmp_i32);
    int32_t k = 0;
    for (int32_t i = 0; i < n; i++)
        if (!k || m->out[k - 1] != m->out[i]) m->out[k++] = m->out[i];
    n = k;
    int g = table_grow(&m->state_slots, &m->n_state_slots, m->n_states + 1);
    if (g < 0) return fail_nomem(m);
    if (g > 0)
        for (int32_t s = 0; s < m->n_states; s++) {
            gstate *st = &m->states[s];
            uint32_t i = state_hash(m->pool + st->off, st->n, st->accept) & (m->n_state_slots - 1);
            while (m->state_slots[i] >= 0) i = (i + 1) & (m->n_state_slots - 1);
            m->state_slots[i] = s;
        }
    uint32_t h = state_hash(m->out, n, accept);
    uint32_t i = h & (m->n_state_slots - 1);
    for (int32_t s; (s = m->state_slots[i]) >= 0; i = (i + 1) & (m->n_state_slots - 1)) {
        gstate *st = &m->states[s];
        if (st->n == n && st->accept == accept && !memcmp(m->pool + st->off, m->out, sizeof *m->out * (size_t)n))
            return s;
    }
    if (m->n_states >= SD_GRAMMAR_MAX_STATES) return fail_bound(m, "too many grammar states");
    if (m->n_states == m->cap_states) {
        int32_t nc = m->cap_states ? m->cap_states * 2 : 256;
        gstate *nv = realloc(m->states, sizeof *nv * (size_t)nc);
        if (!nv) return fail_nomem(m);
        m->states = nv, m->cap_states = nc;
    }
    if (grow_i32(&m->pool, &m->cap_pool, m->n_pool + n)) return fail_nomem(m);
    memcpy(m->pool + m->n_pool, m->out, sizeof *m->out * (size_t)n);
    int32_t s = m->n_states++;
    gstate *st = &m->states[s];
    memset(st, 0, sizeof *st);
    st->off = m->n_pool, st->n = n, st->accept = (uint8_t)accept, st->mask = -1, st->any = -1;
    for (int32_t j = 0; j < n; j++) {
        uint8_t kind = m->g->elems[m->stack_pos[m->out[j]]].kind;
        if (kind == G_TOKEN || kind == G_NOT_TOKEN) st->has_tokens = 1;
    }
    m->n_pool += n;
    m->state_slots[i] = s;
    return s;
}

/* Adds to m->out every terminal-topped stack reachable from stack s without
 * consuming input (calls expand, ended alternatives return); *accept is set
 * when the root can end. Iterative, and each stack is visited once per
 * m->stamp, so nullable and shared rules cost no more than their size. */
static int closure(sd_gmatch *m, int32_t s, int *accept) {
    int64_t top = 0;
    if (grow_i32(&m->work, &m->cap_work, 1)) return fail_nomem(m);
    m->work[top++] = s;
    while (top > 0) {
        int32_t x = m->work[--top];
        if (m->visit[x] == m->stamp) continue;
        m->visit[x] = m->stamp;
        int32_t pos = m->stack_pos[x];
        const sd_gelem *e = &m->g->elems[pos];
        if (e->kind == G_END) {
            int32_t parent = m->stack_parent[x];
            if (parent < 0) *accept = 1;
            else {
                if (grow_i32(&m->work, &m->cap_work, top + 1)) return fail_nomem(m);
                m->work[top++] = parent;
            }
        } else if (e->kind == G_RULE) {
            /* A call in tail position returns straight to our caller: x* and
             * right recursion then keep one stack depth instead of growing
             * a chain of frames that would only return. */
            int32_t ret = m->stack_parent[x];
            if (m->g->elems[pos + 1].kind != G_END) {
                ret = intern_stack(m, pos + 1, ret);
                if (ret < 0) return ret;
            }
            const sd_grule *r = &m->g->rules[e->arg];
            if (grow_i32(&m->work, &m->cap_work, top + r->n_alts)) return fail_nomem(m);
            for (int32_t a = 0; a < r->n_alts; a++) {
                int32_t c = intern_stack(m, m->g->alts[r->alt_first + a], ret);
                if (c < 0) return c;
                m->work[top++] = c;
            }
        } else {
            if (grow_i32(&m->out, &m->cap_out, m->n_out + 1)) return fail_nomem(m);
            m->out[m->n_out++] = x;
        }
    }
    return 0;
}

static void new_round(sd_gmatch *m) {
    m->n_out = 0;
    if (++m->stamp == INT32_MAX) { /* never in practice; keeps the stamps exact */
        memset(m->visit, 0, sizeof *m->visit * (size_t)m->n_stacks);
        m->stamp = 1;
    }
}

int32_t sd_gmatch_start(sd_gmatch *m) {
    if (m->start != TRANS_UNKNOWN) return m->start;
    new_round(m);
    int accept = 0;
    const sd_grule *r = &m->g->rules[m->g->root];
    for (int32_t a = 0; a < r->n_alts; a++) {
        int32_t s = intern_stack(m, m->g->alts[r->alt_first + a], -1);
        if (s < 0 || closure(m, s, &accept)) return SD_GSTATE_ERROR;
    }
    m->start = intern_state(m, accept);
    return m->start;
}

static int32_t step_byte(sd_gmatch *m, int32_t state, uint8_t b) {
    new_round(m);
    int accept = 0;
    gstate st = m->states[state];
    for (int32_t i = 0; i < st.n; i++) {
        int32_t x = m->pool[st.off + i];
        const sd_gelem *e = &m->g->elems[m->stack_pos[x]];
        if (e->kind != G_BYTES || !sd_byteset_has(&m->g->bytesets[e->arg], b)) continue;
        int32_t next = intern_stack(m, m->stack_pos[x] + 1, m->stack_parent[x]);
        if (next < 0 || closure(m, next, &accept)) return SD_GSTATE_ERROR;
    }
    return intern_state(m, accept);
}

int32_t sd_gmatch_byte(sd_gmatch *m, int32_t state, uint8_t b) {
    if (state < 0) return state;
    gstate *st = &m->states[state];
    if (!st->trans) {
        st->trans = malloc(sizeof *st->trans * 256);
        if (!st->trans) return fail_nomem(m);
        for (int i = 0; i < 256; i++) st->trans[i] = TRANS_UNKNOWN;
    }
    int32_t t = st->trans[b];
    if (t != TRANS_UNKNOWN) return t;
    t = step_byte(m, state, b);
    if (t != SD_GSTATE_ERROR) m->states[state].trans[b] = t; /* states may have moved */
    return t;
}

bool sd_gmatch_accepts(sd_gmatch *m, int32_t state) { return state >= 0 && m->states[state].accept; }

int32_t sd_gmatch_bytes(sd_gmatch *m, int32_t state, const uint8_t *s, size_t n) {
    for (size_t i = 0; i < n && state >= 0; i++) state = sd_gmatch_byte(m, state, s[i]);
    return state;
}

/* The stacks of state whose top token reference admits token id, advanced
 * past it, merged with the state `bytes` (the byte walk of its text). */
static int32_t step_token_refs(sd_gmatch *m, int32_t state, int32_t id, int32_t bytes) {
    new_round(m);
    int accept = 0, any = 0;
    gstate st = m->states[state];
    for (int32_t i = 0; i < st.n; i++) {
        int32_t x = m->pool[st.off + i];
        const sd_gelem *e = &m->g->elems[m->stack_pos[x]];
        int ok = (e->kind == G_TOKEN && e->arg == id) || (e->kind == G_NOT_TOKEN && e->arg != id && !m->v->tok_eog[id]);
        if (!ok) continue;
        any = 1;
        int32_t next = intern_stack(m, m->stack_pos[x] + 1, m->stack_parent[x]);
        if (next < 0 || closure(m, next, &accept)) return SD_GSTATE_ERROR;
    }
    if (!any) return bytes;
    if (bytes >= 0) { /* union with the byte walk's stacks */
        gstate b = m->states[bytes];
        if (grow_i32(&m->out, &m->cap_out, m->n_out + b.n)) return fail_nomem(m);
        memcpy(m->out + m->n_out, m->pool + b.off, sizeof *m->out * (size_t)b.n);
        m->n_out += b.n;
        accept |= b.accept;
    }
    return intern_state(m, accept);
}

int32_t sd_gmatch_token(sd_gmatch *m, int32_t state, int32_t id) {
    if (state < 0 || !m->v || id < 0 || id >= m->v->n_vocab) return state < 0 ? state : SD_GSTATE_DEAD;
    if (m->v->tok_eog[id] && m->states[state].accept) return state;
    int32_t bytes = SD_GSTATE_DEAD;
    if (m->v->tok_len[id] > 0)
        bytes = sd_gmatch_bytes(m, state, (const uint8_t *)m->v->tok_bytes + m->v->tok_off[id], (size_t)m->v->tok_len[id]);
    if (bytes == SD_GSTATE_ERROR || !m->states[state].has_tokens) return bytes;
    return step_token_refs(m, state, id, bytes);
}

size_t sd_gmatch_forced(sd_gmatch *m, int32_t state, char *buf, size_t cap) {
    size_t n = 0;
    while (n < cap && state >= 0) {
        gstate *st = &m->states[state];
        if (st->accept || st->has_tokens) break;
        sd_byteset u = {{0}};
        for (int32_t i = 0; i < st->n; i++) {
            const sd_gelem *e = &m->g->elems[m->stack_pos[m->pool[st->off + i]]];
            for (int w = 0; w < 8; w++) u.bits[w] |= m->g->bytesets[e->arg].bits[w];
        }
        int only = -1, count = 0;
        for (int b = 0; b < 256 && count < 2; b++)
            if (sd_byteset_has(&u, (uint8_t)b)) only = b, count++;
        if (count != 1) break;
        int32_t next = sd_gmatch_byte(m, state, (uint8_t)only);
        if (next < 0) break;
        buf[n++] = (char)only;
        state = next;
    }
    return n;
}

const sd_err *sd_gmatch_error(const sd_gmatch *m) { return &m->err; }
const sd_tokenizer *sd_gmatch_tokenizer(const sd_gmatch *m) { return m->v ? m->v->tok : NULL; }
int32_t sd_gmatch_n_states(const sd_gmatch *m) { return m->n_states; }
int64_t sd_gmatch_n_masks(const sd_gmatch *m) { return m->n_masks_built; }
double sd_gmatch_seconds(const sd_gmatch *m) { return m->t_constrain_s; }
void sd_gmatch_add_seconds(sd_gmatch *m, double s) { m->t_constrain_s += s; }

bool sd_grammar_accepts(const sd_grammar *g, const char *text, size_t len, sd_err *err) {
    sd_gmatch *m;
    if (sd_gmatch_init(g, NULL, &m, err) != SD_OK) return false;
    int32_t s = sd_gmatch_bytes(m, sd_gmatch_start(m), (const uint8_t *)text, len);
    bool ok = sd_gmatch_accepts(m, s);
    if (s == SD_GSTATE_ERROR && err) *err = m->err;
    sd_gmatch_free(m);
    return ok;
}

/* ---- life cycle (the vocabulary side is in mask.c) ---- */

sd_status sd_gmatch_init_vocab(const sd_grammar *g, const sd_gvocab *v, sd_gmatch **out, sd_err *err) {
    *out = NULL;
    sd_gmatch *m = calloc(1, sizeof *m);
    if (!m) return sd_err_set(err, SD_ERR_NOMEM, "grammar: out of memory");
    m->g = g;
    m->start = TRANS_UNKNOWN;
    m->stamp = 1;
    if (v) {
        sd_status st = sd_gmatch_vocab_attach(m, v, err);
        if (st != SD_OK) {
            sd_gmatch_free(m);
            return st;
        }
    }
    *out = m;
    return SD_OK;
}

sd_status sd_gmatch_init(const sd_grammar *g, const sd_tokenizer *tok, sd_gmatch **out, sd_err *err) {
    sd_gvocab *v = NULL;
    if (tok) {
        sd_status st = sd_gvocab_init(tok, &v, err);
        if (st != SD_OK) return st;
    }
    sd_status st = sd_gmatch_init_vocab(g, v, out, err);
    if (st != SD_OK) sd_gvocab_free(v);
    else (*out)->own_vocab = v;
    return st;
}

void sd_gmatch_free(sd_gmatch *m) {
    if (!m) return;
    for (int32_t s = 0; s < m->n_states; s++) free(m->states[s].trans);
    free(m->states);
    free(m->state_slots);
    free(m->pool);
    free(m->stack_pos);
    free(m->stack_parent);
    free(m->stack_slots);
    free(m->visit);
    free(m->work);
    free(m->out);
    sd_gmatch_vocab_detach(m);
    free(m);
}
