/* model: the hybrid qwen35 (Gated DeltaNet + gated attention) on tiny
 * random-weight files shaped like the traps of the format (H_v != H_k with
 * tiled V heads, n_rot < head_dim, the layer pattern from
 * full_attention_interval or from attention.recurrent_layers, an MTP block
 * counted in block_count):
 * - the loader reads the pattern, the GDN sizes and skips the MTP block (the
 *   trunk's logits are bitwise those of the same file without it);
 * - batch invariance: the logits of a position are bitwise the same for a
 *   forward of S = 1..17 tokens as for S single steps, 1 or 2 threads, any
 *   n_batch split, and the scalar and AVX2 builds agree;
 * - the recurrent state: truncation that would drop positions is refused,
 *   a snapshot restored and re-forwarded reproduces the bits, a state copy
 *   continues like the original;
 * - bad files give one clear error naming the key or tensor;
 * - the command line: generate speculates losslessly with every
 *   --hybrid-rollback discipline and runs with --spec none, inspect shows the layer pattern and
 *   the recurrent-state bytes, bench runs its greedy, c_v(S) and rollback tables. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "model_test_util.h"
#include "numerics/cpu.h"
#include "numerics/quant.h"

#define N_TOK 17

static sd_model *load_spec(const tiny_model_spec *sp, char *path, size_t cap) {
    sd_model *m = tiny_load(sp, path, cap, "q35");
    assert_non_null(m);
    return m;
}

/* Fresh context; tokens[n] in the given splits; logits of every row to out. */
static void run_splits(const sd_model *m, const int32_t *tokens, const int *splits, int n_splits, int n_threads,
                       int n_batch, float *out) {
    sd_context *c = NULL;
    sd_err err = {0};
    assert_int_equal(sd_context_init(m, 64, n_batch, n_threads, &c, &err), SD_OK);
    int done = 0;
    for (int i = 0; i < n_splits; i++) {
        if (sd_forward(c, tokens + done, splits[i], out + (size_t)done * m->hp.n_vocab, &err) != SD_OK)
            fail_msg("forward: %s", err.msg);
        done += splits[i];
    }
    assert_int_equal(sd_context_len(c), done);
    sd_context_free(c);
}

static void singles(const sd_model *m, const int32_t *tokens, int n, int n_threads, float *out) {
    int ones[N_TOK];
    for (int i = 0; i < n; i++) ones[i] = 1;
    run_splits(m, tokens, ones, n, n_threads, 16, out);
}

static void assert_rows_equal(const float *a, const float *b, int rows, int n_vocab, const char *what, int S) {
    for (int r = 0; r < rows; r++)
        if (memcmp(a + (size_t)r * n_vocab, b + (size_t)r * n_vocab, (size_t)n_vocab * sizeof(float)) != 0)
            fail_msg("%s (S = %d): logits of position %d differ bitwise", what, S, r);
}

static void assert_meaningful(const float *l, int rows, int n_vocab) {
    for (size_t i = 0; i < (size_t)rows * n_vocab; i++) assert_true(isfinite(l[i]));
    for (int r = 1; r < rows; r++) assert_true(memcmp(l, l + (size_t)r * n_vocab, (size_t)n_vocab * sizeof *l) != 0);
    float lo = l[0], hi = l[0];
    for (int i = 0; i < n_vocab; i++) lo = fminf(lo, l[i]), hi = fmaxf(hi, l[i]);
    assert_true(hi - lo > 0.1f);
}

/* ---- loading ---- */

static void test_load_default(void **state) {
    (void)state;
    tiny_model_spec sp = tiny_model_default("qwen35", GGML_TYPE_F32);
    char path[256];
    sd_model *m = load_spec(&sp, path, sizeof path);
    const sd_hparams *hp = &m->hp;
    assert_int_equal(hp->arch, SD_ARCH_QWEN35);
    assert_int_equal(hp->n_layer, 4);
    assert_int_equal(hp->n_layer_all, 4);
    assert_int_equal(hp->n_layer_gdn, 3);
    assert_int_equal(hp->n_rot, 16);
    assert_int_equal(hp->ssm_n_v_heads, 4);
    assert_int_equal(hp->ssm_n_k_heads, 2);
    assert_int_equal(hp->ssm_conv_dim, (2 * 2 + 4) * 64);
    const sd_layer_kind want[4] = {SD_LAYER_GDN, SD_LAYER_GDN, SD_LAYER_GDN, SD_LAYER_ATTN_GATED};
    const int32_t slots[4] = {0, 1, 2, 0};
    for (int il = 0; il < 4; il++) {
        assert_int_equal(m->layers[il].kind, want[il]);
        assert_int_equal(m->layers[il].slot, slots[il]);
    }
    assert_true(sd_model_is_recurrent(m));
    assert_int_equal(sd_model_recurrent_bytes(m), 3ull * (3 * 512 + 4 * 64 * 64) * 4);
    sd_context *c = NULL;
    sd_err err = {0};
    assert_int_equal(sd_context_init(m, 32, 8, 1, &c, &err), SD_OK);
    assert_int_equal(sd_context_state_bytes(c), 32 + sd_model_recurrent_bytes(m));
    sd_context_free(c);
    sd_model_free(m);
    remove(path);
}

