/* Writes a seed corpus for fuzz_tokenizer into the directory argv[1]: every
 * gold-vector input of tests/data/tokenizer (qwen2 and llama-spm), each with
 * a few mode bytes, plus some invalid UTF-8 and special-token texts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int n_seeds;

static int save(const char *dir, unsigned char mode, const char *text, size_t len) {
    char path[1024];
    snprintf(path, sizeof path, "%s/seed-%04d", dir, n_seeds++);
    FILE *f = fopen(path, "wb");
    if (!f) return 1;
    int bad = fputc(mode, f) == EOF || fwrite(text, 1, len, f) != len;
    return (fclose(f) != 0) | bad;
}

static int seed_vectors(const char *dir, const char *name, unsigned char vocab_bit) {
    char path[512];
    snprintf(path, sizeof path, "tests/data/tokenizer/ggml-vocab-%s.gguf.inp", name);
    FILE *f = fopen(path, "rb");
    if (!f) {
        fprintf(stderr, "seeds_tokenizer: cannot open %s\n", path);
        return 1;
    }
    static char buf[1 << 16];
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[n] = '\0';
    static const char term[] = "\n__ggml_vocab_test__\n";
    int bad = 0, k = 0;
    for (char *p = buf, *t; (t = strstr(p, term)); p = t + strlen(term), k++)
        bad |= save(dir, (unsigned char)(vocab_bit | ((k % 3) << 1)), p, (size_t)(t - p));
    return bad;
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: seeds_tokenizer DIR\n");
        return 2;
    }
    static const char *const extra[] = {
        "<|im_start|>user\nhi<|im_end|>\n", "<s>Hello</s>", "\xE4\xB8\x96\xE4\xB8\xFF\x80 x", "\xC0\xAF\xED\xA0\x80",
        "[PAD151646]a", "   \t\t\n\n  ", "\xF0\x9F\x9A\x80\xF0\x9F\x9A",
    };
    int bad = seed_vectors(argv[1], "qwen2", 0) | seed_vectors(argv[1], "llama-spm", 1);
    for (size_t i = 0; i < sizeof extra / sizeof extra[0]; i++)
        for (unsigned char mode = 0; mode < 8; mode++) bad |= save(argv[1], mode, extra[i], strlen(extra[i]));
    return bad;
}
