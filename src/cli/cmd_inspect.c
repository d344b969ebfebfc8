/* specdec inspect MODEL.gguf [--json]: what a GGUF file holds, read with the
 * checked reader (specdec_gguf_open): header facts, every metadata pair (arrays
 * abbreviated to their type, length and first elements), the tokenizer, one
 * line per tensor, and totals. Then, unless --no-load, the model is loaded as
 * generate loads it and the memory its weights hold is measured
 * (specdec_model_memory_get: repacked copies + file pages still resident).
 * --json prints the same as one JSON object. */
#include <inttypes.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/json_text.h"
#include "specdec.h"

#define N_FIRST 8 /* array elements shown */

static void usage(FILE *f) {
    fprintf(f,
            "usage: specdec inspect MODEL.gguf [--json] [--no-load] | specdec inspect --cpu\n"
            "  Prints the GGUF's version, architecture, alignment, every metadata key and value\n"
            "  (arrays: element type, length, first %d elements), the tokenizer (tokenizer.ggml.model\n"
            "  and the number of tokenizer.ggml.tokens), one line per tensor (name, type, shape,\n"
            "  bytes) and the totals; for a hybrid model (qwen35) also the layer pattern and the\n"
            "  recurrent-state bytes per sequence. Then loads the model as generate does and\n"
            "  measures the memory its weights hold (repacked copies + file pages still resident)\n"
            "  and the load time.\n"
            "  --json     the same as one JSON object\n"
            "  --no-load  skip the load (header and tensor table only, no layer pattern)\n"
            "  --cpu      the CPU features the kernels use, the kernel paths this machine can run and\n"
            "             the one in use (SPECDEC_ISA=scalar|avx2|avx512|neon chooses); no file needed\n"
            "  --help     this text\n",
            N_FIRST);
}

/* ---- facts shared by both outputs ---- */

typedef struct summary {
    const char *arch;   /* general.architecture (not NUL-terminated) */
    uint64_t arch_len;
    const char *tok;    /* tokenizer.ggml.model */
    uint64_t tok_len;
    uint64_t n_tokens;  /* entries of tokenizer.ggml.tokens */
    uint64_t bytes, params;
} summary;

/* The string value of key into *s, *len (into the mapping); false when the
 * key is absent or not a string. */
static bool get_str(const specdec_gguf *g, const char *key, const char **s, uint64_t *len) {
    int64_t i = specdec_gguf_find_key(g, key);
    specdec_gguf_value v;
    if (i < 0 || strcmp(specdec_gguf_kv_type(g, i, NULL, NULL), "string") != 0 || !specdec_gguf_kv_value(g, i, 0, &v))
        return false;
    *s = v.s;
    *len = v.len;
    return true;
}

/* Elements of the string array at key; 0 when absent or not one. */
static uint64_t str_array_len(const specdec_gguf *g, const char *key) {
    int64_t i = specdec_gguf_find_key(g, key);
    const char *elem;
    uint64_t n;
    if (i < 0 || strcmp(specdec_gguf_kv_type(g, i, &elem, &n), "array") != 0 || strcmp(elem, "string") != 0) return 0;
    return n;
}

static summary summarize(const specdec_gguf *g) {
    summary s = {0};
    if (!get_str(g, "general.architecture", &s.arch, &s.arch_len)) s.arch = NULL;
    if (!get_str(g, "tokenizer.ggml.model", &s.tok, &s.tok_len)) s.tok = NULL;
    s.n_tokens = str_array_len(g, "tokenizer.ggml.tokens");
    specdec_gguf_tensor t;
    for (int64_t i = 0; specdec_gguf_tensor_get(g, i, &t); i++) {
        uint64_t n = 1;
        for (uint32_t d = 0; d < t.n_dims; d++) n *= (uint64_t)t.ne[d]; /* fits: checked at open */
        s.params += n;
        s.bytes += t.nbytes;
    }
    return s;
}

static void shape_str(const specdec_gguf_tensor *t, char *buf, size_t cap) {
    size_t o = (size_t)snprintf(buf, cap, "[");
    for (uint32_t d = 0; d < t->n_dims && o < cap; d++)
        o += (size_t)snprintf(buf + o, cap - o, "%s%" PRId64, d ? ", " : "", t->ne[d]);
    if (o < cap) snprintf(buf + o, cap - o, "]");
}

