#!/usr/bin/env bash
# specdec generate --spec dflash: a random DFlash draft (sd-dflash_init) for
# the fixture target gives the target's own output (LOSSLESS, greedy and
# seeded temperature 0.8), also behind --spec auto (which names it, and reports
# the speedup model's inputs in --json), and the errors are one line each: no
# draft, a draft of another kind, a DFlash draft with another --spec than
# dflash or auto, a misfit draft.
set -euo pipefail
bin=$(realpath "${SD_SPECDEC_BIN:?}") init=${SD_BUILD_DIR:?}/sd-dflash_init
. "${SD_SOURCE_DIR:?}/tests/support/checks.sh"
[ -r models/fixture-target.gguf ] || { echo "SKIP: no fixture models"; exit 77; }
"$init" models/fixture-target.gguf "$tmp/dflash.gguf" --block 6 --seed 3
m=(-m models/fixture-target.gguf -t 1)
code='static int add(int a, int b) { return a + b; } static int'

expect_exit() {
  local want=$1 pat=$2; shift 2
  local rc=0
  "$bin" generate "$@" >"$tmp/out" 2>"$tmp/err" || rc=$?
  if [ "$rc" != "$want" ]; then fail "generate $* exited $rc, want $want: $(cat "$tmp/err")"; return; fi
  if [ "$(wc -l <"$tmp/err")" != 1 ]; then fail "generate $*: stderr is not one line: $(cat "$tmp/err")"; fi
  grep -q "^specdec: .*$pat" "$tmp/err" || fail "generate $*: stderr lacks '$pat': $(cat "$tmp/err")"
}

"$bin" generate "${m[@]}" -p "$code" -n 20 --spec dflash -md "$tmp/dflash.gguf" --check-lossless >/dev/null 2>"$tmp/err" ||
  fail "dflash: $(cat "$tmp/err")"
grep -q "spec dflash .*LOSSLESS 20/20" "$tmp/err" || fail "dflash greedy: $(cat "$tmp/err")"
a=$("$bin" generate "${m[@]}" -p "$code" -n 16 --temp 0.8 --seed 5 --spec none 2>/dev/null)
b=$("$bin" generate "${m[@]}" -p "$code" -n 16 --temp 0.8 --seed 5 --spec dflash -md "$tmp/dflash.gguf" \
  --check-lossless 2>"$tmp/err")
[ "$a" = "$b" ] && grep -q "LOSSLESS 16/16" "$tmp/err" || fail "dflash at temp 0.8: not plain sampling's bytes"

"$bin" generate "${m[@]}" -p "$code" -n 20 --spec auto -md "$tmp/dflash.gguf" --check-lossless >/dev/null 2>"$tmp/err" ||
  fail "auto with dflash: $(cat "$tmp/err")"
grep -q "spec auto (ngram + dflash).*LOSSLESS 20/20" "$tmp/err" || fail "auto with dflash: $(cat "$tmp/err")"
j=$("$bin" generate "${m[@]}" -p "$code" -n 12 --spec dflash -md "$tmp/dflash.gguf" --json 2>/dev/null)
jf=$("$bin" generate "${m[@]}" -p "$code" -n 12 --spec dflash -md "$tmp/dflash.gguf" --json --fixed-k --gate 0 2>/dev/null)
python3 - "$j" "$jf" <<'PY' || fail "dflash --json: the speedup model's inputs missing or malformed: $j $jf"
import json, sys
o, f = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for x in (o, f):
    assert len(x["gate_cv"]) == 16 and len(x["gate_accept"]) == 16
    assert all(0 <= a <= 1 for a in x["gate_accept"]) and not any(x["gate_accept"][5:])  # a block of 6: 5 positions
assert o["gate_cv"][0] == 1 and 0 <= o["gate_k"] <= 5 and o["gate_r"] > 0  # gate on: t(1) and the block timed
assert f["gate_k"] == 5 and 0 < f["drafted"] <= 5 * f["rounds"] and f["gate_closed_steps"] == 0  # gate off: K = 5
PY
expect_exit 2 "--spec dflash needs a DFlash draft" "${m[@]}" -p hi --spec dflash
expect_exit 1 "not a DFlash draft" "${m[@]}" -p hi --spec dflash -md models/fixture-draft.gguf
expect_exit 1 "use --spec dflash" "${m[@]}" -p hi --spec draft -md "$tmp/dflash.gguf"
expect_exit 1 "n_embd is 96" -m models/fixture-draft.gguf -t 1 -p hi --spec dflash -md "$tmp/dflash.gguf"
finish
