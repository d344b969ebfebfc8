/* Decoder-only transformers read from GGUF: the dense llama (Llama 2/3),
 * qwen2, qwen3, and the hybrid qwen35 (Qwen3.5 / Qwen3.6: Gated DeltaNet
 * layers with a recurrent state, and gated full-attention layers). Key and
 * tensor names are llama.cpp's (src/llama-arch.cpp): `{arch}.embedding_length`,
 * `blk.N.attn_q.weight`, ... One file per architecture (arch_llama.c,
 * arch_qwen2.c, arch_qwen3.c, arch_qwen35.c) fills the weights; the forward is
 * shared in forward.c with the per-arch switches in hparams and one file per
 * layer kind (layer_attn_gated.c, layer_gdn.c). */
#ifndef SD_MODEL_MODEL_H
#define SD_MODEL_MODEL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "format/gguf.h"
#include "numerics/matmul.h"
#include "tokenizer/tokenizer.h"

/* SD_ARCH_QWEN35_MTP is no file's architecture: the view of a qwen35 file's
 * MTP block that its drafter runs (sd_mtp_view_init). */
typedef enum sd_arch {
    SD_ARCH_LLAMA = 1,
    SD_ARCH_QWEN2,
    SD_ARCH_QWEN3,
    SD_ARCH_QWEN35,
    SD_ARCH_EAGLE3,
    SD_ARCH_QWEN35_MTP,
    SD_ARCH_QWEN3MOE,  /* qwen3 layers with a routed-expert FFN (arch_qwen3moe.c) */
    SD_ARCH_QWEN35MOE, /* qwen35 layers with routed experts + a gated shared expert (arch_qwen35moe.c) */
    SD_ARCH_DFLASH,    /* a DFlash block drafter (arch_dflash.c, forward_dflash.c) */
} sd_arch;

/* What a layer's mixer is (the FFN half is the same SwiGLU for all). */
typedef enum sd_layer_kind {
    SD_LAYER_ATTN = 0,   /* softmax attention (llama, qwen2, qwen3) */
    SD_LAYER_ATTN_GATED, /* qwen35 full attention: joint Q + output gate, Q/K norm, partial NEOX RoPE */
    SD_LAYER_GDN,        /* qwen35 Gated DeltaNet: causal conv + delta rule over a recurrent state */
} sd_layer_kind;

typedef struct sd_hparams {
    sd_arch arch;
    char arch_name[32];   /* general.architecture */
    int32_t n_vocab;
    int32_t n_embd;       /* {arch}.embedding_length */
    int32_t n_layer;      /* layers the forward runs: {arch}.block_count - nextn_predict_layers */
    int32_t n_layer_all;  /* {arch}.block_count (qwen35: trunk + MTP layers) */
    int32_t n_nextn;      /* {arch}.nextn_predict_layers (qwen35 MTP blocks, not run; default 0) */
    bool mtp_only;        /* qwen35 "mtp_only" file (llama.cpp convert_hf_to_gguf.py --mtp, mtp-*.gguf): the
                             MTP block, token_embd, output_norm and output, no trunk. Not runnable as a model
                             (sd_context_init refuses it); the MTP drafter of a target (sd_mtp_check) */
    int32_t n_head;       /* {arch}.attention.head_count */
    int32_t n_head_kv;    /* {arch}.attention.head_count_kv (default n_head) */
    int32_t head_dim;     /* {arch}.attention.key_length (default n_embd / n_head) */
    int32_t n_ff;         /* {arch}.feed_forward_length */
    int32_t n_ctx_train;  /* {arch}.context_length */
    int32_t n_rot;        /* {arch}.rope.dimension_count (default head_dim; qwen35: < head_dim,
                             NEOX pairs (i, i + n_rot/2), dims >= n_rot pass unrotated) */
    float rope_base;      /* {arch}.rope.freq_base (default 10000) */
    float rope_freq_scale;/* 1 / {arch}.rope.scaling.factor for linear scaling, else 1 */
    float rms_eps;        /* {arch}.attention.layer_norm_rms_epsilon */
    bool rope_neox;       /* qwen2/qwen3: true; llama: false */
    bool qkv_bias;        /* qwen2 */
    bool qk_norm;         /* qwen3 */
    bool tied_output;     /* no output.weight: token_embd is reused */
    /* qwen35 Gated DeltaNet (llama.cpp src/models/qwen35.cpp load_arch_hparams);
     * all 0 for the dense architectures. */
    int32_t ssm_conv_kernel; /* K: {arch}.ssm.conv_kernel */
    int32_t ssm_state;       /* S: head size of q, k and v: {arch}.ssm.state_size */
    int32_t ssm_n_v_heads;   /* H_v: {arch}.ssm.time_step_rank (= ssm.inner_size / S) */
    int32_t ssm_n_k_heads;   /* H_k: {arch}.ssm.group_count; V head h reads Q/K head h mod H_k */
    int32_t ssm_conv_dim;    /* channels convolved: 2 * H_k * S + H_v * S */
    int32_t n_layer_gdn;     /* trunk layers that are Gated DeltaNet (the rest are full attention) */
    /* Mixture of experts (qwen3moe, qwen35moe; docs/MOE.md); all 0 for dense models. */
    int32_t n_expert;        /* E: {arch}.expert_count */
    int32_t n_expert_used;   /* k: {arch}.expert_used_count, experts each token runs */
    int32_t n_ff_exp;        /* {arch}.expert_feed_forward_length (default n_ff / k) */
    int32_t n_ff_shexp;      /* {arch}.expert_shared_feed_forward_length (qwen35moe; default n_ff), 0: none */
    /* eagle3 draft heads only (llama.cpp src/models/eagle3.cpp, keys eagle3.*) */
    int32_t target_layers[8];  /* target_layers: target layer INPUT ids (== target n_layer: final normed hidden);
                                  eagle3: 3 of them, dflash: n_target_layers */
    int32_t n_target_layers;   /* dflash: ids in target_layers (1..SD_HIDDEN_MAX_IDS) */
    int32_t dflash_block;      /* dflash.block_size: tokens of one block, the anchor + block - 1 drafts */
    int32_t mask_token;        /* dflash: tokenizer.ggml.mask_token_id, the token of a block's undrafted slots */
    int32_t n_embd_tgt;        /* target_hidden_size */
    int32_t n_draft_vocab;     /* rows of the head's logits: d2t entries, else n_vocab */
    bool norm_before_residual; /* the attention residual is the normed g, not g */
    bool norm_before_fc;       /* RMSNorm(features; enc.output_norm) before fc */
} sd_hparams;

