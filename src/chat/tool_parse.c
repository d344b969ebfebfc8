/* The incremental tool-call parser (tool_call.h): the answer's content
 * arrives in pieces of any split; each feed decides what it can and holds
 * back text that may still become a call tag, so a streamed answer and the
 * whole answer give the same events joined (tests/chat/test_tool_call.c).
 *
 * Whitespace right before a call, between calls and after the last one is
 * dropped (it is layout, not an answer), so "content" is null-worthy when a
 * turn only calls. Arguments are sent as compact JSON: XML parameters one
 * piece per parameter as each closes ("{\"city\":\"Paris\"", ",\"days\":3",
 * "}"), JSON calls in one piece once their object is complete. */
#define _POSIX_C_SOURCE 200809L
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "chat/tool_call.h"

enum {
    ST_TEXT,        /* content; "<tool_call>" opens a call (Hermes, XML) */
    ST_XML_FN,      /* after <tool_call>: "<function=NAME>" */
    ST_XML_BODY,    /* parameters, until </function> */
    ST_XML_END,     /* after </function>: "</tool_call>" */
    ST_HERMES,      /* after <tool_call>: JSON until </tool_call> */
    ST_LLAMA_START, /* Llama 3: the answer's first non-blank byte decides */
    ST_LLAMA_JSON,  /* Llama 3: a JSON object until its braces balance */
    ST_LLAMA_AFTER, /* Llama 3: after a call, ";" or blanks, maybe another */
    ST_TEXT_ONLY,   /* no call can come any more */
};

static const char OPEN[] = "<tool_call>", CLOSE[] = "</tool_call>";
#define MAX_TAG 512 /* bytes a <function=...> or <parameter=...> tag may take before it is not one */

static bool blank(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }

static bool all_blank(const char *s, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (!blank(s[i])) return false;
    return true;
}

/* Offset of needle in s[0..n), or -1. */
static long find(const char *s, size_t n, const char *needle) {
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (!memcmp(s + i, needle, k)) return (long)i;
    return -1;
}

/* Length of the longest suffix of s[0..n) that is a proper prefix of needle. */
static size_t partial_tail(const char *s, size_t n, const char *needle) {
    size_t k = strlen(needle);
    for (size_t m = k - 1 < n ? k - 1 : n; m > 0; m--)
        if (!memcmp(s + n - m, needle, m)) return m;
    return 0;
}

/* s[0..n) starts with needle (1), could still (0: s is a proper prefix of it), or cannot (-1). */
static int starts(const char *s, size_t n, const char *needle) {
    size_t k = strlen(needle);
    if (n >= k) return memcmp(s, needle, k) ? -1 : 1;
    return memcmp(s, needle, n) ? -1 : 0;
}

/* ---- events ---- */

static void emit(sd_tool_parser *p, sd_tool_ev_kind kind, const char *s, size_t n) {
    if (kind == SD_TOOL_EV_CONTENT && n == 0) return;
    int index = kind == SD_TOOL_EV_CONTENT ? 0 : p->n_calls - 1;
    size_t off = p->ev_text.len;
    sd_strbuf_add(&p->ev_text, s, n);
    if (p->n_ev && kind == SD_TOOL_EV_CONTENT && p->ev[p->n_ev - 1].kind == SD_TOOL_EV_CONTENT) {
        p->ev[p->n_ev - 1].len += n; /* adjacent content: one event */
        return;
    }
    if (p->n_ev == p->cap_ev) {
        size_t cap = p->cap_ev ? 2 * p->cap_ev : 8;
        sd_tool_ev *v = realloc(p->ev, cap * sizeof *v);
        if (!v) { p->oom = true; return; }
        p->ev = v;
        p->cap_ev = cap;
    }
    p->ev[p->n_ev++] = (sd_tool_ev){.kind = kind, .index = index, .off = off, .len = n};
}

static void start_call(sd_tool_parser *p, const char *name, size_t n) {
    p->n_calls++;
    p->n_params = 0;
    emit(p, SD_TOOL_EV_START, name, n);
}

/* Content whose trailing blanks may be layout before a call: the blanks are
 * held in p->in (the caller keeps them there). Returns the bytes sent. */
static size_t emit_text_keep_blanks(sd_tool_parser *p, const char *s, size_t n) {
    size_t m = n;
    while (m > 0 && blank(s[m - 1])) m--;
    emit(p, SD_TOOL_EV_CONTENT, s, m);
    return m;
}

/* ---- JSON helpers ---- */

