/* Which tool-call syntax a chat template teaches its model (tool_call.h):
 * read from the template's own text, where the published templates spell
 * the call out, else from the family. */
#include <string.h>

#include "chat/tool_call.h"

sd_tool_syntax sd_tool_syntax_detect(const char *template_text, const sd_chat_template *t) {
    const char *s = template_text ? template_text : "";
    if (strstr(s, "<function=") && strstr(s, "<parameter=")) return SD_TOOL_XML; /* Qwen3.5/3.6, Qwen3-Coder */
    if (strstr(s, "<tool_call>")) return SD_TOOL_HERMES;                          /* Qwen3, Qwen2.5 */
    if (strstr(s, "<|python_tag|>") || strstr(s, "ipython")) return SD_TOOL_LLAMA3; /* Llama 3.1-3.3 */
    if (t && !t->family_unknown) {
        switch (t->family) {
        case SD_CHAT_QWEN35:
        case SD_CHAT_QWEN36: return SD_TOOL_XML;
        case SD_CHAT_LLAMA3:
        case SD_CHAT_LLAMA31: return SD_TOOL_LLAMA3;
        default: break;
        }
    }
    return SD_TOOL_HERMES;
}

const char *sd_tool_syntax_name(sd_tool_syntax s) {
    switch (s) {
    case SD_TOOL_XML: return "xml";
    case SD_TOOL_LLAMA3: return "llama3";
    default: return "hermes";
    }
}
