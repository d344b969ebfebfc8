/* The option table (include/specdec.h): every setting a front end takes from
 * its user, described once — spelling, HTTP field, type, range, help — so the
 * generate, serve and chat commands and the HTTP request parser accept the
 * same values and refuse the others with the same one-line message. */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api/api_internal.h"

/* Where a table entry's value lives in specdec_options, and as what. */
typedef enum field_kind { F_I32, F_F32, F_U64, F_BOOL, F_PATH, F_SPEC, F_ROLLBACK, F_CACHE } field_kind;
typedef struct option_field {
    size_t offset;
    field_kind kind;
} option_field;

#define SPEC_NAMES "none | ngram | draft | eagle3 | mtp | suffix | grammar | dflash | auto"
#define ROLLBACK_NAMES "auto | checkpoint | replay | redecode | window"
#define CACHE_NAMES "f16 | f32 | bf16 | q8_0 | q4_0 | q4_1 | iq4_nl | q5_0 | q5_1"
#define MAX_TOKENS (1 << 24) /* the largest context: no run can generate more */
#define OFF(f) offsetof(specdec_options, f)
#define INT(lo, hi) SPECDEC_OPTION_INT, lo, hi, false, false, NULL
#define FLT(lo, hi, lo_open, hi_open) SPECDEC_OPTION_FLOAT, lo, hi, lo_open, hi_open, NULL

