/* The public file calls of include/specdec.h: the GGUF reader (keys, typed
 * values, tensors agreeing with the loaded model and the file size; range
 * checks; the errors of a missing, NULL or malformed path), the loaded
 * model's layout (a hybrid's layer kinds add up to its Gated DeltaNet count;
 * a dense model has no recurrent state), and the whole-file quantizer (type
 * names, the output's file_type and tensor types read back through the
 * reader, progress called once per tensor, output independent of the thread
 * count, and no output file left by a failure). Runs on the committed fixture
 * models (models/fixture-*.gguf, from the repository root). */
#define _POSIX_C_SOURCE 200809L /* mkstemp */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "api_test_util.h"
#include "specdec.h"

#define TARGET "models/fixture-target.gguf"
#define Q35 "models/fixture-q35-target.gguf"

static specdec_gguf *open_gguf(const char *path) {
    specdec_gguf *g = NULL;
    specdec_error err = {0};
    if (specdec_gguf_open(path, &g, &err) != SPECDEC_OK) fail_msg("open %s: %s", path, err.message);
    return g;
}

/* The string at key as a NUL-terminated copy in buf (cap bytes). */
static const char *key_str(const specdec_gguf *g, const char *key, char *buf, size_t cap) {
    int64_t i = specdec_gguf_find_key(g, key);
    assert_true(i >= 0);
    assert_string_equal(specdec_gguf_kv_type(g, i, NULL, NULL), "string");
    specdec_gguf_value v;
    assert_true(specdec_gguf_kv_value(g, i, 0, &v));
    assert_int_equal(v.kind, SPECDEC_GGUF_STRING);
    assert_true(v.len < cap);
    memcpy(buf, v.s, (size_t)v.len);
    buf[v.len] = 0;
    return buf;
}

static uint64_t key_uint(const specdec_gguf *g, const char *key) {
    int64_t i = specdec_gguf_find_key(g, key);
    assert_true(i >= 0);
    specdec_gguf_value v;
    assert_true(specdec_gguf_kv_value(g, i, 0, &v));
    assert_int_equal(v.kind, SPECDEC_GGUF_UINT);
    return v.u;
}

static void test_gguf_reader(void **state) {
    (void)state;
    specdec_gguf *g = open_gguf(TARGET);
    specdec_model *m = api_load(TARGET);
    const specdec_gguf_header h = specdec_gguf_header_get(g);
    assert_true(h.version == 2 || h.version == 3);
    assert_true(h.n_kv > 0 && h.n_tensors > 0);
    char buf[256];
    assert_string_equal(key_str(g, "general.architecture", buf, sizeof buf), specdec_model_arch(m));
    /* the vocabulary: a string array as long as the model's */
    int64_t tok = specdec_gguf_find_key(g, "tokenizer.ggml.tokens");
    const char *elem = NULL;
    uint64_t n = 0;
    assert_string_equal(specdec_gguf_kv_type(g, tok, &elem, &n), "array");
    assert_string_equal(elem, "string");
    assert_int_equal(n, (uint64_t)specdec_model_n_vocab(m));
    specdec_gguf_value v;
    assert_true(specdec_gguf_kv_value(g, tok, n - 1, &v));
    assert_false(specdec_gguf_kv_value(g, tok, n, &v));
    specdec_gguf_kv_format(g, tok, buf, sizeof buf);
    assert_non_null(strstr(buf, "string x"));
    /* every key is found at its own index */
    for (int64_t i = 0; i < h.n_kv; i++) assert_int_equal(specdec_gguf_find_key(g, specdec_gguf_key(g, i)), i);
    assert_int_equal(specdec_gguf_find_key(g, "no.such.key"), -1);
    assert_null(specdec_gguf_key(g, h.n_kv));
    assert_null(specdec_gguf_kv_type(g, -1, NULL, NULL));
    /* tensors: parameters add up to the model's, data lies inside the file */
    struct stat st;
    assert_int_equal(stat(TARGET, &st), 0);
    uint64_t params = 0;
    specdec_gguf_tensor t;
    for (int64_t i = 0; i < h.n_tensors; i++) {
        assert_true(specdec_gguf_tensor_get(g, i, &t));
        uint64_t ne = 1;
        for (uint32_t d = 0; d < t.n_dims; d++) ne *= (uint64_t)t.ne[d];
        params += ne;
        assert_true(h.data_offset + t.offset + t.nbytes <= (uint64_t)st.st_size);
        assert_int_equal(t.offset % h.alignment, 0);
        if (!strcmp(t.name, "token_embd.weight")) assert_int_equal(t.ne[1], specdec_model_n_vocab(m));
    }
    assert_false(specdec_gguf_tensor_get(g, h.n_tensors, &t));
    assert_int_equal(params, specdec_model_n_params(m));
    specdec_model_free(m);
    specdec_gguf_close(g);
}

