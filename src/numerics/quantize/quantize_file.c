/* Quantizing a whole GGUF file: metadata copied in order with
 * general.file_type set to the plan's LLAMA_FTYPE (llama.cpp include/llama.h)
 * and general.quantization_version to 2 (GGML_QNT_VERSION); each tensor in
 * the type numerics/quantize/quantize_mix.c chooses for it, converted row by row
 * (dequantize to f32, then the reference row quantizer of numerics/quant.h).
 * Checked against llama.cpp's llama_model_quantize with
 * tests/data/quant/compare_llamacpp.py: identical tensors, bytes included. */
#include "numerics/quantize/quantize_file.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/checked.h"
#include "numerics/quant.h"
#include "numerics/quantize/iq_quantize.h"
#include "numerics/quantize/kq_weighted.h"

/* ---- converting one row ---- */

bool sd_quantize_can_write(uint32_t t) {
    return sd_type_quantizable(t) || sd_quantize_weighted_has(t, false);
}

void sd_quantize_row_any(uint32_t t, const float *x, void *dst, int64_t n, const float *w) {
    if (w && sd_kquant_row_weighted(t, x, dst, n, w)) return;
    if (sd_quantize_weighted_has(t, w != NULL) && sd_quantize_row_weighted(t, x, dst, n, w)) return;
    sd_quantize_row(t, x, dst, n);
}

/* ---- converting one tensor ---- */

/* Converts the n_rows rows of t into type `to` at out (row_out bytes each),
 * rows in parallel. imat: the tensor's importance weights, rows_per_mat rows
 * per ne0 of them (one slice per expert), or NULL. Weighted types
 * (iq_quantize.h) go through the weighted search, and so do the k-quant and
 * legacy types (kq_weighted.h) when the tensor has importance weights; the
 * rest through the reference row quantizers. Returns false if a row buffer could not be
 * allocated. */
static bool convert_rows(const gguf_tensor_info *t, uint32_t to, uint8_t *out, int64_t n_rows,
                         uint64_t row_in, uint64_t row_out, int n_threads, const float *imat,
                         int64_t rows_per_mat) {
    const int64_t n = t->ne[0];
    bool ok = true;
#pragma omp parallel num_threads(n_threads) reduction(&& : ok)
    {
        float *row = sd_malloc_array((size_t)n, sizeof(float));
        if (!row)
            ok = false;
#pragma omp for schedule(dynamic, 4)
        for (int64_t r = 0; r < n_rows; r++) {
            if (!row)
                continue;
            sd_dequantize_row(t->type, (const uint8_t *)t->data + r * row_in, row, n);
            sd_quantize_row_any(to, row, out + r * row_out, n, imat ? imat + (r / rows_per_mat) * n : NULL);
        }
        free(row);
    }
    return ok;
}

/* The weights for t from the importance matrix: the column means plus a
 * floor of 1e-6 of their mean (so a column no calibration token reached
 * still counts a little). NULL with *owned NULL if im has no entry for t;
 * an entry of the wrong size is an error. */
static sd_status tensor_weights(const gguf_tensor_info *t, const sd_imatrix *im, float **owned, sd_err *err) {
    *owned = NULL;
    const sd_imatrix_entry *e = im ? sd_imatrix_find(im, t->name) : NULL;
    if (!e)
        return SD_OK;
    const int64_t n_mat = t->n_dims >= 3 ? t->ne[2] : 1;
    if (e->n != t->ne[0] * n_mat)
        return sd_err_set(err, SD_ERR_FORMAT,
                          "imatrix entry %s has %lld values, the tensor needs %lld (%lld per row x %lld matrices)",
                          t->name, (long long)e->n, (long long)(t->ne[0] * n_mat), (long long)t->ne[0],
                          (long long)n_mat);
    float *w = sd_malloc_array((size_t)e->n, sizeof(float));
    if (!w)
        return sd_err_set(err, SD_ERR_NOMEM, "tensor %s: out of memory", t->name);
    for (int64_t m = 0; m < n_mat; m++) {
        const float *src = e->mean + m * t->ne[0];
        double sum = 0;
        for (int64_t j = 0; j < t->ne[0]; j++) sum += src[j];
        const float floor_w = (float)(1e-6 * sum / (double)t->ne[0]) + 1e-30f;
        for (int64_t j = 0; j < t->ne[0]; j++) w[m * t->ne[0] + j] = src[j] + floor_w;
    }
    *owned = w;
    return SD_OK;
}

