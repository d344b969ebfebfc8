/* qwen3 GGUF metadata for sd-genmodel (see qwen3_keys.h). */
#include "common/qwen3_keys.h"

#include <stdio.h>

#include "format/ggml_type.h"

uint32_t tool_file_type(uint32_t t) {
    switch (t) {
    case GGML_TYPE_F16: return 1;
    case GGML_TYPE_Q8_0: return 7;
    case GGML_TYPE_Q4_K: return 14; /* Q4_K_S: every matrix q4_k */
    default: return 0;              /* ALL_F32 */
    }
}

sd_status tool_write_qwen3_shape(gguf_writer *w, const tool_qwen3_shape *s) {
    sd_status st = SD_OK;
    char k[96];
#define KEY(suffix) (snprintf(k, sizeof k, "%s." suffix, s->arch ? s->arch : "qwen3"), k)
    st = st ? st : gguf_writer_set_u32(w, KEY("block_count"), (uint32_t)s->n_layer);
    st = st ? st : gguf_writer_set_u32(w, KEY("embedding_length"), (uint32_t)s->n_embd);
    st = st ? st : gguf_writer_set_u32(w, KEY("feed_forward_length"), (uint32_t)s->n_ff);
    st = st ? st : gguf_writer_set_u32(w, KEY("attention.head_count"), (uint32_t)s->n_head);
    st = st ? st : gguf_writer_set_u32(w, KEY("attention.head_count_kv"), (uint32_t)s->n_head_kv);
    st = st ? st : gguf_writer_set_u32(w, KEY("attention.key_length"), (uint32_t)s->head_dim);
    st = st ? st : gguf_writer_set_u32(w, KEY("attention.value_length"), (uint32_t)s->head_dim);
    st = st ? st : gguf_writer_set_f32(w, KEY("attention.layer_norm_rms_epsilon"), s->eps);
#undef KEY
    return st;
}
