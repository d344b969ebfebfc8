#!/usr/bin/env bash
# A model file truncated by another process while specdec has it mapped:
# the next read of a weight page raises SIGBUS, and specdec must end with one
# line, `specdec: model file changed or truncated while in use (SIGBUS)`, and
# exit code 1 (src/cli/sigbus.c), not the shell's bare "Bus error".
# The moment is made deterministic with a FIFO as bench's only prompt file:
# bench maps the model, then opens the prompt to read it; opening the FIFO
# for writing waits for exactly that, so the truncation lands after the
# mapping and before the first forward.
set -euo pipefail
bin=${SD_SPECDEC_BIN:?}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

cp models/fixture-target.gguf "$tmp/model.gguf"
mkdir "$tmp/prompts"
mkfifo "$tmp/prompts/a.txt"
"$bin" bench -m "$tmp/model.gguf" --prompts "$tmp/prompts" --tables classes --drafters ngram -n 4 --reps 1 -t 1 \
  >"$tmp/out" 2>"$tmp/err" &
pid=$!
if ! timeout 120 bash -c 'exec 3>"$1" && truncate -s 0 "$2" && printf "class: x\nint main(void)" >&3' \
  _ "$tmp/prompts/a.txt" "$tmp/model.gguf"; then
  kill "$pid" 2>/dev/null || true
  fail "bench never opened its prompt file: $(cat "$tmp/err")"
fi
rc=0
wait "$pid" || rc=$?
[ "$rc" = 1 ] || fail "exit code $rc, want 1; stderr: $(cat "$tmp/err")"
# bench's progress line ("\rbench: ...", no newline) may come before the message.
msg="specdec: model file changed or truncated while in use (SIGBUS)"
[ "$(tail -c $((${#msg} + 1)) "$tmp/err")" = "$msg" ] || fail "stderr does not end with the message: $(cat "$tmp/err")"
[ "$(grep -c specdec: "$tmp/err")" = 1 ] || fail "more than one message: $(cat "$tmp/err")"
echo "sigbus.test.sh: truncated model -> one-line SIGBUS message, exit 1"
