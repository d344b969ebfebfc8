/* The public face of the quantizer (numerics/quantize/quantize_file.c, with the
 * per-tensor type rules of numerics/quantize/quantize_mix.c). */
#include <stddef.h>

#include "api/api_internal.h"
#include "numerics/quantize/quantize_file.h"
#include "numerics/quantize/quantize_mix.h"

bool specdec_quantize_type_find(const char *name, const char **canonical, uint32_t *file_type) {
    const quant_plan *plan = name ? quant_find_plan(name) : NULL;
    if (!plan) return false;
    if (canonical) *canonical = plan->name;
    if (file_type) *file_type = plan->ftype;
    return true;
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
    sd_quantize_totals tot;
    sd_err e = {0};
    if (sd_quantize_file(in_path, out_path, plan, p->pure, n_threads, progress, user, &tot, &e) != SD_OK)
        return sd_api_error(err, &e);
    if (stats) *stats = (specdec_quantize_stats){tot.n_tensors, tot.n_converted, tot.bytes_in, tot.bytes_out};
    return SPECDEC_OK;
}
