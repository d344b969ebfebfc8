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

/* ---- converting one tensor ---- */

/* Converts the n_rows rows of t into type `to` at out (row_out bytes each),
 * rows in parallel. Returns false if a row buffer could not be allocated. */
static bool convert_rows(const gguf_tensor_info *t, uint32_t to, uint8_t *out, int64_t n_rows,
                         uint64_t row_in, uint64_t row_out, int n_threads) {
    const int64_t n = t->ne[0];
    bool ok = true;
#pragma omp parallel num_threads(n_threads) reduction(&& : ok)
    {
        float *row = sd_malloc_array((size_t)n, sizeof(float));
        if (!row)
            ok = false;
#pragma omp for schedule(static)
        for (int64_t r = 0; r < n_rows; r++) {
            if (!row)
                continue;
            sd_dequantize_row(t->type, (const uint8_t *)t->data + r * row_in, row, n);
            sd_quantize_row(to, row, out + r * row_out, n);
        }
        free(row);
    }
    return ok;
}

/* Produces tensor t in type `to`: *data borrows t's bytes when the type is
 * unchanged, else points at a new buffer (*owned, free it after writing). */
static sd_status convert_tensor(const gguf_tensor_info *t, uint32_t to, int n_threads,
                                const void **data, void **owned, uint64_t *nbytes, sd_err *err) {
    *owned = NULL;
    if (to == t->type) {
        *data = t->data;
        *nbytes = t->nbytes;
        return SD_OK;
    }
    if (!sd_type_supported(t->type) || !sd_type_quantizable(to))
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
    uint8_t *out = malloc(*nbytes ? (size_t)*nbytes : 1);
    if (!out || !convert_rows(t, to, out, (int64_t)n_rows, row_in, row_out, n_threads)) {
        free(out);
        return sd_err_set(err, SD_ERR_NOMEM, "tensor %s: out of memory", t->name);
    }
    *data = out;
    *owned = out;
    return SD_OK;
}

/* ---- the whole file ---- */

/* Copies metadata in order, replacing general.file_type and
 * general.quantization_version, adding them when absent. */
static sd_status copy_metadata(gguf_writer *w, const gguf_ctx *in, const quant_plan *plan,
                               sd_err *err) {
    bool have_ftype = false, have_qv = false;
    sd_status st = SD_OK;
    for (int64_t i = 0; i < gguf_n_kv(in) && st == SD_OK; i++) {
        const char *key = gguf_kv_key(in, i);
        if (!strcmp(key, "general.file_type")) {
            st = gguf_writer_set_u32(w, key, plan->ftype);
            have_ftype = true;
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
    return st == SD_OK ? SD_OK : sd_err_set(err, st, "copying metadata: %s", sd_status_name(st));
}

/* Converts every tensor and adds it to w; buffers go to owned[] (one slot per
 * tensor) and stay alive until the file is written. */
static sd_status convert_all(gguf_writer *w, const gguf_ctx *in, const uint32_t *types,
                             int n_threads, sd_quantize_progress progress, void *user, void **owned,
                             sd_quantize_totals *tot, sd_err *err) {
    int64_t n = gguf_n_tensors(in);
    for (int64_t i = 0; i < n; i++) {
        const gguf_tensor_info *t = gguf_tensor(in, i);
        uint32_t to = types[i];
        if (progress)
            progress(user, i, n, t->name, ggml_type_get(t->type)->name, ggml_type_get(to)->name);
        const void *data = NULL;
        uint64_t nbytes = 0;
        sd_status st = convert_tensor(t, to, n_threads, &data, &owned[i], &nbytes, err);
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

sd_status sd_quantize_file(const char *in_path, const char *out_path, const quant_plan *plan, bool pure,
                           int n_threads, sd_quantize_progress progress, void *user, sd_quantize_totals *tot,
                           sd_err *err) {
    *tot = (sd_quantize_totals){0};
    gguf_ctx *in = NULL;
    sd_status st = gguf_open(in_path, &in, err);
    if (st != SD_OK)
        return st;
    int64_t n = gguf_n_tensors(in);
    gguf_writer *w = gguf_writer_init();
    void **owned = sd_calloc((size_t)n, sizeof(void *));
    uint32_t *types = sd_calloc(n ? (size_t)n : 1, sizeof(uint32_t));
    if (!w || !owned || !types)
        st = sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    if (st == SD_OK)
        st = quant_choose_types(in, plan, pure, types, err);
    if (st == SD_OK)
        st = copy_metadata(w, in, plan, err);
    if (st == SD_OK)
        st = convert_all(w, in, types, n_threads, progress, user, owned, tot, err);
    if (st == SD_OK)
        st = gguf_writer_write(w, out_path, err);
    for (int64_t i = 0; owned && i < n; i++)
        free(owned[i]);
    free(owned);
    free(types);
    gguf_writer_free(w);
    gguf_close(in);
    return st;
}
