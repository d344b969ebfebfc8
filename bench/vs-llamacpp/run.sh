#!/usr/bin/env bash
# The race: specdec and llama.cpp (node-llama-cpp's prebuilt CPU build) side by
# side in ONE run, on the same GGUF, threads, prompts and token budget, in
# alternating rounds (ours, llama.cpp, ours, ...) so machine noise hits both.
# Prints one ratio table (ours / llama.cpp, medians over rounds); the joined
# JSON goes to $OUT/race.json, each engine's raw JSON next to it.
#
#   bench/vs-llamacpp/run.sh MODEL.gguf [DRAFT.gguf]
# Environment: T=2 threads, N=128 tokens, ROUNDS=3, K=8, PROMPTS=bench/prompts,
#   TABLES=classes,cv,oracle (ours; llama.cpp measures the matching modes),
#   ALPHAS=0.5,0.7,0.9, SEED=1 (the oracle's corruption, both engines),
#   DRAFTERS=ngram[,draft] (or none: greedy only; llama.cpp has no "auto"),
#   OUT=bench/out/race-<model name>, SPECDEC=build/specdec,
#   LLAMA_MODES=greedy,ngram,... (llama.cpp's modes; default: those matching ours)
# llama.cpp's speculative modes run through spec.mjs's verify loop (batched
# verify + KV rollback, as llama.cpp's own speculative examples do), not
# node-llama-cpp's token-predictor loop, which accepts at most one draft token
# per round in 3.22.1 (see spec.mjs).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
model=${1:?usage: run.sh MODEL.gguf [DRAFT.gguf]}; draft=${2:-}
T=${T:-2} N=${N:-128} ROUNDS=${ROUNDS:-3} K=${K:-8} PROMPTS=${PROMPTS:-$root/bench/prompts}
TABLES=${TABLES:-classes,cv,oracle} ALPHAS=${ALPHAS:-0.5,0.7,0.9} SEED=${SEED:-1}
DRAFTERS=${DRAFTERS:-ngram${2:+,draft}}
SPECDEC=${SPECDEC:-$root/build/specdec}
OUT=${OUT:-$root/bench/out/race-$(basename "$model" .gguf)}
[ -x "$SPECDEC" ] || { echo "run.sh: $SPECDEC not built" >&2; exit 1; }
[ -d "$here/node_modules/node-llama-cpp" ] || { echo "run.sh: run 'npm ci --ignore-scripts' in $here first" >&2; exit 1; }
mkdir -p "$OUT"

# llama.cpp modes matching our tables
modes=greedy
if [[ $TABLES == *classes* ]]; then
  [[ $DRAFTERS == *ngram* ]] && modes+=,ngram
  [[ $DRAFTERS == *draft* && -n "$draft" ]] && modes+=,draft
fi
[[ $TABLES == *oracle* ]] && modes+=,oracle
[[ $TABLES == *cv* ]] && modes+=,cv
# LLAMA_MODES overrides: e.g. greedy on a hybrid target, where llama.cpp's speculation
# re-evaluates the whole context after every rejection (bench/RESULTS.md, 27B section)
modes=${LLAMA_MODES:-$modes}
ours_args=(-m "$model" --prompts "$PROMPTS" -n "$N" --reps 1 -t "$T" -k "$K" --tables "$TABLES" --alphas "$ALPHAS" --seed "$SEED" --drafters "$DRAFTERS")
[ -n "$draft" ] && ours_args+=(-md "$draft")
llama_args=(-m "$model" --prompts "$PROMPTS" -n "$N" --reps 1 -t "$T" -k "$K" --alphas "$ALPHAS" --seed "$SEED" --modes "$modes")
[ -n "$draft" ] && llama_args+=(-md "$draft")

ours_json=() llama_json=()
for r in $(seq 1 "$ROUNDS"); do
  echo "run.sh: round $r/$ROUNDS: specdec" >&2
  "$SPECDEC" bench "${ours_args[@]}" --json "$OUT/ours-$r.json" > "$OUT/ours-$r.md"
  echo "run.sh: round $r/$ROUNDS: llama.cpp" >&2
  node "$here/llamacpp_bench.mjs" "${llama_args[@]}" --json "$OUT/llama-$r.json"
  ours_json+=("$OUT/ours-$r.json") llama_json+=("$OUT/llama-$r.json")
done
echo "# command: T=$T N=$N ROUNDS=$ROUNDS K=$K SEED=$SEED TABLES=$TABLES DRAFTERS=$DRAFTERS ALPHAS=$ALPHAS PROMPTS=$PROMPTS bench/vs-llamacpp/run.sh $*" > "$OUT/race.md"
node "$here/compare.mjs" --out "$OUT/race.json" "${ours_json[@]}" -- "${llama_json[@]}" | tee -a "$OUT/race.md"
echo "run.sh: wrote $OUT/race.md and $OUT/race.json" >&2
