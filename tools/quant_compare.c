/* sd-quant_compare F32.gguf OURS.gguf THEIRS.gguf [IMATRIX]: per tensor of
 * two quantizations of one model, the markdown table of bench/RESULTS.md's
 * quantizer section: both types, the blocks of the tensor, how many blocks
 * are byte-identical and how many differ (when both files chose the same
 * type), and the importance-weighted squared error against F32.gguf of each,
 *   E = sum over rows, columns j of w[j] (x - q)^2 / sum w[j] x^2,
 * w the imatrix column means of the tensor's matrix (its expert for stacked
 * experts; 1 without an entry or without IMATRIX). The last row sums E's
 * numerators over all quantized tensors. Exit 1 on a bad file. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/ggml_type.h"
#include "format/gguf.h"
#include "numerics/quant.h"
#include "numerics/quantize/imatrix.h"

static double werr(const gguf_tensor_info *x, const gguf_tensor_info *q, const sd_imatrix_entry *e, double *ref) {
    const int64_t n = x->ne[0], rows_per_mat = x->n_dims >= 3 ? x->ne[1] : INT64_MAX;
    int64_t n_rows = 1;
    for (uint32_t d = 1; d < x->n_dims; d++) n_rows *= x->ne[d];
    uint64_t rx, rq;
    if (!ggml_row_bytes(x->type, (uint64_t)n, &rx) || !ggml_row_bytes(q->type, (uint64_t)n, &rq)) return -1;
    float *a = malloc((size_t)n * sizeof(float)), *b = malloc((size_t)n * sizeof(float));
    double num = 0, den = 0;
    for (int64_t r = 0; a && b && r < n_rows; r++) {
        sd_dequantize_row(x->type, (const uint8_t *)x->data + r * rx, a, n);
        sd_dequantize_row(q->type, (const uint8_t *)q->data + r * rq, b, n);
        const int64_t m = rows_per_mat == INT64_MAX ? 0 : r / rows_per_mat;
        const float *w = e && e->n >= (m + 1) * n ? e->mean + m * n : NULL;
        for (int64_t j = 0; j < n; j++) {
            const double wj = w ? w[j] : 1.0, d = (double)a[j] - b[j];
            num += wj * d * d;
            den += wj * (double)a[j] * a[j];
        }
    }
    free(a);
    free(b);
    *ref = den;
    return num;
}

int main(int argc, char **argv) {
    if (argc < 4) {
        fprintf(stderr, "usage: sd-quant_compare F32.gguf OURS.gguf THEIRS.gguf [IMATRIX]\n");
        return 2;
    }
    gguf_ctx *g[3] = {0};
    sd_err err = {0};
    for (int i = 0; i < 3; i++)
        if (gguf_open(argv[1 + i], &g[i], &err) != SD_OK) {
            fprintf(stderr, "sd-quant_compare: %s\n", err.msg);
            return 1;
        }
    sd_imatrix *im = NULL;
    if (argc > 4 && sd_imatrix_load(argv[4], &im, &err) != SD_OK) {
        fprintf(stderr, "sd-quant_compare: %s\n", err.msg);
        return 1;
    }
    printf("| tensor | ours | theirs | blocks | identical | differing | E ours | E theirs | ours/theirs |\n");
    printf("|---|---|---|---:|---:|---:|---:|---:|---:|\n");
    double tot_o = 0, tot_t = 0, tot_ref = 0;
    int64_t tot_blocks = 0, tot_same = 0, tot_cmp = 0;
    for (int64_t i = 0; i < gguf_n_tensors(g[1]); i++) {
        const gguf_tensor_info *o = gguf_tensor(g[1], i);
        const gguf_tensor_info *t = gguf_find_tensor(g[2], o->name), *x = gguf_find_tensor(g[0], o->name);
        if (!t || !x || o->n_dims < 2 || (o->type == GGML_TYPE_F32 && t->type == GGML_TYPE_F32)) continue;
        const ggml_type_info *ti = ggml_type_get(o->type);
        int64_t n_el = 1;
        for (uint32_t d = 0; d < o->n_dims; d++) n_el *= o->ne[d];
        const int64_t blocks = n_el / ti->block_size;
        char same[32] = "-", diff[32] = "-";
        if (o->type == t->type && o->nbytes == t->nbytes) {
            const size_t bb = ti->type_size;
            int64_t s = 0;
            for (int64_t k = 0; k < blocks; k++)
                s += !memcmp((const uint8_t *)o->data + k * bb, (const uint8_t *)t->data + k * bb, bb);
            snprintf(same, sizeof same, "%" PRId64, s);
            snprintf(diff, sizeof diff, "%" PRId64, blocks - s);
            tot_same += s;
            tot_cmp += blocks;
        }
        const sd_imatrix_entry *e = im ? sd_imatrix_find(im, o->name) : NULL;
        double ref, ref2;
        const double eo = werr(x, o, e, &ref), et = werr(x, t, e, &ref2);
        tot_o += eo;
        tot_t += et;
        tot_ref += ref;
        tot_blocks += blocks;
        printf("| %s | %s | %s | %" PRId64 " | %s | %s | %.5f | %.5f | %.3f |\n", o->name, ti->name,
               ggml_type_get(t->type)->name, blocks, same, diff, ref > 0 ? eo / ref : 0, ref > 0 ? et / ref : 0,
               et > 0 ? eo / et : 1.0);
    }
    printf("| **all** | | | %" PRId64 " | %" PRId64 " of %" PRId64 " | %" PRId64 " | %.5f | %.5f | %.3f |\n",
           tot_blocks, tot_same, tot_cmp, tot_cmp - tot_same, tot_ref > 0 ? tot_o / tot_ref : 0,
           tot_ref > 0 ? tot_t / tot_ref : 0, tot_t > 0 ? tot_o / tot_t : 1.0);
    sd_imatrix_free(im);
    for (int i = 0; i < 3; i++) gguf_close(g[i]);
    return 0;
}
