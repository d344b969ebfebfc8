/* Loading the mixture-of-experts FFN (docs/MOE.md; llama.cpp
 * src/llama-model.cpp load_hparams for the expert keys, src/models/qwen3moe.cpp
 * and qwen35moe.cpp load_arch_tensors for the tensors). An expert tensor is
 * 3-D, ne = [n_in, n_out, E]: expert e is the 2-D slice of rows
 * [e * n_out, (e + 1) * n_out) of the n_out * E rows, so each expert becomes
 * an ordinary sd_matrix viewing its slice, repacked slab by slab like every
 * matrix while the file pages behind the copied rows are given back. */
#include <stdio.h>
#include <stdlib.h>

#include "core/checked.h"
#include "model/moe.h"
#include "numerics/quant.h"

/* Reads {arch}.suffix into *out: required, or dflt when absent; in [lo, hi]. */
static sd_status get_count(sd_loader *L, const char *suffix, bool required, int64_t dflt, int64_t lo, int64_t hi,
                           int32_t *out) {
    char key[128];
    snprintf(key, sizeof key, "%s.%s", L->m->hp.arch_name, suffix);
    int64_t v = dflt;
    if (!gguf_get_i64(L->gguf, key, &v)) {
        if (gguf_find_key(L->gguf, key) >= 0) return sd_err_set(L->err, SD_ERR_FORMAT, "key %s is not an integer", key);
        if (required) return sd_err_set(L->err, SD_ERR_FORMAT, "missing key %s", key);
    }
    if (v < lo || v > hi)
        return sd_err_set(L->err, SD_ERR_FORMAT, "key %s = %lld out of range [%lld, %lld]", key, (long long)v,
                          (long long)lo, (long long)hi);
    *out = (int32_t)v;
    return SD_OK;
}

sd_status sd_moe_hparams(sd_loader *L, sd_hparams *hp, bool with_shexp) {
    sd_status st = get_count(L, "expert_count", true, 0, 1, SD_MOE_MAX_EXPERTS, &hp->n_expert);
    if (st == SD_OK) st = get_count(L, "expert_used_count", true, 0, 1, hp->n_expert, &hp->n_expert_used);
    if (st != SD_OK) return st;
    /* llama.cpp's fallbacks when the sizes are absent: n_ff / k, and n_ff */
    const int64_t ff_default = hp->n_ff > 0 ? hp->n_ff / hp->n_expert_used : 0;
    st = get_count(L, "expert_feed_forward_length", ff_default == 0, ff_default, 1, 1 << 20, &hp->n_ff_exp);
    if (st == SD_OK && with_shexp)
        st = get_count(L, "expert_shared_feed_forward_length", hp->n_ff == 0, hp->n_ff, 1, 1 << 20, &hp->n_ff_shexp);
    if (st == SD_OK && hp->n_ff == 0) hp->n_ff = hp->n_ff_exp; /* only sizes dense scratch nobody uses */
    return st;
}

/* Which tensor's pages a view being repacked gives back: its slice starts at
 * byte offset of the tensor, and experts are packed in order, so the
 * released prefix only grows. */
typedef struct release_ctx {
    gguf_ctx *gguf;
    const gguf_tensor_info *t;
    uint64_t offset, row_bytes;
} release_ctx;

static void release_rows(void *ctx, int64_t rows) {
    const release_ctx *r = ctx;
    gguf_release(r->gguf, r->t, r->offset + (uint64_t)rows * r->row_bytes);
}

