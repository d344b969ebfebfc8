/* The feed-forward half of every layer (llama.cpp src/llama-graph.cpp
 * build_ffn with LLM_FFN_SILU, LLM_FFN_PAR):
 *
 *   out = Wdown · (silu(Wgate · m) * (Wup · m))
 *
 * once here for the dense FFN, each routed expert and the shared expert
 * (layer_moe.c). Every step is row-wise (sd_matmul computes each row alone,
 * SwiGLU is elementwise), so a row's bits do not depend on which rows run
 * together (batch invariance, ARCHITECTURE.md §5). */
#include "model/layers.h"
#include "model/moe.h"
#include "numerics/ops.h"

void sd_ffn_swiglu(const sd_matrix *gate, const sd_matrix *up, const sd_matrix *down, const float *x, int n,
                   float *g, float *u, float *out, int n_threads) {
    const sd_matrix *gate_up[2] = {gate, up};
    float *gate_up_out[2] = {g, u};
    sd_matmul_multi(gate_up, 2, x, n, gate_up_out, n_threads); /* one activation quantization, one thread wake-up */
    sd_swiglu(g, g, u, n * gate->n_out);
    sd_matmul(down, g, n, out, n_threads);
}

void sd_layer_ffn(sd_context *c, const sd_layer *L, int S) {
    if (L->moe) { /* routed experts (layer_moe.c) */
        sd_layer_moe(c, L, S);
        return;
    }
    const sd_hparams *hp = &c->m->hp;
    const int64_t n_embd = hp->n_embd;
    sd_fwd_rmsnorm_rows(c->sc.xb, c->sc.x, L->ffn_norm, S, n_embd, hp->rms_eps);
    sd_ffn_swiglu(&L->w_gate, &L->w_up, &L->w_down, c->sc.xb, S, c->sc.hb, c->sc.hb2, c->sc.xb, c->n_threads);
    sd_add(c->sc.x, c->sc.xb, S * n_embd);
}
