#define _POSIX_C_SOURCE 200809L /* strndup */
/* The public face of the quantizer (numerics/quantize/quantize_file.c, with the
 * per-tensor type rules of numerics/quantize/quantize_mix.c). */
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "format/ggml_type.h"
#include "numerics/quantize/quantize_file.h"
#include "numerics/quantize/quantize_mix.h"

bool specdec_quantize_type_find(const char *name, const char **canonical, uint32_t *file_type) {
    const quant_plan *plan = name ? quant_find_plan(name) : NULL;
    if (!plan) return false;
    if (canonical) *canonical = plan->name;
    if (file_type) *file_type = plan->ftype;
    return true;
}

/* A ggml type name the quantizer can write, as GGML_TYPE_* + 1; 0 if not. */
static uint32_t writable_type(const char *name) {
    int t = name ? ggml_type_from_name(name) : -1;
    if (t < 0 || !sd_quantize_can_write((uint32_t)t)) return 0;
    return (uint32_t)t + 1;
}

static void free_overrides(quant_options *o) {
    for (int i = 0; i < o->n_overrides; i++) regfree(&o->overrides[i].re);
    free(o->overrides);
}

/* Parses the "REGEX=TYPE" strings (the first '=' splits them, as llama-quantize). */
static specdec_status parse_overrides(const specdec_quantize_params *p, quant_options *o, specdec_error *err) {
    if (p->n_tensor_types <= 0) return SPECDEC_OK;
    if (!p->tensor_types) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_quantize_file: tensor_types is NULL");
    o->overrides = calloc((size_t)p->n_tensor_types, sizeof *o->overrides);
    if (!o->overrides) return sd_api_fail(err, SPECDEC_ERR_NOMEM, "specdec_quantize_file: out of memory");
    for (int i = 0; i < p->n_tensor_types; i++) {
        const char *s = p->tensor_types[i], *eq = s ? strchr(s, '=') : NULL;
        if (!eq || eq == s || !eq[1])
            return sd_api_fail(err, SPECDEC_ERR_ARG, "--tensor-type '%s': needs PATTERN=TYPE", s ? s : "(null)");
        uint32_t t = writable_type(eq + 1);
        if (!t)
            return sd_api_fail(err, SPECDEC_ERR_ARG, "--tensor-type '%s': unknown or unwritable type '%s'", s, eq + 1);
        char *pat = strndup(s, (size_t)(eq - s));
        if (!pat) return sd_api_fail(err, SPECDEC_ERR_NOMEM, "specdec_quantize_file: out of memory");
        int rc = regcomp(&o->overrides[i].re, pat, REG_EXTENDED | REG_NOSUB);
        free(pat);
        if (rc != 0) return sd_api_fail(err, SPECDEC_ERR_ARG, "--tensor-type '%s': bad regular expression", s);
        o->overrides[i].type = t - 1;
        o->n_overrides++;
    }
    return SPECDEC_OK;
}

specdec_status specdec_quantize_file(const char *in_path, const char *out_path, const char *type,
                                     const specdec_quantize_params *params, specdec_quantize_progress progress,
                                     void *user, specdec_quantize_stats *stats, specdec_error *err) {
    if (!in_path || !out_path || !type)
        return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_quantize_file: a path or the type is NULL");
    const quant_plan *plan = quant_find_plan(type);
    if (!plan) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_quantize_file: unknown type '%s'", type);
    const specdec_quantize_params none = {0}, *p = params ? params : &none;
    const int n_threads = p->n_threads > 0 ? p->n_threads : specdec_default_threads();
    quant_options o = {.pure = p->pure};
    if (p->token_embedding_type && !(o.token_embd_type = writable_type(p->token_embedding_type)))
        return sd_api_fail(err, SPECDEC_ERR_ARG, "--token-embedding-type: unknown or unwritable type '%s'",
                           p->token_embedding_type);
    if (p->output_tensor_type && !(o.output_type = writable_type(p->output_tensor_type)))
        return sd_api_fail(err, SPECDEC_ERR_ARG, "--output-tensor-type: unknown or unwritable type '%s'",
                           p->output_tensor_type);
    specdec_status ps = parse_overrides(p, &o, err);
    if (ps != SPECDEC_OK) {
        free_overrides(&o);
        return ps;
    }
    sd_quantize_totals tot;
    sd_err e = {0};
    sd_status st = sd_quantize_file(in_path, out_path, plan, &o, p->imatrix, n_threads, progress, user, &tot, &e);
    free_overrides(&o);
    if (st != SD_OK)
        return sd_api_error(err, &e);
    if (stats) {
        *stats = (specdec_quantize_stats){tot.n_tensors, tot.n_converted, tot.bytes_in, tot.bytes_out, tot.n_fallback, {0}};
        memcpy(stats->fallbacks, tot.fallbacks, sizeof stats->fallbacks);
    }
    return SPECDEC_OK;
}
