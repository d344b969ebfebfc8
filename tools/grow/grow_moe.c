/* The FFN of a qwen35 hybrid grown into a qwen35moe shape (sd-genmodel --grow
 * ... --shape qwen35-35b-a3b[-L4] | qwen35moe-tiny): E routed experts of width
 * F_e, top-k, plus a shared expert of width F_s, computing the small model's
 * dense FFN of f units exactly. Everything else is grow_q35.c's construction.
 *
 * The MoE FFN (docs/MOE.md steps 1-7, src/model/layer_moe.c) of the normed
 * input m: p = softmax(router m) over all E; the k largest p, weights
 * w_j = p_j / max(sum_j p_j, 2^-14); y = sum_j w_j E_j(m) + sigmoid(g_s . m) S(m),
 * E_j and S SwiGLU FFNs. The small FFN: y = sum_{u<f} down_u silu(gate_u . m) (up_u . m).
 *
 * 1. Every routed expert holds the same units: the first n_r = min(f, F_e)
 *    small units (gate/up rows, down columns; the rest zero). Each selected
 *    expert then outputs the same o_A, and y_routed = (sum_j w_j) o_A = o_A
 *    whichever experts are chosen: the weights are renormalised to sum 1 and the
 *    clamp never acts (the k largest of E probabilities sum to >= k/E, 1/32 for
 *    E = 256, k = 8, far above 2^-14). In f32 the k products and the sum each
 *    round (sum_j w_j = 1 within k ulp).
 * 2. The shared expert holds units [n_r, f) (needs f - n_r <= F_s; zero when
 *    f <= F_e) with ffn_down_shexp x 2 and ffn_gate_inp_shexp = 0: its gate is
 *    sigmoid(0) = 1/2 exactly, so it adds o_B, the rest of the small sum:
 *    y = o_A + o_B. The x 2 is a power of two: a Q8_0 block keeps its ints.
 *    (The fixture, f = 768 into F_e = F_s = 512: 512 units routed, 256 shared.)
 * 3. The stream: like every writer (grow_q35.c item 1), down rows go to the
 *    n_copy copies times a; the readers (gate/up, router) read the first copy's
 *    columns [0, d), which hold the small normed input m exactly.
 * 4. The router (ffn_gate_inp, f32 [E][D]) does not change the function (item
 *    1), only which experts' bytes a token reads, so it should route like a
 *    trained one: adjacent tokens share experts, not independently drawn ones.
 *    Expert e's logit is the small layer's own trained gate preactivation of
 *    unit u_e = floor(e f / E) (MoEfication, Zhang et al. 2022: a trained
 *    dense FFN's units split into experts routed by their activation): top-k
 *    picks the k most excited of E trained units of the same hidden state, a
 *    projection trained on this model's residual stream. An identity layer
 *    (all experts 0) routes with the last small layer's gate rows.
 * Q8_0: with a a power of two (a = 1 for the target fixture in these shapes)
 * the grown blocks are the small ones up to exponent shifts; the E experts are
 * one quantized expert copied. Q4_K re-quantizes. */
#include "grow/grow_moe.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "format/ggml_type.h"
#include "numerics/quant.h"

sd_status grow_moe_check(const grow_moe *m, const char *shape_name, sd_err *err) {
    if (m->n_used < 1 || m->n_used > m->n_expert || m->f > (int64_t)m->n_ff_exp + m->n_ff_shexp || m->D < m->d)
        return sd_err_set(err, SD_ERR_ARG, "shape %s cannot hold the model: its FFN of %lld units needs expert "
                          "width + shared expert width >= it (%d + %d)", shape_name, (long long)m->f, m->n_ff_exp,
                          m->n_ff_shexp);
    return SD_OK;
}

static int64_t n_routed(const grow_moe *m) { return m->f < m->n_ff_exp ? m->f : m->n_ff_exp; }

/* Reader rows: grown [W][D] = small [f][d] rows [u0, u1) at rows 0.., columns [0, d). */
static float *reader_rows(const grow_moe *m, const float *small, int64_t u0, int64_t u1, int64_t W) {
    float *big = sd_calloc((size_t)(W * m->D), sizeof *big);
    if (!big) return NULL;
    for (int64_t u = u0; u < u1; u++) memcpy(big + (u - u0) * m->D, small + u * m->d, (size_t)m->d * sizeof *big);
    return big;
}