typedef struct sd_layer {
    sd_layer_kind kind;
    int32_t slot;                  /* attention: the layer's index in the KV cache; GDN: in the recurrent state */
    const float *attn_norm;        /* [n_embd] (f32 copy, owned) */
    sd_matrix wq, wk, wv, wo;      /* gated attention: wq is {n_embd, 2 * n_head * head_dim}, per head [q | gate] */
    const float *attn_norm_2;      /* eagle3: hidden_norm on g [n_embd], else NULL */
    const float *bq, *bk, *bv;     /* qwen2 biases or NULL */
    const float *q_norm, *k_norm;  /* qwen3 / qwen35 attention [head_dim] or NULL */
    const float *ffn_norm;         /* qwen35: blk.N.post_attention_norm (the pre-FFN norm) */
    sd_matrix w_gate, w_up, w_down;
    /* Gated DeltaNet (kind SD_LAYER_GDN): tensor names blk.N.<name> */
    sd_matrix ssm_qkv;             /* attn_qkv {n_embd, conv_dim}: conv input, q | k | v */
    sd_matrix ssm_z;               /* attn_gate {n_embd, H_v * S}: output gate z */
    sd_matrix ssm_beta, ssm_alpha; /* ssm_beta / ssm_alpha {n_embd, H_v} */
    sd_matrix ssm_out;             /* ssm_out {H_v * S, n_embd} */
    const float *conv_w;           /* ssm_conv1d.weight {K, conv_dim}, kept transposed as [K][conv_dim] */
    const float *dt_bias;          /* ssm_dt.bias [H_v] */
    const float *ssm_a;            /* ssm_a [H_v] = -exp(A_log) as stored */
    const float *ssm_norm;         /* ssm_norm.weight [S], shared by every V head */
    /* Mixture of experts: when set, the FFN half is the routed experts of
     * model/moe.h (layer_moe.c) and w_gate / w_up / w_down are unbound. */
    struct sd_moe *moe;
} sd_layer;

/* A qwen35 file's MTP ("nextn") block, blk.<n_layer>.* (llama.cpp
 * src/models/qwen35.cpp load_arch_tensors and graph_mtp; fact sheet §1.2,
 * §5.5): a gated full-attention block whose input is eh_proj of
 * [RMSNorm(Emb(x); enorm) ; RMSNorm(h; hnorm)], h the trunk's hidden after
 * output_norm, and whose output goes through head_norm to the lm head. */
typedef struct sd_nextn {
    bool present;            /* nextn_predict_layers == 1 and the block bound */
    sd_layer layer;          /* attn_norm, attn_q (with gate), attn_k/v/output, q/k norms,
                                post_attention_norm, ffn_*; kind SD_LAYER_ATTN_GATED, slot 0 */
    sd_matrix eh_proj;       /* nextn.eh_proj {2 * n_embd, n_embd} */
    const float *enorm, *hnorm;
    const float *head_norm;  /* nextn.shared_head_norm, else output_norm */
    sd_matrix embd;          /* nextn.embed_tokens (data NULL: the trunk's token_embd) */
    sd_matrix head;          /* nextn.shared_head_head (data NULL: the trunk's output) */
} sd_nextn;

typedef struct sd_model {
    sd_hparams hp;
    gguf_ctx *gguf;          /* owned; weights point into its mapping */
    char repack_note[256];   /* "" or why the auto rule left the matrices unrepacked (sd_load_opts) */
    sd_tokenizer *tok;       /* owned */
    sd_matrix tok_embd;      /* [n_vocab][n_embd] (eagle3: optional, data NULL = the target's) */
    const float *output_norm;
    const float *rope_freqs; /* llama: [n_rot/2] frequency divisors (rope_freqs.weight, Llama 3.1+) or NULL */
    sd_matrix output;        /* lm head: output.weight, or token_embd if tied (eagle3: optional,
                                data NULL = the target's; rows = n_draft_vocab) */
    sd_matrix fc;            /* eagle3: fc.weight {3 * n_embd_tgt, n_embd}; dflash {n_ids * n_embd, n_embd} */
    const float *enc_norm;   /* eagle3: enc.output_norm.weight [3 * n_embd_tgt] (norm_before_fc);
                                dflash: [n_embd], after fc */
    int32_t *d2t;            /* eagle3, dflash: [n_draft_vocab] absolute target ids (I64 d2t, checked), owned; or NULL */
    sd_layer *layers;        /* [n_layer] (the trunk; a qwen35 file's MTP blocks blk.n_layer.. are
                                left in the file, unbound: a drafter finds them in gguf by name) */
    sd_nextn nextn;          /* qwen35: the MTP block when the file has one (else present = false) */
    float **owned_f32;       /* f32 copies of norm/bias vectors, freed with the model */
    int n_owned_f32;
    uint64_t owned_f32_bytes;
} sd_model;

