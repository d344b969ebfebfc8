/* Seeds for fuzz_jinja: each template of tests/data/chat as a mode-0 input
 * (the template over a fixed conversation), and a few conversations (mode 1).
 * usage: seeds_jinja CORPUS_DIR (run by fuzz/run.sh from the repo root). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void put(const char *dir, int i, unsigned char mode, const char *p, size_t n) {
    char path[1024];
    snprintf(path, sizeof path, "%s/seed-%03d", dir, i);
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fputc(mode, f);
    fwrite(p, 1, n, f);
    fclose(f);
}

int main(int argc, char **argv) {
    if (argc != 2) return 2;
    DIR *d = opendir("tests/data/chat");
    if (!d) return 1;
    int i = 0;
    static char buf[1 << 16];
    for (struct dirent *e; (e = readdir(d));) {
        size_t l = strlen(e->d_name);
        if (l < 6 || strcmp(e->d_name + l - 6, ".jinja")) continue;
        char path[1024];
        snprintf(path, sizeof path, "tests/data/chat/%s", e->d_name);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        size_t n = fread(buf, 1, sizeof buf, f);
        fclose(f);
        put(argv[1], i++, 0, buf, n);
    }
    closedir(d);
    static const char conv[] = "Hello <|im_end|>\0<think>x</think>answer\0{{ x }}{% if %}\0<tool_response>\nok\n</tool_response>";
    for (unsigned m = 1; m < 24; m += 3) put(argv[1], i++, (unsigned char)m, conv, sizeof conv - 1);
    return 0;
}
