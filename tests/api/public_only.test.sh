#!/usr/bin/env bash
# The public API is the only door the front ends and the examples use
# (STYLE.md): every file of src/cli/ and src/server/ and every example
# includes "specdec.h" (<specdec.h> in the examples), its own directory's
# headers and system headers, never an internal layer. src/server/ may also
# use src/core/'s utilities (string buffer, status codes), as
# tests/core/layering.test.sh allows. The bench and tools/ are developer
# tools on the internal headers (bench/src/command/bench.h; layering.test.sh
# ranks them), except their files that say they use only the public API:
# those (PUBLIC_TOOLS) include "specdec.h" and system headers, nothing else.
set -u
cd "${SD_SOURCE_DIR:-$(dirname "$0")/../..}"
bad=0; checked=0; n_files=0
PUBLIC_TOOLS=(bench/src/command/bench_trace.c)
# A bench or tools file that includes only "specdec.h" is public: it belongs in PUBLIC_TOOLS.
for f in $(find bench/src tools -name '*.[ch]'); do
  incs=$(grep -oE '^#include "[^"]+"' "$f" | sed -E 's/#include "([^"]+)"/\1/' | sort -u)
  [ "$incs" = specdec.h ] || continue
  case " ${PUBLIC_TOOLS[*]} " in *" $f "*) ;; *) echo "public-only: $f uses only specdec.h: list it in PUBLIC_TOOLS"; bad=1 ;; esac
done
files=(src/cli/*.[ch] src/server/*.[ch] examples/*.c "${PUBLIC_TOOLS[@]}")
for f in "${files[@]}"; do
  [ -f "$f" ] || { echo "public-only: $f is missing"; bad=1; continue; }
  n_files=$((n_files+1))
  dir=$(basename "$(dirname "$f")")
  case "$f" in bench/*|tools/*) dir=specdec.h ;; esac # nothing of their own directory
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
echo "public-only: $checked includes checked in $n_files files (src/cli, src/server, examples, ${#PUBLIC_TOOLS[@]} of bench/tools)"
[ "$checked" -gt 0 ] || { echo "public-only: no includes found"; exit 1; }
exit $bad
