/* specdec tokenize: print the token ids (or id and piece) of a text, using
 * the tokenizer stored in a GGUF model or vocab file (specdec_vocab: the
 * public API only). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "cli/model_args.h"
#include "specdec.h"

static const char USAGE[] =
    "usage: specdec tokenize [-m MODEL.gguf] (-p TEXT | -f FILE) [options]\n"
    "\n"
    "Prints the token ids of TEXT on one line, separated by spaces.\n"
    "\n"
    "  -m, --model FILE     GGUF model or vocab-only file (default " CLI_DEFAULT_TARGET ")\n"
    "  -p, --prompt TEXT    text to tokenize (taken literally: no escapes; valid UTF-8, as for\n"
    "                       generate -p)\n"
    "  -f, --file FILE      read the text from FILE ('-' = stdin), bytes as they are\n"
    "                       (invalid UTF-8 too: such bytes become byte tokens)\n"
    "      --add-special    add BOS/EOS as the model asks (default: none)\n"
    "      --parse-special  match special-token texts such as <|im_start|>\n"
    "      --show           one line per token: id, TAB, its piece (\\n \\t \\r \\\\\n"
    "                       and \\xNN escapes for control bytes and invalid UTF-8)\n"
    "  -h, --help           this help\n"
    "\n" CLI_DEFAULT_MODELS_HELP;

static int usage_error(const char *msg, const char *arg) {
    fprintf(stderr, "specdec: %s%s%s%s (see specdec tokenize --help)\n", msg, arg ? "'" : "", arg ? arg : "",
            arg ? "'" : "");
    return 2;
}

static int is_opt(const char *a, const char *short_name, const char *long_name) {
    return !strcmp(a, short_name) || !strcmp(a, long_name);
}

static char *read_all(FILE *f, size_t *len) {
    size_t cap = 1 << 16, n = 0, got;
    char *buf = malloc(cap);
    while (buf && (got = fread(buf + n, 1, cap - n, f)) > 0) {
        n += got;
        if (n == cap) {
            char *b = realloc(buf, cap * 2);
            if (!b) free(buf);
            buf = b;
            cap *= 2;
        }
    }
    if (buf && ferror(f)) {
        free(buf);
        buf = NULL;
    }
    *len = n;
    return buf;
}

/* Prints a piece so that one token stays on one line. */
static void print_escaped(const char *s, size_t n) {
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t k;
        if (c == '\n') fputs("\\n", stdout), k = 1;
        else if (c == '\t') fputs("\\t", stdout), k = 1;
        else if (c == '\r') fputs("\\r", stdout), k = 1;
        else if (c == '\\') fputs("\\\\", stdout), k = 1;
        else if (c < 0x20 || c == 0x7F) printf("\\x%02X", c), k = 1;
        else if ((k = specdec_utf8_char_len(s + i, n - i)) > 0) fwrite(s + i, 1, k, stdout);
        else printf("\\x%02X", c), k = 1;
        i += k;
    }
}

/* A token's piece into *buf (grown to fit); its length, or -1. */
static int32_t piece_of(const specdec_vocab *v, specdec_token id, char **buf, size_t *cap) {
    int32_t len = specdec_vocab_token_to_piece(v, id, true, *buf, *cap);
    if (len < 0 || (size_t)len <= *cap) return len;
    char *b = realloc(*buf, (size_t)len);
    if (!b) return -1;
    *buf = b;
    *cap = (size_t)len;
    return specdec_vocab_token_to_piece(v, id, true, *buf, *cap);
}

static void print_ids(const specdec_vocab *v, const specdec_token *ids, size_t n, int show) {
    if (!show) {
        for (size_t i = 0; i < n; i++) printf(i ? " %d" : "%d", ids[i]);
        putchar('\n');
        return;
    }
    size_t cap = 64;
    char *piece = malloc(cap);
    for (size_t i = 0; piece && i < n; i++) {
        int32_t len = piece_of(v, ids[i], &piece, &cap);
        printf("%d\t", ids[i]);
        print_escaped(piece, len > 0 ? (size_t)len : 0);
        putchar('\n');
    }
    free(piece);
}

int cmd_tokenize(int argc, char **argv) {
    const char *model = CLI_DEFAULT_TARGET, *prompt = NULL, *file = NULL;
    int add_special = 0, parse_special = 0, show = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            fputs(USAGE, stdout);
            return 0;
        } else if (!strcmp(a, "--add-special")) add_special = 1;
        else if (!strcmp(a, "--parse-special")) parse_special = 1;
        else if (!strcmp(a, "--show")) show = 1;
        else if (is_opt(a, "-m", "--model") || is_opt(a, "-p", "--prompt") || is_opt(a, "-f", "--file")) {
            if (i + 1 >= argc) return usage_error("missing value for ", a);
            const char **dst = is_opt(a, "-m", "--model") ? &model : is_opt(a, "-p", "--prompt") ? &prompt : &file;
            *dst = argv[++i];
        } else {
            return usage_error("unknown option ", a);
        }
    }
    if (!prompt == !file) return usage_error("give exactly one of -p TEXT and -f FILE", NULL);
    specdec_error err = {0};
    /* -p is text, refused as generate refuses it; -f takes any bytes */
    if (prompt && specdec_utf8_check(prompt, strlen(prompt), &err) != SPECDEC_OK) {
        fprintf(stderr, "specdec: the prompt (-p) is %s (-f FILE takes any bytes)\n", err.message);
        return 2;
    }

    size_t len = prompt ? strlen(prompt) : 0;
    char *text = NULL;
    if (file) {
        FILE *f = strcmp(file, "-") ? fopen(file, "rb") : stdin;
        if (!f) {
            fprintf(stderr, "specdec: cannot open %s\n", file);
            return 1;
        }
        text = read_all(f, &len);
        if (f != stdin) fclose(f);
        if (!text) {
            fprintf(stderr, "specdec: cannot read %s\n", file);
            return 1;
        }
    }
    specdec_vocab *vocab = NULL;
    specdec_token *ids = NULL;
    size_t n_ids = 0;
    int rc = 0;
    if (specdec_vocab_load(model, &vocab, &err) ||
        specdec_vocab_tokenize(vocab, prompt ? prompt : text, len, add_special, parse_special, &ids, &n_ids, &err)) {
        fprintf(stderr, "specdec: %s\n", err.message); /* the message names the file */
        rc = 1;
    } else {
        print_ids(vocab, ids, n_ids, show);
    }
    specdec_free(ids);
    specdec_vocab_free(vocab);
    free(text);
    return rc;
}
