/* specdec: the public C API.
 *
 * A C11 GGUF inference engine with lossless speculative decoding: the text a
 * speculative run produces is exactly plain greedy decoding's at temperature
 * 0, and byte for byte plain sampling's with the same seed at temperature > 0
 * (coupled drafts: ARCHITECTURE.md §6); with draft_sample, a draft model's
 * sampled drafts give plain sampling's distribution, not its bytes
 * (speculative sampling, Leviathan et al. 2023, arXiv:2211.17192; Chen et al.
 * 2023, arXiv:2302.01318). This header is the only door the command line, the
 * server and the examples use; everything under src/ is internal.
 *
 * Life cycle (pairs of matching names, as llama2.c's build_x / free_x):
 *
 *     specdec_model *m;      specdec_model_load(path, NULL, &m, &err);
 *     specdec_context *c;    specdec_context_init(m, &cparams, &c, &err);
 *     specdec_token *t;      specdec_tokenize(m, text, len, true, false, &t, &n, &err);
 *                            specdec_generate(c, t, n, &gparams, on_piece, user, &stats, &err);
 *                            specdec_free(t); specdec_context_free(c); specdec_model_free(m);
 *
 * Conventions, for every function below:
 * - Errors: a function that can fail returns a specdec_status; SPECDEC_OK (0)
 *   is success. When the caller passes a non-NULL specdec_error *err, a
 *   failure also writes its code and a one-line message (no trailing newline,
 *   e.g. "models/x.gguf: missing key qwen3.block_count"). No function prints,
 *   exits or aborts on bad input.
 * - Ownership: handles are freed with their own *_free (NULL is allowed);
 *   buffers the library allocates for the caller (tokens, text) are freed with
 *   specdec_free. Strings returned as `const char *` are borrowed from the
 *   handle and live as long as it does, unless a function says otherwise.
 * - Params structs are filled by their *_default_params() and passed by
 *   pointer; NULL means the defaults. New fields are only ever appended.
 * - Threads: a model is read-only once loaded: its functions (metadata,
 *   tokenize, detokenize) may be called from any number of threads at once,
 *   also while contexts of it generate. A context is used by one thread at a
 *   time (it holds the KV cache and scratch of one sequence).
 * - Tokens are int32 ids in [0, n_vocab). Positions and counts are tokens;
 *   times are milliseconds of wall clock. Text is bytes (UTF-8 expected but
 *   any bytes are accepted: byte-level BPE encodes every byte losslessly). */
#ifndef SPECDEC_H
#define SPECDEC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Symbols exported from libspecdec.so: only these declarations. */
#if defined(__GNUC__)
#define SPECDEC_API __attribute__((visibility("default")))
#else
#define SPECDEC_API
#endif

#define SPECDEC_VERSION_MAJOR 0
#define SPECDEC_VERSION_MINOR 1
#define SPECDEC_VERSION_PATCH 0

/* "MAJOR.MINOR.PATCH" of the library actually linked (static storage). */
SPECDEC_API const char *specdec_version(void);

/* ------------------------------------------------------------------------ */
/* Errors                                                                    */

typedef enum specdec_status {
    SPECDEC_OK = 0,
    SPECDEC_ERR_IO,          /* open / read / map of a file failed */
    SPECDEC_ERR_FORMAT,      /* malformed or hostile file contents */
    SPECDEC_ERR_NOMEM,       /* allocation failed or a size overflowed */
    SPECDEC_ERR_UNSUPPORTED, /* valid but not supported: architecture, tensor type, tokenizer */
    SPECDEC_ERR_CONTEXT,     /* the prompt does not fit the context size n_ctx */
    SPECDEC_ERR_ARG,         /* invalid argument from the caller (a bad parameter, a token id out of range) */
    SPECDEC_ERR_VOCAB,       /* the draft model's vocabulary differs from the target's */
    SPECDEC_ERR_MISMATCH,    /* reserved: a failed lossless check is reported in the stats, not as an error */
} specdec_status;

/* One error: the code and a one-line human-readable message. */
typedef struct specdec_error {
    specdec_status code;
    char message[512];
} specdec_error;

/* A short name for a status, e.g. "format error" (static storage; "unknown
 * error" for a value outside the enum). */
SPECDEC_API const char *specdec_status_name(specdec_status status);

/* Sets err (if not NULL) to code and a printf-formatted one-line message (cut
 * to fit message[]); returns code. The library's own setter, for front ends
 * that report their errors (a prompt file that cannot be read) the same way. */