/* Writer: grown [D][W] = small down [d][f] columns [u0, u1) times scale a, on every copy. */
static float *writer_cols(const grow_moe *m, const float *down, int64_t u0, int64_t u1, int64_t W, double scale) {
    float *big = sd_calloc((size_t)(W * m->D), sizeof *big);
    if (!big) return NULL;
    for (int64_t i = 0; i < m->d; i++)
        for (int b = 0; b < m->n_copy; b++)
            for (int64_t u = u0; u < u1; u++)
                big[(b * m->d + i) * W + (u - u0)] = (float)(down[i * m->f + u] * scale * m->a);
    return big;
}

/* The 3-D tensor of E copies of one expert [n_out][n_in] (f32 rows, freed here), quantized once. */
static sd_status add_same_experts(grower *g, const grow_moe *m, const char *name, float *one, int64_t n_in,
                                  int64_t n_out, sd_err *err) {
    uint64_t row_bytes = 0;
    if (!one) return sd_err_set(err, SD_ERR_NOMEM, "%s: out of memory", name);
    if (!ggml_row_bytes(g->type, (uint64_t)n_in, &row_bytes)) {
        free(one);
        return sd_err_set(err, SD_ERR_ARG, "%s: %lld columns do not fit type %s", name, (long long)n_in,
                          ggml_type_get(g->type)->name);
    }
    size_t one_bytes = 0, all_bytes = 0;
    uint8_t *dst = sd_mul_size((size_t)row_bytes, (size_t)n_out, &one_bytes) &&
                           sd_mul_size(one_bytes, (size_t)m->n_expert, &all_bytes)
                       ? grow_keep(g, all_bytes)
                       : NULL;
    if (!dst) {
        free(one);
        return sd_err_set(err, SD_ERR_NOMEM, "%s: out of memory", name);
    }
    for (int64_t r = 0; r < n_out; r++) {
        if (g->type == GGML_TYPE_F32) memcpy(dst + r * row_bytes, one + r * n_in, row_bytes);
        else sd_quantize_row(g->type, one + r * n_in, dst + r * row_bytes, n_in);
    }
    free(one);
    for (int e = 1; e < m->n_expert; e++) memcpy(dst + (size_t)e * one_bytes, dst, one_bytes);
    return grow_add_experts(g, name, n_in, n_out, m->n_expert, dst, err);
}

static sd_status add_zero_experts(grower *g, const grow_moe *m, const char *name, int64_t n_in, int64_t n_out,
                                  sd_err *err) {
    void *z = grow_zero_data(g, name, n_in, n_out * m->n_expert, err);
    return z ? grow_add_experts(g, name, n_in, n_out, m->n_expert, z, err) : err->code;
}

/* Item 4: router row e = small gate row floor(e f / E), columns [0, d). */
static sd_status add_router(grower *g, const grow_moe *m, const float *gate, const char *name, sd_err *err) {
    float *r = grow_keep(g, (size_t)(m->n_expert * m->D) * sizeof *r);
    if (!r) return sd_err_set(err, SD_ERR_NOMEM, "%s: out of memory", name);
    for (int64_t e = 0; e < m->n_expert; e++)
        memcpy(r + e * m->D, gate + (e * m->f / m->n_expert) * m->d, (size_t)m->d * sizeof *r);
    return grow_add_tensor(g, name, GGML_TYPE_F32, 2, m->D, m->n_expert, NULL, r, err);
}

/* A grown matrix from an f32 buffer (freed here), NOMEM if it is NULL. */
static sd_status add_mat(grower *g, const char *name, float *data, int64_t n_in, int64_t n_out, sd_err *err) {
    if (!data) return sd_err_set(err, SD_ERR_NOMEM, "%s: out of memory", name);
    sd_status st = grow_add_tensor(g, name, g->type, 2, n_in, n_out, data, NULL, err);
    free(data);
    return st;
}

