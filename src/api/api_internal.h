/* What the public handles of include/specdec.h hold, shared by the files of
 * src/api/: api_model.c (models, tokenizer, errors), api_context.c (contexts),
 * api_stream.c (UTF-8 pieces and stop strings), api_generate.c (generate); api_gguf.c and
 * api_quantize.c (GGUF files, on their own) use only the error helpers. */
#ifndef SD_API_INTERNAL_H
#define SD_API_INTERNAL_H

#include <pthread.h>

#include "core/status.h"
#include "core/strbuf.h"
#include "decode/compose.h"
#include "decode/suffix_cache.h"
#include "model/model.h"
#include "specdec.h"

/* A model: the internal one plus what the API hands out as strings. */
struct specdec_model {
    sd_model *m;
    char *path, *name, *chat_template;
    /* chat_template parsed by the Jinja interpreter at load (src/chat/jinja.h),
     * or NULL with jinja_refusal saying why (NULL too when there is no template). */
    struct sd_jinja *jinja;
    char *jinja_refusal;
    double load_ms; /* specdec_model_load's wall time */
    /* specdec_model_meta_str's copies, made on first use (key, value pairs). */
    pthread_mutex_t meta_lock;
    char **meta;
    size_t n_meta;
    /* The vocabulary prepared for grammar masks (token bytes and their trie),
     * built on the first grammar's first use, under meta_lock; shared by every
     * grammar of this model (api_grammar.c). */
    struct sd_gvocab *gvocab;
};

/* What a context's draft file (specdec_context_params.draft) is. */
typedef enum sd_api_draft {
    SD_API_DRAFT_NONE = 0,    /* no draft file (the target's own MTP block may still draft) */
    SD_API_DRAFT_MODEL,       /* a draft model, run in a context of its own (dctx) */
    SD_API_DRAFT_EAGLE3,      /* an EAGLE-3 head over the target's hidden rows; no dctx */
    SD_API_DRAFT_MTP_SIDECAR, /* an MTP sidecar (an mtp_only qwen35 file): its block drafts; no dctx */
    SD_API_DRAFT_DFLASH,      /* a DFlash block drafter over the target's hidden rows; no dctx (its drafter owns one) */
} sd_api_draft;

/* A context: the target's KV cache (and the draft model's), and the tokens
 * the target's cache holds, for prefix reuse. With an EAGLE-3 head as the
 * draft there is no dctx: each generate call builds the head's
 * drafter over the target's hidden rows (decode/drafter.h). The target keeps
 * those rows only while calls draft with a head (EAGLE-3 or the MTP block),
 * from one such call to the next, so a reused prefix has them too. */
struct specdec_context {
    const specdec_model *model, *draft;
    sd_api_draft draft_kind; /* what draft is */
    sd_context *tctx, *dctx;
    /* The lms over tctx / dctx with their rollback discipline (a hybrid
     * model's; decode/compose.h). */
    sd_model_lm tl, dl;
    int32_t n_batch;
    /* [n_ctx + 1]: the last call's prompt and generated tokens; the target's
     * cache holds the first n_kv of them (the last token generated has not
     * been forwarded, nor have any after a stop in a verify round). */
    specdec_token *hist;
    int32_t n_hist, n_kv;
    /* The slot of a specdec_batch this context serves (api_batch.c), NULL
     * for a context of its own. */
    struct sd_api_slot *slot;
};

/* api_batch.c: the cost the gate learns for a target forward of S rows of a
 * batched request that took `seconds` of wall clock: the time the slot spent
 * on its own work, plus its share of the steps it took part in
 * (docs/BATCHING.md "Speculation under load"). */
double sd_api_slot_cost(struct sd_api_slot *s, int32_t S, double seconds);

/* A suffix memory (include/specdec.h): the decode layer's, behind the public handle. */
struct specdec_suffix_cache {
    sd_suffix_cache mem;
};

/* A matcher of grammar g for one generate call on a context of model
 * (api_grammar.c): from g's pool, else new; give it back after the call.
 * Errors: SD_ERR_ARG (g compiled for another vocabulary), SD_ERR_NOMEM. */
struct sd_gmatch;
sd_status sd_api_grammar_take(const specdec_grammar *g, const specdec_model *model, struct sd_gmatch **out,
                              sd_err *err);
void sd_api_grammar_give(const specdec_grammar *g, struct sd_gmatch *m);

/* The public error from an internal one (err may be NULL); returns the code. */
specdec_status sd_api_error(specdec_error *err, const sd_err *e);
/* src/api's short name for the public specdec_error_set (err may be NULL). */
#define sd_api_fail specdec_error_set

/* SPECDEC_ERR_UNSUPPORTED with its reason when the environment's SPECDEC_ISA
 * cannot be honoured (api_isa.c), else SPECDEC_OK. */
specdec_status sd_api_isa_check(specdec_error *err);

/* ---- api_stream.c: generated tokens -> pieces of text for the callback ----
 * Assembles complete UTF-8 (sd_detok) and holds back any tail that could be
 * the start of a stop string; a full match ends the stream, the match and
 * what follows never delivered. */
typedef struct sd_api_stream {
    const sd_tokenizer *tok;
    sd_detok dt;
    const char *const *stop;
    int32_t n_stop;
    sd_strbuf text;  /* text not delivered yet; text.oom: it could not be held (generate fails with NOMEM) */
    char *piece;     /* one token's bytes: sd_detok_cap */
    size_t piece_cap;
    int32_t n_tokens, n_drafted; /* tokens behind the undelivered text */
    int32_t stop_index;          /* the stop string that matched, -1 */
    specdec_piece_cb cb;
    void *user;
    const specdec_stats *stats;  /* running counters shown to the callback */
    bool cancelled;              /* the callback returned false */
    const specdec_token_logprob *lp; /* NULL, or the log-probabilities of every token pushed, in order */
    int32_t n_pushed;                /* tokens pushed so far */
} sd_api_stream;

sd_status sd_api_stream_init(sd_api_stream *s, const sd_tokenizer *tok, const char *const *stop, int32_t n_stop,
                             specdec_piece_cb cb, void *user, const specdec_stats *stats, sd_err *err);
/* Feeds one committed token. Returns false when the stream is over: a stop
 * string matched, the callback cancelled, or memory ran out. */
bool sd_api_stream_push(sd_api_stream *s, int32_t token, bool from_draft);
/* At the end: delivers what is held back (an incomplete character as U+FFFD),
 * unless a stop string matched or the callback cancelled. */
void sd_api_stream_finish(sd_api_stream *s);
void sd_api_stream_free(sd_api_stream *s);

/* The ggml type id of a specdec_cache_type; false for a value out of range. */
bool sd_api_cache_ggml_type(specdec_cache_type t, uint32_t *out);

#endif
