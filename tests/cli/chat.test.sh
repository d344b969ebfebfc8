#!/usr/bin/env bash
# specdec chat: a conversation on stdin; answers stream to stdout, a status line
# per answer goes to stderr; the second turn reuses the cached prompt; with
# /spec off the same first answer comes out (temperature 0: lossless).
set -u
BIN=${SD_SPECDEC_BIN:-build/specdec}
cd "${SD_SOURCE_DIR:-$(dirname "$0")/../..}"
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; for f in a.out a.err b.out b.err; do echo "--- $f"; cat "$TMP/$f"; done; exit 1; }
run() { "$BIN" chat -m models/fixture-target.gguf -md models/fixture-draft.gguf --temp 0 -n 24 -t 1; }
printf 'def add(a, b):\nand subtract?\n/quit\n' | run > "$TMP/a.out" 2> "$TMP/a.err" || fail "exit status $?"
printf '/spec off\ndef add(a, b):\n/bogus\n/reset\n' | run > "$TMP/b.out" 2> "$TMP/b.err" || fail "exit status $?"
sed -n 1p "$TMP/a.err" | grep -q 'template chatml' || fail "no banner naming the template"
[ "$(grep -c '^\[ .* tok/s' "$TMP/a.err")" = 2 ] || fail "want 2 status lines"
grep '^\[' "$TMP/a.err" | sed -n 1p | grep -q 'drafted [0-9]* / accepted [0-9]*' || fail "no acceptance in the status line"
grep '^\[' "$TMP/a.err" | sed -n 2p | grep -q 'prompt [0-9]* new + [1-9][0-9]* cached' || fail "turn 2 reused no prompt"
grep '^\[' "$TMP/b.err" | grep -q 'speculation off' || fail "/spec off not in effect"
grep -q 'commands: /spec on|off' "$TMP/b.err" || fail "unknown command not explained"
grep -q 'new conversation' "$TMP/b.err" || fail "/reset not acknowledged"
[ -s "$TMP/b.out" ] || fail "no answer"
# Run A's output starts with its first answer; run B's is that answer alone.
head -c "$(stat -c %s "$TMP/b.out")" "$TMP/a.out" | cmp -s - "$TMP/b.out" || fail "the answer changed with /spec off"
echo "ok"
