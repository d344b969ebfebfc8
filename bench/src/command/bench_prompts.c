/* Prompt files for `specdec bench`: see bench.h (bench_prompts_load). */
#define _POSIX_C_SOURCE 200809L
#include <dirent.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "command/bench.h"
#include "core/checked.h"

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Sorted list of DIR's *.txt names (malloc'd strings). */
static sd_status list_txt(const char *dir, char ***names, int *n, sd_err *err) {
    DIR *d = opendir(dir);
    if (!d) return sd_err_set(err, SD_ERR_IO, "%s: cannot open prompt directory: %s", dir, strerror(errno));
    char **v = NULL;
    int cnt = 0, cap = 0;
    struct dirent *ent;
    sd_status st = SD_OK;
    while ((ent = readdir(d))) {
        size_t len = strlen(ent->d_name);
        if (len < 5 || strcmp(ent->d_name + len - 4, ".txt") != 0) continue;
        if (cnt == cap) {
            cap = cap ? 2 * cap : 16;
            char **nv = realloc(v, (size_t)cap * sizeof *nv);
            if (!nv) { st = SD_ERR_NOMEM; break; }
            v = nv;
        }
        if (!(v[cnt] = strdup(ent->d_name))) { st = SD_ERR_NOMEM; break; }
        cnt++;
    }
    closedir(d);
    if (cnt) qsort(v, (size_t)cnt, sizeof *v, cmp_str);
    *names = v, *n = cnt;
    return st ? sd_err_set(err, st, "%s: out of memory listing prompts", dir) : SD_OK;
}

static sd_status read_file(const char *path, char **text, size_t *len, sd_err *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return sd_err_set(err, SD_ERR_IO, "%s: cannot open: %s", path, strerror(errno));
    size_t cap = 4096, n = 0;
    char *buf = malloc(cap);
    while (buf) {
        n += fread(buf + n, 1, cap - n, f);
        if (n < cap) break;
        char *nb = cap < ((size_t)64 << 20) ? realloc(buf, cap * 2) : NULL;
        if (!nb) { free(buf); buf = NULL; break; }
        buf = nb, cap *= 2;
    }
    bool bad = ferror(f);
    fclose(f);
    if (!buf || bad) {
        free(buf);
        return sd_err_set(err, buf ? SD_ERR_IO : SD_ERR_NOMEM, "%s: cannot read (or over 64 MB)", path);
    }
    *text = buf, *len = n;
    return SD_OK;
}

/* Class from a "class: NAME" first line (then skipped), else the name prefix. */
static size_t take_class(const char *fname, const char *text, size_t len, char *cls, size_t cap) {
    if (len > 6 && !strncmp(text, "class:", 6)) {
        size_t i = 6, j;
        while (i < len && (text[i] == ' ' || text[i] == '\t')) i++;
        for (j = i; j < len && text[j] != '\n' && text[j] != '\r' && text[j] != ' '; j++) {}
        snprintf(cls, cap, "%.*s", (int)(j - i), text + i);
        while (j < len && text[j] != '\n') j++;
        return j < len ? j + 1 : len;
    }
    size_t k = strcspn(fname, "-_.");
    snprintf(cls, cap, "%.*s", (int)k, fname);
    return 0;
}

static sd_status load_one(bench_env *e, const char *dir, const char *fname, bench_prompt *p, sd_err *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", dir, fname);
    char *text = NULL;
    size_t len = 0;
    sd_status st = read_file(path, &text, &len, err);
    if (st) return st;
    size_t skip = take_class(fname, text, len, p->cls, sizeof p->cls);
    snprintf(p->name, sizeof p->name, "%.*s", (int)(strlen(fname) - 4), fname);
    size_t n_ids = 0;
    st = sd_tokenize(e->tm->tok, text + skip, len - skip, true, false, &p->ids, &n_ids, err);
    free(text);
    if (st) return st;
    p->n_ids = (int32_t)n_ids;
    if (p->n_ids < 2) return sd_err_set(err, SD_ERR_ARG, "%s: prompt has fewer than 2 tokens", path);
    return SD_OK;
}

sd_status bench_prompts_load(bench_env *e, const char *dir, sd_err *err) {
    char **names = NULL;
    int n = 0;
    sd_status st = list_txt(dir, &names, &n, err);
    if (!st && n == 0) st = sd_err_set(err, SD_ERR_ARG, "%s: no *.txt prompt files", dir);
    if (!st && !(e->prompts = sd_calloc((size_t)n, sizeof *e->prompts))) st = sd_err_set(err, SD_ERR_NOMEM, "out of memory");
    for (int i = 0; !st && i < n; i++) {
        st = load_one(e, dir, names[i], &e->prompts[i], err);
        e->n_prompts = i + 1;
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    return st;
}

void bench_prompts_free(bench_env *e) {
    for (int i = 0; i < e->n_prompts; i++) free(e->prompts[i].ids);
    free(e->prompts);
    e->prompts = NULL, e->n_prompts = 0;
}
