/* Mixture-of-experts models (qwen3moe, qwen35moe; docs/MOE.md) on tiny random
 * files (tests/support/tiny_model.c: E = 16 experts, k = 4):
 * - the hyperparameters and per-expert views load;
 * - batch invariance: every window split of a sequence gives logits bitwise
 *   equal to one-token steps, on windows where tokens share experts and on
 *   windows where none do (told apart by the distinct-expert counter, which
 *   must cover both cases), and with an all-zero router (every token ties and
 *   routes to experts 0..k-1: u(S) = k);
 * - the fused gate_up tensor layout loads and runs the same way;
 * - the routing arithmetic against a direct evaluation of one token;
 * - qwen35moe's MTP block (MoE FFN) through its view, batch-invariant;
 * - hostile files: expert_count 0, k > E, a missing expert tensor, an expert
 *   tensor of the wrong shape, each refused with one line naming the file. */
#define _POSIX_C_SOURCE 200809L
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <string.h>

#include "format/gguf.h"
#include "model/context.h"
#include "model/model_test_util.h"
#include "model/moe.h"

#define N_TOK 24

static sd_model *load_moe(tiny_model_spec *sp, char *path, size_t cap) {
    sd_model *m = tiny_load(sp, path, cap, sp->arch);
    assert_non_null(m);
    return m;
}

/* Logits of tokens[N_TOK] one step at a time: ref[N_TOK][V]; checks u(1) = k in every MoE layer. */
static float *single_steps(sd_model *m, const int32_t *tokens) {
    const int32_t V = m->hp.n_vocab;
    sd_err err = {0};
    sd_context *c = NULL;
    assert_int_equal(sd_context_init(m, 64, 16, 2, &c, &err), SD_OK);
    float *ref = malloc((size_t)N_TOK * (size_t)V * sizeof *ref);
    for (int i = 0; i < N_TOK; i++) {
        assert_int_equal(sd_forward(c, tokens + i, 1, ref + (int64_t)i * V, &err), SD_OK);
        for (int il = 0; il < m->hp.n_layer; il++) assert_int_equal(sd_context_moe_distinct(c, il), m->hp.n_expert_used);
    }
    sd_context_free(c);
    return ref;
}

/* Runs tokens in windows of S (the last one shorter) and compares every row
 * with ref bitwise; counts windows of layer 0 with shared / disjoint experts. */
static void windows(sd_model *m, const int32_t *tokens, const float *ref, int S, bool tied, int *shared, int *disjoint) {
    const int32_t V = m->hp.n_vocab, k = m->hp.n_expert_used;
    sd_err err = {0};
    sd_context *c = NULL;
    assert_int_equal(sd_context_init(m, 64, 16, 2, &c, &err), SD_OK);
    float *lg = malloc((size_t)S * (size_t)V * sizeof *lg);
    for (int i = 0; i < N_TOK; i += S) {
        const int n = N_TOK - i < S ? N_TOK - i : S;
        assert_int_equal(sd_forward(c, tokens + i, n, lg, &err), SD_OK);
        if (memcmp(lg, ref + (int64_t)i * V, (size_t)n * (size_t)V * sizeof *lg) != 0)
            fail_msg("%s: window S=%d at %d differs from single steps", m->hp.arch_name, S, i);
        const int32_t u = sd_context_moe_distinct(c, 0);
        assert_true(u >= k && u <= n * k && u <= m->hp.n_expert);
        if (tied) assert_int_equal(u, k); /* every token chose experts 0..k-1 */
        if (n > 1) *(u < n * k ? shared : disjoint) += 1;
    }
    free(lg);
    sd_context_free(c);
}

static void check_invariance(tiny_model_spec *sp, bool expect_disjoint) {
    char path[256];
    sd_model *m = load_moe(sp, path, sizeof path);
    int32_t tokens[N_TOK];
    test_tokens(tokens, N_TOK, m->hp.n_vocab, 5);
    float *ref = single_steps(m, tokens);
    int shared = 0, disjoint = 0;
    static const int Ss[] = {2, 3, 4, 5, 8, 16};
    for (size_t i = 0; i < sizeof Ss / sizeof Ss[0]; i++) windows(m, tokens, ref, Ss[i], sp->router_zero, &shared, &disjoint);
    printf("%s%s: windows with shared experts %d, disjoint %d, all bitwise equal to single steps\n", sp->arch,
           sp->router_zero ? " (zero router)" : "", shared, disjoint);
    assert_true(shared > 0);
    if (expect_disjoint) assert_true(disjoint > 0);
    else assert_int_equal(disjoint, 0);
    free(ref);
    sd_model_free(m);
    remove(path);
}

