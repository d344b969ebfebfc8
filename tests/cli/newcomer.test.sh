#!/usr/bin/env bash
# What a new user runs into first, each a check that fails on the old behaviour:
# --version; every command with default models says in --help where they are
# looked for; tokenize -p refuses invalid UTF-8 as generate -p does; chat on the
# fixture (512-token context) keeps a short conversation's turns without -n,
# prints no rate for a one-token answer, and warns about -c beyond the model's
# trained context as generate does.
set -uo pipefail
bin=${SD_SPECDEC_BIN:?}
. "${SD_SOURCE_DIR:?}/tests/support/checks.sh"
T=models/fixture-target.gguf D=models/fixture-draft.gguf

# --version: top level and after any command, one line, exit 0.
version=$(sed -n 's/^#define SPECDEC_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' include/specdec.h | paste -sd.)
for args in "--version" "generate --version" "chat --version" "serve --version" "bench --version" \
            "tokenize --version" "inspect --version" "quantize --version"; do
  out=$("$bin" $args 2>&1) || fail "specdec $args exited $?"
  [ "$out" = "specdec $version" ] || fail "specdec $args printed '$out', want 'specdec $version'"
done
"$bin" --help | grep -- '--version' >/dev/null || fail "specdec --help does not mention --version"

# Every command with default models says where they are looked for.
for cmd in generate bench tokenize serve chat; do
  "$bin" $cmd --help | tr '\n' ' ' | grep -q 'relative to the current directory: *run from the repository root' ||
    fail "specdec $cmd --help does not say where the default models are looked for"
done
# generate --help: temperature > 0 is byte-identical to plain sampling, not only "in distribution".
"$bin" generate --help | grep 'in distribution' >/dev/null && fail "generate --help still says 'in distribution'"
"$bin" generate --help | tr '\n' ' ' | grep -q 'same seed at --temp > 0, *byte for byte, unless --draft-sample' ||
  fail "generate --help does not say temperature > 0 is byte-identical unless --draft-sample"

# tokenize -p: invalid UTF-8 refused with generate's message (exit 2); -f keeps taking any bytes.
for p in $'abc \xff def' $'ab\xe2\x82'; do
  rc=0; "$bin" tokenize -p "$p" >"$tmp/out" 2>"$tmp/tok.err" || rc=$?
  rc2=0; "$bin" generate -t 1 -n 1 -p "$p" >/dev/null 2>"$tmp/gen.err" || rc2=$?
  [ "$rc" = 2 ] && [ "$rc2" = 2 ] || fail "invalid UTF-8 in -p: tokenize exit $rc, generate exit $rc2 (want 2, 2)"
  cmp -s "$tmp/tok.err" "$tmp/gen.err" || fail "tokenize and generate refuse differently: $(cat "$tmp/tok.err" "$tmp/gen.err")"
done
printf 'abc \xff def' >"$tmp/bad.txt"
"$bin" tokenize -f "$tmp/bad.txt" >/dev/null || fail "tokenize -f of invalid UTF-8 failed"

chat() { "$bin" chat -m "$T" -md "$D" --temp 0 -t 1 "$@"; }
msgs=$'def add(a, b):\nand subtract?\nnow multiply\n/quit\n'
# Without -n: three short turns fit the fixture's 512-token context, nothing dropped.
printf '%s' "$msgs" | chat >"$tmp/c.out" 2>"$tmp/c.err" || fail "chat exited $?"
[ "$(grep -c '^\[ .* tok/s' "$tmp/c.err")" = 3 ] || fail "want 3 status lines: $(cat "$tmp/c.err")"
grep -q 'context full' "$tmp/c.err" && fail "a three-turn conversation dropped turns: $(cat "$tmp/c.err")"
# The check can fail: 256-token answers (the old default) leave room for no earlier turn.
printf '%s' "$msgs" | chat -n 256 >/dev/null 2>"$tmp/c256.err"
grep -q 'context full' "$tmp/c256.err" || fail "-n 256 in a 512-token context dropped nothing: the check above proves nothing"
# A one-token answer: no rate made from nothing (it printed 723065.8 tok/s).
printf 'def add(a, b):\n/quit\n' | chat -n 1 >/dev/null 2>"$tmp/c1.err" || fail "chat -n 1 exited $?"
grep '^\[' "$tmp/c1.err" | grep -q '^\[ n/a tok/s | 1 token ' || fail "one-token answer: $(grep '^\[' "$tmp/c1.err")"
# -c beyond the trained context: the same warning as generate's.
n_train=$("$bin" inspect "$T" | awk '$1 ~ /\.context_length$/ { print $3; exit }')
printf '/quit\n' | chat -c 4096 >/dev/null 2>"$tmp/cw.err" || fail "chat -c 4096 exited $?"
"$bin" generate -t 1 -n 1 -c 4096 -p x >/dev/null 2>"$tmp/gw.err" || fail "generate -c 4096 failed"
want="specdec: warning: -c 4096 exceeds the model's trained context $n_train"
grep -qxF "$want" "$tmp/cw.err" || fail "chat -c 4096: no '$want': $(cat "$tmp/cw.err")"
grep -qxF "$want" "$tmp/gw.err" || fail "generate -c 4096: no '$want': $(cat "$tmp/gw.err")"
finish