/* Loads a model file: reads hparams, builds the tokenizer, binds every tensor
 * (checking its type is supported and its shape is what the hparams imply).
 * Weight matrices are used in place from the file mapping (the matmul kernels
 * may keep a repacked copy); norm weights and biases are copied to f32.
 * n_vocab is the tokenizer's token count; token_embd must have that many rows.
 * Errors, one line starting with the file path:
 *   SD_ERR_IO           cannot open / map the file
 *   SD_ERR_FORMAT       malformed GGUF, missing key ("missing key
 *                       qwen3.block_count"), missing tensor ("missing tensor
 *                       blk.3.attn_q.weight"), wrong shape ("tensor X has
 *                       shape [..], expected [..]")
 *   SD_ERR_UNSUPPORTED  unknown architecture ("unknown architecture 'mamba'"),
 *                       tensor type ("tensor X: type q3_K not supported for
 *                       weight matrices"), rope scaling other than
 *                       none/linear,
 *                       value_length != key_length, partial rotary dims
 *   SD_ERR_NOMEM
 * On error *out is NULL. */
sd_status sd_model_load(const char *path, sd_model **out, sd_err *err);
/* How a load treats the matrices. no_repack: none gets a repacked copy, every
 * product reads the file's mapping in place (the kernels' GGUF-layout path;
 * the logits are bitwise the same, ARCHITECTURE.md §5); the weights then
 * live in the page cache, which the kernel can drop and read again, so a
 * file larger than the free memory runs. Otherwise (auto) the same happens
 * when the tensors' bytes plus a KV cache of plan_n_ctx positions (<= 0:
 * min(n_ctx_train, 4096)) of plan_type_k / plan_type_v (ggml ids) would
 * exceed the memory available (sd_mem_available), and m->repack_note says
 * so in one line. */
typedef struct sd_load_opts {
    bool no_repack;
    int32_t plan_n_ctx;
    uint32_t plan_type_k, plan_type_v;
} sd_load_opts;
sd_status sd_model_load_opts(const char *path, const sd_load_opts *opts, sd_model **out, sd_err *err);
void sd_model_free(sd_model *m);

/* Bytes of weights read by one forward step: every layer matrix (of an MoE
 * layer the router, k of the E experts and the shared expert) and the lm
 * head once, as stored in the file (token_embd only if it is the tied lm
 * head: a step reads one embedding row). For the roofline figure. */
uint64_t sd_model_weight_bytes(const sd_model *m);
/* Bytes of every layer matrix and the lm head as stored: sd_model_weight_bytes
 * with all the experts of an MoE layer instead of the k one token reads. */
uint64_t sd_model_matrix_bytes(const sd_model *m);
/* Number of parameters: all matrices (a tied lm head counted once), norms,
 * biases. */
uint64_t sd_model_n_params(const sd_model *m);

/* Memory the weights hold now, in bytes. After load the file pages of every
 * repacked matrix and copied vector are given back (gguf_release), so the
 * weights are the kernels' repacked copies plus whatever of the mapping is
 * still read or was read again: token_embd rows looked up, matrices the kernels
 * read in place (float types, the scalar path, an untied token_embd). */
typedef struct sd_model_memory {
    uint64_t packed;     /* repacked copies on the heap (a tied head counted once) */
    uint64_t f32;        /* f32 copies of norm weights and biases */
    uint64_t file;       /* pages of the file mapping present in this process, measured */
    bool file_measured;  /* false: /proc/self/pagemap unreadable, file = 0 */
} sd_model_memory;
void sd_model_memory_get(const sd_model *m, sd_model_memory *out);

/* ---- inference state: KV cache + scratch ---- */
typedef struct sd_context sd_context;

/* KV cache of n_ctx positions (f16, IEEE binary16: 2 * n_layer * n_ctx *
 * n_head_kv * head_dim * 2 bytes, e.g. 448 MiB for Qwen3-0.6B at n_ctx 4096;
 * keys and values are rounded to nearest even once when written and every
 * query reads them from there), scratch sized for batches up to n_batch. n_ctx <= 0
 * means min(n_ctx_train, 4096); n_batch <= 0 means 64; n_threads <= 0 means
 * sd_default_threads(). n_threads is passed to every sd_matmul and used for
 * attention (one (position, head) pair per thread at a time); results do not
 * depend on it. The model must outlive the context. Errors: SD_ERR_NOMEM. */
sd_status sd_context_init(const sd_model *m, int32_t n_ctx, int32_t n_batch, int n_threads,
                          sd_context **out, sd_err *err);
/* The same with the K rows of the cache of ggml type type_k and the V rows of
 * type_v: f16 as above, or one of llama.cpp's other cache types (f32, bf16,
 * q8_0, q5_0, q5_1, q4_0, q4_1, iq4_nl; ggml-common.h block layouts),
 * quantized once when written by the reference quantizers of
 * numerics/quant.h and widened exactly to f32 when read, so attention stays
 * batch-invariant and the same on every kernel path. Errors: SD_ERR_ARG (not
 * a cache type, or head_dim not whole blocks of it), SD_ERR_NOMEM. */
