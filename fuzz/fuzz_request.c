/* libFuzzer target: request bodies of /v1/chat/completions, /v1/completions
 * and /apply-template, through the server's own parser (oai_parse: JSON ->
 * sampling parameters, stop strings, messages -> chat template -> prompt
 * tokens) with the fixture model's vocabulary and template.
 * First byte: bits 0-1 the route (0 chat, 1 completion, 2 apply-template with
 * the prompt text, 3 chat with --max-prompt 64 --max-tokens 16), bit 2 parse
 * the rest as JSON with duplicate keys refused (as jansson's
 * JSON_REJECT_DUPLICATES), bit 3 a --chat-template override (llama31).
 * Checks: a refusal is a 4xx/5xx with a message and a valid OpenAI error
 * object; an accepted request has a prompt of 1..n_ctx-1 ids in the
 * vocabulary, at most 4 stop strings, the caps respected; a chat prompt's
 * control tokens are only the template's (the same count as the same
 * conversation with every '|' in the body replaced, which spells no control
 * token of this vocabulary).
 * Build and run (from the repo root): bash fuzz/run.sh SECONDS fuzz_request */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "server/oai.h"

#define CHECK(c)                                                                        \
    do {                                                                                \
        if (!(c)) {                                                                     \
            fprintf(stderr, "fuzz_request: check failed: %s (line %d)\n", #c, __LINE__); \
            abort();                                                                    \
        }                                                                               \
    } while (0)

/* The chat page is embedded by CMake; the fuzz build links none. */
const char sd_chat_page[] = "";
const size_t sd_chat_page_len = 0;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static server g_s;

static void init(void) {
    if (g_s.model) return;
    char path[512];
    const char *root = getenv("SD_SOURCE_DIR");
    snprintf(path, sizeof path, "%s/models/fixture-target.gguf", root ? root : ".");
    specdec_error err = {0};
    if (specdec_model_load(path, NULL, &g_s.model, &err)) {
        fprintf(stderr, "fuzz_request: %s\n", err.message);
        abort();
    }
    pthread_mutex_init(&g_s.m.mu, NULL);
    g_s.n_ctx = 512;
    g_s.opts.gen = specdec_generate_default_params();
    if (specdec_chat_template_resolve(g_s.model, NULL, &g_s.template_family, &err)) abort();
}

static size_t controls(const job *j) {
    size_t c = 0;
    for (size_t i = 0; i < j->n_prompt; i++) c += specdec_token_is_control(g_s.model, j->prompt[i]);
    return c;
}

/* Parses body as route `mode`; returns the job (NULL when refused, after the checks). */
static job *parse(json_t *body, int mode, bool llama31, sd_strbuf *prompt) {
    oai_req r = {.kind = mode == 1 ? JOB_COMPLETION : JOB_CHAT, .prompt_out = mode == 2 ? prompt : NULL};
    g_s.opts.chat_template = llama31 ? "llama31" : NULL;
    g_s.opts.max_prompt = mode == 3 ? 64 : 0;
    g_s.opts.max_tokens = mode == 3 ? 16 : 0;
    job *j = job_new(r.kind);
    CHECK(j);
    http_err e = {0};
    if (!oai_parse(&g_s, body, &r, j, &e)) {
        CHECK(e.status >= 400 && e.status < 600 && e.message[0]);
        json_t *o = http_err_json(&e);
        char *s = json_dumps(o, HTTP_JSON_FLAGS);
        CHECK(s && strstr(s, "\"error\""));
        free(s);
        json_decref(o);
        job_release(j);
        return NULL;
    }
    CHECK(j->n_prompt > 0 && j->n_prompt < (size_t)g_s.n_ctx);
    for (size_t i = 0; i < j->n_prompt; i++) CHECK(j->prompt[i] >= 0 && j->prompt[i] < specdec_model_n_vocab(g_s.model));
    CHECK(j->gp.n_stop <= 4);
    if (mode == 3) CHECK(j->n_prompt <= 64 && j->gp.n_predict >= 0 && j->gp.n_predict <= 16);
    return j;
}

/* The model loads once, before the first input (not under libFuzzer's per-input -timeout). */
int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv) {
    (void)argc;
    (void)argv;
    init();
    return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    init();
    if (size < 1) return 0;
    int mode = data[0] & 3;
    bool dup = data[0] & 4, llama31 = data[0] & 8;
    json_error_t je;
    json_t *body = json_loadb((const char *)data + 1, size - 1, dup ? JSON_REJECT_DUPLICATES : 0, &je);
    if (!body) return 0;
    sd_strbuf prompt = {0};
    job *j = parse(body, mode, llama31, &prompt);
    json_decref(body);
    if (j && j->kind == JOB_CHAT) {
        /* The same body with '|' replaced: the template's decisions (roles,
         * <think>, <tool_response>) are unchanged, no control token can be
         * spelled, so the count left is the template's own. */
        char *copy = malloc(size);
        CHECK(copy);
        memcpy(copy, data + 1, size - 1);
        for (size_t i = 0; i + 1 < size; i++)
            if (copy[i] == '|') copy[i] = '!';
        json_t *clean = json_loadb(copy, size - 1, dup ? JSON_REJECT_DUPLICATES : 0, &je);
        free(copy);
        if (clean) {
            sd_strbuf p2 = {0};
            job *k = parse(clean, mode, llama31, &p2);
            /* the clean twin can be refused only for a limit (the counts differ in length) */
            if (k) CHECK(controls(k) == controls(j));
            job_release(k);
            sd_strbuf_free(&p2);
            json_decref(clean);
        }
    }
    job_release(j);
    sd_strbuf_free(&prompt);
    return 0;
}
