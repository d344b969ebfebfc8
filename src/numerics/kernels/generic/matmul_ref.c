/* The scalar reference of the batched matmul: block decoding, activation
 * quantization and the per-element reduction order every other build must
 * reproduce bit for bit (see matmul_impl.h). The blocks are decoded by their
 * types' descriptors (quant/qtype.h). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "numerics/kernels/matmul_impl.h"
#include "numerics/quant.h"

const sd_wtype *sd_wtype_get(uint32_t type) {
    const sd_qtype *q = sd_qtype_get(type);
    return q && (q->block == 1 || q->decode) ? q : NULL;
}

void sd_wblock_decode(uint32_t type, const uint8_t *b, sd_wblock *wb) {
    const sd_qtype *q = sd_qtype_get(type);
    if (q && q->decode) sd_qtype_decode(q, b, wb);
    else memset(wb, 0, sizeof *wb);
}

/* ---- activations ---- */

bool sd_act_init(sd_act *a, int64_t n_in, int S, int block) {
    memset(a, 0, sizeof *a);
    a->n_in = n_in;
    a->S = S;
    a->block = block;
    a->nb = n_in / block;
    a->nsum = block == SD_QK_K ? 24 : 1;
    size_t rows = (size_t)S, nq, nd, ns;
    if (!sd_mul_size(rows, (size_t)n_in, &nq) || !sd_mul_size(rows, (size_t)a->nb, &nd) ||
        !sd_mul_size(nd, (size_t)a->nsum, &ns))
        return false;
    a->q = malloc(nq + 32); /* +32: vector loads may read a block past the row */
    a->d = sd_malloc_array(nd ? nd : 1, sizeof(float));
    a->sum = sd_malloc_array(ns ? ns : 1, sizeof(int16_t));
    if (!a->q || !a->d || !a->sum) {
        sd_act_free(a);
        return false;
    }
    return true;
}

void sd_act_free(sd_act *a) {
    free(a->q);
    free(a->d);
    free(a->sum);
    memset(a, 0, sizeof *a);
}

/* One block: d = amax / 127, q = round-to-nearest-even(x * (1/d)) clamped to
 * [-127, 127] (never -128: the AVX2 Q8_0 kernel negates activations). */
static float quantize_block(const float *x, int n, int8_t *q) {
    float amax = 0.0f;
    for (int i = 0; i < n; i++) {
        float v = fabsf(x[i]);
        amax = amax > v ? amax : v;
    }
    float d = amax / 127.0f;
    float id = d != 0.0f ? 1.0f / d : 0.0f;
    for (int i = 0; i < n; i++) {
        float v = nearbyintf(x[i] * id);
        v = v > 127.0f ? 127.0f : v >= -127.0f ? v : -127.0f; /* NaN -> -127, as the AVX2 pack */
        q[i] = (int8_t)v;
    }
    return d;
}

void sd_act_block_sums(const int8_t *qb, int block, int16_t *sum) {
    if (block == SD_QK) {
        int t = 0;
        for (int i = 0; i < SD_QK; i++) t += qb[i];
        sum[0] = (int16_t)t;
        return;
    }
    for (int j = 0; j < 16; j++) {
        int t = 0;
        for (int i = 0; i < 16; i++) t += qb[16 * j + i];
        sum[j] = (int16_t)t;
    }
    for (int j = 0; j < 8; j++) sum[16 + j] = (int16_t)(sum[2 * j] + sum[2 * j + 1]);
}

void sd_act_quantize_row(sd_act *a, int s, const float *x) {
    int8_t *q = a->q + (size_t)s * a->n_in;
    for (int64_t b = 0; b < a->nb; b++) {
        int8_t *qb = q + b * a->block;
        a->d[(size_t)s * a->nb + b] = quantize_block(x + b * a->block, a->block, qb);
        sd_act_block_sums(qb, a->block, a->sum + ((size_t)s * a->nb + b) * a->nsum);
    }
}

/* ---- reference kernels ---- */

