/* numerics/quant against llama.cpp itself: tests/data/quant/golden.bin holds
 * blocks produced by llama.cpp's quantize_row_*_ref (IQ4_NL / IQ4_XS: ggml_quantize_chunk,
 * the quantizer llama-quantize runs) from fixed inputs, and
 * llama.cpp's dequantize_row_* of those blocks and of random blocks
 * (generator: tests/data/quant/make_golden.py, run against a released
 * libggml-base.so). Our quantizers must produce the same bytes and our
 * dequantizers the same float bits. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "numerics/quant.h"

typedef struct reader {
    const uint8_t *p, *end;
} reader;

static const void *take(reader *r, size_t n) {
    assert_true((size_t)(r->end - r->p) >= n);
    const void *at = r->p;
    r->p += n;
    return at;
}

static uint32_t take_u32(reader *r) {
    uint32_t v;
    memcpy(&v, take(r, 4), 4);
    return v;
}

static uint8_t *load_golden(size_t *size) {
    FILE *f = fopen("tests/data/quant/golden.bin", "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    assert_true(n > 0);
    uint8_t *buf = malloc((size_t)n);
    assert_non_null(buf);
    assert_int_equal(fread(buf, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *size = (size_t)n;
    return buf;
}

static void test_golden(void **state) {
    (void)state;
    size_t size;
    uint8_t *file = load_golden(&size);
    reader r = {file, file + size};
    assert_memory_equal(take(&r, 4), "SDQG", 4);
    assert_int_equal(take_u32(&r), 1);
    uint32_t prov_len = take_u32(&r);
    print_message("golden: %.*s\n", (int)prov_len, (const char *)take(&r, prov_len));
    uint32_t n = take_u32(&r);
    float *x = malloc(n * sizeof(float));
    assert_non_null(x);
    memcpy(x, take(&r, n * sizeof(float)), n * sizeof(float));
    uint32_t n_records = take_u32(&r);
    int n_quantize = 0, n_dequantize = 0;
    for (uint32_t i = 0; i < n_records; i++) {
        uint32_t type = take_u32(&r), kind = take_u32(&r);
        uint32_t ne = take_u32(&r), nbytes = take_u32(&r);
        assert_true(sd_type_supported(type));
        assert_int_equal((uint64_t)ne / sd_quant_block_size(type) * sd_quant_type_size(type),
                         nbytes);
        /* aligned copies: the file packs records back to back */
        uint8_t *blocks = malloc(nbytes), *ours = malloc(nbytes);
        float *want = malloc(ne * sizeof(float)), *got = malloc(ne * sizeof(float));
        assert_true(blocks && ours && want && got);
        memcpy(blocks, take(&r, nbytes), nbytes);
        memcpy(want, take(&r, ne * sizeof(float)), ne * sizeof(float));
        if (kind == 0) {
            assert_true(ne <= n);
            sd_quantize_row(type, x, ours, ne);
            for (uint32_t b = 0; b < nbytes; b++)
                if (ours[b] != blocks[b])
                    fail_msg("%s quantize: byte %u (block %u) is %02x, llama.cpp %02x",
                             ggml_type_get(type)->name, b, b / sd_quant_type_size(type), ours[b],
                             blocks[b]);
            n_quantize++;
        } else {
            n_dequantize++;
        }
        sd_dequantize_row(type, blocks, got, ne);
        for (uint32_t e = 0; e < ne; e++) {
            uint32_t a, b;
            memcpy(&a, &got[e], 4);
            memcpy(&b, &want[e], 4);
            if (a != b)
                fail_msg("%s dequantize (%s blocks): element %u is %.9g, llama.cpp %.9g",
                         ggml_type_get(type)->name, kind ? "random" : "quantized", e,
                         (double)got[e], (double)want[e]);
        }
        free(blocks);
        free(ours);
        free(want);
        free(got);
    }
    assert_true(r.p == r.end);
    /* every quantizable block type has a quantize record (14), and every
     * block type llama.cpp can dequantize has a random-block record (13) */
    assert_int_equal(n_quantize, 14);
    assert_int_equal(n_dequantize, 13);
    free(x);
    free(file);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