static const specdec_option TABLE[] = {
    {"--model", "-m", NULL, SPECDEC_OPTION_PATH, 0, 0, false, false, NULL, "FILE", "target model"},
    {"--model-draft", "-md", NULL, SPECDEC_OPTION_PATH, 0, 0, false, false, NULL, "FILE",
     /* the last line is long enough to put the default on a line of its own */
     "the drafter's file, one of (--spec auto takes each):\n"
     "  a draft model with the target's vocabulary (--spec draft)\n"
     "  an EAGLE-3 head (--spec eagle3)\n"
     "  a DFlash block drafter (--spec dflash)\n"
     "  an MTP block (mtp-*.gguf) for a qwen35 target without it (--spec mtp)\n"
     "Without -m, auto and draft pair the fixture draft (end of this help)"},
    {"--n-predict", "-n", "n_predict", INT(-1, MAX_TOKENS), "N",
     "tokens to generate; -1 = until an end-of-generation token or a full context"},
    {"--ctx-size", "-c", NULL, INT(0, MAX_TOKENS), "N",
     "context size in tokens; 0 = the model's, at most 4096. More than the\n"
     "model's trained context is allowed, with a warning"},
    {"--threads", "-t", NULL, INT(0, 1024), "N", "threads; 0 = online cores (more than that is slower)"},
    {"--temp", NULL, "temperature", FLT(0, 100, false, false), "T", "temperature; 0 = greedy"},
    {"--top-k", NULL, "top_k", INT(0, MAX_TOKENS), "K", "keep the K most likely tokens; 0 = off"},
    {"--top-p", NULL, "top_p", FLT(0, 1, true, false), "P", "keep the smallest set of mass >= P; 1 = off"},
    {"--min-p", NULL, "min_p", FLT(0, 1, false, true), "P", "drop tokens below P x the top probability; 0 = off"},
    {"--seed", NULL, "seed", SPECDEC_OPTION_UINT64, 0, 18446744073709551615.0, false, false, NULL, "S",
     "sampling seed; the same seed gives the same text"},
    {"--spec", NULL, NULL, SPECDEC_OPTION_NAME, 0, 0, false, false, SPEC_NAMES, "MODE",
     "who drafts, one of:\n" SPEC_NAMES "\n"
     "(auto: n-gram lookup, plus the -md file or the target's MTP block;\n"
     "suffix: SuffixDecoding over the context and, in serve, earlier\n"
     "outputs; grammar: only the text a grammar forces)"},
    {"--draft-max", NULL, "speculative.n_max", INT(1, 64), "K", "most draft tokens per verify round"},
    {"--fixed-k", NULL, NULL, SPECDEC_OPTION_FLAG, 0, 0, false, false, NULL, NULL,
     "every round drafts --draft-max tokens (no adaptive K)"},
    {"--ngram-min", NULL, NULL, INT(1, 8), "N", "shortest n-gram looked up"},
    {"--ngram-max", NULL, NULL, INT(1, 8), "N", "longest n-gram looked up (at least --ngram-min)"},
    {"--gate", NULL, NULL, INT(0, 1 << 20), "G", "zero-accept rounds in a row that stop drafting; 0 = never"},
    {"--tree", NULL, NULL, INT(0, 63), "N",
     "token trees of at most N draft tokens; 0 = off (dense targets, draft\n"
     "model or EAGLE-3 head): the chain of K plus next-best siblings,\n"
     "verified in one forward with a tree attention mask"},
    {"--tree-width", NULL, NULL, INT(1, 8), "W", "candidates per tree level"},
    {"--hybrid-rollback", NULL, NULL, SPECDEC_OPTION_NAME, 0, 0, false, false, ROLLBACK_NAMES, "R",
     "hybrid models (qwen35): how rejected drafts leave the recurrent state:\n" ROLLBACK_NAMES
     " (auto = replay; the output\nis the same with each, only the cost differs)"},
    {"--window", NULL, NULL, INT(2, 64), "S", "the window discipline's static window"},
    {"--draft-sample", NULL, NULL, SPECDEC_OPTION_FLAG, 0, 0, false, false, NULL, NULL,
     "at --temp > 0 a draft model (not a head) samples its proposals, verified by\n"
     "speculative sampling (same law as plain sampling, not the same\n"
     "bytes); default: it (and a head) proposes the draw from its own\n"
     "distribution with the noise the target's sample at that position\n"
     "uses (coupled: where the two agree the draws coincide), verified\n"
     "against that sample (byte-identical to plain sampling)"},
    {"--presence-penalty", NULL, "presence_penalty", FLT(-2, 2, false, false), "P",
     "OpenAI's: subtract P from the logit of every token already generated; 0 = off"},
    {"--frequency-penalty", NULL, "frequency_penalty", FLT(-2, 2, false, false), "F",
     "OpenAI's: subtract F x (times the token was generated); 0 = off"},
    {"--repeat-penalty", NULL, "repeat_penalty", FLT(0, 10, true, false), "R",
     "llama.cpp's: divide a positive logit (multiply a negative one) by R\n"
     "for tokens among the last --repeat-last-n of prompt and output; 1 = off"},
    {"--repeat-last-n", NULL, "repeat_last_n", INT(-1, MAX_TOKENS), "N",
     "the repeat penalty's window in tokens; 0 = off, -1 = all"},
    {"--cache-type-k", "-ctk", NULL, SPECDEC_OPTION_NAME, 0, 0, false, false, CACHE_NAMES, "TYPE",
     "element type of the KV cache's keys (llama.cpp's names):\n"
     CACHE_NAMES "; the\n"
     "quantized ones are written once and read exactly, so speculation\n"
     "stays lossless against plain decoding with the same cache"},
    {"--cache-type-v", "-ctv", NULL, SPECDEC_OPTION_NAME, 0, 0, false, false, CACHE_NAMES, "TYPE",
     "element type of the KV cache's values, the same names as -ctk\n"
     "(no flash attention switch needed)"},
    {"--no-repack", NULL, NULL, SPECDEC_OPTION_FLAG, 0, 0, false, false, NULL, NULL,
     "read the weights from the mapped file, no repacked copy (slower; what\n"
     "happens by itself when the file and the KV cache would not fit in\n"
     "the memory available)"},
};
#define N_TABLE (sizeof TABLE / sizeof *TABLE)