/* The tensor blk.il.<name>.weight, checked to be [n_in, n_out * parts, E] of a supported type. */
static sd_status find_experts(sd_loader *L, const char *name, int il, int64_t n_in, int64_t n_out, int64_t E,
                              const gguf_tensor_info **out) {
    char full[96];
    snprintf(full, sizeof full, "blk.%d.%s.weight", il, name);
    const gguf_tensor_info *t = gguf_find_tensor(L->gguf, full);
    if (!t) return sd_err_set(L->err, SD_ERR_FORMAT, "missing tensor %s", full);
    if (t->n_dims != 3 || t->ne[0] != n_in || t->ne[1] != n_out || t->ne[2] != E)
        return sd_err_set(L->err, SD_ERR_FORMAT, "tensor %s has shape [%lld, %lld, %lld, %lld], expected [%lld, %lld, %lld]",
                          full, (long long)t->ne[0], (long long)t->ne[1], (long long)t->ne[2], (long long)t->ne[3],
                          (long long)n_in, (long long)n_out, (long long)E);
    if (!sd_type_supported(t->type))
        return sd_err_set(L->err, SD_ERR_UNSUPPORTED, "tensor %s: type %s not supported", full,
                          ggml_type_get(t->type)->name);
    *out = t;
    return SD_OK;
}

/* views[e] = rows [e * stride + first, + n_out) of t, for every expert e. */
static sd_status bind_views(sd_loader *L, const gguf_tensor_info *t, sd_matrix *views, int64_t E, int64_t stride,
                            int64_t first, int64_t n_out) {
    const uint64_t row_bytes = t->nbytes / (uint64_t)(t->ne[1] * t->ne[2]);
    for (int64_t e = 0; e < E; e++) {
        const uint64_t offset = (uint64_t)(e * stride + first) * row_bytes;
        release_ctx rc = {L->m->gguf, t, offset, row_bytes};
        sd_matrix_opts o = {L->no_pack, release_rows, &rc};
        sd_status st = sd_matrix_init_opts(&views[e], t->type, t->ne[0], n_out, (const uint8_t *)t->data + offset, &o,
                                           L->err);
        if (st != SD_OK) {
            sd_err_prefix(L->err, "tensor %s, expert %lld", t->name, (long long)e);
            return st;
        }
    }
    return SD_OK;
}

/* gate and up: two tensors, or llama.cpp's fused ffn_gate_up_exps [n_embd, 2 * n_ff_exp, E]
 * (per expert the gate rows, then the up rows). */
static sd_status bind_gate_up(sd_loader *L, sd_moe *x, int il) {
    const sd_hparams *hp = &L->m->hp;
    const int64_t D = hp->n_embd, F = hp->n_ff_exp, E = hp->n_expert;
    const gguf_tensor_info *t = NULL;
    char fused[96];
    snprintf(fused, sizeof fused, "blk.%d.ffn_gate_up_exps.weight", il);
    if (gguf_find_tensor(L->gguf, fused)) {
        sd_status st = find_experts(L, "ffn_gate_up_exps", il, D, 2 * F, E, &t);
        if (st == SD_OK) st = bind_views(L, t, x->gate, E, 2 * F, 0, F);
        if (st == SD_OK) st = bind_views(L, t, x->up, E, 2 * F, F, F);
        return st;
    }
    sd_status st = find_experts(L, "ffn_gate_exps", il, D, F, E, &t);
    if (st == SD_OK) st = bind_views(L, t, x->gate, E, F, 0, F);
    if (st == SD_OK) st = find_experts(L, "ffn_up_exps", il, D, F, E, &t);
    if (st == SD_OK) st = bind_views(L, t, x->up, E, F, 0, F);
    return st;
}

static sd_status bind_shared(sd_loader *L, sd_moe *x, int il) {
    const int64_t D = L->m->hp.n_embd, F = L->m->hp.n_ff_shexp;
    x->has_shexp = true;
    sd_status st = sd_bind_matrix(L, &x->sh_gate, D, F, "blk.%d.ffn_gate_shexp.weight", il);
    if (st == SD_OK) st = sd_bind_matrix(L, &x->sh_up, D, F, "blk.%d.ffn_up_shexp.weight", il);
    if (st == SD_OK) st = sd_bind_matrix(L, &x->sh_down, F, D, "blk.%d.ffn_down_shexp.weight", il);
    if (st == SD_OK) st = sd_bind_vector(L, &x->sh_gate_inp, D, true, "blk.%d.ffn_gate_inp_shexp.weight", il);
    return st;
}

