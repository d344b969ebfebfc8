/* sd-genmodel --grow into a qwen35moe shape: the mixture-of-experts FFN that
 * computes a small dense FFN exactly (construction in grow_moe.c). */
#ifndef SD_TOOLS_GROW_MOE_H
#define SD_TOOLS_GROW_MOE_H

#include <stdbool.h>
#include <stdint.h>

#include "core/status.h"
#include "grow/grow_io.h"

typedef struct grow_moe {
    int64_t d, D, f; /* small width, grown width, small FFN units */
    int n_copy;      /* the stream: small row i is grown rows b d + i (b < n_copy) ... */
    double a;        /* ... times a (grow_q35.c item 1) */
    int n_expert, n_used, n_ff_exp, n_ff_shexp;
} grow_moe;

/* SD_ERR_ARG unless the small FFN fits: f <= n_ff_exp + n_ff_shexp. */
sd_status grow_moe_check(const grow_moe *m, const char *shape_name, sd_err *err);

/* Writes block il's FFN tensors (router, routed experts, shared expert and its
 * gate). real: the FFN of small block ils, exactly; else an identity FFN (every
 * expert 0) whose router still reads small block ils's ffn_gate rows. */
sd_status grow_moe_ffn(grower *g, const grow_moe *m, int ils, int il, bool real, sd_err *err);

/* The expert keys of arch (expert_count, expert_used_count,
 * expert_feed_forward_length, expert_shared_feed_forward_length). */
sd_status grow_moe_keys(gguf_writer *w, const grow_moe *m, const char *arch);

/* Matrix weights of one MoE FFN a token reads: the router, k experts, the shared one. */
double grow_moe_active_params(const grow_moe *m);

/* Bytes of one block's MoE FFN tensors of type (all experts). */
double grow_moe_bytes(const grow_moe *m, uint32_t type);

#endif