/* Produces tensor t in type `to`: *data borrows t's bytes when the type is
 * unchanged, else points at a new buffer (*owned, free it after writing). */
static sd_status convert_tensor(const gguf_tensor_info *t, uint32_t to, int n_threads, const sd_imatrix *im,
                                const void **data, void **owned, uint64_t *nbytes, sd_err *err) {
    *owned = NULL;
    if (to == t->type) {
        *data = t->data;
        *nbytes = t->nbytes;
        return SD_OK;
    }
    if (!sd_type_supported(t->type) || !sd_quantize_can_write(to))
        return sd_err_set(err, SD_ERR_UNSUPPORTED, "tensor %s: cannot convert %s to %s", t->name,
                          ggml_type_get(t->type)->name, ggml_type_get(to)->name);
    uint64_t n_elems = 1, row_in, row_out, n_rows;
    for (uint32_t d = 0; d < t->n_dims; d++)
        if (!sd_mul_u64(n_elems, (uint64_t)t->ne[d], &n_elems))
            return sd_err_set(err, SD_ERR_FORMAT, "tensor %s: size overflows", t->name);
    n_rows = t->ne[0] ? n_elems / (uint64_t)t->ne[0] : 0;
    if (!ggml_row_bytes(t->type, (uint64_t)t->ne[0], &row_in) ||
        !ggml_row_bytes(to, (uint64_t)t->ne[0], &row_out) ||
        !sd_mul_u64(row_out, n_rows, nbytes) || *nbytes > SIZE_MAX)
        return sd_err_set(err, SD_ERR_FORMAT, "tensor %s: bad row size for %s", t->name,
                          ggml_type_get(to)->name);
    float *w = NULL;
    sd_status st = tensor_weights(t, im, &w, err);
    if (st != SD_OK)
        return st;
    uint8_t *out = malloc(*nbytes ? (size_t)*nbytes : 1);
    const int64_t rows_per_mat = t->n_dims >= 3 ? t->ne[1] : (int64_t)n_rows;
    if (!out || !convert_rows(t, to, out, (int64_t)n_rows, row_in, row_out, n_threads, w,
                              rows_per_mat ? rows_per_mat : 1)) {
        free(out);
        free(w);
        return sd_err_set(err, SD_ERR_NOMEM, "tensor %s: out of memory", t->name);
    }
    free(w);
    *data = out;
    *owned = out;
    return SD_OK;
}

/* ---- the whole file ---- */

/* Copies metadata in order, replacing general.file_type and
 * general.quantization_version, adding them when absent. */
static sd_status copy_metadata(gguf_writer *w, const gguf_ctx *in, const quant_plan *plan,
                               const char *imatrix_path, const sd_imatrix *im, sd_err *err) {
    bool have_ftype = false, have_qv = false;
    sd_status st = SD_OK;
    for (int64_t i = 0; i < gguf_n_kv(in) && st == SD_OK; i++) {
        const char *key = gguf_kv_key(in, i);
        if (!strcmp(key, "general.file_type")) {
            st = gguf_writer_set_u32(w, key, plan->ftype);
            have_ftype = true;
        } else if (!strncmp(key, "quantize.imatrix.", 17) && im) {
            continue; /* replaced below */
        } else if (!strcmp(key, "general.quantization_version")) {
            st = gguf_writer_set_u32(w, key, 2);
            have_qv = true;
        } else {
            st = gguf_writer_copy_kv(w, in, i);
        }
    }
    if (st == SD_OK && !have_qv)
        st = gguf_writer_set_u32(w, "general.quantization_version", 2);
    if (st == SD_OK && !have_ftype)
        st = gguf_writer_set_u32(w, "general.file_type", plan->ftype);
    /* llama-quantize's record of the importance matrix */
    if (st == SD_OK && im && imatrix_path)
        st = gguf_writer_set_str(w, "quantize.imatrix.file", imatrix_path, strlen(imatrix_path));
    if (st == SD_OK && im)
        st = gguf_writer_set_i32(w, "quantize.imatrix.entries_count", (int32_t)im->n);
    return st == SD_OK ? SD_OK : sd_err_set(err, st, "copying metadata: %s", sd_status_name(st));
}

