#!/usr/bin/env bash
# Token tree vs chain (ARCHITECTURE.md §7, bench/RESULTS.md): for each drafter and
# each verify shape, summed over the bench prompts, greedy, --fixed-k, gate
# off, every run checked LOSSLESS against plain greedy:
#   rounds, accepted tokens per round, nodes (draft tokens) per round, and
#   decode tok/s of the run and of its plain greedy check (medians over the prompts).
#   bench/tree.sh alpha    fixtures (trained: acceptance is real behaviour)
#   bench/tree.sh speed    the grown Q8_0 pair (bench/models.sh grown-qwen3-0.6b:q8_0
#                          grown-draft:q8_0): the fixtures' text, so their
#                          acceptance, at a Qwen3-0.6B forward's cost
# Shapes: chain K (K nodes) and tree K/N/W (chain K plus next-best siblings,
# N nodes, W candidates per level).
set -euo pipefail
cd "$(dirname "$0")/.."
bin=${SD_BUILD_DIR:-build}/specdec
mode=${1:-alpha}
n=${N_PREDICT:-64}
threads=${THREADS:-2}
shapes=("chain 2" "chain 4" "chain 8" "tree 2 4 3" "tree 4 8 2" "tree 3 9 4" "tree 4 12 3")
[ -n "${SHAPES:-}" ] && IFS=';' read -r -a shapes <<<"$SHAPES" # e.g. SHAPES="chain 4;tree 4 8 2"
if [ "$mode" = alpha ]; then
  drafters=("draft|-m models/fixture-target.gguf -md models/fixture-draft.gguf --spec draft"
            "eagle3|-m models/fixture-target.gguf -md models/fixture-eagle3.gguf --spec eagle3")
else
  drafters=("draft (grown 0.6B)|-m cache/models/grown-qwen3-0.6b-q8_0.gguf -md cache/models/grown-draft-q8_0.gguf --spec draft")
fi
echo "| drafter | verify shape | rounds | accepted/round | nodes/round | decode tok/s (median) | greedy tok/s (median) | LOSSLESS |"
echo "|---|---|---:|---:|---:|---:|---:|---|"
for d in "${drafters[@]}"; do
  name=${d%%|*}; args=${d#*|}
  for s in "${shapes[@]}"; do
    read -r kind k nodes w <<<"$s"
    if [ "$kind" = chain ]; then extra=(--draft-max "$k"); label="chain K=$k"
    else extra=(--draft-max "$k" --tree "$nodes" --tree-width "$w"); label="tree K=$k N=$nodes W=$w"; fi
    for f in bench/prompts/*.txt; do
      # shellcheck disable=SC2086
      "$bin" generate $args "${extra[@]}" --fixed-k --gate 0 -t "$threads" -n "$n" -f <(sed 1d "$f") \
        --check-lossless --json 2>/dev/null
    done | python3 -c '
import json, sys, statistics
rows = [json.loads(l) for l in sys.stdin if l.strip()]
r = sum(x["rounds"] for x in rows); a = sum(x["accepted"] for x in rows); d = sum(x["drafted"] for x in rows)
ok = sum(bool(x["lossless"]) for x in rows)
tps = statistics.median(x["decode_tok_s"] for x in rows)
g = statistics.median(x["greedy_tok_s"] for x in rows)
print(f"| {sys.argv[1]} | {sys.argv[2]} | {r} | {a / r:.2f} | {d / r:.2f} | {tps:.1f} | {g:.1f} | {ok}/{len(rows)} |")
' "$name" "$label"
  done
done