sd_status sd_context_init_kv(const sd_model *m, int32_t n_ctx, int32_t n_batch, int n_threads, uint32_t type_k,
                             uint32_t type_v, sd_context **out, sd_err *err);
/* The ggml types of c's K and V cache rows. */
void sd_context_kv_types(const sd_context *c, uint32_t *type_k, uint32_t *type_v);
void sd_context_free(sd_context *c);
/* Every page of c's buffers of positions (KV rows, hidden-state rows when
 * hooked), and of its activations when activations is set, resident now,
 * contents unchanged (memory/memory.h sd_memory_commit): a server's memory
 * at its working size from the start, not paged in as its slots first
 * reach long positions. */
void sd_context_commit(sd_context *c, bool activations);

int32_t sd_context_n_ctx(const sd_context *c);
/* Rows per forward batch (larger forwards are split). */
int32_t sd_context_n_batch(const sd_context *c);
/* Threads of its forwards (n_threads as resolved at init). */
int sd_context_n_threads(const sd_context *c);
/* The model c was made for (borrowed). */
const sd_model *sd_context_model(const sd_context *c);
/* Number of positions in the KV cache (the committed + speculative length). */
int32_t sd_context_len(const sd_context *c);
/* Rolls the KV cache back to n positions (n <= len; a larger n is ignored, a
 * negative one means 0): a counter, no copying. Rows past n are overwritten
 * by the next forward before anything reads them.
 * A model with recurrent layers (qwen35) cannot drop positions this way: its
 * recurrent state has absorbed them. There n = 0 resets the state (a fresh
 * sequence), n >= len does nothing, and 0 < n < len returns
 * SD_ERR_UNSUPPORTED with nothing changed (roll back with
 * sd_context_state_restore instead). Otherwise SD_OK. */
sd_status sd_context_truncate(sd_context *c, int32_t n);

/* Distinct experts the last forward batch ran in MoE layer il (u(S) of
 * ARCHITECTURE.md §2: 1 token runs k, a batch of S at most min(E, S * k)); 0 before
 * any forward, -1 when il is not an MoE layer of c's model. A forward longer
 * than n_batch is split: the count is its last piece's. For benchmarks. */
int32_t sd_context_moe_distinct(const sd_context *c, int32_t il);

/* ---- recurrent state (qwen35 Gated DeltaNet layers) ----
 * Per GDN layer and sequence, f32: the conv window, the last K - 1 raw conv
 * inputs ((K - 1) * conv_dim floats, oldest first), and the delta-rule state,
 * one S x S matrix per V head (H_v * S * S floats, [head][key i][value j]).
 * It is what the layers carry from one position to the next, so unlike the
 * KV cache it cannot be truncated; these calls checkpoint it instead. */

/* Bytes of recurrent state one sequence holds: sum over the GDN layers of
 * ((K - 1) * conv_dim + H_v * S * S) * 4; 0 for a model without recurrent
 * layers. */
uint64_t sd_model_recurrent_bytes(const sd_model *m);
/* Whether the model has recurrent layers (truncation then cannot drop positions). */
bool sd_model_is_recurrent(const sd_model *m);

/* Size of a snapshot of c: a 32-byte header (magic, the context length len
 * it was taken at, the payload size) plus sd_model_recurrent_bytes. Also for
 * a dense model (then the header only): a snapshot works for every model. */
size_t sd_context_state_bytes(const sd_context *c);
/* Writes the snapshot of c (its len and its recurrent state) to buf[size],
 * size >= sd_context_state_bytes(c); buf is the caller's. Errors: SD_ERR_ARG
 * (buf NULL or too small; nothing written). */
sd_status sd_context_state_save(const sd_context *c, void *buf, size_t size, sd_err *err);
/* Rolls c back to a snapshot taken from c (or a context of the same model)
 * at length p = the snapshot's len: the recurrent state is copied back and
 * the KV cache truncated to p, so the next forward continues exactly as it
 * did after the snapshot (bitwise). The KV rows 0..p-1 must still be the
 * snapshot's (the caller has not truncated below p and re-forwarded since).
 * Errors, state unchanged: SD_ERR_ARG (buf NULL, size or header not a
 * snapshot of this model's shape: "not a state snapshot", "snapshot of N
 * bytes, this model's is M"), SD_ERR_CONTEXT (p > sd_context_len(c)). */
sd_status sd_context_state_restore(sd_context *c, const void *buf, size_t size, sd_err *err);
/* dst takes src's recurrent state and length (KV rows 0..len-1 are copied
 * too): dst continues as src would. Both contexts must be of the same model
 * with n_ctx(dst) >= len(src). Errors: SD_ERR_ARG (other model),
 * SD_ERR_CONTEXT (dst too short); dst unchanged. */
sd_status sd_context_state_copy(sd_context *dst, const sd_context *src, sd_err *err);

/* ---- rollback captures (the primitives of decode/lm_hybrid.c) ----
 * A verify forward can keep, per position, what a rollback to that position
 * needs, in a ring of n_slots slots (slot p % n_slots for the step that takes
 * the sequence from p - 1 to p tokens):
 *   SD_CAPTURE_STATE   the whole recurrent state after the step (conv windows
 *                      and delta-rule states: sd_model_recurrent_bytes per
 *                      position): rolling back is copying one slot back;
 *   SD_CAPTURE_INPUTS  the step's inputs to the recurrence, per GDN layer the
 *                      conv input row (mix, conv_dim), the conv output after
 *                      SiLU and the q/k L2 norms (q | k | v, conv_dim), the
 *                      decay exp(g) and beta (H_v each): rolling back is
 *                      restoring a snapshot and re-running the recurrence
 *                      (sd_context_replay), no weight matrix read.
 * Nothing is captured for a dense model (the calls still work). */