static void test_load(void **state) {
    (void)state;
    const char *archs[2] = {"qwen3moe", "qwen35moe"};
    for (int a = 0; a < 2; a++) {
        tiny_model_spec sp = tiny_model_default(archs[a], GGML_TYPE_Q8_0);
        char path[256];
        sd_model *m = load_moe(&sp, path, sizeof path);
        const sd_hparams *hp = &m->hp;
        assert_int_equal(hp->arch, a ? SD_ARCH_QWEN35MOE : SD_ARCH_QWEN3MOE);
        assert_int_equal(hp->n_expert, 16);
        assert_int_equal(hp->n_expert_used, 4);
        assert_int_equal(hp->n_ff_exp, 64);
        assert_int_equal(hp->n_ff_shexp, a ? 64 : 0);
        assert_int_equal(hp->n_layer_gdn, a ? 3 : 0);
        for (int il = 0; il < hp->n_layer; il++) {
            const sd_moe *x = m->layers[il].moe;
            assert_non_null(x);
            assert_null(m->layers[il].w_gate.data);
            assert_int_equal(x->has_shexp, a == 1);
            for (int e = 0; e < hp->n_expert; e++) {
                assert_int_equal(x->gate[e].n_in, hp->n_embd);
                assert_int_equal(x->gate[e].n_out, hp->n_ff_exp);
                assert_int_equal(x->down[e].n_in, hp->n_ff_exp);
                assert_int_equal(x->down[e].n_out, hp->n_embd);
            }
        }
        /* one token reads k of the E experts: the active bytes are below all of them */
        sd_context *c = NULL;
        sd_err err = {0};
        assert_int_equal(sd_context_init(m, 16, 4, 1, &c, &err), SD_OK);
        assert_int_equal(sd_context_moe_distinct(c, 0), 0);
        assert_int_equal(sd_context_moe_distinct(c, hp->n_layer), -1);
        sd_context_free(c);
        sd_model_free(m);
        remove(path);
    }
}

static void test_invariance_qwen3moe(void **state) {
    (void)state;
    tiny_model_spec sp = tiny_model_default("qwen3moe", GGML_TYPE_Q8_0);
    check_invariance(&sp, true);
}

static void test_invariance_qwen35moe(void **state) {
    (void)state;
    tiny_model_spec sp = tiny_model_default("qwen35moe", GGML_TYPE_Q8_0);
    check_invariance(&sp, true);
}

/* All router logits 0: a tie over every expert, broken towards the lower id. */
static void test_zero_router(void **state) {
    (void)state;
    tiny_model_spec sp = tiny_model_default("qwen35moe", GGML_TYPE_Q8_0);
    sp.router_zero = true;
    check_invariance(&sp, false);
}

static void test_fused_gate_up(void **state) {
    (void)state;
    tiny_model_spec sp = tiny_model_default("qwen3moe", GGML_TYPE_Q4_0);
    sp.fused_gate_up = true;
    check_invariance(&sp, true);
}

/* One token through sd_layer_moe against the formula of moe.h evaluated here
 * with dequantized weights (F32 model: the products are the same sums in the
 * kernel's order only up to rounding, so compared to a tolerance). */
