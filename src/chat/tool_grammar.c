/* The grammar of an answer that calls tools (tool_call.h): the call syntax
 * of the template's family written out in GBNF, each call's arguments the
 * JSON-Schema converter's grammar of its tool's parameters (grammar/
 * json_schema.h), its rules renamed with a per-tool prefix so that the tools'
 * grammars live side by side in one text.
 *
 * XML parameters (Qwen3.5/3.6, Qwen3-Coder) are raw text: a parameter whose
 * schema is a plain string is any text without "</" (so it cannot close the
 * tag early), a string enum its values, anything else the JSON of its schema.
 * Parameters come in the order of "properties", the required ones always,
 * the others optionally (the template writes them in the order of the
 * arguments object; models follow the schema's order). */
#include <jansson.h>
#include <stdio.h>
#include <string.h>

#include "chat/tool_call.h"
#include "grammar/json_schema.h"

static bool name_char(int c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
}

/* Copies the converter's GBNF g to out with every rule name prefixed.
 * Literals, classes and repetition counts are copied as they are. */
static void rename_rules(const char *g, size_t n, const char *prefix, sd_strbuf *out) {
    for (size_t i = 0; i < n;) {
        char c = g[i];
        if (c == '"' || c == '[' || c == '{') {
            char end = c == '"' ? '"' : c == '[' ? ']' : '}';
            size_t j = i + 1;
            while (j < n && g[j] != end) j += g[j] == '\\' && j + 1 < n ? 2 : 1;
            j = j < n ? j + 1 : n;
            sd_strbuf_add(out, g + i, j - i);
            i = j;
        } else if (c == '#') {
            while (i < n && g[i] != '\n') i++;
        } else if (name_char((unsigned char)c)) {
            size_t j = i;
            while (j < n && name_char((unsigned char)g[j])) j++;
            sd_strbuf_puts(out, prefix);
            sd_strbuf_add(out, g + i, j - i);
            i = j;
        } else sd_strbuf_add(out, g + i++, 1);
    }
    sd_strbuf_puts(out, "\n");
}

/* A GBNF literal of s[0..n). */
static void lit(sd_strbuf *b, const char *s, size_t n) {
    sd_strbuf_puts(b, "\"");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"' || c == '\\') sd_strbuf_printf(b, "\\%c", c);
        else if (c == '\n') sd_strbuf_puts(b, "\\n");
        else if (c == '\r') sd_strbuf_puts(b, "\\r");
        else if (c == '\t') sd_strbuf_puts(b, "\\t");
        else if (c < 0x20) sd_strbuf_printf(b, "\\x%02x", c);
        else sd_strbuf_add(b, (const char *)&c, 1);
    }
    sd_strbuf_puts(b, "\" ");
}

static void lits(sd_strbuf *b, const char *s) { lit(b, s, strlen(s)); }

/* A GBNF literal of the JSON string literal of s (a name inside a JSON call). */
static void json_name_lit(sd_strbuf *b, const char *s) {
    json_t *j = json_string(s);
    char *t = j ? json_dumps(j, JSON_ENCODE_ANY) : NULL;
    if (t) lits(b, t);
    else b->oom = true;
    free(t);
    json_decref(j);
}

/* Converts schema into rules prefixed with prefix (its start rule PREFIXroot). */
static sd_status schema_rules(const json_t *schema, bool strict, const char *prefix, const char *tool, sd_strbuf *out,
                              sd_err *err) {
    char *text = json_dumps(schema, JSON_COMPACT | JSON_ENCODE_ANY);
    if (!text) return sd_err_set(err, SD_ERR_NOMEM, "tools: out of memory");
    sd_strbuf g = {0};
    sd_json_schema_opts o = {.strict = strict};
    sd_err e = {0};
    sd_status st = sd_json_schema_to_gbnf(text, strlen(text), &o, &g, &e);
    free(text);
    if (st == SD_OK) rename_rules(sd_strbuf_str(&g), g.len, prefix, out);
    else sd_err_set(err, st, "tool '%s': %s", tool, e.msg);
    sd_strbuf_free(&g);
    return st;
}

