/* Grammars for constrained decoding: llama.cpp's GBNF dialect (its
 * grammars/README.md describes the syntax), compiled into a pushdown
 * recognizer over bytes, and the matcher that walks it (lazily built,
 * cached states) for byte strings and for the tokens of a vocabulary.
 *
 * Layer: above tokenizer/, below model/ and decode/ (a decoding algorithm
 * that needs only token texts). Not a public interface: include/specdec.h
 * wraps it for the front ends.
 *
 * Dialect accepted (one rule `name ::= alternatives` per definition):
 *   "literal" with escapes \x## \u#### \U######## \t \n \r \\ \" \[ \] \-
 *     (\x, \u, \U name code points, written as UTF-8, as llama.cpp does);
 *   [a-z0-9_] character classes, [^...] negated (over code points, never a
 *     surrogate); . any code point; ( ) groups; | alternation;
 *   * + ? {m} {m,} {m,n} {,n} repetition of the preceding symbol;
 *   # comments to the end of the line; rule references by name;
 *   <[id]> one token by id, <text> the token whose text is exactly text,
 *   !<[id]> / !<text> any one token but that one (never an end-of-generation
 *   token: those are allowed only where the grammar accepts).
 * A newline ends a rule except right after `::=` or `|` and inside ( ).
 * Undefined, duplicate or left-recursive rules, and malformed text, are
 * refused with "line:col: what" in the error.
 *
 * Matching is over bytes: a character class becomes alternatives of UTF-8
 * byte-range sequences (the construction of RE2 / Go regexp/syntax's
 * utf8 range splitting), so a token that ends inside a character needs no
 * special state. */
#ifndef SD_GRAMMAR_GRAMMAR_H
#define SD_GRAMMAR_GRAMMAR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/status.h"
#include "tokenizer/tokenizer.h"

/* Bounds that make a hostile grammar fail fast with a clear error. */
#define SD_GRAMMAR_MAX_TEXT (16u << 20)    /* grammar text bytes */
#define SD_GRAMMAR_MAX_RULES (1 << 18)     /* rules, generated ones included */
#define SD_GRAMMAR_MAX_ELEMS (1 << 22)     /* elements after expanding repetitions */
#define SD_GRAMMAR_MAX_NEST 256            /* ( ) nesting depth */
#define SD_GRAMMAR_MAX_REPEAT 65536        /* m and n in {m,n} */
/* Matcher bounds (per matcher): interned stacks and states. Passing them is
 * an error (SD_ERR_UNSUPPORTED, "grammar state limit"), never a crash. */
#define SD_GRAMMAR_MAX_STACKS (1 << 22)
#define SD_GRAMMAR_MAX_STATES (1 << 20)

typedef struct sd_grammar sd_grammar;

/* Compiles GBNF text (len bytes, need not be NUL-terminated) with root rule
 * `root` (NULL = "root"). tok may be NULL; it is needed only to resolve
 * <text> token references (by GGUF spelling, else by decoded bytes) and to
 * check <[id]> against the vocabulary size. The grammar keeps no pointer to
 * tok. Errors: SD_ERR_FORMAT with "line:col: what" (or "rule 'x': what"),
 * SD_ERR_UNSUPPORTED for a bound passed, SD_ERR_NOMEM. */
sd_status sd_grammar_compile(const char *text, size_t len, const char *root, const sd_tokenizer *tok,
                             sd_grammar **out, sd_err *err);
void sd_grammar_free(sd_grammar *g); /* NULL is allowed */

/* Rule and element counts after expansion (for tests and diagnostics). */
int32_t sd_grammar_n_rules(const sd_grammar *g);
int32_t sd_grammar_n_elems(const sd_grammar *g);

/* True when the len bytes of text are a complete sentence of the grammar.
 * Token references never match bytes. A state bound passed gives false and,
 * if err is non-NULL, the reason (err->code != SD_OK). */
bool sd_grammar_accepts(const sd_grammar *g, const char *text, size_t len, sd_err *err);

/* ---- The matcher: states of the recognizer and token masks. ----
 *
 * A state is an int32 id (>= 0) naming a set of parse stacks; equal sets get
 * the same id, so masks and transitions are cached per state. SD_GSTATE_DEAD
 * (-1) is the state with no stack: nothing more can match. A matcher is used
 * by one thread at a time; several matchers may share one grammar. */