/* One decoded weight block against activation block b of row s. */
static float block_fma(const sd_wblock *wb, const sd_act *a, int s, int64_t b, float acc) {
    const int8_t *xq = a->q + (size_t)s * a->n_in + b * a->block;
    const int16_t *xs = a->sum + ((size_t)s * a->nb + b) * a->nsum;
    float dx = a->d[(size_t)s * a->nb + b];
    if (a->block == SD_QK) {
        int32_t isum = 0;
        for (int i = 0; i < SD_QK; i++) isum += wb->q[i] * xq[i];
        isum -= wb->off * xs[0];
        acc = fmaf((float)isum, wb->d * dx, acc);
        if (wb->has_min) acc = fmaf((float)xs[0], wb->m * dx, acc);
        return acc;
    }
    int32_t sumi = 0;
    for (int j = 0; j < SD_QK_K / wb->sub; j++) {
        int32_t t = 0;
        for (int i = 0; i < wb->sub; i++) t += wb->q[j * wb->sub + i] * xq[j * wb->sub + i];
        t -= wb->off * (wb->sub == 16 ? xs[j] : xs[16 + j]);
        sumi += wb->sc[j] * t;
    }
    acc = fmaf((float)sumi, wb->d * dx, acc);
    if (wb->has_min) {
        int32_t summ = 0;
        for (int j = 0; j < SD_QK_K / wb->sub; j++) summ += wb->mn[j] * (wb->sub == 16 ? xs[j] : xs[16 + j]);
        acc = fmaf((float)summ, -(wb->m * dx), acc);
    }
    return acc;
}

void sd_matmul_ref_quant(const sd_matrix *m, const sd_act *a, float *y, int64_t o0, int64_t o1) {
    const sd_wtype *wt = sd_wtype_get(m->type);
    size_t row_bytes = (size_t)a->nb * (size_t)wt->block_bytes;
    sd_wblock wb;
    for (int64_t o = o0; o < o1; o++) {
        const uint8_t *row = (const uint8_t *)m->data + (size_t)o * row_bytes;
        for (int s0 = 0; s0 < a->S; s0 += SD_SCHUNK) {
            int ns = a->S - s0 < SD_SCHUNK ? a->S - s0 : SD_SCHUNK;
            float acc[SD_SCHUNK] = {0};
            for (int64_t b = 0; b < a->nb; b++) {
                sd_qtype_decode(wt, row + (size_t)b * wt->block_bytes, &wb);
                for (int s = 0; s < ns; s++) acc[s] = block_fma(&wb, a, s0 + s, b, acc[s]);
            }
            for (int s = 0; s < ns; s++) y[(size_t)(s0 + s) * m->n_out + o] = acc[s];
        }
    }
}

static float load_w(uint32_t type, const void *row, int64_t i) {
    switch (type) {
    case GGML_TYPE_F16: return sd_fp16_to_fp32(((const uint16_t *)row)[i]);
    case GGML_TYPE_BF16: return sd_bf16_to_fp32(((const uint16_t *)row)[i]);
    default: return ((const float *)row)[i];
    }
}

/* The order of sd_dot_f32 (ops.h), with weights widened to float exactly. */
static float dot_w(uint32_t type, const void *row, const float *x, int64_t n) {
    float acc[8] = {0};
    for (int64_t i = 0; i < n; i += 8)
        for (int l = 0; l < 8; l++)
            acc[l] = i + l < n ? fmaf(load_w(type, row, i + l), x[i + l], acc[l]) : fmaf(0.0f, 0.0f, acc[l]);
    return ((acc[0] + acc[4]) + (acc[2] + acc[6])) + ((acc[1] + acc[5]) + (acc[3] + acc[7]));
}

void sd_matmul_ref_float(const sd_matrix *m, const float *x, int S, float *y, int64_t o0, int64_t o1) {
    size_t es = m->type == GGML_TYPE_F32 ? 4 : 2;
    for (int64_t o = o0; o < o1; o++) {
        const uint8_t *row = (const uint8_t *)m->data + (size_t)o * (size_t)m->n_in * es;
        for (int s = 0; s < S; s++) y[(size_t)s * m->n_out + o] = dot_w(m->type, row, x + (size_t)s * m->n_in, m->n_in);
    }
}