/* The model loaded as generate loads it, and what it holds. */
typedef struct loaded {
    specdec_model *m; /* NULL when it did not load */
    bool ok;
    double load_s;
    specdec_model_memory mem;
    specdec_model_layout layout;
    specdec_error err;
} loaded;

/* ---- hybrid models: the layer pattern and the recurrent state ---- */

/* A hybrid file (qwen35): the loaded model's layer pattern and recurrent
 * state are reported too. */
static bool is_hybrid(const summary *s) {
    return s->arch && ((s->arch_len == 6 && memcmp(s->arch, "qwen35", 6) == 0) ||
                       (s->arch_len == 9 && memcmp(s->arch, "qwen35moe", 9) == 0));
}

/* Mixture of experts (docs/MOE.md): E, k, the expert widths, and the weight
 * bytes one token reads (k of the E experts) against all of them. */
static void print_moe(const specdec_model_layout *hp) {
    printf("experts: %d routed per layer, %d per token, expert FFN %d", hp->n_expert, hp->n_expert_used, hp->n_ff_exp);
    if (hp->n_ff_shexp) printf(", shared expert %d (sigmoid-gated)", hp->n_ff_shexp);
    printf("; one token reads %.1f MiB of weights (of %.1f MiB of layer and head matrices)\n",
           (double)hp->active_weight_bytes / (1024.0 * 1024.0), (double)hp->matrix_bytes / (1024.0 * 1024.0));
}

static json_t *jmoe(const specdec_model_layout *hp) {
    return json_pack("{s:i, s:i, s:i, s:i, s:I, s:I}", "n_expert", hp->n_expert, "n_expert_used", hp->n_expert_used,
                     "n_ff_exp", hp->n_ff_exp, "n_ff_shexp", hp->n_ff_shexp, "active_weight_bytes",
                     (json_int_t)hp->active_weight_bytes, "matrix_bytes", (json_int_t)hp->matrix_bytes);
}

/* "GGGA..." one letter per trunk layer: G Gated DeltaNet, A full attention. */
static void pattern_str(const specdec_model *m, int32_t n_layer, char *buf, size_t cap) {
    size_t i = 0;
    for (; i + 1 < cap && i < (size_t)n_layer; i++) buf[i] = specdec_model_layer_kind(m, (int32_t)i);
    buf[i] = 0;
}

static void print_hybrid(const specdec_model *m, const specdec_model_layout *hp) {
    char pat[4200];
    pattern_str(m, hp->n_layer, pat, sizeof pat);
    uint64_t rb = hp->recurrent_bytes;
    printf("layers: %d run (%d Gated DeltaNet, %d full attention); block_count %d, %d MTP block(s) not run\n",
           hp->n_layer, hp->n_layer_gdn, hp->n_layer - hp->n_layer_gdn, hp->n_layer_all, hp->n_nextn);
    printf("layer pattern: %s (G = Gated DeltaNet, A = full attention)\n", pat);
    printf("recurrent state: %" PRIu64 " bytes (%.2f MiB) per sequence: %d layers x (conv %d x %d + %d heads x %d x %d) "
           "f32\n",
           rb, (double)rb / (1024.0 * 1024.0), hp->n_layer_gdn, hp->ssm_conv_kernel - 1, hp->ssm_conv_dim,
           hp->ssm_n_v_heads, hp->ssm_state, hp->ssm_state);
}

static json_t *jhybrid(const specdec_model *m, const specdec_model_layout *hp) {
    char pat[4200];
    pattern_str(m, hp->n_layer, pat, sizeof pat);
    json_t *o = json_object();
    json_object_set_new(o, "n_layer", json_integer(hp->n_layer));
    json_object_set_new(o, "n_layer_gdn", json_integer(hp->n_layer_gdn));
    json_object_set_new(o, "n_nextn", json_integer(hp->n_nextn));
    json_object_set_new(o, "pattern", json_string(pat));
    json_object_set_new(o, "recurrent_bytes", json_integer((json_int_t)hp->recurrent_bytes));
    return o;
}