SPECDEC_API specdec_status specdec_error_set(specdec_error *err, specdec_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;

/* Frees a buffer the library allocated for the caller (tokens from
 * specdec_tokenize, text from specdec_detokenize). NULL is allowed. */
SPECDEC_API void specdec_free(void *ptr);

/* Online CPU cores: the thread count used when n_threads <= 0. More threads
 * than cores is slower (each barrier then waits for a descheduled thread).
 * Threads are OpenMP's (libgomp). A process whose forwards run on more than
 * one of its own threads (specdec_batch runs them on the caller's, and the
 * model may have been loaded on another) holds one OpenMP pool per thread;
 * once those hold more threads than there are cores, libgomp spins only 100
 * iterations at a barrier before sleeping unless OMP_WAIT_POLICY is set
 * (libgomp/env.c), which cost `specdec serve` a fifth of its decode speed on
 * 2 cores. Set OMP_WAIT_POLICY=active GOMP_SPINCOUNT=1000 in the environment
 * before the library loads (the `specdec` program does this itself). */
SPECDEC_API int specdec_default_threads(void);

/* ------------------------------------------------------------------------ */
/* Instruction set of the compute kernels                                    */

/* The kernel families. Every family computes every result in the same order,
 * so logits (and so every generated token) are bitwise the same on each; the
 * choice only changes speed. AVX512 (AVX-512 F/BW/VL/VNNI) includes AVX2. */
typedef enum specdec_isa {
    SPECDEC_ISA_SCALAR = 0, /* portable C */
    SPECDEC_ISA_AVX2,       /* x86 AVX2 + FMA + F16C */
    SPECDEC_ISA_AVX512,     /* x86 AVX-512 VNNI (the matmul; other kernels run their AVX2 build) */
    SPECDEC_ISA_NEON,       /* ARM NEON (AArch64) */
} specdec_isa;

/* The family in use. Chosen at first use: the environment variable
 * SPECDEC_ISA=scalar|avx2|avx512|neon when this machine can run it, else the
 * best one the CPU and the OS support (an unusable SPECDEC_ISA makes
 * specdec_model_load and specdec_context_init fail with
 * SPECDEC_ERR_UNSUPPORTED and its one-line reason). */
SPECDEC_API specdec_isa specdec_isa_get(void);
/* True when this CPU has the instructions and the OS saves their registers
 * (for AVX-512: the opmask and ZMM state in XCR0). */
SPECDEC_API bool specdec_isa_available(specdec_isa isa);
/* "scalar", "avx2", "avx512", "neon"; NULL for a value that names no path of this library. */
SPECDEC_API const char *specdec_isa_name(specdec_isa isa);
/* The family named name (as above) into *isa; false if none has that name. */
SPECDEC_API bool specdec_isa_parse(const char *name, specdec_isa *isa);
/* Switches to isa for the whole process. Call it before loading models:
 * weights are repacked for the family in use at load time, and a model loaded
 * for another family still gives the same results but through slower
 * kernels. Not thread-safe against running generations.
 * Errors: SPECDEC_ERR_UNSUPPORTED (this machine cannot run isa; nothing
 * changes), SPECDEC_ERR_ARG (a value outside the enum). */
SPECDEC_API specdec_status specdec_isa_set(specdec_isa isa, specdec_error *err);

/* ------------------------------------------------------------------------ */
/* Models                                                                    */

typedef int32_t specdec_token;
typedef struct specdec_model specdec_model;

/* The element type of a KV cache's K (or V) rows: llama.cpp's cache types
 * and names (its common/arg.cpp kv_cache_types, --cache-type-k / -v), F16
 * (the default, 0) first. Quantized rows are blocks of 32 elements laid out
 * as ggml defines them (ggml/src/ggml-common.h: block_q8_0, block_q4_0,
 * block_q4_1, block_q5_0, block_q5_1, block_iq4_nl), quantized once when a
 * position is written (ggml-quants.c's reference quantizers, reproduced in
 * src/numerics/quant/) and widened exactly to f32 when attention reads them;
 * attention stays batch-invariant and identical on every kernel path, so
 * speculative decoding is still lossless (its output equals plain decoding's
 * with the same cache types). Bytes per element: f32 4, f16 / bf16 2, q8_0
 * 1.0625, q5_1 0.75, q5_0 0.6875, q4_1 0.625, q4_0 / iq4_nl 0.5625. The
 * quantized types need head_dim a multiple of 32. */
typedef enum specdec_cache_type {
    SPECDEC_CACHE_F16 = 0,
    SPECDEC_CACHE_F32,
    SPECDEC_CACHE_BF16,
    SPECDEC_CACHE_Q8_0,
    SPECDEC_CACHE_Q4_0,
    SPECDEC_CACHE_Q4_1,
    SPECDEC_CACHE_IQ4_NL,
    SPECDEC_CACHE_Q5_0,
    SPECDEC_CACHE_Q5_1,
} specdec_cache_type;

/* "f16", "q8_0", ... (llama.cpp's names); NULL for a value out of range. */
SPECDEC_API const char *specdec_cache_type_name(specdec_cache_type t);
/* The type named name (exact, lower case as llama.cpp spells it) into *t;
 * false (and *t unchanged) for any other text or NULL. */
SPECDEC_API bool specdec_cache_type_parse(const char *name, specdec_cache_type *t);

/* How a model is held in memory. The weights are used from a read-only
 * mapping of the file; quantized matrices are repacked once for the SIMD
 * kernels (a heap copy of about the file's size; the file pages are given
 * back as it goes) unless no_repack, or unless the tensors plus a KV cache of
 * plan_n_ctx positions of the plan cache types would exceed the memory
 * available (MemAvailable, or the room under the cgroup memory limit when less): then every
 * product reads the mapping in place (the page cache holds the weights and
 * may drop and reread them, so a file larger than the free memory runs, more
 * slowly), and specdec_model_repack_note says so. The logits are bitwise the
 * same either way. All zero = auto, planned for the default context
 * (min(n_ctx_train, 4096) positions of f16). */
typedef struct specdec_model_params {
    int32_t reserved;  /* 0 */
    bool no_repack;    /* true: never repack (llama.cpp's --no-repack) */
    int32_t plan_n_ctx; /* the context the caller will make, for the auto rule; <= 0 as above */
    specdec_cache_type plan_cache_type_k, plan_cache_type_v; /* its cache types (specdec_context_params) */
} specdec_model_params;

SPECDEC_API specdec_model_params specdec_model_default_params(void);
/* NULL, or one line saying that the auto rule of specdec_model_params left the
 * weights unrepacked and why (sizes in MiB), for a front end to print.
 * Borrowed for the model's lifetime. */
SPECDEC_API const char *specdec_model_repack_note(const specdec_model *model);

/* Loads a GGUF model (architectures: dense llama, qwen2, qwen3; hybrid
 * qwen35; mixture of experts qwen3moe, qwen35moe (docs/MOE.md); an eagle3
 * head, usable only as a context's draft) and its tokenizer. params NULL =
 * defaults. On success *out owns the model (free with specdec_model_free);
 * on error *out is NULL. Errors (the message
 * starts with the path): SPECDEC_ERR_IO (cannot open or map),
 * SPECDEC_ERR_FORMAT (malformed GGUF, missing key or tensor, wrong shape),
 * SPECDEC_ERR_UNSUPPORTED (unknown architecture, tensor type, tokenizer),
 * SPECDEC_ERR_NOMEM, SPECDEC_ERR_ARG (path or out NULL). */
SPECDEC_API specdec_status specdec_model_load(const char *path, const specdec_model_params *params,
                                              specdec_model **out, specdec_error *err);
/* Frees the model. Every context made from it must be freed first. */
SPECDEC_API void specdec_model_free(specdec_model *model);

/* The path the model was loaded from (a copy). */
SPECDEC_API const char *specdec_model_path(const specdec_model *model);
/* GGUF `general.name`, or the file name without directory and ".gguf" when
 * the key is absent. Never NULL. */
SPECDEC_API const char *specdec_model_name(const specdec_model *model);
/* GGUF `general.architecture`: "llama", "qwen2", "qwen3", "qwen35", "qwen3moe", "qwen35moe", "eagle3". */
SPECDEC_API const char *specdec_model_arch(const specdec_model *model);
/* Number of tokens in the vocabulary (logit rows are this long). */
SPECDEC_API int32_t specdec_model_n_vocab(const specdec_model *model);
/* GGUF `{arch}.context_length`: the context the model was trained for. A
 * longer n_ctx is allowed (positions past it are out of distribution). */
SPECDEC_API int32_t specdec_model_n_ctx_train(const specdec_model *model);
/* Parameters (all matrices, norms, biases; a tied output head once). */
SPECDEC_API uint64_t specdec_model_n_params(const specdec_model *model);

/* What the model's weights hold in this process's memory, in bytes, and how
 * long loading took. The loader gives back the file pages of every tensor it
 * copies (matrices repacked for the kernels, f32 norms and biases), so the
 * weights are held once: the copies plus the pages of the file mapping that
 * are still read (token embedding rows looked up, matrices read in place).
 * Measured at the call: file_bytes grows as the mapping is read again. */
typedef struct specdec_model_memory {
    uint64_t packed_bytes; /* the matmul kernels' repacked copies (heap; a tied output head once) */
    uint64_t f32_bytes;    /* f32 copies of norm weights, biases and the like (heap) */
    uint64_t file_bytes;   /* pages of the file mapping resident in this process (0 when !file_measured) */
    bool file_measured;    /* false: /proc/self/pagemap could not be read, file_bytes unknown */
    double load_ms;        /* wall time of specdec_model_load (reading, tokenizer, repacking) */
} specdec_model_memory;

/* Fills *out (the caller's struct). Weights resident = packed_bytes +
 * f32_bytes + file_bytes. A draft model is a model of its own: ask it too.
 * Errors: SPECDEC_ERR_ARG (model or out NULL; *out unchanged). */
SPECDEC_API specdec_status specdec_model_memory_get(const specdec_model *model, specdec_model_memory *out,
                                                    specdec_error *err);
/* GGUF `tokenizer.chat_template` (the Jinja source, NUL-terminated copy), or
 * NULL when the file has none. */
SPECDEC_API const char *specdec_model_chat_template(const specdec_model *model);
/* Any string-valued GGUF metadata key (e.g. "tokenizer.chat_template.tool_use",
 * "general.license") as a NUL-terminated copy made on first use and kept with
 * the model; NULL when absent or not a string. Thread-safe. */
SPECDEC_API const char *specdec_model_meta_str(const specdec_model *model, const char *key);

/* Special tokens: -1 when the model has none. bos: beginning of sequence;
 * eos: end of sequence (tokenizer.ggml.eos_token_id); eot: end of turn
 * (<|im_end|>, <|eot_id|>). */
SPECDEC_API specdec_token specdec_token_bos(const specdec_model *model);
SPECDEC_API specdec_token specdec_token_eos(const specdec_model *model);
SPECDEC_API specdec_token specdec_token_eot(const specdec_model *model);
/* True for tokens that end generation, as llama.cpp counts them: eos, eot,
 * eom, and the texts <|im_end|>, <|endoftext|>, <|eot_id|>, <|end_of_text|>,
 * fim pad/repo/sep. False for ids out of range. */
SPECDEC_API bool specdec_token_is_eog(const specdec_model *model, specdec_token token);
/* True for control and unknown tokens (they print nothing unless
 * show_special). False for ids out of range. */
SPECDEC_API bool specdec_token_is_control(const specdec_model *model, specdec_token token);
/* The vocabulary entry of a token as stored in the GGUF (not decoded: "Ġthe"
 * for byte-level BPE), NUL-terminated; NULL for an id out of range. */
SPECDEC_API const char *specdec_token_text(const specdec_model *model, specdec_token token);

/* ------------------------------------------------------------------------ */
/* Tokenizer                                                                 */

/* Encodes len bytes of text (llama.cpp's llama_tokenize for valid UTF-8;
 * invalid UTF-8 becomes byte tokens, never an error). add_special: add BOS /
 * EOS as the model asks (tokenizer.ggml.add_bos_token); parse_special: match
 * control-token texts such as "<|im_start|>" as single tokens (do this only
 * for trusted text: a chat template's output, not raw user input). On
 * success *tokens is malloc'd (free with specdec_free; non-NULL even when
 * *n_tokens is 0). Errors: SPECDEC_ERR_NOMEM, SPECDEC_ERR_ARG (NULL
 * arguments). */
SPECDEC_API specdec_status specdec_tokenize(const specdec_model *model, const char *text, size_t len,
                                            bool add_special, bool parse_special, specdec_token **tokens,
                                            size_t *n_tokens, specdec_error *err);

/* Checks that the len bytes at text are valid UTF-8 as the Unicode Standard
 * defines it (Table 3-7: no overlong forms, no surrogates, nothing above
 * U+10FFFF, no sequence cut short at the end). Returns SPECDEC_OK, or
 * SPECDEC_ERR_ARG with the message "not valid UTF-8 at byte N" (N = offset of
 * the first bad sequence, from 0). specdec_tokenize takes any bytes (byte-level
 * BPE), so this is for front ends that refuse non-text input: `specdec
 * generate` checks its prompt with it and `specdec serve` its request bodies
 * (400), so both refuse the same bytes. text may be NULL when len is 0. */
SPECDEC_API specdec_status specdec_utf8_check(const char *text, size_t len, specdec_error *err);

/* Decodes n tokens into one malloc'd NUL-terminated buffer *text of *len
 * bytes (free with specdec_free). Byte-exact: detokenize(tokenize(x)) == x
 * for byte-level BPE (the bytes may be invalid UTF-8 if the tokens are an
 * arbitrary sequence). Control tokens give their text only if show_special.
 * Errors: SPECDEC_ERR_ARG (an id out of range, NULL arguments),
 * SPECDEC_ERR_NOMEM. */
SPECDEC_API specdec_status specdec_detokenize(const specdec_model *model, const specdec_token *tokens, size_t n,
                                              bool show_special, char **text, size_t *len, specdec_error *err);

/* The raw bytes of one token (may be part of a UTF-8 character) into
 * buf[cap]. Returns the byte count, which may exceed cap (then only cap bytes
 * were written: call again with more room), or -1 for an id out of range. */
SPECDEC_API int32_t specdec_token_to_piece(const specdec_model *model, specdec_token token, bool show_special,
                                           char *buf, size_t cap);

/* A tokenizer on its own: the tokenizer.ggml.* keys of any GGUF file, a
 * whole model or a vocab-only file (no tensors are read, no weights loaded),
 * for tools that only tokenize (`specdec tokenize`). Immutable once loaded:
 * its functions may be called from any number of threads at once. */
typedef struct specdec_vocab specdec_vocab;

/* Reads path's tokenizer. On success *out owns it (free with
 * specdec_vocab_free); on error *out is NULL. Errors: SPECDEC_ERR_IO (cannot
 * open or map; the message starts with the path), SPECDEC_ERR_FORMAT
 * (malformed GGUF, tokenizer keys missing or inconsistent),
 * SPECDEC_ERR_UNSUPPORTED (a tokenizer model other than BPE and SPM; the
 * message starts with the path), SPECDEC_ERR_NOMEM, SPECDEC_ERR_ARG (NULL
 * path or out). */
SPECDEC_API specdec_status specdec_vocab_load(const char *path, specdec_vocab **out, specdec_error *err);
SPECDEC_API void specdec_vocab_free(specdec_vocab *vocab);
/* As specdec_tokenize, with the file's tokenizer: the same ids a model
 * loaded from that file gives. */
SPECDEC_API specdec_status specdec_vocab_tokenize(const specdec_vocab *vocab, const char *text, size_t len,
                                                  bool add_special, bool parse_special, specdec_token **tokens,
                                                  size_t *n_tokens, specdec_error *err);
/* As specdec_token_to_piece: the raw bytes of one token into buf[cap];
 * returns the byte count (which may exceed cap: call again with more room),
 * or -1 for an id out of range. */
SPECDEC_API int32_t specdec_vocab_token_to_piece(const specdec_vocab *vocab, specdec_token token, bool show_special,
                                                 char *buf, size_t cap);

/* The byte count (1..4) of the complete, valid UTF-8 character at s[0..n),
 * or 0 when the bytes there are not one (an invalid byte, a truncated or
 * overlong sequence, a surrogate). n may be 0 (then 0). */
SPECDEC_API size_t specdec_utf8_char_len(const char *s, size_t n);

/* ------------------------------------------------------------------------ */
/* Contexts: a KV cache, the drafters' state, and the token history          */

typedef struct specdec_context specdec_context;


typedef struct specdec_context_params {
    int32_t n_ctx;     /* positions (prompt + generated); <= 0: min(n_ctx_train, 4096). Default 0 */
    int32_t n_batch;   /* most rows per forward (prefill chunks); <= 0: 64. Results do not depend on it. Default 0 */
    int32_t n_threads; /* <= 0: specdec_default_threads(). Results do not depend on it. Default 0 */
    /* An optional draft model for SPECDEC_SPEC_DRAFT / SPECDEC_SPEC_AUTO:
     * borrowed (must outlive the context), must share the target's vocabulary.
     * The context then holds a second KV cache of the same n_ctx for it.
     * Or an EAGLE-3 head (a model of architecture "eagle3", llama.cpp's format)
     * for SPECDEC_SPEC_EAGLE3 / SPECDEC_SPEC_AUTO: it must fit the target
     * (target_hidden_size = the target's n_embd, target_layers within its
     * layers, the same vocabulary); the context then keeps the target's
     * hidden states at the head's 3 layers for every position
     * (n_ctx * 3 * n_embd floats) and the head's own one-layer KV cache.
     * Or an MTP sidecar (a qwen35 file holding only the nextn block,
     * llama.cpp's "mtp_only" mtp-*.gguf) for SPECDEC_SPEC_MTP / _AUTO: its
     * block drafts as a target's own would (the same n_embd and vocabulary
     * as the target, else SPECDEC_ERR_ARG / SPECDEC_ERR_VOCAB).
     * Or a DFlash block drafter (architecture "dflash", llama.cpp's
     * draft-dflash layout) for SPECDEC_SPEC_DFLASH: it must fit the target
     * (n_embd, target_layers within its layers, the same vocabulary, else
     * SPECDEC_ERR_ARG naming what differs); the context then keeps the
     * target's hidden states at its target layers for every position
     * (n_ctx * n_ids * n_embd floats) and the draft's own KV cache. */
    const specdec_model *draft;
    /* A target with an MTP block (a qwen35 file's nextn layer) and no EAGLE-3
     * head: the context keeps the target's hidden after output_norm for every
     * position (n_ctx * n_embd floats) for SPECDEC_SPEC_MTP / _AUTO. */
    /* The element types of the target's KV cache rows (specdec_cache_type;
     * default F16 for both). Unlike llama.cpp, a quantized V needs no flash
     * attention switch: there is one attention path. A draft model's,
     * head's or MTP block's own cache stays f16 (llama.cpp sets those apart
     * too, --cache-type-k-draft). Errors at init: SPECDEC_ERR_ARG for a value
     * out of range or a head_dim not a multiple of the type's block. */
    specdec_cache_type cache_type_k, cache_type_v;
} specdec_context_params;

SPECDEC_API specdec_context_params specdec_context_default_params(void);

/* A context for generating with model (borrowed: it must outlive the
 * context). KV cache memory: 2 * n_layer * n_ctx * n_head_kv * head_dim * 2
 * bytes (f16), e.g. 448 MiB for Qwen3-0.6B at n_ctx 4096, plus the draft's.
 * params NULL = defaults. Errors: SPECDEC_ERR_VOCAB (the draft's vocabulary
 * differs; the message starts with the draft's path), SPECDEC_ERR_ARG (also
 * an EAGLE-3 head that does not fit the target, saying what differs, after
 * the head's path), SPECDEC_ERR_NOMEM. On error *out is NULL. */
SPECDEC_API specdec_status specdec_context_init(const specdec_model *model, const specdec_context_params *params,
                                                specdec_context **out, specdec_error *err);
SPECDEC_API void specdec_context_free(specdec_context *ctx);

/* The model a context was made for, and its draft model or NULL (borrowed). */
SPECDEC_API const specdec_model *specdec_context_model(const specdec_context *ctx);
SPECDEC_API const specdec_model *specdec_context_draft(const specdec_context *ctx);
/* The context size in positions, as resolved at init. */
SPECDEC_API int32_t specdec_context_n_ctx(const specdec_context *ctx);
/* The token history: the last generate's prompt followed by every token it
 * generated (n_prompt + stats.n_gen tokens). *n receives the count. Borrowed: valid until the next
 * generate, reset or free. The KV cache holds all of it but the last token
 * (which was never forwarded); the next generate reuses the longest common
 * prefix of the cached part and its prompt (prefix reuse). */
SPECDEC_API const specdec_token *specdec_context_tokens(const specdec_context *ctx, size_t *n);
/* Forgets the history: the next generate prefills its whole prompt. */
SPECDEC_API void specdec_context_reset(specdec_context *ctx);

/* ------------------------------------------------------------------------ */
/* Generation                                                                */

/* Who proposes the draft tokens the target verifies (ARCHITECTURE.md §3). */
typedef enum specdec_spec_mode {
    SPECDEC_SPEC_NONE = 0, /* plain decoding */
    SPECDEC_SPEC_NGRAM,    /* n-gram lookup in the prompt and the output so far (free) */
    SPECDEC_SPEC_DRAFT,    /* the context's draft model (SPECDEC_ERR_ARG without one) */
    SPECDEC_SPEC_AUTO,     /* n-gram where it matches, else the context's EAGLE-3 head or MTP sidecar, else
                              the target's MTP block if it has one, else the context's draft model; with
                              params.suffix_cache, suffix drafting is tried before the n-gram */
    SPECDEC_SPEC_EAGLE3,   /* the context's EAGLE-3 head (SPECDEC_ERR_ARG without one) */
    SPECDEC_SPEC_MTP,      /* the context's MTP sidecar, else the target's own MTP block (qwen35 nextn;
                              SPECDEC_ERR_ARG without either) */
    SPECDEC_SPEC_SUFFIX,   /* suffix drafting (SuffixDecoding): the most frequent continuation in the context
                              and in params.suffix_cache, the outputs of earlier requests (free) */
    SPECDEC_SPEC_GRAMMAR,  /* only the text params.grammar forces (its tokenization), no other drafter (free;
                              SPECDEC_ERR_ARG without a grammar). AUTO drafts forced text too, first. */
    SPECDEC_SPEC_DFLASH,   /* the context's DFlash block drafter (SPECDEC_ERR_ARG without one): one draft forward
                              proposes a whole block. AUTO does not use it (n-gram, or the target's MTP block) */
} specdec_spec_mode;

/* "none", "ngram", "draft", "auto", "eagle3", "mtp", "suffix", "grammar", "dflash"; NULL for a value outside the enum. */
SPECDEC_API const char *specdec_spec_mode_name(specdec_spec_mode mode);
/* The mode named name (as above) into *mode; false if no mode has that name. */
SPECDEC_API bool specdec_spec_mode_parse(const char *name, specdec_spec_mode *mode);

/* How a hybrid model (recurrent layers: qwen35's Gated DeltaNet) rolls its
 * state back past rejected draft tokens (ARCHITECTURE.md §4). The KV cache rolls
 * back by a counter; the recurrent state cannot, so one of: */
typedef enum specdec_rollback {
    SPECDEC_ROLLBACK_AUTO = 0,   /* replay: about as fast as checkpoint (`specdec bench --tables rollback`),
                                    a tenth of its memory */
    SPECDEC_ROLLBACK_CHECKPOINT, /* keep the state after every verified position; roll back by choosing one */
    SPECDEC_ROLLBACK_REPLAY,     /* keep a snapshot and each position's inputs to the recurrence; roll back by
                                    restoring it and re-running the recurrence of the kept positions (no weights read) */
    SPECDEC_ROLLBACK_REDECODE,   /* keep a snapshot; roll back by restoring it and running the forward again over
                                    the kept tokens (llama.cpp's way) */
    SPECDEC_ROLLBACK_WINDOW,     /* the source design (ARCHITECTURE.md §4): the state holds only a committed prefix; every
                                    round feeds exactly hybrid_window tokens (the committed tail, a0, drafts, pad)
                                    and restores a snapshot unless all of them were committed */
} specdec_rollback;

/* "auto", "checkpoint", "replay", "redecode", "window"; NULL outside the enum. */
SPECDEC_API const char *specdec_rollback_name(specdec_rollback r);
/* The discipline named name into *r; false if none has that name. */
SPECDEC_API bool specdec_rollback_parse(const char *name, specdec_rollback *r);

#define SPECDEC_MAX_STOP 8 /* stop strings per generate call */

/* ------------------------------------------------------------------------ */
/* Grammars: constrained decoding (docs/GRAMMAR.md)                          */

/* A grammar compiled for one model's vocabulary: generated text is kept to
 * the grammar's language, token by token, with speculation on or off and the
 * same bytes either way (docs/GRAMMAR.md). Compile once, hand to any number of generate calls (also at
 * once, from a batch's slots: it is thread-safe); its token masks and parse
 * states are cached inside it and shared by those calls, so later requests
 * with the same grammar are faster. Free it after the last call that uses it. */
typedef struct specdec_grammar specdec_grammar;

/* Compiles gbnf (len bytes of llama.cpp's GBNF dialect: rules `name ::=
 * ...`, "literals" with \x \u \U escapes, [classes] and [^negated], `.`,
 * ( ) | * + ? {m} {m,} {m,n}, # comments, token references <[id]>, <text>,
 * !<[id]>) with start rule root (NULL = "root") for model's vocabulary
 * (borrowed: the model must outlive the grammar). *out is the caller's to free.
 * Errors: SPECDEC_ERR_FORMAT with "grammar LINE:COL: what" (or naming the
 * rule: undefined, defined twice, left-recursive), SPECDEC_ERR_UNSUPPORTED
 * (a size bound: rules, nesting, expansion), SPECDEC_ERR_ARG (NULL
 * arguments), SPECDEC_ERR_NOMEM; *out is then NULL. */
SPECDEC_API specdec_status specdec_grammar_init(const specdec_model *model, const char *gbnf, size_t len,
                                                const char *root, specdec_grammar **out, specdec_error *err);

/* A grammar from a JSON Schema (schema_json, len bytes): the converter of
 * docs/JSON_SCHEMA.md, then specdec_grammar_init. strict: additionalProperties
 * defaults to false (OpenAI's strict mode), else JSON Schema's true.
 * any_object: ignore the schema (may be NULL) and accept any JSON object
 * (response_format {"type": "json_object"}). Errors: as specdec_grammar_init,
 * plus SPECDEC_ERR_FORMAT / SPECDEC_ERR_UNSUPPORTED naming the schema keyword
 * refused. */
SPECDEC_API specdec_status specdec_grammar_from_json_schema(const specdec_model *model, const char *schema_json,
                                                            size_t len, bool strict, bool any_object,
                                                            specdec_grammar **out, specdec_error *err);
/* The GBNF text a JSON Schema becomes (the converter specdec_grammar_from_json_schema
 * uses; start rule "root"), to read, or to combine with rules of one's own
 * (e.g. a reasoning section before it, docs/GRAMMAR.md) before
 * specdec_grammar_init. *gbnf (NUL-terminated, *gbnf_len bytes) is the
 * caller's to free with specdec_free. Errors: as specdec_grammar_from_json_schema
 * (no model needed: nothing is compiled). */
SPECDEC_API specdec_status specdec_json_schema_to_gbnf(const char *schema_json, size_t len, bool strict,
                                                       bool any_object, char **gbnf, size_t *gbnf_len,
                                                       specdec_error *err);
/* NULL-safe. No generate call may still use it. */
SPECDEC_API void specdec_grammar_free(specdec_grammar *grammar);
/* True when the len bytes of text are a complete sentence of the grammar
 * (token references never match text). False for NULL. */
SPECDEC_API bool specdec_grammar_accepts(const specdec_grammar *grammar, const char *text, size_t len);

/* ------------------------------------------------------------------------ */
/* Suffix memory: the outputs of earlier requests, for suffix drafting       */

/* SuffixDecoding (Oliaro et al., arXiv:2411.04975; Arctic Inference, vLLM's
 * `suffix` method) drafts from what earlier requests produced: agentic
 * workloads repeat tool calls, retry requests, rewrite files with small
 * edits. The memory is an object the caller keeps across generate calls (a
 * server for its lifetime) and hands to each through
 * specdec_generate_params.suffix_cache: with SPECDEC_SPEC_SUFFIX (and
 * SPECDEC_SPEC_AUTO, which then tries it before the n-gram lookup) it drafts
 * from it, and every call that has it adds its generated tokens to it
 * (whatever the spec mode). It holds whole outputs, at most max_tokens
 * tokens in all: a new output first evicts the least recently used ones (an
 * output is used when added and when a draft the target accepted came from
 * it); an output longer than max_tokens keeps its last max_tokens tokens.
 * Memory: at most specdec_suffix_cache_info.bytes_max (about 2.7 KiB per
 * token: a suffix trie of depth 24 with counts), usually far less. Drafting
 * never changes the output (lossless). Thread-safe: generate calls on
 * several contexts at once (a batch's slots) may share one memory; it locks
 * itself while one reads or adds. specdec_suffix_cache_free must not race
 * with them. */
typedef struct specdec_suffix_cache specdec_suffix_cache;

/* A new, empty memory of at most max_tokens tokens (1..2^31 - 1) into *out.
 * Free with specdec_suffix_cache_free. Errors: SPECDEC_ERR_ARG (max_tokens
 * out of range), SPECDEC_ERR_NOMEM; *out is then NULL. */
SPECDEC_API specdec_status specdec_suffix_cache_init(int64_t max_tokens, specdec_suffix_cache **out,
                                                     specdec_error *err);
/* NULL-safe. */
SPECDEC_API void specdec_suffix_cache_free(specdec_suffix_cache *cache);
/* Adds tokens[n] (copied) as one output, as a generate call does with its
 * own: to seed the memory with text the caller expects again. n = 0 adds
 * nothing. Errors: SPECDEC_ERR_ARG (NULL cache, NULL tokens with n > 0, a
 * negative token id), SPECDEC_ERR_NOMEM. A memory may serve models of
 * different vocabularies: a chain holding an id outside the target's is
 * never drafted. */
SPECDEC_API specdec_status specdec_suffix_cache_add(specdec_suffix_cache *cache, const specdec_token *tokens,
                                                    size_t n, specdec_error *err);

/* What a memory holds. */
typedef struct specdec_suffix_cache_info {
    int64_t max_tokens;         /* the budget given at init */
    int64_t n_tokens;           /* tokens held now (<= max_tokens) */
    int64_t n_outputs;          /* outputs held now */
    int64_t n_added, n_evicted; /* outputs added and evicted since init */
    uint64_t bytes;             /* bytes allocated now (trie, token copies, lists) */
    uint64_t bytes_max;         /* the most bytes it can ever hold at this budget */
} specdec_suffix_cache_info;

/* Fills *info (zeros for a NULL cache). */
SPECDEC_API void specdec_suffix_cache_get_info(const specdec_suffix_cache *cache, specdec_suffix_cache_info *info);

typedef struct specdec_generate_params {
    /* Tokens to generate at most. < 0: until an end-of-generation token or a
     * full context. Default 128. */
    int32_t n_predict;
    specdec_spec_mode spec; /* default SPECDEC_SPEC_AUTO */
    int32_t draft_max;      /* K: most draft tokens per verify round, 1..64. Default 8 */
    /* Every round drafts draft_max tokens. Default false: K adapts (starts at
     * 1, doubles on full acceptance, halves on none; the gate cuts it to the
     * best predicted K). */
    bool fixed_k;
    int32_t ngram_min;      /* shortest n-gram looked up, 1..8. Default 1 */
    int32_t ngram_max;      /* longest n-gram looked up, ngram_min..8. Default 3 */
    /* G: zero-accept rounds in a row that close the hit-rate gate (drafting
     * stops until shadow probes say it pays again; ARCHITECTURE.md §3). 0 = never
     * close. Default 4. */
    int32_t gate;
    /* Sampling. temperature <= 0 is greedy (argmax, the lowest id on ties).
     * Otherwise softmax(logits / temperature), then top-k, top-p, min-p,
     * renormalised, and a draw whose noise is a function of (seed, position)
     * only (an exponential race, src/decode/sampler.h sd_race_pick): drafts
     * that are deterministic (n-gram; a draft model or head proposing its
     * coupled draw: the race over its own distribution with that position's
     * noise, src/decode/drafter.h `couple`) are accepted iff
     * they equal the target's own pick at their position, so speculative
     * output is byte-identical to plain sampling with the same seed
     * (ARCHITECTURE.md §6). */
    float temperature; /* default 0, at most 100 */
    int32_t top_k;     /* 0 = off (default) */
    float top_p;       /* (0, 1]; 1 = off (default) */
    float min_p;       /* [0, 1); 0 = off (default) */
    uint64_t seed;     /* generator seed, default 42; the same seed gives the same text */
    /* At temperature > 0 the draft model samples its proposals and they are
     * verified by rejection sampling (min(1, p/q)): the same distribution as
     * plain sampling, not the same bytes. Default false (coupled proposals). */
    bool draft_sample;
    /* Stop strings (up to SPECDEC_MAX_STOP, each non-empty, borrowed for the
     * call): generation stops when the output text contains one, and the text
     * from the match on is never delivered. Text that could be the start of a
     * stop string is held back until it is known not to be, so a stop string
     * is never streamed partially (OpenAI's `stop` semantics). Default none. */
    const char *const *stop;
    int32_t n_stop;
    /* Stop after an end-of-generation token (specdec_token_is_eog; the token
     * counts in n_gen, its text is not delivered). Default true. */
    bool stop_at_eog;
    /* After generating, decode the same prompt again plainly (no drafter) and
     * compare token by token; the result goes to the stats (lossless_*).
     * At temperature > 0 the plain run samples with the same seed (not with
     * draft_sample: SPECDEC_ERR_ARG). Costs a second generation. Default false. */
    bool check_lossless;
    /* Hybrid models only (ignored for dense ones): the rollback discipline
     * of the target and of a hybrid draft model. Output is the same with
     * every one; only speed and memory differ. Default SPECDEC_ROLLBACK_AUTO. */
    specdec_rollback hybrid_rollback;
    /* SPECDEC_ROLLBACK_WINDOW: the static window S, 2..64. Default 9. */
    int32_t hybrid_window;
    /* Token trees (ARCHITECTURE.md §7), dense targets only: 0 = off (default,
     * chains). N in 1..63: a drafter with candidates (draft model, EAGLE-3
     * head) drafts its chain of K plus up to tree_width - 1 next-best
     * siblings per chain token (level 1 first), at most N draft tokens, all
     * verified in one target forward under a tree attention mask; the longest
     * root path the target agrees with is accepted (output as without).
     * n-gram rounds stay chains. A qwen35 target refuses a tree
     * (SPECDEC_ERR_ARG: one recurrent state cannot hold several branches). */
    int32_t tree_nodes;
    int32_t tree_width; /* candidates per level, 1..8. Default 2 */
    /* Polled on the generating thread, with generate's user pointer, before
     * each prefill chunk (n_batch tokens) and each decode step: return true to
     * stop there, as a cancel (SPECDEC_STOP_CANCELLED; a prefill cut short
     * generates nothing). It lets a server drop a request whose client went
     * away during a long prefill, when no piece is being delivered, or do
     * other periodic work. NULL (default) = never. */
    bool (*abort)(void *user);
    /* A suffix memory (specdec_suffix_cache_init), borrowed for the call, or
     * NULL (default): SPECDEC_SPEC_SUFFIX then drafts from the context alone.
     * The call adds its generated tokens to it. */
    specdec_suffix_cache *suffix_cache;
    /* Constrained decoding: NULL (default) = off. Else every generated token
     * keeps the text a prefix of a sentence of the grammar (borrowed for the
     * call; compiled for this context's model), end-of-generation tokens are
     * allowed only where the text is a complete sentence, and generation
     * also ends where the grammar allows no further token (stop reason
     * "eog" if it ended on one, else "grammar"). The prompt is not
     * constrained. Lossless as without (check_lossless compares with
     * constrained plain decoding). With SPECDEC_SPEC_AUTO or _GRAMMAR, text
     * the grammar forces is drafted as its tokenization. */
    const specdec_grammar *grammar;
    /* Repetition penalties and logit bias, applied to the logits of every
     * generated position before the grammar mask, temperature and the
     * filters (docs/LIBRARY.md "Penalties and logit bias"), in this order:
     * logit_bias; repeat_penalty (llama.cpp's: a token among the last
     * repeat_last_n tokens of prompt and output gets logit * r where
     * logit <= 0, logit / r elsewhere); then OpenAI's frequency and
     * presence penalties (logit -= c * frequency_penalty + (c > 0) *
     * presence_penalty, c = the token's count in the output so far; the
     * prompt does not count). Speculation stays lossless: each verify row is
     * penalised with the counts along its draft path, exactly as plain
     * decoding at that position. */
    float presence_penalty;  /* [-2, 2]; 0 = off (default) */
    float frequency_penalty; /* [-2, 2]; 0 = off (default) */
    float repeat_penalty;    /* (0, 10]; 1 = off (default) */
    int32_t repeat_last_n;   /* the repeat penalty's window: 0 = off, -1 = all. Default 64 */
    /* n_logit_bias entries (borrowed for the call): bias added to the
     * token's logit, in [-100, 100]; -100 bans the token (its logit becomes
     * -inf), as OpenAI's logit_bias. A token listed twice gets both. Token
     * ids must be < the vocabulary size. Default none. */
    const struct specdec_logit_bias *logit_bias;
    int32_t n_logit_bias;
    /* Log-probabilities: -1 = off (default); 0..SPECDEC_MAX_TOP_LOGPROBS =
     * on, with that many alternatives per token. Each generated token's
     * log-probability is log softmax of the logits it was picked from after
     * the logit bias, the penalties and the grammar mask, before
     * temperature and top-k / top-p / min-p (so the same at any
     * temperature); they arrive with the pieces (specdec_piece.logprobs) and
     * are bitwise the same with speculation on and off (taken from the
     * verify rows, which equal single steps). docs/LIBRARY.md says why. */
    int32_t logprobs;
} specdec_generate_params;

#define SPECDEC_MAX_TOP_LOGPROBS 20

/* A generated token's log-probability and the most likely tokens of the
 * same position (specdec_generate_params.logprobs). */
typedef struct specdec_token_logprob {
    specdec_token token;
    float logprob; /* natural log, <= 0; never -inf for a generated token */
    int32_t n_top; /* alternatives below: min(asked, tokens not refused by bias or grammar) */
    specdec_token top_token[SPECDEC_MAX_TOP_LOGPROBS]; /* most likely first, ties lower id first */
    float top_logprob[SPECDEC_MAX_TOP_LOGPROBS];
} specdec_token_logprob;

/* One entry of specdec_generate_params.logit_bias. */
typedef struct specdec_logit_bias {
    specdec_token token;
    float bias;
} specdec_logit_bias;

SPECDEC_API specdec_generate_params specdec_generate_default_params(void);

/* Checks params against ctx without generating: the spec mode fits what the
 * context holds (draft needs a draft model; eagle3 an EAGLE-3 head; mtp a
 * target with an MTP block or an MTP sidecar), and every field is in range —
 * the same checks specdec_generate makes first. A server calls it once at
 * startup with its defaults, so a mode that can never run is refused there
 * rather than on every request. Nothing is allocated or changed.
 * Returns SPECDEC_OK, or SPECDEC_ERR_ARG with err->message saying which. */
SPECDEC_API specdec_status specdec_generate_params_check(const specdec_context *ctx,
                                                         const specdec_generate_params *params, specdec_error *err);

/* Allocates now the target's hidden-state rows that a call with params
 * drafts from (an EAGLE-3 head's target layers, the MTP block's input, a
 * DFlash drafter's layers: n_ctx rows of 4-byte floats, n_embd per layer),
 * as that call's start would; so a server can make them resident with the
 * rest before its first request (specdec_batch_commit_memory commits them
 * when allocated). Nothing for params that draft without a head. The rows
 * stay while calls draft with that head; a call that drafts without one
 * still frees them (they cost a copy in every forward). Call while no
 * generation runs on ctx. Errors: SPECDEC_ERR_ARG (NULL ctx or params, a
 * mode check of specdec_generate_params_check), SPECDEC_ERR_NOMEM. */
SPECDEC_API specdec_status specdec_context_reserve_hidden(specdec_context *ctx, const specdec_generate_params *params,
                                                          specdec_error *err);

/* Why generation ended. */
typedef enum specdec_stop_reason {
    SPECDEC_STOP_LENGTH = 0, /* n_predict tokens */
    SPECDEC_STOP_EOG,        /* an end-of-generation token */
    SPECDEC_STOP_STRING,     /* a stop string (stats.stop_index says which) */
    SPECDEC_STOP_CANCELLED,  /* the piece callback returned false */
    SPECDEC_STOP_CONTEXT,    /* the context is full (n_ctx positions) */
    SPECDEC_STOP_GRAMMAR,    /* the grammar allows no further token (params.grammar) */
} specdec_stop_reason;

/* "length", "eog", "stop", "cancelled", "context", "grammar". */
SPECDEC_API const char *specdec_stop_reason_name(specdec_stop_reason reason);

#define SPECDEC_GATE_N 17 /* specdec_stats.gate_cv / gate_accept: indices 1..16 */

/* What one generate call did. Counters are for this call only. */
typedef struct specdec_stats {
    int32_t n_prompt; /* prompt tokens */
    int32_t n_cached; /* of those, reused from the context's KV cache: only n_prompt - n_cached were prefilled */
    int32_t n_gen;    /* generated tokens (an ending EOG token included, and tokens past a stop string) */
    double t_prefill_ms; /* prefill of the new prompt tokens (and the draft model's prompt) */
    double t_decode_ms;  /* everything after the prefill: the first token comes from the prefill */
    /* Speculation (vLLM's definitions, as llama.cpp's server reports them):
     * n_rounds verify rounds (target forwards that checked >= 1 draft token)
     * checked n_drafted draft tokens, of which n_accepted were accepted.
     * Acceptance rate α = n_accepted / n_drafted; accepted per round =
     * n_accepted / n_rounds; mean acceptance length = 1 + that. */
    int64_t n_drafted, n_accepted, n_rounds;
    int64_t n_target_forwards; /* target forwards after the prefill (verify rounds + plain steps) */
    int64_t n_draft_forwards;  /* forwards of the draft model (0 without one) */
    /* The hit-rate gate: plain steps taken while it was closed, the shadow
     * probes made meanwhile and how many would have hit, and its state at the
     * end (true = drafting; false also when no drafter ran). */
    int64_t gate_closed_steps, n_probes, n_probe_hits;
    bool gate_open;
    /* The drafter that ran: "none", "ngram", "draft", "eagle3", "mtp", "suffix", "auto (ngram)",
     * "auto (ngram + draft)", "auto (ngram + eagle3)", "auto (ngram + mtp)", "auto (ngram + dflash)",
     * "dflash", and with a suffix
     * memory "auto (suffix + ngram)", "auto (suffix + ngram + draft)", ... Static storage. */
    const char *drafter;
    specdec_stop_reason stop_reason;
    int32_t stop_index; /* the stop string that matched (index into params.stop), else -1 */
    /* check_lossless: whether the check ran, its verdict (the speculative
     * tokens equal the plain run's: greedy, or sampling with the same seed), the first differing position
     * (= n_gen when equal), and the plain run's token count and decode time. */
    bool lossless_checked, lossless;
    int32_t lossless_first_diff, plain_n_gen;
    double plain_decode_ms;
    /* Hybrid models: the rollback discipline that ran ("checkpoint", "replay",
     * "redecode"; "none" for a dense target; static storage), the target's
     * rollbacks (verify rounds that dropped positions), the time spent in them
     * and in the snapshots they need (ms), the recurrent-state bytes copied
     * (snapshots, restores, checkpoint captures), the tokens forwarded a second
     * time (redecode, and any fallback), and the bytes the discipline holds
     * besides the state (snapshot and capture ring). */
    const char *rollback;
    int64_t n_rollbacks, n_redecoded;
    double rollback_ms;
    uint64_t rollback_bytes_moved, rollback_bytes_held;
    /* Constrained decoding (params.grammar; 0 without): the wall time spent
     * constraining — token masks, masked argmaxes, the draft-path grammar
     * states, sampled drafts' masked q — in all and inside verify rounds
     * (ms; measured around each call, docs/GRAMMAR.md), and the full masks
     * computed (a vocabulary-trie walk each; the rest came from the
     * per-state cache or were not needed). */
    double grammar_ms, grammar_rounds_ms;
    int64_t n_grammar_masks;
    /* The speedup model as the call ended (docs/ARCHITECTURE.md §2; the
     * hit-rate gate's measured inputs): gate_k, the draft length it would
     * pick next (0: drafting stopped, or no drafter); gate_r, the drafter's
     * cost per drafted token in target decode steps (per block forward for
     * a block drafter, DFlash); gate_cv[S], the verify cost c_v(S) of S rows
     * relative to one, for S = 1..SPECDEC_GATE_N - 1 (measured where the
     * call ran S rows, else extrapolated; 0 unknown); gate_accept[i], a block
     * drafter's acceptance at block position i over the whole call (the share
     * of its i-th drafts that matched the committed text where drafts 1..i-1
     * did, verified or not; 0 for other drafters). Index 0 is unused. */
    int32_t gate_k;
    double gate_r;
    double gate_cv[SPECDEC_GATE_N], gate_accept[SPECDEC_GATE_N];
} specdec_stats;

/* One piece of generated text for the streaming callback. */
typedef struct specdec_piece {
    /* Bytes that complete UTF-8 characters (never a split character;
     * bytes that can never form one arrive as U+FFFD), NUL-terminated,
     * len bytes. Borrowed for the duration of the call. */
    const char *text;
    size_t len;
    /* Generated tokens whose bytes end in this piece, and how many of them
     * were accepted draft tokens (for showing speculation's work). A token
     * with no text of its own (an incomplete character, a control token)
     * counts with the next piece, or is never reported if none follows. */
    int32_t n_tokens, n_drafted;
    /* Running counters of this call so far (n_gen, n_drafted, n_accepted,
     * n_rounds, drafter; times and the stop reason are final only in the
     * stats generate returns). Borrowed for the duration of the call. */
    const specdec_stats *stats;
    /* With params.logprobs >= 0: the log-probabilities of the n_tokens
     * tokens of this piece, in order (n_logprobs = n_tokens); else NULL, 0.
     * Borrowed for the duration of the call. */
    const specdec_token_logprob *logprobs;
    int32_t n_logprobs;
} specdec_piece;

/* Receives the text as it is generated, in order. Return true to go on,
 * false to stop generating (stop_reason SPECDEC_STOP_CANCELLED; tokens
 * already committed stay in the history). Must not call into the same
 * context. */
typedef bool (*specdec_piece_cb)(const specdec_piece *piece, void *user);

/* Generates after prompt[n_prompt] (n_prompt >= 1: the caller adds BOS when
 * the model wants it — specdec_tokenize with add_special does), calling
 * on_piece (may be NULL) with each piece of text, and fills *stats (may be
 * NULL). params NULL = defaults.
 *
 * Prefix reuse: the context keeps its KV cache and token history between
 * calls; the longest common prefix of that history and this prompt (at most
 * n_prompt - 1 tokens, since the last prompt token's logits are needed) is
 * kept and only the rest is prefilled (stats.n_cached). Results are bitwise
 * those of a fresh context (the forward is batch invariant: ARCHITECTURE.md §5).
 *
 * Lossless: with any spec mode the tokens are exactly those of plain decoding:
 * greedy at temperature 0 (ARCHITECTURE.md §1), plain sampling with the same
 * seed at temperature > 0 (§6), byte for byte. Only with draft_sample (a draft
 * model sampling its proposals) is the output plain sampling's in
 * distribution rather than in bytes.
 *
 * Errors: SPECDEC_ERR_CONTEXT (the prompt has more than n_ctx tokens),
 * SPECDEC_ERR_ARG (a parameter out of range, a token id out of range,
 * SPECDEC_SPEC_DRAFT without a draft model, check_lossless with draft_sample
 * at temperature > 0), SPECDEC_ERR_NOMEM. On error the history is cleared. A cancel is not an
 * error. */
SPECDEC_API specdec_status specdec_generate(specdec_context *ctx, const specdec_token *prompt, size_t n_prompt,
                                            const specdec_generate_params *params, specdec_piece_cb on_piece,
                                            void *user, specdec_stats *stats, specdec_error *err);

/* ------------------------------------------------------------------------ */
/* Saved states: a prefix cache over many conversations                      */

/* What a context's cache holds, saved: the tokens (the history's first
 * n_cached; the last generated token was never forwarded, so not included)
 * and the model's memory for them: the K/V rows of every attention layer,
 * the recurrent state of a hybrid (qwen35 Gated DeltaNet layers), the hidden
 * rows a draft head reads when the last generate kept them. A front end keeps
 * many of them (one per conversation turn) and restores the one sharing the
 * longest prefix with the next prompt: specdec serve's --cache-ram.
 * Dense models: any prefix of a state can be restored (its KV rows are
 * independent of what follows). Hybrids: a recurrent state exists only at
 * the position it was taken at, so a state restores only whole, and only
 * into a prompt that starts with all its tokens; to checkpoint the end of a
 * prompt, generate with n_predict 0 over all but its last token and save.
 * Results after a restore are bitwise those of a fresh context (the forward
 * is batch invariant, ARCHITECTURE.md §5). */
typedef struct specdec_state specdec_state;

/* Bytes specdec_state_save would allocate for ctx now (0 for NULL): about
 * n_cached * (2 * n_layer_attn * n_head_kv * head_dim * 2 + hidden rows) for an
 * f16 cache (a quantized cache type's rows take its bytes per element)
 * plus the recurrent state (specdec_model_layout.recurrent_bytes). */
SPECDEC_API size_t specdec_state_size(const specdec_context *ctx);
/* Saves ctx's cached tokens and memory into a new state (*out, owned by the
 * caller: specdec_state_free). ctx is unchanged. A state may be restored into
 * any context of the same loaded model (the same specdec_model) and the same
 * KV cache types (its rows are kept as stored, quantized or not). Errors:
 * SPECDEC_ERR_ARG (NULL argument), SPECDEC_ERR_NOMEM; *out is then NULL. */
SPECDEC_API specdec_status specdec_state_save(const specdec_context *ctx, specdec_state **out, specdec_error *err);
/* How many of st's tokens a generate of prompt[n_prompt] on ctx could reuse
 * after restoring st: the common prefix of st's tokens and the prompt, at most
 * n_prompt - 1 (the last prompt token is always forwarded); for a hybrid all
 * of st's tokens or 0. 0 when st was saved from another model or cache types or an argument
 * is NULL. */
SPECDEC_API size_t specdec_state_match(const specdec_context *ctx, const specdec_state *st,
                                       const specdec_token *prompt, size_t n_prompt);
/* Restores st's first n_keep tokens into ctx (st is not changed and may be
 * restored again): ctx's history becomes those tokens, the next generate
 * reuses them as it reuses its own prefix (stats.n_cached). n_keep <= the
 * state's token count; for a hybrid n_keep must be all of them. Errors:
 * SPECDEC_ERR_ARG (another model's state or cache types, n_keep out of range: nothing
 * changed), SPECDEC_ERR_NOMEM (ctx's history is then cleared). A state saved
 * with a draft head's hidden rows (EAGLE-3, MTP) restores them too; restored
 * into a context whose drafter needs rows the state lacks, the next generate
 * forwards the prefix again (stats.n_cached says what was reused). */
SPECDEC_API specdec_status specdec_state_restore(specdec_context *ctx, const specdec_state *st, size_t n_keep,
                                                 specdec_error *err);
/* The state's tokens (borrowed until specdec_state_free) and their count in *n. */
SPECDEC_API const specdec_token *specdec_state_tokens(const specdec_state *st, size_t *n);
/* Bytes the state holds (its tokens and memory): what a cache budget counts. */
SPECDEC_API size_t specdec_state_bytes(const specdec_state *st);
/* Frees a state from specdec_state_save; NULL is a no-op. */
SPECDEC_API void specdec_state_free(specdec_state *st);

/* ------------------------------------------------------------------------ */
/* Options: one table of the settings every front end takes from its user    */

/* What a front end (the generate, serve and chat commands, the HTTP server's
 * request fields) sets from its user's words: the generation parameters, the
 * context's size and threads, and the model files. */
typedef struct specdec_options {
    specdec_generate_params gen;
    int32_t n_ctx;     /* specdec_context_params.n_ctx; 0 = the model's, at most 4096 */
    int32_t n_threads; /* specdec_context_params.n_threads; 0 = online cores */
    const char *model_path, *draft_path; /* borrowed from the caller's strings; NULL = not given */
    specdec_cache_type cache_type_k, cache_type_v; /* specdec_context_params' (--cache-type-k / -v); default f16 */
    bool no_repack; /* specdec_model_params.no_repack (--no-repack) */
} specdec_options;

/* specdec_generate_default_params() in gen, 0 threads and context, no paths. */
SPECDEC_API specdec_options specdec_options_default(void);

typedef enum specdec_option_type {
    SPECDEC_OPTION_INT,    /* an integer in [lo, hi] */
    SPECDEC_OPTION_UINT64, /* an unsigned 64-bit integer (any: lo 0, hi 2^64 - 1) */
    SPECDEC_OPTION_FLOAT,  /* a decimal number between lo and hi (lo_open / hi_open: that end excluded) */
    SPECDEC_OPTION_NAME,   /* one of the names in `names` */
    SPECDEC_OPTION_PATH,   /* a file name (kept as the caller's pointer) */
    SPECDEC_OPTION_FLAG,   /* no value: present = on */
} specdec_option_type;

/* One option, described once for every front end. Static storage. */
typedef struct specdec_option {
    const char *flag;       /* the command-line spelling, "--temp" */
    const char *alias;      /* a short spelling ("-n" for --n-predict), or NULL */
    const char *http_field; /* the request field of the HTTP API that carries it (OpenAI / llama-server
                               name, "temperature"), or NULL when requests cannot set it */
    specdec_option_type type;
    double lo, hi;          /* numeric types: the range (for UINT64 hi is 2^64 - 1 rounded) */
    bool lo_open, hi_open;  /* FLOAT: lo / hi itself is outside the range */
    const char *names;      /* NAME: the accepted names, "none | ngram | draft | eagle3 | mtp | auto" */
    const char *value_name; /* the placeholder in help, "T"; NULL for a FLAG */
    const char *help;       /* what it does; may hold '\n' for continuation lines; no range, no default */
} specdec_option;

/* The table: *n receives its length. */
SPECDEC_API const specdec_option *specdec_option_table(size_t *n);
/* The option whose flag, alias or http_field is name; NULL for none. */
SPECDEC_API const specdec_option *specdec_option_find(const char *name);
/* The accepted values of opt as text into buf[cap] (snprintf's contract; the
 * return value is the length it wanted): "[1, 64]", "(0, 1]", the names, or
 * "" for PATH and FLAG. */
SPECDEC_API int specdec_option_range(const specdec_option *opt, char *buf, size_t cap);
/* The value opt has in o as text into buf[cap] (snprintf's contract): "8",
 * "0.8", "auto", a path or "none". */
SPECDEC_API int specdec_option_value(const specdec_options *o, const specdec_option *opt, char *buf, size_t cap);

/* Sets opt in o from the text value (NULL for a FLAG, which it turns on;
 * a PATH keeps the pointer). name is how the user spelled the option (the
 * flag, its alias or the HTTP field), for the message; NULL = opt->flag.
 * Errors (SPECDEC_ERR_ARG, o unchanged, one line naming the range):
 * "NAME VALUE: out of range [0, 100]", "NAME VALUE: not an integer in [1, 64]",
 * "NAME VALUE: not a number in (0, 1]", "NAME VALUE: not one of none | ngram
 * | ...", "NAME needs a value"; also for opt not from the table. */
SPECDEC_API specdec_status specdec_option_set(specdec_options *o, const specdec_option *opt, const char *name,
                                              const char *value, specdec_error *err);
/* What no single option can check: ngram_min <= ngram_max. SPECDEC_ERR_ARG
 * with the reason, else SPECDEC_OK. */
SPECDEC_API specdec_status specdec_options_check(const specdec_options *o, specdec_error *err);

/* The help of every option, one entry per option as a front end prints it
 * ("  -n, --n-predict N        tokens to generate ... [-1, 16777216], default 128"),
 * the defaults taken from defaults (NULL = specdec_options_default()), into
 * one malloc'd NUL-terminated *text of *len bytes (free with specdec_free).
 * Errors: SPECDEC_ERR_NOMEM, SPECDEC_ERR_ARG (text or len NULL). */
SPECDEC_API specdec_status specdec_options_help(const specdec_options *defaults, char **text, size_t *len,
                                                specdec_error *err);

/* ------------------------------------------------------------------------ */
/* Chat templates                                                            */

/* One message of a conversation. Strings are borrowed NUL-terminated UTF-8. */
typedef struct specdec_chat_message {
    const char *role;              /* "system", "user", "assistant" or "tool" */
    const char *content;           /* NULL is rendered as "" */
    /* An assistant turn's reasoning; NULL = none given (a <think>...</think>
     * block at the start of content is then taken as the reasoning, as the
     * Qwen templates do). */
    const char *reasoning_content;
    /* Tool calls (docs/TOOLS.md), NULL = absent; seen by the model's own
     * template (the Jinja interpreter), not by the built-in formatters:
     * tool_calls_json, an assistant turn's calls as a JSON array of OpenAI
     * tool calls whose function.arguments are JSON objects (not strings);
     * tool_call_id and name, a "tool" turn's answer to a call. */
    const char *tool_calls_json;
    const char *tool_call_id;
    const char *name;
} specdec_chat_message;

typedef struct specdec_chat_params {
    /* A built-in formatter by name (specdec_chat_builtin_templates), or NULL
     * (default) to recognise the model's tokenizer.chat_template by its text. */
    const char *template_name;
    bool add_generation_prompt; /* end with the opening of the assistant's turn. Default true */
    /* The template variable enable_thinking (Qwen3, Qwen3.5/3.6): -1 = not set
     * (the template's default: thinking on), 0 = false, 1 = true. Default -1 */
    int32_t enable_thinking;
    /* Qwen3.6's preserve_thinking: keep the reasoning of every past assistant
     * turn (the prompt of the next turn then extends this one's). Default false */
    bool preserve_thinking;
    /* The template variable tools: a JSON array of OpenAI tool definitions
     * ({"type": "function", "function": {"name", "description",
     * "parameters"}}), NUL-terminated; NULL = none. Default NULL */
    const char *tools_json;
} specdec_chat_params;

SPECDEC_API specdec_chat_params specdec_chat_default_params(void);

/* The built-in formatters, comma-separated: "chatml, qwen3, qwen35, qwen36,
 * llama3, llama31" (static storage). Each reproduces its family's Jinja
 * template byte for byte for text conversations (tested against Python's
 * jinja2 on the real template texts); tool definitions and tool calls are not
 * rendered. */
SPECDEC_API const char *specdec_chat_builtin_templates(void);

/* What renders model's conversations: the built-in formatter template_name
 * when non-NULL (it must be a built-in name: SPECDEC_ERR_ARG otherwise); else
 * the model's own tokenizer.chat_template run as written by the Jinja-subset
 * interpreter (docs/TEMPLATES.md) when it took the template at load; else
 * the built-in formatter recognised from the template's text
 * (SPECDEC_ERR_UNSUPPORTED, with a message naming --chat-template, when the
 * model has none or no formatter fits). *family receives the name (static
 * storage): "qwen35" for a built-in formatter, "qwen35+jinja" for the model's
 * template of a recognised family run by the interpreter, "jinja" when no
 * family is recognised (the reasoning splitter then treats all as content). */
SPECDEC_API specdec_status specdec_chat_template_resolve(const specdec_model *model, const char *template_name,
                                                         const char **family, specdec_error *err);
/* Why the interpreter refused the model's chat template at load ("jinja
 * LINE:COL: unsupported filter 'NAME'"), so a built-in formatter renders
 * instead; NULL when it took the template or the model has none. Borrowed
 * from the model. */
SPECDEC_API const char *specdec_chat_template_refusal(const specdec_model *model);

/* Renders messages[0..n) with the model's chat template (params NULL =
 * defaults) into one malloc'd NUL-terminated buffer *text of *len bytes (free
 * with specdec_free). The text has no BOS token: tokenize it with
 * specdec_tokenize(model, text, len, add_special = true, parse_special =
 * true, ...), which adds BOS when the model wants one (as llama.cpp strips
 * the template's own bos_token). Errors: those of
 * specdec_chat_template_resolve; SPECDEC_ERR_ARG where the template itself
 * raises (Qwen3.5: no user message, a system message not first, an unknown
 * role) or for a message without a role; SPECDEC_ERR_NOMEM. */
SPECDEC_API specdec_status specdec_chat_apply_template(const specdec_model *model,
                                                       const specdec_chat_message *messages, size_t n,
                                                       const specdec_chat_params *params, char **text, size_t *len,
                                                       specdec_error *err);

/* Renders messages[0..n) as specdec_chat_apply_template does and tokenizes the
 * prompt so that control tokens come only from the template: every byte that
 * came from a message (content, reasoning_content, role) is encoded as plain
 * text even where it spells a control token ("<|im_start|>", "<|eot_id|>"),
 * so a message cannot forge a role boundary. Text without such spellings
 * gives the same ids as specdec_tokenize(text, add_special = true,
 * parse_special = true). BOS is added when the model wants one. *tokens
 * (*n_tokens ids) is malloc'd, free with specdec_free; text and len, when
 * non-NULL, receive the rendered text as specdec_chat_apply_template gives
 * it (free with specdec_free). Errors: those of specdec_chat_apply_template. */
SPECDEC_API specdec_status specdec_chat_tokenize(const specdec_model *model, const specdec_chat_message *messages,
                                                 size_t n, const specdec_chat_params *params, char **text,
                                                 size_t *len, specdec_token **tokens, size_t *n_tokens,
                                                 specdec_error *err);

/* Splits a streamed answer into reasoning and content at <think>...</think>
 * (llama-server's reasoning_content): the text inside the block is
 * reasoning, the rest content; the tags and the blank lines around them are
 * dropped. Where the answer starts depends on the template and params: inside
 * the block for Qwen3.5/3.6 with thinking on (their prompt opens it), maybe
 * opening it for Qwen3, never for the other families (everything is content). */
typedef struct specdec_reasoning specdec_reasoning;

/* A splitter for answers to prompts rendered with (model, params). Errors:
 * those of specdec_chat_template_resolve, SPECDEC_ERR_NOMEM. *out is NULL on error. */
SPECDEC_API specdec_status specdec_reasoning_init(const specdec_model *model, const specdec_chat_params *params,
                                                  specdec_reasoning **out, specdec_error *err);
/* Feeds len bytes of the answer. *reasoning / *content receive the text this
 * call decided (n bytes each, possibly 0), borrowed until the next call on r.
 * Text that may be the start of a tag is held back until the next call. */
SPECDEC_API void specdec_reasoning_feed(specdec_reasoning *r, const char *text, size_t len, const char **reasoning,
                                        size_t *n_reasoning, const char **content, size_t *n_content);
/* The answer ended: returns what was held back, as feed does. */
SPECDEC_API void specdec_reasoning_flush(specdec_reasoning *r, const char **reasoning, size_t *n_reasoning,
                                         const char **content, size_t *n_content);
SPECDEC_API void specdec_reasoning_free(specdec_reasoning *r);

/* ------------------------------------------------------------------------ */
/* Tool calls (docs/TOOLS.md)                                                */

/* The syntax the model's chat template teaches for a call, as
 * specdec_chat_template_resolve picks the template: "xml" (Qwen3.5/3.6,
 * Qwen3-Coder: <tool_call><function=NAME><parameter=KEY>VALUE</parameter>
 * </function></tool_call>), "hermes" (Qwen3, Qwen2.5: <tool_call>{"name",
 * "arguments"}</tool_call>; also for a template that shows no syntax) or
 * "llama3" (Llama 3.1-3.3: the answer is {"name", "parameters"}). Read from
 * the template's text, else its family. Static storage; NULL when the
 * template does not resolve. */
SPECDEC_API const char *specdec_tool_syntax(const specdec_model *model, const specdec_chat_params *params);

typedef enum specdec_tool_choice {
    SPECDEC_TOOL_CHOICE_AUTO = 0, /* text or calls, as the model likes (OpenAI's default with tools) */
    SPECDEC_TOOL_CHOICE_NONE,     /* no calls */
    SPECDEC_TOOL_CHOICE_REQUIRED, /* one call or more, of any tool */
    SPECDEC_TOOL_CHOICE_NAMED,    /* calls of the one named tool */
} specdec_tool_choice;

/* The GBNF grammar (start rule "root") that keeps an answer to a prompt
 * rendered with (model, params) to tool calls in the template's syntax, each
 * call's arguments valid against its tool's parameters schema (the converter
 * of specdec_json_schema_to_gbnf; the tool's "strict" flag picks the
 * additionalProperties default). tools_json (len bytes) is the tools array.
 * REQUIRED and NAMED (name: the function) allow only calls after the
 * reasoning section (where the template starts one and <think> / </think>
 * are tokens); AUTO lets any text through and constrains from the call's
 * opening token on (only where <tool_call> is one token; Llama 3: answers
 * that start with "{"); parallel allows more calls after the first. Compile
 * it with specdec_grammar_init. *gbnf is NULL (and *gbnf_len 0) when there is
 * nothing to constrain (NONE, or AUTO without an opening token); otherwise
 * malloc'd and NUL-terminated, free with specdec_free. Errors:
 * SPECDEC_ERR_ARG (tools not an array of named functions, an unknown name),
 * SPECDEC_ERR_FORMAT / SPECDEC_ERR_UNSUPPORTED (a parameters schema the
 * converter refuses; the message names the tool and keyword), those of
 * specdec_chat_template_resolve, SPECDEC_ERR_NOMEM. */
SPECDEC_API specdec_status specdec_tool_grammar(const specdec_model *model, const specdec_chat_params *params,
                                                const char *tools_json, size_t len, specdec_tool_choice choice,
                                                const char *name, bool parallel, char **gbnf, size_t *gbnf_len,
                                                specdec_error *err);

/* Turns the content of an answer (after specdec_reasoning split off the
 * reasoning) into OpenAI tool calls, piece by piece as it streams. */
typedef struct specdec_tool_parser specdec_tool_parser;

typedef enum specdec_tool_event_kind {
    SPECDEC_TOOL_EVENT_CONTENT, /* text that is not part of a call */
    SPECDEC_TOOL_EVENT_START,   /* a call begins: text is its function's name */
    SPECDEC_TOOL_EVENT_ARGS,    /* a piece of its arguments; a call's pieces joined are a JSON object */
} specdec_tool_event_kind;

typedef struct specdec_tool_event {
    specdec_tool_event_kind kind;
    int32_t index;    /* the call's number in the answer, from 0 (START and ARGS) */
    const char *text; /* len bytes, not NUL-terminated; borrowed until the next feed / flush */
    size_t len;
} specdec_tool_event;

/* A parser for answers to prompts rendered with (model, params), in the
 * syntax specdec_tool_syntax names. tools_json (len bytes, may be NULL) is
 * the tools array: XML parameter values are typed by it (a property of type
 * string, or one the schema does not list, stays a JSON string; other values
 * are parsed as JSON when they parse to a kind the schema allows). Blanks
 * around calls are dropped; a call that never becomes one (JSON that does not
 * parse) is content. Errors: SPECDEC_ERR_ARG (tools_json not an array),
 * those of specdec_chat_template_resolve, SPECDEC_ERR_NOMEM; *out NULL then. */
SPECDEC_API specdec_status specdec_tool_parser_init(const specdec_model *model, const specdec_chat_params *params,
                                                    const char *tools_json, size_t len, specdec_tool_parser **out,
                                                    specdec_error *err);
/* Feeds len bytes of content; *events (*n_events) receive what they decided,
 * borrowed until the next call on p. Bytes that may begin a call tag are held
 * back until a later feed decides them. SPECDEC_ERR_NOMEM (the parser is then
 * unusable). */
SPECDEC_API specdec_status specdec_tool_parser_feed(specdec_tool_parser *p, const char *text, size_t len,
                                                    const specdec_tool_event **events, size_t *n_events);
/* The answer ended: the events of what was held back (a call cut off inside
 * its XML parameters is closed with what arrived). */
SPECDEC_API specdec_status specdec_tool_parser_flush(specdec_tool_parser *p, const specdec_tool_event **events,
                                                     size_t *n_events);
/* NULL-safe. */
SPECDEC_API void specdec_tool_parser_free(specdec_tool_parser *p);

/* ------------------------------------------------------------------------ */
/* CPU facts                                                                 */

/* The CPU features the kernels look for, space-separated, into buf (at most
 * cap bytes with the NUL), e.g. "avx2 fma f16c avx512f avx512bw avx512vl
 * avx512vnni os-zmm" ("os-ymm" / "os-zmm": the OS saves those registers,
 * read from XCR0); "" when none (machines other than x86-64 and AArch64).
 * Read with CPUID / the AArch64 hwcaps. */
SPECDEC_API void specdec_cpu_features(char *buf, size_t cap);
/* NULL, or the one-line reason the environment's SPECDEC_ISA cannot be
 * honoured (unknown name, or a family this machine cannot run); static
 * storage. specdec_model_load and specdec_context_init fail with it. */
SPECDEC_API const char *specdec_isa_env_error(void);

/* ------------------------------------------------------------------------ */
/* Model structure (what `specdec inspect` reports of a loaded model)        */

/* Layer counts and sizes read from the GGUF hyperparameters at load time.
 * Hybrid models (qwen35, qwen35moe) run Gated DeltaNet layers next to full
 * attention (arXiv 2412.06464); mixture-of-experts models (qwen3moe,
 * qwen35moe) route each token to n_expert_used of n_expert FFNs
 * (docs/MOE.md). Fields of features a model lacks are 0. */
typedef struct specdec_model_layout {
    int32_t n_layer;         /* trunk layers run */
    int32_t n_layer_all;     /* `{arch}.block_count`: the trunk plus n_nextn MTP blocks */
    int32_t n_nextn;         /* MTP blocks in the file, not run by the trunk */
    int32_t n_layer_gdn;     /* Gated DeltaNet layers among n_layer */
    int32_t ssm_conv_kernel; /* GDN causal convolution width K (the state keeps K - 1 columns) */
    int32_t ssm_conv_dim;    /* channels of that convolution */
    int32_t ssm_n_v_heads;   /* value heads H_v of the delta rule */
    int32_t ssm_state;       /* head dimension S: each head's state is S x S f32 */
    uint64_t recurrent_bytes; /* recurrent state of one sequence: sum over GDN layers of
                                 ((K - 1) * conv_dim + H_v * S * S) * 4 bytes */
    int32_t n_expert;        /* routed experts per layer */
    int32_t n_expert_used;   /* experts one token runs */
    int32_t n_ff_exp;        /* width of one expert's FFN */
    int32_t n_ff_shexp;      /* width of the sigmoid-gated shared expert (0: none) */
    uint64_t active_weight_bytes; /* weight bytes one decode step reads as stored: every layer
                                     matrix (of an MoE layer the router, n_expert_used experts,
                                     the shared expert) and the lm head once */
    uint64_t matrix_bytes;   /* the same with all n_expert experts of every MoE layer */
} specdec_model_layout;

/* Fills *out (the caller's struct). Errors: SPECDEC_ERR_ARG (model or out
 * NULL; *out unchanged). */
SPECDEC_API specdec_status specdec_model_layout_get(const specdec_model *model, specdec_model_layout *out,
                                                    specdec_error *err);
/* Layer kind i of the trunk (0 <= i < n_layer): 'G' Gated DeltaNet, 'A' full
 * attention; 0 when i is out of range. */
SPECDEC_API char specdec_model_layer_kind(const specdec_model *model, int32_t i);

/* ------------------------------------------------------------------------ */
/* GGUF files: reading keys and tensors                                      */

/* An open GGUF file (format: ggml's docs/gguf.md, versions 2 and 3), read
 * through a read-only mapping and validated at open: every string, array,
 * tensor shape and data range is checked against the file size. */
typedef struct specdec_gguf specdec_gguf;

/* Opens path. On success *out owns the mapping (close with
 * specdec_gguf_close); on error *out is NULL. Errors (the message starts with
 * the path and names the key or tensor and byte offset at fault):
 * SPECDEC_ERR_IO (cannot open or map), SPECDEC_ERR_FORMAT (bad magic or
 * structure, truncated, data past the end, duplicate names),
 * SPECDEC_ERR_UNSUPPORTED (GGUF v1, big-endian, unknown tensor type),
 * SPECDEC_ERR_NOMEM, SPECDEC_ERR_ARG (path or out NULL). */
SPECDEC_API specdec_status specdec_gguf_open(const char *path, specdec_gguf **out, specdec_error *err);
SPECDEC_API void specdec_gguf_close(specdec_gguf *g);

/* Header facts: the GGUF version, general.alignment (32 when absent), the
 * byte offset of the tensor data section from the start of the file, the
 * number of metadata pairs and of tensors. */
typedef struct specdec_gguf_header {
    uint32_t version, alignment;
    uint64_t data_offset;
    int64_t n_kv, n_tensors;
} specdec_gguf_header;
SPECDEC_API specdec_gguf_header specdec_gguf_header_get(const specdec_gguf *g);

/* Index of key, or -1. */
SPECDEC_API int64_t specdec_gguf_find_key(const specdec_gguf *g, const char *key);
/* Key of pair i (0 <= i < n_kv): NUL-terminated, owned by g; NULL out of range. */
SPECDEC_API const char *specdec_gguf_key(const specdec_gguf *g, int64_t i);
/* Type name of pair i: "u8" "i8" "u16" "i16" "u32" "i32" "u64" "i64" "f32"
 * "f64" "bool" "string" "array" (static storage; NULL out of range). For an
 * array, *elem_type (if not NULL) names the element type and *n (if not
 * NULL) counts the elements; for a scalar they are the type itself and 1. */
SPECDEC_API const char *specdec_gguf_kv_type(const specdec_gguf *g, int64_t i, const char **elem_type,
                                             uint64_t *n);

/* One value: a scalar, or element j of an array. */
typedef enum specdec_gguf_kind {
    SPECDEC_GGUF_UINT,   /* u8 u16 u32 u64: .u */
    SPECDEC_GGUF_INT,    /* i8 i16 i32 i64: .i */
    SPECDEC_GGUF_FLOAT,  /* f32 f64: .f */
    SPECDEC_GGUF_BOOL,   /* .b */
    SPECDEC_GGUF_STRING, /* .s, .len bytes into the mapping, not NUL-terminated, not checked UTF-8 */
} specdec_gguf_kind;
typedef struct specdec_gguf_value {
    specdec_gguf_kind kind;
    uint64_t u;
    int64_t i;
    double f;
    bool b;
    const char *s;
    uint64_t len;
} specdec_gguf_value;
/* Element j of pair i (j = 0 for a scalar) into *out. False when i or j is
 * out of range or the element is itself an array. Strings stay valid until
 * specdec_gguf_close. */
SPECDEC_API bool specdec_gguf_kv_value(const specdec_gguf *g, int64_t i, uint64_t j, specdec_gguf_value *out);
/* Pair i as one line of text into buf (at most cap bytes with the NUL, cut
 * there): integers in decimal, floats as %.9g, true/false, strings quoted
 * with control bytes escaped and cut after 80 bytes; an array as
 * "[TYPE x N]" then its first 8 elements (", ..." when there are more).
 * "" when i is out of range. */
SPECDEC_API void specdec_gguf_kv_format(const specdec_gguf *g, int64_t i, char *buf, size_t cap);

/* Tensor i of the file's tensor table. */
typedef struct specdec_gguf_tensor {
    const char *name;      /* NUL-terminated, at most 63 bytes, owned by g */
    const char *type_name; /* ggml type name, e.g. "f32", "q4_K" (static storage) */
    uint32_t type;         /* ggml type id (ggml.h's enum ggml_type) */
    uint32_t n_dims;       /* 1..4 */
    int64_t ne[4];         /* elements per dimension, ne[0] innermost (the row); unused = 1 */
    uint64_t offset;       /* byte offset in the data section */
    uint64_t nbytes;       /* exact byte size of the data */
} specdec_gguf_tensor;
/* Tensor i (0 <= i < n_tensors) into *out; false out of range. */
SPECDEC_API bool specdec_gguf_tensor_get(const specdec_gguf *g, int64_t i, specdec_gguf_tensor *out);

/* ------------------------------------------------------------------------ */
/* Quantizing a GGUF file                                                    */

/* The TYPE names specdec_quantize_file takes (case-insensitive):
 *   f32 f16 bf16 q8_0 q4_0 q4_1 q5_0 q5_1 q3_k q4_k q5_k q6_k: every matrix
 *     in that type;
 *   q2_k q3_k_s q3_k_m q3_k_l q4_k_m iq4_nl iq4_xs iq1_s iq1_m iq2_xxs
 *     iq2_xs iq2_s iq2_m iq3_xxs iq3_xs iq3_s iq3_m mxfp4_moe: llama.cpp's mixed file
 *     types of those names (the per-tensor rules of llama.cpp
 *     src/llama-quant.cpp, re-stated in numerics/quantize/quantize_mix.c:
 *     output.weight Q6_K or Q5_K, bigger types for some attn_v / ffn_down /
 *     attn_output matrices, experts MXFP4 in mxfp4_moe). The IQ types are
 *     meant to be used with an importance matrix (params.imatrix).
 * True when name is one of them; *canonical (if not NULL) gets its lower-case
 * spelling and *file_type (if not NULL) the LLAMA_FTYPE_* value (llama.cpp
 * include/llama.h) written to general.file_type. */
SPECDEC_API bool specdec_quantize_type_find(const char *name, const char **canonical, uint32_t *file_type);

typedef struct specdec_quantize_params {
    int32_t n_threads; /* conversion threads; <= 0: specdec_default_threads(). The output does not depend on it */
    bool pure;         /* a mixed type puts every matrix in its base type (llama-quantize --pure) */
    /* llama.cpp importance matrix (llama-imatrix's GGUF or legacy .dat), or
     * NULL. Its column means weight the error the IQ / MXFP4 / IQ4 searches
     * minimise; an entry whose size does not fit its tensor is an error. */
    const char *imatrix;
    /* llama-quantize --tensor-type: n_tensor_types strings "REGEX=TYPE",
     * REGEX a POSIX extended regular expression searched anywhere in the
     * tensor name, TYPE a ggml type name (q4_k, iq2_xxs, ...); the first
     * match wins and replaces the mix rule (the row fallback still applies). */
    const char *const *tensor_types;
    int32_t n_tensor_types;
    const char *token_embedding_type; /* ggml type name for token_embd.weight, or NULL */
    const char *output_tensor_type;   /* ggml type name for output.weight (and a tied token_embd), or NULL */
} specdec_quantize_params;

/* Called before tensor i (0-based) of n is converted: its name and its type
 * names before and after (ggml names, e.g. "f32" -> "q4_K"). */
typedef void (*specdec_quantize_progress)(void *user, int64_t i, int64_t n, const char *name, const char *from,
                                          const char *to);

typedef struct specdec_quantize_stats {
    int64_t n_tensors, n_converted; /* tensors written; those whose type changed */
    uint64_t bytes_in, bytes_out;   /* tensor data bytes read and written */
    int64_t n_fallback;             /* matrices whose row length forced another type than chosen */
    char fallbacks[1024];           /* the first of them, "name (row N) from->to, ..." */
} specdec_quantize_stats;

/* Rewrites the GGUF model in_path as out_path with its weight matrices in
 * type (a name of specdec_quantize_type_find). Metadata is copied in order,
 * general.file_type set to type's LLAMA_FTYPE and
 * general.quantization_version to 2 (added when absent). Matrices are 2-D or
 * larger tensors named "*weight" other than norms, ssm_conv1d, ffn_gate_inp,
 * pos_embd and token_types; every other tensor keeps its type, widened to f32
 * when it is not f32. Rows a 256-block type does not divide fall back as
 * llama.cpp does (q2_k/q3_k -> q4_0, q4_k -> q5_0, q5_k -> q5_1, q6_k ->
 * q8_0, iq1/iq2/iq3/iq4_xs -> iq4_nl), then to f16 if 32 does not divide
 * them; stats names them. Each row is dequantized to f32 and quantized with
 * the reference row quantizers, whose bytes equal ggml's; the IQ grid types
 * (IQ1_S, IQ1_M, IQ2_*, IQ3_*)
 * and MXFP4 (and IQ4_NL / IQ4_XS with an importance matrix) use our own
 * weighted search (numerics/quantize/iq_quantize.c), whose bytes differ
 * from llama-quantize's while the weighted error is compared in
 * bench/RESULTS.md. The file is written to out_path.tmp and renamed:
 * a failure never leaves a partial out_path. params NULL = defaults
 * (specdec_quantize_params zeroed); progress may be NULL; *stats (if not
 * NULL) is filled on success.
 * Errors: SPECDEC_ERR_ARG (a NULL path, an unknown type, a bad
 * tensor_types string or type name), SPECDEC_ERR_IO, SPECDEC_ERR_FORMAT
 * (malformed input or importance matrix), SPECDEC_ERR_UNSUPPORTED (a tensor
 * type that cannot be read or written), SPECDEC_ERR_NOMEM. */
SPECDEC_API specdec_status specdec_quantize_file(const char *in_path, const char *out_path, const char *type,
                                                 const specdec_quantize_params *params,
                                                 specdec_quantize_progress progress, void *user,
                                                 specdec_quantize_stats *stats, specdec_error *err);

/* ------------------------------------------------------------------------ */
/* Batched serving: several requests over one model, one forward per step    */

/* A batch of n_slots request slots over one model (docs/BATCHING.md). Each
 * slot is a context of its own (KV cache, recurrent state, prefix reuse of
 * the slot's previous request, its drafter); specdec_batch_step runs ONE
 * forward over the rows every active request needs next — a prefill chunk,
 * a decode token, or a verify window of K + 1 — so the weights are streamed
 * once per step for all of them (continuous batching: a request added
 * between steps joins at the next one, a finished or cancelled one leaves).
 * Each request runs the decode loop of specdec_generate (drafting, the gate,
 * the lossless verify) unchanged, and the forward is batch invariant per
 * sequence, so its tokens are bitwise those specdec_generate gives for the
 * same prompt and params on a context of its own, at temperature 0 and per
 * seed above 0 (with deterministic drafts: draft_sample off), whatever else
 * shares the steps. Speculation under load: each request's gate measures its
 * share of the steps it takes part in (the step's time at its batch size),
 * so drafting turns itself down when extra rows stop being free.
 * Not for batched requests: token trees (tree_nodes > 0) and params.abort
 * (use specdec_batch_cancel). params.suffix_cache may be one memory shared
 * by all the slots (it locks itself while a slot drafts from or adds to it).
 * A slot's context can take a saved state before its request (a prefix
 * cache: specdec_batch_next_slot, specdec_batch_slot_is_free, specdec_batch_slot_context,
 * specdec_batch_add_at). A batch is driven from one thread: add, step,
 * cancel and free must not be called concurrently; the callbacks run inside
 * specdec_batch_step (and specdec_batch_free) on that thread, and may call
 * specdec_batch_add and specdec_batch_cancel, not step or free. */
typedef struct specdec_batch specdec_batch;

typedef struct specdec_batch_params {
    int32_t n_slots;             /* requests served at once, 1..64; <= 0: 4 */
    specdec_context_params ctx;  /* every slot's context (n_ctx, n_batch, n_threads, draft), as specdec_context_init */
} specdec_batch_params;

/* n_slots 4, ctx as specdec_context_default_params(). */
SPECDEC_API specdec_batch_params specdec_batch_default_params(void);

/* The batch over model (borrowed: it must outlive the batch) with
 * params->n_slots contexts of params->ctx and the activations of a step of up
 * to n_slots * n_batch rows. params NULL = defaults. Errors: SPECDEC_ERR_ARG
 * (NULL model or out, n_slots > 64, a draft head / MTP file as the model),
 * the errors of specdec_context_init, SPECDEC_ERR_NOMEM. */
SPECDEC_API specdec_status specdec_batch_init(const specdec_model *model, const specdec_batch_params *params,
                                              specdec_batch **out, specdec_error *err);

/* Cancels every request, steps until they have all ended (their callbacks
 * run), and frees the batch. NULL is a no-op. */
SPECDEC_API void specdec_batch_free(specdec_batch *b);

/* The batch's slot count (params->n_slots at init); 0 for NULL. */
SPECDEC_API int32_t specdec_batch_n_slots(const specdec_batch *b);
/* Slots holding a request (added, not yet reported done). */
SPECDEC_API int32_t specdec_batch_n_active(const specdec_batch *b);

/* How a request ended, for its done callback: the slot, the status and error
 * specdec_generate would have returned, its stats, and the generated tokens
 * (tokens[n_tokens]). Everything is borrowed for the duration of the call. */
typedef struct specdec_batch_result {
    int32_t slot;
    specdec_status status;
    const specdec_error *err;
    const specdec_stats *stats;
    const specdec_token *tokens;
    size_t n_tokens;
} specdec_batch_result;
typedef void (*specdec_batch_done_cb)(const specdec_batch_result *res, void *user);

/* Adds a request in the free slot specdec_batch_next_slot names (its id into
 * *slot, may be NULL): prompt[n_prompt] (>= 1
 * tokens, copied) with params (NULL = defaults; copied with its stop
 * strings and logit bias). on_piece (may be NULL) receives its text as specdec_generate's
 * callback does — returning false cancels it — and on_done (may be NULL) its
 * end, exactly once; both with user, inside specdec_batch_step. The request
 * starts at once (its prefill joins the next step). Errors (nothing added):
 * SPECDEC_ERR_ARG (NULL batch or prompt, an empty prompt, no free slot,
 * params refused as specdec_generate_params_check refuses them, tree_nodes
 * > 0, params->abort set), SPECDEC_ERR_CONTEXT (the prompt does not fit
 * n_ctx), SPECDEC_ERR_NOMEM. */
SPECDEC_API specdec_status specdec_batch_add(specdec_batch *b, const specdec_token *prompt, size_t n_prompt,
                                             const specdec_generate_params *params, specdec_piece_cb on_piece,
                                             specdec_batch_done_cb on_done, void *user, int32_t *slot,
                                             specdec_error *err);
/* specdec_batch_add into the slot `at` (0..n_slots-1, which must be free;
 * < 0: the lowest free one, as specdec_batch_add). For a caller that keeps
 * a conversation where its state is: the slot whose context still holds the
 * conversation's last turn (or a prompt checkpoint just taken there) reuses
 * it as it is, where another slot would copy a cached state or prefill
 * again. Errors: those of specdec_batch_add, and SPECDEC_ERR_ARG when `at`
 * is out of range or holds a request (nothing added). */
SPECDEC_API specdec_status specdec_batch_add_at(specdec_batch *b, int32_t at, const specdec_token *prompt,
                                                size_t n_prompt, const specdec_generate_params *params,
                                                specdec_piece_cb on_piece, specdec_batch_done_cb on_done,
                                                void *user, int32_t *slot, specdec_error *err);

/* One step: waits until every active request has asked for its next
 * forward (or ended), delivers the pieces and ends so far, runs one forward
 * over all the asked rows, and delivers what the requests produced from it.
 * A call with no active request returns at once. Errors: a failed forward
 * (SPECDEC_ERR_NOMEM, ...) is returned here and ends the requests in it with
 * that error; the batch stays usable. */
SPECDEC_API specdec_status specdec_batch_step(specdec_batch *b, specdec_error *err);

/* Asks the request in slot to stop (stop_reason SPECDEC_STOP_CANCELLED); it
 * ends within a step or two. A free slot or an id out of range is ignored. */
SPECDEC_API void specdec_batch_cancel(specdec_batch *b, int32_t slot);

/* The slot the next specdec_batch_add takes: the lowest-numbered free one,
 * or -1 when every slot holds a request (or b is NULL). */
SPECDEC_API int32_t specdec_batch_next_slot(const specdec_batch *b);
/* Whether slot `slot` holds no request (false for a NULL batch or an id out
 * of range): specdec_batch_add_at may put one there. */
SPECDEC_API bool specdec_batch_slot_is_free(const specdec_batch *b, int32_t slot);
/* The context of slot `slot` (borrowed, owned by the batch; NULL for a NULL
 * batch or an id out of range), for a prefix cache: while the slot is free
 * (before specdec_batch_add puts a request there) or inside that request's
 * done callback (its run has ended), on the batch's thread, the caller may
 * save, match and restore states on it (specdec_state_*), read its tokens
 * or reset it; the next request in the slot reuses what it then holds as
 * specdec_generate reuses a context's prefix. Never generate on it: its
 * forwards run only inside specdec_batch_step. */
SPECDEC_API specdec_context *specdec_batch_slot_context(specdec_batch *b, int32_t slot);

/* Makes the batch's memory resident now, contents unchanged: every slot's
 * KV caches (target and draft) and hidden-state rows (those allocated:
 * specdec_context_reserve_hidden allocates a head's before), the draft contexts'
 * activations, the step's activations and the logits of its largest step
 * (grown to n_slots * n_batch rows now, not as verify windows first ask).
 * Untouched, those pages come in as each slot first reaches a position or
 * a step first reaches a size: a long-running server's RSS then creeps up
 * for hours to the same bound (every slot's longest request so far).
 * Committed at start, the RSS is at its working size from the start, as
 * llama.cpp's, which clears its KV buffers at init; a machine without the
 * memory fails then, not hours later. The pages are read and written back
 * (glibc's malloc_usable_size gives a block's size; elsewhere only the
 * logits room is grown). Call from the batch's thread, not inside a step.
 * Errors: SPECDEC_ERR_ARG (NULL b), SPECDEC_ERR_NOMEM (the logits room). */
SPECDEC_API specdec_status specdec_batch_commit_memory(specdec_batch *b, specdec_error *err);

#ifdef __cplusplus
}
#endif

#endif
