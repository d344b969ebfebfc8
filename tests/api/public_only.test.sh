#!/usr/bin/env bash
# The public API is the only door the front ends and the examples use
# (STYLE.md): every file of src/cli/ and src/server/ and every example
# includes "specdec.h" (<specdec.h> in the examples), its own directory's
# headers and system headers, never an internal layer. src/server/ may also
# use src/core/'s utilities (string buffer, status codes), as
# tests/core/layering.test.sh allows. The bench is a developer tool on the
# internal headers (bench/src/cli/bench.h), outside src/cli/.
set -u
cd "${SD_SOURCE_DIR:-$(dirname "$0")/../..}"
bad=0; checked=0; n_files=0
files=(src/cli/*.[ch] src/server/*.[ch] examples/*.c)
for f in "${files[@]}"; do
  [ -f "$f" ] || { echo "public-only: $f is missing"; bad=1; continue; }
  n_files=$((n_files+1))
  dir=$(basename "$(dirname "$f")")
  while read -r inc; do
    checked=$((checked+1))
    case "$inc" in
      specdec.h|"$dir"/*) ;;
      core/*) [ "$dir" = server ] || { echo "public-only: $f includes \"$inc\" (an internal header)"; bad=1; } ;;
      *) echo "public-only: $f includes \"$inc\" (an internal header)"; bad=1 ;;
    esac
  done < <(grep -oE '^#include "[^"]+"' "$f" | sed -E 's/#include "([^"]+)"/\1/')
  # examples must build outside the tree: no quoted includes at all
  case "$f" in examples/*) grep -qE '^#include "' "$f" && { echo "public-only: $f uses a quoted include"; bad=1; } ;; esac
done
echo "public-only: $checked includes checked in $n_files files (src/cli, src/server, examples)"
[ "$checked" -gt 0 ] || { echo "public-only: no includes found"; exit 1; }
exit $bad