/* An MTP block (nextn_predict_layers = 1, counted in block_count) is not
 * run: the logits are bitwise those of the same trunk without it. The
 * pattern comes from attention.recurrent_layers here (MTP entry false). */
static void test_nextn_left_alone(void **state) {
    (void)state;
    tiny_model_spec a = tiny_model_default("qwen35", GGML_TYPE_Q8_0);
    a.pattern = "GAGA";
    tiny_model_spec b = a;
    b.n_layer = 5, b.n_nextn = 1;
    char pa[256], pb[256];
    sd_model *ma = load_spec(&a, pa, sizeof pa), *mb = load_spec(&b, pb, sizeof pb);
    assert_int_equal(mb->hp.n_layer, 4);
    assert_int_equal(mb->hp.n_layer_all, 5);
    assert_int_equal(mb->hp.n_nextn, 1);
    assert_int_equal(mb->hp.n_layer_gdn, 2);
    assert_int_equal(mb->layers[1].kind, SD_LAYER_ATTN_GATED);
    assert_int_equal(mb->layers[2].kind, SD_LAYER_GDN);
    const int V = ma->hp.n_vocab, n = 9;
    int32_t tokens[9];
    test_tokens(tokens, n, V, 5);
    float *la = malloc((size_t)n * V * sizeof *la), *lb = malloc((size_t)n * V * sizeof *lb);
    const int whole[1] = {9};
    run_splits(ma, tokens, whole, 1, 2, 16, la);
    run_splits(mb, tokens, whole, 1, 2, 16, lb);
    assert_meaningful(la, n, V);
    assert_rows_equal(la, lb, n, V, "with and without the MTP block", n);
    free(la);
    free(lb);
    sd_model_free(ma);
    sd_model_free(mb);
    remove(pa);
    remove(pb);
}

/* ---- batch invariance ---- */

static void check_invariance(uint32_t type) {
    tiny_model_spec sp = tiny_model_default("qwen35", type);
    sp.seed = 3 + type;
    char path[256];
    sd_model *m = load_spec(&sp, path, sizeof path);
    const int V = m->hp.n_vocab;
    int32_t tokens[N_TOK];
    test_tokens(tokens, N_TOK, V, 77 + type);
    float *ref = malloc((size_t)N_TOK * V * sizeof *ref), *got = malloc((size_t)N_TOK * V * sizeof *got);
    assert_non_null(ref);
    assert_non_null(got);
    singles(m, tokens, N_TOK, 1, ref);
    assert_meaningful(ref, N_TOK, V);
    singles(m, tokens, N_TOK, 2, got);
    assert_rows_equal(ref, got, N_TOK, V, "single steps, 2 threads", 1);
    /* Under ASan (SD_ASAN, ~100x slower) a subset of S keeps the test short. */
    const bool asan = getenv("SD_ASAN") != NULL;
    for (int S = 1; S <= N_TOK; S++)
        for (int nt = 1; nt <= 2; nt++) {
            if (asan && S != 1 && S != 2 && S != 9 && S != N_TOK) continue;
            const int whole[1] = {S};
            memset(got, 0, (size_t)N_TOK * V * sizeof *got);
            run_splits(m, tokens, whole, 1, nt, 32, got);
            assert_rows_equal(ref, got, S, V, nt == 1 ? "one forward, 1 thread" : "one forward, 2 threads", S);
            if (S + 2 <= N_TOK) { /* after a prefix: the state carried in */
                const int split[2] = {2, S};
                run_splits(m, tokens, split, 2, nt, 32, got);
                assert_rows_equal(ref, got, S + 2, V, "prefix 2 then S", S);
            }
        }
    const int mixed[4] = {3, 7, 1, 6};
    run_splits(m, tokens, mixed, 4, 2, 4, got); /* n_batch 4 splits the 7 and the 6 */
    assert_rows_equal(ref, got, N_TOK, V, "splits 3+7+1+6, n_batch 4", 0);
    /* the scalar build: the same bits */
    sd_cpu_force_scalar(true);
    const int split[2] = {5, N_TOK - 5};
    run_splits(m, tokens, split, 2, 2, 32, got);
    sd_cpu_force_scalar(false);
    assert_rows_equal(ref, got, N_TOK, V, "scalar build", N_TOK);
    free(ref);
    free(got);
    sd_model_free(m);
    remove(path);
}