#define SD_GSTATE_DEAD (-1)
#define SD_GSTATE_ERROR (-2) /* a bound was passed: see sd_gmatch_error */

typedef struct sd_gmatch sd_gmatch;

/* A vocabulary prepared for masks: every token's bytes and a trie of them
 * (for a 152k-token vocabulary about 0.3 s and 10 MiB, so build it once per
 * model and share it). Immutable: any number of matchers on any threads may
 * use it. tok is borrowed. Errors: SD_ERR_NOMEM. */
typedef struct sd_gvocab sd_gvocab;
sd_status sd_gvocab_init(const sd_tokenizer *tok, sd_gvocab **out, sd_err *err);
void sd_gvocab_free(sd_gvocab *v); /* NULL is allowed; no matcher may still use it */

/* A matcher over g (borrowed: g must outlive it) and a shared vocabulary v
 * (NULL: bytes only, no masks; borrowed). Errors: SD_ERR_NOMEM. */
sd_status sd_gmatch_init_vocab(const sd_grammar *g, const sd_gvocab *v, sd_gmatch **out, sd_err *err);
/* The same with a vocabulary of its own built from tok (NULL: bytes only). */
sd_status sd_gmatch_init(const sd_grammar *g, const sd_tokenizer *tok, sd_gmatch **out, sd_err *err);
void sd_gmatch_free(sd_gmatch *m);

/* The state before any byte. */
int32_t sd_gmatch_start(sd_gmatch *m);
/* State after one more byte; DEAD if refused, ERROR if a bound passed. */
int32_t sd_gmatch_byte(sd_gmatch *m, int32_t state, uint8_t byte);
/* State after n bytes (DEAD/ERROR as for one byte). */
int32_t sd_gmatch_bytes(sd_gmatch *m, int32_t state, const uint8_t *s, size_t n);
/* State after token id (its bytes, or a token reference); DEAD if refused.
 * An end-of-generation token is accepted (state unchanged) only where the
 * state accepts. Needs tok. */
int32_t sd_gmatch_token(sd_gmatch *m, int32_t state, int32_t id);
/* True when the bytes so far are a complete sentence. */
bool sd_gmatch_accepts(sd_gmatch *m, int32_t state);

/* The tokens allowed in state: a bitset of n_vocab bits (bit id%32 of word
 * id/32), owned by the matcher, valid until the next call into it. A token
 * is allowed when its bytes (sd_token_to_bytes without control texts; a
 * token with no bytes matches only by reference) lead to a live state, when
 * a token reference admits it, or, for end-of-generation tokens, when the
 * state accepts. NULL on error (bound passed / no memory: see err). */
const uint32_t *sd_gmatch_mask(sd_gmatch *m, int32_t state, sd_err *err);

/* 1 when state allows at least one token (the mask is not empty), 0 when
 * none (generation must end there), -1 on error. Cached per state; cheaper
 * than a mask (the walk stops at the first allowed token). */
int sd_gmatch_any(sd_gmatch *m, int32_t state);

/* The vocabulary the matcher was made with (NULL if none). */
const sd_tokenizer *sd_gmatch_tokenizer(const sd_gmatch *m);

/* Bytes the grammar forces from state: the longest string s such that every
 * continuation starts with s (stops at a state that accepts, has a token
 * reference, or allows two different bytes). Writes at most cap bytes to buf;
 * returns the count. */
size_t sd_gmatch_forced(sd_gmatch *m, int32_t state, char *buf, size_t cap);

/* The error behind an SD_GSTATE_ERROR or a NULL mask. */
const sd_err *sd_gmatch_error(const sd_gmatch *m);

/* Counters for tests and benches: states interned, masks computed. */
int32_t sd_gmatch_n_states(const sd_gmatch *m);
int64_t sd_gmatch_n_masks(const sd_gmatch *m);
/* Seconds spent constraining with this matcher since it was made, as the
 * decode layer counts them (decode/constrain.c adds the wall time of each
 * mask, masked argmax, draft-path walk and q mask): a counter for the
 * stats and benches; the grammar layer itself never reads a clock. */
double sd_gmatch_seconds(const sd_gmatch *m);
void sd_gmatch_add_seconds(sd_gmatch *m, double s);

#endif