sd_status grow_moe_ffn(grower *g, const grow_moe *m, int ils, int il, bool real, sd_err *err) {
    char sn[96], n[96];
#define SMALL(s) (snprintf(sn, sizeof sn, "blk.%d.%s", ils, s), sn)
#define NAME(s) (snprintf(n, sizeof n, "blk.%d.%s", il, s), n)
    float *gate = grow_small_f32(g, SMALL("ffn_gate.weight"), m->d, m->f, err);
    float *up = real ? grow_small_f32(g, SMALL("ffn_up.weight"), m->d, m->f, err) : NULL;
    float *down = real ? grow_small_f32(g, SMALL("ffn_down.weight"), m->f, m->d, err) : NULL;
    sd_status st = !gate || (real && (!up || !down)) ? err->code : SD_OK;
    const int64_t nr = n_routed(m), Fe = m->n_ff_exp, Fs = m->n_ff_shexp, D = m->D;
    st = st ? st : add_router(g, m, gate, NAME("ffn_gate_inp.weight"), err);
    if (real) {
        st = st ? st : add_same_experts(g, m, NAME("ffn_gate_exps.weight"), reader_rows(m, gate, 0, nr, Fe), D, Fe, err);
        st = st ? st : add_same_experts(g, m, NAME("ffn_up_exps.weight"), reader_rows(m, up, 0, nr, Fe), D, Fe, err);
        st = st ? st : add_same_experts(g, m, NAME("ffn_down_exps.weight"), writer_cols(m, down, 0, nr, Fe, 1.0), Fe, D, err);
    } else {
        st = st ? st : add_zero_experts(g, m, NAME("ffn_gate_exps.weight"), D, Fe, err);
        st = st ? st : add_zero_experts(g, m, NAME("ffn_up_exps.weight"), D, Fe, err);
        st = st ? st : add_zero_experts(g, m, NAME("ffn_down_exps.weight"), Fe, D, err);
    }
    /* item 2: gate logit 0 (f32 zeros), the rest of the units, down x 2 */
    float *zero_gate = st ? NULL : grow_keep(g, (size_t)D * sizeof *zero_gate);
    if (!st && !zero_gate) st = sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    st = st ? st : grow_add_tensor(g, NAME("ffn_gate_inp_shexp.weight"), GGML_TYPE_F32, 1, D, 1, NULL, zero_gate, err);
    if (real && m->f > nr) {
        st = st ? st : add_mat(g, NAME("ffn_gate_shexp.weight"), reader_rows(m, gate, nr, m->f, Fs), D, Fs, err);
        st = st ? st : add_mat(g, NAME("ffn_up_shexp.weight"), reader_rows(m, up, nr, m->f, Fs), D, Fs, err);
        st = st ? st : add_mat(g, NAME("ffn_down_shexp.weight"), writer_cols(m, down, nr, m->f, Fs, 2.0), Fs, D, err);
    } else {
        st = st ? st : grow_add_zero_matrix(g, NAME("ffn_gate_shexp.weight"), D, Fs, err);
        st = st ? st : grow_add_zero_matrix(g, NAME("ffn_up_shexp.weight"), D, Fs, err);
        st = st ? st : grow_add_zero_matrix(g, NAME("ffn_down_shexp.weight"), Fs, D, err);
    }
#undef SMALL
#undef NAME
    free(gate), free(up), free(down);
    return st;
}

sd_status grow_moe_keys(gguf_writer *w, const grow_moe *m, const char *arch) {
    char k[96];
#define KEY(s) (snprintf(k, sizeof k, "%s.%s", arch, s), k)
    sd_status st = gguf_writer_set_u32(w, KEY("expert_count"), (uint32_t)m->n_expert);
    st = st ? st : gguf_writer_set_u32(w, KEY("expert_used_count"), (uint32_t)m->n_used);
    st = st ? st : gguf_writer_set_u32(w, KEY("expert_feed_forward_length"), (uint32_t)m->n_ff_exp);
    st = st ? st : gguf_writer_set_u32(w, KEY("expert_shared_feed_forward_length"), (uint32_t)m->n_ff_shexp);
#undef KEY
    return st;
}

double grow_moe_active_params(const grow_moe *m) {
    return (double)m->D * ((double)m->n_expert + 1 + 3.0 * ((double)m->n_used * m->n_ff_exp + m->n_ff_shexp));
}

static double mat_bytes(uint32_t type, int64_t n_in, int64_t n_out) {
    uint64_t rb = 0;
    ggml_row_bytes(type, (uint64_t)n_in, &rb);
    return (double)rb * (double)n_out;
}

double grow_moe_bytes(const grow_moe *m, uint32_t type) {
    const int64_t D = m->D, E = m->n_expert;
    return 4.0 * D * (E + 1) + 2 * mat_bytes(type, D, m->n_ff_exp * E) + mat_bytes(type, m->n_ff_exp, D * E) +
           2 * mat_bytes(type, D, m->n_ff_shexp) + mat_bytes(type, m->n_ff_shexp, D);
}
