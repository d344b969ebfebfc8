#!/usr/bin/env bash
# The layers of src/ only include downward:
#   core < format < numerics < tokenizer < grammar < model < decode < chat < api < server < cli
# Fails, naming the file and include, when a lower layer includes a higher one.
# src/server/ is a front end on the public API (the CLI's `serve` and `chat`
# commands call it): besides "specdec.h" and its own files it may include
# only src/core/'s utilities (string buffer, status codes), never the engine.
#
# The developer tools sit on top, outside src/:
#   bench/src/ (`specdec bench`, a command of the CLI built apart) ranks with
#     cli: it may include any engine layer and the CLI's own helpers
#     (cli/model_args.h: the bundled fixture models), never the server;
#   tools/ (generators and probes, programs of their own) rank with api:
#     engine layers only, never a front end or the bench;
#   and nothing in src/ includes a header of bench/src/ or tools/.
set -u
cd "${SD_SOURCE_DIR:-$(dirname "$0")/../..}"
order=(core format numerics tokenizer grammar model decode chat api server cli)
rank() { local i; for i in "${!order[@]}"; do [ "${order[$i]}" = "$1" ] && { echo "$i"; return; }; done; echo -1; }
includes() { grep -oE '^#include "[^"]+"' "$1" | sed -E 's/#include "([^"]+)"/\1/'; }
bad=0; checked=0
for f in $(find src -name '*.[ch]'); do
  layer=$(echo "$f" | cut -d/ -f2); lr=$(rank "$layer")
  while read -r inc; do
    dep=${inc%%/*}; dr=$(rank "$dep"); checked=$((checked+1))
    if [ "$dr" -lt 0 ] && { [ -f "bench/src/$inc" ] || [ -f "tools/$inc" ]; }; then
      echo "layering: $f includes \"$inc\" (a developer tool's header)"; bad=1; continue
    fi
    [ "$dr" -lt 0 ] && [ "$layer" != server ] && continue
    [ "$inc" = specdec.h ] && continue
    if [ "$dr" -gt "$lr" ]; then echo "layering: $f includes \"$inc\" (a higher layer)"; bad=1; fi
    if [ "$layer" = server ] && [ "$dep" != server ] && [ "$dep" != core ]; then
      echo "layering: $f includes \"$inc\" (the server uses only specdec.h and core/)"; bad=1
    fi
  done < <(includes "$f")
done
n_src=$checked
# bench/src and tools/: their own directories' headers, specdec.h, and src/
# layers up to their rank; a quoted include must name a header that exists.
for f in $(find bench/src tools -name '*.[ch]'); do
  case "$f" in bench/*) top=cli; own=bench/src ;; *) top=api; own=tools ;; esac
  tr=$(rank "$top")
  while read -r inc; do
    checked=$((checked+1))
    [ "$inc" = specdec.h ] && continue
    if [ -f "$own/$inc" ] || [ -f "$(dirname "$f")/$inc" ]; then continue; fi
    dep=${inc%%/*}; dr=$(rank "$dep")
    if [ "$dr" -lt 0 ] || [ ! -f "src/$inc" ]; then
      echo "layering: $f includes \"$inc\" (not a header of src/ or of its own tree)"; bad=1
    elif [ "$dep" = server ] || [ "$dr" -gt "$tr" ]; then
      echo "layering: $f includes \"$inc\" (${own%/src} ranks with $top: no $dep/)"; bad=1
    fi
  done < <(includes "$f")
done
echo "layering: $checked includes checked ($n_src in src/, $((checked - n_src)) in bench/src and tools/)"
[ "$n_src" -gt 0 ] && [ "$checked" -gt "$n_src" ] || { echo "layering: no includes found"; exit 1; }
exit $bad