typedef enum sd_capture_kind { SD_CAPTURE_NONE = 0, SD_CAPTURE_STATE, SD_CAPTURE_INPUTS } sd_capture_kind;

/* Sets the capture kind and ring size (n_slots >= 1; kind NONE frees the
 * ring), forgetting earlier captures; capturing is off until
 * sd_context_capture_from. Errors: SD_ERR_ARG, SD_ERR_NOMEM (nothing changed). */
sd_status sd_context_capture_init(sd_context *c, sd_capture_kind kind, int32_t n_slots, sd_err *err);

/* Writes every page of the capture ring once (the first call after
 * sd_context_capture_init; later calls return at once), so that the first
 * verify rounds of a decode do not pay for the ring's page faults (a first
 * touch faults in every 4 KiB page, tens of milliseconds for a ring of
 * tens of MB, which would be counted as the first rounds' time). Captures
 * already held are not disturbed (their positions stay recorded in the ring,
 * the data is only written where no capture is held yet: all of it, as the
 * ring is touched before any forward captures). */
void sd_context_capture_touch(sd_context *c);
/* Bytes one captured position takes for kind (all GDN layers). */
uint64_t sd_model_capture_bytes(const sd_model *m, sd_capture_kind kind);
/* Forwards from now on capture every step p >= p_first (INT32_MAX: none). */
void sd_context_capture_from(sd_context *c, int32_t p_first);
/* SD_CAPTURE_STATE: rolls c back to p tokens (1 <= p <= len) by copying the
 * state captured at step p back, the KV cache truncated to p. Errors, nothing
 * changed: SD_ERR_ARG (no STATE capture of step p in the ring). */
sd_status sd_context_capture_load(sd_context *c, int32_t p, sd_err *err);
/* SD_CAPTURE_INPUTS: advances c from len to p tokens (len < p <= n_ctx) by
 * re-running the recurrence of steps len + 1..p on their captured inputs: the
 * conv windows shift in the captured conv inputs (sd_conv_step) and every V
 * head runs sd_gdn_tokens on the captured q, k, v, decay, beta, the very
 * calls of the forward, so the state is bitwise the one a forward of those
 * tokens leaves. The KV rows of positions len..p-1 must still be the ones
 * the capturing forward wrote (it is a rollback: restore a snapshot taken
 * before that forward, then replay). Errors, nothing changed: SD_ERR_ARG (a
 * step missing from the ring, or no INPUTS capture). */
sd_status sd_context_replay(sd_context *c, int32_t p, sd_err *err);

/* Runs tokens[S] at positions len..len+S-1, appends them to the KV cache, and
 * writes logits[S][n_vocab] (every position; row s = the distribution of the
 * token after tokens[s]). Batches larger than n_batch are split internally.
 * Batch invariance (ARCHITECTURE.md §5): row s is bitwise the same for any S, any
 * split of the sequence into calls, any n_batch and any n_threads, given the
 * same tokens at positions 0..len+s (tests/model/test_batch_invariance.c).
 * S == 0 does nothing. Errors: SD_ERR_CONTEXT if len + S > n_ctx, SD_ERR_ARG
 * for a token id out of range or S < 0; the state is unchanged on error. */
sd_status sd_forward(sd_context *c, const int32_t *tokens, int32_t S, float *logits, sd_err *err);

/* sd_forward writing only the logits of the LAST n_tail rows (0 <= n_tail <=
 * S) to logits[n_tail][n_vocab]: row i is bitwise row S - n_tail + i of
 * sd_forward's output. Prefill and a draft model's catch-up need one row, and
 * the output head (n_vocab x n_embd, the largest matrix) is then run once
 * instead of S times. Errors as sd_forward (SD_ERR_ARG also for a bad n_tail). */
sd_status sd_forward_tail(sd_context *c, const int32_t *tokens, int32_t S, int32_t n_tail, float *logits,
                          sd_err *err);

/* A verify forward with the output head in two passes. sd_forward_head runs
 * tokens[S] (1 <= S <= n_batch) like sd_forward but writes only the logits of
 * the FIRST n_head rows (logits[n_head][n_vocab]); sd_forward_more then writes
 * the rest, rows n_head..S-1, to logits[S - n_head][n_vocab], if no other
 * forward or truncate came between. Every row is bitwise sd_forward's row. Why:
 * the head (n_vocab x n_embd) is the largest matrix, and a greedy verify reads
 * row t only if drafts 1..t were all accepted; up to sd_model_head_pass_rows
 * rows cost about one pass over its weights, more rows cost compute.
 * Errors: as sd_forward, and SD_ERR_ARG for S > n_batch or a bad n_head;
 * sd_forward_more: SD_ERR_ARG when no rows are pending. */
sd_status sd_forward_head(sd_context *c, const int32_t *tokens, int32_t S, int32_t n_head, float *logits,
                          sd_err *err);
sd_status sd_forward_more(sd_context *c, float *logits, sd_err *err);