static void json_str(sd_strbuf *b, const char *s, size_t n) {
    sd_strbuf_puts(b, "\"");
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '"') sd_strbuf_puts(b, "\\\"");
        else if (c == '\\') sd_strbuf_puts(b, "\\\\");
        else if (c == '\n') sd_strbuf_puts(b, "\\n");
        else if (c == '\r') sd_strbuf_puts(b, "\\r");
        else if (c == '\t') sd_strbuf_puts(b, "\\t");
        else if (c < 0x20) sd_strbuf_printf(b, "\\u%04x", c);
        else sd_strbuf_add(b, (const char *)&c, 1);
    }
    sd_strbuf_puts(b, "\"");
}

static void json_dump_into(sd_strbuf *b, const json_t *v) {
    /* 15 significant digits: a short decimal stays short (2.1, not 2.1000000000000001) */
    char *t = json_dumps(v, JSON_COMPACT | JSON_ENCODE_ANY | JSON_REAL_PRECISION(15));
    if (!t) { b->oom = true; return; }
    sd_strbuf_puts(b, t);
    free(t);
}

/* The schema of parameter key of function fn in the tools array, or NULL. */
static json_t *param_schema(const sd_tool_parser *p, const char *fn, const char *key) {
    size_t i;
    json_t *tool;
    if (!p->tools || !fn) return NULL;
    json_array_foreach((json_t *)p->tools, i, tool) {
        json_t *f = json_object_get(tool, "function");
        if (!json_is_object(f)) f = tool;
        json_t *name = json_object_get(f, "name");
        if (!json_is_string(name) || strcmp(json_string_value(name), fn)) continue;
        json_t *props = json_object_get(json_object_get(f, "parameters"), "properties");
        return json_object_get(props, key);
    }
    return NULL;
}

/* Adds the JSON type names a schema allows (type, or those of anyOf / oneOf
 * members) to a bit set: 1 string, 2 number, 4 integer, 8 boolean, 16 null,
 * 32 object, 64 array; 128 when a member says nothing (any kind). */
static int type_bits(const json_t *s, int depth) {
    static const char *const names[] = {"string", "number", "integer", "boolean", "null", "object", "array"};
    if (!json_is_object(s) || depth > 8) return 128;
    json_t *t = json_object_get(s, "type");
    int bits = 0;
    json_t *one[1] = {t};
    size_t n = json_is_array(t) ? json_array_size(t) : t ? 1 : 0;
    for (size_t i = 0; i < n; i++) {
        json_t *x = json_is_array(t) ? json_array_get(t, i) : one[0];
        for (int k = 0; k < 7; k++)
            if (json_is_string(x) && !strcmp(json_string_value(x), names[k])) bits |= 1 << k;
    }
    const char *alts[] = {"anyOf", "oneOf"};
    for (int a = 0; a < 2; a++) {
        json_t *v = json_object_get(s, alts[a]);
        size_t i;
        json_t *m;
        json_array_foreach(v, i, m) bits |= type_bits(m, depth + 1);
    }
    json_t *en = json_object_get(s, "enum");
    if (!bits && json_is_array(en)) bits = 128;
    return bits ? bits : 128;
}

static bool kind_allowed(int bits, const json_t *v) {
    if (bits & 128) return true;
    switch (json_typeof(v)) {
    case JSON_STRING: return bits & 1;
    case JSON_INTEGER: return bits & (2 | 4);
    case JSON_REAL: return bits & 2;
    case JSON_TRUE:
    case JSON_FALSE: return bits & 8;
    case JSON_NULL: return bits & 16;
    case JSON_OBJECT: return bits & 32;
    case JSON_ARRAY: return bits & 64;
    }
    return false;
}

/* s[0..n) is a JSON number (RFC 8259 grammar): a number too large for
 * jansson's integers still is one, kept as written. */
static bool json_number(const char *s, size_t n) {
    size_t i = 0;
    if (i < n && s[i] == '-') i++;
    if (i < n && s[i] == '0') i++;
    else if (i < n && s[i] >= '1' && s[i] <= '9') while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    else return false;
    if (i < n && s[i] == '.') {
        if (++i >= n || s[i] < '0' || s[i] > '9') return false;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    }
    if (i < n && (s[i] == 'e' || s[i] == 'E')) {
        if (++i < n && (s[i] == '+' || s[i] == '-')) i++;
        if (i >= n || s[i] < '0' || s[i] > '9') return false;
        while (i < n && s[i] >= '0' && s[i] <= '9') i++;
    }
    return i == n;
}

