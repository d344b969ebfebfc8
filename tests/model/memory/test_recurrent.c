/* model/memory/recurrent: the recurrent memory as a component. The state
 * calls refuse any sequence but 0; save / load / reset round-trip; the
 * capture ring indexes step p at slot p % slots, records only the steps a
 * forward captured from `from` on, and loads a STATE slot back. Through a
 * qwen35 context: a snapshot restored after a detour gives bitwise the
 * logits of a context that never took it. */
#define _POSIX_C_SOURCE 200809L /* setenv */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <string.h>

#include "model/context.h"
#include "model/model_test_util.h"

/* Two GDN layers: conv window (4 - 1) x 8, states 2 heads of 2 x 2. */
static sd_hparams small_hp(void) {
    sd_hparams hp = {.arch = SD_ARCH_QWEN35, .n_layer = 3, .n_layer_gdn = 2, .ssm_conv_kernel = 4,
                     .ssm_conv_dim = 8, .ssm_n_v_heads = 2, .ssm_n_k_heads = 1, .ssm_state = 2};
    return hp;
}

static void test_state_seq_round_trip(void **state) {
    (void)state;
    const sd_hparams hp = small_hp();
    sd_recurrent r;
    assert_int_equal(sd_recurrent_build(&r, &hp, NULL), SD_OK);
    const size_t floats = 2 * (3 * 8 + 2 * 2 * 2);
    assert_int_equal(sd_recurrent_bytes(&r), floats * sizeof(float));
    for (size_t i = 0; i < floats; i++) assert_true(r.data[i] == 0.0f); /* a fresh sequence is zeros */
    assert_ptr_equal(sd_recurrent_ssm(&r, 0, 1), sd_recurrent_conv(&r, 0, 1) + 3 * 8);
    assert_ptr_equal(sd_recurrent_conv(&r, 0, 1), r.data + floats / 2);
    assert_null(sd_recurrent_conv(&r, 1, 0)); /* only sequence 0 exists */
    assert_null(sd_recurrent_ssm(&r, -1, 0));
    for (size_t i = 0; i < floats; i++) r.data[i] = (float)i + 0.5f;
    float *snap = malloc(sd_recurrent_bytes(&r)), *other = calloc(floats, sizeof *other);
    assert_int_equal(sd_recurrent_save(&r, 1, snap), SD_ERR_ARG);
    assert_int_equal(sd_recurrent_save(&r, 0, snap), SD_OK);
    assert_int_equal(sd_recurrent_reset(&r, 1), SD_ERR_ARG);
    assert_true(r.data[3] == 3.5f); /* refused: unchanged */
    assert_int_equal(sd_recurrent_reset(&r, 0), SD_OK);
    assert_memory_equal(r.data, other, sd_recurrent_bytes(&r));
    assert_int_equal(sd_recurrent_load(&r, 1, snap), SD_ERR_ARG);
    assert_memory_equal(r.data, other, sd_recurrent_bytes(&r));
    assert_int_equal(sd_recurrent_load(&r, 0, snap), SD_OK);
    assert_memory_equal(r.data, snap, sd_recurrent_bytes(&r));
    free(snap);
    free(other);
    sd_recurrent_free(&r);
    /* a dense model: an empty state, the calls still work */
    sd_hparams dense = {.arch = SD_ARCH_QWEN3, .n_layer = 2};
    assert_int_equal(sd_recurrent_build(&r, &dense, NULL), SD_OK);
    assert_int_equal(sd_recurrent_bytes(&r), 0);
    assert_int_equal(sd_recurrent_reset(&r, 0), SD_OK);
    assert_int_equal(sd_recurrent_capture_init(&r, &dense, SD_CAPTURE_STATE, 4, NULL), SD_OK);
    assert_null(r.cap.data);
    assert_int_equal(r.cap.kind, SD_CAPTURE_NONE);
    sd_recurrent_free(&r);
}