/* TABLE[i]'s value in specdec_options: the same order, the same count. */
static const option_field FIELDS[] = {
    {OFF(model_path), F_PATH},         {OFF(draft_path), F_PATH},         {OFF(gen.n_predict), F_I32},
    {OFF(n_ctx), F_I32},               {OFF(n_threads), F_I32},           {OFF(gen.temperature), F_F32},
    {OFF(gen.top_k), F_I32},           {OFF(gen.top_p), F_F32},           {OFF(gen.min_p), F_F32},
    {OFF(gen.seed), F_U64},            {OFF(gen.spec), F_SPEC},           {OFF(gen.draft_max), F_I32},
    {OFF(gen.fixed_k), F_BOOL},        {OFF(gen.ngram_min), F_I32},       {OFF(gen.ngram_max), F_I32},
    {OFF(gen.gate), F_I32},            {OFF(gen.tree_nodes), F_I32},      {OFF(gen.tree_width), F_I32},
    {OFF(gen.hybrid_rollback), F_ROLLBACK}, {OFF(gen.hybrid_window), F_I32}, {OFF(gen.draft_sample), F_BOOL},
    {OFF(gen.presence_penalty), F_F32}, {OFF(gen.frequency_penalty), F_F32}, {OFF(gen.repeat_penalty), F_F32},
    {OFF(gen.repeat_last_n), F_I32},
    {OFF(cache_type_k), F_CACHE},      {OFF(cache_type_v), F_CACHE},      {OFF(no_repack), F_BOOL},
};

_Static_assert(sizeof FIELDS / sizeof *FIELDS == N_TABLE, "one field per option of TABLE");

specdec_options specdec_options_default(void) {
    return (specdec_options){.gen = specdec_generate_default_params()};
}

const specdec_option *specdec_option_table(size_t *n) {
    if (n) *n = N_TABLE;
    return TABLE;
}

const specdec_option *specdec_option_find(const char *name) {
    for (size_t i = 0; name && i < N_TABLE; i++) {
        const specdec_option *t = &TABLE[i];
        if (!strcmp(name, t->flag) || (t->alias && !strcmp(name, t->alias)) ||
            (t->http_field && !strcmp(name, t->http_field)))
            return t;
    }
    return NULL;
}

/* The index of opt in TABLE, or -1 for a pointer from elsewhere. */
static ptrdiff_t table_index(const specdec_option *opt) {
    for (size_t i = 0; i < N_TABLE; i++)
        if (opt == &TABLE[i]) return (ptrdiff_t)i;
    return -1;
}

int specdec_option_range(const specdec_option *opt, char *buf, size_t cap) {
    switch (opt->type) {
    case SPECDEC_OPTION_INT: return snprintf(buf, cap, "[%.0f, %.0f]", opt->lo, opt->hi);
    case SPECDEC_OPTION_UINT64: return snprintf(buf, cap, "[0, %llu]", (unsigned long long)UINT64_MAX);
    case SPECDEC_OPTION_FLOAT:
        return snprintf(buf, cap, "%c%g, %g%c", opt->lo_open ? '(' : '[', opt->lo, opt->hi, opt->hi_open ? ')' : ']');
    case SPECDEC_OPTION_NAME: return snprintf(buf, cap, "%s", opt->names);
    default: return snprintf(buf, cap, "%s", "");
    }
}