/* A string schema without enum / const: raw text is its XML value (a
 * pattern or format is not enforced there: docs/TOOLS.md). */
static bool plain_string(const json_t *s) {
    json_t *t = json_object_get(s, "type");
    if (!json_is_string(t) || strcmp(json_string_value(t), "string")) return false;
    return !json_object_get(s, "enum") && !json_object_get(s, "const");
}

/* The raw text of a plain string: any text without "</", or with
 * minLength / maxLength that many characters, none of them "<". */
static void string_rule(const json_t *s, const char *prefix, sd_strbuf *out) {
    json_t *lo = json_object_get(s, "minLength"), *hi = json_object_get(s, "maxLength");
    if (!json_is_integer(lo) && !json_is_integer(hi)) {
        sd_strbuf_printf(out, "%sv ::= xml-text\n", prefix);
        return;
    }
    long long a = json_is_integer(lo) && json_integer_value(lo) > 0 ? json_integer_value(lo) : 0;
    if (json_is_integer(hi)) sd_strbuf_printf(out, "%sv ::= [^<]{%lld,%lld}\n", prefix, a, (long long)json_integer_value(hi));
    else sd_strbuf_printf(out, "%sv ::= [^<]{%lld,}\n", prefix, a);
}

/* An enum of strings only: its values are the XML value's alternatives. */
static bool string_enum(const json_t *s) {
    json_t *en = json_object_get(s, "enum");
    size_t i;
    json_t *v;
    if (!json_is_array(en) || !json_array_size(en)) return false;
    json_array_foreach(en, i, v) if (!json_is_string(v)) return false;
    return true;
}

/* XML value rule "t{ti}-p{pi}-v" for property schema ps (params: the
 * tool's whole parameters schema, whose $defs a property may refer to). */
static sd_status xml_value(const json_t *params, const json_t *ps, bool strict, int ti, int pi, const char *tool,
                           sd_strbuf *out, sd_err *err) {
    char prefix[48];
    snprintf(prefix, sizeof prefix, "t%d-p%d-", ti, pi);
    if (!json_is_object(ps)) {
        sd_strbuf_printf(out, "%sv ::= xml-text\n", prefix);
        return SD_OK;
    }
    if (plain_string(ps)) {
        string_rule(ps, prefix, out);
        return SD_OK;
    }
    if (string_enum(ps)) {
        sd_strbuf_printf(out, "%sv ::= ", prefix);
        size_t i;
        json_t *v;
        json_array_foreach(json_object_get(ps, "enum"), i, v) {
            if (i) sd_strbuf_puts(out, "| ");
            lit(out, json_string_value(v), json_string_length(v));
        }
        sd_strbuf_puts(out, "\n");
        return SD_OK;
    }
    json_t *s = json_deep_copy(ps);
    if (!s) return sd_err_set(err, SD_ERR_NOMEM, "tools: out of memory");
    static const char *const defs[] = {"$defs", "definitions"};
    for (int k = 0; k < 2; k++)
        if (json_object_get(params, defs[k]) && !json_object_get(s, defs[k]))
            json_object_set(s, defs[k], json_object_get(params, defs[k]));
    sd_status st = schema_rules(s, strict, prefix, tool, out, err);
    json_decref(s);
    if (st == SD_OK) sd_strbuf_printf(out, "%sv ::= %sroot\n", prefix, prefix);
    return st;
}

