#!/usr/bin/env bash
# Makes the random-weight realistic-shape models used for speed measurements
# (DESIGN.md §9.3) into cache/models/ (git-ignored), skipping files that exist.
#   bench/models.sh                 # the default set below
#   bench/models.sh qwen3-0.6b:q8_0 draft:q8_0 ...
# Needs the sd-genmodel tool: cmake --build build --target sd-genmodel
set -euo pipefail
cd "$(dirname "$0")/.."
gen=${SD_BUILD_DIR:-build}/sd-genmodel
[ -x "$gen" ] || { echo "models.sh: $gen not built (cmake --build build --target sd-genmodel)" >&2; exit 1; }
mkdir -p cache/models
specs=("$@")
[ ${#specs[@]} -gt 0 ] || specs=(qwen3-0.6b:q8_0 qwen3-0.6b:q4_k draft:q8_0 draft:q4_k)
for spec in "${specs[@]}"; do
  shape=${spec%%:*} type=${spec#*:}
  out=cache/models/$shape-$type.gguf
  if [ -s "$out" ]; then echo "models.sh: $out exists"; continue; fi
  echo "models.sh: making $out"
  "$gen" --shape "$shape" --type "$type" -o "$out"
done
