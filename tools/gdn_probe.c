/* sd-gdn_probe: how much of a qwen35 forward is the Gated DeltaNet layers'
 * own work, the part that is not a matmul (conv, SiLU, L2 norms, gates, the
 * delta rule, the gated norm: model/layer_gdn.c sd_gdn_recur).
 *
 *   sd-gdn_probe MODEL.gguf [-t THREADS] [-S TOKENS] [--reps R] [--ctx N]
 *
 * Fills the context with N tokens, then R times: one S-token forward (timed,
 * then rolled back with a state snapshot), and the recurrence of every GDN
 * layer alone on the inputs that forward left in the scratch (timed the same
 * way). Prints the medians and the share. Internal headers on purpose: it
 * times one stage of the forward. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "model/layers.h"

static int cmp(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *x, int n) {
    qsort(x, (size_t)n, sizeof *x, cmp);
    return n % 2 ? x[n / 2] : 0.5 * (x[n / 2 - 1] + x[n / 2]);
}

int main(int argc, char **argv) {
    const char *path = NULL;
    int threads = 2, S = 1, reps = 9, n_ctx_fill = 128;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-t") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-S") && i + 1 < argc) S = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "--ctx") && i + 1 < argc) n_ctx_fill = atoi(argv[++i]);
        else path = argv[i];
    }
    if (!path || S < 1 || S > 64 || reps < 1 || reps > 99 || threads < 1 || n_ctx_fill < 1 || n_ctx_fill > 4000) {
        fprintf(stderr, "usage: sd-gdn_probe MODEL.gguf [-t THREADS] [-S 1..64] [--reps 1..99] [--ctx 1..4000]\n");
        return 2;
    }
    sd_model *m = NULL;
    sd_context *c = NULL;
    sd_err err = {0};
    if (sd_model_load(path, &m, &err) != SD_OK || sd_context_init(m, n_ctx_fill + 72, 64, threads, &c, &err) != SD_OK) {
        fprintf(stderr, "sd-gdn_probe: %s\n", err.msg);
        return 1;
    }
    if (!sd_model_is_recurrent(m)) {
        fprintf(stderr, "sd-gdn_probe: %s has no Gated DeltaNet layers\n", path);
        return 1;
    }
    const int V = m->hp.n_vocab;
    int32_t *tok = malloc((size_t)(n_ctx_fill + S) * sizeof *tok);
    float *logits = malloc((size_t)64 * V * sizeof *logits);
    for (int i = 0; i < n_ctx_fill + S; i++) tok[i] = (int32_t)((i * 7919u + 13u) % (unsigned)V);
    for (int i = 0; i < n_ctx_fill; i += 64)
        sd_forward(c, tok + i, n_ctx_fill - i < 64 ? n_ctx_fill - i : 64, logits, &err);
    size_t nb = sd_context_state_bytes(c);
    void *snap = malloc(nb);
    sd_context_state_save(c, snap, nb, &err);
    double t_fwd[99], t_rec[99];
    for (int r = 0; r < reps; r++) {
        double t0 = sd_now_s();
        sd_forward(c, tok + n_ctx_fill, S, logits, &err);
        t_fwd[r] = sd_now_s() - t0;
        sd_context_state_restore(c, snap, nb, &err);
        /* c->sc.mix, z, beta, alpha hold the last GDN layer's inputs of that forward: the same shapes for every layer */
        t0 = sd_now_s();
        for (int il = 0; il < m->hp.n_layer; il++) /* (the gates it recomputes in place stay finite) */
            if (m->layers[il].kind == SD_LAYER_GDN) sd_gdn_recur(c, &m->layers[il], S);
        t_rec[r] = sd_now_s() - t0;
        sd_context_state_restore(c, snap, nb, &err);
    }
    double f = median(t_fwd, reps), g = median(t_rec, reps);
    printf("%s: %d threads, S = %d after %d tokens: forward %.3f ms, GDN recurrence (no matmul, %d layers) %.3f ms = "
           "%.1f%%\n",
           path, threads, S, n_ctx_fill, 1e3 * f, m->hp.n_layer_gdn, 1e3 * g, 100.0 * g / f);
    free(snap);
    free(tok);
    free(logits);
    sd_context_free(c);
    sd_model_free(m);
    return 0;
}