/* ---- text ---- */

/* A file string printed with control bytes escaped, cut after max bytes. */
static void print_str(const char *s, uint64_t len, uint64_t max) {
    for (uint64_t k = 0; k < len && k < max; k++) {
        unsigned char ch = (unsigned char)s[k];
        if (ch < 0x20 || ch == 0x7f) printf("\\x%02x", ch);
        else putchar(ch);
    }
    if (len > max) printf("...");
}

static void print_text(const char *path, const specdec_gguf *g, const summary *s, const loaded *hybrid,
                       const char *herr) {
    const specdec_gguf_header h = specdec_gguf_header_get(g);
    printf("file: %s\nversion: %u\narchitecture: ", path, h.version);
    if (s->arch) print_str(s->arch, s->arch_len, 200);
    else printf("(none)");
    printf("\nalignment: %u\ndata offset: %" PRIu64 "\ntokenizer: ", h.alignment, h.data_offset);
    if (s->tok) {
        print_str(s->tok, s->tok_len, 200);
        printf(", %" PRIu64 " tokens\n", s->n_tokens);
    } else {
        printf("(none)\n");
    }
    printf("metadata: %" PRId64 " keys\n", h.n_kv);
    char buf[1024];
    for (int64_t i = 0; i < h.n_kv; i++) {
        specdec_gguf_kv_format(g, i, buf, sizeof buf);
        const char *key = specdec_gguf_key(g, i);
        int w = (int)strlen(key);
        printf("  ");
        print_str(key, strlen(key), 200);
        printf("%*s %-6s %s\n", w < 44 ? 44 - w : 0, "", specdec_gguf_kv_type(g, i, NULL, NULL), buf);
    }
    printf("tensors: %" PRId64 "\n", h.n_tensors);
    specdec_gguf_tensor t;
    for (int64_t i = 0; specdec_gguf_tensor_get(g, i, &t); i++) {
        shape_str(&t, buf, sizeof buf);
        printf("  ");
        int w = (int)strlen(t.name);
        print_str(t.name, strlen(t.name), 64); /* names are <= 63 bytes: checked at open */
        printf("%*s %-8s %-24s %" PRIu64 " bytes\n", w < 40 ? 40 - w : 0, "", t.type_name, buf, t.nbytes);
    }
    printf("total: %" PRId64 " tensors, %" PRIu64 " parameters, %" PRIu64 " bytes (%.2f MiB)\n", h.n_tensors,
           s->params, s->bytes, (double)s->bytes / (1024.0 * 1024.0));
    if (hybrid) print_hybrid(hybrid->m, &hybrid->layout);
    else if (herr) printf("layers: the model does not load: %s\n", herr);
}

/* ---- the loaded model's memory ---- */

static loaded load_and_measure(const char *path) {
    loaded l = {0};
    l.ok = specdec_model_load(path, NULL, &l.m, &l.err) == SPECDEC_OK &&
           specdec_model_memory_get(l.m, &l.mem, &l.err) == SPECDEC_OK &&
           specdec_model_layout_get(l.m, &l.layout, &l.err) == SPECDEC_OK;
    l.load_s = l.mem.load_ms / 1e3;
    return l;
}

static double mib(uint64_t b) { return (double)b / (1024.0 * 1024.0); }

static void print_loaded(const loaded *l) {
    if (!l->ok) {
        printf("loaded: n/a (%s)\n", l->err.message);
        return;
    }
    const specdec_model_memory *w = &l->mem;
    printf("loaded: %.2f s, weights resident %.1f MiB (repacked %.1f + f32 copies %.1f + file pages ", l->load_s,
           mib(w->packed_bytes + w->f32_bytes + w->file_bytes), mib(w->packed_bytes), mib(w->f32_bytes));
    if (w->file_measured) printf("%.1f)\n", mib(w->file_bytes));
    else printf("n/a)\n");
}

/* ---- JSON ---- */

/* JSON string of file bytes; invalid UTF-8 bytes become U+FFFD each. */
static json_t *jstr(const char *s, uint64_t len) {
    json_t *j = cli_json_text(s, (size_t)len);
    return j ? j : json_null();
}

