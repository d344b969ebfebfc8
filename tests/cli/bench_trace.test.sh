#!/usr/bin/env bash
# specdec bench --trace: the committed traces parse; a replay prints one row
# per drafter (greedy, ngram, suffix, auto with the memory) and every row is
# LOSSLESS; {{out:N}} carries an earlier answer into a prompt; a bad trace is
# one error line and a non-zero exit.
set -euo pipefail
bin=$(realpath "${SD_SPECDEC_BIN:?}")
. "${SD_SOURCE_DIR:?}/tests/support/checks.sh"
cd "$SD_SOURCE_DIR"

for t in bench/traces/*.trace; do
  "$bin" bench --trace "$t" -n 8 --reps 1 -t 1 > "$tmp/out" 2> "$tmp/err" || { fail "$t: $(cat "$tmp/err")"; continue; }
  rows=$(grep -c '^| ' "$tmp/out" || true)
  [ "$rows" = 5 ] || fail "$t: $rows table lines, want the header and 4 drafters"
  for d in "| greedy |" "| ngram |" "| suffix |" "| auto (suffix + ngram) |"; do
    grep -qF "$d" "$tmp/out" || fail "$t: no row $d"
  done
  grep '^| [a-z]' "$tmp/out" | grep -v '^| drafter' | grep -qv '| yes |' && fail "$t: a row is not LOSSLESS: $(cat "$tmp/out")"
done

# a trace whose second prompt is the first answer: the retry of an answer drafts from the memory
printf '=== a\ndef parse(buf):\n=== b\n{{out:1}}\n' > "$tmp/t.trace"
"$bin" bench --trace "$tmp/t.trace" -n 16 --reps 1 -t 1 > "$tmp/out" 2>/dev/null || fail "{{out:1}} trace failed"
grep -q "(2 requests" "$tmp/out" || fail "{{out:1}} trace: $(head -1 "$tmp/out")"

printf 'text before any request\n' > "$tmp/bad.trace"
if "$bin" bench --trace "$tmp/bad.trace" > /dev/null 2> "$tmp/err"; then fail "a bad trace was accepted"; fi
grep -q "text before the first '=== ' line" "$tmp/err" || fail "bad trace message: $(cat "$tmp/err")"
printf '=== a\n=== b\nsome prompt\n' > "$tmp/empty.trace"
if "$bin" bench --trace "$tmp/empty.trace" > /dev/null 2> "$tmp/err"; then fail "a request without a prompt was accepted"; fi
grep -q "request 'a' has no prompt" "$tmp/err" || fail "empty request message: $(cat "$tmp/err")"
if "$bin" bench --trace /nonexistent.trace > /dev/null 2> "$tmp/err"; then fail "a missing trace was accepted"; fi
grep -q "cannot read /nonexistent.trace" "$tmp/err" || fail "missing trace message: $(cat "$tmp/err")"
finish
