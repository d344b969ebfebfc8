#!/usr/bin/env bash
# The public API is the only door the generate command and the examples use
# (STYLE.md): their files include "specdec.h" (<specdec.h> in the examples),
# their own cli/ headers and system headers, never an internal layer.
set -u
cd "${SD_SOURCE_DIR:-$(dirname "$0")/../..}"
bad=0; checked=0
files=(src/cli/cmd_generate.c src/cli/generate.h src/cli/generate_opts.c src/cli/generate_report.c
       src/cli/model_args.c src/cli/model_args.h examples/*.c)
for f in "${files[@]}"; do
  [ -f "$f" ] || { echo "public-only: $f is missing"; bad=1; continue; }
  while read -r inc; do
    checked=$((checked+1))
    case "$inc" in
      specdec.h|cli/*) ;;
      *) echo "public-only: $f includes \"$inc\" (an internal header)"; bad=1 ;;
    esac
  done < <(grep -oE '^#include "[^"]+"' "$f" | sed -E 's/#include "([^"]+)"/\1/')
  # examples must build outside the tree: no quoted includes at all
  case "$f" in examples/*) grep -qE '^#include "' "$f" && { echo "public-only: $f uses a quoted include"; bad=1; } ;; esac
done
echo "public-only: $checked includes checked in ${#files[@]} files"
[ "$checked" -gt 0 ] || { echo "public-only: no includes found"; exit 1; }
exit $bad
