/* The EAGLE-3 head (model/forward_eagle3.c, decode/drafter_eagle3.c) on the
 * committed fixtures: models/fixture-eagle3.gguf drafting for
 * models/fixture-target.gguf.
 *  - LOSSLESS: speculative output == plain greedy for every bench prompt, with
 *    eagle3 alone (fixed K, adaptive K with the gate) and auto (n-gram +
 *    eagle3), and == plain sampling with the same seed at temperature 0.6
 *    (eagle3, auto); the trained head is accepted somewhere (α > 0);
 *  - the head's forward is batch-invariant (S pairs at once == one by one);
 *  - a head that does not fit is refused with a clear error: target hidden
 *    size, layer ids past the target, another vocabulary; malformed files
 *    (target_layers not 3 ids, block_count 2, duplicate d2t ids, d2t without
 *    output) fail to load; sd_forward refuses a head. */
#define _POSIX_C_SOURCE 200809L /* glob */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <glob.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "decode/spec.h"
#include "model/model.h"
#include "support/tiny_model.h"
#include "support/fixture_load.h"

#define TARGET "models/fixture-target.gguf"
#define HEAD "models/fixture-eagle3.gguf"

typedef enum { RUN_EAGLE3_FIXED, RUN_EAGLE3_GATED, RUN_AUTO, RUN_EAGLE3_SAMPLED, RUN_AUTO_SAMPLED } run_kind;

/* Greedy vs speculative on one prompt; adds to drafted/accepted. */
static void check_prompt(sd_model *target, sd_model *head, const int32_t *prompt, int32_t n_prompt, run_kind kind,
                         int64_t *drafted, int64_t *accepted) {
    const int32_t n_predict = 32;
    sd_err err = {0};
    sd_context *tc = NULL;
    assert_int_equal(sd_context_init(target, 512, 16, 2, &tc, &err), SD_OK);
    sd_lm tlm;
    sd_lm_from_context(&tlm, tc, target);
    sd_spec_params p = sd_spec_default_params();
    p.n_predict = n_predict;
    p.n_batch = 16;
    p.draft_max = 4;
    p.is_eog = eog;
    p.stop_at_eog = false;
    if (kind == RUN_EAGLE3_FIXED || kind >= RUN_EAGLE3_SAMPLED) p.gate_misses = 0, p.adaptive_k = false;
    if (kind >= RUN_EAGLE3_SAMPLED) /* byte-identical to plain sampling with the same seed */
        p.sampling = (sd_sampling){.temp = 0.6f, .top_k = 40, .top_p = 0.95f, .seed = 1234 + (uint64_t)n_prompt};
    int32_t want[64], got[64], n_want = 0, n_got = 0;
    assert_int_equal(sd_spec_generate(&tlm, NULL, prompt, n_prompt, &p, NULL, target->tok, want, &n_want, NULL, &err),
                     SD_OK);
    sd_context_truncate(tc, 0);
    sd_drafter e3 = {0}, ng = {0}, dr = {0};
    assert_int_equal(sd_drafter_eagle3_init(&e3, head, tc, 2, 16, &err), SD_OK);
    if (kind == RUN_AUTO || kind == RUN_AUTO_SAMPLED) {
        assert_int_equal(sd_drafter_ngram_init(&ng, 1, 3, &err), SD_OK);
        assert_int_equal(sd_drafter_auto_init(&dr, &ng, &e3, target->hp.n_vocab, &err), SD_OK);
    } else {
        dr = e3;
    }
    sd_spec_stats st;
    assert_int_equal(sd_spec_generate(&tlm, &dr, prompt, n_prompt, &p, NULL, target->tok, got, &n_got, &st, &err),
                     SD_OK);
    assert_int_equal(n_got, n_want);
    for (int i = 0; i < n_want; i++)
        if (got[i] != want[i]) fail_msg("kind %d: token %d differs (%d vs greedy %d)", kind, i, got[i], want[i]);
    *drafted += st.drafted;
    *accepted += st.accepted;
    sd_drafter_free(&dr);
    assert_null(sd_context_hidden(tc, 0)); /* freeing the drafter turned the hook off */
    sd_context_free(tc);
}

static void test_lossless(void **state) {
    (void)state;
    sd_model *target = load(TARGET), *head = load(HEAD);
    glob_t g;
    assert_int_equal(glob("bench/prompts/*.txt", 0, NULL, &g), 0);
    for (run_kind k = RUN_EAGLE3_FIXED; k <= RUN_AUTO_SAMPLED; k++) {
        int64_t drafted = 0, accepted = 0;
        /* under the sanitizers (SD_ASAN), every third prompt: the same code paths at a third of the time */
        for (size_t i = 0; i < g.gl_pathc; i += getenv("SD_ASAN") ? 3 : 1) {
            size_t n = 0;
            int32_t *ids = bench_prompt(target, g.gl_pathv[i], &n);
            check_prompt(target, head, ids, (int32_t)n, k, &drafted, &accepted);
            free(ids);
        }
        printf("kind %d: accepted %lld of %lld drafted\n", k, (long long)accepted, (long long)drafted);
        assert_true(drafted > 0);
        if (k == RUN_EAGLE3_FIXED || k == RUN_AUTO) assert_true(accepted > 0); /* a trained head guesses the target now and then */
    }
    globfree(&g);
    sd_model_free(head);
    sd_model_free(target);
}