static json_t *jvalue(const specdec_gguf_value *v) {
    switch (v->kind) {
    case SPECDEC_GGUF_STRING: return jstr(v->s, v->len);
    case SPECDEC_GGUF_BOOL: return json_boolean(v->b);
    case SPECDEC_GGUF_FLOAT:
        if (isfinite(v->f)) return json_real(v->f);
        return json_string(isnan(v->f) ? "nan" : v->f > 0 ? "inf" : "-inf");
    case SPECDEC_GGUF_INT: return json_integer(v->i);
    default:
        if (v->u <= (uint64_t)INT64_MAX) return json_integer((json_int_t)v->u);
        char buf[32];
        snprintf(buf, sizeof buf, "%" PRIu64, v->u); /* past json_int_t: a string keeps it exact */
        return json_string(buf);
    }
}

static json_t *jkv(const specdec_gguf *g, int64_t i) {
    const char *key = specdec_gguf_key(g, i);
    json_t *o = json_object();
    json_object_set_new(o, "key", jstr(key, strlen(key)));
    const char *et;
    uint64_t n;
    const char *t = specdec_gguf_kv_type(g, i, &et, &n);
    json_object_set_new(o, "type", json_string(t));
    specdec_gguf_value v;
    if (strcmp(t, "array") != 0) {
        json_object_set_new(o, "value", specdec_gguf_kv_value(g, i, 0, &v) ? jvalue(&v) : json_null());
        return o;
    }
    json_object_set_new(o, "elem_type", json_string(et));
    json_object_set_new(o, "n", json_integer((json_int_t)n));
    json_t *first = json_array();
    for (uint64_t j = 0; j < n && j < N_FIRST; j++)
        if (specdec_gguf_kv_value(g, i, j, &v)) json_array_append_new(first, jvalue(&v));
    json_object_set_new(o, "first", first);
    return o;
}

static json_t *jtensor(const specdec_gguf_tensor *t) {
    json_t *o = json_object(), *shape = json_array();
    for (uint32_t d = 0; d < t->n_dims; d++) json_array_append_new(shape, json_integer(t->ne[d]));
    json_object_set_new(o, "name", jstr(t->name, strlen(t->name)));
    json_object_set_new(o, "type", json_string(t->type_name));
    json_object_set_new(o, "type_id", json_integer(t->type));
    json_object_set_new(o, "shape", shape);
    json_object_set_new(o, "offset", json_integer((json_int_t)t->offset));
    json_object_set_new(o, "bytes", json_integer((json_int_t)t->nbytes));
    return o;
}

/* {"load_s", "weights_resident_bytes", "packed_bytes", "f32_bytes",
 * "file_resident_bytes" (null if unmeasured)}, or {"error": msg}. */
static json_t *jloaded(const loaded *l) {
    if (!l->ok) return json_pack("{s:s}", "error", l->err.message);
    const specdec_model_memory *w = &l->mem;
    return json_pack("{s:f, s:I, s:I, s:I, s:o}", "load_s", l->load_s, "weights_resident_bytes",
                     (json_int_t)(w->packed_bytes + w->f32_bytes + w->file_bytes), "packed_bytes",
                     (json_int_t)w->packed_bytes, "f32_bytes", (json_int_t)w->f32_bytes, "file_resident_bytes",
                     w->file_measured ? json_integer((json_int_t)w->file_bytes) : json_null());
}

