#!/usr/bin/env bash
# Makes the realistic-shape models used for speed measurements into
# cache/models/ (git-ignored), skipping files that exist:
#   SHAPE:TYPE         random weights (DESIGN.md §9.3), cache/models/SHAPE-TYPE.gguf
#   grown-SHAPE:TYPE   a trained fixture grown to SHAPE (sd-genmodel --grow, same
#                      function): models/fixture-draft.gguf for SHAPE=draft, else
#                      models/fixture-target.gguf; cache/models/grown-SHAPE-TYPE.gguf
#   bench/models.sh                 # the default set below
#   bench/models.sh qwen3-0.6b:q8_0 grown-draft:q8_0 ...
#   bench/models.sh qwen35-0.8b:q8_0 qwen35-0.8b:q4_k qwen35-2b:q8_0 qwen35-draft:q8_0   (Qwen3.5 hybrids)
# Needs the sd-genmodel tool: cmake --build build --target sd-genmodel
set -euo pipefail
cd "$(dirname "$0")/.."
gen=${SD_BUILD_DIR:-build}/sd-genmodel
[ -x "$gen" ] || { echo "models.sh: $gen not built (cmake --build build --target sd-genmodel)" >&2; exit 1; }
mkdir -p cache/models
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=(qwen3-0.6b:q8_0 qwen3-0.6b:q4_k draft:q8_0 draft:q4_k
  grown-qwen3-0.6b:q8_0 grown-draft:q8_0 grown-qwen3-0.6b:q4_k grown-draft:q4_k
  qwen35-0.8b:q8_0 qwen35-0.8b:q4_k qwen35-draft:q8_0 qwen35-draft:q4_k)
for spec in "${specs[@]}"; do
  shape=${spec%%:*} type=${spec#*:}
  out=cache/models/$shape-$type.gguf
  if [ -s "$out" ]; then echo "models.sh: $out exists"; continue; fi
  echo "models.sh: making $out"
  case $shape in
    grown-draft) "$gen" --grow models/fixture-draft.gguf --shape draft --type "$type" -o "$out" ;;
    grown-*) "$gen" --grow models/fixture-target.gguf --shape "${shape#grown-}" --type "$type" -o "$out" ;;
    *) "$gen" --shape "$shape" --type "$type" -o "$out" ;;
  esac
done