/* S pairs in one forward == the same pairs one at a time (y and logits bitwise). */
static void test_head_batch_invariance(void **state) {
    (void)state;
    sd_model *target = load(TARGET), *head = load(HEAD);
    const int S = 7, E = head->hp.n_embd, V = head->hp.n_draft_vocab, F = 3 * head->hp.n_embd_tgt;
    sd_err err = {0};
    sd_context *tc = NULL, *h1 = NULL, *h2 = NULL;
    assert_int_equal(sd_context_init(target, 64, 16, 2, &tc, &err), SD_OK);
    assert_int_equal(sd_context_request_hidden(tc, head->hp.target_layers, 3, &err), SD_OK);
    int32_t toks[8] = {300, 12, 1021, 45, 7, 880, 33, 4000};
    assert_int_equal(sd_forward_tail(tc, toks, 8, 0, NULL, &err), SD_OK);
    float *feat = malloc((size_t)S * F * sizeof(float)), *g = malloc((size_t)S * E * sizeof(float));
    float *y1 = malloc((size_t)S * E * sizeof(float)), *y2 = malloc((size_t)S * E * sizeof(float));
    float *l1 = malloc((size_t)S * V * sizeof(float)), *l2 = malloc((size_t)S * V * sizeof(float));
    for (int s = 0; s < S; s++) memcpy(feat + s * F, sd_context_hidden(tc, s), (size_t)F * sizeof(float));
    assert_int_equal(sd_context_init(head, 64, 16, 2, &h1, &err), SD_OK);
    assert_int_equal(sd_context_init(head, 64, 4, 1, &h2, &err), SD_OK);
    sd_eagle3_encode(h1, feat, S, g);
    assert_int_equal(sd_eagle3_forward(h1, target, toks + 1, g, S, y1, S, l1, &err), SD_OK);
    for (int s = 0; s < S; s++) {
        float gs[1024];
        sd_eagle3_encode(h2, feat + s * F, 1, gs);
        assert_memory_equal(gs, g + s * E, (size_t)E * sizeof(float));
        assert_int_equal(sd_eagle3_forward(h2, target, toks + 1 + s, gs, 1, y2 + s * E, 1, l2 + s * V, &err), SD_OK);
    }
    assert_memory_equal(y1, y2, (size_t)S * E * sizeof(float));
    assert_memory_equal(l1, l2, (size_t)S * V * sizeof(float));
    assert_true(memcmp(l1, l1 + V, (size_t)V * sizeof(float)) != 0);
    /* bad calls leave the state alone */
    int32_t bad = head->hp.n_vocab;
    assert_int_equal(sd_eagle3_forward(h1, target, &bad, g, 1, NULL, 0, NULL, &err), SD_ERR_ARG);
    assert_int_equal(sd_context_len(h1), S);
    assert_int_equal(sd_forward(h1, toks, 1, l1, &err), SD_ERR_UNSUPPORTED);
    free(feat), free(g), free(y1), free(y2), free(l1), free(l2);
    sd_context_free(h1), sd_context_free(h2), sd_context_free(tc);
    sd_model_free(head);
    sd_model_free(target);
}

/* ---- refusals: the fixture head rewritten with one key or tensor changed ---- */

typedef struct variant {
    const char *key;        /* metadata key to replace (NULL: none) */
    gguf_type type;         /* its new value: scalar u32 or an i32 array */
    const int32_t *arr;
    uint64_t n;
    const char *drop;       /* tensor to leave out (NULL: none) */
    bool dup_d2t;           /* d2t[1] = d2t[0] */
} variant;

