/* Template recognition by substrings, in the spirit of llama.cpp's
 * llm_chat_detect_template (src/llama-chat.cpp): ChatML by <|im_start|>, Llama 3
 * by <|start_header_id|> + <|end_header_id|>; the Qwen refinements key on the
 * template variables and the generation prompt, not on model names, because
 * the same text ships under many names. */
#include "chat/chat.h"

#include <string.h>

static const char *const k_names[SD_CHAT_N_FAMILIES] = {
    [SD_CHAT_CHATML] = "chatml", [SD_CHAT_QWEN3] = "qwen3",   [SD_CHAT_QWEN35] = "qwen35",
    [SD_CHAT_QWEN36] = "qwen36", [SD_CHAT_LLAMA3] = "llama3", [SD_CHAT_LLAMA31] = "llama31",
};

const char *sd_chat_family_name(sd_chat_family family) {
    return family >= 0 && family < SD_CHAT_N_FAMILIES ? k_names[family] : "unknown";
}

const char *sd_chat_engine_name(const sd_chat_template *t) {
    static const char *const jinja_names[SD_CHAT_N_FAMILIES] = {
        [SD_CHAT_CHATML] = "chatml+jinja", [SD_CHAT_QWEN3] = "qwen3+jinja",   [SD_CHAT_QWEN35] = "qwen35+jinja",
        [SD_CHAT_QWEN36] = "qwen36+jinja", [SD_CHAT_LLAMA3] = "llama3+jinja", [SD_CHAT_LLAMA31] = "llama31+jinja",
    };
    if (!t->jinja) return sd_chat_family_name(t->family);
    if (t->family_unknown || t->family < 0 || t->family >= SD_CHAT_N_FAMILIES) return "jinja";
    return jinja_names[t->family];
}

const char *sd_chat_family_names(void) { return "chatml, qwen3, qwen35, qwen36, llama3, llama31"; }

sd_chat_opts sd_chat_default_opts(void) {
    return (sd_chat_opts){.add_generation_prompt = true, .enable_thinking = -1, .now = -1};
}

sd_status sd_chat_template_named(const char *name, sd_chat_template *out, sd_err *err) {
    for (int f = 0; f < SD_CHAT_N_FAMILIES; f++)
        if (name && !strcmp(name, k_names[f])) {
            *out = (sd_chat_template){.family = (sd_chat_family)f};
            return SD_OK;
        }
    return sd_err_set(err, SD_ERR_ARG, "unknown chat template '%s' (known: %s)", name ? name : "",
                      sd_chat_family_names());
}

/* A ChatML template that opens with a fixed system turn when the conversation
 * has none (Qwen2: '<|im_start|>system\nYou are a helpful assistant<|im_end|>\n').
 * Finds a literal "<|im_start|>system" + newline (raw or the escape \n) + plain
 * text up to "<|im_end|>"; text with quotes, '+' or braces is template code. */
static void find_default_system(const char *tmpl, sd_chat_template *out) {
    const char *open = "<|im_start|>system";
    for (const char *p = strstr(tmpl, open); p; p = strstr(p + 1, open)) {
        const char *q = p + strlen(open);
        if (*q == '\n') q += 1;
        else if (q[0] == '\\' && q[1] == 'n') q += 2;
        else continue;
        const char *end = strstr(q, "<|im_end|>");
        size_t n = end ? (size_t)(end - q) : 0;
        if (!end || n == 0 || n >= sizeof out->default_system) continue;
        if (memchr(q, '\'', n) || memchr(q, '"', n) || memchr(q, '+', n) || memchr(q, '{', n) ||
            memchr(q, '}', n) || memchr(q, '\\', n) || memchr(q, '\n', n))
            continue;
        memcpy(out->default_system, q, n);
        out->default_system[n] = 0;
        out->has_default_system = true;
        return;
    }
}

sd_status sd_chat_detect(const char *tmpl, sd_chat_template *out, sd_err *err) {
    *out = (sd_chat_template){0};
    if (!tmpl || !*tmpl)
        return sd_err_set(err, SD_ERR_UNSUPPORTED,
                          "the model has no tokenizer.chat_template; pass --chat-template NAME (%s)",
                          sd_chat_family_names());
    if (strstr(tmpl, "<|im_start|>")) {
        /* Qwen3.5/3.6 open the reasoning block in the generation prompt. */
        bool forced_open = strstr(tmpl, "'<think>\\n' }}") || strstr(tmpl, "'<think>\n' }}");
        if (forced_open && strstr(tmpl, "preserve_thinking")) out->family = SD_CHAT_QWEN36;
        else if (forced_open) out->family = SD_CHAT_QWEN35;
        else if (strstr(tmpl, "enable_thinking")) out->family = SD_CHAT_QWEN3;
        else {
            out->family = SD_CHAT_CHATML;
            find_default_system(tmpl, out);
        }
        return SD_OK;
    }
    if (strstr(tmpl, "<|start_header_id|>") && strstr(tmpl, "<|end_header_id|>")) {
        out->family = strstr(tmpl, "Cutting Knowledge Date") ? SD_CHAT_LLAMA31 : SD_CHAT_LLAMA3;
        return SD_OK;
    }
    return sd_err_set(err, SD_ERR_UNSUPPORTED,
                      "chat template not recognised (built-in: %s); pass --chat-template NAME",
                      sd_chat_family_names());
}

sd_think_start sd_chat_think_start(const sd_chat_template *t, const sd_chat_opts *opts) {
    bool off = opts && opts->enable_thinking == 0;
    if (t->family_unknown) return SD_THINK_NONE;
    switch (t->family) {
    case SD_CHAT_QWEN3: return off ? SD_THINK_NONE : SD_THINK_MAYBE;
    case SD_CHAT_QWEN35:
    case SD_CHAT_QWEN36:
        /* Without a generation prompt the answer is not ours to split. */
        if (opts && !opts->add_generation_prompt) return SD_THINK_MAYBE;
        return off ? SD_THINK_NONE : SD_THINK_OPEN;
    default: return SD_THINK_NONE;
    }
}
