#!/usr/bin/env bash
# Runs every measurement the project reports and writes bench/RESULTS.md with
# the exact commands beside their output. Long (tens of minutes on 2 cores):
# run it on a quiet machine. Steps can be picked: bench/collect.sh race06 fixture
#   models   make the random-weight realistic-shape models (bench/models.sh)
#   load     the 0.6B Q8_0 file and the fixture models load and decode in llama.cpp
#   parity   greedy parity with llama.cpp on the trained fixture target
#   race06   0.6B-shape Q8_0: decode, prefill, c_v(S), roofline, oracle α, ours vs llama.cpp
#   race06q4 0.6B-shape Q4_K: decode, prefill, c_v(S), roofline, ours vs llama.cpp
#   fixture  full `specdec bench` tables on models/fixture-target.gguf + fixture-draft.gguf
#   racefix  fixture target + draft: n-gram and draft-model speculation, ours vs llama.cpp
set -uo pipefail
cd "$(dirname "$0")/.."
B=${SPECDEC:-build/specdec}
OUT=bench/out
RESULTS=${RESULTS:-bench/RESULTS.md}
T=${T:-2} ROUNDS=${ROUNDS:-3} N=${N:-128}
mkdir -p "$OUT"
steps=("$@")
[ ${#steps[@]} -gt 0 ] || steps=(models load parity race06 race06q4 fixture racefix)

log() { printf '%s\n' "$*" >> "$RESULTS"; }
# Runs a command, records it and its stdout in RESULTS.md (stderr to $OUT/collect.err).
run() {
  log '```'; log "\$ $*"; log '```'
  local t0=$SECONDS
  "$@" > "$OUT/step.out" 2>> "$OUT/collect.err"; local rc=$?
  cat "$OUT/step.out" >> "$RESULTS"
  log ""; log "(exit $rc, $((SECONDS - t0)) s)"; log ""
  return $rc
}

if [ ! -f "$RESULTS" ] || [ "${APPEND:-0}" != 1 ]; then
  {
    echo "# specdec measurements"
    echo
    echo "Written by \`bench/collect.sh ${steps[*]}\` on $(date -u '+%Y-%m-%d %H:%M UTC'), commit $(git rev-parse --short HEAD)."
    echo "Machine: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | xargs), $(nproc) cores; load average at start: $(cut -d' ' -f1-3 /proc/loadavg)."
    echo "Every speed figure is a median; ratios come from one side-by-side run (bench/vs-llamacpp/run.sh alternates the engines)."
    echo
  } > "$RESULTS"
fi

fixture_prompts() {  # a few prompts for the race on the fixture models
  mkdir -p "$OUT/prompts-race"
  cp bench/prompts/code-c.txt bench/prompts/rag-gguf.txt bench/prompts/free-essay.txt bench/prompts/repeat-license.txt "$OUT/prompts-race/"
}
small_prompts() {  # two prompts for the 0.6B-shape races (random weights: content does not matter)
  mkdir -p "$OUT/prompts-06"
  cp bench/prompts/code-c.txt bench/prompts/free-essay.txt "$OUT/prompts-06/"
}

for step in "${steps[@]}"; do
  case $step in
  models)
    log "## Models"; log ""
    run bench/models.sh qwen3-0.6b:q8_0 qwen3-0.6b:q4_k draft:q8_0 ;;
  load)
    log "## Loading in llama.cpp (node-llama-cpp prebuilt CPU build): greedy ids of 'Hello'"; log ""
    for m in cache/models/qwen3-0.6b-q8_0.gguf models/fixture-target.gguf models/fixture-draft.gguf; do
      [ -f "$m" ] && run node bench/vs-llamacpp/greedy_ids.mjs "$m" "Hello" 8 "$T"
    done ;;
  parity)
    log "## Greedy parity with llama.cpp (trained fixture target)"; log ""
    run bench/vs-llamacpp/compare_greedy.sh models/fixture-target.gguf "int main(int argc, char **argv) {" 64
    run bench/vs-llamacpp/compare_greedy.sh models/fixture-target.gguf "The GNU General Public License is" 64 ;;
  race06)
    small_prompts
    log "## 0.6B-shape Q8_0 (random weights): ours vs llama.cpp, $T threads"; log ""
    run env T="$T" N="$N" ROUNDS="$ROUNDS" PROMPTS="$OUT/prompts-06" TABLES=classes,cv,oracle ALPHAS=0.7 \
      OUT="$OUT/race-0.6b-q8_0" DRAFTERS=ngram bench/vs-llamacpp/run.sh cache/models/qwen3-0.6b-q8_0.gguf ;;
  race06q4)
    small_prompts
    log "## 0.6B-shape Q4_K (random weights): ours vs llama.cpp, $T threads"; log ""
    run env T="$T" N="$N" ROUNDS="$ROUNDS" PROMPTS="$OUT/prompts-06" TABLES=classes,cv \
      OUT="$OUT/race-0.6b-q4_k" DRAFTERS=none bench/vs-llamacpp/run.sh cache/models/qwen3-0.6b-q4_k.gguf ;;
  fixture)
    log "## Full bench tables: fixture target + draft"; log ""
    run "$B" bench -m models/fixture-target.gguf -md models/fixture-draft.gguf -n "$N" --reps "$ROUNDS" -t "$T" \
      --json "$OUT/fixture.json" --plot bench/fixture-bench.svg ;;
  racefix)
    fixture_prompts
    log "## Fixture target + draft: ours vs llama.cpp, $T threads"; log ""
    run env T="$T" N="$N" ROUNDS="$ROUNDS" PROMPTS="$OUT/prompts-race" TABLES=classes,cv \
      OUT="$OUT/race-fixture" DRAFTERS=ngram,draft \
      bench/vs-llamacpp/run.sh models/fixture-target.gguf models/fixture-draft.gguf ;;
  *) echo "collect.sh: unknown step $step" >&2; exit 2 ;;
  esac
done
echo "collect.sh: wrote $RESULTS" >&2
