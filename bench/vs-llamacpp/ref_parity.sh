#!/usr/bin/env bash
# Greedy parity of llama.cpp (node-llama-cpp) with the float64 reference tools/reference/torch_ref.py
# on one GGUF over the bench prompts: both continue llama.cpp's tokenization of each prompt for N
# tokens. Identical ids, or the first difference with the reference's top-1 - top-2 logit margin
# there (a near-tie a float32 engine may break either way). Independent of specdec: it checks the
# reference (and a GGUF writer) against llama.cpp, e.g. for a new architecture.
#   bench/vs-llamacpp/ref_parity.sh MODEL.gguf [N] [PROMPT_DIR]
# Exit 0 when every prompt is identical, 1 otherwise.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd); root=$(cd "$here/../.." && pwd)
model=${1:?usage: ref_parity.sh MODEL.gguf [N] [PROMPT_DIR]}; n=${2:-24}; dir=${3:-$root/bench/prompts}
py=/usr/bin/python3
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
all=0
for f in "$dir"/*.txt; do
  # the prompt text as specdec bench reads it: a first "class: NAME" line is not part of it
  if head -n 1 "$f" | grep -q '^class:'; then tail -n +2 "$f" > "$tmp/p"; else cp "$f" "$tmp/p"; fi
  theirs=$(SHOW_PROMPT_IDS=1 node "$here/greedy_ids.mjs" "$model" "$(cat "$tmp/p")" "$n" 1 2> "$tmp/err")
  ids=$(sed -n 's/^prompt ids: //p' "$tmp/err" | tr ' ' ',')
  ours=$("$py" "$root/tools/reference/torch_ref.py" "$model" --tokens "$ids" --greedy "$n" 2> "$tmp/m")
  name=$(basename "$f" .txt)
  if [ "$ours" = "$theirs" ]; then echo "$name: $n/$n identical"; continue; fi
  all=1
  read -ra a <<< "$ours"; read -ra b <<< "$theirs"; read -ra m <<< "$(sed 's/^margins: //' "$tmp/m")"
  for i in "${!a[@]}"; do
    if [ "${a[$i]}" != "${b[$i]:-}" ]; then
      echo "$name: first difference at token $i (torch_ref ${a[$i]}, llama.cpp ${b[$i]:-none}), reference margin there ${m[$i]}"
      break
    fi
  done
done
exit $all
