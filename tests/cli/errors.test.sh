#!/usr/bin/env bash
# Error paths of the front end: each ends with one line `specdec: <reason>`
# on stderr and a non-zero exit (1 runtime, 2 usage), and fails before any
# slow work: a missing or unreadable prompt file, output that cannot be
# written (stdout on a full disk, bench --json/--plot paths), a missing
# --prompts directory, a malformed --seed, invalid UTF-8 in -p. Invalid UTF-8 in a
# prompt file is no error: byte-level BPE keeps every byte (round trip via --show).
set -euo pipefail
bin=${SD_SPECDEC_BIN:?}
. "${SD_SOURCE_DIR:?}/tests/support/checks.sh"
T=models/fixture-target.gguf

# expect CODE PATTERN CMD...: exit CODE, stderr exactly one line `specdec: ...PATTERN`.
expect() {
  local want=$1 pat=$2; shift 2
  local rc=0
  "$bin" "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  [ "$rc" = "$want" ] || { fail "$* exited $rc, want $want: $(cat "$tmp/err")"; return; }
  [ "$(wc -l <"$tmp/err")" = 1 ] && grep -q "^specdec: .*$pat" "$tmp/err" ||
    fail "$*: stderr is not one line with '$pat': $(cat "$tmp/err")"
}

# Prompt files: read before any model loads (so no draft note comes first).
expect 1 "$tmp/none.txt: cannot open the prompt file: No such file" generate -t 1 -f "$tmp/none.txt"
expect 1 "$tmp: cannot read the prompt file: Is a directory" generate -t 1 -f "$tmp"
expect 1 "cannot open $tmp/none.txt" tokenize -f "$tmp/none.txt"
expect 1 "cannot read $tmp" tokenize -f "$tmp"

# stdout that cannot be written (/dev/full: ENOSPC) is an error, not exit 0.
if [ -w /dev/full ]; then
  for cmd in "tokenize -p hi" "inspect $T" "inspect --json $T" "--help" "generate --help"; do
    rc=0
    "$bin" $cmd >/dev/full 2>"$tmp/err" || rc=$?
    [ "$rc" = 1 ] && [ "$(cat "$tmp/err")" = "specdec: cannot write the output: No space left on device" ] ||
      fail "$cmd >/dev/full: rc $rc, $(cat "$tmp/err")"
  done
  rc=0
  "$bin" generate -p hi -n 2 -t 1 --spec none --json >/dev/full 2>"$tmp/err" || rc=$?
  [ "$rc" = 1 ] && [ "$(tail -n 1 "$tmp/err")" = "specdec: cannot write the output: No space left on device" ] ||
    fail "generate --json >/dev/full: rc $rc, $(cat "$tmp/err")"
else
  echo "note: no writable /dev/full, stdout write errors not checked"
fi

# bench: output paths are checked before the run (no progress line yet).
mkdir "$tmp/prompts"
printf 'class: code\nint main' >"$tmp/prompts/a.txt"
quick=(-m "$T" --prompts "$tmp/prompts" -n 2 --reps 1 -t 1)
expect 1 "$tmp/no-dir/b.json: cannot write: No such file or directory" bench "${quick[@]}" --tables classes \
  --json "$tmp/no-dir/b.json"
expect 1 "$tmp/prompts: cannot write: Is a directory" bench "${quick[@]}" --plot "$tmp/prompts"
[ -e "$tmp/no-dir" ] && fail "bench created the --json directory"
"$bin" bench "${quick[@]}" --tables classes --drafters ngram --json "$tmp/ok.json" >/dev/null 2>&1 ||
  fail "bench with a writable --json failed"
[ -s "$tmp/ok.json" ] || fail "bench wrote no JSON after its check"
expect 1 "$tmp/none: cannot open prompt directory" bench -m "$T" --prompts "$tmp/none" -t 1
# (quick flags, so a regression costs seconds, not a whole benchmark)
expect 2 "--seed 12x: not an integer" bench "${quick[@]}" --tables classes --drafters ngram --seed 12x
expect 2 "--seed -1: out of range" bench "${quick[@]}" --tables classes --drafters ngram --seed -1

# quantize: missing operands are one line too (not the whole usage text).
expect 2 "quantize: needs IN.gguf OUT.gguf TYPE, got 2 arguments" quantize a.gguf b.gguf
expect 2 "quantize: --threads needs a value" quantize a.gguf b.gguf q8_0 --threads

