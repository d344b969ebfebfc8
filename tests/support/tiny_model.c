/* Tiny random-weight GGUF models for tests: see tiny_model.h. */
#include "support/tiny_model.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format/gguf.h"
#include "numerics/quant.h"

/* ---- deterministic random numbers: splitmix64 per tensor ---- */

static uint64_t splitmix64(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static uint64_t stream_for(uint64_t seed, const char *name) {
    uint64_t h = 1469598103934665603ull; /* FNV-1a of the name, mixed with the seed */
    for (const char *p = name; *p; p++) h = (h ^ (uint8_t)*p) * 1099511628211ull;
    return h ^ (seed * 0x9E3779B97F4A7C15ull);
}

/* Uniform in [-1, 1). */
static float uniform(uint64_t *s) { return (float)((double)(splitmix64(s) >> 11) / 4503599627370496.0 - 1.0); }

/* ---- tensors kept alive until the writer has written them ---- */

typedef struct builder {
    const tiny_model_spec *sp;
    gguf_writer *w;
    void **bufs;
    int n_bufs;
    sd_status st;
    sd_err *err;
} builder;

static void *keep(builder *b, size_t n) {
    void *p = calloc(1, n ? n : 1);
    void **list = p ? realloc(b->bufs, (size_t)(b->n_bufs + 1) * sizeof *list) : NULL;
    if (!list) {
        free(p);
        if (b->st == SD_OK) b->st = sd_err_set(b->err, SD_ERR_NOMEM, "tiny_model: out of memory");
        return NULL;
    }
    b->bufs = list;
    b->bufs[b->n_bufs++] = p;
    return p;
}

static void check(builder *b, sd_status st, const char *what) {
    if (st != SD_OK && b->st == SD_OK) b->st = sd_err_set(b->err, st, "tiny_model: writer failed at %s", what);
}

/* Random blocks of a read-only type (no quantizer here: the IQ grid types,
 * MXFP4) get a block scale that keeps weights near the quantized ones' size
 * (|w| up to about 0.1), so a model of them computes finite logits. Layouts:
 * llama.cpp ggml-common.h (block_iq*, block_mxfp4). Other types keep their
 * random bytes. */
static void sane_scale(uint32_t type, uint8_t *blk) {
    float d;
    switch (type) {
    case GGML_TYPE_IQ2_XXS: case GGML_TYPE_IQ2_XS: case GGML_TYPE_IQ2_S: d = 6e-4f; break;
    case GGML_TYPE_IQ3_XXS: case GGML_TYPE_IQ3_S: d = 2e-4f; break;
    case GGML_TYPE_IQ1_S: case GGML_TYPE_IQ1_M: d = 6e-3f; break;
    case GGML_TYPE_MXFP4: blk[0] = 121; return; /* 2^-7 */
    default: return;
    }
    uint16_t h = sd_fp32_to_fp16(d);
    if (type == GGML_TYPE_IQ1_M) { /* the top nibbles of the four scale u16 at bytes 48..55 */
        for (int k = 0; k < 4; k++) blk[49 + 2 * k] = (uint8_t)((blk[49 + 2 * k] & 0x0F) | ((h >> 4 * k) & 0xF) << 4);
        return;
    }
    blk[0] = (uint8_t)h;
    blk[1] = (uint8_t)(h >> 8);
}

/* Adds tensor name with ne0 x ne1 x ne2 values (ne2 > 1: a 3-D tensor of
 * experts): mean + scale * uniform, stored as type. */
static void add_tensor3(builder *b, const char *name, uint32_t type, int64_t ne0, int64_t ne1, int64_t ne2,
                        float mean, float scale) {
    const tiny_model_spec *sp = b->sp;
    if (b->st != SD_OK || (sp->omit && strcmp(sp->omit, name) == 0)) return;
    bool alter = sp->alter && strcmp(sp->alter, name) == 0;
    if (alter && sp->alter_type >= 0) type = (uint32_t)sp->alter_type;
    if (alter) *(ne1 > 1 || ne2 > 1 ? &ne1 : &ne0) += sp->alter_extra_rows;
    const int64_t n_dims = ne2 > 1 ? 3 : ne1 > 1 ? 2 : 1;
    ne1 *= ne2; /* the rows of all experts, one after the other */
    uint64_t row_bytes = 0;
    if (!ggml_row_bytes(type, (uint64_t)ne0, &row_bytes)) {
        b->st = sd_err_set(b->err, SD_ERR_ARG, "tiny_model: %s: %lld elements are not whole %s blocks", name,
                           (long long)ne0, ggml_type_get(type)->name);
        return;
    }
    uint8_t *data = keep(b, (size_t)(row_bytes * (uint64_t)ne1));
    float *row = keep(b, (size_t)ne0 * sizeof(float));
    if (!data || !row) return;
    uint64_t s = stream_for(sp->seed, name);
    for (int64_t r = 0; r < ne1; r++) {
        uint8_t *dst = data + (uint64_t)r * row_bytes;
        if (!sd_type_quantizable(type)) { /* unsupported-type tests; the read-only types */
            for (uint64_t i = 0; i < row_bytes; i++) dst[i] = (uint8_t)splitmix64(&s);
            const ggml_type_info *ti = ggml_type_get(type);
            for (uint64_t o = 0; ti->type_size && o + ti->type_size <= row_bytes; o += ti->type_size)
                sane_scale(type, dst + o);
            continue;
        }
        for (int64_t i = 0; i < ne0; i++) row[i] = mean + scale * uniform(&s);
        sd_quantize_row(type, row, dst, ne0);
    }
    int64_t ne[3] = {ne0, ne1 / ne2, ne2};
    check(b, gguf_writer_add_tensor(b->w, name, type, (uint32_t)n_dims, ne, data, row_bytes * (uint64_t)ne1), name);
}

static void add_tensor(builder *b, const char *name, uint32_t type, int64_t ne0, int64_t ne1, float mean,
                       float scale) {
    add_tensor3(b, name, type, ne0, ne1, 1, mean, scale);
}

/* ---- vocabularies ---- */

static const char *letters = "abcdefghijklmnopqrstuvwxyz";

/* Writes tokens/types (and scores or merges) for n_vocab tokens. */
static void add_spm_vocab(builder *b, int32_t n_vocab) {
    char **strs = keep(b, (size_t)n_vocab * sizeof *strs);
    uint64_t *lens = keep(b, (size_t)n_vocab * sizeof *lens);
    float *scores = keep(b, (size_t)n_vocab * sizeof *scores);
    int32_t *types = keep(b, (size_t)n_vocab * sizeof *types);
    if (b->st != SD_OK) return;
    for (int32_t i = 0; i < n_vocab && b->st == SD_OK; i++) {
        char *t = keep(b, 16);
        if (!t) return;
        if (i == 0) strcpy(t, "<unk>"), types[i] = 2;
        else if (i == 1) strcpy(t, "<s>"), types[i] = 3;
        else if (i == 2) strcpy(t, "</s>"), types[i] = 3;
        else if (i < 259) snprintf(t, 16, "<0x%02X>", i - 3), types[i] = 6;
        else {
            int k = i - 259; /* "▁x", then "▁xy", then "▁t<k>" pieces */
            if (k < 26) snprintf(t, 16, "\xe2\x96\x81%c", letters[k]);
            else if (k < 26 * 27) snprintf(t, 16, "\xe2\x96\x81%c%c", letters[k / 26 - 1], letters[k % 26]);
            else snprintf(t, 16, "\xe2\x96\x81t%d", k);
            types[i] = 1;
        }
        strs[i] = t;
        lens[i] = strlen(t);
        scores[i] = i < 259 ? 0.0f : -(float)(i - 259);
    }
    gguf_writer *w = b->w;
    check(b, gguf_writer_set_str(w, "tokenizer.ggml.model", "llama", 5), "tokenizer.ggml.model");
    check(b, gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)strs, lens, (uint64_t)n_vocab), "tokens");
    check(b, gguf_writer_set_arr_data(w, "tokenizer.ggml.scores", GGUF_TYPE_FLOAT32, scores, (uint64_t)n_vocab), "scores");
    check(b, gguf_writer_set_arr_data(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, (uint64_t)n_vocab), "token_type");
    check(b, gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", 1), "bos");
    check(b, gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", 2), "eos");
    check(b, gguf_writer_set_u32(w, "tokenizer.ggml.unknown_token_id", 0), "unk");
    check(b, gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", true), "add_bos");
    check(b, gguf_writer_set_bool(w, "tokenizer.ggml.add_eos_token", false), "add_eos");
}

/* GPT-2 byte-level alphabet (bytes_to_unicode): printable bytes map to
 * themselves, the rest to U+0100 + k in byte order. Writes UTF-8 to t. */
static void byte_token(int byte, char *t) {
    static int next_cp[256];
    static int init = 0;
    if (!init) {
        int k = 0;
        for (int c = 0; c < 256; c++) {
            bool printable = (c >= '!' && c <= '~') || (c >= 0xA1 && c <= 0xAC) || (c >= 0xAE && c <= 0xFF);
            next_cp[c] = printable ? c : 256 + k++;
        }
        init = 1;
    }
    int cp = next_cp[byte];
    if (cp < 0x80) t[0] = (char)cp, t[1] = 0;
    else t[0] = (char)(0xC0 | (cp >> 6)), t[1] = (char)(0x80 | (cp & 0x3F)), t[2] = 0;
}

static void add_bpe_vocab(builder *b, int32_t n_vocab) {
    const int32_t n_special = 3, n_merged = n_vocab - 256 - n_special;
    char **strs = keep(b, (size_t)n_vocab * sizeof *strs);
    uint64_t *lens = keep(b, (size_t)n_vocab * sizeof *lens);
    int32_t *types = keep(b, (size_t)n_vocab * sizeof *types);
    char **merges = keep(b, (size_t)(n_merged > 0 ? n_merged : 1) * sizeof *merges);
    uint64_t *mlens = keep(b, (size_t)(n_merged > 0 ? n_merged : 1) * sizeof *mlens);
    static const char *specials[3] = {"<|endoftext|>", "<|im_start|>", "<|im_end|>"};
    if (b->st != SD_OK) return;
    for (int32_t i = 0; i < n_vocab && b->st == SD_OK; i++) {
        char *t = keep(b, 16);
        if (!t) return;
        types[i] = 1;
        if (i < 256) byte_token(i, t);
        else if (i < 256 + n_merged) {
            /* "xy" from the merge "x y" (676 pairs), then "xyz" from "xy z" */
            int k = i - 256;
            char *mg = keep(b, 8);
            if (!mg) return;
            if (k < 676) {
                snprintf(t, 16, "%c%c", letters[k / 26], letters[k % 26]);
                snprintf(mg, 8, "%c %c", letters[k / 26], letters[k % 26]);
            } else {
                int p = (k - 676) / 26 % 676, z = (k - 676) % 26;
                snprintf(t, 16, "%c%c%c", letters[p / 26], letters[p % 26], letters[z]);
                snprintf(mg, 8, "%c%c %c", letters[p / 26], letters[p % 26], letters[z]);
            }
            merges[k] = mg;
            mlens[k] = strlen(mg);
        } else {
            strcpy(t, specials[i - 256 - n_merged]);
            types[i] = 3;
        }
        strs[i] = t;
        lens[i] = strlen(t);
    }
    gguf_writer *w = b->w;
    const uint32_t eot = (uint32_t)(256 + n_merged);
    check(b, gguf_writer_set_str(w, "tokenizer.ggml.model", "gpt2", 4), "tokenizer.ggml.model");
    check(b, gguf_writer_set_str(w, "tokenizer.ggml.pre", "qwen2", 5), "tokenizer.ggml.pre");
    check(b, gguf_writer_set_arr_str(w, "tokenizer.ggml.tokens", (const char *const *)strs, lens, (uint64_t)n_vocab), "tokens");
    check(b, gguf_writer_set_arr_data(w, "tokenizer.ggml.token_type", GGUF_TYPE_INT32, types, (uint64_t)n_vocab), "token_type");
    check(b, gguf_writer_set_arr_str(w, "tokenizer.ggml.merges", (const char *const *)merges, mlens, (uint64_t)n_merged), "merges");
    check(b, gguf_writer_set_u32(w, "tokenizer.ggml.eos_token_id", eot + 2), "eos");      /* <|im_end|> */
    check(b, gguf_writer_set_u32(w, "tokenizer.ggml.padding_token_id", eot), "pad");
    check(b, gguf_writer_set_u32(w, "tokenizer.ggml.bos_token_id", eot), "bos");
    check(b, gguf_writer_set_bool(w, "tokenizer.ggml.add_bos_token", false), "add_bos");
}

/* ---- the model ---- */

tiny_model_spec tiny_model_default(const char *arch, uint32_t type) {
    bool qwen = strncmp(arch, "qwen", 4) == 0, qwen3 = strcmp(arch, "qwen3") == 0;
    bool qwen35 = strncmp(arch, "qwen35", 6) == 0, moe = strstr(arch, "moe") != NULL;
    qwen3 = qwen3 || strcmp(arch, "qwen3moe") == 0;
    tiny_model_spec sp = {
        .arch = arch, .type = type, .n_vocab = 320, .n_embd = 256, .n_layer = qwen35 ? 4 : 2,
        .n_head = qwen3 ? 8 : 4, .n_head_kv = 2, .head_dim = 64, .n_ff = 512, .n_ctx_train = 256,
        .rope_base = qwen ? 1000000.0f : 10000.0f, .rope_scale = 0.0f, .rms_eps = qwen ? 1e-6f : 1e-5f,
        .tied = false, .seed = 1, .alter_type = -1, .expert_count_key = -1,
    };
    if (moe) {
        sp.n_expert = 16, sp.n_expert_used = 4, sp.n_ff_exp = 64;
        sp.n_ff_shexp = qwen35 ? 64 : 0;
    }
    if (qwen35) {
        sp.n_rot = 16;
        sp.ssm_state = 64, sp.ssm_n_v_heads = 4, sp.ssm_n_k_heads = 2, sp.ssm_conv_kernel = 4;
        sp.attn_interval = 4;
    }
    return sp;
}

static bool is_qwen35(const tiny_model_spec *sp) { return strncmp(sp->arch, "qwen35", 6) == 0; }
static bool is_moe(const tiny_model_spec *sp) { return strstr(sp->arch, "moe") != NULL; }

/* The experts' keys (llama.cpp gguf-py constants.py Keys.LLM.EXPERT_*). */
static void add_moe_hparams(builder *b) {
    const tiny_model_spec *sp = b->sp;
    char key[128];
#define KEY(suffix) (snprintf(key, sizeof key, "%s." suffix, sp->arch), key)
    uint32_t count = (uint32_t)(sp->expert_count_key >= 0 ? sp->expert_count_key : sp->n_expert);
    check(b, gguf_writer_set_u32(b->w, KEY("expert_count"), count), key);
    check(b, gguf_writer_set_u32(b->w, KEY("expert_used_count"), (uint32_t)sp->n_expert_used), key);
    check(b, gguf_writer_set_u32(b->w, KEY("expert_feed_forward_length"), (uint32_t)sp->n_ff_exp), key);
    if (sp->n_ff_shexp > 0)
        check(b, gguf_writer_set_u32(b->w, KEY("expert_shared_feed_forward_length"), (uint32_t)sp->n_ff_shexp), key);
#undef KEY
}

/* The FFN of block il: routed experts [n_in, n_out, E] (+ the shared expert), or dense. */
static void add_ffn(builder *b, int il) {
    const tiny_model_spec *sp = b->sp;
    const int64_t D = sp->n_embd, F = sp->n_ff_exp, E = sp->n_expert, Fs = sp->n_ff_shexp;
    const float s_embd = 1.0f / sqrtf((float)D);
    char name[96];
#define T3(suffix, type, ne0, ne1, ne2, mean, scale) \
    (snprintf(name, sizeof name, "blk.%d." suffix, il), add_tensor3(b, name, type, ne0, ne1, ne2, mean, scale))
    if (!is_moe(sp)) {
        T3("ffn_gate.weight", sp->type, D, sp->n_ff, 1, 0.0f, 2.0f * s_embd);
        T3("ffn_up.weight", sp->type, D, sp->n_ff, 1, 0.0f, 2.0f * s_embd);
        T3("ffn_down.weight", sp->type, sp->n_ff, D, 1, 0.0f, 1.5f / sqrtf((float)sp->n_ff));
        return;
    }
    T3("ffn_gate_inp.weight", GGML_TYPE_F32, D, E, 1, 0.0f, sp->router_zero ? 0.0f : 4.0f * s_embd);
    if (sp->fused_gate_up) {
        T3("ffn_gate_up_exps.weight", sp->type, D, 2 * F, E, 0.0f, 2.0f * s_embd);
    } else {
        T3("ffn_gate_exps.weight", sp->type, D, F, E, 0.0f, 2.0f * s_embd);
        T3("ffn_up_exps.weight", sp->type, D, F, E, 0.0f, 2.0f * s_embd);
    }
    T3("ffn_down_exps.weight", sp->type, F, D, E, 0.0f, 1.5f / sqrtf((float)F));
    if (Fs > 0) {
        T3("ffn_gate_inp_shexp.weight", GGML_TYPE_F32, D, 1, 1, 0.0f, 2.0f * s_embd);
        T3("ffn_gate_shexp.weight", sp->type, D, Fs, 1, 0.0f, 2.0f * s_embd);
        T3("ffn_up_shexp.weight", sp->type, D, Fs, 1, 0.0f, 2.0f * s_embd);
        T3("ffn_down_shexp.weight", sp->type, Fs, D, 1, 0.0f, 1.5f / sqrtf((float)Fs));
    }
#undef T3
}

/* Trunk layer il of a qwen35 spec is Gated DeltaNet (the loader's rule). */
static bool q35_is_gdn(const tiny_model_spec *sp, int il) {
    if (sp->pattern) return sp->pattern[il] == 'G';
    int it = sp->attn_interval > 0 ? sp->attn_interval : 4;
    return (il + 1) % it != 0;
}

static void add_qwen35_hparams(builder *b) {
    const tiny_model_spec *sp = b->sp;
    gguf_writer *w = b->w;
    char key[128];
#define K35(suffix) (snprintf(key, sizeof key, "%s." suffix, sp->arch), key)
    const int32_t pairs = (sp->n_rot ? sp->n_rot : sp->head_dim) / 2, n_trunk = sp->n_layer - sp->n_nextn;
    const int32_t sections[4] = {(pairs + 2) / 3, (pairs + 1) / 3, pairs / 3, 0}; /* [11, 11, 10, 0] for 32 */
    check(b, gguf_writer_set_u32(w, K35("rope.dimension_count"), (uint32_t)(pairs * 2)), "n_rot");
    check(b, gguf_writer_set_arr_data(w, K35("rope.dimension_sections"), GGUF_TYPE_INT32, sections, 4), "sections");
    if (sp->n_nextn) check(b, gguf_writer_set_u32(w, K35("nextn_predict_layers"), (uint32_t)sp->n_nextn), "nextn");
    check(b, gguf_writer_set_u32(w, K35("ssm.conv_kernel"), (uint32_t)sp->ssm_conv_kernel), "conv_kernel");
    check(b, gguf_writer_set_u32(w, K35("ssm.state_size"), (uint32_t)sp->ssm_state), "state_size");
    check(b, gguf_writer_set_u32(w, K35("ssm.time_step_rank"), (uint32_t)sp->ssm_n_v_heads), "time_step_rank");
    check(b, gguf_writer_set_u32(w, K35("ssm.group_count"), (uint32_t)sp->ssm_n_k_heads), "group_count");
    check(b, gguf_writer_set_u32(w, K35("ssm.inner_size"),
                                 (uint32_t)(sp->ssm_state * sp->ssm_n_v_heads + sp->ssm_inner_delta)), "inner_size");
    if (sp->pattern) {
        int n = sp->n_layer + sp->pattern_extra;
        bool *flags = keep(b, (size_t)(n > 0 ? n : 1) * sizeof *flags);
        if (!flags) return;
        for (int i = 0; i < n; i++) flags[i] = i < n_trunk && q35_is_gdn(sp, i);
        check(b, gguf_writer_set_arr_data(w, K35("attention.recurrent_layers"), GGUF_TYPE_BOOL, flags, (uint64_t)n),
              "recurrent_layers");
    } else if (sp->attn_interval > 0) {
        check(b, gguf_writer_set_u32(w, K35("full_attention_interval"), (uint32_t)sp->attn_interval), "interval");
    }
#undef K35
}

/* The tensors of qwen35 block il: trunk GDN or attention layer, or an MTP block. */
static void add_qwen35_block(builder *b, int il) {
    const tiny_model_spec *sp = b->sp;
    const int64_t n_embd = sp->n_embd, hd = sp->head_dim;
    const int64_t q_dim = sp->n_head * hd, kv_dim = sp->n_head_kv * hd;
    const int64_t S = sp->ssm_state, hv = sp->ssm_n_v_heads, vd = hv * S;
    const int64_t conv_dim = (2 * sp->ssm_n_k_heads + hv) * S, K = sp->ssm_conv_kernel;
    const float s_embd = 1.0f / sqrtf((float)n_embd), s_q = 1.0f / sqrtf((float)q_dim);
    const float s_v = 1.0f / sqrtf((float)vd);
    const bool mtp = il >= sp->n_layer - sp->n_nextn;
    char name[96];
#define T(suffix, type, ne0, ne1, mean, scale) \
    (snprintf(name, sizeof name, "blk.%d." suffix, il), add_tensor(b, name, type, ne0, ne1, mean, scale))
    T("attn_norm.weight", GGML_TYPE_F32, n_embd, 1, 1.0f, 0.2f);
    T("post_attention_norm.weight", GGML_TYPE_F32, n_embd, 1, 1.0f, 0.2f);
    if (!mtp && q35_is_gdn(sp, il)) {
        T("attn_qkv.weight", sp->type, n_embd, conv_dim, 0.0f, 2.0f * s_embd);
        T("attn_gate.weight", sp->type, n_embd, vd, 0.0f, 2.0f * s_embd);
        if (K > 0) T("ssm_conv1d.weight", GGML_TYPE_F32, K, conv_dim, 0.0f, 0.6f);
        T("ssm_dt.bias", GGML_TYPE_F32, hv, 1, 0.0f, 1.0f);
        T("ssm_a", GGML_TYPE_F32, hv, 1, -1.0f, 0.8f);
        T("ssm_beta.weight", sp->type, n_embd, hv, 0.0f, 2.0f * s_embd);
        T("ssm_alpha.weight", sp->type, n_embd, hv, 0.0f, 2.0f * s_embd);
        T("ssm_norm.weight", GGML_TYPE_F32, S, 1, 1.0f, 0.2f);
        T("ssm_out.weight", sp->type, vd, n_embd, 0.0f, 1.5f * s_v);
    } else {
        T("attn_q.weight", sp->type, n_embd, 2 * q_dim, 0.0f, 2.0f * s_embd);
        T("attn_k.weight", sp->type, n_embd, kv_dim, 0.0f, 2.0f * s_embd);
        T("attn_v.weight", sp->type, n_embd, kv_dim, 0.0f, 1.5f * s_embd);
        T("attn_output.weight", sp->type, q_dim, n_embd, 0.0f, 1.5f * s_q);
        T("attn_q_norm.weight", GGML_TYPE_F32, hd, 1, 1.0f, 0.3f);
        T("attn_k_norm.weight", GGML_TYPE_F32, hd, 1, 1.0f, 0.3f);
    }
    if (mtp) {
        T("nextn.eh_proj.weight", sp->type, 2 * n_embd, n_embd, 0.0f, s_embd);
        T("nextn.enorm.weight", GGML_TYPE_F32, n_embd, 1, 1.0f, 0.2f);
        T("nextn.hnorm.weight", GGML_TYPE_F32, n_embd, 1, 1.0f, 0.2f);
        T("nextn.shared_head_norm.weight", GGML_TYPE_F32, n_embd, 1, 1.0f, 0.2f);
    }
#undef T
    add_ffn(b, il);
}

static void add_hparams(builder *b) {
    const tiny_model_spec *sp = b->sp;
    gguf_writer *w = b->w;
    char key[128];
#define KEY(suffix) (snprintf(key, sizeof key, "%s." suffix, sp->arch), key)
    check(b, gguf_writer_set_str(w, "general.architecture", sp->arch, strlen(sp->arch)), "arch");
    check(b, gguf_writer_set_str(w, "general.name", "tiny", 4), "name");
    if (sp->chat_template)
        check(b, gguf_writer_set_str(w, "tokenizer.chat_template", sp->chat_template, strlen(sp->chat_template)),
              "tokenizer.chat_template");
    check(b, gguf_writer_set_u32(w, KEY("context_length"), (uint32_t)sp->n_ctx_train), key);
    check(b, gguf_writer_set_u32(w, KEY("embedding_length"), (uint32_t)sp->n_embd), key);
    check(b, gguf_writer_set_u32(w, KEY("block_count"), (uint32_t)sp->n_layer), key);
    check(b, gguf_writer_set_u32(w, KEY("feed_forward_length"), (uint32_t)sp->n_ff), key);
    check(b, gguf_writer_set_u32(w, KEY("attention.head_count"), (uint32_t)sp->n_head), key);
    check(b, gguf_writer_set_u32(w, KEY("attention.head_count_kv"), (uint32_t)sp->n_head_kv), key);
    check(b, gguf_writer_set_u32(w, KEY("attention.key_length"), (uint32_t)sp->head_dim), key);
    check(b, gguf_writer_set_u32(w, KEY("attention.value_length"), (uint32_t)sp->head_dim), key);
    if (!is_qwen35(sp)) check(b, gguf_writer_set_u32(w, KEY("rope.dimension_count"), (uint32_t)sp->head_dim), key);
    check(b, gguf_writer_set_f32(w, KEY("rope.freq_base"), sp->rope_base), key);
    check(b, gguf_writer_set_f32(w, KEY("attention.layer_norm_rms_epsilon"), sp->rms_eps), key);
    if (sp->rope_scale > 0.0f) {
        check(b, gguf_writer_set_str(w, KEY("rope.scaling.type"), "linear", 6), key);
        check(b, gguf_writer_set_f32(w, KEY("rope.scaling.factor"), sp->rope_scale), key);
    }
#undef KEY
}

static void add_tensors(builder *b) {
    const tiny_model_spec *sp = b->sp;
    const int64_t n_embd = sp->n_embd, hd = sp->head_dim;
    const int64_t q_dim = sp->n_head * hd, kv_dim = sp->n_head_kv * hd;
    const bool qwen2 = strcmp(sp->arch, "qwen2") == 0, qwen3 = strncmp(sp->arch, "qwen3", 5) == 0;
    const float s_embd = 1.0f / sqrtf((float)n_embd), s_q = 1.0f / sqrtf((float)q_dim);
    char name[96];
    add_tensor(b, "token_embd.weight", sp->type, n_embd, sp->n_vocab, 0.0f, 1.0f);
    add_tensor(b, "output_norm.weight", GGML_TYPE_F32, n_embd, 1, 1.0f, 0.2f);
    if (!sp->tied) add_tensor(b, "output.weight", sp->type, n_embd, sp->n_vocab, 0.0f, 3.0f * s_embd);
    if (sp->rope_freqs) add_tensor(b, "rope_freqs.weight", GGML_TYPE_F32, hd / 2, 1, 4.5f, 3.5f);
    for (int il = 0; is_qwen35(sp) && il < sp->n_layer; il++) add_qwen35_block(b, il);
    for (int il = 0; !is_qwen35(sp) && il < sp->n_layer; il++) {
#define T(suffix, type, ne0, ne1, mean, scale) \
    (snprintf(name, sizeof name, "blk.%d." suffix, il), add_tensor(b, name, type, ne0, ne1, mean, scale))
        T("attn_norm.weight", GGML_TYPE_F32, n_embd, 1, 1.0f, 0.2f);
        T("attn_q.weight", sp->type, n_embd, q_dim, 0.0f, 2.0f * s_embd);
        T("attn_k.weight", sp->type, n_embd, kv_dim, 0.0f, 2.0f * s_embd);
        T("attn_v.weight", sp->type, n_embd, kv_dim, 0.0f, 1.5f * s_embd);
        if (qwen2) {
            T("attn_q.bias", GGML_TYPE_F32, q_dim, 1, 0.0f, 0.3f);
            T("attn_k.bias", GGML_TYPE_F32, kv_dim, 1, 0.0f, 0.3f);
            T("attn_v.bias", GGML_TYPE_F32, kv_dim, 1, 0.0f, 0.3f);
        }
        if (qwen3) {
            T("attn_q_norm.weight", GGML_TYPE_F32, hd, 1, 1.0f, 0.3f);
            T("attn_k_norm.weight", GGML_TYPE_F32, hd, 1, 1.0f, 0.3f);
        }
        T("attn_output.weight", sp->type, q_dim, n_embd, 0.0f, 1.5f * s_q);
        T("ffn_norm.weight", GGML_TYPE_F32, n_embd, 1, 1.0f, 0.2f);
#undef T
        add_ffn(b, il);
    }
}

sd_status tiny_model_write(const tiny_model_spec *sp, const char *path, sd_err *err) {
    if (sp->n_vocab < 300 || sp->n_vocab > 18000 || sp->n_embd <= 0 || sp->n_layer <= 0 || sp->n_head <= 0 || sp->n_head_kv <= 0 ||
        sp->head_dim <= 0 || sp->n_ff <= 0)
        return sd_err_set(err, SD_ERR_ARG, "tiny_model: bad spec (n_vocab must be in [300, 18000], sizes > 0)");
    builder b = {.sp = sp, .w = gguf_writer_init(), .err = err};
    if (!b.w) return sd_err_set(err, SD_ERR_NOMEM, "tiny_model: out of memory");
    add_hparams(&b);
    if (is_qwen35(sp)) add_qwen35_hparams(&b);
    if (is_moe(sp)) add_moe_hparams(&b);
    if (strcmp(sp->arch, "llama") == 0) add_spm_vocab(&b, sp->n_vocab);
    else add_bpe_vocab(&b, sp->n_vocab);
    add_tensors(&b);
    if (b.st == SD_OK) b.st = gguf_writer_write(b.w, path, err);
    gguf_writer_free(b.w);
    for (int i = 0; i < b.n_bufs; i++) free(b.bufs[i]);
    free(b.bufs);
    return b.st;
}

void tiny_model_temp_path(char *buf, size_t cap, const char *tag) {
    static int counter = 0;
    const char *dir = getenv("TMPDIR");
    snprintf(buf, cap, "%s/sd-tiny-%ld-%d-%s.gguf", dir && *dir ? dir : "/tmp", (long)getpid(), counter++, tag);
}
