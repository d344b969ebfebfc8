/* sd-mtp_alpha: the acceptance α of a qwen35 file's MTP head on a prompt, by
 * replay, with the target never rolled back (rollback of a recurrent target
 * is not needed to measure α): the greedy continuation G of n tokens is
 * decoded plainly first; then rounds as ARCHITECTURE.md §1 has them — the head
 * (decode/drafter_mtp.c) drafts k = min(K, n - generated - 1) tokens past a0,
 * j = how many agree with G, a0 d1..dj are committed (forwarded by the
 * target, all of them G's tokens) and the next a0 is G's next token. This is
 * exactly what a speculative run with every round drafting K would accept,
 * and what tools/fixtures/mtp_alpha.py replays in torch.
 *
 *   sd-mtp_alpha MODEL.gguf PROMPT_FILE [-k K] [-n N] [-t THREADS]
 *   sd-mtp_alpha MODEL.gguf --cost [-t THREADS] [--reps R]
 *
 * Prints one JSON object: prompt ids, G, drafted, accepted, rounds. With
 * --cost: after 128 tokens of context, the median ms of one target step (one
 * token) and of one head step (one pair: what drafting one token costs), and
 * r = head step / target step (ARCHITECTURE.md §2). Internal headers on purpose (a
 * drafter without the decode loop). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/clock.h"
#include "decode/drafter.h"
#include "decode/sampler.h"

static int die(const char *what, const sd_err *err) {
    fprintf(stderr, "sd-mtp_alpha: %s: %s\n", what, err->msg);
    return 1;
}

static char *read_text(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *b = malloc(cap);
    for (size_t got; b && (got = fread(b + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) b = realloc(b, cap *= 2);
    }
    fclose(f);
    *len = n;
    return b;
}

/* Forwards tokens[0..n) into c (split by its n_batch), the last row's logits
 * to logits. */