# A run that fails before any token leaves stdout empty (no stray newline).
"$bin" generate -p 'int main' -c 1 -t 1 --spec none >"$tmp/out" 2>/dev/null && fail "-c 1 did not fail"
[ -s "$tmp/out" ] && fail "-c 1: stdout is not empty: '$(cat "$tmp/out")'"

# generate -f - reads stdin: the same text as -p.
a=$(printf 'int main' | "$bin" generate -f - -n 4 -t 1 --spec none 2>/dev/null)
b=$("$bin" generate -p 'int main' -n 4 -t 1 --spec none 2>/dev/null)
[ "$a" = "$b" ] || fail "-f - and -p differ: '$a' vs '$b'"

# Invalid UTF-8 (a lone continuation byte, 0xFF, a truncated sequence):
# tokenized losslessly into byte tokens, and generate runs on it.
printf '\xff\xfe abc \xc3 \x80x\xe2\x82' >"$tmp/bad.txt"
"$bin" tokenize -f "$tmp/bad.txt" --show >"$tmp/show" || fail "tokenize of invalid UTF-8 failed"
python3 - "$tmp/show" "$tmp/bad.txt" <<'PY' || fail "invalid UTF-8 is not kept byte for byte: $(cat "$tmp/show")"
import re, sys
out = b""
for line in open(sys.argv[1], "rb").read().split(b"\n")[:-1]:
    piece = line.split(b"\t", 1)[1]
    piece = re.sub(rb"\\x([0-9A-F]{2})", lambda m: bytes([int(m.group(1), 16)]), piece)
    out += piece.replace(b"\\n", b"\n").replace(b"\\t", b"\t").replace(b"\\r", b"\r").replace(b"\\\\", b"\\")
assert out == open(sys.argv[2], "rb").read(), out
PY
n_tok=$("$bin" tokenize -f "$tmp/bad.txt" --add-special | wc -w)
n_gen=$("$bin" generate -f "$tmp/bad.txt" -n 2 -t 1 --spec none --json 2>/dev/null |
  python3 -c 'import json,sys; print(json.load(sys.stdin)["n_prompt"])') || fail "generate on invalid UTF-8 failed"
[ "$n_tok" = "$n_gen" ] || fail "generate saw $n_gen prompt tokens, tokenize $n_tok"

# A -p prompt must be text: invalid UTF-8 there is refused (as the server refuses it), naming the byte.
expect 2 "the prompt (-p) is not valid UTF-8 at byte 4 (-f FILE takes any bytes)" generate -t 1 -p $'abc \xff def'
expect 2 "the prompt (-p) is not valid UTF-8 at byte 2" generate -t 1 -p $'ab\xe2\x82'

# Usage errors name the allowed range, and an empty -p is one, before any model loads.
expect 2 "--draft-max 100: out of range \[1, 64\]" generate -p hi --draft-max 100
expect 2 "the prompt (-p) is empty" generate -p ''
expect 2 "--tree-width 9: out of range \[1, 8\]" generate -p hi --tree 8 --tree-width 9
# A token tree on a hybrid target: one recurrent state cannot hold several branches.
expect 1 "token trees need a dense target: qwen35 has recurrent layers" \
  generate -m models/fixture-q35-target.gguf -p hi -n 2 -t 1 --spec ngram --tree 8
# KV cache types: llama.cpp's names only, refused in one line by every front door.
expect 2 "--cache-type-k q8_1: not one of f16 | f32 | bf16 | q8_0 | q4_0 | q4_1 | iq4_nl | q5_0 | q5_1" \
  generate -p hi --cache-type-k q8_1
expect 2 "-ctv Q8_0: not one of" generate -p hi -ctv Q8_0
expect 2 "-ctk q4_k: not one of" chat -ctk q4_k
expect 2 "-ctv: needs a value\|-ctv needs a value" bench -ctv
expect 2 "--cache-type-v iq2_xxs: not one of" serve --cache-type-v iq2_xxs

# llama.cpp's long spellings are aliases; piped stdout holds exactly the
# generated text (the --json "text" of the same greedy run), no added newline.
"$bin" generate --model "$T" --prompt 'def f():' --n-predict 6 --threads 1 --ctx-size 64 --spec none \
  >"$tmp/text" 2>/dev/null || fail "long option spellings were refused"
"$bin" generate -m "$T" -p 'def f():' -n 6 -t 1 -c 64 --spec none --json 2>/dev/null |
  python3 -c 'import json,sys; sys.stdout.write(json.load(sys.stdin)["text"])' >"$tmp/json_text"
cmp -s "$tmp/text" "$tmp/json_text" || fail "piped stdout differs from the generated text: $(od -c "$tmp/text" | tail -2)"

finish
