/* Models, tokenizer and errors of the public API (include/specdec.h): thin
 * wrappers over model/model.h and tokenizer/tokenizer.h that turn internal
 * errors into public ones and hand out metadata as NUL-terminated strings. */
#define _POSIX_C_SOURCE 200809L /* strdup, strndup */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "chat/jinja.h"
#include "grammar/grammar.h"
#include "core/clock.h"
#include "numerics/pool.h"

/* The public codes are the internal ones, value for value. */
_Static_assert((int)SPECDEC_ERR_IO == (int)SD_ERR_IO && (int)SPECDEC_ERR_FORMAT == (int)SD_ERR_FORMAT &&
                   (int)SPECDEC_ERR_NOMEM == (int)SD_ERR_NOMEM &&
                   (int)SPECDEC_ERR_UNSUPPORTED == (int)SD_ERR_UNSUPPORTED &&
                   (int)SPECDEC_ERR_CONTEXT == (int)SD_ERR_CONTEXT && (int)SPECDEC_ERR_ARG == (int)SD_ERR_ARG &&
                   (int)SPECDEC_ERR_VOCAB == (int)SD_ERR_VOCAB && (int)SPECDEC_ERR_MISMATCH == (int)SD_ERR_MISMATCH,
               "specdec_status mirrors sd_status");

#define STR2(x) #x
#define STR(x) STR2(x)
const char *specdec_version(void) {
    return STR(SPECDEC_VERSION_MAJOR) "." STR(SPECDEC_VERSION_MINOR) "." STR(SPECDEC_VERSION_PATCH);
}

const char *specdec_status_name(specdec_status status) { return sd_status_name((sd_status)status); }

specdec_status sd_api_error(specdec_error *err, const sd_err *e) {
    if (err) {
        err->code = (specdec_status)e->code;
        snprintf(err->message, sizeof err->message, "%s", e->msg);
    }
    return (specdec_status)e->code;
}

specdec_status specdec_error_set(specdec_error *err, specdec_status code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        err->code = code;
        vsnprintf(err->message, sizeof err->message, fmt, ap);
        va_end(ap);
    }
    return code;
}

void specdec_free(void *ptr) { free(ptr); }

int specdec_default_threads(void) { return sd_default_threads(); }

specdec_model_params specdec_model_default_params(void) { return (specdec_model_params){0}; }

const char *specdec_model_repack_note(const specdec_model *model) {
    return model && model->m->repack_note[0] ? model->m->repack_note : NULL;
}

/* "dir/name.gguf" -> "name": the model's name when general.name is absent. */
static char *name_from_path(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(base);
    if (n > 5 && !strcmp(base + n - 5, ".gguf")) n -= 5;
    return strndup(base, n);
}

/* A string key as a NUL-terminated copy, NULL if absent (or not a string). */
static char *meta_copy(const gguf_ctx *g, const char *key) {
    const char *s;
    uint64_t len;
    if (!gguf_get_str(g, key, &s, &len)) return NULL;
    char *c = malloc(len + 1);
    if (c) {
        memcpy(c, s, len);
        c[len] = 0;
    }
    return c;
}

