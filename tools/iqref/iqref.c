/* iqref: writes the reference file tests/data/quant/iq_reference.txt from
 * llama.cpp's own dequantization, so that our grids and decoders are checked
 * against the reference rather than against a transcription.
 *
 * It loads libggml-base.so (node-llama-cpp ships one; any llama.cpp build has
 * it), asks ggml_get_type_traits(type)->to_float to dequantize blocks of each
 * of IQ1_S, IQ1_M, IQ2_XXS, IQ2_XS, IQ2_S, IQ3_XXS, IQ3_S and MXFP4, and
 * prints one line per block:  type-name block-hex fnv1a64-of-the-f32-bits.
 * The blocks use every grid index (for MXFP4 every exponent), plus random
 * blocks, an all-zero block and extreme scales (fp16 max, smallest subnormal,
 * negative). Only the library's public C API is used; nothing of it is copied.
 *
 * Build and run (not part of CI; the file it writes is committed):
 *   cc -O1 -o iqref tools/iqref/iqref.c -ldl
 *   ./iqref .../bins/linux-x64/libggml-base.so > tests/data/quant/iq_reference.txt */
#include <dlfcn.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ggml.h's struct ggml_type_traits, by its public declaration. */
struct traits {
    const char *type_name;
    int64_t blck_size, blck_size_interleave;
    size_t type_size;
    bool is_quantized;
    void (*to_float)(const void *x, float *y, int64_t k);
    void (*from_float_ref)(const float *x, void *y, int64_t k);
};

typedef struct kind {
    int id;               /* ggml type id (ggml.h enum ggml_type) */
    const char *name;
    int bytes, block;
    int n_grid, per_block; /* grid size, indices per block */
} kind;

static const kind KINDS[] = {
    {19, "iq1_s", 50, 256, 2048, 32},  {29, "iq1_m", 56, 256, 2048, 32},  {16, "iq2_xxs", 66, 256, 256, 32},
    {17, "iq2_xs", 74, 256, 512, 32},  {22, "iq2_s", 82, 256, 1024, 32},  {18, "iq3_xxs", 98, 256, 256, 64},
    {21, "iq3_s", 110, 256, 512, 64},  {39, "mxfp4", 17, 32, 256, 1},
};