static void test_capture_ring(void **state) {
    (void)state;
    const sd_hparams hp = small_hp();
    sd_recurrent r;
    sd_err err = {0};
    assert_int_equal(sd_recurrent_build(&r, &hp, NULL), SD_OK);
    assert_int_equal(sd_recurrent_capture_init(&r, &hp, SD_CAPTURE_STATE, 0, &err), SD_ERR_ARG);
    assert_int_equal(sd_recurrent_capture_init(&r, &hp, (sd_capture_kind)7, 4, &err), SD_ERR_ARG);
    assert_null(r.cap.data);
    assert_int_equal(sd_recurrent_capture_init(&r, &hp, SD_CAPTURE_STATE, 4, &err), SD_OK);
    const int64_t lf = 3 * 8 + 2 * 2 * 2;
    assert_int_equal(r.cap.layer_floats, lf);
    assert_int_equal(r.cap.floats, 2 * lf);
    assert_int_equal(sd_capture_layer_floats(&hp, SD_CAPTURE_INPUTS), 2 * 8 + 2 * 2);
    /* step p lives at slot p % 4; a layer's block lies layer_floats further */
    assert_ptr_equal(sd_capture_slot(&r, 5, 0), r.cap.data + 1 * 2 * lf);
    assert_ptr_equal(sd_capture_slot(&r, 7, 1), r.cap.data + 3 * 2 * lf + lf);
    assert_ptr_equal(sd_capture_slot(&r, 8, 0), r.cap.data);
    /* nothing captured until capture_from */
    assert_int_equal(sd_recurrent_capture_start(&r, SD_CAPTURE_STATE, 0, 6), 6);
    sd_recurrent_capture_commit(&r, 0, 6);
    for (int32_t p = 1; p <= 6; p++) assert_false(sd_recurrent_captured(&r, SD_CAPTURE_STATE, p));
    sd_recurrent_capture_from(&r, 3);
    assert_int_equal(sd_recurrent_capture_start(&r, SD_CAPTURE_STATE, 0, 6), 2); /* token 2 makes step 3 */
    assert_int_equal(sd_recurrent_capture_start(&r, SD_CAPTURE_INPUTS, 0, 6), 6); /* another kind: none */
    assert_int_equal(sd_recurrent_capture_start(&r, SD_CAPTURE_STATE, 5, 2), 0);
    sd_recurrent_capture_commit(&r, 0, 6); /* steps 3..6 at slots 3, 0, 1, 2 */
    assert_false(sd_recurrent_captured(&r, SD_CAPTURE_STATE, 2));
    for (int32_t p = 3; p <= 6; p++) assert_true(sd_recurrent_captured(&r, SD_CAPTURE_STATE, p));
    assert_false(sd_recurrent_captured(&r, SD_CAPTURE_INPUTS, 5));
    assert_false(sd_recurrent_captured(&r, SD_CAPTURE_STATE, 7)); /* slot 3 holds step 3, not 7 */
    assert_int_equal(r.cap.pos[2], 6);
    sd_recurrent_capture_commit(&r, 6, 1); /* step 7 overwrites step 3's slot */
    assert_true(sd_recurrent_captured(&r, SD_CAPTURE_STATE, 7));
    assert_false(sd_recurrent_captured(&r, SD_CAPTURE_STATE, 3));
    /* touch writes only the slots without a capture: none left here */
    float *slot5 = sd_capture_slot(&r, 5, 0);
    for (int64_t i = 0; i < r.cap.floats; i++) slot5[i] = (float)(i * 3);
    sd_recurrent_capture_touch(&r);
    assert_true(slot5[4] == 12.0f);
    /* loading step 5 makes it the state */
    assert_int_equal(sd_recurrent_capture_load(&r, 1, 5), SD_ERR_ARG);
    assert_int_equal(sd_recurrent_capture_load(&r, 0, 5), SD_OK);
    assert_memory_equal(r.data, slot5, (size_t)r.cap.floats * sizeof(float));
    /* a new init forgets every capture */
    assert_int_equal(sd_recurrent_capture_init(&r, &hp, SD_CAPTURE_INPUTS, 2, &err), SD_OK);
    assert_false(sd_recurrent_captured(&r, SD_CAPTURE_INPUTS, 6));
    assert_int_equal(r.cap.from, INT32_MAX);
    sd_recurrent_free(&r);
}

/* A qwen35 context: snapshot after the prefix, a detour of 3 tokens, restore;
 * the next forward's logits are bitwise those of a context without the detour. */
static void test_snapshot_restore(void **state) {
    (void)state;
    sd_model *m = NULL;
    sd_err err = {0};
    assert_int_equal(sd_model_load("models/fixture-q35-target.gguf", &m, &err), SD_OK);
    const int V = m->hp.n_vocab;
    int32_t pre[5], detour[3], next[2];
    test_tokens(pre, 5, V, 11);
    test_tokens(detour, 3, V, 12);
    test_tokens(next, 2, V, 13);
    sd_context *c = NULL, *f = NULL;
    assert_int_equal(sd_context_init(m, 32, 8, 2, &c, &err), SD_OK);
    assert_int_equal(sd_context_init(m, 32, 8, 2, &f, &err), SD_OK);
    float *lg = malloc((size_t)3 * V * sizeof *lg), *want = malloc((size_t)2 * V * sizeof *want);
    assert_int_equal(sd_forward_tail(f, pre, 5, 0, NULL, &err), SD_OK);
    assert_int_equal(sd_forward(f, next, 2, want, &err), SD_OK);
    assert_int_equal(sd_forward_tail(c, pre, 5, 0, NULL, &err), SD_OK);
    const size_t n = sd_context_state_bytes(c);
    void *snap = malloc(n);
    assert_int_equal(sd_context_state_save(c, snap, n, &err), SD_OK);
    assert_int_equal(sd_forward(c, detour, 3, lg, &err), SD_OK);
    assert_int_equal(sd_context_state_restore(c, snap, n, &err), SD_OK);
    assert_int_equal(sd_context_len(c), 5);
    assert_int_equal(sd_forward(c, next, 2, lg, &err), SD_OK);
    assert_memory_equal(lg, want, (size_t)2 * V * sizeof *lg);
    free(snap);
    free(lg);
    free(want);
    sd_context_free(c);
    sd_context_free(f);
    sd_model_free(m);
}

int main(int argc, char **argv) {
    (void)argc;
    test_passive_omp(argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_state_seq_round_trip),
        cmocka_unit_test(test_capture_ring),
        cmocka_unit_test(test_snapshot_restore),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