/* ---- token trees (forward_tree.c; ARCHITECTURE.md §7) ----
 * Several candidate continuations verified in one forward. Node s of a tree
 * of S nodes has parent[s] in -1..s-1 (-1: a root, depth 0; else depth =
 * the parent's + 1), is stored at KV slot len + s and sits at position
 * len + depth(s); its query attends to the committed positions 0..len-1 and
 * to its own root path (ancestors, then itself) in position order: a tree
 * attention mask. Batch invariance extends to trees: row s of the logits is
 * bitwise the row the tokens of its root path give as a plain chain after
 * the same committed prefix (tests/model/test_forward_tree.c). */
#define SD_TREE_MAX 64

/* Runs the tree tokens[S], parent[S] (1 <= S <= min(n_batch, SD_TREE_MAX))
 * after the len committed positions; logits[S][n_vocab] (every node). The
 * context then holds len + S slots, the tree's nodes past the committed ones;
 * keep one root path with sd_context_keep_path (a truncate back to the old
 * len drops them all). Errors, state unchanged: SD_ERR_UNSUPPORTED (a model
 * with recurrent layers: a tree would need one recurrent state per branch),
 * SD_ERR_ARG (S out of range, a parent not in -1..s-1, token id), and
 * SD_ERR_CONTEXT (len + S > n_ctx). */
sd_status sd_forward_tree(sd_context *c, const int32_t *tokens, const int32_t *parent, int32_t S, float *logits,
                          sd_err *err);

/* Keeps the root path path[m] of the last sd_forward_tree (path[0] a root,
 * path[d] a child of path[d - 1]; m = 0 keeps nothing): the KV rows (and
 * hidden-state rows) of those nodes move to consecutive slots len0..len0+m-1
 * (len0 = the length before the tree), where they are bitwise what a chain
 * forward of the same tokens writes; the length becomes len0 + m. Errors,
 * state unchanged: SD_ERR_ARG (no tree pending, i.e. another forward or a
 * truncate came between, or path is not a root path of it). */
sd_status sd_context_keep_path(sd_context *c, const int32_t *path, int32_t m, sd_err *err);

/* ---- hidden-state hook for draft heads (EAGLE-3, MTP) ----
 * A head that reads the target (llama.cpp common/speculative.cpp, EAGLE-3's
 * `target_layers`) asks the target's context once for the hidden states it
 * needs; from then on every forward (prefill, verify, plain step, any split)
 * also stores, for each position it runs, one row of n_ids * n_embd floats:
 * [h(layer_ids[0]) | h(layer_ids[1]) | ...], where h(id) for id < n_layer is
 * the residual stream entering layer id (llama.cpp's t_layer_inp) and h(id)
 * for id == n_layer is the final hidden after output_norm (the input of the
 * output head). Storage is per absolute position ([n_ctx] rows, f32; e.g.
 * 48 MiB for three Qwen3-0.6B layers at n_ctx 4096), so a rollback needs
 * nothing: rows at positions >= len are stale until a forward rewrites them.
 * The logits do not change by a bit (the rows are copies, and the id ==
 * n_layer row is computed by the same per-row norm the head uses); rows are
 * batch-invariant like the logits. Without a request a forward only tests a
 * NULL pointer per layer.
 * layer_ids[n_ids]: 1 <= n_ids <= SD_HIDDEN_MAX_IDS, each in 0..n_layer.
 * A new request replaces the old one (rows of earlier positions are then not
 * filled until re-run: the caller asks before the prefill); asking again for
 * the same ids in the same order changes nothing (the rows stay). n_ids == 0
 * turns the hook off. Errors: SD_ERR_ARG (bad ids, naming the id and n_layer),
 * SD_ERR_NOMEM. */
#define SD_HIDDEN_MAX_IDS 8
sd_status sd_context_request_hidden(sd_context *c, const int32_t *layer_ids, int n_ids, sd_err *err);
/* The hidden row of position pos (n_ids * n_embd floats, borrowed until the
 * next request or free), or NULL when no hook is set or pos is not in
 * 0..len-1. */
const float *sd_context_hidden(const sd_context *c, int32_t pos);
/* Whether the hook stores exactly layer_ids[n_ids], in that order. */
bool sd_context_hidden_is(const sd_context *c, const int32_t *layer_ids, int n_ids);

/* ---- sequence state export (seq_state.c): what a prefix cache keeps ----
 * A context's first n positions as one buffer: a header, the K and V rows of
 * every attention layer (f16, n rows per layer and KV head), the recurrent
 * state (sd_model_recurrent_bytes; valid only at the length it was taken
 * at), and the hidden-hook rows (n rows) when a hook is set.
 * sd_context_seq_bytes: the buffer size for n positions (n < 0 counts as 0).
 * export: n in 0..len, and n == len for a model with recurrent layers.
 * Errors: SD_ERR_ARG (n out of range, buf NULL or too small), nothing written.
 * import: c takes the first n_keep positions of a buffer exported from a
 * context of the same model (n_keep <= the buffer's n; == for recurrent
 * models): KV rows and hidden rows 0..n_keep-1, the recurrent state, the
 * hidden hook's layer ids (the hook is re-requested: set or turned off as
 * the exporter's was), length n_keep, nothing pending. Errors, c unchanged:
 * SD_ERR_ARG (not a state of this shape, n_keep out of range), SD_ERR_CONTEXT
 * (more positions than n_ctx); SD_ERR_NOMEM (the hidden hook's rows; the hook is then off). */