static uint64_t g_rng = 0x2545F4914F6CDD1Dull;
static uint64_t rnd(void) {
    uint64_t z = (g_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Puts fp16 bits h where the block keeps its scale. */
static void set_d(const kind *k, uint8_t *b, uint16_t h) {
    if (k->id == 29) { /* iq1_m: top nibbles of the four scale u16 at 48..55 */
        for (int i = 0; i < 4; i++) b[49 + 2 * i] = (uint8_t)((b[49 + 2 * i] & 0x0F) | ((h >> 4 * i) & 0xF) << 4);
    } else if (k->id != 39) {
        b[0] = (uint8_t)h;
        b[1] = (uint8_t)(h >> 8);
    }
}

/* Index slot j (0 .. per_block-1) of the block gets grid index v. */
static void set_index(const kind *k, uint8_t *b, int j, int v) {
    int ib = j / 4, l = j % 4;
    switch (k->id) {
    case 16: b[2 + 8 * ib + l] = (uint8_t)v; break;
    case 17: {
        uint16_t u = (uint16_t)((b[2 + 2 * j] | b[3 + 2 * j] << 8) & ~511) | (uint16_t)v;
        b[2 + 2 * j] = (uint8_t)u;
        b[3 + 2 * j] = (uint8_t)(u >> 8);
        break;
    }
    case 22:
        b[2 + j] = (uint8_t)v;
        b[66 + ib] = (uint8_t)((b[66 + ib] & ~(3 << 2 * l)) | (v >> 8) << 2 * l);
        break;
    case 18: b[2 + j] = (uint8_t)v; break;
    case 21:
        b[2 + j] = (uint8_t)v;
        b[66 + j / 8] = (uint8_t)((b[66 + j / 8] & ~(1 << j % 8)) | (v >> 8) << j % 8);
        break;
    case 19: {
        uint16_t h = (uint16_t)(b[34 + 2 * ib] | b[35 + 2 * ib] << 8);
        h = (uint16_t)((h & ~(7 << 3 * l)) | (v >> 8) << 3 * l);
        b[2 + j] = (uint8_t)v;
        b[34 + 2 * ib] = (uint8_t)h;
        b[35 + 2 * ib] = (uint8_t)(h >> 8);
        break;
    }
    case 29: {
        uint8_t *h = &b[32 + 2 * ib + l / 2];
        int sh = l % 2 ? 4 : 0;
        b[j] = (uint8_t)v;
        *h = (uint8_t)((*h & ~(7 << sh)) | (v >> 8) << sh);
        break;
    }
    case 39: b[0] = (uint8_t)v; break; /* mxfp4: the exponent */
    }
}

static uint64_t fnv(const float *y, int n) {
    uint64_t h = 0xcbf29ce484222325ull;
    for (int i = 0; i < n; i++) {
        uint32_t u;
        memcpy(&u, &y[i], 4);
        for (int k = 0; k < 4; k++) {
            h ^= (u >> 8 * k) & 0xFF;
            h *= 0x100000001b3ull;
        }
    }
    return h;
}

static void emit(const struct traits *t, const kind *k, const uint8_t *b) {
    float y[256];
    t->to_float(b, y, k->block);
    printf("%s ", k->name);
    for (int i = 0; i < k->bytes; i++) printf("%02x", b[i]);
    printf(" %016llx\n", (unsigned long long)fnv(y, k->block));
}

static void random_block(const kind *k, uint8_t *b, uint16_t d) {
    for (int i = 0; i < k->bytes; i++) b[i] = (uint8_t)rnd();
    set_d(k, b, d);
    if (k->id == 39 && d) b[0] = (uint8_t)(100 + rnd() % 40);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: iqref PATH/libggml-base.so\n");
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW);
    if (!lib) {
        fprintf(stderr, "iqref: %s\n", dlerror());
        return 1;
    }
    const struct traits *(*get)(int) = (const struct traits *(*)(int))dlsym(lib, "ggml_get_type_traits");
    if (!get) {
        fprintf(stderr, "iqref: no ggml_get_type_traits in %s\n", argv[1]);
        return 1;
    }
    printf("# llama.cpp dequantization of IQ1/IQ2/IQ3/MXFP4 blocks: type block-hex fnv1a64(f32 bits); made by "
           "tools/iqref/iqref.c\n");
    uint8_t b[128];
    for (size_t n = 0; n < sizeof KINDS / sizeof KINDS[0]; n++) {
        const kind *k = &KINDS[n];
        const struct traits *t = get(k->id);
        if (!t || !t->to_float || (int)t->type_size != k->bytes || t->blck_size != k->block) {
            fprintf(stderr, "iqref: %s: the library's traits differ from ggml-common.h\n", k->name);
            return 1;
        }
        /* every grid index (mxfp4: every exponent, random nibbles) */
        for (int v0 = 0; v0 < k->n_grid; v0 += k->per_block) {
            random_block(k, b, 0x2C00 | (uint16_t)(rnd() & 0x3FF)); /* d in [1/16, 1/8) */
            for (int j = 0; j < k->per_block; j++) set_index(k, b, j, v0 + j);
            emit(t, k, b);
        }
        for (int r = 0; r < 8; r++) { /* random, d of either sign */
            random_block(k, b, (uint16_t)(0x2000 + rnd() % 0x2000) | (uint16_t)(rnd() & 1) << 15);
            emit(t, k, b);
        }
        memset(b, 0, sizeof b); /* all zero */
        emit(t, k, b);
        static const uint16_t extreme[] = {0x7BFF, 0xFBFF, 0x0001, 0x8001, 0x0400, 0x0000};
        for (size_t e = 0; e < sizeof extreme / sizeof extreme[0]; e++) {
            random_block(k, b, extreme[e]);
            if (k->id == 39) b[0] = (uint8_t)(e == 0 ? 254 : e == 1 ? 0 : e == 2 ? 1 : e == 3 ? 2 : e == 4 ? 127 : 128);
            emit(t, k, b);
        }
    }
    return 0;
}
