/* model/loader: after load, the file pages of every tensor the model copied
 * (repacked matrices, f32 norms) are no longer held by the process
 * (gguf_release; measured with /proc/self/pagemap), sd_model_memory_get
 * reports that, and token_embd rows are still looked up correctly from the
 * released mapping (bitwise what an independent read of the file gives).
 * Logits after release are covered by the reference and batch-invariance
 * tests, which load the same way. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/model.h"
#include "numerics/quant.h"
#include "support/pagemap.h"
#include "support/skip.h"

#define FIXTURE "models/fixture-target.gguf"

/* The committed fixture (a missing one is a broken checkout: a failure); the
 * test skips only where /proc/self/pagemap cannot be read. */
static sd_model *load_fixture(void) {
    if (!pagemap_readable()) SD_SKIP("/proc/self/pagemap unreadable here (a container without it)");
    sd_model *m = NULL;
    sd_err e = {0};
    if (sd_model_load(FIXTURE, &m, &e) != SD_OK) fail_msg("%s", e.msg);
    return m;
}

static void test_pages_released(void **state) {
    (void)state;
    sd_model *m = load_fixture();
    bool packed = m->layers[0].wq.packed != NULL; /* else the scalar kernels read the file */
    uint64_t copied = 0;
    for (int64_t i = 0; i < gguf_n_tensors(m->gguf); i++) {
        const gguf_tensor_info *t = gguf_tensor(m->gguf, i);
        bool vector = t->n_dims == 1;
        bool in_place = !vector && (!packed || (!m->hp.tied_output && !strcmp(t->name, "token_embd.weight")));
        if (in_place) {
            assert_int_equal(gguf_released_bytes(m->gguf, t), 0);
            continue;
        }
        assert_int_equal(gguf_released_bytes(m->gguf, t), t->nbytes);
        if (inner_resident(t->data, t->nbytes) != 0) fail_msg("%s: file pages still resident after load", t->name);
        copied += t->nbytes;
    }
    assert_true(copied > 0);
    sd_model_memory mem;
    sd_model_memory_get(m, &mem);
    assert_true(mem.file_measured);
    assert_true(mem.f32 > 0);
    if (packed) {
        assert_true(mem.packed >= sd_model_weight_bytes(m)); /* every layer matrix and the head */
        /* what stays of the file: the header the tokenizer read, and page
         * remainders at its edge and the end of the file */
        assert_true(mem.file <= gguf_data_offset(m->gguf) + 2 * sd_page_size());
    } else {
        assert_int_equal(mem.packed, 0);
    }
    sd_model_free(m);
}

/* Embedding rows read through the released mapping equal an independent read. */
static void test_lookup_after_release(void **state) {
    (void)state;
    sd_model *m = load_fixture();
    gguf_ctx *g = NULL;
    sd_err e = {0};
    assert_int_equal(gguf_open(FIXTURE, &g, &e), SD_OK);
    const gguf_tensor_info *t = gguf_find_tensor(g, "token_embd.weight");
    assert_non_null(t);
    const int64_t n = m->tok_embd.n_in, rows = m->tok_embd.n_out;
    float *got = malloc((size_t)n * sizeof *got), *want = malloc((size_t)n * sizeof *want);
    assert_non_null(got), assert_non_null(want);
    const size_t row_bytes = (size_t)(t->nbytes / (uint64_t)rows);
    const int64_t ids[] = {0, 1, rows / 3, rows / 2, rows - 2, rows - 1};
    for (size_t k = 0; k < sizeof ids / sizeof ids[0]; k++) {
        sd_matrix_get_row(&m->tok_embd, ids[k], got);
        sd_dequantize_row(t->type, (const uint8_t *)t->data + (size_t)ids[k] * row_bytes, want, n);
        assert_memory_equal(got, want, (size_t)n * sizeof *got);
    }
    free(got), free(want);
    gguf_close(g);
    sd_model_free(m);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_pages_released),
        cmocka_unit_test(test_lookup_after_release),
    };
    return SD_RUN_TESTS(tests);
}