static void test_gguf_errors(void **state) {
    (void)state;
    specdec_gguf *g = (specdec_gguf *)&g;
    specdec_error err = {0};
    assert_int_equal(specdec_gguf_open("models/no-such-file.gguf", &g, &err), SPECDEC_ERR_IO);
    assert_null(g);
    assert_non_null(strstr(err.message, "no-such-file.gguf"));
    assert_int_equal(specdec_gguf_open(NULL, &g, &err), SPECDEC_ERR_ARG);
    char path[] = "/tmp/specdec-api-files-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "NOTGGUF!", 8), 8);
    close(fd);
    assert_int_equal(specdec_gguf_open(path, &g, &err), SPECDEC_ERR_FORMAT);
    assert_null(g);
    unlink(path);
    specdec_gguf_close(NULL);
}

static void test_model_layout(void **state) {
    (void)state;
    specdec_model *m = api_load(Q35);
    specdec_model_layout l;
    specdec_error err = {0};
    assert_int_equal(specdec_model_layout_get(m, &l, &err), SPECDEC_OK);
    assert_true(l.n_layer_gdn > 0 && l.n_layer_gdn < l.n_layer);
    int gdn = 0;
    for (int32_t i = 0; i < l.n_layer; i++) {
        char k = specdec_model_layer_kind(m, i);
        assert_true(k == 'G' || k == 'A');
        gdn += k == 'G';
    }
    assert_int_equal(gdn, l.n_layer_gdn);
    assert_int_equal(specdec_model_layer_kind(m, l.n_layer), 0);
    uint64_t per_layer = ((uint64_t)(l.ssm_conv_kernel - 1) * (uint64_t)l.ssm_conv_dim +
                          (uint64_t)l.ssm_n_v_heads * (uint64_t)l.ssm_state * (uint64_t)l.ssm_state) * 4;
    assert_int_equal(l.recurrent_bytes, per_layer * (uint64_t)l.n_layer_gdn);
    assert_true(l.active_weight_bytes > 0 && l.active_weight_bytes == l.matrix_bytes); /* no experts */
    assert_int_equal(specdec_model_layout_get(NULL, &l, &err), SPECDEC_ERR_ARG);
    specdec_model_free(m);
    m = api_load(TARGET);
    assert_int_equal(specdec_model_layout_get(m, &l, &err), SPECDEC_OK);
    assert_int_equal(l.n_layer_gdn, 0);
    assert_int_equal(l.recurrent_bytes, 0);
    assert_int_equal(l.n_expert, 0);
    assert_int_equal(specdec_model_layer_kind(m, 0), 'A');
    specdec_model_free(m);
}

typedef struct progress_log {
    int64_t calls, last_i, n;
    int64_t changed; /* tensors whose type names differ */
} progress_log;

static void on_progress(void *user, int64_t i, int64_t n, const char *name, const char *from, const char *to) {
    progress_log *p = user;
    assert_non_null(name);
    assert_int_equal(i, p->calls); /* in order, once each */
    p->calls++, p->last_i = i, p->n = n;
    p->changed += strcmp(from, to) != 0;
}

static uint8_t *slurp(const char *path, size_t *n) {
    FILE *f = fopen(path, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    *n = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(*n ? *n : 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, *n, f), *n);
    fclose(f);
    return b;
}