int specdec_option_value(const specdec_options *o, const specdec_option *opt, char *buf, size_t cap) {
    ptrdiff_t i = table_index(opt);
    if (i < 0 || !o) return snprintf(buf, cap, "%s", "");
    const char *p = (const char *)o + FIELDS[i].offset;
    switch (FIELDS[i].kind) {
    case F_I32: return snprintf(buf, cap, "%d", *(const int32_t *)p);
    case F_F32: return snprintf(buf, cap, "%g", (double)*(const float *)p);
    case F_U64: return snprintf(buf, cap, "%llu", (unsigned long long)*(const uint64_t *)p);
    case F_BOOL: return snprintf(buf, cap, "%s", *(const bool *)p ? "on" : "off");
    case F_PATH: return snprintf(buf, cap, "%s", *(const char *const *)p ? *(const char *const *)p : "none");
    case F_SPEC: return snprintf(buf, cap, "%s", specdec_spec_mode_name(*(const specdec_spec_mode *)p));
    case F_ROLLBACK: return snprintf(buf, cap, "%s", specdec_rollback_name(*(const specdec_rollback *)p));
    case F_CACHE: return snprintf(buf, cap, "%s", specdec_cache_type_name(*(const specdec_cache_type *)p));
    }
    return snprintf(buf, cap, "%s", "");
}

/* "NAME VALUE: WHY RANGE" for a value that does not fit opt. */
static specdec_status refuse(specdec_error *err, const specdec_option *opt, const char *name, const char *value,
                             const char *why) {
    char range[96];
    specdec_option_range(opt, range, sizeof range);
    return specdec_error_set(err, SPECDEC_ERR_ARG, "%s %s: %s %s", name, value, why, range);
}

static bool in_range(const specdec_option *o, double v) {
    return (o->lo_open ? v > o->lo : v >= o->lo) && (o->hi_open ? v < o->hi : v <= o->hi);
}

/* Integers: "not an integer" for text that is none, "out of range" for one outside. */
static specdec_status set_int(const specdec_option *opt, const char *name, const char *v, int32_t *out,
                              specdec_error *err) {
    char *end;
    errno = 0;
    long long x = strtoll(v, &end, 10);
    if (end == v || *end) return refuse(err, opt, name, v, "not an integer in");
    if (errno == ERANGE || !in_range(opt, (double)x)) return refuse(err, opt, name, v, "out of range");
    *out = (int32_t)x;
    return SPECDEC_OK;
}

static specdec_status set_u64(const specdec_option *opt, const char *name, const char *v, uint64_t *out,
                              specdec_error *err) {
    char *end;
    errno = 0;
    const char *s = v;
    while (*s == ' ' || *s == '\t') s++;
    unsigned long long x = strtoull(v, &end, 10);
    if (end == v || *end) return refuse(err, opt, name, v, "not an integer in");
    if (errno == ERANGE || *s == '-') return refuse(err, opt, name, v, "out of range"); /* strtoull negates "-1" */
    *out = x;
    return SPECDEC_OK;
}

static specdec_status set_float(const specdec_option *opt, const char *name, const char *v, float *out,
                                specdec_error *err) {
    char *end;
    double x = strtod(v, &end);
    if (end == v || *end || isnan(x)) return refuse(err, opt, name, v, "not a number in");
    if (!in_range(opt, x)) return refuse(err, opt, name, v, "out of range");
    *out = (float)x;
    return SPECDEC_OK;
}

static specdec_status set_value(const specdec_option *opt, option_field f, const char *name, const char *v,
                                char *p, specdec_error *err) {
    switch (f.kind) {
    case F_I32: return set_int(opt, name, v, (int32_t *)p, err);
    case F_F32: return set_float(opt, name, v, (float *)p, err);
    case F_U64: return set_u64(opt, name, v, (uint64_t *)p, err);
    case F_BOOL: *(bool *)p = true; return SPECDEC_OK;
    case F_PATH: *(const char **)p = v; return SPECDEC_OK;
    case F_SPEC:
        return specdec_spec_mode_parse(v, (specdec_spec_mode *)p) ? SPECDEC_OK : refuse(err, opt, name, v, "not one of");
    case F_ROLLBACK:
        return specdec_rollback_parse(v, (specdec_rollback *)p) ? SPECDEC_OK : refuse(err, opt, name, v, "not one of");
    case F_CACHE:
        return specdec_cache_type_parse(v, (specdec_cache_type *)p) ? SPECDEC_OK : refuse(err, opt, name, v, "not one of");
    }
    return specdec_error_set(err, SPECDEC_ERR_ARG, "%s: unknown option type", name);
}

