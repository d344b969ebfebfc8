#!/usr/bin/env bash
# specdec inspect: on the five vocab files and on a GGUF with tensors written by
# an independent Python writer, --json agrees with an independent stdlib parser
# (tests/cli/gguf_dump.py) on every key, type, value, tensor and total; the text
# output names the architecture, tokenizer and tensors; a truncated file exits 1
# with one line on stderr; bad usage exits 2.
set -u
cd "${SD_SOURCE_DIR:-$(dirname "$0")/../..}"
bin=${SD_SPECDEC_BIN:-build/specdec}
py=/usr/bin/python3
dump=tests/cli/gguf_dump.py
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fails=0; checks=0
fail() { echo "inspect.test: FAIL: $*"; fails=$((fails + 1)); }
ok() { checks=$((checks + 1)); }

# --json agrees with the independent parser
$py $dump make-sample "$tmp/sample.gguf" || fail "make-sample"
for f in tests/data/tokenizer/ggml-vocab-*.gguf "$tmp/sample.gguf"; do
  if ! "$bin" inspect --json "$f" >"$tmp/out.json" 2>"$tmp/err"; then fail "inspect --json $f: $(cat "$tmp/err")"; continue; fi
  if $py $dump check "$f" "$tmp/out.json"; then ok; else fail "inspect --json $f disagrees with gguf_dump.py"; fi
done

# the checker is not vacuous: a tampered token count is caught
$py - "$tmp/out.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); d["tokenizer"]["n_tokens"] += 1; d["tensors"][0]["shape"][0] += 1
json.dump(d, open(sys.argv[1], "w"))
PY
if $py $dump check "$tmp/sample.gguf" "$tmp/out.json" >/dev/null; then fail "check accepted a tampered JSON"; else ok; fi

# text output: header facts, tokenizer, tensor lines, total
"$bin" inspect tests/data/tokenizer/ggml-vocab-qwen2.gguf >"$tmp/q.txt" || fail "inspect qwen2 text"
grep -qx 'architecture: qwen2' "$tmp/q.txt" && ok || fail "qwen2: no 'architecture: qwen2'"
grep -qx 'tokenizer: gpt2, 151936 tokens' "$tmp/q.txt" && ok || fail "qwen2: tokenizer line"
grep -qE '^  tokenizer\.ggml\.tokens +array +\[string x 151936\] "!", ' "$tmp/q.txt" && ok || fail "qwen2: tokens line"
grep -qE '^  qwen2\.context_length +u32 +32768$' "$tmp/q.txt" && ok || fail "qwen2: context_length line"
"$bin" inspect "$tmp/sample.gguf" >"$tmp/s.txt" || fail "inspect sample text"
grep -qE '^  blk\.0\.ffn_down\.weight +q4_K +\[256, 1, 2\] +288 bytes$' "$tmp/s.txt" && ok || fail "sample: q4_K tensor line"
grep -qE '^  output\.weight +q6_K +\[256, 2\] +420 bytes$' "$tmp/s.txt" && ok || fail "sample: q6_K tensor line"
grep -qx 'total: 6 tensors, 1175 parameters, 911 bytes (0.00 MiB)' "$tmp/s.txt" && ok || fail "sample: total line"
grep -qx 'alignment: 64' "$tmp/s.txt" && ok || fail "sample: alignment"

# errors: truncated file -> exit 1, one line "specdec: ..."
head -c 100000 tests/data/tokenizer/ggml-vocab-llama-spm.gguf >"$tmp/trunc.gguf"
"$bin" inspect "$tmp/trunc.gguf" >"$tmp/o" 2>"$tmp/e"; rc=$?
[ $rc -eq 1 ] && ok || fail "truncated: exit $rc, want 1"
[ "$(wc -l <"$tmp/e")" -eq 1 ] && grep -qE '^specdec: .*trunc.gguf: .*(past end of file|does not fit).*truncated or corrupt file$' "$tmp/e" && ok \
  || fail "truncated: stderr is not one 'specdec: ... past end of file' line: $(cat "$tmp/e")"
[ ! -s "$tmp/o" ] && ok || fail "truncated: printed to stdout"
"$bin" inspect "$tmp/missing.gguf" 2>"$tmp/e"; rc=$?
[ $rc -eq 1 ] && [ "$(wc -l <"$tmp/e")" -eq 1 ] && ok || fail "missing file: exit $rc / $(cat "$tmp/e")"
printf 'NOTGGUF!' >"$tmp/bad.gguf"
"$bin" inspect --json "$tmp/bad.gguf" 2>"$tmp/e"; rc=$?
[ $rc -eq 1 ] && grep -q 'bad magic' "$tmp/e" && ok || fail "bad magic: exit $rc / $(cat "$tmp/e")"

# usage errors -> exit 2 with one line; --help -> 0
for args in "" "--bogus $tmp/sample.gguf" "$tmp/sample.gguf $tmp/sample.gguf"; do
  # shellcheck disable=SC2086
  "$bin" inspect $args >/dev/null 2>"$tmp/e"; rc=$?
  [ $rc -eq 2 ] && [ "$(wc -l <"$tmp/e")" -eq 1 ] && grep -q '^specdec: ' "$tmp/e" && ok \
    || fail "usage '$args': exit $rc / $(cat "$tmp/e")"
done
"$bin" inspect --help | grep 'usage: specdec inspect' >/dev/null && ok || fail "--help"

echo "inspect.test: $checks checks passed, $fails failed"
[ $fails -eq 0 ] && [ $checks -ge 24 ]
