/* Internal to src/model: the mixers of the layer kinds (sd_layer_kind) and
 * the attention pieces layer_attn.c shares with them. Each mixer reads the
 * normed input rows c->sc.xb[S][n_embd] of a batch at positions
 * c->kv.len..c->kv.len+S-1 and writes its output rows (before the residual add)
 * back to c->sc.xb, computing every row with operations that do not depend on S
 * or on the thread count (batch invariance, ARCHITECTURE.md §5). */
#ifndef SD_MODEL_LAYERS_H
#define SD_MODEL_LAYERS_H

#include "model/context.h"

/* layer_attn.c: per head of every row of x[S][n_heads * head_dim], the optional
 * RMSNorm over the head (norm_w), then RoPE on its first n_rot dims at
 * position pos0 + s, or pos0 + depth[s] when depth is given (a token tree). */
void sd_fwd_norm_rope_heads(const sd_model *m, float *x, const float *norm_w, int S, int n_heads, int32_t pos0,
                            const int32_t *depth);
/* layer_attn.c: rounds the rows c->sc.k, c->sc.v [S][kv_dim] to f16 into the KV cache
 * of attention layer slot at positions pos0.. */
void sd_fwd_kv_store(sd_context *c, int slot, int32_t pos0, int S);
/* layer_attn.c: causal attention of q[S][n_head * head_dim] over the KV cache of
 * slot (which holds positions up to pos0 + S - 1) into out[S][n_head * head_dim]. */
void sd_fwd_attention(sd_context *c, int slot, int32_t pos0, int S, const float *q, float *out);

/* forward_tree.c: the attention of sd_fwd_attention under the tree mask of
 * c->kv.tree (memory/kv_cache.h): node s's queries over the committed rows 0..pos0-1
 * and then its own key slots, in position order, so each node gets the
 * arithmetic of the last query of its chain. */
void sd_fwd_attention_tree(sd_context *c, int slot, int32_t pos0, int S, const float *q, float *out);

/* forward.c: the layers over the R rows of rows->sc.x (their embeddings in),
 * which are the rows of n_seq sequences in turn, S[i] rows of seqs[i] at its
 * positions seqs[i].kv.len..: the row-wise steps (norms, the mixers' in and
 * out steps, the FFN) once over all R rows on rows, the mixers' seq step and
 * the hidden-state hook on each sequence. The single forward is one sequence
 * that is its own rows (seqs = rows); the ragged forward gives views whose
 * scratch rows are runs of the group's (forward_ragged.c). */
void sd_fwd_layers(sd_context *rows, int R, sd_context *seqs, const int *S, int n_seq);
/* forward.c: one batch of S <= n_batch tokens at KV slots len..len+S-1
 * (checked by the caller); logits of rows r0..r1-1 to logits[r1 - r0][n_vocab]. */
void sd_fwd_batch(sd_context *c, const int32_t *tokens, int S, int r0, int r1, float *logits);
/* forward.c: the checks of every forward (arch, S, n_rows, room, token ids). */
sd_status sd_fwd_check_batch(const sd_context *c, const int32_t *tokens, int32_t S, int32_t n_rows,
                             const float *logits, sd_err *err);

/* forward.c: the pieces of sd_forward_ragged (forward_ragged.c) shares with
 * sd_fwd_batch: rmsnorm of every row of x[S][n] into out; the hidden-state
 * hook's copy of the S rows entering layer il (n_layer: after output_norm)
 * at positions pos0..; the output head on rows r0..r1-1 of c->sc.x. */
void sd_fwd_rmsnorm_rows(float *out, const float *x, const float *w, int S, int64_t n, float eps);
void sd_fwd_hidden_store(sd_context *c, int il, int S, int32_t pos0);
void sd_fwd_output_head(sd_context *c, int r0, int r1, float *logits);

/* Every mixer is split in three so that a ragged batch of several sequences
 * (forward_ragged.c) runs the matmuls once over all its rows and only the
 * per-sequence part per sequence: in reads c->sc.xb and runs the input
 * projections over the S rows (row-wise: any rows may share the call);
 * seq is the part that reads and writes the sequence's memory (RoPE at
 * its positions, the KV rows and attention; the GDN recurrence) for S rows
 * of ONE sequence at positions c->kv.len..; out is the row-wise rest
 * (gates, output projection into c->sc.xb). */
