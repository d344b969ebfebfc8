#!/usr/bin/env bash
# specdec serve keeps one suffix memory for its lifetime: with --spec suffix a
# request sent again (a retry) drafts from the first answer and accepts more
# draft tokens than the first time, with the same answer (lossless); the same
# with --suffix-tokens 0 (no memory) does not gain; a bad --suffix-tokens is
# a usage error. Fixed K, gate off: the drafting does not depend on timings.
source "$(dirname "$0")/lib.sh"
fail() { echo "FAIL: $*"; echo "--- server log"; tail -20 "$SERVER_LOG"; exit 1; }

"$BIN" serve --suffix-tokens -1 2>"$TMP/e" && fail "--suffix-tokens -1 accepted"
grep -q "suffix-tokens -1: out of range" "$TMP/e" || fail "bad --suffix-tokens message: $(cat "$TMP/e")"

BODY='{"prompt":"def add(a, b):\n    return a + b\n\ndef mul(a, b):","max_tokens":48,"temperature":0}'
# ask TAG: one completion, its text and accepted count into $TMP/TAG
ask() {
  curl -sf "$BASE/v1/completions" -d "$BODY" > "$TMP/$1.json" || fail "request $1 failed"
  /usr/bin/python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["timings"]["draft_n_accepted"]); print(r["choices"][0]["text"])' \
    "$TMP/$1.json" > "$TMP/$1"
}
for mem in 4096 0; do
  start_server -m models/fixture-target.gguf -t 1 -c 512 --spec suffix --suffix-tokens $mem --fixed-k --gate 0 --draft-max 8
  ask first; ask retry
  a1=$(head -1 "$TMP/first"); a2=$(head -1 "$TMP/retry")
  [ "$(tail -n +2 "$TMP/first")" = "$(tail -n +2 "$TMP/retry")" ] || fail "memory $mem: the retry's answer differs"
  echo "suffix memory $mem: accepted $a1 then $a2 on the retry"
  if [ $mem -gt 0 ]; then [ "$a2" -gt "$a1" ] || fail "the retry did not draft from the memory ($a1 -> $a2)"
  else [ "$a2" = "$a1" ] || fail "without a memory the retry changed ($a1 -> $a2)"; fi
  stop_server "$SERVER_PID"
done
echo "ok"