size_t sd_context_seq_bytes(const sd_context *c, int32_t n);
sd_status sd_context_seq_export(const sd_context *c, int32_t n, void *buf, size_t size, sd_err *err);
sd_status sd_context_seq_import(sd_context *c, const void *buf, size_t size, int32_t n_keep, sd_err *err);

/* How many logits rows the output head serves in one streaming pass over its
 * weights (sd_matmul_pass_rows of the output matrix). */
int32_t sd_model_head_pass_rows(const sd_model *m);

/* ---- EAGLE-3 draft heads (general.architecture "eagle3"; forward_eagle3.c,
 * llama.cpp src/models/eagle3.cpp) ----
 * The head reads the target's hidden states at hp.target_layers (ask the
 * target's context with sd_context_request_hidden) and drafts one token per
 * step from a pair (token t, hidden g): draft KV position P holds the pair
 * (token P+1, g of target position P); a chained step feeds the head's own
 * pre-norm output y back as g (common/speculative.cpp). Its context is an
 * ordinary sd_context of the head model (one layer of KV cache). */

/* SD_OK if head can draft for target: target_hidden_size == target n_embd,
 * every target layer id in 0..target n_layer, the same vocabulary size, and
 * when the head borrows the target's token_embd or output, the same n_embd.
 * SD_ERR_ARG otherwise, naming the mismatch (the token lists themselves are
 * compared by the caller: decode/lm.h sd_lm_check_same_vocab). */
sd_status sd_eagle3_check(const sd_model *head, const sd_model *target, sd_err *err);

/* The encoder: g[S][n_embd] = fc(features[S][3 * n_embd_tgt]) (features in
 * target_layers order, as sd_context_hidden rows are; with norm_before_fc
 * they are first RMS-normed with enc.output_norm IN PLACE, so features is
 * overwritten). Row-wise: each row's bits do not depend on S.
 * c: a context of the head (for its thread count). */
void sd_eagle3_encode(sd_context *c, float *features, int32_t S, float *g);

/* The decoder over S pairs (tokens[s], g[s] [n_embd]) at positions
 * len..len+S-1 of the head's context (split by n_batch internally): appends
 * them to its KV cache; y[S][n_embd] (may be NULL) receives the pre-norm
 * outputs, the g of a chained next step; logits[n_tail][n_draft_vocab] the
 * logits of the last n_tail rows, in the DRAFT vocabulary (sd_eagle3_token
 * maps an id to the target's). target lends token_embd / output when the
 * head has none. Batch-invariant like sd_forward. Errors, state unchanged:
 * SD_ERR_CONTEXT (len + S > n_ctx), SD_ERR_ARG (bad S / n_tail, token id out
 * of range). */
sd_status sd_eagle3_forward(sd_context *c, const sd_model *target, const int32_t *tokens, const float *g,
                            int32_t S, float *y, int32_t n_tail, float *logits, sd_err *err);
/* The target token id of draft-vocabulary id d (d2t[d], or d without d2t). */
int32_t sd_eagle3_token(const sd_model *head, int32_t d);

/* ---- the qwen35 MTP head (forward_mtp.c; llama.cpp qwen35.cpp graph_mtp) ----
 * The head predicts token p+1 from the pair (token x_p, h_{p-1}), h the
 * target's hidden after output_norm (sd_context_request_hidden with id
 * n_layer); chained, h is the head's own output after head_norm. Pairs exist
 * from position 1 on (as the fixture's training script has them; llama.cpp
 * also runs position 0 with a zero h): index i of the head's context holds
 * the pair of position i + 1, which is the RoPE position its attention uses.
 * The head runs on a view: a model whose one layer is the target's MTP block
 * (weights borrowed), for an ordinary sd_context (one layer of KV cache). */

/* Whether mtp, a model with an MTP block (a qwen35 target's own, or an
 * mtp_only sidecar file), can draft for target: its pairs read target's
 * hidden after output_norm, so n_embd must match (the vocabularies are
 * sd_lm_check_same_vocab's). SD_OK, or SD_ERR_ARG / SD_ERR_UNSUPPORTED
 * with a one-line message naming both sizes. */
sd_status sd_mtp_check(const sd_model *mtp, const sd_model *target, sd_err *err);
/* A view of target's MTP block (target must outlive it). Errors:
 * SD_ERR_UNSUPPORTED (no MTP block: the message says so), SD_ERR_NOMEM. */
sd_status sd_mtp_view_init(const sd_model *target, sd_model **view, sd_err *err);
/* Frees the view only (not the borrowed weights). NULL-safe. */
void sd_mtp_view_free(sd_model *view);

/* The head over S pairs (tokens[s], h[s] [n_embd]) at indices len..len+S-1
 * of c, a context of a view (split by n_batch internally): appends them to
 * its KV cache; y[S][n_embd] (may be NULL) receives the outputs after
 * head_norm (the h of a chained next step); logits[n_tail][n_vocab] those of
 * the last n_tail rows. Batch-invariant like sd_forward. Errors, state
 * unchanged: SD_ERR_CONTEXT (len + S > n_ctx), SD_ERR_ARG (not a view, bad
 * S / n_tail, token id out of range). */
sd_status sd_mtp_forward(sd_context *c, const int32_t *tokens, const float *h, int32_t S, float *y, int32_t n_tail,
                         float *logits, sd_err *err);

