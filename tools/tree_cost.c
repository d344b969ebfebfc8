/* sd-tree_cost: the cost of a verify forward as a chain of S tokens and as a
 * token tree of S nodes (model.h sd_forward_tree), relative to a one-token
 * step: c_v(S) = t(S) / t(1) (ARCHITECTURE.md §2), after a context of P tokens.
 * The tree is the decode loop's shape (decode/tree.h sd_tree_from_top): a
 * root, a chain of ceil((S - 1) / 2) and one sibling per chain token from
 * level 1 on. Chain, tree and single steps alternate, each rolled back after
 * timing (truncate; keep_path of nothing), medians of R repetitions.
 *
 *   sd-tree_cost MODEL.gguf [-t THREADS] [-p P] [-r R] [-s S1,S2,...]
 *
 * Prints one line per S: S, ms chain, ms tree, c_v chain, c_v tree. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "model/model.h"

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_double);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* Parents of the loop's tree of S nodes: root, chain of k, then siblings of chain nodes 1.. */
static void tree_shape(int S, int32_t *parent) {
    int k = S / 2; /* chain nodes 1..k, siblings k+1..S-1 (S - 1 - k <= k) */
    parent[0] = -1;
    for (int i = 1; i <= k; i++) parent[i] = i - 1;
    for (int i = k + 1; i < S; i++) parent[i] = i - k - 1;
}

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: sd-tree_cost MODEL.gguf [-t THREADS] [-p P] [-r R] [-s S1,S2,...]\n");
        return 2;
    }
    int threads = 2, P = 128, R = 15;
    int sizes[32] = {2, 3, 5, 7, 9, 13, 17}, n_sizes = 7;
    for (int i = 2; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "-t")) threads = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-p")) P = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-r")) R = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "-s")) {
            n_sizes = 0;
            for (char *t = strtok(argv[i + 1], ","); t && n_sizes < 32; t = strtok(NULL, ",")) sizes[n_sizes++] = atoi(t);
        }
    }
    sd_model *m = NULL;
    sd_context *c = NULL;
    sd_err err = {0};
    if (sd_model_load(argv[1], &m, &err) != SD_OK || sd_context_init(m, P + 128, 64, threads, &c, &err) != SD_OK) {
        fprintf(stderr, "sd-tree_cost: %s\n", err.msg);
        return 1;
    }
    const int V = m->hp.n_vocab;
    int32_t *tok = malloc((size_t)(P + 64) * sizeof *tok), parent[64];
    float *logits = malloc((size_t)64 * V * sizeof *logits);
    for (int i = 0; i < P + 64; i++) tok[i] = (int32_t)((i * 7919u + 13u) % (unsigned)V);
    if (sd_forward_tail(c, tok, P, 0, NULL, &err) != SD_OK) return fprintf(stderr, "%s\n", err.msg), 1;
    double *t1 = malloc((size_t)R * sizeof *t1), *tc = malloc((size_t)R * sizeof *tc), *tt = malloc((size_t)R * sizeof *tt);
    printf("# %s, %d threads, context %d, median of %d\n# S  chain_ms  tree_ms  c_v_chain  c_v_tree\n", argv[1], threads,
           P, R);
    for (int si = 0; si < n_sizes; si++) {
        const int S = sizes[si];
        if (S < 1 || S > 64) continue;
        tree_shape(S, parent);
        for (int r = 0; r < R; r++) {
            double t0 = sd_now_s();
            sd_forward(c, tok + P, 1, logits, &err);
            t1[r] = sd_now_s() - t0;
            sd_context_truncate(c, P);
            t0 = sd_now_s();
            sd_forward(c, tok + P, S, logits, &err);
            tc[r] = sd_now_s() - t0;
            sd_context_truncate(c, P);
            t0 = sd_now_s();
            if (sd_forward_tree(c, tok + P, parent, S, logits, &err) != SD_OK) return fprintf(stderr, "%s\n", err.msg), 1;
            tt[r] = sd_now_s() - t0;
            sd_context_keep_path(c, NULL, 0, &err);
        }
        double m1 = median(t1, R), mc = median(tc, R), mt = median(tt, R);
        printf("%3d  %8.2f  %8.2f  %9.3f  %8.3f\n", S, mc * 1e3, mt * 1e3, mc / m1, mt / m1);
        fflush(stdout);
    }
    free(t1), free(tc), free(tt), free(tok), free(logits);
    sd_context_free(c);
    sd_model_free(m);
    return 0;
}