/* The rule call-{ti} for one tool. */
static sd_status tool_call_rule(const sd_tool_gbnf_opts *o, const json_t *fn, int ti, sd_strbuf *out, sd_err *err) {
    const char *name = json_string_value(json_object_get(fn, "name"));
    json_t *params = json_object_get(fn, "parameters");
    json_t *empty = NULL;
    if (!json_is_object(params)) params = empty = json_pack("{s:s, s:{}}", "type", "object", "properties");
    if (!params) return sd_err_set(err, SD_ERR_NOMEM, "tools: out of memory");
    bool strict = json_is_true(json_object_get(fn, "strict"));
    const char *open = o->tags_are_tokens ? "<<tool_call>> " : "\"<tool_call>\" ";
    const char *close = o->tags_are_tokens ? "<</tool_call>> " : "\"</tool_call>\" ";
    char prefix[32];
    snprintf(prefix, sizeof prefix, "t%d-", ti);
    sd_status st = SD_OK;
    sd_strbuf rule = {0};
    sd_strbuf_printf(&rule, "call-%d ::= ", ti);
    if (o->syntax == SD_TOOL_XML) {
        /* the whole schema converts, or the tool is refused as in the JSON syntaxes */
        sd_strbuf scratch = {0};
        st = schema_rules(params, strict, prefix, name, &scratch, err);
        sd_strbuf_free(&scratch);
        sd_strbuf_printf(&rule, "%s\"\\n<function=\" ", open);
        lits(&rule, name);
        sd_strbuf_puts(&rule, "\">\\n\" ");
        json_t *props = json_object_get(params, "properties"), *req = json_object_get(params, "required");
        const char *key;
        json_t *ps;
        int pi = 0;
        json_object_foreach(props, key, ps) {
            bool required = false;
            size_t i;
            json_t *r;
            json_array_foreach(req, i, r) if (json_is_string(r) && !strcmp(json_string_value(r), key)) required = true;
            if (st == SD_OK) st = xml_value(params, ps, strict, ti, pi, name, out, err);
            sd_strbuf_puts(&rule, required ? "( \"<parameter=\" " : "( \"<parameter=\" ");
            lits(&rule, key);
            sd_strbuf_printf(&rule, "\">\\n\" t%d-p%d-v \"\\n</parameter>\\n\" )%s ", ti, pi, required ? "" : "?");
            pi++;
        }
        sd_strbuf_printf(&rule, "\"</function>\\n\" %s\n", close);
    } else {
        st = schema_rules(params, strict, prefix, name, out, err);
        if (o->syntax == SD_TOOL_HERMES) sd_strbuf_printf(&rule, "%s\"\\n{\\\"name\\\": \" ", open);
        else sd_strbuf_puts(&rule, "\"{\\\"name\\\": \" ");
        json_name_lit(&rule, name);
        sd_strbuf_printf(&rule, "\", \\\"%s\\\": \" %sroot \"}\" ", o->syntax == SD_TOOL_HERMES ? "arguments" : "parameters",
                         prefix);
        if (o->syntax == SD_TOOL_HERMES) sd_strbuf_printf(&rule, "\"\\n\" %s", close);
        sd_strbuf_puts(&rule, "\n");
    }
    sd_strbuf_add(out, sd_strbuf_str(&rule), rule.len);
    if (rule.oom) out->oom = true;
    sd_strbuf_free(&rule);
    json_decref(empty);
    return st;
}

/* The function object of tools[i] ({"type":"function","function":{...}} or the bare function). */
static json_t *function_of(json_t *tool) {
    json_t *f = json_object_get(tool, "function");
    return json_is_object(f) ? f : tool;
}

/* The reasoning section before the answer, as the template starts it, and
 * the bounded whitespace after it. */
static void reasoning_prefix(const sd_tool_gbnf_opts *o, sd_strbuf *out) {
    if (o->think == SD_THINK_OPEN && !o->think_tokens) /* spelled out: reasoning without "</", then the tag */
        sd_strbuf_puts(out, "pre ::= xml-text \"</think>\" gap\n");
    else if (!o->think_tokens || o->think == SD_THINK_NONE) sd_strbuf_puts(out, "pre ::= \"\"\n");
    else if (o->think == SD_THINK_OPEN) sd_strbuf_puts(out, "pre ::= (!</think>)* </think> gap\n");
    else sd_strbuf_puts(out, "pre ::= ( <think> (!</think>)* </think> gap )?\n");
}