static void write_variant(const variant *v, const char *path) {
    sd_err err = {0};
    gguf_ctx *src = NULL;
    assert_int_equal(gguf_open(HEAD, &src, &err), SD_OK);
    gguf_writer *w = gguf_writer_init();
    for (int64_t i = 0; i < gguf_n_kv(src); i++) {
        const char *k = gguf_kv_key(src, i);
        if (v->key && !strcmp(k, v->key)) {
            if (v->type == GGUF_TYPE_ARRAY)
                assert_int_equal(gguf_writer_set_arr_data(w, k, GGUF_TYPE_INT32, v->arr, v->n), SD_OK);
            else
                assert_int_equal(gguf_writer_set_u32(w, k, (uint32_t)v->arr[0]), SD_OK);
        } else {
            assert_int_equal(gguf_writer_copy_kv(w, src, i), SD_OK);
        }
    }
    int64_t *d2t = NULL;
    for (int64_t i = 0; i < gguf_n_tensors(src); i++) {
        const gguf_tensor_info *t = gguf_tensor(src, i);
        if (v->drop && !strcmp(t->name, v->drop)) continue;
        const void *data = t->data;
        if (v->dup_d2t && !strcmp(t->name, "d2t")) {
            d2t = malloc(t->nbytes);
            memcpy(d2t, t->data, t->nbytes);
            d2t[1] = d2t[0];
            data = d2t;
        }
        assert_int_equal(gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, data, t->nbytes), SD_OK);
    }
    assert_int_equal(gguf_writer_write(w, path, &err), SD_OK);
    free(d2t);
    gguf_writer_free(w);
    gguf_close(src);
}

/* Loads a variant; load_err: expected load failure text, else check_err: expected sd_eagle3_check text. */
static void expect(const variant *v, const char *load_err, const char *check_err, const sd_model *target) {
    char path[256];
    tiny_model_temp_path(path, sizeof path, "eagle3-variant");
    write_variant(v, path);
    sd_model *m = NULL;
    sd_err err = {0};
    sd_status st = sd_model_load(path, &m, &err);
    if (load_err) {
        assert_int_not_equal(st, SD_OK);
        if (!strstr(err.msg, load_err)) fail_msg("load error '%s' lacks '%s'", err.msg, load_err);
    } else {
        assert_int_equal(st, SD_OK);
        assert_int_equal(sd_eagle3_check(m, target, &err), SD_ERR_ARG);
        if (!strstr(err.msg, check_err)) fail_msg("check error '%s' lacks '%s'", err.msg, check_err);
        sd_model_free(m);
    }
    remove(path);
}

static void test_refusals(void **state) {
    (void)state;
    sd_model *target = load(TARGET), *head = load(HEAD);
    sd_err err = {0};
    assert_int_equal(sd_eagle3_check(head, target, &err), SD_OK);
    const int32_t far[3] = {1, 2, 9}, two[2] = {1, 2}, size128[1] = {128}, blocks2[1] = {2};
    expect(&(variant){.key = "eagle3.target_hidden_size", .type = GGUF_TYPE_UINT32, .arr = size128, .n = 1},
           "tensor fc.weight has shape", NULL, target);
    /* a target of another width (the fixture draft model: n_embd 96, same tokenizer) */
    sd_model *narrow = load("models/fixture-draft.gguf");
    assert_int_equal(sd_eagle3_check(head, narrow, &err), SD_ERR_ARG);
    assert_non_null(strstr(err.msg, "target_hidden_size 256, the target's n_embd is 96"));
    sd_model_free(narrow);
    expect(&(variant){.key = "eagle3.target_layers", .type = GGUF_TYPE_ARRAY, .arr = far, .n = 3}, NULL,
           "target_layers[2] = 9", target);
    expect(&(variant){.key = "eagle3.target_layers", .type = GGUF_TYPE_ARRAY, .arr = two, .n = 2},
           "exactly 3", NULL, target);
    expect(&(variant){.key = "eagle3.block_count", .type = GGUF_TYPE_UINT32, .arr = blocks2, .n = 1},
           "1 layer", NULL, target);
    expect(&(variant){.dup_d2t = true}, "d2t[1]", NULL, target);
    expect(&(variant){.drop = "output.weight"}, "d2t without output.weight", NULL, target);
    expect(&(variant){.drop = "fc.weight"}, "missing tensor fc.weight", NULL, target);
    /* another vocabulary: a target of the same width with 300 tokens */
    tiny_model_spec sp = tiny_model_default("qwen3", GGML_TYPE_F32);
    sp.n_embd = 256, sp.n_vocab = 300, sp.n_layer = 4, sp.n_ff = 256;
    char path[256];
    tiny_model_temp_path(path, sizeof path, "eagle3-other");
    if (tiny_model_write(&sp, path, &err) != SD_OK) fail_msg("%s", err.msg);
    sd_model *other = load(path);
    assert_int_equal(sd_eagle3_check(head, other, &err), SD_ERR_ARG);
    assert_non_null(strstr(err.msg, "vocabulary"));
    sd_context *oc = NULL;
    sd_drafter d = {0};
    assert_int_equal(sd_context_init(other, 64, 16, 1, &oc, &err), SD_OK);
    assert_int_not_equal(sd_drafter_eagle3_init(&d, head, oc, 1, 16, &err), SD_OK);
    assert_null(sd_context_hidden(oc, 0));
    sd_context_free(oc);
    sd_model_free(other);
    remove(path);
    sd_model_free(head);
    sd_model_free(target);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_head_batch_invariance),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_lossless),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