static sd_status run(sd_context *c, const int32_t *tokens, int32_t n, float *logits, sd_err *err) {
    return sd_forward_tail(c, tokens, n, 1, logits, err);
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* --cost: target step vs head step, medians of reps alternated runs. */
static int cost(sd_model *m, int threads, int reps) {
    enum { FILL = 128 };
    sd_err err = {0};
    sd_context *c = NULL, *hc = NULL;
    sd_model *v = NULL;
    const int64_t E = m->hp.n_embd, V = m->hp.n_vocab;
    if (sd_context_init(m, FILL + reps + 8, 64, threads, &c, &err) != SD_OK ||
        sd_mtp_view_init(m, &v, &err) != SD_OK || sd_context_init(v, FILL + reps + 8, 64, threads, &hc, &err) != SD_OK)
        return die("cost", &err);
    int32_t tok[FILL + 1];
    for (int i = 0; i <= FILL; i++) tok[i] = (int32_t)((i * 7919u + 13u) % (unsigned)V);
    float *lg = malloc((size_t)V * sizeof *lg), *h = calloc((size_t)FILL * E, sizeof *h), *y = malloc((size_t)E * sizeof *y);
    for (int64_t i = 0; i < FILL * E; i++) h[i] = (float)((i * 37 % 101) - 50) / 50.0f;
    if (run(c, tok, FILL, lg, &err) != SD_OK) return die("fill", &err);
    if (sd_mtp_forward(hc, tok + 1, h, FILL, NULL, 0, NULL, &err) != SD_OK) return die("fill", &err);
    double *tt = malloc((size_t)reps * sizeof *tt), *th = malloc((size_t)reps * sizeof *th);
    for (int r = 0; r < reps; r++) {
        double t0 = sd_now_s();
        if (sd_forward(c, tok + FILL, 1, lg, &err) != SD_OK) return die("step", &err);
        double t1 = sd_now_s();
        if (sd_mtp_forward(hc, tok + FILL, h, 1, y, 1, lg, &err) != SD_OK) return die("head", &err);
        double t2 = sd_now_s();
        sd_context_truncate(c, FILL), sd_context_truncate(hc, FILL);
        tt[r] = (t1 - t0) * 1e3, th[r] = (t2 - t1) * 1e3;
    }
    qsort(tt, (size_t)reps, sizeof *tt, cmp_d);
    qsort(th, (size_t)reps, sizeof *th, cmp_d);
    printf("{\"threads\": %d, \"reps\": %d, \"target_step_ms\": %.3f, \"head_step_ms\": %.3f, \"r\": %.4f}\n",
           threads, reps, tt[reps / 2], th[reps / 2], th[reps / 2] / tt[reps / 2]);
    free(tt), free(th), free(lg), free(h), free(y);
    sd_context_free(hc), sd_context_free(c);
    sd_mtp_view_free(v);
    sd_model_free(m);
    return 0;
}

int main(int argc, char **argv) {
    const char *model = NULL, *prompt = NULL;
    int K = 4, n = 64, threads = 1, reps = 21;
    bool want_cost = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--cost")) want_cost = true;
        else if (!strcmp(argv[i], "--reps") && i + 1 < argc) reps = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-k") && i + 1 < argc) K = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-n") && i + 1 < argc) n = atoi(argv[++i]);
        else if (!strcmp(argv[i], "-t") && i + 1 < argc) threads = atoi(argv[++i]);
        else if (!model) model = argv[i];
        else prompt = argv[i];
    }
    if (model && want_cost && reps >= 1 && reps <= 999 && threads >= 1) {
        sd_err err = {0};
        sd_model *m = NULL;
        if (sd_model_load(model, &m, &err) != SD_OK) return die("load", &err);
        return cost(m, threads, reps);
    }
    if (!model || !prompt || K < 1 || K > 16 || n < 2 || n > 4096 || threads < 1) {
        fprintf(stderr, "usage: sd-mtp_alpha MODEL.gguf PROMPT_FILE [-k 1..16] [-n 2..4096] [-t THREADS]\n");
        return 2;
    }
    sd_err err = {0};
    sd_model *m = NULL;
    if (sd_model_load(model, &m, &err) != SD_OK) return die("load", &err);
    size_t len = 0, n_ids = 0;
    char *text = read_text(prompt, &len);
    int32_t *ids = NULL;
    if (!text) return fprintf(stderr, "sd-mtp_alpha: cannot read %s\n", prompt), 1;
    if (sd_tokenize(m->tok, text, len, true, false, &ids, &n_ids, &err) != SD_OK) return die("tokenize", &err);
    const int32_t P = (int32_t)n_ids, V = m->hp.n_vocab;
    int32_t *seq = malloc((size_t)(P + n + 16) * sizeof *seq);
    float *logits = malloc((size_t)V * sizeof *logits);
    memcpy(seq, ids, (size_t)P * sizeof *seq);
    /* G: plain greedy */
    sd_context *c = NULL;
    if (sd_context_init(m, P + n + 16, 64, threads, &c, &err) != SD_OK) return die("context", &err);
    if (run(c, seq, P, logits, &err) != SD_OK) return die("prefill", &err);
    for (int i = 0; i < n; i++) {
        seq[P + i] = sd_argmax(logits, V);
        if (i + 1 < n && run(c, seq + P + i, 1, logits, &err) != SD_OK) return die("decode", &err);
    }
    sd_context_free(c);
    /* the replay */
    if (sd_context_init(m, P + n + 16, 64, threads, &c, &err) != SD_OK) return die("context", &err);
    sd_drafter d = {0};
    if (sd_drafter_mtp_init(&d, c, threads, 64, &err) != SD_OK) return die("mtp", &err);
    if (run(c, seq, P, logits, &err) != SD_OK) return die("prefill", &err);
    int64_t drafted = 0, accepted = 0, rounds = 0;
    int32_t n_out = 1, draft[16]; /* a0 = G[0] committed after the prefill */
    while (n_out < n) {
        const int32_t N = P + n_out; /* committed tokens including a0 */
        int k = K < n - n_out - 1 ? K : n - n_out - 1;
        if (k <= 0) break;
        int got = d.propose(d.self, seq, N, k, draft, NULL, &err);
        if (got < 0) return die("propose", &err);
        int j = 0;
        while (j < got && draft[j] == seq[N + j]) j++;
        drafted += got, accepted += j, rounds++;
        /* the target runs a0 d1..dj (all G's tokens): rows up to N - 1 + j */
        if (run(c, seq + N - 1, j + 1, logits, &err) != SD_OK) return die("commit", &err);
        n_out += j + 1;
    }
    printf("{\"prompt\": [");
    for (int32_t i = 0; i < P; i++) printf("%s%d", i ? ", " : "", seq[i]);
    printf("], \"greedy\": [");
    for (int i = 0; i < n; i++) printf("%s%d", i ? ", " : "", seq[P + i]);
    printf("], \"k\": %d, \"drafted\": %lld, \"accepted\": %lld, \"rounds\": %lld}\n", K, (long long)drafted,
           (long long)accepted, (long long)rounds);
    sd_drafter_free(&d);
    sd_context_free(c);
    free(seq), free(logits), free(ids), free(text);
    sd_model_free(m);
    return 0;
}
