/* Token trees in the decode loop (ARCHITECTURE.md §7): build a tree from a
 * drafter's top candidates, verify it in one target forward with a tree
 * attention mask (sd_lm forward_tree: every node's logits bitwise its
 * chain's), accept the longest root path the target agrees with, and keep
 * exactly that path in the target's cache (sd_lm keep_path), so the next
 * round sees the cache a chain would have left. */
#ifndef SD_DECODE_TREE_H
#define SD_DECODE_TREE_H

#include <stdint.h>

#include "decode/lm.h"
#include "decode/sampler.h"
#include "decode/verify.h"
#include "model/model.h" /* SD_TREE_MAX: most nodes of a tree, the root included */

/* Node 0 is the root (a0, position n = the lm's len); node i > 0 has
 * parent[i] in 0..i-1 and sits at position n + depth[i]. */
typedef struct sd_tree {
    int32_t n;
    int32_t tok[SD_TREE_MAX], parent[SD_TREE_MAX], depth[SD_TREE_MAX];
} sd_tree;

/* The w best ids of x[n] by value, best first, ties to the lower id (so
 * out[0] is sd_argmax); out[w], w <= n. */
void sd_top_w(const float *x, int32_t n, int w, int32_t *out);

/* The static tree of EAGLE/Medusa style from a chain and its alternatives:
 * cand[k][w] holds, per chain step i, the drafter's w best tokens (cand[i][0]
 * the chain token, -1 where there are fewer). Nodes: the root a0, the chain
 * cand[0][0]..cand[k-1][0] (nodes 1..k, each the child of the one before),
 * then up to w - 1 siblings of each chain token, level 1 first, as long as
 * the tree has at most n_max nodes besides the root (n_max >= k; siblings
 * are leaves: they cost no drafter step). */
void sd_tree_from_top(sd_tree *t, int32_t a0, const int32_t *cand, int k, int w, int32_t n_max);

/* One tree verify round: forwards t's nodes (lm->forward_tree), walks from
 * the root taking, at each node, the child whose token is the target's own
 * choice there — argmax when sampling is greedy, else sd_sampler_pick_at at
 * the node's position + 1 (the pick plain sampling makes there, so the output
 * is byte-identical to plain sampling) — and stops at the first node with no
 * such child; that choice is the next a0. v->j = accepted nodes (path length
 * - 1); path[0..j] = the nodes (path[0] = 0). Then lm->keep_path keeps just
 * them: the lm holds n + 1 + j positions, as after a chain round.
 * logits: t->n rows. rm (NULL: unconstrained): rm->state[i] is node i's
 * grammar state, the state along its own root path (SD_GSTATE_DEAD for a
 * node the grammar refuses: the masked choice never walks into it).
 * Errors: the lm's, a grammar bound (state as before the round). */
sd_status sd_verify_tree(sd_lm *lm, const sd_tree *t, float *logits, sd_sampler *sm, const sd_rowmask *rm,
                         sd_verdict *v, int32_t *path, sd_err *err);

#endif
