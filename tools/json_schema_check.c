/* sd-json_schema_check: converts a JSON Schema to GBNF (the converter in
 * src/grammar/json_schema.c) and prints the grammar, for tests and for
 * looking at what a schema becomes.
 *   sd-json_schema_check [--strict] [--any-object] SCHEMA.json   (- for stdin)
 * Exit 0 with the grammar on stdout, 1 with the one-line error on stderr.
 *   sd-json_schema_check [--strict] --docs DOCS SCHEMA.json
 * compiles the grammar with the grammar engine (src/grammar/grammar.h) and
 * prints, for each document in DOCS (documents separated by NUL bytes),
 * "accept" or "refuse" on a line of its own. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "grammar/grammar.h"
#include "grammar/json_schema.h"

static char *slurp(const char *path, size_t *len) {
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : stdin;
    if (!f) return NULL;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    for (size_t got; buf && (got = fread(buf + n, 1, cap - n, f)) > 0;) {
        n += got;
        if (n == cap) {
            char *p = realloc(buf, cap *= 2);
            if (!p) { free(buf); buf = NULL; }
            else buf = p;
        }
    }
    if (f != stdin) fclose(f);
    *len = n;
    return buf;
}

int main(int argc, char **argv) {
    sd_json_schema_opts opts = {0};
    const char *path = NULL, *docs = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--strict")) opts.strict = true;
        else if (!strcmp(argv[i], "--docs") && i + 1 < argc) docs = argv[++i];
        else if (!strcmp(argv[i], "--any-object")) opts.any_object = true;
        else path = argv[i];
    }
    if (!path && !opts.any_object) {
        fprintf(stderr, "usage: sd-json_schema_check [--strict] [--any-object] SCHEMA.json\n");
        return 2;
    }
    size_t len = 0;
    char *text = path ? slurp(path, &len) : NULL;
    if (path && !text) { fprintf(stderr, "sd-json_schema_check: cannot read %s\n", path); return 2; }
    sd_strbuf g = {0};
    sd_err err = {0};
    sd_status st = sd_json_schema_to_gbnf(text, len, &opts, &g, &err);
    free(text);
    if (st != SD_OK) { fprintf(stderr, "%s\n", err.msg); sd_strbuf_free(&g); return 1; }
    if (!docs) {
        fputs(sd_strbuf_str(&g), stdout);
        sd_strbuf_free(&g);
        return 0;
    }
    sd_grammar *gr = NULL;
    st = sd_grammar_compile(g.s, g.len, "root", NULL, &gr, &err);
    sd_strbuf_free(&g);
    if (st != SD_OK) { fprintf(stderr, "grammar engine: %s\n", err.msg); return 1; }
    size_t n = 0;
    char *d = slurp(docs, &n);
    if (!d) { fprintf(stderr, "sd-json_schema_check: cannot read %s\n", docs); sd_grammar_free(gr); return 2; }
    int rc = 0;
    /* k NULs separate k + 1 documents, empty ones included */
    for (size_t at = 0;;) {
        const char *end = memchr(d + at, 0, n - at);
        size_t len = end ? (size_t)(end - (d + at)) : n - at;
        sd_err e = {0};
        bool ok = sd_grammar_accepts(gr, d + at, len, &e);
        if (e.code != SD_OK) { fprintf(stderr, "grammar engine: %s\n", e.msg); rc = 1; }
        puts(ok ? "accept" : "refuse");
        if (!end) break;
        at += len + 1;
    }
    free(d);
    sd_grammar_free(gr);
    return rc;
}