/* An XML parameter's raw value as JSON, typed by its schema (tool_call.h). */
static void typed_value(sd_strbuf *b, const json_t *schema, const char *v, size_t n) {
    int bits = schema ? type_bits(schema, 0) : 1;
    if (bits != 1) {
        size_t a = 0, z = n;
        while (a < z && blank(v[a])) a++;
        while (z > a && blank(v[z - 1])) z--;
        json_t *j = json_loadb(v + a, z - a, JSON_DECODE_ANY, NULL);
        if (!j && (bits & (2 | 4 | 128)) && json_number(v + a, z - a)) {
            sd_strbuf_add(b, v + a, z - a);
            return;
        }
        bool ok = j && kind_allowed(bits, j) && !(json_is_string(j) && !(bits & 128) && (bits & 1));
        /* The value as written (JSON already): numbers keep their digits
         * (2.1, not a double's 17 of them). */
        if (ok) sd_strbuf_add(b, v + a, z - a);
        json_decref(j);
        if (ok) return;
    }
    json_str(b, v, n);
}

/* ---- the states ---- */

/* Each returns true when it changed something and the loop should go on. */

static bool step_text(sd_tool_parser *p) {
    const char *s = sd_strbuf_str(&p->in);
    size_t n = p->in.len;
    long at = find(s, n, OPEN);
    if (at < 0) {
        size_t keep = partial_tail(s, n, OPEN);
        size_t sent = emit_text_keep_blanks(p, s, n - keep);
        sd_strbuf_consume(&p->in, sent);
        return false;
    }
    emit_text_keep_blanks(p, s, (size_t)at); /* the blanks before the call are dropped */
    sd_strbuf_consume(&p->in, (size_t)at + strlen(OPEN));
    p->state = p->syntax == SD_TOOL_XML ? ST_XML_FN : ST_HERMES;
    p->started = false;
    return true;
}

static size_t skip_blanks(sd_tool_parser *p) {
    size_t k = 0;
    while (k < p->in.len && blank(p->in.s[k])) k++;
    sd_strbuf_consume(&p->in, k);
    return p->in.len;
}

/* Not a call after all: the opener goes out as content, the rest is text again. */
static void not_a_call(sd_tool_parser *p) {
    emit(p, SD_TOOL_EV_CONTENT, OPEN, strlen(OPEN));
    p->state = ST_TEXT;
}

/* "<TAG=NAME>" at the start of in: 1 with the name's bounds, 0 incomplete, -1 not one. */
static int tag_with_name(const sd_tool_parser *p, const char *tag, size_t *name_off, size_t *name_len) {
    const char *s = sd_strbuf_str(&p->in);
    size_t n = p->in.len, k = strlen(tag);
    int st = starts(s, n, tag);
    if (st <= 0) return st;
    long gt = find(s + k, n - k, ">");
    if (gt < 0) return n - k > MAX_TAG ? -1 : 0;
    *name_off = k;
    *name_len = (size_t)gt;
    return 1;
}

static bool step_xml_fn(sd_tool_parser *p) {
    if (!skip_blanks(p)) return false;
    size_t off, len;
    int st = tag_with_name(p, "<function=", &off, &len);
    if (st == 0) return false;
    if (st < 0) { not_a_call(p); return true; }
    free(p->fn);
    p->fn = strndup(p->in.s + off, len);
    if (!p->fn) p->oom = true;
    start_call(p, p->in.s + off, len);
    p->started = true;
    sd_strbuf_consume(&p->in, off + len + 1);
    p->state = ST_XML_BODY;
    return true;
}

/* One parameter: its key and raw value (one newline trimmed each side) as an ARGS piece. */
static void put_param(sd_tool_parser *p, const char *key, size_t klen, const char *v, size_t vlen) {
    if (vlen && v[0] == '\n') v++, vlen--;
    if (vlen && v[vlen - 1] == '\n') vlen--;
    sd_strbuf piece = {0};
    sd_strbuf_puts(&piece, p->n_params ? "," : "{");
    json_str(&piece, key, klen);
    sd_strbuf_puts(&piece, ":");
    char *k = strndup(key, klen);
    if (!k) p->oom = true;
    typed_value(&piece, k ? param_schema(p, p->fn, k) : NULL, v, vlen);
    free(k);
    if (piece.oom) p->oom = true;
    emit(p, SD_TOOL_EV_ARGS, sd_strbuf_str(&piece), piece.len);
    sd_strbuf_free(&piece);
    p->n_params++;
}

static void close_args(sd_tool_parser *p) {
    emit(p, SD_TOOL_EV_ARGS, p->n_params ? "}" : "{}", p->n_params ? 1 : 2);
}

