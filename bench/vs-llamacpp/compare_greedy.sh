#!/usr/bin/env bash
# Greedy parity with llama.cpp: our greedy token ids vs llama.cpp's on the same
# GGUF and prompt. Use a trained model (e.g. models/fixture-target.gguf):
# random-weight models have near-tied logits that different correct kernels
# break differently (ARCHITECTURE.md §10).
#   bench/vs-llamacpp/compare_greedy.sh MODEL.gguf PROMPT N
# Exit 0 when the ids are identical, 1 otherwise (the first difference is shown).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
model=${1:?usage: compare_greedy.sh MODEL.gguf PROMPT N}; prompt=${2:?prompt}; n=${3:?N}
SPECDEC=${SPECDEC:-$root/build/specdec}
ours=$("$SPECDEC" bench -m "$model" --greedy-ids "$prompt" -n "$n")
theirs=$(node "$here/greedy_ids.mjs" "$model" "$prompt" "$n")
echo "specdec:   $ours"
echo "llama.cpp: $theirs"
if [ "$ours" = "$theirs" ]; then echo "greedy parity: $n/$n identical"; exit 0; fi
read -ra a <<< "$ours"; read -ra b <<< "$theirs"
for i in "${!a[@]}"; do
  if [ "${a[$i]}" != "${b[$i]:-}" ]; then echo "greedy parity: first difference at token $i (specdec ${a[$i]}, llama.cpp ${b[$i]:-none})"; break; fi
done
exit 1