specdec_status specdec_model_load(const char *path, const specdec_model_params *params, specdec_model **out,
                                  specdec_error *err) {
    const specdec_model_params p = params ? *params : specdec_model_default_params();
    if (!out) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_model_load: out is NULL");
    *out = NULL;
    if (!path) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_model_load: path is NULL");
    specdec_status isa_st = sd_api_isa_check(err);
    if (isa_st != SPECDEC_OK) return isa_st;
    specdec_model *h = calloc(1, sizeof *h);
    if (!h) return sd_api_fail(err, SPECDEC_ERR_NOMEM, "%s: out of memory", path);
    sd_err e = {0};
    const double t0 = sd_now_s();
    sd_load_opts lo = {.no_repack = p.no_repack, .plan_n_ctx = p.plan_n_ctx};
    if (!sd_api_cache_ggml_type(p.plan_cache_type_k, &lo.plan_type_k) ||
        !sd_api_cache_ggml_type(p.plan_cache_type_v, &lo.plan_type_v)) {
        free(h);
        return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_model_load: plan_cache_type_k/_v is not a specdec_cache_type");
    }
    if (sd_model_load_opts(path, &lo, &h->m, &e) != SD_OK) {
        free(h);
        return sd_api_error(err, &e);
    }
    h->load_ms = (sd_now_s() - t0) * 1e3;
    h->path = strdup(path);
    h->name = meta_copy(h->m->gguf, "general.name");
    if (!h->name) h->name = name_from_path(path);
    h->chat_template = meta_copy(h->m->gguf, "tokenizer.chat_template");
    bool template_lost = !h->chat_template && gguf_find_key(h->m->gguf, "tokenizer.chat_template") >= 0 &&
                         gguf_kv_type(h->m->gguf, gguf_find_key(h->m->gguf, "tokenizer.chat_template")) ==
                             GGUF_TYPE_STRING;
    pthread_mutex_init(&h->meta_lock, NULL);
    if (h->chat_template) { /* the model's own template runs when the interpreter takes it */
        sd_err je = {0};
        sd_status js = sd_jinja_parse(h->chat_template, strlen(h->chat_template), &h->jinja, &je);
        if (js == SD_ERR_NOMEM) template_lost = true;
        else if (js != SD_OK && !(h->jinja_refusal = strdup(je.msg))) template_lost = true;
    }
    if (!h->path || !h->name || template_lost) {
        specdec_model_free(h);
        return sd_api_fail(err, SPECDEC_ERR_NOMEM, "%s: out of memory", path);
    }
    *out = h;
    return SPECDEC_OK;
}

void specdec_model_free(specdec_model *h) {
    if (!h) return;
    sd_model_free(h->m);
    sd_gvocab_free(h->gvocab);
    for (size_t i = 0; i < 2 * h->n_meta; i++) free(h->meta[i]);
    free(h->meta);
    pthread_mutex_destroy(&h->meta_lock);
    free(h->path);
    free(h->name);
    free(h->chat_template);
    sd_jinja_free(h->jinja);
    free(h->jinja_refusal);
    free(h);
}

const char *specdec_model_path(const specdec_model *h) { return h->path; }
const char *specdec_model_name(const specdec_model *h) { return h->name; }
const char *specdec_model_arch(const specdec_model *h) { return h->m->hp.arch_name; }
int32_t specdec_model_n_vocab(const specdec_model *h) { return h->m->hp.n_vocab; }
int32_t specdec_model_n_ctx_train(const specdec_model *h) { return h->m->hp.n_ctx_train; }
uint64_t specdec_model_n_params(const specdec_model *h) { return sd_model_n_params(h->m); }

specdec_status specdec_model_memory_get(const specdec_model *h, specdec_model_memory *out, specdec_error *err) {
    if (!h || !out) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_model_memory_get: model or out is NULL");
    sd_model_memory w;
    sd_model_memory_get(h->m, &w);
    *out = (specdec_model_memory){.packed_bytes = w.packed,
                                  .f32_bytes = w.f32,
                                  .file_bytes = w.file_measured ? w.file : 0,
                                  .file_measured = w.file_measured,
                                  .load_ms = h->load_ms};
    return SPECDEC_OK;
}
const char *specdec_model_chat_template(const specdec_model *h) { return h->chat_template; }

/* Looks key up among the copies made so far; makes one if absent. The
 * copies are never freed before the model, so the pointer stays valid. */
const char *specdec_model_meta_str(const specdec_model *cmodel, const char *key) {
    if (!key) return NULL;
    specdec_model *h = (specdec_model *)cmodel; /* the cache is not part of the model's value */
    const char *found = NULL;
    pthread_mutex_lock(&h->meta_lock);
    for (size_t i = 0; i < h->n_meta && !found; i++)
        if (!strcmp(h->meta[2 * i], key)) found = h->meta[2 * i + 1];
    if (!found) {
        char *v = meta_copy(h->m->gguf, key), *k = v ? strdup(key) : NULL;
        char **grown = k ? realloc(h->meta, (2 * h->n_meta + 2) * sizeof *grown) : NULL;
        if (grown) {
            h->meta = grown;
            h->meta[2 * h->n_meta] = k;
            h->meta[2 * h->n_meta + 1] = v;
            h->n_meta++;
            found = v;
        } else {
            free(k);
            free(v);
        }
    }
    pthread_mutex_unlock(&h->meta_lock);
    return found;
}

