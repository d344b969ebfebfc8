#!/usr/bin/env bash
# `specdec quantize` command-line surface: help, usage errors (exit 2),
# runtime errors (exit 1, one line, no partial output), and a real run on a
# vocabulary GGUF whose metadata must survive unchanged except
# general.file_type / general.quantization_version (checked with the
# independent parser tests/cli/gguf_dump.py). Tensor conversion itself is
# read back and checked value by value in tests/cli/test_quantize.c.
set -euo pipefail
bin=${SD_SPECDEC_BIN:?}
src=${SD_SOURCE_DIR:-.}
py=/usr/bin/python3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

expect_rc() { # expect_rc CODE CMD...: runs CMD, checks its exit code
  local want=$1; shift
  set +e; "$@" >"$tmp/out" 2>"$tmp/err"; local rc=$?; set -e
  [ "$rc" = "$want" ] || { cat "$tmp/err" >&2; fail "exit $rc, wanted $want: $*"; }
}
one_error_line() { # stderr is exactly one line starting "specdec: "
  [ "$(wc -l <"$tmp/err")" = 1 ] || { cat "$tmp/err" >&2; fail "stderr is not one line"; }
  grep -q '^specdec: ' "$tmp/err" || fail "stderr does not start with 'specdec: '"
}

# help and usage errors
expect_rc 0 "$bin" quantize --help
grep -q 'q4_k_m' "$tmp/out" || fail "--help does not list q4_k_m"
expect_rc 2 "$bin" quantize
expect_rc 2 "$bin" quantize a.gguf b.gguf
expect_rc 2 "$bin" quantize a.gguf b.gguf q9_9
one_error_line
expect_rc 2 "$bin" quantize --threads 0 a.gguf b.gguf q8_0
one_error_line
expect_rc 2 "$bin" quantize --bogus a.gguf b.gguf q8_0
one_error_line

# runtime errors: missing input, unreadable input, unwritable output
expect_rc 1 "$bin" quantize "$tmp/missing.gguf" "$tmp/o.gguf" q8_0
one_error_line
[ ! -e "$tmp/o.gguf" ] || fail "output created for a missing input"
head -c 100 "$src/tests/data/tokenizer/ggml-vocab-llama-spm.gguf" >"$tmp/trunc.gguf"
expect_rc 1 "$bin" quantize "$tmp/trunc.gguf" "$tmp/o.gguf" q8_0
one_error_line
[ ! -e "$tmp/o.gguf" ] || fail "output created for a truncated input"
in="$src/tests/data/tokenizer/ggml-vocab-llama-spm.gguf"
expect_rc 1 "$bin" quantize "$in" "$tmp/no/such/dir/o.gguf" q8_0
one_error_line
ls "$tmp/no" 2>/dev/null && fail "something was created for an unwritable output"

# a real run: every key kept, file_type set, a one-line summary on stdout
for t in q8_0:7 q4_k_m:15 bf16:32 Q6_K:18; do
  name=${t%%:*}; ftype=${t##*:}
  expect_rc 0 "$bin" quantize "$in" "$tmp/$name.gguf" "$name"
  [ "$(wc -l <"$tmp/out")" = 1 ] || fail "summary is not one line"
  grep -q "file_type $ftype" "$tmp/out" || fail "summary lacks file_type $ftype: $(cat "$tmp/out")"
  [ ! -e "$tmp/$name.gguf.tmp" ] || fail "temporary file left behind"
  "$py" "$src/tests/cli/gguf_dump.py" "$in" >"$tmp/a.json"
  "$py" "$src/tests/cli/gguf_dump.py" "$tmp/$name.gguf" >"$tmp/b.json"
  "$py" - "$tmp/a.json" "$tmp/b.json" "$ftype" <<'EOF'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
ftype = int(sys.argv[3])
assert b["kv"]["general.file_type"] == ftype, b["kv"]["general.file_type"]
assert b["kv"]["general.quantization_version"] == 2
for k, v in a["kv"].items():
    if k != "general.file_type":
        assert b["kv"].get(k) == v, "key %s changed" % k
assert list(b["kv"])[: len(a["kv"])] == list(a["kv"]), "key order changed"
assert b["n_tensors"] == a["n_tensors"] == 0
EOF
done

# `specdec inspect`, when built in, reads the result
if "$bin" inspect --help >/dev/null 2>&1; then
  expect_rc 0 "$bin" inspect "$tmp/q8_0.gguf"
fi
echo "quantize.test.sh: ok"