static void test_formula(void **state) {
    (void)state;
    tiny_model_spec sp = tiny_model_default("qwen35moe", GGML_TYPE_F32);
    char path[256];
    sd_model *m = load_moe(&sp, path, sizeof path);
    const sd_hparams *hp = &m->hp;
    const int64_t D = hp->n_embd, F = hp->n_ff_exp, E = hp->n_expert, k = hp->n_expert_used, Fs = hp->n_ff_shexp;
    sd_context *c = NULL;
    sd_err err = {0};
    assert_int_equal(sd_context_init(m, 16, 4, 1, &c, &err), SD_OK);
    const sd_layer *L = &m->layers[1];
    for (int64_t i = 0; i < D; i++) c->sc.x[i] = sinf(0.37f * (float)i);
    float *x0 = malloc((size_t)D * sizeof *x0), *mrow = malloc((size_t)D * sizeof *mrow);
    memcpy(x0, c->sc.x, (size_t)D * sizeof *x0);
    sd_layer_moe(c, L, 1);
    /* reference */
    double ss = 0;
    for (int64_t i = 0; i < D; i++) ss += (double)x0[i] * x0[i];
    const double inv = 1.0 / sqrt(ss / (double)D + hp->rms_eps);
    for (int64_t i = 0; i < D; i++) mrow[i] = (float)(x0[i] * inv) * L->ffn_norm[i];
    const float *R = L->moe->router.data;
    double p[64], mx = -1e300, z = 0;
    for (int64_t e = 0; e < E; e++) {
        p[e] = 0;
        for (int64_t i = 0; i < D; i++) p[e] += (double)R[e * D + i] * mrow[i];
        if (p[e] > mx) mx = p[e];
    }
    for (int64_t e = 0; e < E; e++) z += (p[e] = exp(p[e] - mx));
    int sel[16];
    double wsum = 0;
    for (int64_t j = 0; j < k; j++) {
        int best = -1;
        for (int e = 0; e < E; e++) {
            bool taken = false;
            for (int64_t i = 0; i < j; i++) taken |= sel[i] == e;
            if (!taken && (best < 0 || p[e] > p[best])) best = e;
        }
        sel[j] = best;
        wsum += p[best] / z;
    }
    double *y = calloc((size_t)D, sizeof *y), *h = malloc((size_t)(F > Fs ? F : Fs) * sizeof *h);
    for (int64_t j = 0; j < k; j++) {
        const int e = sel[j];
        const float *G = L->moe->gate[e].data, *U = L->moe->up[e].data, *Dn = L->moe->down[e].data;
        for (int64_t f = 0; f < F; f++) {
            double g = 0, u = 0;
            for (int64_t i = 0; i < D; i++) g += (double)G[f * D + i] * mrow[i], u += (double)U[f * D + i] * mrow[i];
            h[f] = g / (1 + exp(-g)) * u;
        }
        for (int64_t i = 0; i < D; i++) {
            double d = 0;
            for (int64_t f = 0; f < F; f++) d += (double)Dn[i * F + f] * h[f];
            y[i] += d * (p[e] / z / wsum);
        }
    }
    double gl = 0;
    for (int64_t i = 0; i < D; i++) gl += (double)L->moe->sh_gate_inp[i] * mrow[i];
    const double sg = 1 / (1 + exp(-gl));
    const float *G = L->moe->sh_gate.data, *U = L->moe->sh_up.data, *Dn = L->moe->sh_down.data;
    for (int64_t f = 0; f < Fs; f++) {
        double g = 0, u = 0;
        for (int64_t i = 0; i < D; i++) g += (double)G[f * D + i] * mrow[i], u += (double)U[f * D + i] * mrow[i];
        h[f] = g / (1 + exp(-g)) * u;
    }
    double max_diff = 0, max_y = 0;
    for (int64_t i = 0; i < D; i++) {
        double d = 0;
        for (int64_t f = 0; f < Fs; f++) d += (double)Dn[i * Fs + f] * h[f];
        const double want = x0[i] + y[i] + sg * d;
        max_diff = fmax(max_diff, fabs(want - c->sc.x[i]));
        max_y = fmax(max_y, fabs(y[i] + sg * d));
    }
    printf("formula: max |layer - reference| %.3g (output scale %.3g)\n", max_diff, max_y);
    assert_true(max_y > 1e-3);          /* the FFN did something */
    assert_true(max_diff < 1e-4 * (1 + max_y));
    free(x0), free(mrow), free(y), free(h);
    sd_context_free(c);
    sd_model_free(m);
    remove(path);
}

/* qwen35moe's MTP block has the MoE FFN too: its view runs it, batch-invariant
 * like the trunk (S pairs at once == one pair at a time, bitwise). */