static void test_invariance_f32(void **state) { (void)state, check_invariance(GGML_TYPE_F32); }
static void test_invariance_q8_0(void **state) { (void)state, check_invariance(GGML_TYPE_Q8_0); }
static void test_invariance_q4_k(void **state) { (void)state, check_invariance(GGML_TYPE_Q4_K); }

/* ---- recurrent state: truncate, snapshot, restore, copy ---- */

static void test_state(void **state) {
    (void)state;
    tiny_model_spec sp = tiny_model_default("qwen35", GGML_TYPE_Q8_0);
    char path[256];
    sd_model *m = load_spec(&sp, path, sizeof path);
    const int V = m->hp.n_vocab, n = 12, p = 5;
    int32_t tokens[12], junk[7];
    test_tokens(tokens, n, V, 9);
    test_tokens(junk, 7, V, 1234);
    float *ref = malloc((size_t)n * V * sizeof *ref), *got = malloc((size_t)n * V * sizeof *got);
    singles(m, tokens, n, 1, ref);

    sd_context *c = NULL, *c2 = NULL;
    sd_err err = {0};
    assert_int_equal(sd_context_init(m, 32, 16, 2, &c, &err), SD_OK);
    assert_int_equal(sd_forward(c, tokens, p, got, &err), SD_OK);
    /* a truncate that drops positions is refused and changes nothing */
    assert_int_equal(sd_context_truncate(c, 3), SD_ERR_UNSUPPORTED);
    assert_int_equal(sd_context_len(c), p);
    assert_int_equal(sd_context_truncate(c, p + 4), SD_OK); /* nothing to drop */
    size_t nb = sd_context_state_bytes(c);
    unsigned char *snap = malloc(nb), *bad = malloc(nb);
    assert_int_equal(sd_context_state_save(c, snap, nb - 1, &err), SD_ERR_ARG);
    assert_int_equal(sd_context_state_save(c, snap, nb, &err), SD_OK);
    /* a rejected draft: junk tokens, then back to the snapshot and the real ones */
    for (int round = 0; round < 2; round++) {
        assert_int_equal(sd_forward(c, round ? tokens + p : junk, 7, got, &err), SD_OK);
        assert_int_equal(sd_context_state_restore(c, snap, nb, &err), SD_OK);
        assert_int_equal(sd_context_len(c), p);
    }
    memset(got, 0, (size_t)n * V * sizeof *got);
    assert_int_equal(sd_forward(c, tokens + p, n - p, got, &err), SD_OK);
    assert_rows_equal(ref + (size_t)p * V, got, n - p, V, "restore then re-forward", n - p);

    /* a copy continues like the original */
    assert_int_equal(sd_context_init(m, 32, 16, 1, &c2, &err), SD_OK);
    assert_int_equal(sd_context_state_restore(c2, snap, nb, &err), SD_ERR_CONTEXT); /* c2 holds 0 < 5 */
    assert_int_equal(sd_context_truncate(c, 0), SD_OK); /* a fresh sequence: state reset */
    assert_int_equal(sd_forward(c, tokens, 8, got, &err), SD_OK);
    assert_int_equal(sd_context_state_copy(c2, c, &err), SD_OK);
    assert_int_equal(sd_context_len(c2), 8);
    assert_int_equal(sd_forward(c2, tokens + 8, n - 8, got, &err), SD_OK);
    assert_rows_equal(ref + 8 * (size_t)V, got, n - 8, V, "state copy then forward", n - 8);

    /* a snapshot that is not one */
    memcpy(bad, snap, nb);
    bad[0] ^= 1;
    assert_int_equal(sd_context_state_restore(c, bad, nb, &err), SD_ERR_ARG);
    assert_non_null(strstr(err.msg, "not a state snapshot"));
    assert_int_equal(sd_context_state_restore(c, snap, nb - 4, &err), SD_ERR_ARG);
    assert_int_equal(sd_context_len(c), 8);
    free(snap);
    free(bad);
    sd_context_free(c);
    sd_context_free(c2);
    free(ref);
    free(got);
    sd_model_free(m);
    remove(path);
}

