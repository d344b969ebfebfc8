#!/usr/bin/env bash
# Constrained decoding's cost and speculation's gain on constrained output
# (bench/RESULTS.md, issue 37): REPS repetitions, each running every case once
# in turn (alternated, so every case sees the same background load), 2 threads.
#   bash bench/grammar/run.sh MODEL [REPS=3] [N=48]
# CASES="plain-schema plain" picks the cases and their order in a repetition
# (default: all five, in the order below). Prints one JSON line per run
# (specdec generate --json, without the text) tagged with its case.
set -euo pipefail
M=${1:?model}; REPS=${2:-3}; N=${3:-48}
B=${SPECDEC_BIN:-build/specdec}
D=$(dirname "$0")
P="Once upon a time, in a small town by the river,"
run() { # case, args...
  local c=$1; shift
  "$B" generate -m "$M" -p "$P" -n "$N" -t 2 --json "$@" 2>/dev/null | python3 -c '
import json, sys; r = json.loads(sys.stdin.read()); r.pop("text", None); r.pop("tokens", None)
print(json.dumps({"case": sys.argv[1], **r}))' "$c"
}
case_args() {
  case $1 in
    plain) echo --spec none --no-check ;;
    plain-schema) echo --spec none --no-check --json-schema "$D/schema.json" ;;
    plain-words) echo --spec none --no-check --grammar-file "$D/words.gbnf" ;;
    auto-schema) echo --spec auto --json-schema "$D/schema.json" ;;     # with its LOSSLESS check
    forced-schema) echo --spec grammar --json-schema "$D/schema.json" ;; # the grammar's forced text only
    *) echo "unknown case $1" >&2; exit 2 ;;
  esac
}
for rep in $(seq "$REPS"); do
  for c in ${CASES:-plain plain-schema plain-words auto-schema forced-schema}; do
    # shellcheck disable=SC2046 # the arguments are words without spaces
    run "$c" $(case_args "$c")
  done
done