sd_status sd_bind_moe_ffn(sd_loader *L, sd_moe **out, int il, int32_t counter) {
    const sd_hparams *hp = &L->m->hp;
    const int64_t D = hp->n_embd, F = hp->n_ff_exp, E = hp->n_expert;
    sd_moe *x = calloc(1, sizeof *x);
    if (x) {
        x->gate = sd_calloc((size_t)E, sizeof *x->gate);
        x->up = sd_calloc((size_t)E, sizeof *x->up);
        x->down = sd_calloc((size_t)E, sizeof *x->down);
    }
    *out = x; /* owned by the layer from here on, also on error */
    if (!x || !x->gate || !x->up || !x->down) return sd_err_set(L->err, SD_ERR_NOMEM, "out of memory for %lld experts", (long long)E);
    x->counter = counter;
    x->n_expert = (int32_t)E;
    const gguf_tensor_info *t = NULL;
    sd_status st = sd_bind_matrix(L, &x->router, D, E, "blk.%d.ffn_gate_inp.weight", il);
    if (st == SD_OK) st = bind_gate_up(L, x, il);
    if (st == SD_OK) st = find_experts(L, "ffn_down_exps", il, F, D, E, &t);
    if (st == SD_OK) st = bind_views(L, t, x->down, E, D, 0, D);
    if (st == SD_OK && hp->n_ff_shexp > 0) st = bind_shared(L, x, il);
    return st;
}

void sd_moe_free(sd_moe *x) {
    if (!x) return;
    sd_matrix *one[] = {&x->router, &x->sh_gate, &x->sh_up, &x->sh_down};
    for (size_t i = 0; i < sizeof one / sizeof one[0]; i++) sd_matrix_free(one[i]);
    sd_matrix *const lists[3] = {x->gate, x->up, x->down};
    for (int l = 0; l < 3; l++)
        for (int32_t e = 0; lists[l] && e < x->n_expert; e++) sd_matrix_free(&lists[l][e]); /* unbound: zero */
    free(x->gate);
    free(x->up);
    free(x->down);
    free(x);
}

static uint64_t matrix_size(const sd_matrix *w, bool bytes) {
    uint64_t row = 0;
    if (!w->data) return 0;
    if (!bytes) return (uint64_t)(w->n_in * w->n_out);
    return ggml_row_bytes(w->type, (uint64_t)w->n_in, &row) ? row * (uint64_t)w->n_out : 0;
}

uint64_t sd_moe_sum(const sd_moe *x, int32_t n_expert_used, bool bytes, bool active) {
    if (!x) return 0;
    uint64_t experts = 0, n = matrix_size(&x->router, bytes);
    for (int32_t e = 0; e < x->n_expert; e++)
        experts += matrix_size(&x->gate[e], bytes) + matrix_size(&x->up[e], bytes) + matrix_size(&x->down[e], bytes);
    n += active ? experts / (uint64_t)x->n_expert * (uint64_t)n_expert_used : experts;
    n += matrix_size(&x->sh_gate, bytes) + matrix_size(&x->sh_up, bytes) + matrix_size(&x->sh_down, bytes);
    if (x->sh_gate_inp && !bytes) n += (uint64_t)x->router.n_in;
    return n;
}

uint64_t sd_moe_packed_bytes(const sd_moe *x) {
    if (!x) return 0;
    uint64_t n = x->router.packed_bytes + x->sh_gate.packed_bytes + x->sh_up.packed_bytes + x->sh_down.packed_bytes;
    for (int32_t e = 0; e < x->n_expert; e++)
        n += x->gate[e].packed_bytes + x->up[e].packed_bytes + x->down[e].packed_bytes;
    return n;
}