specdec_status specdec_option_set(specdec_options *o, const specdec_option *opt, const char *name,
                                  const char *value, specdec_error *err) {
    ptrdiff_t i = opt ? table_index(opt) : -1;
    if (!o || i < 0) return specdec_error_set(err, SPECDEC_ERR_ARG, "specdec_option_set: not an option of the table");
    if (!name) name = opt->flag;
    if (opt->type != SPECDEC_OPTION_FLAG && !value)
        return specdec_error_set(err, SPECDEC_ERR_ARG, "%s needs a value", name);
    return set_value(opt, FIELDS[i], name, value, (char *)o + FIELDS[i].offset, err);
}

specdec_status specdec_options_check(const specdec_options *o, specdec_error *err) {
    if (!o) return specdec_error_set(err, SPECDEC_ERR_ARG, "specdec_options_check: NULL options");
    if (o->gen.ngram_min > o->gen.ngram_max)
        return specdec_error_set(err, SPECDEC_ERR_ARG, "--ngram-min %d exceeds --ngram-max %d", o->gen.ngram_min,
                                 o->gen.ngram_max);
    return SPECDEC_OK;
}

/* The help column starts here; text past HELP_WIDTH goes on its own line. */
#define HELP_COLUMN 27
#define HELP_WIDTH 100

/* One option's entry: "  -n, --n-predict N" padded, the help lines
 * indented, and the range and default after the last line (or under it). */
static void help_entry(sd_strbuf *b, const specdec_options *d, const specdec_option *t) {
    size_t start = b->len;
    sd_strbuf_printf(b, "  %s%s%s%s%s", t->alias ? t->alias : "", t->alias ? ", " : "", t->flag,
                     t->value_name ? " " : "", t->value_name ? t->value_name : "");
    size_t used = b->len - start;
    /* a name too wide for the column puts its help under it, aligned with the others */
    if (used < HELP_COLUMN - 1) sd_strbuf_printf(b, "%*s", (int)(HELP_COLUMN - used), "");
    else sd_strbuf_printf(b, "\n%*s", HELP_COLUMN, "");
    size_t line = b->len; /* where the current output line's help starts */
    for (const char *h = t->help; *h; h++) {
        if (*h == '\n') {
            sd_strbuf_printf(b, "\n%*s", HELP_COLUMN, "");
            line = b->len;
        } else sd_strbuf_add(b, h, 1);
    }
    char range[96] = "", value[256] = "", tail[400];
    if (t->type != SPECDEC_OPTION_NAME) specdec_option_range(t, range, sizeof range);
    specdec_option_value(d, t, value, sizeof value);
    snprintf(tail, sizeof tail, "%s%sdefault %s", range, *range ? ", " : "", value);
    bool fits = HELP_COLUMN + (b->len - line) + 2 + strlen(tail) <= HELP_WIDTH;
    if (fits) sd_strbuf_printf(b, "; %s\n", tail);
    else sd_strbuf_printf(b, "\n%*s%s\n", HELP_COLUMN, "", tail);
}

specdec_status specdec_options_help(const specdec_options *defaults, char **text, size_t *len, specdec_error *err) {
    if (!text || !len) return specdec_error_set(err, SPECDEC_ERR_ARG, "specdec_options_help: NULL output");
    specdec_options d = defaults ? *defaults : specdec_options_default();
    sd_strbuf b = {0};
    for (size_t i = 0; i < N_TABLE; i++) help_entry(&b, &d, &TABLE[i]);
    if (b.oom || !b.s) {
        sd_strbuf_free(&b);
        return specdec_error_set(err, SPECDEC_ERR_NOMEM, "option help: out of memory");
    }
    *text = b.s; /* malloc'd: specdec_free is free */
    *len = b.len;
    return SPECDEC_OK;
}
