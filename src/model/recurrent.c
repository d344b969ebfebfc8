/* The recurrent state of the Gated DeltaNet layers: see recurrent.h. */
#include "model/recurrent.h"

#include <stdlib.h>
#include <string.h>

#include "core/checked.h"

sd_status sd_recurrent_init(sd_recurrent *r, const sd_hparams *hp, sd_err *err) {
    memset(r, 0, sizeof *r);
    if (hp->n_layer_gdn <= 0) return SD_OK;
    /* The loader bounded every factor (SD_MAX_DIM each, checked products), so these fit. */
    r->conv_floats = sd_recurrent_conv_floats(hp);
    r->ssm_floats = sd_recurrent_ssm_floats(hp);
    size_t n = 0;
    if (!sd_mul_size((size_t)(r->conv_floats + r->ssm_floats), (size_t)hp->n_layer_gdn, &n) ||
        !(r->data = sd_calloc(n, sizeof(float))))
        return sd_err_set(err, SD_ERR_NOMEM, "out of memory for the recurrent state (%d layers)", hp->n_layer_gdn);
    r->n_layers = hp->n_layer_gdn;
    return SD_OK;
}

void sd_recurrent_free(sd_recurrent *r) {
    free(r->data);
    memset(r, 0, sizeof *r);
}

size_t sd_recurrent_bytes(const sd_recurrent *r) {
    return (size_t)r->n_layers * (size_t)(r->conv_floats + r->ssm_floats) * sizeof(float);
}

void sd_recurrent_reset(sd_recurrent *r) {
    if (r->data) memset(r->data, 0, sd_recurrent_bytes(r));
}