static bool step_xml_body(sd_tool_parser *p) {
    if (!skip_blanks(p)) return false;
    const char *s = sd_strbuf_str(&p->in);
    size_t n = p->in.len, off, len;
    int st = tag_with_name(p, "<parameter=", &off, &len);
    if (st == 1) {
        size_t vstart = off + len + 1;
        long end = find(s + vstart, n - vstart, "</parameter>");
        if (end < 0) return false;
        put_param(p, s + off, len, s + vstart, (size_t)end);
        sd_strbuf_consume(&p->in, vstart + (size_t)end + strlen("</parameter>"));
        return true;
    }
    int fe = starts(s, n, "</function>"), ce = starts(s, n, CLOSE);
    if (st == 0 || fe == 0 || ce == 0) return false;
    if (fe == 1 || ce == 1) {
        close_args(p);
        sd_strbuf_consume(&p->in, strlen(fe == 1 ? "</function>" : CLOSE));
        p->state = fe == 1 ? ST_XML_END : ST_TEXT;
        return true;
    }
    /* Stray text inside a call: skipped up to the next tag. */
    long lt = find(s + 1, n - 1, "<");
    sd_strbuf_consume(&p->in, lt < 0 ? n : (size_t)lt + 1);
    return true;
}

static bool step_xml_end(sd_tool_parser *p) {
    if (!skip_blanks(p)) return false;
    int st = starts(p->in.s, p->in.len, CLOSE);
    if (st == 0) return false;
    if (st == 1) sd_strbuf_consume(&p->in, strlen(CLOSE));
    p->state = ST_TEXT;
    return true;
}

/* A JSON call {"name": N, "arguments"|"parameters": A} (A an object, or a
 * string holding one) as START + ARGS; false when s is not one. */
static bool json_call(sd_tool_parser *p, const char *s, size_t n) {
    json_t *j = json_loadb(s, n, 0, NULL);
    json_t *name = json_object_get(j, "name"), *args = json_object_get(j, "arguments");
    if (!args) args = json_object_get(j, "parameters");
    json_t *parsed = json_is_string(args) ? json_loads(json_string_value(args), 0, NULL) : NULL;
    if (parsed) args = parsed;
    bool ok = json_is_object(j) && json_is_string(name) && (!args || json_is_object(args));
    if (ok) {
        start_call(p, json_string_value(name), json_string_length(name));
        if (args) {
            sd_strbuf b = {0};
            json_dump_into(&b, args);
            if (b.oom) p->oom = true;
            emit(p, SD_TOOL_EV_ARGS, sd_strbuf_str(&b), b.len);
            sd_strbuf_free(&b);
        } else emit(p, SD_TOOL_EV_ARGS, "{}", 2);
    }
    json_decref(parsed);
    json_decref(j);
    return ok;
}

static bool step_hermes(sd_tool_parser *p) {
    const char *s = sd_strbuf_str(&p->in);
    long end = find(s, p->in.len, CLOSE);
    if (end < 0) return false;
    if (!json_call(p, s, (size_t)end)) {
        not_a_call(p);
        emit(p, SD_TOOL_EV_CONTENT, s, (size_t)end + strlen(CLOSE));
    }
    sd_strbuf_consume(&p->in, (size_t)end + strlen(CLOSE));
    p->state = ST_TEXT;
    return true;
}

static bool step_llama_start(sd_tool_parser *p, bool after) {
    const char *s = sd_strbuf_str(&p->in);
    size_t n = p->in.len, k = 0;
    while (k < n && (blank(s[k]) || (after && s[k] == ';'))) k++;
    if (k == n) return false;
    if (!after) {
        int tag = starts(s + k, n - k, "<|python_tag|>");
        if (tag == 0) return false;
        if (tag == 1) {
            sd_strbuf_consume(&p->in, k + strlen("<|python_tag|>"));
            return true;
        }
    }
    if (s[k] == '{') {
        sd_strbuf_consume(&p->in, k);
        p->state = ST_LLAMA_JSON;
    } else p->state = ST_TEXT_ONLY;
    return true;
}

/* Length of the JSON object at the start of s (braces balanced outside
 * strings), or 0 while it is incomplete. */
static size_t object_end(const char *s, size_t n) {
    int depth = 0;
    bool str = false, esc = false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (str) {
            if (esc) esc = false;
            else if (c == '\\') esc = true;
            else if (c == '"') str = false;
        } else if (c == '"') str = true;
        else if (c == '{' || c == '[') depth++;
        else if ((c == '}' || c == ']') && --depth == 0) return i + 1;
    }
    return 0;
}

