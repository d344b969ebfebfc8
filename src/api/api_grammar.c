/* specdec_grammar: a compiled grammar (src/grammar/) bound to a model's
 * vocabulary, with a pool of matchers so that the parse states and token
 * masks one request computed serve the next ones (a matcher is used by one
 * thread at a time; the pool hands each generate call its own). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"
#include "grammar/grammar.h"
#include "grammar/json_schema.h"

#define POOL_MAX 8 /* idle matchers kept; more concurrent calls make their own */

struct specdec_grammar {
    const specdec_model *model;
    sd_grammar *g;
    pthread_mutex_t mu;
    sd_gmatch *idle[POOL_MAX];
    int n_idle;
};

static specdec_status grammar_new(const specdec_model *model, const char *gbnf, size_t len, const char *root,
                                  specdec_grammar **out, specdec_error *err) {
    specdec_grammar *gr = calloc(1, sizeof *gr);
    if (!gr) return sd_api_fail(err, SPECDEC_ERR_NOMEM, "grammar: out of memory");
    sd_err e = {0};
    if (sd_grammar_compile(gbnf, len, root, model->m->tok, &gr->g, &e) != SD_OK) {
        free(gr);
        return sd_api_error(err, &e);
    }
    gr->model = model;
    pthread_mutex_init(&gr->mu, NULL);
    *out = gr;
    return SPECDEC_OK;
}

specdec_status specdec_grammar_init(const specdec_model *model, const char *gbnf, size_t len, const char *root,
                                    specdec_grammar **out, specdec_error *err) {
    if (out) *out = NULL;
    if (!model || !out || (!gbnf && len)) return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_grammar_init: NULL argument");
    return grammar_new(model, gbnf ? gbnf : "", len, root, out, err);
}

/* The converter's GBNF into gbnf (the caller frees it). */
static specdec_status schema_gbnf(const char *schema_json, size_t len, bool strict, bool any_object, sd_strbuf *gbnf,
                                  specdec_error *err) {
    sd_json_schema_opts o = {.strict = strict, .any_object = any_object};
    sd_err e = {0};
    if (sd_json_schema_to_gbnf(schema_json, schema_json ? len : 0, &o, gbnf, &e) != SD_OK) return sd_api_error(err, &e);
    if (gbnf->oom) return sd_api_fail(err, SPECDEC_ERR_NOMEM, "grammar: out of memory");
    return SPECDEC_OK;
}

specdec_status specdec_json_schema_to_gbnf(const char *schema_json, size_t len, bool strict, bool any_object,
                                           char **gbnf, size_t *gbnf_len, specdec_error *err) {
    if (gbnf) *gbnf = NULL;
    if (gbnf_len) *gbnf_len = 0;
    if (!gbnf || !gbnf_len || (!schema_json && !any_object))
        return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_json_schema_to_gbnf: NULL argument");
    sd_strbuf b = {0};
    specdec_status st = schema_gbnf(schema_json, len, strict, any_object, &b, err);
    if (st == SPECDEC_OK) {
        *gbnf = malloc(b.len + 1);
        if (!*gbnf) st = sd_api_fail(err, SPECDEC_ERR_NOMEM, "grammar: out of memory");
        else {
            memcpy(*gbnf, sd_strbuf_str(&b), b.len + 1);
            *gbnf_len = b.len;
        }
    }
    sd_strbuf_free(&b);
    return st;
}

specdec_status specdec_grammar_from_json_schema(const specdec_model *model, const char *schema_json, size_t len,
                                                bool strict, bool any_object, specdec_grammar **out,
                                                specdec_error *err) {
    if (out) *out = NULL;
    if (!model || !out || (!schema_json && !any_object))
        return sd_api_fail(err, SPECDEC_ERR_ARG, "specdec_grammar_from_json_schema: NULL argument");
    sd_strbuf gbnf = {0};
    specdec_status st = schema_gbnf(schema_json, len, strict, any_object, &gbnf, err);
    if (st == SPECDEC_OK) st = grammar_new(model, sd_strbuf_str(&gbnf), gbnf.len, "root", out, err);
    sd_strbuf_free(&gbnf);
    return st;
}

void specdec_grammar_free(specdec_grammar *gr) {
    if (!gr) return;
    for (int i = 0; i < gr->n_idle; i++) sd_gmatch_free(gr->idle[i]);
    pthread_mutex_destroy(&gr->mu);
    sd_grammar_free(gr->g);
    free(gr);
}

bool specdec_grammar_accepts(const specdec_grammar *gr, const char *text, size_t len) {
    return gr && (text || !len) && sd_grammar_accepts(gr->g, text ? text : "", len, NULL);
}

sd_status sd_api_grammar_take(const specdec_grammar *cgr, const specdec_model *model, sd_gmatch **out, sd_err *err) {
    specdec_grammar *gr = (specdec_grammar *)cgr; /* the pool is internal state, locked */
    *out = NULL;
    if (!sd_tokenizer_same_vocab(gr->model->m->tok, model->m->tok))
        return sd_err_set(err, SD_ERR_ARG, "the grammar was compiled for another vocabulary");
    pthread_mutex_lock(&gr->mu);
    if (gr->n_idle > 0) *out = gr->idle[--gr->n_idle];
    pthread_mutex_unlock(&gr->mu);
    if (*out) return SD_OK;
    /* the model's shared vocabulary trie, built once (the model is const to
     * its users; this cache is internal and locked) */
    specdec_model *mm = (specdec_model *)gr->model;
    sd_status st = SD_OK;
    pthread_mutex_lock(&mm->meta_lock);
    if (!mm->gvocab) st = sd_gvocab_init(mm->m->tok, &mm->gvocab, err);
    const sd_gvocab *v = mm->gvocab;
    pthread_mutex_unlock(&mm->meta_lock);
    if (st != SD_OK) return st;
    return sd_gmatch_init_vocab(gr->g, v, out, err);
}

void sd_api_grammar_give(const specdec_grammar *cgr, sd_gmatch *m) {
    specdec_grammar *gr = (specdec_grammar *)cgr;
    if (!m) return;
    /* a matcher that passed a bound keeps its error: drop it */
    if (sd_gmatch_error(m)->code != SD_OK) {
        sd_gmatch_free(m);
        return;
    }
    pthread_mutex_lock(&gr->mu);
    if (gr->n_idle < POOL_MAX) {
        gr->idle[gr->n_idle++] = m;
        m = NULL;
    }
    pthread_mutex_unlock(&gr->mu);
    sd_gmatch_free(m);
}