static sd_status build(json_t *tools, const sd_tool_gbnf_opts *o, sd_strbuf *out, sd_err *err) {
    size_t i;
    json_t *tool;
    sd_strbuf alts = {0};
    int n = 0;
    sd_status st = SD_OK;
    json_array_foreach(tools, i, tool) {
        json_t *fn = function_of(tool);
        if (!json_is_object(fn) || !json_is_string(json_object_get(fn, "name"))) {
            st = sd_err_set(err, SD_ERR_ARG, "tools[%zu]: a function with a string name is required", i);
            break;
        }
        if (o->choice == SD_TOOL_CHOICE_NAMED && strcmp(json_string_value(json_object_get(fn, "name")), o->name))
            continue;
        st = tool_call_rule(o, fn, (int)i, out, err);
        if (st != SD_OK) break;
        sd_strbuf_printf(&alts, "%scall-%zu", n++ ? " | " : "", i);
    }
    if (st == SD_OK && n == 0 && o->choice == SD_TOOL_CHOICE_NAMED)
        st = sd_err_set(err, SD_ERR_ARG, "tool_choice: no tool named '%s'", o->name);
    else if (st == SD_OK && n == 0) st = sd_err_set(err, SD_ERR_ARG, "tools: no function to call");
    if (st == SD_OK) {
        sd_strbuf_printf(out, "call ::= %s\n", sd_strbuf_str(&alts));
        bool many = o->parallel && o->syntax != SD_TOOL_LLAMA3;
        sd_strbuf_puts(out, many ? "calls ::= call ( \"\\n\" call )*\n" : "calls ::= call\n");
        sd_strbuf_puts(out, "xml-text ::= ( [^<] | \"<\" [^/] )*\n");
        /* Whitespace between the parts of the answer: nothing, one space, or
         * one or two newlines and up to 20 spaces/tabs of indentation. Never
         * unbounded: a weak model offered whitespace forever can take it until
         * max_tokens (llama.cpp bounds its tool grammars' whitespace alike). */
        sd_strbuf_puts(out, "gap ::= ( \" \" | \"\\n\"{1,2} [ \\t]{0,20} )?\n");
        reasoning_prefix(o, out);
        if (o->choice != SD_TOOL_CHOICE_AUTO) sd_strbuf_puts(out, "root ::= pre calls\n");
        else if (o->syntax == SD_TOOL_LLAMA3) sd_strbuf_puts(out, "root ::= pre gap ( calls | [^{ \\t\\n] .* )?\n");
        else sd_strbuf_puts(out, "root ::= pre (!<<tool_call>>)* calls?\n");
    }
    sd_strbuf_free(&alts);
    return st;
}

sd_status sd_tool_gbnf(const char *tools_json, size_t len, const sd_tool_gbnf_opts *o, sd_strbuf *out, sd_err *err) {
    if (o->choice == SD_TOOL_CHOICE_NONE) return SD_OK;
    if (o->choice == SD_TOOL_CHOICE_AUTO && o->syntax != SD_TOOL_LLAMA3 && !o->tags_are_tokens) return SD_OK;
    if (o->choice == SD_TOOL_CHOICE_NAMED && !o->name) return sd_err_set(err, SD_ERR_ARG, "tool_choice: no name");
    json_t *tools = json_loadb(tools_json ? tools_json : "", tools_json ? len : 0, 0, NULL);
    if (!json_is_array(tools)) {
        json_decref(tools);
        return sd_err_set(err, SD_ERR_ARG, "tools: not a JSON array");
    }
    size_t mark = out->len;
    sd_status st = build(tools, o, out, err);
    json_decref(tools);
    if (st == SD_OK && out->oom) st = sd_err_set(err, SD_ERR_NOMEM, "tools: out of memory");
    if (st != SD_OK) {
        out->len = mark;
        if (out->s) out->s[mark] = 0;
    }
    return st;
}
