/* sd-mtp_split: splits a qwen35 GGUF with one MTP (nextn) block the way
 * llama.cpp's converter publishes such a model as two files
 * (convert_hf_to_gguf.py --mtp / --no-mtp, conversion/qwen.py _QwenMtpMixin):
 *   --mtp OUT    the "mtp_only" sidecar (llama.cpp names it mtp-*.gguf):
 *                every metadata key as is (block_count still counts the MTP
 *                block, nextn_predict_layers 1), token_embd, output_norm,
 *                output (when untied) and the blk.<n_layer>.* tensors; no trunk;
 *   --trunk OUT  the model without its MTP block: block_count = the trunk's
 *                layers, no nextn_predict_layers key, attention.recurrent_layers
 *                cut to the trunk, every tensor but blk.<n_layer>.*.
 * Tensor bytes are copied as they are (any type). For tests (an MTP sidecar
 * for a target without one, from the committed fixture) and for trying a
 * sidecar on a realistic shape.
 *   sd-mtp_split IN.gguf [--mtp OUT.gguf] [--trunk OUT.gguf] */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format/gguf.h"

static int die(const char *msg, const char *arg) {
    fprintf(stderr, "sd-mtp_split: %s%s%s\n", msg, arg ? ": " : "", arg ? arg : "");
    return 1;
}

static bool in_block(const char *name, int il) {
    char pre[32];
    int n = snprintf(pre, sizeof pre, "blk.%d.", il);
    return !strncmp(name, pre, (size_t)n);
}

static bool mtp_keeps(const char *name, int il) {
    return in_block(name, il) || !strcmp(name, "token_embd.weight") || !strcmp(name, "output_norm.weight") ||
           !strcmp(name, "output.weight");
}

/* Metadata of the trunk file: block_count and recurrent_layers cut to n_layer, no nextn key. */
static sd_status trunk_kv(gguf_writer *w, const gguf_ctx *g, int64_t i, int n_layer) {
    const char *key = gguf_kv_key(g, i);
    if (!strcmp(key, "qwen35.nextn_predict_layers")) return SD_OK;
    if (!strcmp(key, "qwen35.block_count")) return gguf_writer_set_u32(w, key, (uint32_t)n_layer);
    if (!strcmp(key, "qwen35.attention.recurrent_layers")) {
        gguf_type elem;
        uint64_t n = 0;
        const void *data = NULL;
        if (!gguf_get_arr_data(g, key, &elem, &n, &data) || n < (uint64_t)n_layer) return SD_ERR_FORMAT;
        return gguf_writer_set_arr_data(w, key, elem, data, (uint64_t)n_layer);
    }
    return gguf_writer_copy_kv(w, g, i);
}

static int write_one(const gguf_ctx *g, const char *path, bool mtp, int n_layer) {
    gguf_writer *w = gguf_writer_init();
    if (!w) return die("out of memory", NULL);
    sd_status st = SD_OK;
    for (int64_t i = 0; st == SD_OK && i < gguf_n_kv(g); i++)
        st = mtp ? gguf_writer_copy_kv(w, g, i) : trunk_kv(w, g, i, n_layer);
    for (int64_t i = 0; st == SD_OK && i < gguf_n_tensors(g); i++) {
        const gguf_tensor_info *t = gguf_tensor(g, i);
        if (mtp ? !mtp_keeps(t->name, n_layer) : in_block(t->name, n_layer)) continue;
        st = gguf_writer_add_tensor(w, t->name, t->type, t->n_dims, t->ne, t->data, t->nbytes);
    }
    sd_err err = {0};
    if (st == SD_OK) st = gguf_writer_write(w, path, &err);
    gguf_writer_free(w);
    return st == SD_OK ? 0 : die(err.msg[0] ? err.msg : "cannot copy the metadata or tensors", path);
}

int main(int argc, char **argv) {
    const char *in = NULL, *mtp = NULL, *trunk = NULL;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--mtp") && i + 1 < argc) mtp = argv[++i];
        else if (!strcmp(argv[i], "--trunk") && i + 1 < argc) trunk = argv[++i];
        else if (argv[i][0] != '-' && !in) in = argv[i];
        else return die("usage: sd-mtp_split IN.gguf [--mtp OUT.gguf] [--trunk OUT.gguf]", NULL);
    }
    if (!in || (!mtp && !trunk)) return die("usage: sd-mtp_split IN.gguf [--mtp OUT.gguf] [--trunk OUT.gguf]", NULL);
    gguf_ctx *g = NULL;
    sd_err err = {0};
    if (gguf_open(in, &g, &err) != SD_OK) return die(err.msg, NULL);
    const char *arch = NULL;
    uint64_t len = 0;
    int64_t blocks = 0, nextn = 0;
    int rc = 0;
    if (!gguf_get_str(g, "general.architecture", &arch, &len) || len != 6 || strncmp(arch, "qwen35", 6))
        rc = die("not a qwen35 file", in);
    else if (!gguf_get_i64(g, "qwen35.block_count", &blocks) || !gguf_get_i64(g, "qwen35.nextn_predict_layers", &nextn) ||
             nextn != 1 || blocks < 2)
        rc = die("no single MTP block (qwen35.nextn_predict_layers must be 1)", in);
    else if (!gguf_find_tensor(g, "blk.0.attn_norm.weight"))
        rc = die("already an MTP sidecar (no trunk)", in);
    if (!rc && mtp) rc = write_one(g, mtp, true, (int)(blocks - 1));
    if (!rc && trunk) rc = write_one(g, trunk, false, (int)(blocks - 1));
    gguf_close(g);
    return rc;
}
