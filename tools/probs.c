/* sd-probs: the next-token distribution at every position of a token chain,
 * for parity checks against another engine (bench/vs-llamacpp/moe_parity.sh):
 *
 *   sd-probs MODEL.gguf ID,ID,...
 *
 * Runs the ids as one forward (batch invariance makes that the same as one
 * step at a time) and prints, per position, one line with the softmax
 * probabilities of every token id in order. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/model.h"
#include "numerics/ops.h"

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: sd-probs MODEL.gguf ID,ID,...\n");
        return 2;
    }
    int32_t ids[512];
    int n = 0;
    for (char *p = argv[2]; *p && n < 512;) {
        ids[n++] = (int32_t)strtol(p, &p, 10);
        if (*p == ',') p++;
    }
    sd_err err = {0};
    sd_model *m = NULL;
    sd_context *c = NULL;
    if (sd_model_load(argv[1], &m, &err) || sd_context_init(m, n + 8, 64, 0, &c, &err)) {
        fprintf(stderr, "sd-probs: %s\n", err.msg);
        return 1;
    }
    const int32_t V = m->hp.n_vocab;
    float *lg = malloc((size_t)n * (size_t)V * sizeof *lg);
    if (!lg || sd_forward(c, ids, n, lg, &err)) {
        fprintf(stderr, "sd-probs: %s\n", lg ? err.msg : "out of memory");
        return 1;
    }
    for (int s = 0; s < n; s++) {
        float *row = lg + (int64_t)s * V;
        sd_softmax(row, V);
        for (int32_t t = 0; t < V; t++) printf(t ? " %.7g" : "%.7g", row[t]);
        printf("\n");
    }
    free(lg);
    sd_context_free(c);
    sd_model_free(m);
    return 0;
}