static void test_mtp_block(void **state) {
    (void)state;
    tiny_model_spec sp = tiny_model_default("qwen35moe", GGML_TYPE_Q8_0);
    sp.n_layer = 5, sp.n_nextn = 1;
    char path[256];
    sd_model *m = load_moe(&sp, path, sizeof path), *view = NULL;
    sd_err err = {0};
    assert_true(m->nextn.present);
    assert_non_null(m->nextn.layer.moe);
    assert_int_equal(sd_mtp_view_init(m, &view, &err), SD_OK);
    enum { S = 6 };
    const int64_t D = m->hp.n_embd, V = m->hp.n_vocab;
    int32_t tokens[S];
    test_tokens(tokens, S, (int32_t)V, 9);
    float *h = malloc((size_t)(S * D) * sizeof *h), *a = malloc((size_t)(S * V) * sizeof *a);
    float *b = malloc((size_t)(S * V) * sizeof *b);
    for (int64_t i = 0; i < S * D; i++) h[i] = cosf(0.11f * (float)i);
    sd_context *ca = NULL, *cb = NULL;
    assert_int_equal(sd_context_init(view, 32, 8, 2, &ca, &err), SD_OK);
    assert_int_equal(sd_context_init(view, 32, 8, 2, &cb, &err), SD_OK);
    assert_int_equal(sd_mtp_forward(ca, tokens, h, S, NULL, S, a, &err), SD_OK);
    assert_true(sd_context_moe_distinct(ca, 0) >= m->hp.n_expert_used);
    for (int s = 0; s < S; s++)
        assert_int_equal(sd_mtp_forward(cb, tokens + s, h + s * D, 1, NULL, 1, b + s * V, &err), SD_OK);
    assert_memory_equal(a, b, (size_t)(S * V) * sizeof *a);
    sd_context_free(ca);
    sd_context_free(cb);
    free(h), free(a), free(b);
    sd_mtp_view_free(view);
    sd_model_free(m);
    remove(path);
}

/* ---- hostile files ---- */

typedef struct bad_case {
    const char *arch, *what;
    void (*edit)(tiny_model_spec *sp);
    sd_status code;
    const char *msg;
} bad_case;

static void zero_experts(tiny_model_spec *sp) { sp->expert_count_key = 0; }
static void used_above(tiny_model_spec *sp) { sp->n_expert_used = 17; }
static void omit_up(tiny_model_spec *sp) { sp->omit = "blk.1.ffn_up_exps.weight"; }
static void omit_shexp(tiny_model_spec *sp) { sp->omit = "blk.2.ffn_gate_inp_shexp.weight"; }
static void long_down(tiny_model_spec *sp) { sp->alter = "blk.0.ffn_down_exps.weight", sp->alter_extra_rows = 32; }
static void fewer_experts(tiny_model_spec *sp) { sp->expert_count_key = 8; }

static const bad_case bad_cases[] = {
    {"qwen3moe", "expert_count 0", zero_experts, SD_ERR_FORMAT, "key qwen3moe.expert_count = 0 out of range"},
    {"qwen35moe", "k > E", used_above, SD_ERR_FORMAT, "key qwen35moe.expert_used_count = 17 out of range [1, 16]"},
    {"qwen3moe", "missing ffn_up_exps", omit_up, SD_ERR_FORMAT, "missing tensor blk.1.ffn_up_exps.weight"},
    {"qwen35moe", "missing shared gate", omit_shexp, SD_ERR_FORMAT, "missing tensor blk.2.ffn_gate_inp_shexp.weight"},
    {"qwen3moe", "down shape", long_down, SD_ERR_FORMAT,
     "tensor blk.0.ffn_down_exps.weight has shape [64, 288, 16, 1], expected [64, 256, 16]"},
    {"qwen35moe", "expert_count below the tensors", fewer_experts, SD_ERR_FORMAT, "blk.0.ffn_gate_inp.weight has shape"},
};

static void test_bad_files(void **state) {
    (void)state;
    for (size_t i = 0; i < sizeof bad_cases / sizeof bad_cases[0]; i++) {
        tiny_model_spec sp = tiny_model_default(bad_cases[i].arch, GGML_TYPE_Q8_0);
        bad_cases[i].edit(&sp);
        expect_refused(&sp, bad_cases[i].what, bad_cases[i].code, bad_cases[i].msg);
    }
}

int main(int argc, char **argv) {
    (void)argc;
    test_passive_omp(argv);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_load),          cmocka_unit_test(test_invariance_qwen3moe),
        cmocka_unit_test(test_invariance_qwen35moe), cmocka_unit_test(test_zero_router),
        cmocka_unit_test(test_fused_gate_up), cmocka_unit_test(test_formula),
        cmocka_unit_test(test_mtp_block),     cmocka_unit_test(test_bad_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
