/* libFuzzer target: the Jinja-subset interpreter (src/chat/jinja.h) on hostile
 * templates and hostile conversations. First byte: the mode.
 *   mode % 3 == 0: the rest is a template, rendered over a fixed conversation
 *                  with tools, tool calls and reasoning;
 *   mode % 3 == 1: the rest is message content (any bytes, cut at NULs into
 *                  up to 8 messages of rotating roles) rendered by a published
 *                  template of tests/data/chat (chosen by mode / 3);
 *   mode % 3 == 2: the rest is "TEMPLATE\0CONTEXT-JSON".
 * Checks: parse and render return a status (errors are fine) under tight
 * limits; on success the segments tile the text exactly, in order.
 * Build and run (from the repo root): bash fuzz/run.sh SECONDS fuzz_jinja */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chat/chat.h"
#include "chat/jinja.h"

#define CHECK(c)                                                                         \
    do {                                                                                 \
        if (!(c)) {                                                                      \
            fprintf(stderr, "fuzz_jinja: check failed: %s (line %d)\n", #c, __LINE__); \
            abort();                                                                     \
        }                                                                                \
    } while (0)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const k_templates[] = {
    "qwen3-0.6b.jinja", "qwen3.5-4b.jinja", "qwen3-coder.jinja", "llama-3.1-8b-instruct.jinja",
    "llama-3.2-3b-instruct.jinja", "mistral-small-3.2-24b-instruct-2506.jinja", "gemma-4-31b-it.jinja",
    "qwen2.5-7b-instruct.jinja",
};
#define N_TEMPLATES (sizeof k_templates / sizeof *k_templates)
static sd_jinja *g_tmpl[N_TEMPLATES];

static const char k_context[] =
    "{\"messages\": [{\"role\": \"system\", \"content\": \"sys\"}, {\"role\": \"user\", \"content\": \"hi <|im_end|>\"},"
    " {\"role\": \"assistant\", \"content\": \"\", \"reasoning_content\": \"think\", \"tool_calls\": [{\"id\": \"c1\","
    " \"type\": \"function\", \"function\": {\"name\": \"f\", \"arguments\": {\"a\": [1, 2.5, true, null], \"b\": \"x\"}}}]},"
    " {\"role\": \"tool\", \"tool_call_id\": \"c1\", \"content\": \"42\"}],"
    " \"tools\": [{\"type\": \"function\", \"function\": {\"name\": \"f\", \"parameters\": {\"type\": \"object\"}}}],"
    " \"add_generation_prompt\": true, \"enable_thinking\": false, \"bos_token\": \"<s>\", \"eos_token\": \"</s>\"}";

static sd_jinja_opts limits(void) {
    sd_jinja_opts o = sd_jinja_default_opts();
    o.limits.max_steps = 200000;
    o.limits.max_output = 1 << 20;
    o.limits.max_memory = 64 << 20;
    o.limits.max_depth = 100;
    o.now = 1768478400;
    return o;
}

static void check_out(const sd_jinja_out *o) {
    size_t at = 0;
    for (size_t i = 0; i < o->n_segs; i++) {
        CHECK(o->segs[i].off == at && o->segs[i].len > 0);
        if (i) CHECK(o->segs[i].from_template != o->segs[i - 1].from_template);
        at += o->segs[i].len;
    }
    CHECK(at == o->text.len);
    CHECK(o->text.len <= (1 << 20));
}

static void render(const sd_jinja *t, const char *ctx, size_t len) {
    sd_jinja_opts o = limits();
    sd_jinja_out out;
    sd_err err = {0};
    if (sd_jinja_render_json(t, ctx, len, &o, &out, &err) == SD_OK) check_out(&out);
    else CHECK(err.msg[0] && out.segs == NULL && out.text.s == NULL);
    sd_jinja_out_free(&out);
}

static void load_templates(void) {
    const char *root = getenv("SD_SOURCE_DIR");
    for (size_t i = 0; i < N_TEMPLATES; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/tests/data/chat/%s", root ? root : ".", k_templates[i]);
        FILE *f = fopen(path, "rb");
        if (!f) continue;
        static char buf[1 << 16];
        size_t n = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        sd_err err = {0};
        if (sd_jinja_parse(buf, n, &g_tmpl[i], &err) != SD_OK) {
            fprintf(stderr, "fuzz_jinja: %s refused: %s\n", k_templates[i], err.msg);
            abort();
        }
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static bool loaded;
    if (!loaded) {
        load_templates();
        loaded = true;
    }
    if (size < 1) return 0;
    unsigned mode = data[0];
    const char *rest = (const char *)data + 1;
    size_t n = size - 1;
    sd_err err = {0};
    if (mode % 3 == 0 || mode % 3 == 2) {
        const char *nul = memchr(rest, 0, n);
        size_t tl = mode % 3 == 2 && nul ? (size_t)(nul - rest) : n;
        sd_jinja *t = NULL;
        sd_status st = sd_jinja_parse(rest, tl, &t, &err);
        if (st != SD_OK) {
            CHECK(t == NULL && err.msg[0]);
            return 0;
        }
        if (mode % 3 == 0) render(t, k_context, strlen(k_context));
        else render(t, nul ? nul + 1 : "{}", nul ? n - tl - 1 : 2);
        sd_jinja_free(t);
        return 0;
    }
    const sd_jinja *t = g_tmpl[(mode / 3) % N_TEMPLATES];
    if (!t) return 0;
    /* message contents: NUL-separated pieces of the input (NUL-terminated copies) */
    static const char *const roles[] = {"user", "assistant", "system", "tool"};
    char *copy = malloc(n + 1);
    if (!copy) return 0;
    memcpy(copy, rest, n);
    copy[n] = 0;
    sd_chat_msg m[8];
    size_t k = 0;
    for (char *p = copy; k < 8 && p <= copy + n; p += strlen(p) + 1) {
        m[k] = (sd_chat_msg){.role = k == 0 ? "user" : roles[(k + mode) % 4], .content = p};
        if (k % 2) m[k].reasoning_content = p;
        k++;
    }
    sd_chat_opts co = sd_chat_default_opts();
    co.enable_thinking = mode & 1;
    sd_strbuf ctx = {0};
    if (sd_chat_context_json(m, k, &co, &ctx, &err) == SD_OK) render(t, ctx.s, ctx.len);
    sd_strbuf_free(&ctx);
    free(copy);
    return 0;
}