static bool step_llama_json(sd_tool_parser *p) {
    size_t end = object_end(p->in.s, p->in.len);
    if (!end) return false;
    if (json_call(p, p->in.s, end)) {
        sd_strbuf_consume(&p->in, end);
        p->state = ST_LLAMA_AFTER;
    } else p->state = ST_TEXT_ONLY;
    return true;
}

static void run(sd_tool_parser *p) {
    for (bool more = true; more && !p->oom;) {
        switch (p->state) {
        case ST_TEXT: more = step_text(p); break;
        case ST_XML_FN: more = step_xml_fn(p); break;
        case ST_XML_BODY: more = step_xml_body(p); break;
        case ST_XML_END: more = step_xml_end(p); break;
        case ST_HERMES: more = step_hermes(p); break;
        case ST_LLAMA_START: more = step_llama_start(p, false); break;
        case ST_LLAMA_JSON: more = step_llama_json(p); break;
        case ST_LLAMA_AFTER: more = step_llama_start(p, true); break;
        default:
            emit(p, SD_TOOL_EV_CONTENT, p->in.s, p->in.len);
            sd_strbuf_clear(&p->in);
            more = false;
        }
    }
}

/* s[0..n) is blanks, or blanks and the start of a JSON object: a call's body cut off. */
static bool cut_json(const char *s, size_t n) {
    size_t k = 0;
    while (k < n && blank(s[k])) k++;
    return k == n || s[k] == '{';
}

static void reset_events(sd_tool_parser *p) {
    p->n_ev = 0;
    sd_strbuf_clear(&p->ev_text);
}

void sd_tool_parser_feed(sd_tool_parser *p, const char *s, size_t n) {
    reset_events(p);
    sd_strbuf_add(&p->in, s, n);
    if (p->in.oom) p->oom = true;
    run(p);
}

void sd_tool_parser_flush(sd_tool_parser *p) {
    reset_events(p);
    run(p);
    const char *s = sd_strbuf_str(&p->in);
    size_t n = p->in.len;
    switch (p->state) {
    case ST_XML_FN: break; /* cut off before its <function=NAME> tag closed: markup, dropped */
    case ST_XML_BODY: {
        size_t off, len;
        if (tag_with_name(p, "<parameter=", &off, &len) == 1) {
            size_t v = off + len + 1;
            put_param(p, s + off, len, s + v, n - v - partial_tail(s + v, n - v, "</parameter>"));
        }
        close_args(p);
        break;
    }
    case ST_HERMES: /* whole JSON, cut off before or inside its closing tag: still the call */
        if (json_call(p, s, n - partial_tail(s, n, CLOSE))) break;
        /* A call cut off inside its JSON is markup, dropped; text that never
         * began a JSON object goes back as content. */
        if (!cut_json(s, n)) { not_a_call(p); emit(p, SD_TOOL_EV_CONTENT, s, n); }
        break;
    case ST_LLAMA_JSON: /* a second call cut off is dropped; a first may be a JSON answer */
        if (!json_call(p, s, n) && !p->n_calls) emit(p, SD_TOOL_EV_CONTENT, s, n);
        break;
    case ST_XML_END: break;
    default:
        /* After a call: the start of a next call's opener, cut off, is
         * markup, and blanks are layout; both dropped. */
        if (p->n_calls && p->state == ST_TEXT) n -= partial_tail(s, n, OPEN);
        if (!(p->n_calls && all_blank(s, n))) emit(p, SD_TOOL_EV_CONTENT, s, n);
    }
    sd_strbuf_clear(&p->in);
    p->state = ST_TEXT_ONLY;
}

sd_status sd_tool_parser_init(sd_tool_parser *p, sd_tool_syntax s, const char *tools_json, size_t len, sd_err *err) {
    memset(p, 0, sizeof *p);
    p->syntax = s;
    p->state = s == SD_TOOL_LLAMA3 ? ST_LLAMA_START : ST_TEXT;
    if (tools_json) {
        json_t *t = json_loadb(tools_json, len, 0, NULL);
        if (!json_is_array(t)) {
            json_decref(t);
            return sd_err_set(err, SD_ERR_ARG, "tools: not a JSON array");
        }
        p->tools = t;
    }
    return SD_OK;
}

void sd_tool_parser_free(sd_tool_parser *p) {
    json_decref(p->tools);
    sd_strbuf_free(&p->in);
    sd_strbuf_free(&p->ev_text);
    free(p->ev);
    free(p->fn);
    memset(p, 0, sizeof *p);
}
