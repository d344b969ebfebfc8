#!/usr/bin/env bash
# specdec tokenize: ids of a few gold vectors (tests/data/tokenizer) per vocab,
# via -p and -f; --show, --add-special, --parse-special; exit codes.
set -euo pipefail
BIN=${SD_SPECDEC_BIN:-build/specdec}
DATA=tests/data/tokenizer
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# Writes gold vector K of VOCAB to $TMP/in (exact bytes) and its ids to $TMP/want.
gold() {
    python3 - "$DATA/ggml-vocab-$1.gguf" "$2" "$TMP" <<'PY'
import sys
base, k, tmp = sys.argv[1], int(sys.argv[2]), sys.argv[3]
inputs = open(base + ".inp", "rb").read().split(b"\n__ggml_vocab_test__\n")
outs = open(base + ".out", "rb").read().split(b"\n")
open(tmp + "/in", "wb").write(inputs[k])
open(tmp + "/want", "wb").write(b" ".join(outs[k].split()) + b"\n")
PY
}

# Two vectors per vocab (every vector is checked in-process by
# test_tokenizer_vectors; this checks the command's plumbing, and each run
# loads a vocab, which is slow under ASan).
n=0
for vocab in qwen2 qwen35 llama-bpe gpt-2 llama-spm; do
    for k in 1 33; do
        gold "$vocab" "$k"
        "$BIN" tokenize -m "$DATA/ggml-vocab-$vocab.gguf" -f "$TMP/in" > "$TMP/got"
        cmp -s "$TMP/got" "$TMP/want" || fail "$vocab vector $k: got '$(cat "$TMP/got")' want '$(cat "$TMP/want")'"
        n=$((n + 1))
    done
done

# The option tests use the small gpt-2 and llama-spm vocabs (fast to load).
G=$DATA/ggml-vocab-gpt-2.gguf
S=$DATA/ggml-vocab-llama-spm.gguf
# -p and stdin (-f -).
[ "$("$BIN" tokenize -m "$G" -p "Hello world")" = "15496 995" ] || fail "-p Hello world"
[ "$(printf 'Hello world' | "$BIN" tokenize -m "$G" -f -)" = "15496 995" ] || fail "-f - (stdin)"

# --parse-special: <|endoftext|> is one token (50256) only when asked.
[ "$("$BIN" tokenize -m "$G" -p '<|endoftext|>' --parse-special)" = "50256" ] || fail "--parse-special"
[ "$("$BIN" tokenize -m "$G" -p '<|endoftext|>' | wc -w)" -gt 1 ] || fail "special text without --parse-special"

# --add-special: llama-spm adds BOS 1 (and no EOS); gpt-2 adds nothing.
[ "$("$BIN" tokenize -m "$S" -p "Hello world" --add-special)" = "1 15043 3186" ] || fail "spm --add-special"
[ "$("$BIN" tokenize -m "$G" -p "Hello world" --add-special)" = "15496 995" ] || fail "gpt-2 --add-special"

# --show: id TAB piece, one line per token, newlines escaped.
printf '15496\tHello\n995\t world\n198\t\\n\n' > "$TMP/want_show"
"$BIN" tokenize -m "$G" -p $'Hello world\n' --show > "$TMP/show"
cmp -s "$TMP/show" "$TMP/want_show" || fail "--show: $(cat "$TMP/show")"

# Empty text: an empty line.
[ "$("$BIN" tokenize -m "$S" -p "" | wc -c)" = 1 ] || fail "empty text"

# Exit codes and one-line errors.
set +e
"$BIN" tokenize --help > /dev/null; [ $? = 0 ] || fail "--help exit code"
"$BIN" tokenize -m "$S" -p x -f "$TMP/in" 2> "$TMP/err"; [ $? = 2 ] || fail "-p with -f: exit code"
[ "$(wc -l < "$TMP/err")" = 1 ] && grep -q '^specdec: ' "$TMP/err" || fail "usage error message"
"$BIN" tokenize -m "$S" 2> /dev/null; [ $? = 2 ] || fail "missing text: exit code"
"$BIN" tokenize -m "$S" -p x --bogus 2> /dev/null; [ $? = 2 ] || fail "unknown option: exit code"
"$BIN" tokenize -m "$TMP/none.gguf" -p x 2> "$TMP/err"; [ $? = 1 ] || fail "missing model: exit code"
[ "$(wc -l < "$TMP/err")" = 1 ] || fail "runtime error message"
"$BIN" tokenize -m "$DATA/ggml-vocab-qwen2.gguf.inp" -p x 2> /dev/null; [ $? = 1 ] || fail "not a GGUF: exit code"
set -e
echo "tokenize CLI: $n gold vectors + options ok"