static int print_json(const char *path, const specdec_gguf *g, const summary *s, const loaded *hybrid,
                      const loaded *l) {
    const specdec_gguf_header h = specdec_gguf_header_get(g);
    json_t *root = json_object(), *kvs = json_array(), *ts = json_array(), *tok = json_null();
    json_object_set_new(root, "file", jstr(path, strlen(path)));
    json_object_set_new(root, "version", json_integer(h.version));
    json_object_set_new(root, "architecture", s->arch ? jstr(s->arch, s->arch_len) : json_null());
    json_object_set_new(root, "alignment", json_integer(h.alignment));
    json_object_set_new(root, "data_offset", json_integer((json_int_t)h.data_offset));
    if (s->tok) {
        tok = json_object();
        json_object_set_new(tok, "model", jstr(s->tok, s->tok_len));
        json_object_set_new(tok, "n_tokens", json_integer((json_int_t)s->n_tokens));
    }
    json_object_set_new(root, "tokenizer", tok);
    for (int64_t i = 0; i < h.n_kv; i++) json_array_append_new(kvs, jkv(g, i));
    json_object_set_new(root, "metadata", kvs);
    specdec_gguf_tensor t;
    for (int64_t i = 0; specdec_gguf_tensor_get(g, i, &t); i++) json_array_append_new(ts, jtensor(&t));
    json_object_set_new(root, "tensors", ts);
    json_t *total = json_object();
    json_object_set_new(total, "tensors", json_integer(h.n_tensors));
    json_object_set_new(total, "parameters", json_integer((json_int_t)s->params));
    json_object_set_new(total, "bytes", json_integer((json_int_t)s->bytes));
    json_object_set_new(root, "total", total);
    if (hybrid) json_object_set_new(root, "hybrid", jhybrid(hybrid->m, &hybrid->layout));
    if (l) json_object_set_new(root, "loaded", jloaded(l));
    if (l && l->ok && l->layout.n_expert > 0) json_object_set_new(root, "moe", jmoe(&l->layout));
    int rc = json_dumpf(root, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
    putchar('\n');
    json_decref(root);
    return rc == 0 ? 0 : 1;
}

/* --cpu: what the kernel dispatch sees and which path it takes. */
static int print_cpu(void) {
    char feat[256];
    specdec_cpu_features(feat, sizeof feat);
    printf("cpu features: %s\n", *feat ? feat : "(none the kernels use)");
    printf("kernel paths:");
    for (int i = SPECDEC_ISA_SCALAR; specdec_isa_name((specdec_isa)i); i++) /* every path the library knows */
        printf(" %s%s", specdec_isa_name((specdec_isa)i), specdec_isa_available((specdec_isa)i) ? "" : " (unavailable)");
    printf("\nin use: %s\n", specdec_isa_name(specdec_isa_get()));
    const char *why = specdec_isa_env_error();
    if (why) printf("note: %s\n", why);
    return 0;
}

int cmd_inspect(int argc, char **argv) {
    const char *path = NULL;
    bool json = false, load = true, cpu = false;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(argv[i], "--json")) json = true;
        else if (!strcmp(argv[i], "--no-load")) load = false;
        else if (!strcmp(argv[i], "--cpu")) cpu = true;
        else if (argv[i][0] == '-' && argv[i][1]) {
            fprintf(stderr, "specdec: inspect: unknown option '%s' (see specdec inspect --help)\n", argv[i]);
            return 2;
        } else if (path) {
            fprintf(stderr, "specdec: inspect: more than one file given ('%s', '%s')\n", path, argv[i]);
            return 2;
        } else {
            path = argv[i];
        }
    }
    if (cpu && !path) return print_cpu();
    if (cpu) print_cpu();
    if (!path) {
        fprintf(stderr, "specdec: inspect: no GGUF file given (usage: specdec inspect MODEL.gguf [--json])\n");
        return 2;
    }
    specdec_gguf *g = NULL;
    specdec_error err = {0};
    if (specdec_gguf_open(path, &g, &err) != SPECDEC_OK) {
        fprintf(stderr, "specdec: %s\n", err.message);
        return 1;
    }
    int rc = 0;
    summary s = summarize(g);
    loaded l = {0};
    if (load) l = load_and_measure(path); /* its own mapping: g's pages are not released */
    const bool hyb = load && is_hybrid(&s);
    const loaded *hybrid = hyb && l.ok ? &l : NULL;
    const char *herr = hyb && !l.ok ? l.err.message : NULL;
    if (json) rc = print_json(path, g, &s, hybrid, load ? &l : NULL);
    else {
        print_text(path, g, &s, hybrid, herr);
        if (load) print_loaded(&l);
        if (l.ok && l.layout.n_expert > 0) print_moe(&l.layout);
    }
    specdec_model_free(l.m);
    specdec_gguf_close(g);
    return rc; /* main() reports output that could not be written */
}