static void test_quantize_file(void **state) {
    (void)state;
    const char *canon = NULL;
    uint32_t ft = 0;
    assert_true(specdec_quantize_type_find("Q4_K_M", &canon, &ft));
    assert_string_equal(canon, "q4_k_m");
    assert_int_equal(ft, 15); /* LLAMA_FTYPE_MOSTLY_Q4_K_M */
    assert_false(specdec_quantize_type_find("q4_k_x", NULL, NULL));
    assert_false(specdec_quantize_type_find(NULL, NULL, NULL));

    char out1[] = "/tmp/specdec-api-q-XXXXXX", out2[] = "/tmp/specdec-api-q-XXXXXX";
    int fd1 = mkstemp(out1), fd2 = mkstemp(out2);
    assert_true(fd1 >= 0 && fd2 >= 0);
    close(fd1), close(fd2);
    progress_log p = {0};
    specdec_quantize_stats s = {0};
    specdec_error err = {0};
    specdec_quantize_params qp = {.n_threads = 1};
    assert_int_equal(specdec_quantize_file(TARGET, out1, "q4_0", &qp, on_progress, &p, &s, &err), SPECDEC_OK);
    specdec_gguf *g = open_gguf(out1);
    const specdec_gguf_header h = specdec_gguf_header_get(g);
    assert_int_equal(s.n_tensors, h.n_tensors);
    assert_int_equal(p.calls, h.n_tensors);
    assert_int_equal(p.n, h.n_tensors);
    assert_int_equal(p.changed, s.n_converted);
    assert_true(s.n_converted > 0);
    assert_int_equal(key_uint(g, "general.file_type"), 2); /* LLAMA_FTYPE_MOSTLY_Q4_0 */
    assert_int_equal(key_uint(g, "general.quantization_version"), 2);
    uint64_t bytes = 0;
    specdec_gguf_tensor t;
    for (int64_t i = 0; specdec_gguf_tensor_get(g, i, &t); i++) {
        bytes += t.nbytes;
        if (t.n_dims == 1) assert_string_equal(t.type_name, "f32");
        else if (!strcmp(t.name + strlen(t.name) - 6, "weight")) assert_string_equal(t.type_name, "q4_0");
    }
    assert_int_equal(bytes, s.bytes_out);
    specdec_gguf_close(g);
    /* two threads write the same bytes */
    qp.n_threads = 2;
    assert_int_equal(specdec_quantize_file(TARGET, out2, "q4_0", &qp, NULL, NULL, NULL, &err), SPECDEC_OK);
    size_t n1, n2;
    uint8_t *b1 = slurp(out1, &n1), *b2 = slurp(out2, &n2);
    assert_int_equal(n1, n2);
    assert_memory_equal(b1, b2, n1);
    free(b1), free(b2);
    /* failures leave no output */
    unlink(out2);
    assert_int_equal(specdec_quantize_file(TARGET, out2, "q9_9", NULL, NULL, NULL, NULL, &err), SPECDEC_ERR_ARG);
    assert_non_null(strstr(err.message, "q9_9"));
    assert_int_equal(specdec_quantize_file("models/no-such-file.gguf", out2, "q8_0", NULL, NULL, NULL, NULL, &err),
                     SPECDEC_ERR_IO);
    assert_int_equal(access(out2, F_OK), -1);
    assert_int_equal(specdec_quantize_file(NULL, out2, "q8_0", NULL, NULL, NULL, NULL, &err), SPECDEC_ERR_ARG);
    unlink(out1);
}

static void test_cpu_facts(void **state) {
    (void)state;
    char feat[256];
    memset(feat, 'x', sizeof feat);
    specdec_cpu_features(feat, sizeof feat);
    assert_non_null(memchr(feat, 0, sizeof feat));
    char tiny[4];
    specdec_cpu_features(tiny, sizeof tiny);
    assert_non_null(memchr(tiny, 0, sizeof tiny));
    /* in this test's environment SPECDEC_ISA is valid or unset */
    if (!getenv("SPECDEC_ISA")) assert_null(specdec_isa_env_error());
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_gguf_reader),  cmocka_unit_test(test_gguf_errors), cmocka_unit_test(test_model_layout),
        cmocka_unit_test(test_quantize_file), cmocka_unit_test(test_cpu_facts),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