typedef void (*sd_layer_step)(sd_context *c, const sd_layer *L, int S);
typedef struct sd_mixer {
    sd_layer_step in, seq, out;
} sd_mixer;
/* forward.c: the mixer of L's kind (the one table of layer kinds). */
const sd_mixer *sd_mixer_of(const sd_layer *L);
/* forward.c: L's mixer on S rows of one sequence: in, seq, out in a row. */
void sd_layer_mixer(sd_context *c, const sd_layer *L, int S);

/* layer_attn.c: the softmax attention of the dense architectures (llama, qwen2,
 * qwen3; the EAGLE-3 head's layer, whose normed input rows are [e ; g],
 * 2 * n_embd wide: the width of wq's input). */
void sd_layer_attn_in(sd_context *c, const sd_layer *L, int S);
void sd_layer_attn_seq(sd_context *c, const sd_layer *L, int S);
void sd_layer_attn_out(sd_context *c, const sd_layer *L, int S);
/* layer_attn_gated.c: qwen35 full attention (llama.cpp src/models/qwen35.cpp build_layer_attn). */
void sd_layer_attn_gated_in(sd_context *c, const sd_layer *L, int S);
void sd_layer_attn_gated_seq(sd_context *c, const sd_layer *L, int S);
void sd_layer_attn_gated_out(sd_context *c, const sd_layer *L, int S);
/* layer_gdn.c: qwen35 Gated DeltaNet (qwen35.cpp build_layer_attn_linear); advances
 * the layer's recurrent state by the S tokens. Its three steps:
 * sd_gdn_project: the projections of the normed rows c->sc.xb (batched matmuls)
 *   into c->sc.mix [S][conv_dim] (the conv inputs), c->sc.z, c->sc.beta and c->sc.alpha
 *   [S][H_v] (raw): with the state, everything the recurrence reads, so
 *   keeping them per token is enough to replay it;
 * sd_gdn_recur: the recurrence token by token (conv, SiLU, L2 norm, gates,
 *   delta rule, gated norm) into c->sc.gdn_o [S][H_v * S_state], advancing the
 *   state; no matmul;
 * sd_gdn_out: ssm_out · gdn_o into c->sc.xb. */
void sd_gdn_project(sd_context *c, const sd_layer *L, int S);
void sd_gdn_recur(sd_context *c, const sd_layer *L, int S);
void sd_gdn_out(sd_context *c, const sd_layer *L, int S);

/* layer_ffn.c: the feed-forward half (SwiGLU) of every architecture: c->sc.x +=
 * W_down (silu(W_gate m) * W_up m), m = RMSNorm(c->sc.x; ffn_norm), or the
 * routed experts of a MoE layer (layer_moe.c). Uses c->sc.xb. */
void sd_layer_ffn(sd_context *c, const sd_layer *L, int S);
/* layer_ffn.c: out[n][down->n_out] = down · (silu(gate · x) * (up · x)) over
 * the n rows x[n][gate->n_in]; g and u [n][gate->n_out] are overwritten (g
 * ends as the SwiGLU product); out may be x. The dense FFN, each routed
 * expert and the shared expert. */
void sd_ffn_swiglu(const sd_matrix *gate, const sd_matrix *up, const sd_matrix *down, const float *x, int n,
                   float *g, float *u, float *out, int n_threads);

/* forward.c: the frame of a head's forward (forward_eagle3.c,
 * forward_mtp.c) over S pairs (tokens[s], g[s] [n_embd]): the checks (what
 * names the head in the messages: bad batch, context full, token id), then
 * chunks of <= n_batch pairs, each run by chunk, whose logits rows r0..n-1
 * (r0 = n: none) go to logits at their place among the last n_tail rows
 * (n_logits wide). */
typedef void (*sd_head_chunk)(sd_context *c, const sd_model *target, const int32_t *tokens, const float *g, int S,
                              float *y, int r0, float *logits);
sd_status sd_fwd_head(sd_context *c, sd_head_chunk chunk, const char *what, const sd_model *target,
                      const int32_t *tokens, const float *g, int32_t S, float *y, int32_t n_tail, float *logits,
                      int32_t n_logits, sd_err *err);

#endif
