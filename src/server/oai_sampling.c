/* The request field logit_bias (the penalties are options of the library's
 * table, parsed with the others in oai_request.c): OpenAI's object mapping
 * token ids, as strings, to a bias in [-100, 100]; llama-server's array of
 * [id, bias] pairs is taken too, and a bias of false (llama-server's ban)
 * is -100. Anything else is a 400 naming the field. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "server/oai.h"

#define OAI_LOGIT_BIAS_MAX 4096 /* entries: bounds the per-token work a request can ask for */

/* One entry: id (a token id string or an integer) and its bias. */
static bool bias_entry(server *s, const char *key, json_t *id_v, json_t *bias_v, specdec_logit_bias *out,
                       http_err *e) {
    long long id = -1;
    if (key) {
        char *end = NULL;
        errno = 0;
        id = strtoll(key, &end, 10);
        if (!*key || *end || errno) return http_fail(e, 400, "logit_bias", "logit_bias: key '%s' is not a token id", key);
    } else if (json_is_integer(id_v)) {
        id = json_integer_value(id_v);
    } else {
        return http_fail(e, 400, "logit_bias", "logit_bias: each pair must be [token id, bias]");
    }
    const int32_t V = specdec_model_n_vocab(s->model);
    if (id < 0 || id >= V) return http_fail(e, 400, "logit_bias", "logit_bias: token %lld is not in [0, %d)", id, V);
    double b;
    if (json_is_false(bias_v)) b = -100;
    else if (json_is_number(bias_v)) b = json_number_value(bias_v);
    else return http_fail(e, 400, "logit_bias", "logit_bias: the bias of token %lld must be a number", id);
    if (!(b >= -100 && b <= 100))
        return http_fail(e, 400, "logit_bias", "logit_bias: the bias of token %lld must be in [-100, 100], got %g", id, b);
    *out = (specdec_logit_bias){(specdec_token)id, (float)b};
    return true;
}

bool oai_get_logit_bias(server *s, json_t *body, job *j, http_err *e) {
    json_t *v = json_object_get(body, "logit_bias");
    if (!v || json_is_null(v)) return true;
    if (!json_is_object(v) && !json_is_array(v))
        return http_fail(e, 400, "logit_bias", "'logit_bias' must be an object of token id: bias");
    size_t n = json_is_object(v) ? json_object_size(v) : json_array_size(v);
    if (n == 0) return true;
    if (n > OAI_LOGIT_BIAS_MAX)
        return http_fail(e, 400, "logit_bias", "'logit_bias' has %zu entries; at most %d", n, OAI_LOGIT_BIAS_MAX);
    j->bias = calloc(n, sizeof *j->bias);
    if (!j->bias) return http_fail(e, 500, NULL, "out of memory");
    size_t k = 0;
    if (json_is_object(v)) {
        const char *key;
        json_t *b;
        json_object_foreach(v, key, b) {
            if (!bias_entry(s, key, NULL, b, &j->bias[k++], e)) return false;
        }
    } else {
        size_t i;
        json_t *pair;
        json_array_foreach(v, i, pair) {
            if (!json_is_array(pair) || json_array_size(pair) != 2)
                return http_fail(e, 400, "logit_bias", "logit_bias: each pair must be [token id, bias]");
            if (!bias_entry(s, NULL, json_array_get(pair, 0), json_array_get(pair, 1), &j->bias[k++], e)) return false;
        }
    }
    j->gp.logit_bias = j->bias;
    j->gp.n_logit_bias = (int32_t)k;
    return true;
}