/* ---- bad files ---- */

typedef struct bad_case {
    const char *what;
    void (*edit)(tiny_model_spec *sp);
    sd_status code;
    const char *msg; /* substring of the error */
} bad_case;

static void omit_ssm_a(tiny_model_spec *sp) { sp->omit = "blk.1.ssm_a"; }
static void omit_qkv(tiny_model_spec *sp) { sp->omit = "blk.0.attn_qkv.weight"; }
static void omit_conv(tiny_model_spec *sp) { sp->omit = "blk.2.ssm_conv1d.weight"; }
static void omit_q_norm(tiny_model_spec *sp) { sp->omit = "blk.3.attn_q_norm.weight"; }
static void bad_inner(tiny_model_spec *sp) { sp->ssm_inner_delta = 64; }
static void bad_groups(tiny_model_spec *sp) { sp->ssm_n_k_heads = 3; }
static void short_pattern(tiny_model_spec *sp) { sp->pattern = "GGGA", sp->pattern_extra = -1; }
static void long_pattern(tiny_model_spec *sp) { sp->pattern = "GGGA", sp->pattern_extra = 2; }
static void zero_kernel(tiny_model_spec *sp) { sp->ssm_conv_kernel = 0; }
static void wide_norm(tiny_model_spec *sp) { sp->alter = "blk.0.ssm_norm.weight", sp->alter_extra_rows = 1; }
static void narrow_gate(tiny_model_spec *sp) { sp->alter = "blk.1.attn_gate.weight", sp->alter_extra_rows = 8; }
static void all_nextn(tiny_model_spec *sp) { sp->n_nextn = 4; }

static const bad_case bad_cases[] = {
    {"missing ssm_a", omit_ssm_a, SD_ERR_FORMAT, "missing tensor blk.1.ssm_a"},
    {"missing attn_qkv", omit_qkv, SD_ERR_FORMAT, "missing tensor blk.0.attn_qkv.weight"},
    {"missing ssm_conv1d", omit_conv, SD_ERR_FORMAT, "missing tensor blk.2.ssm_conv1d.weight"},
    {"missing attn_q_norm", omit_q_norm, SD_ERR_FORMAT, "missing tensor blk.3.attn_q_norm.weight"},
    {"inner_size", bad_inner, SD_ERR_FORMAT, "qwen35.ssm.inner_size 320 != ssm.state_size 64 x ssm.time_step_rank 4"},
    {"group_count", bad_groups, SD_ERR_FORMAT, "qwen35.ssm.group_count 3 does not divide ssm.time_step_rank 4"},
    {"recurrent_layers short", short_pattern, SD_ERR_FORMAT, "qwen35.attention.recurrent_layers has 3 entries, block_count is 4"},
    {"recurrent_layers long", long_pattern, SD_ERR_FORMAT, "qwen35.attention.recurrent_layers has 6 entries"},
    {"zero conv kernel", zero_kernel, SD_ERR_FORMAT, "qwen35.ssm.conv_kernel = 0 out of range"},
    {"ssm_norm shape", wide_norm, SD_ERR_FORMAT, "tensor blk.0.ssm_norm.weight has shape"},
    {"attn_gate shape", narrow_gate, SD_ERR_FORMAT, "tensor blk.1.attn_gate.weight has shape"},
    {"nextn = block_count", all_nextn, SD_ERR_FORMAT, "qwen35.nextn_predict_layers"},
};

static void test_bad_files(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        tiny_model_spec sp = tiny_model_default("qwen35", GGML_TYPE_F32);
        bad_cases[i].edit(&sp);
        expect_refused(&sp, bad_cases[i].what, bad_cases[i].code, bad_cases[i].msg);
    }
}

/* ---- the command line ---- */

/* Runs the specdec binary with args (a shell fragment) on the model at path;
 * returns its exit status, stdout and stderr in out/err_text (cap bytes each). */
