#!/usr/bin/env bash
# An MTP sidecar: the qwen35 fixture split as llama.cpp's converter
# publishes such a model (sd-mtp_split: mtp-*.gguf holding only the nextn block,
# and the trunk without it). The sidecar given with -md drafts for the trunk:
# LOSSLESS greedy, at a fixed seed with temperature > 0, in auto and under the
# window rollback, and with the very α (accepted/drafted) of the in-file block
# on the same text. Refused with one line: the sidecar run as a model, a sidecar
# of another width, one of another vocabulary, --spec draft with a sidecar.
set -euo pipefail
export OMP_WAIT_POLICY=passive
bin="${SD_SPECDEC_BIN:?}"; split="${SD_BUILD_DIR:?}/sd-mtp_split"; gen="${SD_BUILD_DIR:?}/sd-genmodel"
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
"$split" models/fixture-q35-target.gguf --mtp "$tmp/mtp-fixture.gguf" --trunk "$tmp/trunk.gguf"
# inspect's output goes to files first: `inspect | grep -q` under pipefail fails
# whenever grep exits at its first match before inspect has written everything.
"$bin" inspect "$tmp/mtp-fixture.gguf" > "$tmp/mtp.txt"; "$bin" inspect "$tmp/trunk.gguf" > "$tmp/trunk.txt"
grep -q "blk.4.nextn.eh_proj.weight" "$tmp/mtp.txt" || fail "no nextn block in the sidecar"
grep -q "blk.0.attn_norm.weight" "$tmp/mtp.txt" && fail "the sidecar holds the trunk"
grep -q "nextn" "$tmp/trunk.txt" && fail "the trunk holds the MTP block"

alpha() { grep -o "α [0-9.]* ([0-9]*/[0-9]*)" "$1" || echo "no α"; }
run=(-n 48 -t 1 --gate 0 --draft-max 4 --fixed-k)
for f in bench/prompts/code-py.txt bench/prompts/free-story.txt; do
  tail -n +2 "$f" > "$tmp/p.txt"
  "$bin" generate -m models/fixture-q35-target.gguf -f "$tmp/p.txt" "${run[@]}" --spec mtp > "$tmp/own.txt" 2> "$tmp/own.err" ||
    fail "in-file: $(cat "$tmp/own.err")"
  "$bin" generate -m "$tmp/trunk.gguf" -md "$tmp/mtp-fixture.gguf" -f "$tmp/p.txt" "${run[@]}" --spec mtp \
    > "$tmp/side.txt" 2> "$tmp/side.err" || fail "sidecar: $(cat "$tmp/side.err")"
  grep -q "spec mtp .*LOSSLESS 48/48" "$tmp/side.err" || fail "sidecar on $f: $(cat "$tmp/side.err")"
  cmp -s "$tmp/own.txt" "$tmp/side.txt" || fail "$f: the trunk + sidecar wrote other text than the whole file"
  [ "$(alpha "$tmp/side.err")" = "$(alpha "$tmp/own.err")" ] ||
    fail "$f: sidecar $(alpha "$tmp/side.err"), in-file block $(alpha "$tmp/own.err")"
  grep -q "α 0.000" "$tmp/side.err" && fail "$f: the sidecar never hit"
  echo "$f: sidecar $(alpha "$tmp/side.err") = in-file block $(alpha "$tmp/own.err"), LOSSLESS 48/48"
done
for extra in "--temp 0.7 --seed 5" "--spec auto" "--hybrid-rollback window" "--temp 0.9 --seed 2 --hybrid-rollback window"; do
  # shellcheck disable=SC2086
  "$bin" generate -m "$tmp/trunk.gguf" -md "$tmp/mtp-fixture.gguf" -f "$tmp/p.txt" -n 48 -t 1 --gate 0 --spec mtp $extra \
    > /dev/null 2> "$tmp/e" || fail "$extra: $(cat "$tmp/e")"
  grep -q "LOSSLESS 48/48" "$tmp/e" || fail "$extra: $(cat "$tmp/e")"
  case $extra in *auto*) grep -q "spec auto (ngram + mtp)" "$tmp/e" || fail "auto: $(cat "$tmp/e")" ;; esac
done

expect1() { # exit 1, one line on stderr containing $1
  local want=$1; shift
  set +e; "$bin" generate "$@" > /dev/null 2> "$tmp/x"; local rc=$?; set -e
  [ $rc -eq 1 ] && [ "$(wc -l < "$tmp/x")" -eq 1 ] && grep -qF "$want" "$tmp/x" ||
    fail "want exit 1 and '$want' for $*, got $rc: $(cat "$tmp/x")"
}
expect1 "MTP sidecar" -m "$tmp/mtp-fixture.gguf" -p hi
expect1 "use spec mode mtp" -m "$tmp/trunk.gguf" -md "$tmp/mtp-fixture.gguf" -p hi --spec draft
expect1 "needs a target with an MTP block" -m "$tmp/trunk.gguf" -p hi --spec mtp
# another width (the fixture's vocabulary, n_embd 64), another vocabulary
"$gen" --shape qwen35-tiny --type q8_0 --vocab models/fixture-q35-target.gguf -o "$tmp/tiny.gguf" 2> /dev/null
"$split" "$tmp/tiny.gguf" --mtp "$tmp/mtp-tiny.gguf"
expect1 "n_embd 64 does not fit a target of n_embd 256" -m "$tmp/trunk.gguf" -md "$tmp/mtp-tiny.gguf" -p hi --spec mtp
"$gen" --shape qwen35-tiny --type q8_0 -o "$tmp/tinyv.gguf" 2> /dev/null
"$split" "$tmp/tinyv.gguf" --mtp "$tmp/mtp-tinyv.gguf"
expect1 "vocabulary" -m "$tmp/trunk.gguf" -md "$tmp/mtp-tinyv.gguf" -p hi --spec mtp
# sd-mtp_split itself refuses a file without one MTP block
set +e; "$split" "$tmp/trunk.gguf" --mtp "$tmp/x.gguf" 2> "$tmp/x"; rc=$?; set -e
[ $rc -eq 1 ] && grep -q "no single MTP block" "$tmp/x" || fail "split of a trunk: $rc $(cat "$tmp/x")"
echo "mtp sidecar ok"