specdec_token specdec_token_bos(const specdec_model *h) { return sd_tokenizer_bos(h->m->tok); }
specdec_token specdec_token_eos(const specdec_model *h) { return sd_tokenizer_eos(h->m->tok); }
specdec_token specdec_token_eot(const specdec_model *h) { return sd_tokenizer_eot(h->m->tok); }
bool specdec_token_is_eog(const specdec_model *h, specdec_token t) { return sd_tokenizer_is_eog(h->m->tok, t); }
bool specdec_token_is_control(const specdec_model *h, specdec_token t) {
    return t >= 0 && t < h->m->hp.n_vocab && sd_tokenizer_is_control(h->m->tok, t);
}
const char *specdec_token_text(const specdec_model *h, specdec_token t) { return sd_token_text(h->m->tok, t); }

specdec_status specdec_tokenize(const specdec_model *h, const char *text, size_t len, bool add_special,
                                bool parse_special, specdec_token **tokens, size_t *n_tokens, specdec_error *err) {
    if (!h || !tokens || !n_tokens || (!text && len))
        return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_tokenize: NULL argument");
    *tokens = NULL;
    *n_tokens = 0;
    sd_err e = {0};
    if (sd_tokenize(h->m->tok, text ? text : "", len, add_special, parse_special, tokens, n_tokens, &e) != SD_OK)
        return sd_api_error(err, &e);
    return SPECDEC_OK;
}

specdec_status specdec_detokenize(const specdec_model *h, const specdec_token *tokens, size_t n, bool show_special,
                                  char **text, size_t *len, specdec_error *err) {
    if (!h || !text || !len || (!tokens && n))
        return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_detokenize: NULL argument");
    *text = NULL;
    *len = 0;
    sd_err e = {0};
    if (sd_detokenize(h->m->tok, tokens, n, show_special, text, len, &e) != SD_OK) return sd_api_error(err, &e);
    return SPECDEC_OK;
}

int32_t specdec_token_to_piece(const specdec_model *h, specdec_token token, bool show_special, char *buf,
                               size_t cap) {
    return sd_token_to_bytes(h->m->tok, token, show_special, buf, cap);
}

specdec_status specdec_model_layout_get(const specdec_model *model, specdec_model_layout *out, specdec_error *err) {
    if (!model || !out) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_model_layout_get: model or out is NULL");
    const sd_model *m = model->m;
    const sd_hparams *hp = &m->hp;
    *out = (specdec_model_layout){
        .n_layer = hp->n_layer, .n_layer_all = hp->n_layer_all, .n_nextn = hp->n_nextn,
        .n_layer_gdn = hp->n_layer_gdn, .ssm_conv_kernel = hp->ssm_conv_kernel, .ssm_conv_dim = hp->ssm_conv_dim,
        .ssm_n_v_heads = hp->ssm_n_v_heads, .ssm_state = hp->ssm_state,
        .recurrent_bytes = sd_model_recurrent_bytes(m), .n_expert = hp->n_expert,
        .n_expert_used = hp->n_expert_used, .n_ff_exp = hp->n_ff_exp, .n_ff_shexp = hp->n_ff_shexp,
        .active_weight_bytes = sd_model_weight_bytes(m), .matrix_bytes = sd_model_matrix_bytes(m)};
    return SPECDEC_OK;
}

char specdec_model_layer_kind(const specdec_model *model, int32_t i) {
    if (!model || i < 0 || i >= model->m->hp.n_layer) return 0;
    return model->m->layers[i].kind == SD_LAYER_GDN ? 'G' : 'A';
}
