#!/usr/bin/env bash
# generate with nothing to decode (-n 0, -n 1): the speed figures that have no
# measurement behind them read n/a in the stats line and null in --json, never
# a made-up 0.00 (e.g. "speedup 0.00x"); the run succeeds. A longer run still
# has numbers (so the checks can tell the difference).
set -euo pipefail
bin=${SD_SPECDEC_BIN:?}
. "${SD_SOURCE_DIR:?}/tests/support/checks.sh"
p='int main(void) { return 0; } int main(void) {'

for n in 0 1; do
  "$bin" generate -p "$p" -n $n -t 1 >/dev/null 2>"$tmp/err" || fail "-n $n exited non-zero: $(cat "$tmp/err")"
  line=$(tail -n 1 "$tmp/err")
  unit=tokens; [ $n = 1 ] && unit=token
  for f in "decode n/a ($n $unit)" "greedy n/a" "speedup n/a" "LOSSLESS $n/$n"; do
    grep -qF "$f" <<<"$line" || fail "-n $n: stats line lacks '$f': $line"
  done
  grep -qE "0\.00x|0\.00 tok/s|nan|inf" <<<"$line" && fail "-n $n: a meaningless figure: $line"
  grep -qE "^prefill [0-9.]+ tok/s" <<<"$line" || fail "-n $n: the prefill was measured: $line"
  "$bin" generate -p "$p" -n $n -t 1 --json >"$tmp/json" 2>/dev/null || fail "-n $n --json exited non-zero"
  python3 - "$tmp/json" "$n" <<'PY' || fail "-n $n --json: $(cat "$tmp/json")"
import json, sys
o, n = json.load(open(sys.argv[1])), int(sys.argv[2])
assert o["n_gen"] == n, o
for k in ("decode_tok_s", "greedy_tok_s", "speedup", "acceptance", "accepted_per_round"):
    assert o[k] is None, (k, o[k])
assert (o["tokens_per_forward"] is None) == (n == 0), o
assert o["prefill_tok_s"] > 0 and o["lossless"] is True, o
PY
done

# Control: with tokens to decode every figure is a number.
"$bin" generate -p "$p" -n 12 -t 1 --json >"$tmp/json" 2>/dev/null
python3 -c 'import json,sys; o=json.load(open(sys.argv[1]))
assert all(o[k] > 0 for k in ("decode_tok_s", "greedy_tok_s", "speedup", "tokens_per_forward")), o' "$tmp/json" ||
  fail "-n 12 --json: $(cat "$tmp/json")"
"$bin" generate -p "$p" -n 12 -t 1 2>&1 >/dev/null | tail -n 1 | grep -qE "speedup [0-9.]+x" || fail "-n 12: no speedup"

finish