/* ---- DFlash block drafters (general.architecture "dflash"; forward_dflash.c,
 * llama.cpp src/models/dflash.cpp, common/speculative.cpp) ----
 * A stack of Qwen3 layers whose KV cache holds, at each committed position P,
 * keys and values made from the target's hidden rows of P (hp.target_layers,
 * fused by fc and enc.output_norm): "injected" positions. A block is B =
 * hp.dflash_block tokens [anchor, mask, ..., mask] at the next B positions;
 * every block row attends to all injected positions and to every row of the
 * block (non-causal), and rows 1..B-1 give B-1 drafts in one forward. The
 * block's own K/V rows are scratch: the length does not move. */

/* SD_OK if head can draft for target: a dflash file with n_embd == the
 * target's (fc reads rows of that width), every target layer id in
 * 0..target n_layer, the same vocabulary size (the token lists are compared
 * by the caller: sd_lm_check_same_vocab). SD_ERR_ARG otherwise, one line
 * naming the mismatch and both sizes. */
sd_status sd_dflash_check(const sd_model *head, const sd_model *target, sd_err *err);

/* Appends S injected positions (len..len+S-1) to c, a context of a dflash
 * head, from features[S][n_ids * n_embd] (sd_context_hidden rows of the
 * target, in target_layers order). Row-wise: each position's K/V do not
 * depend on S. Errors, state unchanged: SD_ERR_ARG (not a dflash context,
 * S < 0 or S > n_batch), SD_ERR_CONTEXT (len + S > n_ctx). */
sd_status sd_dflash_inject(sd_context *c, const float *features, int32_t S, sd_err *err);

/* Runs one block tokens[B] (2 <= B <= min(hp.dflash_block, n_batch)) at
 * positions len..len+B-1 and writes the logits of rows 1..B-1 to
 * logits[B - 1][n_draft_vocab] (draft vocabulary: sd_eagle3_token maps it
 * through d2t). The length stays len. target lends token_embd / output when
 * the head has none. Errors, state unchanged: SD_ERR_ARG (B, a token id),
 * SD_ERR_CONTEXT (len + B > n_ctx). */
sd_status sd_dflash_block(sd_context *c, const sd_model *target, const int32_t *tokens, int32_t B, float *logits,
                          sd_err *err);

/* ---- several sequences in one batch (forward_ragged.c, docs/BATCHING.md) ----
 * A sequence is an sd_context of its own (its KV rows, its recurrent state,
 * snapshots and capture ring: every single-sequence call above works on it
 * unchanged); a group holds the activations of one ragged batch over up to
 * max_rows rows from any of them, so the matmuls of a step run once over the
 * rows of every sequence while attention and the GDN recurrence run per
 * sequence over its own memory. */
typedef struct sd_ctx_group sd_ctx_group;

/* A group for contexts of model m with n_ctx <= n_ctx (positions of the
 * per-thread attention scores), batches of up to max_rows rows in all,
 * n_threads as sd_context_init (<= 0: sd_default_threads()). Errors:
 * SD_ERR_ARG (an EAGLE-3 / MTP head, max_rows < 1), SD_ERR_NOMEM. */
sd_status sd_ctx_group_init(const sd_model *m, int32_t n_ctx, int32_t max_rows, int n_threads, sd_ctx_group **out,
                            sd_err *err);
void sd_ctx_group_free(sd_ctx_group *g);
/* The group's activations and the logits of all max_rows rows resident now
 * (the logits room is grown to max_rows rows here, not as verify windows
 * first ask for it; as sd_context_commit). Errors: SD_ERR_NOMEM. */
sd_status sd_ctx_group_commit(sd_ctx_group *g, sd_err *err);

/* One sequence's part of a ragged batch: tokens[S] (S >= 1) appended at
 * positions len(c)..len(c)+S-1, the logits of its LAST n_tail rows (0..S) to
 * logits[n_tail][n_vocab] (as sd_forward_tail). */
typedef struct sd_ragged_seq {
    sd_context *c;
    const int32_t *tokens;
    int32_t S, n_tail;
    float *logits;
} sd_ragged_seq;

/* One forward over the rows of n_seq distinct sequences (sum of S <=
 * max_rows). Batch invariance (ARCHITECTURE.md §5): every sequence's logits and
 * memory are bitwise what sd_forward_tail on it alone gives, whatever else
 * shares the batch. Pending state (a head resume, a token tree) of every
 * sequence is cleared. Errors (nothing changed): SD_ERR_ARG (another model,
 * a context with n_ctx above the group's, a sequence twice, a bad S, n_tail
 * or token id, a pending token tree), SD_ERR_CONTEXT (a sequence would pass
 * its n_ctx). */
sd_status sd_forward_ragged(sd_ctx_group *g, const sd_ragged_seq *seqs, int32_t n_seq, sd_err *err);

/* Where a sequence's forwards go when it is one of several served together:
 * with a hook set, sd_forward and sd_forward_tail check their arguments as
 * always (errors as there, nothing changed) and then hand the batch to
 * fn(user, c, tokens, S, n_tail, logits, err) instead of running it, which
 * must append it as sd_forward_tail would (typically by taking part in an
 * sd_forward_ragged step). The two-pass head and token trees are refused on a
 * hooked context (SD_ERR_UNSUPPORTED): they are single-sequence paths. fn
 * NULL removes the hook. */
typedef sd_status (*sd_forward_hook)(void *user, sd_context *c, const int32_t *tokens, int32_t S, int32_t n_tail,
                                     float *logits, sd_err *err);
void sd_context_set_forward_hook(sd_context *c, sd_forward_hook fn, void *user);
bool sd_context_forward_hooked(const sd_context *c);

#endif