static int run_cli(const char *args, const char *path, char *out, char *err_text, size_t cap) {
    const char *bin = getenv("SD_SPECDEC_BIN");
    if (!bin) return -1;
    char o[300], e[300], cmd[2048];
    snprintf(o, sizeof o, "%s.out", path);
    snprintf(e, sizeof e, "%s.err", path);
    snprintf(cmd, sizeof cmd, "'%s' %s '%s' >'%s' 2>'%s'", bin, args, path, o, e);
    int rc = system(cmd);
    const char *files[2] = {o, e};
    char *bufs[2] = {out, err_text};
    for (int i = 0; i < 2; i++) {
        FILE *f = fopen(files[i], "rb");
        size_t n = f ? fread(bufs[i], 1, cap - 1, f) : 0;
        bufs[i][n] = 0;
        if (f) fclose(f);
        remove(files[i]);
    }
    return rc == -1 ? -1 : WEXITSTATUS(rc);
}

static int count_lines(const char *s) {
    int n = 0;
    for (; *s; s++) n += *s == '\n';
    return n;
}

static void test_cli(void **state) {
    (void)state;
    if (!getenv("SD_SPECDEC_BIN")) fail_msg("SD_SPECDEC_BIN is not set: run through ctest");
    tiny_model_spec sp = tiny_model_default("qwen35", GGML_TYPE_Q8_0);
    sp.n_layer = 5, sp.n_nextn = 1;
    char path[256];
    sd_err err = {0};
    tiny_model_temp_path(path, sizeof path, "q35cli");
    assert_int_equal(tiny_model_write(&sp, path, &err), SD_OK);
    enum { CAP = 1 << 16 };
    char *out = malloc(CAP), *etext = malloc(CAP);
    /* speculation rolls the recurrent state back by each discipline: lossless */
    int rc = run_cli("generate -t 1 -n 24 -p 'ab cd ab cd ab' -m", path, out, etext, CAP);
    if (rc != 0 || !strstr(etext, "LOSSLESS")) fail_msg("generate with speculation: rc %d, stderr '%s'", rc, etext);
    const char *disc[] = {"checkpoint", "replay", "redecode", "window --window 4", "auto"};
    for (int i = 0; i < 5; i++) {
        char cmd[160];
        snprintf(cmd, sizeof cmd, "generate -t 1 -n 24 -p 'ab cd ab cd ab' --spec ngram --hybrid-rollback %s -m", disc[i]);
        rc = run_cli(cmd, path, out, etext, CAP);
        if (rc != 0 || !strstr(etext, "LOSSLESS")) fail_msg("%s: rc %d, stderr '%s'", cmd, rc, etext);
    }
    rc = run_cli("generate -t 1 -n 4 -p 'ab' --hybrid-rollback window2 -m", path, out, etext, CAP);
    if (rc != 2 || count_lines(etext) != 1) fail_msg("bad --hybrid-rollback: rc %d, stderr '%s'", rc, etext);
    rc = run_cli("generate -t 1 -n 4 -p 'ab cd' --spec none -m", path, out, etext, CAP);
    if (rc != 0 || !strstr(etext, "decode")) fail_msg("generate --spec none: rc %d, stderr '%s'", rc, etext);
    rc = run_cli("inspect", path, out, etext, CAP);
    assert_int_equal(rc, 0);
    if (!strstr(out, "layer pattern: GGGA") || !strstr(out, "recurrent state: 215040 bytes") ||
        !strstr(out, "1 MTP block(s) not run"))
        fail_msg("inspect output lacks the hybrid lines:\n%s", out);
    rc = run_cli("bench -t 1 -n 8 --reps 1 --membw-mb 8 --alphas 0.7 --tables classes,cv,rollback -m", path, out, etext,
                 CAP);
    if (rc != 0 || !strstr(out, "c_v") || !strstr(out, "Hybrid rollback") || !strstr(out, "| redecode | 0.70 |"))
        fail_msg("bench: rc %d, stdout '%s', stderr '%s'", rc, out, etext);
    free(out);
    free(etext);
    remove(path);
}

int main(int argc, char **argv) {
    (void)argc;
    test_passive_omp(argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load_default),    cmocka_unit_test(test_nextn_left_alone),
        cmocka_unit_test(test_invariance_f32),  cmocka_unit_test(test_invariance_q8_0),
        cmocka_unit_test(test_invariance_q4_k), cmocka_unit_test(test_state),
        cmocka_unit_test(test_bad_files),       cmocka_unit_test(test_cli),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
