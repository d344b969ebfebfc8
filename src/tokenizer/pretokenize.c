#include "tokenizer/pretokenize.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <stdlib.h>
#include <string.h>

#include "tokenizer/utf8.h"

/* Unicode White_Space, for use inside a character class. */
#define WS "\\t\\n\\x{0B}\\f\\r\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"
#define SPACE "[" WS "]"
#define NOT_SPACE "[^" WS "]"
/* (?i:'s|'t|'re|'ve|'m|'ll|'d), ASCII case only as llama.cpp adapts it. */
#define CONTRACTIONS "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"

static const char RE_GPT2[] =
    "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^" WS "\\p{L}\\p{N}]+|" SPACE "+(?!" NOT_SPACE ")|" SPACE "+";
static const char RE_LLAMA3[] =
    CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n]*|"
    SPACE "*[\\r\\n]+|" SPACE "+(?!" NOT_SPACE ")|" SPACE "+";
static const char RE_QWEN2[] =
    CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^" WS "\\p{L}\\p{N}]+[\\r\\n]*|"
    SPACE "*[\\r\\n]+|" SPACE "+(?!" NOT_SPACE ")|" SPACE "+";
/* Qwen3.5: combining marks (\p{M}) stay with the letters before them. */
static const char RE_QWEN35[] =
    CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^" WS "\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|"
    SPACE "*[\\r\\n]+|" SPACE "+(?!" NOT_SPACE ")|" SPACE "+";
static const char RE_DEFAULT_PUNCT[] = "[\\p{P}\\$\\+<=>\\^~\\|]+";
static const char RE_DEFAULT_NUM[] = "\\p{N}+";
static const char RE_DEFAULT_DIGIT3[] = "[0-9][0-9][0-9]";

#define MAX_REGEX 4

typedef struct pretok_def {
    const char *names[6];
    const char *regex[MAX_REGEX];
    bool ignore_merges, add_bos;
} pretok_def;

/* Names grouped as in llama-vocab.cpp (llama_vocab::impl::load) where they
 * share the regex list and the flags that matter to encoding. */
static const pretok_def DEFS[] = {
    {{"default", ""}, {RE_DEFAULT_PUNCT, RE_GPT2, RE_DEFAULT_NUM, RE_DEFAULT_DIGIT3}, false, false},
    {{"gpt-2", "phi-2", "mpt", "olmo"}, {RE_GPT2}, false, false},
    {{"llama-bpe", "llama3", "llama-v3", "falcon3", "pixtral"}, {RE_LLAMA3}, true, true},
    {{"qwen2", "deepseek-r1-qwen"}, {RE_QWEN2}, false, false},
    {{"qwen35"}, {RE_QWEN35}, false, false},
};

struct sd_pretok {
    int n_regex;
    pcre2_code *re[MAX_REGEX];
};

static const pretok_def *find_def(const char *name, size_t len) {
    for (size_t d = 0; d < sizeof DEFS / sizeof DEFS[0]; d++)
        for (int i = 0; i < 6 && DEFS[d].names[i]; i++)
            if (strlen(DEFS[d].names[i]) == len && memcmp(DEFS[d].names[i], name, len) == 0)
                return &DEFS[d];
    return NULL;
}

sd_status sd_pretok_init(const char *name, size_t len, sd_pretok **out, bool *ignore_merges,
                         bool *add_bos_default, sd_err *err) {
    *out = NULL;
    const pretok_def *def = find_def(name, len);
    if (!def) {
        int shown = len > 64 ? 64 : (int)len;
        return sd_err_set(err, SD_ERR_UNSUPPORTED, "unknown pre-tokenizer tokenizer.ggml.pre = '%.*s'",
                          shown, name);
    }
    sd_pretok *p = calloc(1, sizeof *p);
    if (!p) return sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    for (int i = 0; i < MAX_REGEX && def->regex[i]; i++) {
        int code;
        PCRE2_SIZE at;
        p->re[i] = pcre2_compile((PCRE2_SPTR)def->regex[i], PCRE2_ZERO_TERMINATED,
                                 PCRE2_UTF | PCRE2_MATCH_INVALID_UTF, &code, &at, NULL);
        if (!p->re[i]) {
            sd_pretok_free(p);
            return sd_err_set(err, SD_ERR_NOMEM, "pre-tokenizer regex %d failed to compile (pcre2 %d at %zu)",
                              i, code, (size_t)at);
        }
        pcre2_jit_compile(p->re[i], PCRE2_JIT_COMPLETE); /* optional: interpreter otherwise */
        p->n_regex = i + 1;
    }
    *ignore_merges = def->ignore_merges;
    *add_bos_default = def->add_bos;
    *out = p;
    return SD_OK;
}

void sd_pretok_free(sd_pretok *p) {
    if (!p) return;
    for (int i = 0; i < p->n_regex; i++) pcre2_code_free(p->re[i]);
    free(p);
}

static bool push_span(sd_spans *s, size_t off, size_t len) {
    if (s->n == s->cap) {
        size_t cap = s->cap ? 2 * s->cap : 64;
        sd_span *v = realloc(s->v, cap * sizeof *v);
        if (!v) return false;
        s->v = v;
        s->cap = cap;
    }
    s->v[s->n++] = (sd_span){off, len};
    return true;
}

/* Splits text[base, base + n) with one expression, appending to out. */
static bool split_one(const pcre2_code *re, pcre2_match_data *md, const char *text, size_t base,
                      size_t n, sd_spans *out) {
    PCRE2_SPTR s = (PCRE2_SPTR)text + base;
    size_t kept = 0, from = 0; /* end of the last word emitted; search start */
    while (from < n) {
        int rc = pcre2_match(re, s, n, from, 0, md, NULL);
        if (rc < 0) break; /* no match, or an engine limit: the rest is one word */
        const PCRE2_SIZE *ov = pcre2_get_ovector_pointer(md);
        size_t ms = ov[0], me = ov[1];
        if (me <= ms) { /* empty match (none of our patterns has one): step past a unit */
            if (ms >= n) break;
            from = ms + sd_utf8_unit(s + ms, n - ms);
            continue;
        }
        if (ms > kept && !push_span(out, base + kept, ms - kept)) return false;
        if (!push_span(out, base + ms, me - ms)) return false;
        kept = from = me;
    }
    if (kept < n && !push_span(out, base + kept, n - kept)) return false;
    return true;
}

sd_status sd_pretok_split(const sd_pretok *p, const char *text, size_t len, sd_spans *words,
                          sd_err *err) {
    words->n = 0;
    if (len == 0) return SD_OK;
    sd_spans tmp = {0};
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    bool ok = md && push_span(words, 0, len);
    for (int r = 0; ok && r < p->n_regex; r++) {
        tmp.n = 0;
        for (size_t w = 0; ok && w < words->n; w++)
            ok = split_one(p->re[r], md, text, words->v[w].off, words->v[w].len, &tmp);
        sd_spans swap = *words;
        *words = tmp;
        tmp = swap;
    }
    free(tmp.v);
    pcre2_match_data_free(md);
    return ok ? SD_OK : sd_err_set(err, SD_ERR_NOMEM, "out of memory");
}
