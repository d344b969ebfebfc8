/* Giving the file pages of tensors the caller has copied back to the kernel,
 * and measuring what of the mapping is resident (gguf.h).
 *
 * Why: the matmul kernels read a repacked copy of each weight matrix and the
 * loader copies norms to f32, so after load the mapping's pages of those
 * tensors are a second copy of the weights that only costs memory (a 0.6B
 * Q8_0 model held ~2x its file size). MADV_DONTNEED on a private read-only
 * file mapping drops the pages from this process; the mapping stays valid and
 * a later read faults the page back in from the file (madvise(2)), so no
 * pointer handed out by the reader goes stale.
 *
 * A page is given back only when every byte of it is released tensor data or
 * padding between tensors: pages shared with the header or with a tensor still
 * in use stay. Tensors are walked in file order so that a run of released
 * neighbours frees the pages on their common boundaries too. */
#define _DEFAULT_SOURCE /* madvise, MADV_DONTNEED */
#include <sys/mman.h>

#include "core/resident.h"
#include "format/gguf_impl.h"

static uint64_t t_begin(const gguf_ctx *ctx, int64_t i) { return ctx->data_offset + ctx->tensors[i].offset; }
static uint64_t t_end(const gguf_ctx *ctx, int64_t i) { return t_begin(ctx, i) + ctx->tensors[i].nbytes; }
static bool t_done(const gguf_ctx *ctx, int64_t i) { return ctx->t_released[i] == ctx->tensors[i].nbytes; }

/* Where the released bytes that start at the tensor of file-order rank k
 * end: past every wholly released tensor from there on (and the padding
 * between them), at the released prefix of the first that is not, or at the
 * file's end. */
static uint64_t released_end(const gguf_ctx *ctx, int64_t k) {
    const int64_t *ord = ctx->t_by_offset;
    while (k < ctx->n_tensors && t_done(ctx, ord[k])) k++;
    return k < ctx->n_tensors ? t_begin(ctx, ord[k]) + ctx->t_released[ord[k]] : ctx->size;
}

/* The released bytes [*lo, *hi) of the file around tensor i: its released
 * prefix, and if it is wholly released, the released neighbours and padding. */
static void released_span(const gguf_ctx *ctx, int64_t i, uint64_t *lo, uint64_t *hi) {
    const int64_t *ord = ctx->t_by_offset;
    int64_t k = ctx->t_rank[i];
    while (k > 0 && t_done(ctx, ord[k - 1])) k--;
    *lo = k > 0 ? t_end(ctx, ord[k - 1]) : ctx->header_released ? 0 : ctx->data_offset;
    *hi = released_end(ctx, ctx->t_rank[i]);
}

void gguf_release(gguf_ctx *ctx, const gguf_tensor_info *t, uint64_t prefix) {
    if (!ctx || !t || t < ctx->tensors || t >= ctx->tensors + ctx->n_tensors) return;
    int64_t i = t - ctx->tensors;
    if (prefix > t->nbytes) prefix = t->nbytes;
    if (prefix <= ctx->t_released[i]) return;
    ctx->t_released[i] = prefix;
    if (!ctx->mapped) return; /* a caller's buffer is not ours to drop */
    uint64_t lo, hi, page = sd_page_size();
    released_span(ctx, i, &lo, &hi);
    lo = (lo + page - 1) / page * page;
    hi = hi / page * page;
    /* A failure only means the pages stay resident, as before. */
    if (hi > lo) (void)madvise((void *)(ctx->base + lo), (size_t)(hi - lo), MADV_DONTNEED);
}

void gguf_release_header(gguf_ctx *ctx) {
    if (!ctx || ctx->header_released) return;
    ctx->header_released = 1;
    if (!ctx->mapped) return;
    /* [0, hi): the header, and the released tensors (and padding) after it */
    const uint64_t page = sd_page_size();
    uint64_t hi = ctx->n_tensors > 0 ? released_end(ctx, 0) : ctx->data_offset;
    hi = hi / page * page;
    if (hi > 0) (void)madvise((void *)ctx->base, (size_t)hi, MADV_DONTNEED);
}

uint64_t gguf_released_bytes(const gguf_ctx *ctx, const gguf_tensor_info *t) {
    if (!ctx || !t || t < ctx->tensors || t >= ctx->tensors + ctx->n_tensors) return 0;
    return ctx->t_released[t - ctx->tensors];
}

bool gguf_resident_bytes(const gguf_ctx *ctx, uint64_t *out) {
    *out = 0;
    if (!ctx->mapped) return false;
    return sd_resident_bytes(ctx->base, ctx->size, out);
}