/* Converts every tensor and adds it to w; buffers go to owned[] (one slot per
 * tensor) and stay alive until the file is written. */
static sd_status convert_all(gguf_writer *w, const gguf_ctx *in, const uint32_t *types,
                             const sd_imatrix *im, int n_threads, sd_quantize_progress progress, void *user, void **owned,
                             sd_quantize_totals *tot, sd_err *err) {
    int64_t n = gguf_n_tensors(in);
    for (int64_t i = 0; i < n; i++) {
        const gguf_tensor_info *t = gguf_tensor(in, i);
        uint32_t to = types[i];
        if (progress)
            progress(user, i, n, t->name, ggml_type_get(t->type)->name, ggml_type_get(to)->name);
        const void *data = NULL;
        uint64_t nbytes = 0;
        sd_status st = convert_tensor(t, to, n_threads, im, &data, &owned[i], &nbytes, err);
        if (st == SD_OK && (st = gguf_writer_add_tensor(w, t->name, to, t->n_dims, t->ne, data,
                                                        nbytes)) != SD_OK)
            sd_err_set(err, st, "adding tensor %s: %s", t->name, sd_status_name(st));
        if (st != SD_OK)
            return st;
        tot->n_converted += to != t->type;
        tot->bytes_in += t->nbytes;
        tot->bytes_out += nbytes;
    }
    tot->n_tensors = n;
    return SD_OK;
}

/* Notes the tensors whose row length forced another type, in tot. */
static void note_fallbacks(const gguf_ctx *in, const uint32_t *types, const uint32_t *wanted,
                           sd_quantize_totals *tot) {
    size_t at = 0;
    for (int64_t i = 0; i < gguf_n_tensors(in); i++) {
        if (wanted[i] == UINT32_MAX || wanted[i] == types[i])
            continue;
        const gguf_tensor_info *t = gguf_tensor(in, i);
        tot->n_fallback++;
        if (at + 96 < sizeof tot->fallbacks) {
            int k = snprintf(tot->fallbacks + at, sizeof tot->fallbacks - at, "%s%s (row %lld) %s->%s", at ? ", " : "",
                             t->name, (long long)t->ne[0], ggml_type_get(wanted[i])->name, ggml_type_get(types[i])->name);
            if (k > 0 && (size_t)k < sizeof tot->fallbacks - at)
                at += (size_t)k;
        }
    }
}

sd_status sd_quantize_file(const char *in_path, const char *out_path, const quant_plan *plan,
                           const quant_options *opt, const char *imatrix_path, int n_threads,
                           sd_quantize_progress progress, void *user, sd_quantize_totals *tot, sd_err *err) {
    *tot = (sd_quantize_totals){0};
    gguf_ctx *in = NULL;
    sd_imatrix *im = NULL;
    sd_status st = imatrix_path ? sd_imatrix_load(imatrix_path, &im, err) : SD_OK;
    if (st != SD_OK)
        return st;
    st = gguf_open(in_path, &in, err);
    if (st != SD_OK) {
        sd_imatrix_free(im);
        return st;
    }
    quant_options o = opt ? *opt : (quant_options){0};
    o.has_imatrix = im != NULL;
    int64_t n = gguf_n_tensors(in);
    gguf_writer *w = gguf_writer_init();
    void **owned = sd_calloc((size_t)n, sizeof(void *));
    uint32_t *types = sd_calloc(n ? (size_t)n : 1, sizeof(uint32_t));
    uint32_t *wanted = sd_calloc(n ? (size_t)n : 1, sizeof(uint32_t));
    if (!w || !owned || !types || !wanted)
        st = sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    if (st == SD_OK)
        st = quant_choose_types(in, plan, &o, types, wanted, err);
    if (st == SD_OK)
        note_fallbacks(in, types, wanted, tot);
    if (st == SD_OK)
        st = copy_metadata(w, in, plan, imatrix_path, im, err);
    if (st == SD_OK)
        st = convert_all(w, in, types, im, n_threads, progress, user, owned, tot, err);
    if (st == SD_OK)
        st = gguf_writer_write(w, out_path, err);
    for (int64_t i = 0; owned && i < n; i++)
        free(owned[i]);
    free(owned);
    free(types);
    free(wanted);
    sd_imatrix_free(im);
    gguf_writer_free(w);
    gguf_close(in);
    return st;
}
